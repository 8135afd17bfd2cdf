/* The stop sequence: SIGTERM to every process of the tree, SIGKILL after the grace period,
 * a bounded wait until none is left, then the device memory release wait and the removal of
 * SysV segments the tree created and nobody attaches (docs/run.md, docs/doctor.md). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <unistd.h>

#include "run_int.h"
#include "hbm/host.h"
#include "hbm/procfs.h"
#include "hbm/util.h"

void run_audit(const run_state *s, const char *action, int pid, const char *comm,
               const char *detail)
{
    if (!s->o->audit)
        return;
    json_t *e = json_object();
    json_object_set_new(e, "command", json_string("run"));
    json_object_set_new(e, "action", json_string(action));
    if (pid > 0)
        json_object_set_new(e, "pid", json_integer(pid));
    if (comm)
        json_object_set_new(e, "comm", json_string(comm));
    if (detail)
        json_object_set_new(e, "detail", json_string(detail));
    s->o->audit(s->o->ctx, e);
}

/* SIGKILL outranks SIGTERM whatever their numbers */
static int rank(int sig)
{
    return sig == SIGKILL ? 2 : sig ? 1 : 0;
}

/* cgroup_killed: cgroup.kill already reached every member, so a member found gone was
 * killed by it */
static void signal_members(run_state *s, run_proc *m, size_t n, int sig, bool group_signalled,
                           bool cgroup_killed)
{
    for (size_t i = 0; i < n; i++) {
        run_seen *e = run_tree_seen(&s->tree, m[i].pid, m[i].start);
        if (rank(e->last_sig) >= rank(sig))
            continue;
        if (sig == SIGTERM && group_signalled && m[i].pgrp == s->tree.child_pgid) {
            e->last_sig = SIGTERM; /* had it through the group already */
            continue;
        }
        if (run_signal_proc(&m[i], sig) == 0) {
            e->last_sig = sig;
            run_audit(s, sig == SIGKILL ? "kill" : "terminate", m[i].pid, m[i].comm,
                      sig == SIGKILL ? "SIGKILL after the grace period" : "SIGTERM");
        } else if (cgroup_killed) {
            e->last_sig = sig;
            run_audit(s, "kill", m[i].pid, m[i].comm, "SIGKILL through cgroup.kill");
        }
    }
}

static char *pid_list(const run_proc *m, size_t n)
{
    char *out = hbm_xstrdup("");
    for (size_t i = 0; i < n && i < 8; i++) {
        char *t = hbm_xasprintf("%s%s%d %s", out, i ? ", " : "", m[i].pid, m[i].comm);
        free(out);
        out = t;
    }
    if (n > 8) {
        char *t = hbm_xasprintf("%s, and %zu more", out, n - 8);
        free(out);
        out = t;
    }
    return out;
}

static void read_wchan(int pid, char *buf, size_t n)
{
    char path[64], *text = NULL;
    snprintf(path, sizeof path, "/proc/%d/wchan", pid);
    buf[0] = '\0';
    if (hbm_read_file(path, 256, &text, NULL, NULL) == 0) {
        snprintf(buf, n, "%s", text);
        free(text);
    }
}

