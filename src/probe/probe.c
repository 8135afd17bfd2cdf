/* The probe's checks: device health and memory over an observation, an HTTP endpoint, a
 * server's progress; each recorded with its result, detail and JSON fields. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hbm/http.h"
#include "hbm/probe.h"
#include "hbm/util.h"

static int rank(hbm_probe_result r)
{
    return r == HBM_PROBE_BAD ? 2 : r == HBM_PROBE_UNKNOWN ? 1 : 0;
}

void hbm_probe_init(hbm_probe *p)
{
    memset(p, 0, sizeof *p);
    p->checks = json_array();
    p->worst = HBM_PROBE_OK;
}

void hbm_probe_free(hbm_probe *p)
{
    json_decref(p->checks);
    p->checks = NULL;
}

const char *hbm_probe_result_name(hbm_probe_result r)
{
    return r == HBM_PROBE_OK ? "healthy" : r == HBM_PROBE_BAD ? "unhealthy" : "unknown";
}

const char *hbm_probe_reason(const hbm_probe *p)
{
    return p->worst == HBM_PROBE_OK ? p->oks : p->first;
}

/* Appends "; part" (or part alone first) to what passed, cut at the buffer's end. */
static void oks_append(hbm_probe *p, const char *part)
{
    size_t len = strlen(p->oks);
    const char *parts[2] = {len ? "; " : "", part};
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(parts[i]);
        if (n > sizeof p->oks - 1 - len)
            n = sizeof p->oks - 1 - len;
        memcpy(p->oks + len, parts[i], n);
        len += n;
    }
    p->oks[len] = '\0';
}

void hbm_probe_record(hbm_probe *p, const char *check, hbm_probe_result r, json_t *extra,
                      const char *fmt, ...)
{
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    json_t *c = extra ? extra : json_object();
    json_object_set_new(c, "check", json_string(check));
    json_object_set_new(c, "ok", json_boolean(r == HBM_PROBE_OK));
    json_object_set_new(c, "result", json_string(hbm_probe_result_name(r)));
    json_object_set_new(c, "detail", json_string(why));
    json_array_append_new(p->checks, c);
    if (rank(r) > rank(p->worst)) {
        p->worst = r;
        snprintf(p->first, sizeof p->first, "%s", why);
    }
    if (r == HBM_PROBE_OK)
        oks_append(p, why);
}

json_t *hbm_probe_json(hbm_probe *p)
{
    json_t *j = json_object();
    json_object_set_new(j, "status", json_string(hbm_probe_result_name(p->worst)));
    json_object_set_new(j, "exit", json_integer(p->worst));
    json_object_set_new(j, "reason", json_string(hbm_probe_reason(p)));
    json_object_set_new(j, "checks", p->checks);
    p->checks = NULL;
    return j;
}

/* Memory against a share of the device; c (taken) holds the device's fields. */
static void check_ratio(hbm_probe *p, json_t *c, const hbm_device *d, const char *who,
                        double max_ratio, const char *sz_used, const char *sz_total)
{
    if (d->memory_total_bytes <= 0) {
        hbm_probe_record(p, "max-mem", HBM_PROBE_UNKNOWN, c,
                         "%s does not report its memory total; give --max-mem as a "
                         "size",
                         who);
        return;
    }
    double r = (double)d->memory_used_bytes / (double)d->memory_total_bytes;
    json_object_set_new(c, "used_ratio", json_real(r));
    json_object_set_new(c, "limit_ratio", json_real(max_ratio));
    hbm_probe_record(p, "max-mem", r > max_ratio ? HBM_PROBE_BAD : HBM_PROBE_OK, c,
                     "%s memory %s of %s (%.3g%%) %s --max-mem %.3g%%", who,
                     sz_used, sz_total, r * 100, r > max_ratio ? "above" : "within",
                     max_ratio * 100);
}

static void check_device(hbm_probe *p, const hbm_device *d, hbm_probe_limit lim)
{
    int64_t id = hbm_device_user_id(d);
    char who[64];
    hbm_device_label(d, who, sizeof who);
    char sz_used[32], sz_total[32], sz_lim[32];
    json_t *base = json_object();
    json_object_set_new(base, "device", id >= 0 ? json_integer(id) : json_null());
    json_object_set_new(base, "name", json_string(d->name));
    if (!d->healthy || d->verdict == HBM_VERDICT_UNHEALTHY)
        hbm_probe_record(p, "health", HBM_PROBE_BAD, json_deep_copy(base),
                         "%s (%s) health is %s", who, d->name,
                         d->health[0] ? d->health : "not OK");
    else
        hbm_probe_record(p, "health", HBM_PROBE_OK, json_deep_copy(base),
                         "%s health %s", who,
                         d->health[0] ? d->health : "OK");
    if (lim.bytes < 0 && !isfinite(lim.ratio)) {
        json_decref(base);
        return;
    }
    json_t *c = json_deep_copy(base);
    json_decref(base);
    json_object_set_new(c, "memory_used_bytes", d->memory_used_bytes >= 0
                                                    ? json_integer(d->memory_used_bytes)
                                                    : json_null());
    json_object_set_new(c, "memory_total_bytes", d->memory_total_bytes >= 0
                                                     ? json_integer(d->memory_total_bytes)
                                                     : json_null());
    hbm_fmt_size(sz_used, sizeof sz_used, d->memory_used_bytes);
    hbm_fmt_size(sz_total, sizeof sz_total, d->memory_total_bytes);
    if (d->memory_used_bytes < 0) {
        hbm_probe_record(p, "max-mem", HBM_PROBE_UNKNOWN, c,
                         "%s does not report its memory use", who);
        return;
    }
    if (isfinite(lim.ratio)) {
        check_ratio(p, c, d, who, lim.ratio, sz_used, sz_total);
        return;
    }
    hbm_fmt_size(sz_lim, sizeof sz_lim, lim.bytes);
    json_object_set_new(c, "limit_bytes", json_integer(lim.bytes));
    bool over = d->memory_used_bytes > lim.bytes;
    hbm_probe_record(p, "max-mem", over ? HBM_PROBE_BAD : HBM_PROBE_OK, c,
                     "%s memory %s of %s %s --max-mem %s", who, sz_used,
                     sz_total, over ? "above" : "within", sz_lim);
}

