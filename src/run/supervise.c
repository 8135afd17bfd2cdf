/* The supervisor's main loop: init duties (subreaper, terminal foreground; reaping and
 * signal forwarding in signals.c), the memory guard, health checks, restarts with a budget
 * and backoff. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "run_int.h"
#include "hbm/util.h"

static void describe_status(int st, char *buf, size_t n)
{
    if (WIFEXITED(st))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, n, "killed by %s%s", run_signame(WTERMSIG(st)),
                 WCOREDUMP(st) ? " (core dumped)" : "");
    else
        snprintf(buf, n, "ended (wait status 0x%x)", st);
}

/* The terminal, when hbmctl has one and is in its foreground (else the child must not
 * take it: hbmctl was started in the background). */
static int open_tty(const hbm_run_opts *o)
{
    if (o->setsid)
        return -1;
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    if (tcgetpgrp(fd) != getpgrp()) {
        close(fd);
        return -1;
    }
    return fd;
}

enum run_end { END_CHILD, END_STOP, END_MEM, END_UNHEALTHY };

typedef struct run_cycle {
    double started;
    bool ready;
    int health_fails;
    bool unhealthy_logged;
    double next_health, next_mem, next_record;
} run_cycle;

/* The memory guard: true when a watched device stayed over the threshold for the window. */
static bool mem_check(run_state *s, double now)
{
    const hbm_run_opts *o = s->o;
    hbm_err err = {{0}};
    if (run_devices_sample(&s->dv, o, false, NULL, &err) < 0) {
        run_log(o, "--restart-on-mem: device memory cannot be observed (%s); guard off", err.msg);
        s->dv.disabled = true;
        return false;
    }
    for (size_t i = 0; i < s->dv.n; i++) {
        run_devmem *m = &s->dv.d[i];
        if (!m->seen || m->total <= 0 || m->used < 0)
            continue;
        double r = (double)m->used / (double)m->total;
        if (r > o->restart_on_mem) {
            if (m->over_since == 0) {
                m->over_since = now;
                run_log(o, "device %lld: memory %.1f%% above %.0f%%: draining if it stays "
                           "there for %gs", (long long)m->id, r * 100, o->restart_on_mem * 100,
                        o->mem_window_s);
            }
            if (now - m->over_since >= o->mem_window_s) {
                run_log(o, "device %lld: memory %.1f%% above %.0f%% for %.0fs: draining and "
                           "restarting", (long long)m->id, r * 100, o->restart_on_mem * 100,
                        now - m->over_since);
                return true;
            }
        } else if (m->over_since != 0) {
            run_log(o, "device %lld: memory back to %.1f%%", (long long)m->id, r * 100);
            m->over_since = 0;
        }
    }
    return false;
}

/* One round of checks: the health URL (2xx), then progress. 0 healthy, -1 failed, 1 stalled. */
static int check_once(run_state *s, hbm_err *err)
{
    const hbm_run_opts *o = s->o;
    if (o->health_url && run_health_get(o->health_url, o->health_timeout_s, err) < 0)
        return -1;
    return o->metrics_url ? run_progress_check(o, &s->progress, err) : 0;
}

/* Health: readiness polled every second, then every health_interval. True = unhealthy. */
static bool health_check(run_state *s, run_cycle *c, double now)
{
    const hbm_run_opts *o = s->o;
    hbm_err err = {{0}};
    int rc = check_once(s, &err);
    bool ok = rc == 0;
    char safe[512];
    hbm_progress_url_safe(o->metrics_url ? o->metrics_url : "", safe, sizeof safe);
    const char *what = o->health_url ? o->health_url : safe;
    double after = hbm_now_mono();
    if (!c->ready) {
        if (ok) {
            c->ready = true;
            run_log(o, "ready after %.1fs: %s answers", after - c->started, what);
            c->next_health = after + o->health_interval_s;
            return false;
        }
        c->next_health = after + (o->health_interval_s < 1 ? o->health_interval_s : 1);
        if (o->ready_timeout_s > 0 && now - c->started >= o->ready_timeout_s) {
            run_log(o, "not ready after %gs: %s", o->ready_timeout_s, err.msg);
            return true;
        }
        return false;
    }
    c->next_health = after + o->health_interval_s;
    if (rc == 1) {
        /* a stall already lasted --stall: no retries on top */
        s->res->stalls++;
        run_log(o, "unhealthy: %s", err.msg);
        return o->restart != HBM_RUN_RESTART_NEVER;
    }
    if (ok) {
        if (c->health_fails >= o->health_retries)
            run_log(o, "healthy again: %s answers", what);
        c->health_fails = 0;
        c->unhealthy_logged = false;
        return false;
    }
    c->health_fails++;
    if (c->health_fails < o->health_retries)
        return false;
    if (!c->unhealthy_logged)
        run_log(o, "unhealthy: %d checks failed in a row (%s)", c->health_fails, err.msg);
    c->unhealthy_logged = true;
    return o->restart != HBM_RUN_RESTART_NEVER;
}