void run_stop_tree(run_state *s, bool group_signalled)
{
    const hbm_run_opts *o = s->o;
    if (!s->stop_prepared)
        s->stop_gen++;
    s->stop_prepared = false;
    double t0 = hbm_now_mono();
    double deadline = t0 + o->grace_s;
    if (group_signalled && s->tree.child_pgid > 0) {
        char d[96];
        snprintf(d, sizeof d, "stop signal to process group %d", (int)s->tree.child_pgid);
        run_audit(s, "terminate_group", (int)s->tree.child_pgid, NULL, d);
    }
    run_proc *m = NULL;
    size_t n;
    bool first = true;
    for (;;) {
        run_reap(s);
        free(m);
        m = NULL;
        n = run_tree_scan(&s->tree, s->stop_gen, &m);
        if (n == 0)
            break;
        if (first) {
            char *l = pid_list(m, n);
            run_log(o, "stopping %zu process%s: SIGTERM, SIGKILL after %gs (%s)", n,
                    n == 1 ? "" : "es", o->grace_s, l);
            free(l);
            first = false;
        }
        signal_members(s, m, n, SIGTERM, group_signalled, false);
        if (hbm_now_mono() >= deadline)
            break;
        run_wait_signal(s, 0.05);
    }
    if (n > 0) {
        char *l = pid_list(m, n);
        run_log(o, "grace period of %gs over: SIGKILL to %zu process%s (%s)", o->grace_s, n,
                n == 1 ? "" : "es", l);
        free(l);
        bool cgk = s->cg.active && run_cgroup_kill(&s->cg) == 0;
        double kdeadline = hbm_now_mono() + o->kill_wait_s;
        for (;;) {
            signal_members(s, m, n, SIGKILL, false, cgk);
            cgk = false; /* later arrivals get their own SIGKILL */
            run_wait_signal(s, 0.05);
            run_reap(s);
            free(m);
            m = NULL;
            n = run_tree_scan(&s->tree, s->stop_gen, &m);
            if (n == 0 || hbm_now_mono() >= kdeadline)
                break;
        }
        for (size_t i = 0; i < n; i++) {
            char wchan[64];
            read_wchan(m[i].pid, wchan, sizeof wchan);
            run_log(o, "pid %d (%s) survives SIGKILL in state %c%s%s: it is stuck in the "
                       "kernel or a driver; only its call returning (or a reboot) ends it",
                    m[i].pid, m[i].comm, m[i].state, *wchan ? ", waiting in " : "", wchan);
        }
    }
    free(m);
    run_reap(s); /* the child may have turned zombie after the last reap */
    size_t stopped = 0, killed = 0, left = 0;
    for (size_t i = 0; i < s->tree.nseen; i++) {
        run_seen *e = &s->tree.seen[i];
        if (e->stop_gen != s->stop_gen)
            continue;
        if (e->alive_now)
            left++;
        else if (e->last_sig == SIGKILL)
            killed++;
        else
            stopped++;
    }
    s->res->stopped += stopped;
    s->res->killed += killed;
    s->res->survivors = left;
    if (stopped + killed + left)
        run_log(o, "tree stopped in %.1fs: %zu ended after SIGTERM, %zu killed, %zu left",
                hbm_now_mono() - t0, stopped, killed, left);
}

/* How close to the baseline counts as released: the driver's own idle noise. */
static int64_t tolerance(const run_devmem *m)
{
    int64_t t = 512 * HBM_MIB;
    if (m->total > 0 && m->total / 50 > t)
        t = m->total / 50;
    return t;
}

static void append(char **text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char **text, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *t = hbm_xasprintf("%s%s%s", *text ? *text : "", *text && **text ? ", " : "", buf);
    free(*text);
    *text = t;
}

