/* The exporter's state: one observation at most every min_interval, however many scrapes
 * arrive (a scrape storm never reaches the driver), the leak detectors fed by those
 * observations, and the exporter's own counters. While one scrape observes again, the
 * others are served the previous exposition instead of waiting for the driver. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/export_int.h"
#include "hbm/audit.h"

struct hbm_exporter {
    hbm_exporter_opts opts;
    pthread_mutex_t lock;  /* guards everything below but watch */
    hbm_watch watch;       /* touched only by the one scrape that observes */
    bool refreshing;       /* a scrape is observing now */
    double refresh_started; /* monotonic time it began */
    hbm_export_buf body;   /* exposition of the last observation */
    double observed_at;    /* monotonic time of the last observation; 0 = none */
    double observe_s;      /* how long it took */
    bool ok;               /* it succeeded */
    bool hung;             /* it failed because a driver call did not return in time */
    double ok_at;          /* monotonic time of the last one that succeeded; 0 = none */
    char error[1024];      /* why it did not */
    uint64_t scrapes, observations, errors;
    hbm_remedy_log remedy; /* the audit log's actions, read on by each scrape */
};

hbm_exporter *hbm_exporter_new(const hbm_exporter_opts *opts)
{
    hbm_exporter *ex = hbm_xcalloc(1, sizeof *ex);
    ex->opts = *opts;
    if (!(ex->opts.min_interval > 0))
        ex->opts.min_interval = 1.0;
    pthread_mutex_init(&ex->lock, NULL);
    hbm_watch_init(&ex->watch, &ex->opts.leak);
    ex->ok = true;
    return ex;
}

void hbm_exporter_free(hbm_exporter *ex)
{
    if (!ex)
        return;
    pthread_mutex_destroy(&ex->lock);
    hbm_watch_free(&ex->watch);
    hbm_export_buf_free(&ex->body);
    free(ex);
}

/* Observes and renders into body; called without the lock (only one caller at a time).
 * Returns 0, -1 or HBM_ERR_HUNG as hbm_observe did. */
static int observe(hbm_exporter *ex, hbm_export_buf *body, char *error, size_t errlen)
{
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_err err = {{0}};
    hbm_export_input in = {0};
    hbm_findings findings = {0};
    hbm_lease_info *leases = NULL;
    size_t nleases = 0;
    int rc = hbm_observe(&obs, &ex->opts.src, &err);
    bool ok = rc == 0;
    if (!ok) {
        snprintf(error, errlen, "%s", err.msg);
        in.obs_error = error;
    } else {
        hbm_watch_update(&ex->watch, &obs, hbm_now_mono());
        hbm_doctor_findings(&obs, NULL, &findings);
        in.obs = &obs;
        in.watch = &ex->watch;
        in.findings = &findings;
        in.threshold_set = ex->opts.leak.threshold_bytes >= 0 ||
                           isfinite(ex->opts.leak.threshold_ratio);
        hbm_err lerr;
        if (hbm_lease_list(hbm_lease_dir(ex->opts.lease_dir), &leases, &nleases, &lerr) == 0) {
            in.leases = leases;
            in.nleases = nleases;
            in.leases_known = true;
        }
    }
    hbm_export_render(&in, body);
    if (ex->opts.servers) {
        hbm_progress_servers_sample(ex->opts.servers);
        hbm_export_render_servers(ex->opts.servers, body);
    }
    free(leases);
    hbm_findings_free(&findings);
    hbm_obs_free(&obs);
    return rc;
}

/* Observes again when the exposition is older than min_interval and nobody else is. */
static void refresh_if_stale(hbm_exporter *ex, double now)
{
    if (ex->refreshing || (ex->observed_at != 0 && now - ex->observed_at < ex->opts.min_interval))
        return;
    ex->refreshing = true;
    ex->refresh_started = now;
    pthread_mutex_unlock(&ex->lock);
    hbm_export_buf body = {0};
    char error[sizeof ex->error];
    double t0 = hbm_now_mono();
    int rc = observe(ex, &body, error, sizeof error);
    bool ok = rc == 0;
    double t1 = hbm_now_mono();
    pthread_mutex_lock(&ex->lock);
    hbm_export_buf_free(&ex->body);
    ex->body = body;
    ex->ok = ok;
    ex->hung = rc == HBM_ERR_HUNG;
    if (ok)
        ex->ok_at = t1;
    snprintf(ex->error, sizeof ex->error, "%s", ok ? "" : error);
    ex->observations++;
    ex->errors += !ok;
    ex->observed_at = t1;
    ex->observe_s = t1 - t0;
    ex->refreshing = false;
}

/* The driver is not answering: the last observation failed because a call did not return
 * within --vendor-timeout, or the one under way has run longer than that (the previous
 * values are not served then). Lock held; why is set only for the second case. */
static bool stale(const hbm_exporter *ex, double now, char *why, size_t n)
{
    double limit = ex->opts.src.vendor_timeout > 0 ? ex->opts.src.vendor_timeout
                                                   : HBM_VENDOR_TIMEOUT_DEFAULT;
    why[0] = '\0';
    if (!ex->refreshing || now - ex->refresh_started <= limit)
        return ex->hung;
    snprintf(why, n, "the observation running for %.1fs has not finished (driver not answering); "
             "the last one is %.1fs old and not served",
             now - ex->refresh_started, now - ex->observed_at);
    return true;
}

