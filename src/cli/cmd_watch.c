/* hbmctl watch: a live view refreshing every --interval, with a memory history per device
 * and leak detection (docs/leak-detection.md). Full screen on a terminal; one line per
 * device and sample otherwise (or with --plain), JSON lines with --json. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "watch_session.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hbmctl watch [--interval DUR] [--count N] [--plain] [OPTIONS]\n\n"
            "Samples the devices every --interval and shows memory, verdicts and a memory\n"
            "history per device. Reports step growth (memory rising in steps that never come\n"
            "back: a leak) per device and per process, and threshold crossings.\n"
            "On a terminal: full screen (q quit, s sort, up/down or digits pick a device,\n"
            "Enter details). Otherwise, or with --plain: one line per device and sample,\n"
            "plus a line for each leak or threshold event.\n\n"
            "options:\n"
            "  --interval DUR       time between samples (default 1s; 250ms, 2s, 1m)\n"
            "  --count N            stop after N samples (default: until interrupted)\n"
            "  --plain              line output even on a terminal\n"
            "  --json               one JSON object per sample (JSON lines)\n"
            "  --device ID          only this device (logic id on Ascend, index on NVIDIA);\n"
            "                       repeat for several\n"
            "  --threshold PCT|SIZE report crossings of this level (default 90%%; 'none')\n"
            "  --leak-step SIZE     smallest step counted (default 512MiB)\n"
            "  --leak-steps N       unreturned steps that make a leak (default 3)\n"
            "  --snapshot FILE      watch a snapshot file, re-read at every sample\n"
            "  --backend NAME       auto, nvml, dcmi, npu-smi, snapshot (default auto)\n"
            "  --root DIR           read /proc, /sys and /dev under DIR (tests; env "
            "HBMCTL_ROOT)\n"
            "  -h, --help           this text\n\n"
            "exit: 0 done, 1 a leak was reported during the run, 2 could not look\n");
}

enum {
    OPT_INTERVAL = CLI_OPT_FIRST_FREE,
    OPT_COUNT,
    OPT_PLAIN,
    OPT_DEVICE,
    OPT_THRESHOLD,
    OPT_LEAK_STEP,
    OPT_LEAK_STEPS,
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void print_plain(watch_ctx *c)
{
    char when[16], used[32], total[32], desc[160];
    watch_clock_text(when, sizeof when, hbm_now_wall());
    if (c->error[0]) {
        printf("%s  could not observe: %s\n", when, c->error);
    } else {
        for (size_t i = 0; i < c->obs.ndevs; i++) {
            const hbm_device *d = &c->obs.devs[i];
            if (!watch_wanted(c, d))
                continue;
            int64_t id = hbm_device_user_id(d);
            const hbm_watch_series *s = hbm_watch_find(&c->w, id, HBM_UNKNOWN);
            char pct[8] = "-";
            if (d->memory_used_bytes >= 0 && d->memory_total_bytes > 0)
                snprintf(pct, sizeof pct, "%.0f%%",
                         100.0 * (double)d->memory_used_bytes / (double)d->memory_total_bytes);
            printf("%s  dev %-3lld %-12.12s %10s / %-10s %4s  %-11s %s\n", when, (long long)id,
                   d->name[0] ? d->name : "-", cli_size(used, sizeof used, d->memory_used_bytes),
                   cli_size(total, sizeof total, d->memory_total_bytes), pct,
                   hbm_verdict_name(d->verdict),
                   s ? hbm_watch_describe(s, desc, sizeof desc) : "-");
        }
    }
    for (size_t i = watch_first_unshown(c); i < c->nevents; i++)
        printf("%s\n", c->events[i]);
    fflush(stdout);
}

static json_t *series_json(const hbm_watch_series *s)
{
    const hbm_leak_status *st = &s->det.st;
    char desc[160];
    json_t *j = json_object();
    json_object_set_new(j, "ready", json_boolean(st->ready));
    json_object_set_new(j, "leak", json_boolean(st->leak));
    json_object_set_new(j, "above_threshold", json_boolean(st->above));
    json_object_set_new(j, "steps", json_integer(st->steps));
    json_object_set_new(j, "growth_bytes", json_integer(st->growth));
    json_object_set_new(j, "level_bytes", st->level >= 0 ? json_integer(st->level) : json_null());
    json_object_set_new(j, "base_bytes", st->base >= 0 ? json_integer(st->base) : json_null());
    json_object_set_new(j, "step_bytes", json_integer(st->step_bytes));
    json_object_set_new(j, "noise_bytes",
                        isfinite(st->noise_bytes) ? json_real(st->noise_bytes) : json_null());
    json_object_set_new(j, "summary", json_string(hbm_watch_describe(s, desc, sizeof desc)));
    return j;
}

static void print_json(watch_ctx *c)
{
    json_t *j = json_object();
    json_object_set_new(j, "time", json_real(hbm_now_wall()));
    json_object_set_new(j, "sample", json_integer(c->samples));
    if (c->error[0]) {
        json_object_set_new(j, "error", json_string(c->error));
    } else {
        json_object_set_new(j, "backend", json_string(c->obs.backend));
        json_t *devs = json_array();
        for (size_t i = 0; i < c->obs.ndevs; i++) {
            const hbm_device *d = &c->obs.devs[i];
            if (!watch_wanted(c, d))
                continue;
            int64_t id = hbm_device_user_id(d);
            json_t *dj = json_object();
            json_object_set_new(dj, "device", id >= 0 ? json_integer(id) : json_null());
            json_object_set_new(dj, "name", json_string(d->name));
            json_object_set_new(dj, "memory_used_bytes", d->memory_used_bytes >= 0
                                                             ? json_integer(d->memory_used_bytes)
                                                             : json_null());
            json_object_set_new(dj, "memory_total_bytes",
                                d->memory_total_bytes >= 0 ? json_integer(d->memory_total_bytes)
                                                           : json_null());
            json_object_set_new(dj, "verdict", json_string(hbm_verdict_name(d->verdict)));
            const hbm_watch_series *s = hbm_watch_find(&c->w, id, HBM_UNKNOWN);
            json_object_set_new(dj, "leak", s ? series_json(s) : json_null());
            json_t *procs = json_array();
            for (size_t k = 0; k < d->nprocs; k++) {
                const hbm_watch_series *ps = hbm_watch_find(&c->w, id, d->procs[k].pid);
                json_t *pj = json_object();
                json_object_set_new(pj, "pid", json_integer(d->procs[k].pid));
                json_object_set_new(pj, "name", json_string(d->procs[k].name));
                json_object_set_new(pj, "memory_bytes", d->procs[k].memory_bytes >= 0
                                                            ? json_integer(d->procs[k].memory_bytes)
                                                            : json_null());
                json_object_set_new(pj, "leak", ps ? series_json(ps) : json_null());
                json_array_append_new(procs, pj);
            }
            json_object_set_new(dj, "processes", procs);
            json_array_append_new(devs, dj);
        }
        json_object_set_new(j, "devices", devs);
    }
    json_t *ev = json_array();
    for (size_t i = watch_first_unshown(c); i < c->nevents; i++)
        json_array_append_new(ev, json_string(c->events[i]));
    json_object_set_new(j, "events", ev);
    json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    fflush(stdout);
    json_decref(j);
}

/* Sleeps until the absolute monotonic time `until`, or until a stop signal. */
static void sleep_until(double until)
{
    while (!stop_requested) {
        double left = until - hbm_now_mono();
        if (left <= 0)
            return;
        struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
        if (nanosleep(&ts, NULL) == 0)
            return;
        if (errno != EINTR)
            return;
    }
}

