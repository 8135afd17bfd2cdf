/* The three Slurm modes over one observation each (the epilog observes again while it waits
 * for memory to return). */
#include <errno.h>
#include <fcntl.h>
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

#define DEVS_FROM_SCONTROL "scontrol show job"

void slurm_dev_name(const hbm_device *d, char *buf, size_t n)
{
    snprintf(buf, n, "%s %lld", d->vendor == HBM_VENDOR_ASCEND ? "NPU" : "GPU",
             (long long)hbm_device_user_id(d));
}

/* The job's devices from what Slurm set, most specific first; with no device variable, from
 * Slurm itself (`scontrol show job -d`). Returns 1 when every device is meant (the health
 * check), 0 when res->devs names them, -1 when they cannot be determined: then nothing may
 * be judged or ended, never "all devices" in their place. */
static int job_devices(const hbm_slurm_opts *o, const char *noted, hbm_slurm_result *res,
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
    if (o->mode == HBM_SLURM_HEALTHCHECK) {
        snprintf(res->devs_from, sizeof res->devs_from, "all devices");
        return 1;
    }
    snprintf(res->devs_from, sizeof res->devs_from, DEVS_FROM_SCONTROL);
    if (slurm_job_devices(o, res->devs, HBM_SLURM_MAX_DEVS, &res->ndevs, err) == 0)
        return 0;
    /* The epilog of a completing job: what the prolog learned from Slurm. */
    if (noted && hbm_slurm_parse_devlist(noted, res->devs, HBM_SLURM_MAX_DEVS, &res->ndevs,
                                         err) == 0) {
        snprintf(res->devs_from, sizeof res->devs_from, "scontrol show job, in the prolog");
        return 0;
    }
    res->ndevs = 0;
    return hbm_err_prefix(err, "job %s's devices: no device variable is set, and Slurm does "
                          "not say (nothing was checked or ended)", o->env.job_id);
}

static void all_devices(const hbm_obs *obs, hbm_slurm_result *res)
{
    res->ndevs = 0;
    for (size_t i = 0; i < obs->ndevs && res->ndevs < HBM_SLURM_MAX_DEVS; i++)
        res->devs[res->ndevs++] = hbm_device_user_id(&obs->devs[i]);
}

/* The first process on d that the node must not keep, or NULL. Prolog: one outside the job;
 * health check: one outside every job; epilog: one of the job's still there, or one of no
 * job at all (*left set: it is not the job's, so it is left alone and waiting will not
 * help). Another job's process is that job's business in the health check and the epilog.
 * A listed pid that is gone or a zombie holds memory no job can free. */
static const hbm_dproc *outsider(const hbm_slurm_opts *o, const hbm_device *d, bool *left)
{
    const char *job = o->mode == HBM_SLURM_HEALTHCHECK ? NULL : o->env.job_id;
    *left = false;
    for (size_t i = 0; i < d->nprocs; i++) {
        const hbm_dproc *p = &d->procs[i];
        bool dead = p->state == HBM_PID_GONE || p->state == HBM_PID_UNSEEN ||
                    p->state == HBM_PID_ZOMBIE;
        if (dead)
            return p;
        bool ours = slurm_is_member(o->src.root, (int)p->pid, job) != NULL;
        if (o->mode != HBM_SLURM_EPILOG) {
            if (!ours)
                return p;
            continue;
        }
        if (ours)
            return p;
        if (slurm_is_member(o->src.root, (int)p->pid, NULL))
            continue;
        *left = true;
        return p;
    }
    return NULL;
}

/* Why device d is not fit for a job into why ("" when it is); 2 when waiting cannot help. */
static int judge(const hbm_slurm_opts *o, const hbm_device *d, char *why, size_t n)
{
    char name[32], size[32];
    slurm_dev_name(d, name, sizeof name);
    why[0] = 0;
    if (d->verdict == HBM_VERDICT_UNHEALTHY) {
        snprintf(why, n, "%s unhealthy: %.300s", name, d->reason);
        return 1;
    }
    bool left;
    const hbm_dproc *p = outsider(o, d, &left);
    if (p) {
        hbm_fmt_size(size, sizeof size, p->memory_bytes);
        const char *whose = o->mode == HBM_SLURM_PROLOG       ? ", outside the job"
                            : o->mode == HBM_SLURM_HEALTHCHECK ? ", outside any job"
                            : left ? ", of no job: left alone"
                                   : "";
        snprintf(why, n, "%s holds %s of pid %lld (%s, %s)%s", name,
                 p->memory_bytes >= 0 ? size : "memory", (long long)p->pid,
                 p->name[0] ? p->name : "?", hbm_pid_state_name(p->state), whose);
        return left ? 2 : 1;
    }
    if (d->verdict == HBM_VERDICT_UNACCOUNTED) {
        hbm_fmt_size(size, sizeof size, d->unaccounted_bytes);
        snprintf(why, n, "%s has %s used by no process (%.200s)", name, size, d->reason);
        return 1;
    }
    return 0;
}

