/* The three Slurm modes over one observation each (the epilog observes again while it waits
 * for memory to return). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "hbm/audit.h"
#include "hbm/host.h"
#include "hbm/observe.h"
#include "slurm_int.h"

void slurm_dev_name(const hbm_device *d, char *buf, size_t n)
{
    snprintf(buf, n, "%s %lld", d->vendor == HBM_VENDOR_ASCEND ? "NPU" : "GPU",
             (long long)hbm_device_user_id(d));
}

/* The job's devices from what Slurm set, most specific first; none set: every device. */
static int job_devices(const hbm_slurm_opts *o, const hbm_obs *obs, hbm_slurm_result *res,
                       hbm_err *err)
{
    const struct {
        const char *name, *value;
    } src[] = {{"--devices", o->env.devices},
               {"SLURM_JOB_GPUS", o->env.job_gpus},
               {"ASCEND_RT_VISIBLE_DEVICES", o->env.ascend_visible},
               {"CUDA_VISIBLE_DEVICES", o->env.cuda_visible}};
    res->ndevs = 0;
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        if (!src[i].value || (o->mode == HBM_SLURM_HEALTHCHECK && i > 0))
            continue;
        if (hbm_slurm_parse_devlist(src[i].value, res->devs, HBM_SLURM_MAX_DEVS, &res->ndevs,
                                    err) < 0)
            return hbm_err_prefix(err, "%s", src[i].name);
        snprintf(res->devs_from, sizeof res->devs_from, "%s", src[i].name);
        return 0;
    }
    for (size_t i = 0; i < obs->ndevs && res->ndevs < HBM_SLURM_MAX_DEVS; i++)
        res->devs[res->ndevs++] = hbm_device_user_id(&obs->devs[i]);
    snprintf(res->devs_from, sizeof res->devs_from, "all devices");
    return 0;
}

/* The first process on d that the node must not keep: in the prolog one outside the job, in
 * the health check one outside every job, in the epilog any. A listed pid that is gone or a
 * zombie holds memory no job can free. */
static const hbm_dproc *outsider(const hbm_slurm_opts *o, const hbm_device *d)
{
    const char *job = o->mode == HBM_SLURM_HEALTHCHECK ? NULL : o->env.job_id;
    for (size_t i = 0; i < d->nprocs; i++) {
        const hbm_dproc *p = &d->procs[i];
        bool dead = p->state == HBM_PID_GONE || p->state == HBM_PID_UNSEEN ||
                    p->state == HBM_PID_ZOMBIE;
        if (!dead && o->mode != HBM_SLURM_EPILOG && slurm_is_member(o->src.root, (int)p->pid, job))
            continue;
        return p;
    }
    return NULL;
}

/* Why device d is not fit for a job, or "" when it is. */
static void judge(const hbm_slurm_opts *o, const hbm_device *d, char *why, size_t n)
{
    char name[32], size[32];
    slurm_dev_name(d, name, sizeof name);
    why[0] = 0;
    if (d->verdict == HBM_VERDICT_UNHEALTHY) {
        snprintf(why, n, "%s unhealthy: %.300s", name, d->reason);
        return;
    }
    const hbm_dproc *p = outsider(o, d);
    if (p) {
        hbm_fmt_size(size, sizeof size, p->memory_bytes);
        const char *whose = o->mode == HBM_SLURM_PROLOG       ? ", outside the job"
                            : o->mode == HBM_SLURM_HEALTHCHECK ? ", outside any job"
                                                               : "";
        snprintf(why, n, "%s holds %s of pid %lld (%s, %s)%s", name,
                 p->memory_bytes >= 0 ? size : "memory", (long long)p->pid,
                 p->name[0] ? p->name : "?", hbm_pid_state_name(p->state), whose);
        return;
    }
    if (d->verdict == HBM_VERDICT_UNACCOUNTED) {
        hbm_fmt_size(size, sizeof size, d->unaccounted_bytes);
        snprintf(why, n, "%s has %s used by no process (%.200s)", name, size, d->reason);
    }
}

