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

#include "cli_progress.h"
#include "watch_session.h"

static const char about[] =
    "Samples the devices every --interval and shows memory, verdicts and a memory\n"
    "history per device. Reports step growth (memory rising in steps that never come\n"
    "back: a leak) per device and per process, and threshold crossings.\n"
    "On a terminal: full screen (q quit, s sort, up/down or digits pick a device,\n"
    "Enter details). Otherwise, or with --plain: one line per device and sample,\n"
    "plus a line for each leak or threshold event.\n";

/* --threshold: a limit, or "none" for no crossing reports. */
static int read_threshold(void *dst, const char *v, char *why, size_t n)
{
    cli_limit *l = dst;
    if (strcmp(v, "none") == 0) {
        l->bytes = HBM_UNKNOWN;
        l->ratio = NAN;
        return 0;
    }
    return cli_read_limit(dst, v, why, n);
}

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void print_plain(watch_ctx *c)
{
    char when[16], used[32], total[32], desc[160], event[200];
    watch_clock_text(when, sizeof when, hbm_now_wall());
    if (c->s.error[0]) {
        printf("%s  could not observe: %s\n", when, c->s.error);
    } else {
        for (size_t i = 0; i < c->s.obs.ndevs; i++) {
            const hbm_device *d = &c->s.obs.devs[i];
            if (!hbm_watch_session_wanted(&c->s, d))
                continue;
            int64_t id = hbm_device_user_id(d);
            const hbm_watch_series *s = hbm_watch_find(&c->s.w, id, HBM_UNKNOWN);
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
    char line[600];
    bool stalled;
    for (size_t k = 0; watch_server_line(c, k, line, sizeof line, &stalled); k++)
        printf("%s  %.90s\n", when, line); /* 100 columns; the TUI and --json say it all */
    for (size_t i = hbm_watch_session_first_unshown(&c->s); i < c->s.nevents; i++)
        printf("%s\n", watch_event_text(&c->s.events[i], event, sizeof event));
    fflush(stdout);
}

static void print_json(watch_ctx *c)
{
    json_t *j = json_object();
    json_object_set_new(j, "time", json_real(hbm_now_wall()));
    json_object_set_new(j, "sample", json_integer(c->s.samples));
    if (c->s.error[0]) {
        json_object_set_new(j, "error", json_string(c->s.error));
    } else {
        json_object_set_new(j, "backend", json_string(c->s.obs.backend));
        json_object_set_new(j, "devices", hbm_watch_session_devices_json(&c->s));
    }
    if (c->servers.n)
        json_object_set_new(j, "servers", hbm_watch_session_servers_json(&c->s));
    json_t *ev = json_array();
    char event[200];
    for (size_t i = hbm_watch_session_first_unshown(&c->s); i < c->s.nevents; i++)
        json_array_append_new(ev, json_string(watch_event_text(&c->s.events[i], event,
                                                               sizeof event)));
    json_object_set_new(j, "events", ev);
    cli_json_print(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
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
        int rc = hbm_watch_session_sample(&c->s);
        if (rc < 0 && c->s.samples == 1) {
            cli_errorf("%s", c->s.error);
            return CLI_EXIT_ERROR;
        }
        if (c->common.json)
            print_json(c);
        else
            print_plain(c);
        if (c->count > 0 && c->s.samples >= c->count)
            break;
        next += c->interval;
        sleep_until(next);
    }
    return c->s.problem_seen ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
}

int cmd_watch(int argc, char **argv)
{
    static watch_ctx c; /* large (history rings): not on the stack */
    memset(&c, 0, sizeof c);
    hbm_opt_common_init(&c.common);
    c.interval = 1.0;
    hbm_leak_params lp;
    hbm_leak_params_default(&lp);
    cli_limit threshold = {lp.threshold_bytes, 0.9};
    long steps = (long)lp.steps;
    bool plain = false;
    hbm_progress_servers_init(&c.servers, 60, 2);
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_DURATION, "interval", 0, "DUR", &c.interval,
                "time between samples (default 1s; 250ms, 2s, 1m)", .min = 0.01,
                .why = "want 10ms or more"),
        HBM_OPT(HBM_OPT_COUNT, "count", 0, "N", &c.count,
                "stop after N samples (default: until interrupted)", .min = 1,
                .why = "want a number of samples, 1 or more"),
        HBM_OPT(HBM_OPT_FLAG, "plain", 0, NULL, &plain, "line output even on a terminal"),
        HBM_OPT(HBM_OPT_DEVICES, "device", 0, "ID", &c.only,
                "only this device (logic id on Ascend, index on NVIDIA);\n"
                "repeat for several"),
        HBM_OPT(HBM_OPT_CALL, "threshold", 0, "PCT|SIZE", &threshold,
                "report crossings of this level (default 90%; 'none')", .fn = read_threshold,
                .words = "80% 90% 95% none"),
        HBM_OPT(HBM_OPT_SIZE, "leak-step", 0, "SIZE", &lp.step_min_bytes,
                "smallest step counted (default 512MiB)", .min = 1, .why = "want a size"),
        HBM_OPT(HBM_OPT_COUNT, "leak-steps", 0, "N", &steps,
                "unreturned steps that make a leak (default 3)", .min = 1,
                .max = HBM_LEAK_LEVELS_MAX - 1),
        CLI_PROGRESS_OPTS(&c.servers),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "watch", .usage = "[--interval DUR] [--count N] [--plain] [OPTIONS]",
        .about = about, .opts = opts, .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE,
        .common = &c.common,
        .json_help = "one JSON object per sample (JSON lines)",
        .snapshot_help = "watch a snapshot file, re-read at every sample",
        .exits = "exit: 0 done, 1 a leak or a server stall was reported during the run, 2 could\n"
                 "      not look\n",
    };
    int prc = cli_parse_options(&spec, argc, argv);
    if (prc != CLI_CONTINUE) {
        hbm_progress_servers_free(&c.servers);
        return prc;
    }
    lp.threshold_bytes = threshold.bytes;
    lp.threshold_ratio = threshold.ratio;
    lp.steps = (size_t)steps;
    hbm_watch_session_init(&c.s, &lp, &c.common.src, c.only.id, c.only.n, &c.servers);
    int rc;
#ifdef HBM_HAVE_NCURSES
    if (!plain && !c.common.json && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        rc = watch_tui_run(&c);
    else
#else
    (void)plain; /* no full-screen view in this build: always lines */
#endif
        rc = run_lines(&c);
    hbm_watch_session_free(&c.s);
    hbm_progress_servers_free(&c.servers);
    return rc;
}
