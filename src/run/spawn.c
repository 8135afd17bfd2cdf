/* Starting the child: its own cgroup leaf, process group (or session), the terminal's
 * foreground when hbmctl has one, hbmctl's original signal state, then exec. A failed exec
 * is reported through a close-on-exec pipe, so hbmctl can tell "not found" (127) and "not
 * executable" (126) from the child's own exit status. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "run_int.h"

enum { STAGE_CGROUP = 1, STAGE_SETSID, STAGE_EXEC };

struct spawn_report {
    int stage;
    int err;
};

static void report(int fd, int stage, int e)
{
    struct spawn_report r = {stage, e};
    ssize_t w = write(fd, &r, sizeof r);
    (void)w;
}

static _Noreturn void child(const hbm_run_opts *o, const run_cgroup *cg, int tty_fd,
                            const run_sigstate *ss, int wfd, pid_t parent)
{
    /* Should hbmctl itself be killed outright (SIGKILL cannot be caught), the server still
     * gets the signal its orderly shutdown answers to. The check after prctl closes the
     * window in which hbmctl died before the request was made. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(HBM_RUN_EXIT_FAILED);
    if (cg && cg->active && cg->procs_fd >= 0) {
        if (write(cg->procs_fd, "0", 1) != 1) {
            report(wfd, STAGE_CGROUP, errno);
            _exit(HBM_RUN_EXIT_FAILED);
        }
    }
    if (o->setsid) {
        if (setsid() < 0) {
            report(wfd, STAGE_SETSID, errno);
            _exit(HBM_RUN_EXIT_FAILED);
        }
    } else {
        setpgid(0, 0);
        /* Done in the child, so the group exists before it becomes the foreground; SIGTTOU
         * is still ignored here (inherited from hbmctl), which tcsetpgrp from a background
         * group needs. ENOTTY/ENXIO: no terminal after all, fine. */
        if (tty_fd >= 0)
            tcsetpgrp(tty_fd, getpid());
    }
    for (int i = 0; i < ss->nfwd; i++)
        sigaction(ss->fwd[i], &ss->orig_fwd[i], NULL);
    sigaction(SIGTTIN, &ss->orig_ttin, NULL);
    sigaction(SIGTTOU, &ss->orig_ttou, NULL);
    sigprocmask(SIG_SETMASK, &ss->orig_mask, NULL);
    execvp(o->argv[0], o->argv);
    report(wfd, STAGE_EXEC, errno);
    _exit(errno == ENOENT || errno == ENOTDIR ? HBM_RUN_EXIT_NOT_FOUND
                                              : HBM_RUN_EXIT_NOT_EXECUTABLE);
}

pid_t run_spawn(const hbm_run_opts *o, const run_cgroup *cg, int tty_fd,
                const run_sigstate *ss, int *code, hbm_err *err)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        *code = HBM_RUN_EXIT_FAILED;
        return hbm_err_set(err, "pipe: %s", strerror(errno));
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        *code = HBM_RUN_EXIT_FAILED;
        return hbm_err_set(err, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(pfd[0]);
        child(o, cg, tty_fd, ss, pfd[1], parent);
    }
    close(pfd[1]);
    if (!o->setsid)
        setpgid(pid, pid); /* both sides, so no signal can find the group missing */
    /* EOF (exec happened) or a report; signals are blocked here, so no EINTR */
    struct spawn_report r = {0, 0};
    ssize_t n;
    do
        n = read(pfd[0], &r, sizeof r);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n != (ssize_t)sizeof r)
        return pid;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    switch (r.stage) {
    case STAGE_CGROUP:
        *code = HBM_RUN_EXIT_FAILED;
        return hbm_err_set(err, "cannot move the child into %s: %s", cg->dir, strerror(r.err));
    case STAGE_SETSID:
        *code = HBM_RUN_EXIT_FAILED;
        return hbm_err_set(err, "setsid: %s", strerror(r.err));
    default:
        *code = (r.err == ENOENT || r.err == ENOTDIR) ? HBM_RUN_EXIT_NOT_FOUND
                                                      : HBM_RUN_EXIT_NOT_EXECUTABLE;
        return hbm_err_set(err, "%s: %s", o->argv[0],
                           r.err == ENOENT ? "command not found" : strerror(r.err));
    }
}
