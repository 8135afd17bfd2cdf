/* The node's state in Slurm, read and changed through `scontrol` run as a child process:
 * hbmctl speaks Slurm's own command-line protocol rather than linking libslurm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_int.h"
#include "hbm/text.h"

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

/* True when the node is not hbmctl's to change; res then says why. */
static bool kept(const hbm_slurm_node *node, hbm_slurm_result *res)
{
    if (hbm_slurm_node_changeable(node, res->kept_why, sizeof res->kept_why))
        return false;
    snprintf(res->kept_state, sizeof res->kept_state, "%s", node->state);
    hbm_text_fitf(res->kept_reason, sizeof res->kept_reason, "%s", node->reason);
    return true;
}

int slurm_job_devices(const hbm_slurm_opts *o, int64_t *ids, size_t max, size_t *n,
                      hbm_err *err)
{
    char *argv[] = {(char *)prog(o), "show", "job", "-d", (char *)o->env.job_id, NULL};
    char *out;
    size_t len;
    if (hbm_run_capture(argv, &out, &len, err) < 0)
        return -1;
    int rc = hbm_slurm_parse_job_gres(out, len, o->env.node, ids, max, n, err);
    free(out);
    return rc;
}

/* Drains with hbmctl's reason, unless the node is in a state that is not hbmctl's to change
 * (DOWN, FAIL, MAINT, a reservation, an administrator's drain): that is kept as it is. */
int slurm_node_drain(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    hbm_slurm_node node;
    if (slurm_node_read(o, &node, err) < 0)
        return -1;
    if (kept(&node, res))
        return 0;
    char reason[sizeof res->problem + 16];
    snprintf(reason, sizeof reason, HBM_SLURM_REASON_PREFIX "%s", res->problem);
    if (update(o, "drain", reason, err) < 0)
        return -1;
    res->drained = true;
    return 0;
}

/* Resumes only a node drained by hbmctl (its reason) and otherwise in a state hbmctl may
 * change: a node an administrator also set DOWN, FAIL or MAINT stays. */
int slurm_node_resume_own(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    hbm_slurm_node node;
    if (slurm_node_read(o, &node, err) < 0)
        return -1;
    if (kept(&node, res) || !node.drain)
        return 0;
    if (update(o, "resume", NULL, err) < 0)
        return -1;
    res->resumed = true;
    return 0;
}
