/* hbmctl probe: a health check for Kubernetes exec probes and scripts, in place of
 * `npu-smi info | grep | awk`. Exit 0 healthy, 1 unhealthy, 2 could not check; one line
 * that says why. The whole probe has a deadline, so a hung driver cannot hang it. */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"
#include "hbm/http.h"
#include "hbm/progress.h"
#include "hbm/watch.h"
#include "hbm/text.h"

static const char about[] =
    "Checks device health, device memory against a limit and, optionally, that an\n"
    "HTTP endpoint answers 2xx. Prints one line that says why. Meant for Kubernetes\n"
    "exec probes:  livenessProbe: {exec: {command: [hbmctl, probe, --max-mem, 90%,\n"
    "--url, http://127.0.0.1:8000/health]}}\n";

enum { PR_OK = 0, PR_BAD = 1, PR_UNKNOWN = 2 };

typedef struct probe {
    json_t *checks;  /* owned array */
    int worst;       /* PR_* of the worst check: BAD beats UNKNOWN beats OK */
    char first[600]; /* the reason of the first check that set worst */
    char oks[600];   /* what passed, for the healthy line */
} probe;

static int rank(int r)
{
    return r == PR_BAD ? 2 : r == PR_UNKNOWN ? 1 : 0;
}

static void record(probe *p, const char *check, int result, json_t *extra, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void record(probe *p, const char *check, int result, json_t *extra, const char *fmt, ...)
{
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    json_t *c = extra ? extra : json_object();
    json_object_set_new(c, "check", json_string(check));
    json_object_set_new(c, "ok", json_boolean(result == PR_OK));
    json_object_set_new(c, "result",
                        json_string(result == PR_OK    ? "healthy"
                                    : result == PR_BAD ? "unhealthy"
                                                      : "unknown"));
    json_object_set_new(c, "detail", json_string(why));
    json_array_append_new(p->checks, c);
    if (rank(result) > rank(p->worst)) {
        p->worst = result;
        snprintf(p->first, sizeof p->first, "%s", why);
    }
    if (result == PR_OK) {
        /* Append "; why", cut at the buffer's end. */
        size_t len = strlen(p->oks);
        const char *parts[2] = {len ? "; " : "", why};
        for (int i = 0; i < 2; i++) {
            size_t n = strlen(parts[i]);
            if (n > sizeof p->oks - 1 - len)
                n = sizeof p->oks - 1 - len;
            memcpy(p->oks + len, parts[i], n);
            len += n;
        }
        p->oks[len] = '\0';
    }
}

/* The deadline's line: NPD's 80 characters in --npd mode; with --json, the document of a
 * probe that could not check (the same fields as report()'s). */
static const char *deadline_msg = "hbmctl probe: could not check: deadline passed (driver or "
                                  "endpoint did not answer)\n";
static const char deadline_json[] =
    "{\"status\": \"unknown\", \"exit\": 2, \"reason\": \"deadline passed (driver or endpoint "
    "did not answer)\", \"checks\": []}\n";

static void on_deadline(int sig)
{
    (void)sig;
    /* A hung npu-smi goes with the probe: nothing it started outlives the deadline. */
    hbm_children_kill();
    ssize_t w = write(STDOUT_FILENO, deadline_msg, strlen(deadline_msg));
    (void)w;
    _exit(PR_UNKNOWN);
}

/* Arms (seconds > 0) or disarms (0) the deadline, to the microsecond: alarm() would round
 * 1500ms up to 2s. */
static void deadline_arm(double seconds)
{
    struct itimerval it = {{0, 0}, {(time_t)seconds,
                                     (suseconds_t)((seconds - floor(seconds)) * 1e6)}};
    if (seconds > 0 && it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
        it.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &it, NULL);
}

static void check_device(probe *p, const hbm_device *d, int64_t max_bytes, double max_ratio)
{
    int64_t id = hbm_device_user_id(d);
    char sz_used[32], sz_total[32], sz_lim[32];
    json_t *base = json_object();
    json_object_set_new(base, "device", id >= 0 ? json_integer(id) : json_null());
    json_object_set_new(base, "name", json_string(d->name));
    if (!d->healthy || d->verdict == HBM_VERDICT_UNHEALTHY)
        record(p, "health", PR_BAD, json_deep_copy(base), "device %lld (%s) health is %s",
               (long long)id, d->name, d->health[0] ? d->health : "not OK");
    else
        record(p, "health", PR_OK, json_deep_copy(base), "device %lld health %s", (long long)id,
               d->health[0] ? d->health : "OK");
    if (max_bytes < 0 && !isfinite(max_ratio)) {
        json_decref(base);
        return;
    }
    json_t *c = json_deep_copy(base);
    json_decref(base);
    json_object_set_new(c, "memory_used_bytes",
                        d->memory_used_bytes >= 0 ? json_integer(d->memory_used_bytes)
                                                  : json_null());
    json_object_set_new(c, "memory_total_bytes",
                        d->memory_total_bytes >= 0 ? json_integer(d->memory_total_bytes)
                                                   : json_null());
    hbm_fmt_size(sz_used, sizeof sz_used, d->memory_used_bytes);
    hbm_fmt_size(sz_total, sizeof sz_total, d->memory_total_bytes);
    if (d->memory_used_bytes < 0) {
        record(p, "max-mem", PR_UNKNOWN, c, "device %lld does not report its memory use",
               (long long)id);
        return;
    }
    if (isfinite(max_ratio)) {
        if (d->memory_total_bytes <= 0) {
            record(p, "max-mem", PR_UNKNOWN, c,
                   "device %lld does not report its memory total; give --max-mem as a size",
                   (long long)id);
            return;
        }
        double r = (double)d->memory_used_bytes / (double)d->memory_total_bytes;
        json_object_set_new(c, "used_ratio", json_real(r));
        json_object_set_new(c, "limit_ratio", json_real(max_ratio));
        record(p, "max-mem", r > max_ratio ? PR_BAD : PR_OK, c,
               "device %lld memory %s of %s (%.3g%%) %s --max-mem %.3g%%", (long long)id,
               sz_used, sz_total, r * 100, r > max_ratio ? "above" : "within", max_ratio * 100);
        return;
    }
    hbm_fmt_size(sz_lim, sizeof sz_lim, max_bytes);
    json_object_set_new(c, "limit_bytes", json_integer(max_bytes));
    bool over = d->memory_used_bytes > max_bytes;
    record(p, "max-mem", over ? PR_BAD : PR_OK, c, "device %lld memory %s of %s %s --max-mem %s",
           (long long)id, sz_used, sz_total, over ? "above" : "within", sz_lim);
}

static void check_url(probe *p, const char *url, double timeout)
{
    json_t *c = json_object();
    json_object_set_new(c, "url", json_string(url));
    hbm_http_result res;
    hbm_err err = {{0}};
    int rc = hbm_http_get(url, timeout, "hbmctl-probe/" HBM_VERSION, &res, &err);
    json_object_set_new(c, "seconds", json_real(res.seconds));
    json_object_set_new(c, "status_code", res.status ? json_integer(res.status) : json_null());
    if (rc < 0 && (res.outcome == HBM_HTTP_BAD_URL || res.outcome == HBM_HTTP_UNAVAILABLE))
        record(p, "http", PR_UNKNOWN, c, "%s", err.msg);
    else if (rc < 0)
        record(p, "http", PR_BAD, c, "%s", err.msg);
    else if (res.status < 200 || res.status > 299)
        record(p, "http", PR_BAD, c, "%s: HTTP %ld", url, res.status);
    else
        record(p, "http", PR_OK, c, "%s: HTTP %ld in %.0f ms", url, res.status,
               res.seconds * 1000);
}

/* Health and memory of the devices asked for (every device when ndevices is 0). */
static void check_devices(probe *p, cli_common *common, const cli_devices *devices,
                          int64_t max_bytes, double max_ratio)
{
    hbm_err err = {{0}};
    hbm_obs obs;
    hbm_obs_init(&obs);
    common->src.no_host = true; /* health and memory come from the driver alone */
    if (hbm_observe(&obs, &common->src, &err) < 0) {
        record(p, "devices", PR_UNKNOWN, NULL, "%s", err.msg);
    } else if (obs.ndevs == 0) {
        record(p, "devices", PR_UNKNOWN, NULL, "no device found (backend %s)", obs.backend);
    } else if (devices->n == 0) {
        for (size_t i = 0; i < obs.ndevs; i++)
            check_device(p, &obs.devs[i], max_bytes, max_ratio);
    } else {
        for (size_t k = 0; k < devices->n; k++) {
            hbm_device *d = hbm_obs_find_device(&obs, devices->id[k]);
            if (!d)
                record(p, "devices", PR_UNKNOWN, NULL,
                       "device %lld not found (%zu device%s; ids are logic ids on Ascend, "
                       "indexes on NVIDIA)",
                       (long long)devices->id[k], obs.ndevs, obs.ndevs == 1 ? "" : "s");
            else
                check_device(p, d, max_bytes, max_ratio);
        }
    }
    hbm_obs_free(&obs);
}

/* The one line (or the JSON) of a probe; releases its checks. */
static void report(probe *p, bool json)
{
    const char *word = p->worst == PR_OK ? "healthy" : p->worst == PR_BAD ? "unhealthy"
                                                                      : "could not check";
    const char *why = p->worst == PR_OK ? p->oks : p->first;
    if (json) {
        json_t *j = json_object();
        json_object_set_new(j, "status", json_string(p->worst == PR_OK    ? "healthy"
                                                     : p->worst == PR_BAD ? "unhealthy"
                                                                        : "unknown"));
        json_object_set_new(j, "exit", json_integer(p->worst));
        json_object_set_new(j, "reason", json_string(why));
        json_object_set_new(j, "checks", p->checks);
        cli_json_out(j);
    } else {
        printf("hbmctl probe: %s: %s\n", word, why);
        json_decref(p->checks);
    }
}

/* ---- node-problem-detector custom plugin mode (docs/kubernetes.md) ---- */

/* NPD's max_output_length default: the rest of a line would be cut mid-word. */
#define NPD_LINE_MAX 80

typedef enum npd_check {
    NPD_ORPHANED,
    NPD_UNACCOUNTED,
    NPD_UNHEALTHY,
    NPD_LEAK,
    NPD_STALLED, /* a server's progress (--metrics-url), not the devices */
} npd_check;

static const char *const npd_names[] = {"orphaned", "unaccounted", "unhealthy", "leaking",
                                        "stalled",  NULL};

/* Leak state per device, from the history file (judged before the devices are walked). */
typedef struct npd_leaks {
    hbm_history hist;
    bool loaded;
} npd_leaks;

static const hbm_history_dev *npd_hist(const npd_leaks *l, const hbm_device *d)
{
    for (size_t i = 0; l->loaded && i < l->hist.n; i++)
        if (l->hist.devs[i].device == hbm_device_user_id(d))
            return &l->hist.devs[i];
    return NULL;
}

static bool npd_hit(npd_check c, const hbm_device *d, const npd_leaks *l)
{
    const hbm_history_dev *h;
    switch (c) {
    case NPD_LEAK: return (h = npd_hist(l, d)) && hbm_history_judge(h, NULL).leak;
    case NPD_STALLED: return false;
    case NPD_ORPHANED: return d->verdict == HBM_VERDICT_ORPHANED;
    case NPD_UNACCOUNTED: return d->verdict == HBM_VERDICT_UNACCOUNTED;
    case NPD_UNHEALTHY: return d->verdict == HBM_VERDICT_UNHEALTHY || !d->healthy;
    }
    return false;
}

/* The cause on one device in a few words: the orphan and its pod, the memory nobody holds,
 * the vendor's health word. */
static void npd_cause(npd_check c, const hbm_device *d, const npd_leaks *l, char *buf,
                      size_t n)
{
    char sz[32];
    if (c == NPD_LEAK) {
        hbm_leak_status st = hbm_history_judge(npd_hist(l, d), NULL);
        hbm_fmt_size(sz, sizeof sz, st.growth);
        snprintf(buf, n, "memory grew %s in %d steps", sz, st.steps);
        return;
    }
    if (c == NPD_UNHEALTHY) {
        snprintf(buf, n, "health %s", d->health[0] ? d->health : "not OK");
        return;
    }
    if (c == NPD_UNACCOUNTED) {
        hbm_fmt_size(sz, sizeof sz, d->unaccounted_bytes);
        snprintf(buf, n, "%s held by no process", sz);
        return;
    }
    for (size_t i = 0; i < d->nprocs; i++) {
        const hbm_dproc *p = &d->procs[i];
        if (p->state == HBM_PID_LIVE || p->state == HBM_PID_UNCHECKED ||
            p->state == HBM_PID_UNSEEN)
            continue;
        hbm_fmt_size(sz, sizeof sz, p->memory_bytes);
        if (p->pod.name[0])
            snprintf(buf, n, "%s pid %lld pod %s/%s holds %s", hbm_pid_state_name(p->state),
                     (long long)p->pid, p->pod.ns, p->pod.name, sz);
        else
            snprintf(buf, n, "%s pid %lld (%s) holds %s", hbm_pid_state_name(p->state),
                     (long long)p->pid, p->name[0] ? p->name : "?", sz);
        return;
    }
    snprintf(buf, n, "held by a process that is gone");
}

/* Prints at most NPD_LINE_MAX bytes, cut on a character boundary, and a newline. */
static void npd_print(const char *line)
{
    size_t n = strlen(line);
    if (n > NPD_LINE_MAX) {
        n = NPD_LINE_MAX;
        while (n > 0 && ((unsigned char)line[n] & 0xC0) == 0x80)
            n--;
    }
    printf("%.*s\n", (int)n, line);
}

/* Appends this run's sample to the history file and keeps it for judging. */
static int npd_history(const char *path, const hbm_obs *obs, npd_leaks *l, hbm_err *err)
{
    if (hbm_history_load(path, &l->hist, err) < 0)
        return -1;
    l->loaded = true;
    hbm_history_add(&l->hist, obs, obs->captured_at);
    return hbm_history_save(path, &l->hist, err);
}

static int npd_run(cli_common *common, npd_check c, const char *history)
{
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_err err = {{0}};
    char line[512];
    npd_leaks leaks = {0};
    /* Orphans need the host join; health and memory come from the driver alone. */
    common->src.no_host = c == NPD_UNHEALTHY || c == NPD_LEAK;
    if (hbm_observe(&obs, &common->src, &err) < 0 || obs.ndevs == 0 ||
        (c == NPD_LEAK && npd_history(history, &obs, &leaks, &err) < 0)) {
        hbm_history_free(&leaks.hist);
        hbm_text_fitf(line, sizeof line, "unknown: %s", obs.ndevs || err.msg[0] ? err.msg
                                                                             : "no device found");
        hbm_obs_free(&obs);
        npd_print(line);
        return PR_UNKNOWN;
    }
    const hbm_device *first = NULL;
    size_t hits = 0;
    for (size_t i = 0; i < obs.ndevs; i++)
        if (npd_hit(c, &obs.devs[i], &leaks) && !hits++)
            first = &obs.devs[i];
    if (!first) {
        snprintf(line, sizeof line, "ok: %zu device%s, none %s", obs.ndevs,
                 obs.ndevs == 1 ? "" : "s", npd_names[c]);
    } else {
        char cause[400], more[32] = "";
        npd_cause(c, first, &leaks, cause, sizeof cause);
        if (hits > 1)
            snprintf(more, sizeof more, " (+%zu more)", hits - 1);
        snprintf(line, sizeof line, "%s %lld %s%s: %s",
                 first->vendor == HBM_VENDOR_ASCEND ? "NPU" : "GPU",
                 (long long)hbm_device_user_id(first),
                 c == NPD_LEAK ? "LEAK" : hbm_verdict_name(first->verdict), more, cause);
    }
    hbm_history_free(&leaks.hist);
    hbm_obs_free(&obs);
    npd_print(line);
    return first ? PR_BAD : PR_OK;
}

typedef struct progress_opts {
    const char *url, *state_file;
    double stall, timeout;
} progress_opts;

static void record_progress(probe *p, json_t *c, const hbm_progress *track)
{
    const hbm_progress_engine *w = hbm_progress_worst(track);
    char line[400];
    json_t *engines = json_array();
    for (size_t i = 0; i < track->n; i++)
        json_array_append_new(engines, hbm_progress_engine_json(&track->e[i]));
    json_object_set_new(c, "engines", engines);
    json_object_set_new(c, "state", w ? json_string(hbm_progress_state_name(w->state))
                                      : json_string("unknown"));
    if (!w) {
        record(p, "progress", PR_UNKNOWN, c, "%s: no vLLM, SGLang or MindIE metric there",
               json_string_value(json_object_get(c, "url")));
        return;
    }
    hbm_progress_line(w, line, sizeof line);
    /* a first sample is healthy (judged next time); unknown otherwise means no counter */
    bool first = !w->judged && !isnan(w->tokens);
    int r = w->state == HBM_PROGRESS_STALLED                 ? PR_BAD
            : w->state == HBM_PROGRESS_UNKNOWN && !first     ? PR_UNKNOWN
                                                             : PR_OK;
    record(p, "progress", r, c, "%s", line);
}

/* --metrics-url: one sample judged against the one the previous run left in the state file. */
static void check_progress(probe *p, const progress_opts *po)
{
    char safe[512], path[600], why[600];
    hbm_progress_url_safe(po->url, safe, sizeof safe);
    if (po->state_file)
        snprintf(path, sizeof path, "%s", po->state_file);
    else
        hbm_progress_state_path(po->url, path, sizeof path);
    json_t *c = json_object();
    json_object_set_new(c, "url", json_string(safe));
    json_object_set_new(c, "state_file", json_string(path));
    hbm_progress track, sample;
    bool fresh = hbm_progress_state_load(path, po->url, &track, why, sizeof why) != 0;
    json_object_set_new(c, "history", fresh ? json_string(why) : json_null());
    hbm_http_result res;
    hbm_err err = {{0}};
    if (hbm_progress_fetch(po->url, po->timeout, &sample, &res, &err) < 0) {
        bool answered = res.outcome == HBM_HTTP_ANSWERED && res.status >= 200 && res.status < 300;
        bool usage = res.outcome == HBM_HTTP_BAD_URL || res.outcome == HBM_HTTP_UNAVAILABLE;
        record(p, "progress", answered || usage ? PR_UNKNOWN : PR_BAD, c, "%s", err.msg);
        hbm_progress_free(&track);
        return;
    }
    hbm_progress_judge(&track, &sample, hbm_now_wall(), po->stall);
    if (hbm_progress_state_save(path, po->url, &track, &err) < 0)
        record(p, "progress", PR_UNKNOWN, json_deep_copy(c), "%s (so no stall can be seen)",
               err.msg);
    record_progress(p, c, &track);
    hbm_progress_free(&track);
}

/* --npd stalled: the progress check alone, in NPD's one line and exit codes (the same 0/1/2). */
static int npd_stalled(probe *p, const progress_opts *po)
{
    char line[700];
    if (!po->url)
        snprintf(line, sizeof line, "unknown: --npd stalled needs --metrics-url");
    else
        check_progress(p, po);
    deadline_arm(0);
    const char *word = p->worst == PR_OK ? "ok" : p->worst == PR_BAD ? "server" : "unknown";
    if (po->url)
        snprintf(line, sizeof line, "%s: %s", word, p->worst == PR_OK ? p->oks : p->first);
    json_decref(p->checks);
    npd_print(line);
    return po->url ? p->worst : PR_UNKNOWN;
}

int cmd_probe(int argc, char **argv)
{
    cli_common common;
    cli_common_init(&common);
    cli_limit max = {HBM_UNKNOWN, NAN};
    double timeout = 2, deadline = -1;
    cli_devices devices = {{0}, 0};
    const char *url = NULL;
    bool no_devices = false;
    progress_opts po = {.stall = 60};
    int npd = -1;
    const char *history = "/run/hbmctl/npd-history.json";
    const cli_opt opts[] = {
        CLI_OPT(CLI_CALL, "max-mem", 0, "PCT|SIZE", &max,
                "unhealthy when a checked device uses more (80%, 0.8, 60GiB)", .fn = cli_read_limit,
                .words = "80% 90% 95%"),
        CLI_OPT(CLI_DEVICES, "device", 0, "ID", &devices,
                "check only this device (logic id on Ascend, index on NVIDIA);\n"
                "repeat for several; default every device"),
        CLI_OPT(CLI_STRING, "url", 0, "URL", &url,
                "unhealthy unless a GET answers 2xx within --timeout"),
        CLI_OPT(CLI_STRING, "metrics-url", 0, "URL", &po.url,
                "the server's Prometheus /metrics (vLLM, SGLang, MindIE):\n"
                "unhealthy once work runs or waits and no token came for\n"
                "--stall; the previous sample is kept in --state-file"),
        CLI_OPT(CLI_DURATION, "stall", 0, "DUR", &po.stall,
                "no token this long with work is a stall (default 60s)", .min = 1e-9,
                .why = "must be above 0", .words = "30s 1m 5m"),
        CLI_OPT(CLI_STRING, "state-file", 0, "FILE", &po.state_file,
                "where the previous sample lives (default\n"
                "/run/hbmctl/progress-HASH.json, one per URL); missing or\n"
                "corrupt: a first sample, healthy, judged at the next run"),
        CLI_OPT(CLI_DURATION, "timeout", 0, "DUR", &timeout, "HTTP time limit (default 2s)",
                .min = 1e-9, .why = "must be above 0"),
        CLI_OPT(CLI_DURATION, "deadline", 0, "DUR", &deadline,
                "give up on everything after this (default 10s, 4s with --npd):\nexit 2",
                .min = 1e-9, .why = "must be above 0"),
        CLI_OPT(CLI_FLAG, "no-devices", 0, NULL, &no_devices,
                "check only the URLs (no driver query)"),
        CLI_OPT(CLI_ENUM, "npd", 0, "CHECK", &npd,
                "node-problem-detector custom plugin: orphaned, unaccounted,\n"
                "unhealthy or leaking devices, or a stalled server (with\n"
                "--metrics-url); exit 0 OK, 1 NonOK, 2 Unknown,\n"
                "one line of at most 80 characters (docs/kubernetes.md)",
                .choices = npd_names),
        CLI_OPT(CLI_STRING, "history", 0, "FILE", &history,
                "memory history kept between --npd leaking runs\n"
                "(default /run/hbmctl/npd-history.json)"),
        CLI_GROUPS_HERE,
        CLI_OPTS_END,
    };
    const cli_spec spec = {
        .cmd = "probe", .usage = "[--max-mem PCT|SIZE] [--device ID]... [--url URL] [OPTIONS]",
        .about = about, .opts = opts, .groups = CLI_G_JSON | CLI_G_SOURCE, .common = &common,
        .json_help = "{\"status\", \"exit\", \"reason\", \"checks\": [...]}",
        .snapshot_help = "check a snapshot instead of the live devices",
        .exits = "exit: 0 healthy (progressing, idle or a first sample), 1 unhealthy (a stall,\n"
                 "      no 2xx, timeout), 2 could not check (no backend, unknown device, memory\n"
                 "      not reported, a page that is not Prometheus text or has no engine\n"
                 "      metrics, state file not writable, bad option, deadline passed)\n",
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (no_devices && !url && !po.url) {
        printf("hbmctl probe: could not check: --no-devices needs --url or --metrics-url\n");
        return PR_UNKNOWN;
    }
    po.timeout = timeout;
    if (npd >= 0)
        /* Well inside NPD's 5 s plugin timeout, so NPD hears Unknown, not a kill. */
        deadline_msg = "unknown: deadline passed (the driver did not answer)\n";
    else if (common.json)
        deadline_msg = deadline_json;
    if (deadline < 0)
        deadline = npd >= 0 ? 4 : 10;
    struct sigaction sa = {0};
    sa.sa_handler = on_deadline;
    sigaction(SIGALRM, &sa, NULL);
    deadline_arm(deadline);
    probe p = {.checks = json_array(), .worst = PR_OK};
    if (npd == NPD_STALLED)
        return npd_stalled(&p, &po);
    if (npd >= 0) {
        json_decref(p.checks);
        return npd_run(&common, (npd_check)npd, history);
    }

    if (!no_devices)
        check_devices(&p, &common, &devices, max.bytes, max.ratio);
    if (url)
        check_url(&p, url, timeout);
    if (po.url)
        check_progress(&p, &po);
    deadline_arm(0);

    report(&p, common.json);
    return p.worst;
}