static int run_lines(watch_ctx *c)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    double next = hbm_now_mono();
    while (!stop_requested) {
        int rc = watch_sample(c);
        if (rc < 0 && c->samples == 1) {
            cli_errorf("%s", c->error);
            return CLI_EXIT_ERROR;
        }
        if (c->common.json)
            print_json(c);
        else
            print_plain(c);
        if (c->count > 0 && c->samples >= c->count)
            break;
        next += c->interval;
        sleep_until(next);
    }
    return c->leak_seen ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
}

int cmd_watch(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_LONGOPTS,
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"count", required_argument, NULL, OPT_COUNT},
        {"plain", no_argument, NULL, OPT_PLAIN},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"threshold", required_argument, NULL, OPT_THRESHOLD},
        {"leak-step", required_argument, NULL, OPT_LEAK_STEP},
        {"leak-steps", required_argument, NULL, OPT_LEAK_STEPS},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    static watch_ctx c; /* large (history rings): not on the stack */
    memset(&c, 0, sizeof c);
    cli_common_init(&c.common);
    c.interval = 1.0;
    hbm_leak_params lp;
    hbm_leak_params_default(&lp);
    lp.threshold_ratio = 0.9;
    bool plain = false;
    hbm_err err = {{0}};
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (cli_common_opt(&c.common, opt, optarg))
            continue;
        char *end;
        switch (opt) {
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        case OPT_INTERVAL:
            if (hbm_parse_duration(optarg, &c.interval, &err) < 0 || c.interval < 0.01) {
                cli_errorf("--interval %s: %s", optarg, err.msg[0] ? err.msg : "want 10ms or more");
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_COUNT:
            c.count = strtol(optarg, &end, 10);
            if (*end || end == optarg || c.count < 1) {
                cli_errorf("--count %s: want a number of samples, 1 or more", optarg);
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_PLAIN:
            plain = true;
            break;
        case OPT_DEVICE: {
            long long v = strtoll(optarg, &end, 10);
            if (*end || end == optarg || v < 0 || c.nonly == WATCH_MAX_ONLY) {
                cli_errorf("--device %s: want a device id (logic id on Ascend, index on NVIDIA)",
                           optarg);
                return CLI_EXIT_ERROR;
            }
            c.only[c.nonly++] = v;
            break;
        }
        case OPT_THRESHOLD:
            if (strcmp(optarg, "none") == 0) {
                lp.threshold_ratio = NAN;
                lp.threshold_bytes = HBM_UNKNOWN;
            } else if (hbm_watch_parse_limit(optarg, &lp.threshold_bytes, &lp.threshold_ratio,
                                             &err) < 0) {
                cli_errorf("--threshold: %s", err.msg);
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_LEAK_STEP:
            if (hbm_parse_size(optarg, &lp.step_min_bytes, &err) < 0 || lp.step_min_bytes < 1) {
                cli_errorf("--leak-step %s: %s", optarg, err.msg[0] ? err.msg : "want a size");
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_LEAK_STEPS: {
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v >= HBM_LEAK_LEVELS_MAX) {
                cli_errorf("--leak-steps %s: want 1..%d", optarg, HBM_LEAK_LEVELS_MAX - 1);
                return CLI_EXIT_ERROR;
            }
            lp.steps = (size_t)v;
            break;
        }
        default:
            return cli_usage_error("watch");
        }
    }
    if (optind < argc) {
        cli_errorf("watch takes no arguments ('%s')", argv[optind]);
        return cli_usage_error("watch");
    }
    hbm_watch_init(&c.w, &lp);
    int rc;
#ifdef HBM_HAVE_NCURSES
    if (!plain && !c.common.json && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        rc = watch_tui_run(&c);
    else
#else
    (void)plain; /* no full-screen view in this build: always lines */
#endif
        rc = run_lines(&c);
    if (c.have_obs)
        hbm_obs_free(&c.obs);
    hbm_watch_free(&c.w);
    return rc;
}
