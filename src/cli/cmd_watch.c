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
    char line[600];
    bool stalled;
    for (size_t k = 0; watch_server_line(c, k, line, sizeof line, &stalled); k++)
        printf("%s  %.90s\n", when, line); /* 100 columns; the TUI and --json say it all */
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

static json_t *servers_json(const watch_ctx *c)
{
    json_t *servers = json_array();
    for (size_t i = 0; i < c->servers.n; i++) {
        const hbm_progress_server *v = &c->servers.s[i];
        json_t *sj = json_object();
        json_object_set_new(sj, "url", json_string(v->safe));
        json_object_set_new(sj, "up", json_boolean(v->up));
        json_object_set_new(sj, "error", v->up ? json_null() : json_string(v->error));
        json_t *eng = json_array();
        for (size_t e = 0; v->up && e < v->track.n; e++)
            json_array_append_new(eng, hbm_progress_engine_json(&v->track.e[e]));
        json_object_set_new(sj, "engines", eng);
        json_array_append_new(servers, sj);
    }
    return servers;
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
    if (c->servers.n)
        json_object_set_new(j, "servers", servers_json(c));
    json_t *ev = json_array();
    for (size_t i = watch_first_unshown(c); i < c->nevents; i++)
        json_array_append_new(ev, json_string(c->events[i]));
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
    static watch_ctx c; /* large (history rings): not on the stack */
    memset(&c, 0, sizeof c);
    cli_common_init(&c.common);
    c.interval = 1.0;
    hbm_leak_params lp;
    hbm_leak_params_default(&lp);
    cli_limit threshold = {lp.threshold_bytes, 0.9};
    long steps = (long)lp.steps;
    bool plain = false;
    hbm_progress_servers_init(&c.servers, 60, 2);
    const cli_opt opts[] = {
        CLI_OPT(CLI_DURATION, "interval", 0, "DUR", &c.interval,
                "time between samples (default 1s; 250ms, 2s, 1m)", .min = 0.01,
                .why = "want 10ms or more"),
        CLI_OPT(CLI_COUNT, "count", 0, "N", &c.count,
                "stop after N samples (default: until interrupted)", .min = 1,
                .why = "want a number of samples, 1 or more"),
        CLI_OPT(CLI_FLAG, "plain", 0, NULL, &plain, "line output even on a terminal"),
        CLI_OPT(CLI_DEVICES, "device", 0, "ID", &c.only,
                "only this device (logic id on Ascend, index on NVIDIA);\n"
                "repeat for several"),
        CLI_OPT(CLI_CALL, "threshold", 0, "PCT|SIZE", &threshold,
                "report crossings of this level (default 90%; 'none')", .fn = read_threshold,
                .words = "80% 90% 95% none"),
        CLI_OPT(CLI_SIZE, "leak-step", 0, "SIZE", &lp.step_min_bytes,
                "smallest step counted (default 512MiB)", .min = 1, .why = "want a size"),
        CLI_OPT(CLI_COUNT, "leak-steps", 0, "N", &steps,
                "unreturned steps that make a leak (default 3)", .min = 1,
                .max = HBM_LEAK_LEVELS_MAX - 1),
        CLI_PROGRESS_OPTS(&c.servers),
        CLI_GROUPS_HERE,
        CLI_OPTS_END,
    };
    const cli_spec spec = {
        .cmd = "watch", .usage = "[--interval DUR] [--count N] [--plain] [OPTIONS]",
        .about = about, .opts = opts, .groups = CLI_G_JSON | CLI_G_SOURCE, .common = &c.common,
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
    hbm_progress_servers_free(&c.servers);
    free(c.last_state);
    return rc;
}