/* The first problem among the job's devices into res->problem; 1 when there is one, 2 when
 * waiting cannot clear it. */
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
        int rc = judge(o, d, res->problem, sizeof res->problem);
        if (rc)
            return rc;
    }
    return 0;
}

static int observe(const hbm_slurm_opts *o, hbm_obs *obs, hbm_err *err)
{
    return hbm_observe(obs, &o->src, err);
}

/* True when the driver alone proves the job's devices clean: each healthy, no process
 * listed, memory at its baseline. Such a node needs no walk over the host's processes. */
static bool clean_without_host(const hbm_slurm_opts *o, int all, hbm_slurm_result *res)
{
    hbm_source_opts src = o->src;
    src.no_host = true;
    hbm_obs obs;
    hbm_err ignored;
    if (hbm_observe(&obs, &src, &ignored) < 0)
        return false;
    if (all)
        all_devices(&obs, res);
    bool clean = true;
    for (size_t i = 0; i < res->ndevs && clean; i++) {
        const hbm_device *d = hbm_obs_find_device(&obs, res->devs[i]);
        clean = d && d->procs_known && d->nprocs == 0 && d->verdict == HBM_VERDICT_FREE;
    }
    hbm_obs_free(&obs);
    return clean;
}

static int check_once(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    int all = job_devices(o, NULL, res, err);
    if (all < 0)
        return -1;
    if (clean_without_host(o, all, res))
        return 0;
    hbm_obs obs;
    if (observe(o, &obs, err) < 0)
        return -1;
    if (all)
        all_devices(&obs, res);
    int rc = judge_all(o, &obs, res) ? 1 : 0;
    hbm_obs_free(&obs);
    return rc;
}

/* The job's own processes on its devices (the driver's listing alone proves nothing: the
 * pid must be the job's by cgroup or environment, and hold a device file where the host
 * shows them), then every member of the job anywhere. */
static void epilog_targets(const hbm_slurm_opts *o, hbm_obs *obs, hbm_slurm_result *res)
{
    for (size_t i = 0; i < res->ndevs; i++) {
        hbm_device *d = hbm_obs_find_device(obs, res->devs[i]);
        for (size_t j = 0; d && j < d->nprocs; j++) {
            const hbm_hproc *hp = obs->has_host ? hbm_host_find(&obs->host, (int)d->procs[j].pid)
                                                : NULL;
            const char *proof = hp && hp->state != 'Z'
                                    ? slurm_is_member(o->src.root, hp->pid, o->env.job_id)
                                    : NULL;
            char file[200];
            if (!proof || hbm_host_device_file_proof(&obs->host, hp, file, sizeof file) == 0)
                continue;
            char why[80], name[32];
            slurm_dev_name(d, name, sizeof name);
            snprintf(why, sizeof why, "holds %s, %s", name, proof);
            slurm_add_target(res, hp->pid, hp->starttime, hp->comm, why);
        }
    }
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
        if (rc == 0 || rc == 2 || res->waited_s >= settle) {
            if (rc == 1)
                snprintf(res->problem + strlen(res->problem),
                         sizeof res->problem - strlen(res->problem), " after the epilog "
                         "waited %.0f s", res->waited_s);
            return rc ? 1 : 0;
        }
        usleep(200 * 1000);
    }
}

/* The prolog's notes for the epilog of the same job, under --state-dir: "refused" (the job
 * never ran) and "devices" (what Slurm named when no variable did: a completing job's
 * `scontrol show job -d` no longer does). The job id was validated: it is a file name. */
static char *note_path(const hbm_slurm_opts *o, const char *kind)
{
    return hbm_xasprintf("%s/job_%s.%s", o->state_dir ? o->state_dir : HBM_SLURM_STATE_DEFAULT,
                         o->env.job_id, kind);
}

