/* Which processes belong to a job, and ending them safely. A worker that escaped the job
 * (double fork, setsid) leaves Slurm's process tracking but keeps its cgroup and the
 * environment it inherited, SLURM_JOB_ID included. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hbm/audit.h"
#include "hbm/host.h"
#include "slurm_int.h"

static bool read_small(const char *root, int pid, const char *what, char **buf, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/proc/%d/%s", root ? root : "", pid, what);
    return hbm_read_file(path, 1u << 20, buf, len, NULL) == 0;
}

static bool environ_any_job(const char *buf, size_t len)
{
    for (size_t i = 0; i < len;) {
        const char *e = buf + i;
        if (hbm_str_starts(e, "SLURM_JOB_ID=") || hbm_str_starts(e, "SLURM_JOBID="))
            return true;
        i += strnlen(e, len - i) + 1;
    }
    return false;
}

static bool cgroup_any_job(const char *buf)
{
    for (const char *p = strstr(buf, "/job_"); p; p = strstr(p + 1, "/job_"))
        if (p[5] >= '0' && p[5] <= '9')
            return true;
    return false;
}

const char *slurm_is_member(const char *root, int pid, const char *job_id)
{
    char *buf;
    size_t len;
    bool in = false, other = false;
    if (read_small(root, pid, "cgroup", &buf, &len)) {
        in = job_id ? hbm_slurm_cgroup_has_job(buf, len, job_id) : cgroup_any_job(buf);
        other = !in && cgroup_any_job(buf);
        free(buf);
    }
    if (in)
        return "its cgroup is the job's";
    /* In another job's cgroup: its environment, which any process can set, does not
     * outweigh what only slurmstepd can write. */
    if (other)
        return NULL;
    if (read_small(root, pid, "environ", &buf, &len)) {
        in = job_id ? hbm_slurm_environ_has_job(buf, len, job_id) : environ_any_job(buf, len);
        free(buf);
    }
    return in ? "SLURM_JOB_ID in its environment" : NULL;
}

void slurm_add_target(hbm_slurm_result *res, int pid, uint64_t starttime, const char *comm,
                      const char *why)
{
    if (pid <= 1 || hbm_host_is_self_or_ancestor(pid))
        return;
    for (size_t i = 0; i < res->nkills; i++)
        if (res->kills[i].pid == pid && res->kills[i].starttime == starttime)
            return;
    res->kills = hbm_xrealloc(res->kills, (res->nkills + 1) * sizeof *res->kills);
    hbm_slurm_kill *k = &res->kills[res->nkills++];
    memset(k, 0, sizeof *k);
    k->pid = pid;
    k->starttime = starttime;
    snprintf(k->comm, sizeof k->comm, "%s", comm);
    snprintf(k->why, sizeof k->why, "%s", why);
}

static void read_comm(const char *root, int pid, char *out, size_t n)
{
    char *buf;
    size_t len;
    out[0] = 0;
    if (read_small(root, pid, "comm", &buf, &len)) {
        snprintf(out, n, "%s", hbm_trim(buf));
        free(buf);
    }
}

void slurm_find_members(const char *root, const char *job_id, hbm_slurm_result *res)
{
    char path[512];
    snprintf(path, sizeof path, "%s/proc", root ? root : "");
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1)
            continue;
        uint64_t before, after;
        char state;
        if (hbm_host_starttime(root, (int)pid, &before, &state) < 0 || state == 'Z')
            continue;
        const char *proof = slurm_is_member(root, (int)pid, job_id);
        if (!proof)
            continue;
        /* The same start time after the read: what was read belongs to this process. */
        if (hbm_host_starttime(root, (int)pid, &after, NULL) < 0 || after != before)
            continue;
        char comm[32], why[80];
        read_comm(root, (int)pid, comm, sizeof comm);
        snprintf(why, sizeof why, "belongs to job %s: %s", job_id, proof);
        slurm_add_target(res, (int)pid, before, comm, why);
    }
    closedir(d);
}

static void signal_one(hbm_slurm_kill *k, int sig)
{
    hbm_kill_outcome out;
    hbm_err e = {{0}};
    if (hbm_host_kill_checked(k->pid, k->starttime, sig, &out, NULL, &e) < 0) {
        snprintf(k->result, sizeof k->result, "%s failed: %.160s", strsignal(sig), e.msg);
        return;
    }
    if (out == HBM_KILL_MISMATCH) {
        k->done = true;
        snprintf(k->result, sizeof k->result, "pid %d now belongs to another process: not "
                 "signalled", k->pid);
    } else if (out == HBM_KILL_GONE) {
        k->done = true;
        if (!k->result[0])
            snprintf(k->result, sizeof k->result, "had already exited");
    } else {
        snprintf(k->result, sizeof k->result, "%s", sig == SIGKILL ? "SIGTERM ignored for the "
                 "grace period: SIGKILL sent" : "SIGTERM sent");
    }
}

static int audit_kill(const hbm_slurm_opts *o, const hbm_slurm_kill *k, hbm_err *err)
{
    json_t *r = json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s, s:s}", "event",
                          "slurm-epilog", "action", "kill", "job", o->env.job_id, "pid", k->pid,
                          "starttime", (json_int_t)k->starttime, "comm", k->comm,
                          "why", k->why, "outcome", k->done ? "done" : "kept", "detail",
                          k->result);
    int rc = hbm_audit_append(hbm_audit_path(o->audit_path), r, err);
    json_decref(r);
    return rc;
}

int slurm_end_targets(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err)
{
    double grace = o->grace_s > 0 ? o->grace_s : 5.0;
    /* Every SIGTERM first, so the grace periods run side by side. */
    for (size_t i = 0; i < res->nkills; i++)
        signal_one(&res->kills[i], SIGTERM);
    double deadline = hbm_now_mono() + grace;
    for (size_t i = 0; i < res->nkills; i++) {
        hbm_slurm_kill *k = &res->kills[i];
        if (k->done)
            continue;
        double left = deadline - hbm_now_mono();
        if (hbm_host_wait_exit(k->pid, k->starttime, left > 0 ? left : 0) == 1) {
            k->done = true;
            snprintf(k->result, sizeof k->result, "SIGTERM sent, it exited");
            continue;
        }
        signal_one(k, SIGKILL);
        if (!k->done && hbm_host_wait_exit(k->pid, k->starttime, 5.0) == 1)
            k->done = true;
        else if (!k->done)
            snprintf(k->result, sizeof k->result, "SIGKILL sent, still there (stuck in the "
                     "kernel)");
    }
    for (size_t i = 0; i < res->nkills; i++)
        if (audit_kill(o, &res->kills[i], err) < 0)
            return -1;
    return 0;
}
