/* Times hbm_host_scan alone (no CLI, no backend): the figure bench/scan compares with a
 * bare readlink loop, fuser and lsof. Device patterns come from HBMCTL_DEVICE_PATTERNS.
 *   scan_bench RUNS        prints one CPU time (user + system) in milliseconds per run
 *   scan_bench --holders   prints "pid path" for each device file held and each /dev/shm
 *                          object mapped or open, then exits */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hbm/host.h"

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    bool holders = argc == 2 && !strcmp(argv[1], "--holders");
    int runs = holders ? 1 : (argc == 2 ? atoi(argv[1]) : 0);
    if (runs <= 0) {
        fprintf(stderr, "usage: scan_bench RUNS | --holders\n");
        return 2;
    }
    hbm_host_opts opts = {.root = hbm_host_env_root()};
    for (int r = 0; r < runs; r++) {
        hbm_host h;
        hbm_err err;
        double t0 = cpu_ms();
        if (hbm_host_scan(&h, &opts, &err) < 0) {
            fprintf(stderr, "scan_bench: %s\n", err.msg);
            return 2;
        }
        double t1 = cpu_ms();
        if (holders) {
            for (size_t i = 0; i < h.nprocs; i++)
                for (size_t k = 0; k < h.procs[i].ndev_paths; k++)
                    printf("%d %s\n", h.procs[i].pid, h.procs[i].dev_paths[k]);
            for (size_t i = 0; i < h.nposix; i++)
                for (size_t k = 0; k < h.posix[i].nholders; k++)
                    printf("%d %s\n", h.posix[i].holders[k], h.posix[i].path);
        } else {
            printf("%.3f\n", t1 - t0);
        }
        hbm_host_free(&h);
    }
    return 0;
}
