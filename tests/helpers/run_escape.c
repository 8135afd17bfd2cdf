/* The escape tree for `hbmctl run` tests: three workers that each defeat a naive stop.
 *   - a worker that double-forks and calls setsid: its process leaves the group and
 *     the session, and its parent is gone (reparented to the nearest subreaper);
 *   - a worker that ignores SIGTERM;
 *   - a plain worker.
 * Usage: run_escape PIDFILE. Writes "pid starttime" for itself and each worker to PIDFILE
 * once all are running (rename, so a reader never sees half of it), then waits for a
 * signal; SIGTERM ends it with the default action. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long long starttime(pid_t pid)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long v = 0;
    /* field 22 is the 20th after the ')' */
    for (int field = 3; field <= 22 && p; field++) {
        p = strchr(p + 1, ' ');
        if (p && field == 22)
            v = strtoull(p + 1, NULL, 10);
    }
    return v;
}

static void forever(void)
{
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: run_escape PIDFILE\n");
        return 2;
    }
    int pfd[2];
    if (pipe(pfd) < 0)
        return 1;
    pid_t pids[4];
    pids[0] = getpid();

    /* double fork + setsid: the grandchild reports its pid through the pipe */
    pid_t mid = fork();
    if (mid == 0) {
        pid_t g = fork();
        if (g == 0) {
            setsid();
            pid_t me = getpid();
            if (write(pfd[1], &me, sizeof me) != sizeof me)
                _exit(1);
            close(pfd[1]);
            forever();
        }
        _exit(0);
    }
    waitpid(mid, NULL, 0);
    if (read(pfd[0], &pids[1], sizeof pids[1]) != sizeof pids[1])
        return 1;

    pid_t p = fork();
    if (p == 0) {
        signal(SIGTERM, SIG_IGN);
        forever();
    }
    pids[2] = p;
    p = fork();
    if (p == 0)
        forever();
    pids[3] = p;

    /* let the SIGTERM-ignoring worker install its disposition before anyone looks */
    usleep(100 * 1000);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return 1;
    for (int i = 0; i < 4; i++)
        fprintf(f, "%d %llu\n", (int)pids[i], starttime(pids[i]));
    fclose(f);
    if (rename(tmp, argv[1]) < 0)
        return 1;
    forever();
}
