/* The floor for bench/scan: the least work that finds every holder of a device file, a
 * bare loop over /proc/PID/fd with readlink and a prefix compare (what a shell loop running
 * readlink on every /proc/PID/fd/N does, without the shell). With --maps it also reads each
 * process's /proc/PID/maps once, whole: the floor of a scan that must find mappings of
 * /dev/shm objects (a mapping keeps no fd).
 *   scan_floor PREFIX RUNS [--maps]  prints one CPU time (user + system) in milliseconds per run
 *   scan_floor PREFIX --holders      prints "pid target" for each link starting with PREFIX */
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Reads /proc/PID/maps to its end; what it says does not matter to the floor. */
static void read_maps(const char *pid)
{
    static char buf[1 << 16];
    char path[sizeof "/proc//maps" + NAME_MAX];
    snprintf(path, sizeof path, "/proc/%s/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);
}

static long scan(const char *prefix, int print, int maps)
{
    size_t pl = strlen(prefix);
    long hits = 0;
    DIR *proc = opendir("/proc");
    if (!proc)
        return -1;
    struct dirent *e;
    char path[PATH_MAX], target[PATH_MAX];
    while ((e = readdir(proc))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/fd", e->d_name);
        DIR *fds = opendir(path);
        if (!fds)
            continue;
        struct dirent *f;
        while ((f = readdir(fds))) {
            if (f->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "/proc/%s/fd/%s", e->d_name, f->d_name);
            ssize_t n = readlink(path, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if ((size_t)n >= pl && !memcmp(target, prefix, pl)) {
                hits++;
                if (print)
                    printf("%s %s\n", e->d_name, target);
            }
        }
        closedir(fds);
        if (maps)
            read_maps(e->d_name);
    }
    closedir(proc);
    return hits;
}

int main(int argc, char **argv)
{
    int maps = argc == 4 && !strcmp(argv[3], "--maps");
    if (argc != 3 && !maps) {
        fprintf(stderr, "usage: scan_floor PREFIX RUNS [--maps] | PREFIX --holders\n");
        return 2;
    }
    if (!strcmp(argv[2], "--holders"))
        return scan(argv[1], 1, 0) < 0 ? 2 : 0;
    int runs = atoi(argv[2]);
    for (int r = 0; r < runs; r++) {
        double t0 = cpu_ms();
        if (scan(argv[1], 0, maps) < 0)
            return 2;
        printf("%.3f\n", cpu_ms() - t0);
    }
    return 0;
}