/* The first problem among the job's devices into res->problem; 1 when there is one. */
static int judge_all(const hbm_slurm_opts *o, hbm_obs *obs, hbm_slurm_result *res)
{
    res->problem[0] = 0;
    for (size_t i = 0; i < res->ndevs; i++) {
        hbm_device *d = hbm_obs_find_device(obs, res->devs[i]);
        if (!d) {
            snprintf(res->problem, sizeof res->problem, "device %lld (from %s) not found by "
                     "backend %s", (long long)res->devs[i], res->devs_from, obs->backend);
            return 1;
        }
        judge(o, d, res->problem, sizeof res->problem);
        if (res->problem[0])
            return 1;
    }
    return 0;
}

static int observe(const hbm_slurm_opts *o, hbm_obs *obs, hbm_err *err)
{
    return hbm_observe(obs, &o->src, err);
}

static int check_once(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    hbm_obs obs;
    if (observe(o, &obs, err) < 0)
        return -1;
    int rc = job_devices(o, &obs, res, err);
    if (rc == 0)
        rc = judge_all(o, &obs, res);
    hbm_obs_free(&obs);
    return rc;
}

/* Every process on the job's devices or in the job becomes a target. */
static void epilog_targets(const hbm_slurm_opts *o, hbm_obs *obs, hbm_slurm_result *res)
{
    for (size_t i = 0; i < res->ndevs; i++) {
        hbm_device *d = hbm_obs_find_device(obs, res->devs[i]);
        for (size_t j = 0; d && j < d->nprocs; j++) {
            const hbm_hproc *hp = obs->has_host ? hbm_host_find(&obs->host, (int)d->procs[j].pid)
                                                : NULL;
            if (!hp || hp->state == 'Z')
                continue;
            char why[80], name[32];
            slurm_dev_name(d, name, sizeof name);
            snprintf(why, sizeof why, "holds %s", name);
            slurm_add_target(res, hp->pid, hp->starttime, hp->comm, why);
        }
    }
    if (o->env.job_id)
        slurm_find_members(o->src.root, o->env.job_id, res);
}

static bool ended_by_us(const hbm_slurm_result *res, int pid)
{
    for (size_t i = 0; i < res->nkills; i++)
        if (res->kills[i].pid == pid && res->kills[i].done)
            return true;
    return false;
}

/* SysV segments the ended processes created, removed by clean's rule (nobody attaches it, its
 * creator and last user are dead), re-checked right before IPC_RMID. Other segments on the
 * node are not the job's: `hbmctl clean` judges those. */
static int remove_stale_shm(const hbm_slurm_opts *o, const hbm_obs *obs, hbm_slurm_result *res,
                            hbm_err *err)
{
    for (size_t i = 0; obs->has_host && i < obs->host.nsysv; i++) {
        const hbm_sysv_seg *s = &obs->host.sysv[i];
        char why[240];
        if (!ended_by_us(res, s->cpid) || hbm_host_sysv_stale_now(s->shmid, s->key, why, sizeof why) != 1)
            continue;
        bool ok = shmctl(s->shmid, IPC_RMID, NULL) == 0;
        char key[16];
        snprintf(key, sizeof key, "0x%08llx", (unsigned long long)(s->key & 0xffffffffLL));
        json_t *r = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "event", "slurm-epilog",
                              "action", "sysv-rmid", "job", o->env.job_id,
                              "shmid", s->shmid, "key", key, "outcome", ok ? "done" : "kept",
                              "detail", ok ? why : strerror(errno));
        int rc = hbm_audit_append(hbm_audit_path(o->audit_path), r, err);
        json_decref(r);
        if (rc < 0)
            return -1;
        res->shm_removed += ok;
    }
    return 0;
}

