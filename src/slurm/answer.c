/* What a prolog, epilog or health check is given and what it answers: the mode's name, the
 * job and node from Slurm's environment, the result as `hbmctl slurm --json` writes it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "hbm/slurm.h"

static const char *const modes[] = {"prolog", "epilog", "healthcheck"};
#define NMODES (sizeof modes / sizeof modes[0])

const char *hbm_slurm_mode_name(hbm_slurm_mode m)
{
    return (size_t)m < NMODES ? modes[m] : "?";
}

bool hbm_slurm_mode_parse(const char *word, hbm_slurm_mode *m)
{
    for (size_t i = 0; i < NMODES; i++)
        if (strcmp(word, modes[i]) == 0) {
            *m = (hbm_slurm_mode)i;
            return true;
        }
    return false;
}

/* An empty variable is as good as unset: Slurm exports some empty. */
static const char *env_or_null(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void hbm_slurm_env_read(hbm_slurm_env *e, char *host, size_t n)
{
    e->job_id = env_or_null("SLURM_JOB_ID");
    if (!e->job_id)
        e->job_id = env_or_null("SLURM_JOBID"); /* the older spelling */
    e->node = env_or_null("SLURMD_NODENAME");
    if (!e->node && gethostname(host, n) == 0) {
        /* Slurm names nodes by their short host name */
        host[n - 1] = 0;
        char *dot = strchr(host, '.');
        if (dot)
            *dot = 0;
        e->node = host;
    }
    e->job_gpus = env_or_null("SLURM_JOB_GPUS");
    e->ascend_visible = env_or_null("ASCEND_RT_VISIBLE_DEVICES");
    e->cuda_visible = env_or_null("CUDA_VISIBLE_DEVICES");
}

static json_t *string_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

json_t *hbm_slurm_result_json(const hbm_slurm_opts *o, const hbm_slurm_result *r)
{
    json_t *devs = json_array(), *kills = json_array();
    for (size_t i = 0; i < r->ndevs; i++)
        json_array_append_new(devs, json_integer(r->devs[i]));
    for (size_t i = 0; i < r->nkills; i++) {
        const hbm_slurm_kill *k = &r->kills[i];
        json_array_append_new(kills, json_pack("{s:i, s:s, s:s, s:b, s:s}", "pid", k->pid,
                                               "name", k->comm, "why", k->why, "done", k->done,
                                               "result", k->result));
    }
    json_t *kept = r->kept_state[0]
                       ? json_pack("{s:s, s:s}", "state", r->kept_state, "why", r->kept_why)
                       : json_null();
    return json_pack("{s:s, s:s, s:o, s:o, s:s, s:o, s:o, s:I, s:b, s:b, s:b, s:o, s:o}",
                     "mode", hbm_slurm_mode_name(o->mode), "node", o->env.node,
                     "job", string_or_null(o->env.job_id), "devices", devs,
                     "devices_from", r->devs_from, "problem", string_or_null(r->problem),
                     "ended", kills, "shm_removed", (json_int_t)r->shm_removed,
                     "refused_job", r->refused_job, "drained", r->drained,
                     "resumed", r->resumed, "kept_reason", string_or_null(r->kept_reason),
                     "kept", kept);
}
