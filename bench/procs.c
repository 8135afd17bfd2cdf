/* Fills the host with idle processes for the benches, bounded: every child dies with this
 * program (PR_SET_PDEATHSIG), and this program ends its children when its stdin closes or
 * it gets SIGTERM/SIGINT, so a bench killed half-way leaves nothing behind.
 *   bench_procs N [--hold FILE]... [--every K] [--map FILE]... [--map-every M]
 * starts N children that sleep in pause(); every K-th one (default 100) opens one of the
 * --hold files (an fd, as a device holder keeps), every M-th one (default K) maps one of
 * the --map files (as a /dev/shm user does), files taken in turn. Prints "ready N" once
 * all are up, then waits. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

static void child(pid_t parent, const char *hold, const char *map)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0); /* the parent died before the line above took effect */
    if (hold && open(hold, O_RDONLY | O_CLOEXEC) < 0)
        _exit(1);
    if (map) {
        int fd = open(map, O_RDWR | O_CLOEXEC);
        if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
            _exit(1);
        close(fd); /* a mapping keeps no fd: the scan must find it in maps */
    }
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
    const char *holds[8], *maps[8];
    int nhold = 0, nmap = 0;
    long every = 100, map_every = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--hold") && nhold < 8)
            holds[nhold++] = argv[i + 1];
        else if (!strcmp(argv[i], "--map") && nmap < 8)
            maps[nmap++] = argv[i + 1];
        else if (!strcmp(argv[i], "--every"))
            every = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--map-every"))
            map_every = strtol(argv[i + 1], NULL, 10);
        else
            n = 0;
    }
    if (!map_every)
        map_every = every;
    if (n <= 0 || every <= 0 || map_every <= 0 || argc % 2 != 0) {
        fprintf(stderr, "usage: bench_procs N [--hold FILE]... [--every K] [--map FILE]... "
                        "[--map-every M]\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    pid_t self = getpid(), *kids = calloc((size_t)n, sizeof *kids);
    if (!kids)
        return 1;
    long started = 0;
    struct pollfd in = {.fd = 0, .events = POLLIN};
    for (; started < n && !stop; started++) {
        /* a caller that gave up (its end of stdin closed) need not wait for all N */
        if (started % 256 == 0 && poll(&in, 1, 0) > 0 && (in.revents & (POLLHUP | POLLERR)))
            break;
        bool hold = nhold && started % every == 0, map = nmap && started % map_every == 0;
        pid_t p = fork();
        if (p == 0)
            child(self, hold ? holds[started / every % nhold] : NULL,
                  map ? maps[started / map_every % nmap] : NULL);
        if (p < 0) {
            fprintf(stderr, "bench_procs: fork %ld: %s\n", started, strerror(errno));
            break;
        }
        kids[started] = p;
    }
    if (started == n && !stop) {
        printf("ready %ld\n", started);
        fflush(stdout);
        struct pollfd pf = in;
        char buf[64];
        while (!stop && poll(&pf, 1, -1) >= 0 && (pf.revents & (POLLIN | POLLHUP)))
            if (read(0, buf, sizeof buf) <= 0)
                break;
    }
    for (long i = 0; i < started; i++)
        kill(kids[i], SIGKILL);
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    free(kids);
    return started == n ? 0 : 1;
}
