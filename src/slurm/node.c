/* The node's state in Slurm, read and changed through `scontrol` run as a child process:
 * hbmctl speaks Slurm's own command-line protocol rather than linking libslurm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_int.h"

static const char *prog(const hbm_slurm_opts *o)
{
    return o->scontrol && *o->scontrol ? o->scontrol : "scontrol";
}

int slurm_node_read(const hbm_slurm_opts *o, hbm_slurm_node *node, hbm_err *err)
{
    char *argv[] = {(char *)prog(o), "show", "node", "-o", (char *)o->env.node, NULL};
    char *out;
    size_t len;
    if (hbm_run_capture(argv, &out, &len, err) < 0)
        return -1;
    int rc = hbm_slurm_parse_node(out, len, node, err);
    free(out);
    return rc;
}

static int update(const hbm_slurm_opts *o, const char *state, const char *reason,
                  hbm_err *err)
{
    char *nodearg = hbm_xasprintf("nodename=%s", o->env.node);
    char *statearg = hbm_xasprintf("state=%s", state);
    char *reasonarg = reason ? hbm_xasprintf("reason=%s", reason) : NULL;
    char *argv[] = {(char *)prog(o), "update", nodearg, statearg, reasonarg, NULL};
    char *out = NULL;
    size_t len;
    int rc = hbm_run_capture(argv, &out, &len, err);
    free(out);
    free(nodearg);
    free(statearg);
    free(reasonarg);
    return rc;
}

/* Drains with hbmctl's reason, unless the node is already drained for a reason that is not
 * hbmctl's: an administrator's reason is never overwritten. */
int slurm_node_drain(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    hbm_slurm_node node;
    if (slurm_node_read(o, &node, err) < 0)
        return -1;
    if (node.drain && !hbm_str_starts(node.reason, HBM_SLURM_REASON_PREFIX)) {
        snprintf(res->kept_reason, sizeof res->kept_reason, "%s", node.reason);
        return 0;
    }
    char reason[sizeof res->problem + 16];
    snprintf(reason, sizeof reason, HBM_SLURM_REASON_PREFIX "%s", res->problem);
    if (update(o, "drain", reason, err) < 0)
        return -1;
    res->drained = true;
    return 0;
}

/* Resumes only a node whose drain reason hbmctl wrote. */
int slurm_node_resume_own(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    hbm_slurm_node node;
    if (slurm_node_read(o, &node, err) < 0)
        return -1;
    if (!node.drain)
        return 0;
    if (!hbm_str_starts(node.reason, HBM_SLURM_REASON_PREFIX)) {
        snprintf(res->kept_reason, sizeof res->kept_reason, "%s", node.reason);
        return 0;
    }
    if (update(o, "resume", NULL, err) < 0)
        return -1;
    res->resumed = true;
    return 0;
}