/* -1 with "PATH: why" in err when the note cannot be written. */
static int write_note(const hbm_slurm_opts *o, const char *kind, const char *text,
                      hbm_err *err)
{
    char *path = note_path(o, kind);
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
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                  0640);
    int saved = errno;
    bool ok = fd >= 0 && dprintf(fd, "%s\n", text) > 0;
    if (fd >= 0) {
        saved = ok ? 0 : errno;
        ok = close(fd) == 0 && ok;
        saved = saved ? saved : errno;
    }
    if (!ok)
        hbm_err_set(err, "%s: %s", path, strerror(saved));
    free(path);
    return ok ? 0 : -1;
}

/* The note's text (the caller frees it), or NULL when there is none; the note is removed. */
static char *take_note(const hbm_slurm_opts *o, const char *kind)
{
    char *path = note_path(o, kind), *text = NULL;
    size_t len;
    if (hbm_read_file(path, 4096, &text, &len, NULL) < 0)
        text = NULL;
    unlink(path);
    free(path);
    return text ? hbm_trim(text) : NULL;
}

/* The devices the prolog learned from scontrol, for an epilog that can no longer. */
static int note_devices(const hbm_slurm_opts *o, const hbm_slurm_result *res, hbm_err *err)
{
    char list[HBM_SLURM_MAX_DEVS * 8];
    hbm_slurm_format_devlist(res->devs, res->ndevs, list, sizeof list);
    if (write_note(o, "devices", res->ndevs ? list : "NoDevFiles", err) == 0)
        return 0;
    return hbm_err_prefix(err, "job %s's devices (from scontrol) cannot be noted for its "
                          "epilog, so the prolog fails closed", o->env.job_id);
}

static int epilog(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    char *refused = take_note(o, "refused"), *noted = take_note(o, "devices");
    res->refused_job = refused != NULL;
    free(refused);
    if (res->refused_job) {
        free(noted);
        /* The job never ran: what holds its devices is not its own, and the prolog's drain
         * already names it; the health check lifts that drain once the device is clean. */
        slurm_find_members(o->src.root, o->env.job_id, res);
        return slurm_end_targets(o, res, err);
    }
    int all = job_devices(o, noted, res, err);
    free(noted);
    if (all < 0)
        return -1;
    hbm_obs obs;
    if (observe(o, &obs, err) < 0)
        return -1;
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

/* s cut to fit, every byte that is not printable ASCII shown as '?': it came from outside. */
static void printable(const char *s, char *out, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 1 < n; i++)
        out[i] = s[i] > 0x20 && s[i] < 0x7f ? s[i] : '?';
    out[i] = 0;
}

int hbm_slurm_run(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    memset(res, 0, sizeof *res);
    if (!o->env.node || !*o->env.node)
        return hbm_err_set(err, "no node name: SLURMD_NODENAME is unset and --node not given");
    if (o->mode != HBM_SLURM_HEALTHCHECK && (!o->env.job_id || !*o->env.job_id))
        return hbm_err_set(err, "no job: SLURM_JOB_ID is unset (run as Slurm's %s)",
                           o->mode == HBM_SLURM_PROLOG ? "Prolog" : "Epilog");
    /* The id becomes a file name and a scontrol argument. */
    if (o->mode != HBM_SLURM_HEALTHCHECK && !hbm_slurm_job_id_valid(o->env.job_id)) {
        char shown[48];
        printable(o->env.job_id, shown, sizeof shown);
        return hbm_err_set(err, "job id \"%s\" is not a Slurm job id (digits, optionally "
                           "_N or +N): nothing done", shown);
    }
    int rc = o->mode == HBM_SLURM_EPILOG ? epilog(o, res, err) : check_once(o, res, err);
    if (rc < 0 || o->no_drain)
        return rc;
    if (o->mode == HBM_SLURM_PROLOG && strcmp(res->devs_from, DEVS_FROM_SCONTROL) == 0 &&
        note_devices(o, res, err) < 0)
        return -1;
    /* Without the note, the epilog would not know the job never ran. */
    if (rc == 1 && o->mode == HBM_SLURM_PROLOG && write_note(o, "refused", res->problem, err) < 0)
        return hbm_err_prefix(err, "the refusal of job %s cannot be noted for its epilog, so "
                              "the prolog fails closed (refused because %.300s)",
                              o->env.job_id, res->problem);
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