/* Observes until the job's devices are clean or the bound passes. */
static int wait_clean(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    double settle = o->settle_s > 0 ? o->settle_s : 20.0;
    double t0 = hbm_now_mono();
    for (;;) {
        hbm_obs obs;
        if (observe(o, &obs, err) < 0)
            return -1;
        int rc = judge_all(o, &obs, res);
        hbm_obs_free(&obs);
        res->waited_s = hbm_now_mono() - t0;
        if (rc == 0 || res->waited_s >= settle) {
            if (rc)
                snprintf(res->problem + strlen(res->problem),
                         sizeof res->problem - strlen(res->problem), " after the epilog "
                         "waited %.0f s", res->waited_s);
            return rc;
        }
        usleep(200 * 1000);
    }
}

static char *marker_path(const hbm_slurm_opts *o)
{
    return hbm_xasprintf("%s/job_%s.refused", o->state_dir ? o->state_dir
                                                            : HBM_SLURM_STATE_DEFAULT,
                         o->env.job_id);
}

/* Best effort: without the note, the epilog would end the outsider the prolog refused. */
static void mark_refused(const hbm_slurm_opts *o, const char *problem)
{
    char *path = marker_path(o);
    char *slash = strrchr(path, '/');
    *slash = 0;
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    mkdir(path, 0750);
    *slash = '/';
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s\n", problem);
        fclose(f);
    }
    free(path);
}

/* True (and the note removed) when the prolog refused this job. */
static bool take_refused(const hbm_slurm_opts *o)
{
    char *path = marker_path(o);
    bool was = unlink(path) == 0;
    free(path);
    return was;
}

static int epilog(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    res->refused_job = take_refused(o);
    if (res->refused_job) {
        /* The job never ran: what holds its devices is not its own, and the prolog's drain
         * already names it; the health check lifts that drain once the device is clean. */
        slurm_find_members(o->src.root, o->env.job_id, res);
        return slurm_end_targets(o, res, err);
    }
    hbm_obs obs;
    if (observe(o, &obs, err) < 0)
        return -1;
    if (job_devices(o, &obs, res, err) < 0) {
        hbm_obs_free(&obs);
        return -1;
    }
    /* The log must be writable before anything is done, so every action is recorded. */
    json_t *start = json_pack("{s:s, s:s, s:s}", "event", "slurm-epilog", "action", "start",
                              "job", o->env.job_id);
    int rc = hbm_audit_append(hbm_audit_path(o->audit_path), start, err);
    json_decref(start);
    if (rc == 0) {
        epilog_targets(o, &obs, res);
        rc = slurm_end_targets(o, res, err);
    }
    hbm_obs_free(&obs);
    if (rc == 0 && res->nkills) {
        /* What the ended processes attached is detached now: look again. */
        rc = observe(o, &obs, err);
        if (rc == 0) {
            rc = remove_stale_shm(o, &obs, res, err);
            hbm_obs_free(&obs);
        }
    }
    return rc < 0 ? -1 : wait_clean(o, res, err);
}

int hbm_slurm_run(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    memset(res, 0, sizeof *res);
    if (!o->env.node || !*o->env.node)
        return hbm_err_set(err, "no node name: SLURMD_NODENAME is unset and --node not given");
    if (o->mode != HBM_SLURM_HEALTHCHECK && (!o->env.job_id || !*o->env.job_id))
        return hbm_err_set(err, "no job: SLURM_JOB_ID is unset (run as Slurm's %s)",
                           o->mode == HBM_SLURM_PROLOG ? "Prolog" : "Epilog");
    int rc = o->mode == HBM_SLURM_EPILOG ? epilog(o, res, err) : check_once(o, res, err);
    if (rc < 0 || o->no_drain)
        return rc;
    if (rc == 1 && o->mode == HBM_SLURM_PROLOG)
        mark_refused(o, res->problem);
    if (rc == 1)
        return slurm_node_drain(o, res, err) < 0 ? -1 : 1;
    if (o->mode == HBM_SLURM_HEALTHCHECK && slurm_node_resume_own(o, res, err) < 0)
        return -1;
    return 0;
}

void hbm_slurm_result_free(hbm_slurm_result *res)
{
    free(res->kills);
    res->kills = NULL;
    res->nkills = 0;
}
