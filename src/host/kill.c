/* Signals that never hit a recycled pid: open a pidfd first, then confirm that the process
 * it names still has the observed start time, then signal through the pidfd. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hbm/host.h"
#include "hbm/procfs.h"
#include "hbm/util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

bool hbm_host_is_self_or_ancestor(int pid)
{
    int cur = getpid();
    for (int depth = 0; depth < 4096 && cur > 0; depth++) {
        if (cur == pid)
            return true;
        if (cur == 1)
            break;
        hbm_pstat st;
        cur = hbm_host_read_stat(NULL, cur, &st) == 0 ? st.ppid : -1;
    }
    return false;
}

int hbm_host_kill_checked(int pid, uint64_t starttime, int sig, hbm_kill_outcome *outcome,
                            bool *raced, hbm_err *err)
{
    if (raced)
        *raced = false;
    if (pid <= 1)
        return hbm_err_set(err, "refusing to signal pid %d", pid);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    bool have_pidfd = pidfd >= 0;
    if (!have_pidfd && errno == ESRCH) {
        *outcome = HBM_KILL_GONE;
        return 0;
    }
    if (!have_pidfd && errno != ENOSYS)
        return hbm_err_set(err, "pidfd_open(%d): %s", pid, strerror(errno));
    /* With a pidfd held, the check below is about the very process the pidfd names. */
    uint64_t now_start;
    char state = 0;
    if (hbm_host_starttime(NULL, pid, &now_start, &state) < 0) {
        if (have_pidfd)
            close(pidfd);
        *outcome = HBM_KILL_GONE;
        return 0;
    }
    if (now_start != starttime) {
        if (have_pidfd)
            close(pidfd);
        *outcome = HBM_KILL_MISMATCH;
        return 0;
    }
    int rc;
    if (have_pidfd) {
        rc = (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
        int e = errno;
        close(pidfd);
        if (rc < 0 && e == ENOSYS) {
            /* pidfd_open without pidfd_send_signal does not exist in mainline, but a
             * filtered syscall table (seccomp) can say so: fall back. */
            have_pidfd = false;
        } else if (rc < 0) {
            if (e == ESRCH) {
                *outcome = HBM_KILL_GONE;
                return 0;
            }
            return hbm_err_set(err, "signal %d to pid %d: %s", sig, pid, strerror(e));
        } else {
            *outcome = HBM_KILL_SENT;
            return 0;
        }
    }
    /* Before Linux 5.3: re-check immediately before kill(); a window remains. */
    if (hbm_host_starttime(NULL, pid, &now_start, NULL) < 0 || now_start != starttime) {
        *outcome = HBM_KILL_MISMATCH;
        return 0;
    }
    if (raced)
        *raced = true;
    if (kill(pid, sig) < 0) {
        if (errno == ESRCH) {
            *outcome = HBM_KILL_GONE;
            return 0;
        }
        return hbm_err_set(err, "signal %d to pid %d: %s", sig, pid, strerror(errno));
    }
    *outcome = HBM_KILL_SENT;
    return 0;
}

static bool exited(int pid, uint64_t starttime)
{
    uint64_t st;
    char state = 0;
    if (hbm_host_starttime(NULL, pid, &st, &state) < 0 || st != starttime)
        return true;
    return state == 'Z' || state == 'X';
}

int hbm_host_wait_exit(int pid, uint64_t starttime, double timeout_s)
{
    double deadline = hbm_now_mono() + timeout_s;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0 && exited(pid, starttime)) {
        close(pidfd);
        return 1;
    }
    for (;;) {
        if (exited(pid, starttime)) {
            if (pidfd >= 0)
                close(pidfd);
            return 1;
        }
        double left = deadline - hbm_now_mono();
        if (left <= 0)
            break;
        int ms = left > 0.2 ? 200 : (int)(left * 1000) + 1;
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            poll(&p, 1, ms);
        } else {
            usleep((useconds_t)ms * 1000);
        }
    }
    if (pidfd >= 0)
        close(pidfd);
    return 0;
}
