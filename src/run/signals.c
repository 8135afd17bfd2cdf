/* The supervisor's signal loop: hbmctl takes every forwarded signal with sigtimedwait,
 * reaps its children (adopted orphans too), forwards to the child's group and follows job
 * control; a SIGTERM or SIGINT first lists the tree for the stop that follows. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "run_int.h"

/* Forwarded to the child's process group (docs/run.md). */
static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])

void run_log(const hbm_run_opts *o, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->log(o->ctx, buf);
}

const char *run_signame(int sig)
{
    static char buf[16];
    const char *d = sigabbrev_np(sig);
    if (d) {
        snprintf(buf, sizeof buf, "SIG%s", d);
        return buf;
    }
    snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}

static bool job_control(const run_state *s)
{
    return s->tty_fd >= 0 && !s->o->setsid;
}

void run_reap(run_state *s)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG | (job_control(s) ? WUNTRACED : 0));
        if (pid <= 0)
            return;
        if (WIFSTOPPED(st) && pid != s->child)
            continue; /* an adopted process stopped: not ours to act on */
        if (pid == s->child && WIFSTOPPED(st)) {
            /* Ctrl-Z or a background read: stop with the child, as a shell job would, and
             * give the terminal back to the shell's view of us */
            tcsetpgrp(s->tty_fd, getpgrp());
            if (getpid() != 1)
                kill(getpid(), SIGSTOP);
            continue;
        }
        run_tree_note_reaped(&s->tree, (int)pid); /* the main child too: segments it made */
        if (pid == s->child && !s->child_done) {
            s->child_done = true;
            s->child_status = st;
            if (job_control(s))
                tcsetpgrp(s->tty_fd, getpgrp());
        }
    }
}

void run_forward(run_state *s, int sig)
{
    if (s->tree.child_pgid <= 0)
        return;
    if (killpg(s->tree.child_pgid, sig) < 0 && errno == ESRCH && !s->child_done)
        kill(s->child, sig);
}

int run_wait_signal(run_state *s, double timeout_s)
{
    if (timeout_s < 0)
        timeout_s = 0;
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - floor(timeout_s)) * 1e9)};
    siginfo_t si;
    int sig = sigtimedwait(&s->waitset, &si, &ts);
    if (sig < 0)
        return 0; /* EAGAIN: timeout; EINTR: a stop/continue of hbmctl itself */
    if (sig == SIGCHLD) {
        run_reap(s);
    } else if (sig == SIGCONT) {
        if (job_control(s) && !s->child_done) {
            tcsetpgrp(s->tty_fd, s->tree.child_pgid);
            killpg(s->tree.child_pgid, SIGCONT);
        }
    } else {
        if ((sig == SIGTERM || sig == SIGINT) && !s->stop_requested && !s->child_done)
            run_stop_prepare(s);
        run_forward(s, sig);
        if (sig == SIGTERM || sig == SIGINT) {
            if (!s->stop_requested)
                run_log(s->o, "%s received: stopping the tree", run_signame(sig));
            s->stop_requested = true;
        }
    }
    return sig;
}

void run_signals_setup(run_state *s)
{
    sigemptyset(&s->waitset);
    sigaddset(&s->waitset, SIGCHLD);
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaddset(&s->waitset, forwarded[i]);
    if (s->tty_fd >= 0)
        sigaddset(&s->waitset, SIGCONT);
    sigprocmask(SIG_BLOCK, &s->waitset, &s->ss.orig_mask);
    /* A signal ignored on entry (a background job of a script ignores SIGINT and SIGQUIT)
     * would be discarded before sigtimedwait could take it: hbmctl takes them all, and
     * the child gets the dispositions hbmctl was given back. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    s->ss.nfwd = 0;
    for (size_t i = 0; i < NFORWARDED; i++) {
        s->ss.fwd[s->ss.nfwd] = forwarded[i];
        sigaction(forwarded[i], &dfl, &s->ss.orig_fwd[s->ss.nfwd]);
        s->ss.nfwd++;
    }
    /* hbmctl leaves the terminal's foreground to the child; it must still be able to
     * write its log lines and take the foreground back */
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    sigaction(SIGTTIN, &ign, &s->ss.orig_ttin);
    sigaction(SIGTTOU, &ign, &s->ss.orig_ttou);
}

/* The terminal stops mattering; the forwarded signals stay blocked so that a late SIGTERM
 * cannot end hbmctl before it exits with the child's status. */
void run_signals_restore(run_state *s)
{
    sigaction(SIGTTIN, &s->ss.orig_ttin, NULL);
    sigaction(SIGTTOU, &s->ss.orig_ttou, NULL);
}

void run_stop_prepare(run_state *s)
{
    if (s->stop_prepared)
        return;
    s->stop_gen++;
    run_proc *m = NULL;
    run_tree_scan(&s->tree, s->stop_gen, &m);
    free(m);
    s->stop_prepared = true;
}