void hbm_probe_devices(hbm_probe *p, hbm_obs *obs, bool observed, const hbm_err *err,
                       const int64_t *ids, size_t n, hbm_probe_limit lim)
{
    if (!observed) {
        hbm_probe_record(p, "devices", HBM_PROBE_UNKNOWN, NULL, "%s", err->msg);
    } else if (obs->ndevs == 0) {
        hbm_probe_record(p, "devices", HBM_PROBE_UNKNOWN, NULL, "no device found (backend %s)",
                         obs->backend);
    } else if (n == 0) {
        for (size_t i = 0; i < obs->ndevs; i++)
            check_device(p, &obs->devs[i], lim);
    } else {
        for (size_t k = 0; k < n; k++) {
            const hbm_device *d = hbm_obs_find_device(obs, ids[k]);
            bool ids_known = false;
            for (size_t i = 0; i < obs->ndevs && !ids_known; i++)
                ids_known = hbm_device_user_id(&obs->devs[i]) >= 0;
            if (!d)
                hbm_probe_record(p, "devices", HBM_PROBE_UNKNOWN, NULL,
                                 "device %lld not found (%zu device%s; ids are logic ids on "
                                 "Ascend, indexes on NVIDIA%s)",
                                 (long long)ids[k], obs->ndevs, obs->ndevs == 1 ? "" : "s",
                                 ids_known ? ""
                                           : "; this source gives no logic ids: npu-smi info "
                                             "-m lists them");
            else
                check_device(p, d, lim);
        }
    }
}

void hbm_probe_url(hbm_probe *p, const char *url, double timeout)
{
    json_t *c = json_object();
    json_object_set_new(c, "url", json_string(url));
    hbm_http_result res;
    hbm_err err = {{0}};
    int rc = hbm_http_get(url, timeout, "hbmctl-probe/" HBM_VERSION, &res, &err);
    json_object_set_new(c, "seconds", json_real(res.seconds));
    json_object_set_new(c, "status_code", res.status ? json_integer(res.status) : json_null());
    if (rc < 0 && (res.outcome == HBM_HTTP_BAD_URL || res.outcome == HBM_HTTP_UNAVAILABLE))
        hbm_probe_record(p, "http", HBM_PROBE_UNKNOWN, c, "%s", err.msg);
    else if (rc < 0)
        hbm_probe_record(p, "http", HBM_PROBE_BAD, c, "%s", err.msg);
    else if (res.status < 200 || res.status > 299)
        hbm_probe_record(p, "http", HBM_PROBE_BAD, c, "%s: HTTP %ld", url, res.status);
    else
        hbm_probe_record(p, "http", HBM_PROBE_OK, c, "%s: HTTP %ld in %.0f ms", url,
                         res.status, res.seconds * 1000);
}

void hbm_probe_progress_judged(hbm_probe *p, json_t *c, const hbm_progress *track)
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
        hbm_probe_record(p, "progress", HBM_PROBE_UNKNOWN, c,
                         "%s: no vLLM, SGLang or MindIE metric there",
                         json_string_value(json_object_get(c, "url")));
        return;
    }
    hbm_progress_line(w, line, sizeof line);
    /* a first sample is healthy (judged next time); unknown otherwise means no counter */
    bool first = !w->judged && !isnan(w->tokens);
    hbm_probe_result r = w->state == HBM_PROGRESS_STALLED                 ? HBM_PROBE_BAD
                         : w->state == HBM_PROGRESS_UNKNOWN && !first     ? HBM_PROBE_UNKNOWN
                                                                          : HBM_PROBE_OK;
    hbm_probe_record(p, "progress", r, c, "%s", line);
}

void hbm_probe_progress(hbm_probe *p, const hbm_probe_progress_opts *po)
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
        hbm_probe_record(p, "progress", answered || usage ? HBM_PROBE_UNKNOWN : HBM_PROBE_BAD,
                         c, "%s", err.msg);
        hbm_progress_free(&track);
        return;
    }
    hbm_progress_judge(&track, &sample, hbm_now_wall(), po->stall);
    if (hbm_progress_state_save(path, po->url, &track, &err) < 0)
        hbm_probe_record(p, "progress", HBM_PROBE_UNKNOWN, json_deep_copy(c),
                         "%s (so no stall can be seen)", err.msg);
    hbm_probe_progress_judged(p, c, &track);
    hbm_progress_free(&track);
}
