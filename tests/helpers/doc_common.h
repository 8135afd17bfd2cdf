/* What the doc_* test programs share: a process that must stay runs in the background and
 * reports its pids to the caller, then lingers (ending itself after 300 s). */
#ifndef DOC_COMMON_H
#define DOC_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The shell waits for a command substitution's process to exit, so a process that must
 * stay runs in a child: the caller's process prints what the child reports and exits. */
static int report_fd = -1;

/* A pipe p, then fork(); exits on failure of either. */
static inline pid_t pipe_fork(int p[2])
{
    if (pipe(p) < 0)
        exit(1);
    pid_t c = fork();
    if (c < 0)
        exit(1);
    return c;
}

static inline void background(void)
{
    int p[2];
    pid_t c = pipe_fork(p);
    if (c > 0) {
        close(p[1]);
        char buf[256];
        ssize_t n = read(p[0], buf, sizeof buf - 1);
        if (n <= 0)
            exit(1);
        fwrite(buf, 1, (size_t)n, stdout);
        exit(0);
    }
    close(p[0]);
    report_fd = p[1];
}

static inline void report(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (write(report_fd, buf, (size_t)n) != n)
        _exit(1);
    close(report_fd);
}

/* Tells a parent waiting on the pipe's other end that this process is ready. */
static inline void ready(int fd)
{
    if (write(fd, "r", 1) != 1)
        _exit(1);
    close(fd);
}

/* Forks a child titled VLLM::EngineCore (the kernel keeps VLLM::EngineCor) and returns its
 * pid once it has called ready(*fd); in the child, returns 0 with *fd its end of the pipe. */
static inline pid_t fork_engine(int *fd)
{
    int p[2];
    pid_t c = pipe_fork(p);
    if (c == 0) {
        close(p[0]);
        prctl(PR_SET_NAME, "VLLM::EngineCore");
        *fd = p[1];
        return 0;
    }
    close(p[1]);
    char ch;
    if (read(p[0], &ch, 1) != 1)
        exit(1);
    close(p[0]);
    return c;
}

static inline void linger(void)
{
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
        _exit(1);
    alarm(300);
    for (;;)
        pause();
}

#endif