static enum run_end run_cycle_loop(run_state *s)
{
    const hbm_run_opts *o = s->o;
    run_cycle c = {0};
    c.started = hbm_now_mono();
    c.next_health = c.started;
    c.next_mem = c.started + o->mem_interval_s;
    c.next_record = c.started + 2;
    bool guard = !isnan(o->restart_on_mem);
    bool checks = o->health_url || o->metrics_url;
    hbm_progress_free(&s->progress); /* a new start: its counters begin again */
    for (;;) {
        /* a stop request first: the group already got the signal and must not get a
         * second SIGTERM when the child's exit is seen in the same turn */
        if (s->stop_requested)
            return END_STOP;
        if (s->child_done)
            return END_CHILD;
        double now = hbm_now_mono();
        if (checks && now >= c.next_health && health_check(s, &c, now))
            return END_UNHEALTHY;
        if (guard && !s->dv.disabled && now >= c.next_mem) {
            c.next_mem = now + o->mem_interval_s;
            if (mem_check(s, now))
                return END_MEM;
        }
        if (now >= c.next_record) {
            /* who belongs to the tree, so segments its short-lived members create are
             * known to be its own at the end */
            run_proc *m = NULL;
            size_t n = 0;
            run_tree_members(&s->tree, &m, &n);
            free(m);
            c.next_record = now + 2;
        }
        double next = c.next_record;
        if (checks && c.next_health < next)
            next = c.next_health;
        if (guard && !s->dv.disabled && c.next_mem < next)
            next = c.next_mem;
        double wait = next - hbm_now_mono();
        run_wait_signal(s, wait > 1 ? 1 : wait);
    }
}

static int start_child(run_state *s, hbm_err *err)
{
    const hbm_run_opts *o = s->o;
    /* devices are watched when leased, or for the memory guard (then the visible ones) */
    if (!s->baseline_taken && !s->dv.disabled && (o->ndevices > 0 || !isnan(o->restart_on_mem))) {
        hbm_err e2 = {{0}};
        if (run_devices_sample(&s->dv, o, true, NULL, &e2) < 0) {
            run_log(o, "device memory cannot be observed (%s): no release check", e2.msg);
            s->dv.disabled = true;
        } else {
            s->baseline_taken = true;
        }
    }
    if (s->baseline_taken)
        for (size_t i = 0; i < s->dv.n; i++)
            s->dv.d[i].held = s->dv.d[i].used; /* "released" counts this run's memory */
    int code = 0;
    s->child_done = false;
    pid_t pid = run_spawn(o, &s->cg, s->tty_fd, &s->ss, &code, err);
    if (pid < 0)
        return code;
    s->child = pid;
    s->tree.child_pgid = pid;
    s->tree.by_session = o->setsid;
    run_log(o, "started %s as pid %d%s%s", o->argv[0], (int)pid,
            s->cg.active ? " in cgroup " : "", s->cg.active ? s->cg.dir : "");
    return 0;
}

static void summarize(run_state *s, const char *release, size_t segs)
{
    hbm_run_result *r = s->res;
    char st[96];
    if (s->child_done)
        describe_status(s->child_status, st, sizeof st);
    else
        snprintf(st, sizeof st, "did not start");
    char rs[64] = "";
    if (r->restarts)
        snprintf(rs, sizeof rs, "; restarts: %d", r->restarts);
    if (r->stalls)
        snprintf(rs + strlen(rs), sizeof rs - strlen(rs), "; stalls: %d", r->stalls);
    free(r->summary);
    r->summary = hbm_xasprintf(
        "exit %d (child %s); processes: %zu ended after SIGTERM, %zu killed, %zu left; "
        "memory: %s; SysV segments removed: %zu%s",
        r->exit_code, st, r->stopped, r->killed, r->survivors,
        release && *release ? release : "no device watched", segs, rs);
}