static bool pid_alive(int pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

void run_release_wait(run_state *s, char **text)
{
    run_devices *dv = &s->dv;
    const hbm_run_opts *o = s->o;
    if (dv->n == 0 || dv->disabled || !s->baseline_taken)
        return;
    double deadline = hbm_now_mono() + o->release_timeout_s;
    hbm_obs obs;
    hbm_err err = {{0}};
    double t0 = hbm_now_mono();
    for (;;) {
        hbm_obs_init(&obs);
        if (run_devices_sample(dv, o, false, &obs, &err) < 0) {
            run_log(o, "device memory after the stop: cannot observe (%s)", err.msg);
            return;
        }
        bool all = true;
        for (size_t i = 0; i < dv->n; i++) {
            const run_devmem *m = &dv->d[i];
            if (m->seen && m->baseline >= 0 && m->used > m->baseline + tolerance(m))
                all = false;
        }
        if (all || hbm_now_mono() >= deadline)
            break;
        hbm_obs_free(&obs);
        run_wait_signal(s, 0.5);
    }
    for (size_t i = 0; i < dv->n; i++) {
        run_devmem *m = &dv->d[i];
        char a[32], b[32], c[32];
        if (!m->seen || m->baseline < 0) {
            run_log(o, "device %lld: not in the observation after the stop", (long long)m->id);
            continue;
        }
        int64_t released = m->held > m->used ? m->held - m->used : 0;
        if (m->used <= m->baseline + tolerance(m)) {
            run_log(o, "device %lld: %s released in %.1fs, back to baseline (%s used)",
                    (long long)m->id, hbm_fmt_size(a, sizeof a, released),
                    hbm_now_mono() - t0, hbm_fmt_size(b, sizeof b, m->used));
            append(text, "device %lld %s released", (long long)m->id,
                   hbm_fmt_size(a, sizeof a, released));
            continue;
        }
        /* say who the driver still charges: a dead process of this tree means memory the
         * driver has not given back; a live one, a process that is not ours */
        char who[600] = "";
        hbm_device *d = hbm_obs_find_device(&obs, m->id);
        for (size_t k = 0; d && k < d->nprocs; k++) {
            const hbm_dproc *p = &d->procs[k];
            size_t l = strlen(who);
            snprintf(who + l, sizeof who - l, "%spid %lld%s%s%s %s", l ? "; " : "; held by ",
                     (long long)p->pid, *p->name ? " (" : "", p->name, *p->name ? ")" : "",
                     run_tree_was_member(&s->tree, (int)p->pid)
                         ? (pid_alive((int)p->pid) ? "of this tree, still alive"
                                                   : "of this tree, exited")
                         : "not of this tree");
        }
        run_log(o, "device %lld: still %s used %.0fs after the stop, baseline %s (%s above)%s",
                (long long)m->id, hbm_fmt_size(a, sizeof a, m->used), o->release_timeout_s,
                hbm_fmt_size(b, sizeof b, m->baseline),
                hbm_fmt_size(c, sizeof c, m->used - m->baseline), who);
        append(text, "device %lld NOT released (%s above baseline)", (long long)m->id,
               hbm_fmt_size(c, sizeof c, m->used - m->baseline));
    }
    hbm_obs_free(&obs);
}

static int read_shm(hbm_sysv_seg **segs, size_t *n)
{
    char *text = NULL;
    size_t len = 0;
    *segs = NULL;
    *n = 0;
    if (hbm_read_file("/proc/sysvipc/shm", 64 << 20, &text, &len, NULL) < 0)
        return -1;
    int r = hbm_procfs_parse_sysv_shm(text, len, segs, n, NULL);
    free(text);
    return r;
}

void run_shm_record(run_state *s)
{
    hbm_sysv_seg *segs;
    size_t n;
    if (read_shm(&segs, &n) < 0)
        return;
    s->shm_at_start = hbm_xcalloc(n ? n : 1, sizeof *s->shm_at_start);
    for (size_t i = 0; i < n; i++) {
        s->shm_at_start[i].shmid = segs[i].shmid;
        s->shm_at_start[i].ctime = segs[i].ctime;
    }
    s->nshm_at_start = n;
    free(segs);
}

size_t run_shm_cleanup(run_state *s)
{
    hbm_sysv_seg *segs;
    size_t n, removed = 0;
    if (read_shm(&segs, &n) < 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const hbm_sysv_seg *g = &segs[i];
        bool old = false;
        for (size_t k = 0; k < s->nshm_at_start && !old; k++)
            old = s->shm_at_start[k].shmid == g->shmid && s->shm_at_start[k].ctime == g->ctime;
        /* Only nattch 0 with creator and last user dead; and only what this tree
         * made (its creator was one of ours, and it did not exist before we started) */
        if (old || g->nattch != 0 || !run_tree_was_member(&s->tree, g->cpid))
            continue;
        char why[200];
        /* the same live re-check clean uses, right before acting */
        if (hbm_host_sysv_stale_now(g->shmid, g->key, why, sizeof why) != 1)
            continue;
        if (shmctl(g->shmid, IPC_RMID, NULL) < 0) {
            run_log(s->o, "SysV segment %d (key 0x%08llx) left: %s", g->shmid,
                    (unsigned long long)(uint32_t)g->key, strerror(errno));
            continue;
        }
        char d[160];
        snprintf(d, sizeof d, "SysV shm id %d key 0x%08llx size %llu created by pid %d",
                 g->shmid, (unsigned long long)(uint32_t)g->key, (unsigned long long)g->size,
                 g->cpid);
        run_log(s->o, "removed %s (nattch 0, creator exited)", d);
        run_audit(s, "remove_sysv_shm", 0, NULL, d);
        removed++;
    }
    free(segs);
    return removed;
}