/* What a scrape serves of the observation: the cached exposition, or when stale, the
 * failure's (hbmctl_up 0, no device values). Lock held. */
static void body_out(const hbm_exporter *ex, double now, hbm_export_buf *out, bool *is_stale)
{
    char why[300];
    *is_stale = stale(ex, now, why, sizeof why);
    if (!why[0]) {
        hbm_export_buf_append(out, ex->body.data, ex->body.len);
        return;
    }
    hbm_export_input in = {.obs_error = why};
    hbm_export_render(&in, out);
}

char *hbm_exporter_metrics(hbm_exporter *ex, size_t *len)
{
    double t0 = hbm_now_mono();
    pthread_mutex_lock(&ex->lock);
    ex->scrapes++;
    refresh_if_stale(ex, t0);
    /* The very first scrapes wait for the first observation rather than serve nothing. */
    while (ex->observed_at == 0) {
        pthread_mutex_unlock(&ex->lock);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&ex->lock);
        refresh_if_stale(ex, hbm_now_mono());
    }
    hbm_export_buf out = {0};
    bool is_stale;
    double now = hbm_now_mono();
    body_out(ex, now, &out, &is_stale);
    hbm_remedy_log_read(&ex->remedy, hbm_audit_path(ex->opts.audit_path), 4 << 20,
                        ex->opts.clean_state);
    hbm_remedy_log_render(&ex->remedy, &out);
    hbm_export_family(&out, "hbmctl_exporter_info", "gauge",
                      "The exporter: version and backend asked for; value 1.");
    hbm_export_label info[2] = {{"version", HBM_VERSION},
                                {"backend", ex->opts.src.snapshot   ? "snapshot"
                                            : ex->opts.src.backend ? ex->opts.src.backend
                                                                   : "auto"}};
    hbm_export_sample(&out, "hbmctl_exporter_info", info, 2, 1);
    hbm_export_family(&out, "hbmctl_exporter_scrapes_total", "counter", "Scrapes of /metrics.");
    hbm_export_sample(&out, "hbmctl_exporter_scrapes_total", NULL, 0, (double)ex->scrapes);
    hbm_export_family(&out, "hbmctl_exporter_observations_total", "counter",
                      "Observations made (at most one per --min-interval).");
    hbm_export_sample(&out, "hbmctl_exporter_observations_total", NULL, 0,
                      (double)ex->observations);
    hbm_export_family(&out, "hbmctl_exporter_observe_errors_total", "counter",
                      "Observations that failed.");
    hbm_export_sample(&out, "hbmctl_exporter_observe_errors_total", NULL, 0,
                      (double)ex->errors);
    hbm_export_family(&out, "hbmctl_exporter_observe_duration_seconds", "gauge",
                      "How long the observation served by this scrape took.");
    hbm_export_sample(&out, "hbmctl_exporter_observe_duration_seconds", NULL, 0, ex->observe_s);
    hbm_export_family(&out, "hbmctl_exporter_observation_age_seconds", "gauge",
                      "Age of the last finished observation at this scrape.");
    hbm_export_sample(&out, "hbmctl_exporter_observation_age_seconds", NULL, 0,
                      now - ex->observed_at);
    hbm_export_family(&out, "hbmctl_exporter_last_success_age_seconds", "gauge",
                      "Seconds since the last observation that succeeded (absent before one "
                      "did): how old the newest device values are.");
    hbm_export_sample(&out, "hbmctl_exporter_last_success_age_seconds", NULL, 0,
                      ex->ok_at > 0 ? now - ex->ok_at : NAN);
    hbm_export_family(&out, "hbmctl_exporter_observation_stale", "gauge",
                      "1 when the driver is not answering: a call did not return within "
                      "--vendor-timeout (or the observation under way has run past it); no "
                      "device value is served then.");
    hbm_export_sample(&out, "hbmctl_exporter_observation_stale", NULL, 0, is_stale);
    pthread_mutex_unlock(&ex->lock);
    hbm_export_family(&out, "hbmctl_exporter_scrape_duration_seconds", "gauge",
                      "Time this scrape took to build its answer.");
    hbm_export_sample(&out, "hbmctl_exporter_scrape_duration_seconds", NULL, 0,
                      hbm_now_mono() - t0);
    *len = out.len;
    return out.data;
}

bool hbm_exporter_healthy(hbm_exporter *ex, char *why, size_t n)
{
    pthread_mutex_lock(&ex->lock);
    char s[300];
    bool ok = false;
    if (stale(ex, hbm_now_mono(), s, sizeof s) && s[0])
        snprintf(why, n, "stale: %s", s);
    else if (!ex->ok)
        snprintf(why, n, "last observation failed: %s", ex->error);
    else
        ok = true;
    if (ok)
        snprintf(why, n, "ok");
    pthread_mutex_unlock(&ex->lock);
    return ok;
}
