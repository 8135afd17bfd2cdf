/* The lease holder: a small detached process that keeps the lease fds open after `pick`
 * exits, and exits itself (dropping the locks) when the process it guards exits. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hbm/host.h"
#include "hbm/lease.h"
#include "hbm/util.h"
#include "lease/lease_int.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static bool is_kept(int fd, const int *keep, size_t n, int also)
{
    if (fd == also)
        return true;
    for (size_t i = 0; i < n; i++)
        if (keep[i] == fd)
            return true;
    return false;
}

/* Closes every fd except the kept ones, so the holder never keeps a pipe (e.g. the
 * `$(hbmctl pick ...)` command substitution) or another file of the caller open. */
static void close_others(const int *keep, size_t n, int also)
{
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++)
        if (!is_kept(fd, keep, n, also))
            close(fd);
}

static bool all_unlinked(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (fstat(fds[i], &st) == 0 && st.st_nlink > 0)
            return false;
    }
    return true;
}

static bool guarded_alive(int pid, uint64_t starttime)
{
    uint64_t st;
    char state = 0;
    if (hbm_host_starttime(NULL, pid, &st, &state) < 0)
        return false;
    return st == starttime && state != 'Z' && state != 'X';
}

static void holder_main(const char *name, const int *fds, const int64_t *devices, size_t n,
                        int hold_pid, uint64_t hold_start, int ready)
{
    prctl(PR_SET_NAME, "hbmctl-lease");
    setsid();
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        if (nul > 2)
            close(nul);
    }
    close_others(fds, n, ready);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    for (size_t i = 0; i < n; i++)
        if (hbm_lease_set_holder(fds[i], name, devices[i], getpid(), hold_pid, NULL) < 0)
            _exit(1);
    if (write(ready, "k", 1) != 1)
        _exit(1);
    close(ready);

    int pidfd = hold_pid > 0 ? (int)syscall(SYS_pidfd_open, hold_pid, 0) : -1;
    /* The pidfd was opened after the start-time capture: confirm it is still the same
     * process, or the guarded pid was already recycled. */
    if (hold_pid > 0 && !guarded_alive(hold_pid, hold_start))
        _exit(0);
    for (;;) {
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            int r = poll(&p, 1, 1000);
            if (r > 0)
                _exit(0);
        } else {
            sleep(1);
            if (hold_pid > 0 && !guarded_alive(hold_pid, hold_start))
                _exit(0);
        }
        if (all_unlinked(fds, n))
            _exit(0);
    }
}

int hbm_lease_spawn_holder(const char *name, const int *fds, const int64_t *devices,
                           size_t n, int hold_pid, pid_t *holder, hbm_err *err)
{
    uint64_t hold_start = 0;
    if (hold_pid > 0 && hbm_host_starttime(NULL, hold_pid, &hold_start, NULL) < 0)
        return hbm_err_set(err, "process %d to hold the lease for does not exist", hold_pid);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return hbm_err_set(err, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return hbm_err_set(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(pipefd[0]);
        holder_main(name, fds, devices, n, hold_pid, hold_start, pipefd[1]);
        _exit(0);
    }
    close(pipefd[1]);
    char c;
    ssize_t r;
    do
        r = read(pipefd[0], &c, 1);
    while (r < 0 && errno == EINTR);
    close(pipefd[0]);
    if (r != 1) {
        waitpid(pid, NULL, 0);
        return hbm_err_set(err, "the lease holder process failed to start");
    }
    *holder = pid;
    return 0;
}
