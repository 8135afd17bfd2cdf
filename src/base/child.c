/* Child programs whose output hbmctl reads (npu-smi, scontrol). Each runs in its own
 * process group with its own stdin (/dev/null), stdout and stderr (pipes to hbmctl), so
 * nothing it starts holds hbmctl's own output open (node-problem-detector waits for EOF on
 * that pipe); at the deadline the whole group is killed and the child reaped. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hbm/util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define CHILD_OUT_MAX (16u << 20)
#define CHILD_ERR_KEEP 512 /* of stderr, what a failure message quotes */
#define CHILD_GROUPS_MAX 16

/* Groups running now, for hbm_children_kill (async-signal-safe: plain stores and kill). */
static volatile sig_atomic_t live_groups[CHILD_GROUPS_MAX];

static void group_track(pid_t pgid, bool on)
{
    for (int i = 0; i < CHILD_GROUPS_MAX; i++)
        if (on ? live_groups[i] == 0 : live_groups[i] == pgid) {
            live_groups[i] = on ? pgid : 0;
            return;
        }
}

void hbm_children_kill(void)
{
    for (int i = 0; i < CHILD_GROUPS_MAX; i++) {
        pid_t g = live_groups[i];
        if (g > 0)
            kill(-g, SIGKILL);
    }
}

static void at_exit_kill(void)
{
    hbm_children_kill();
}

/* In the child: its own group, /dev/null in, the two pipes out, nothing else inherited. */
static void child_exec(char *const argv[], int out_w, int err_w)
{
    setpgid(0, 0);
    int nul = open("/dev/null", O_RDONLY);
    if (nul < 0 || dup2(nul, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0 ||
        dup2(err_w, STDERR_FILENO) < 0)
        _exit(127);
    close_range(3, ~0U, 0);
    signal(SIGPIPE, SIG_DFL);
    execvp(argv[0], argv);
    _exit(127);
}

typedef struct capture {
    char *buf;
    size_t n, cap;
    char err[CHILD_ERR_KEEP + 1];
    size_t nerr;
} capture;

enum { D_MORE, D_EMPTY, D_END };

/* Appends one read of fd (non-blocking): D_MORE after data, D_EMPTY when none is there
 * now, D_END at EOF or an error. */
static int drain(int fd, capture *c, bool is_err)
{
    char tmp[65536];
    ssize_t r = read(fd, tmp, sizeof tmp);
    if (r < 0 && errno == EINTR)
        return D_MORE;
    if (r < 0 && errno == EAGAIN)
        return D_EMPTY;
    if (r <= 0)
        return D_END;
    if (is_err) {
        size_t k = (size_t)r < CHILD_ERR_KEEP - c->nerr ? (size_t)r : CHILD_ERR_KEEP - c->nerr;
        memcpy(c->err + c->nerr, tmp, k);
        c->nerr += k;
        c->err[c->nerr] = '\0';
        return D_MORE;
    }
    size_t k = (size_t)r < CHILD_OUT_MAX - c->n ? (size_t)r : CHILD_OUT_MAX - c->n;
    while (c->n + k + 1 > c->cap)
        c->cap *= 2;
    c->buf = hbm_xrealloc(c->buf, c->cap);
    memcpy(c->buf + c->n, tmp, k);
    c->n += k;
    return D_MORE;
}

/* Reads both pipes until the child exits (its pidfd turns readable; what it wrote is then
 * in the pipes) or both pipes end, or the deadline passes: false when it passed. Something
 * the child started may hold the pipes open long after; the child's exit does not wait for
 * that. pidfd -1 (no pidfd_open): until the pipes end. */
static bool collect(int out_r, int err_r, int pidfd, double until, capture *c)
{
    struct pollfd p[3] = {{out_r, POLLIN, 0}, {err_r, POLLIN, 0}, {pidfd, POLLIN, 0}};
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        double left = until - hbm_now_mono();
        if (left <= 0)
            return false;
        if (poll(p, 3, (int)ceil(left * 1000)) <= 0)
            continue;
        bool exited = p[2].fd >= 0 && p[2].revents;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !(p[i].revents || exited))
                continue;
            int d;
            do
                d = drain(p[i].fd, c, i == 1);
            while (exited && d == D_MORE);
            if (d == D_END)
                p[i].fd = -1;
        }
        if (exited)
            return true;
    }
    return true;
}

static int spawn(char *const argv[], int out[2], int err[2], pid_t *pid, hbm_err *e)
{
    if (pipe2(out, O_CLOEXEC) < 0)
        return hbm_err_set(e, "pipe: %s", strerror(errno));
    if (pipe2(err, O_CLOEXEC) < 0) {
        int x = errno;
        close(out[0]);
        close(out[1]);
        return hbm_err_set(e, "pipe: %s", strerror(x));
    }
    static bool registered;
    if (!registered)
        registered = atexit(at_exit_kill) == 0;
    *pid = fork();
    if (*pid == 0)
        child_exec(argv, out[1], err[1]);
    int x = errno;
    close(out[1]);
    close(err[1]);
    if (*pid < 0) {
        close(out[0]);
        close(err[0]);
        return hbm_err_set(e, "fork: %s", strerror(x));
    }
    /* Also set here: whichever of the two runs first, the group exists before a kill. */
    setpgid(*pid, *pid);
    group_track(*pid, true);
    return 0;
}

int hbm_run_capture_for(char *const argv[], double timeout, char **out, size_t *len,
                        hbm_err *err)
{
    int po[2], pe[2];
    pid_t pid = -1;
    if (spawn(argv, po, pe, &pid, err) < 0)
        return -1;
    fcntl(po[0], F_SETFL, O_NONBLOCK);
    fcntl(pe[0], F_SETFL, O_NONBLOCK);
    capture c = {.buf = hbm_xmalloc(65536), .cap = 65536};
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    bool in_time = collect(po[0], pe[0], pidfd, hbm_now_mono() + timeout, &c);
    close(po[0]);
    close(pe[0]);
    if (pidfd >= 0)
        close(pidfd);
    /* Whatever of the group is left (all of it past the deadline, a grandchild that kept
     * the pipes otherwise) goes with it. */
    kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    group_track(pid, false);
    c.buf[c.n] = '\0';
    const char *cmd = argv[0], *arg = argv[1] ? argv[1] : "";
    int rc = 0;
    if (!in_time) {
        hbm_err_set(err, "%s %s did not finish within %gs (killed)", cmd, arg, timeout);
        rc = HBM_ERR_HUNG;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *said = c.nerr ? c.err : c.buf;
        char *first = hbm_xstrndup(said, 200);
        rc = hbm_err_set(err, "%s %s exited with status %d%s%s", cmd, arg,
                         WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                         *hbm_trim(first) ? ": " : "", hbm_trim(first));
        free(first);
    }
    if (rc < 0) {
        free(c.buf);
        return rc;
    }
    *out = c.buf;
    *len = c.n;
    return 0;
}

int hbm_run_capture(char *const argv[], char **out, size_t *len, hbm_err *err)
{
    return hbm_run_capture_for(argv, HBM_CHILD_TIMEOUT_DEFAULT, out, len, err);
}