int hbm_run_supervise(const hbm_run_opts *o, hbm_run_result *r, hbm_err *err)
{
    memset(r, 0, sizeof *r);
    if (!o->argv || !o->argv[0] || !o->log)
        return hbm_err_set(err, "no command to run");
    run_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.res = r;
    s.cg.procs_fd = -1;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 && getpid() != 1)
        run_log(o, "cannot become a child subreaper (%s): orphans of the tree escape to init",
                strerror(errno));
    if (!o->no_cgroup) {
        hbm_err ce = {{0}};
        if (run_cgroup_create(&s.cg, &ce) < 0)
            run_log(o, "no cgroup for the tree (%s): tracking by subreaper, process group "
                       "and /proc", ce.msg);
        else if (!s.cg.has_kill)
            run_log(o, "cgroup %s has no cgroup.kill (Linux < 5.14): SIGKILL goes process "
                       "by process", s.cg.dir);
    }
    run_tree_init(&s.tree, &s.cg);
    if (!s.tree.proc_usable)
        run_log(o, "/proc belongs to another PID namespace: tracking by process group%s only",
                s.cg.active ? " and cgroup" : "");
    run_devices_init(&s.dv, o);
    s.tty_fd = open_tty(o);
    run_signals_setup(&s);
    run_shm_record(&s);

    double *restarts = NULL;
    size_t nrestarts = 0, caprestarts = 0;
    unsigned attempt = 0;
    char *release = NULL;
    size_t segs = 0;
    for (;;) {
        int code = start_child(&s, err);
        if (code) {
            r->exit_code = code;
            run_log(o, "%s", err->msg);
            break;
        }
        double began = hbm_now_mono();
        enum run_end end = run_cycle_loop(&s);
        char st[96] = "";
        if (end == END_CHILD) {
            describe_status(s.child_status, st, sizeof st);
            run_log(o, "pid %d %s", (int)s.child, st);
        }
        if (end == END_MEM || end == END_UNHEALTHY) {
            run_stop_prepare(&s);
            run_forward(&s, SIGTERM); /* a drain: the child's group first, the stop takes the rest */
            run_stop_tree(&s, true);
        } else {
            run_stop_tree(&s, end == END_STOP);
        }
        if (end != END_CHILD && s.child_done) {
            describe_status(s.child_status, st, sizeof st);
            run_log(o, "pid %d %s", (int)s.child, st);
        }
        free(release);
        release = NULL;
        run_release_wait(&s, &release);
        segs += run_shm_cleanup(&s);
        if (!s.child_done) {
            /* the child outlived the bounded wait (stuck in the kernel) */
            r->exit_code = HBM_RUN_EXIT_FAILED;
        } else {
            r->exit_code = hbm_run_exit_code(s.child_status);
        }
        bool want;
        if (end == END_MEM)
            want = !s.stop_requested; /* the guard's purpose is the restart */
        else if (end == END_UNHEALTHY) /* not ready in time, or unhealthy under --restart */
            want = !s.stop_requested && o->restart != HBM_RUN_RESTART_NEVER;
        else
            want = hbm_run_wants_restart(o->restart, r->exit_code, s.stop_requested);
        if (!want)
            break;
        double now = hbm_now_mono();
        char win[32] = "";
        if (!isinf(o->budget.window_s))
            snprintf(win, sizeof win, " per %gs", o->budget.window_s);
        if (!hbm_run_budget_allows(&o->budget, restarts, nrestarts, now)) {
            run_log(o, "restart budget spent (%d%s): not restarting", o->budget.max, win);
            break;
        }
        /* a run that lasted past the longest backoff was healthy: start over from the base */
        attempt = (now - began > o->backoff_max_s) ? 1 : attempt + 1;
        double delay = hbm_run_backoff(o->backoff_s, attempt, o->backoff_max_s);
        run_log(o, "restarting in %gs (restart %zu of at most %d%s)", delay, nrestarts + 1,
                o->budget.max, win);
        double until = hbm_now_mono() + delay;
        while (!s.stop_requested && hbm_now_mono() < until)
            run_wait_signal(&s, until - hbm_now_mono());
        if (s.stop_requested)
            break;
        hbm_grow((void **)&restarts, &caprestarts, nrestarts, sizeof *restarts);
        restarts[nrestarts++] = hbm_now_mono();
        r->restarts++;
    }
    summarize(&s, release, segs);
    r->segments_removed = segs;
    free(release);
    free(restarts);
    free(s.shm_at_start);
    run_cgroup_remove(&s.cg);
    run_devices_free(&s.dv);
    run_tree_free(&s.tree);
    hbm_progress_free(&s.progress);
    run_signals_restore(&s);
    if (s.tty_fd >= 0)
        close(s.tty_fd);
    return 0;
}
