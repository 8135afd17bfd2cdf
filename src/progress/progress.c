/* Engines read from a /metrics page and the progress decision (docs/metrics.md).
 * Metric names are the engines' published ones:
 *   vLLM (V0 and V1): docs.vllm.ai "Production Metrics" (usage/metrics.md)
 *   SGLang: docs.sglang.ai "Production Metrics" (references/production_metrics)
 *   MindIE Service: hiascend.com, the service-control metrics page (Prometheus format)
 * Series of one engine that differ in other labels (SGLang's tp_rank, ...) are summed: the
 * sum advances exactly when one of them does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/http.h"
#include "hbm/progress.h"
#include "hbm/util.h"

typedef enum { M_RUNNING, M_WAITING, M_TOKENS, M_ITER } metric_role;

typedef struct metric_name {
    const char *kind;
    const char *name;
    metric_role role;
} metric_name;

static const metric_name NAMES[] = {
    {"vllm", "vllm:num_requests_running", M_RUNNING},
    {"vllm", "vllm:num_requests_waiting", M_WAITING},
    {"vllm", "vllm:num_requests_swapped", M_WAITING}, /* V0: preempted to CPU, still work */
    {"vllm", "vllm:generation_tokens_total", M_TOKENS},
    {"vllm", "vllm:prompt_tokens_total", M_TOKENS},
    {"vllm", "vllm:iteration_tokens_total_sum", M_ITER},
    {"sglang", "sglang:num_running_reqs", M_RUNNING},
    {"sglang", "sglang:num_queue_reqs", M_WAITING},
    {"sglang", "sglang:generation_tokens_total", M_TOKENS},
    {"sglang", "sglang:prompt_tokens_total", M_TOKENS},
    {"mindie", "num_requests_running", M_RUNNING},
    {"mindie", "num_requests_waiting", M_WAITING},
    {"mindie", "num_requests_swapped", M_WAITING},
    {"mindie", "generation_tokens_total", M_TOKENS},
    {"mindie", "prompt_tokens_total", M_TOKENS},
};

const char *hbm_progress_state_name(hbm_progress_state s)
{
    switch (s) {
    case HBM_PROGRESS_PROGRESSING:
        return "progressing";
    case HBM_PROGRESS_IDLE:
        return "idle";
    case HBM_PROGRESS_STALLED:
        return "stalled";
    default:
        return "unknown";
    }
}

void hbm_progress_init(hbm_progress *p)
{
    memset(p, 0, sizeof *p);
}

void hbm_progress_free(hbm_progress *p)
{
    free(p->e);
    hbm_progress_init(p);
}

static hbm_progress_engine *find(hbm_progress *p, const char *kind, const char *model,
                                 const char *engine)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->e[i].kind, kind) == 0 && strcmp(p->e[i].model, model) == 0 &&
            strcmp(p->e[i].engine, engine) == 0)
            return &p->e[i];
    return NULL;
}

typedef struct read_ctx {
    hbm_progress *out;
    double *iter; /* per engine: the iteration-token sum, used when no token counter */
    size_t iter_cap;
} read_ctx;

static void add_to(double *slot, double v)
{
    *slot = isnan(*slot) ? v : *slot + v;
}

static int on_sample(const hbm_prom_sample *s, void *vctx)
{
    read_ctx *c = vctx;
    const metric_name *m = NULL;
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0] && !m; i++)
        if (strcmp(NAMES[i].name, s->name) == 0)
            m = &NAMES[i];
    if (!m || !isfinite(s->value))
        return 0;
    const char *model = hbm_prom_label(s, "model_name");
    const char *engine = hbm_prom_label(s, "engine");
    hbm_progress *p = c->out;
    hbm_progress_engine *e = find(p, m->kind, model ? model : "", engine ? engine : "");
    if (!e) {
        hbm_grow((void **)&p->e, &p->cap, p->n + 1, sizeof *p->e);
        e = &p->e[p->n++];
        memset(e, 0, sizeof *e);
        snprintf(e->kind, sizeof e->kind, "%s", m->kind);
        snprintf(e->model, sizeof e->model, "%s", model ? model : "");
        snprintf(e->engine, sizeof e->engine, "%s", engine ? engine : "");
        e->running = e->waiting = e->tokens = NAN;
        e->tokens_per_s = e->since_token_s = NAN;
        hbm_grow((void **)&c->iter, &c->iter_cap, p->n, sizeof *c->iter);
        c->iter[p->n - 1] = NAN;
    }
    switch (m->role) {
    case M_RUNNING:
        add_to(&e->running, s->value);
        break;
    case M_WAITING:
        add_to(&e->waiting, s->value);
        break;
    case M_TOKENS:
        add_to(&e->tokens, s->value);
        break;
    case M_ITER:
        add_to(&c->iter[e - p->e], s->value);
        break;
    }
    return 0;
}

int hbm_progress_read(const char *text, size_t len, const char *origin, hbm_progress *out,
                      hbm_err *err)
{
    hbm_progress_init(out);
    read_ctx c = {.out = out};
    int rc = hbm_prom_parse(text, len, origin, on_sample, &c, err);
    for (size_t i = 0; i < out->n; i++)
        if (isnan(out->e[i].tokens))
            out->e[i].tokens = c.iter[i];
    free(c.iter);
    if (rc < 0)
        hbm_progress_free(out);
    return rc;
}

/* One engine against its previous sample (prev NULL: the first one seen). */
static void judge_one(hbm_progress_engine *e, const hbm_progress_engine *prev, double now,
                      double stall_s)
{
    e->at = now;
    double work = (isnan(e->running) ? 0 : e->running) + (isnan(e->waiting) ? 0 : e->waiting);
    bool gauges = !isnan(e->running) || !isnan(e->waiting);
    bool busy = work > 0;
    if (!prev || isnan(prev->tokens) || isnan(e->tokens) || prev->at <= 0 || prev->at > now) {
        e->judged = false;
        e->last_token_at = now;
        e->busy_since = busy ? now : 0;
        e->state = gauges && !busy ? HBM_PROGRESS_IDLE : HBM_PROGRESS_UNKNOWN;
        return;
    }
    e->judged = true;
    double dt = now - prev->at;
    e->last_token_at = prev->last_token_at;
    e->busy_since = prev->busy_since;
    if (e->tokens < prev->tokens) {
        /* counters restart from zero with the server: a new baseline, not a stall */
        e->reset = true;
        e->last_token_at = now;
        e->busy_since = busy ? now : 0;
        e->state = busy ? HBM_PROGRESS_PROGRESSING : HBM_PROGRESS_IDLE;
        return;
    }
    e->tokens_per_s = dt > 0 ? (e->tokens - prev->tokens) / dt : NAN;
    if (e->tokens > prev->tokens) {
        e->last_token_at = now;
        e->busy_since = busy ? now : 0;
        e->state = HBM_PROGRESS_PROGRESSING;
    } else if (!busy) {
        e->busy_since = 0;
        e->state = gauges ? HBM_PROGRESS_IDLE : HBM_PROGRESS_UNKNOWN;
    } else {
        /* the stall clock starts at the last token or when work arrived, the later one */
        if (e->busy_since <= 0)
            e->busy_since = now;
        double from = e->busy_since > e->last_token_at ? e->busy_since : e->last_token_at;
        e->stalled_for_s = now - from;
        e->state = e->stalled_for_s >= stall_s ? HBM_PROGRESS_STALLED : HBM_PROGRESS_PROGRESSING;
    }
    e->since_token_s = now - e->last_token_at;
}

void hbm_progress_judge(hbm_progress *track, hbm_progress *sample, double now, double stall_s)
{
    for (size_t i = 0; i < sample->n; i++) {
        hbm_progress_engine *e = &sample->e[i];
        judge_one(e, find(track, e->kind, e->model, e->engine), now, stall_s);
    }
    hbm_progress_free(track);
    *track = *sample;
    hbm_progress_init(sample);
}

static int rank(hbm_progress_state s)
{
    return s == HBM_PROGRESS_STALLED ? 3 : s == HBM_PROGRESS_UNKNOWN ? 2
                                       : s == HBM_PROGRESS_PROGRESSING ? 1
                                                                        : 0;
}

const hbm_progress_engine *hbm_progress_worst(const hbm_progress *p)
{
    const hbm_progress_engine *w = NULL;
    for (size_t i = 0; i < p->n; i++)
        if (!w || rank(p->e[i].state) > rank(w->state))
            w = &p->e[i];
    return w;
}

static const char *count(char *buf, size_t n, double v, const char *what)
{
    if (isnan(v))
        snprintf(buf, n, "%s unknown", what);
    else
        snprintf(buf, n, "%.0f %s", v, what);
    return buf;
}

void hbm_progress_line(const hbm_progress_engine *e, char *buf, size_t n)
{
    char r[48], w[48], who[220] = "";
    count(r, sizeof r, e->running, "running");
    count(w, sizeof w, e->waiting, "waiting");
    if (e->model[0] || e->engine[0])
        snprintf(who, sizeof who, " (%s%s%s%s)", e->model, e->model[0] && e->engine[0] ? ", " : "",
                 e->engine[0] ? "engine " : "", e->engine);
    switch (e->state) {
    case HBM_PROGRESS_STALLED:
        snprintf(buf, n, "stalled: %s, %s, no token for %.0fs%s", r, w, e->stalled_for_s, who);
        break;
    case HBM_PROGRESS_IDLE:
        snprintf(buf, n, "idle: nothing running or waiting%s", who);
        break;
    case HBM_PROGRESS_PROGRESSING:
        if (e->reset)
            snprintf(buf, n, "progressing: counters reset (server restarted), %s, %s%s", r, w,
                     who);
        else if (!(e->tokens_per_s > 0))
            snprintf(buf, n, "progressing: %s, %s, no token for %.0fs yet%s", r, w,
                     e->stalled_for_s, who);
        else
            snprintf(buf, n, "progressing: %.3g tokens/s, %s, %s%s", e->tokens_per_s, r, w, who);
        break;
    default:
        if (!e->judged && !isnan(e->tokens))
            snprintf(buf, n, "first sample: %s, %s; judged at the next one%s", r, w, who);
        else
            snprintf(buf, n, "unknown: no token counter%s", who);
        break;
    }
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *hbm_progress_engine_json(const hbm_progress_engine *e)
{
    json_t *j = json_object();
    json_object_set_new(j, "kind", json_string(e->kind));
    json_object_set_new(j, "model", e->model[0] ? json_string(e->model) : json_null());
    json_object_set_new(j, "engine", e->engine[0] ? json_string(e->engine) : json_null());
    json_object_set_new(j, "state", json_string(hbm_progress_state_name(e->state)));
    json_object_set_new(j, "judged", json_boolean(e->judged));
    json_object_set_new(j, "running", num(e->running));
    json_object_set_new(j, "waiting", num(e->waiting));
    json_object_set_new(j, "tokens", num(e->tokens));
    json_object_set_new(j, "tokens_per_second", num(e->tokens_per_s));
    json_object_set_new(j, "seconds_since_progress", num(e->since_token_s));
    json_object_set_new(j, "stalled_seconds", e->judged ? json_real(e->stalled_for_s)
                                                        : json_null());
    return j;
}

/* A metrics page is tens of kilobytes; a bound keeps a wrong URL from growing us. */
#define MAX_PAGE (8u << 20)

int hbm_progress_fetch(const char *url, double timeout_s, hbm_progress *sample,
                       hbm_http_result *res, hbm_err *err)
{
    hbm_progress_init(sample);
    char safe[512];
    hbm_progress_url_safe(url, safe, sizeof safe);
    hbm_http_opts ho = {.timeout_s = timeout_s, .user_agent = "hbmctl/" HBM_VERSION,
                        .max_body = MAX_PAGE};
    char *body = NULL;
    size_t len = 0;
    hbm_err e2 = {{0}};
    if (hbm_http_fetch(url, &ho, res, &body, &len, &e2) < 0) {
        /* the client's message names the URL as given: say it without credentials */
        const char *why = strstr(e2.msg, ": ");
        return hbm_err_set(err, "%s%s", safe, why ? why : ": request failed");
    }
    if (res->status < 200 || res->status > 299) {
        free(body);
        return hbm_err_set(err, "%s: HTTP %ld", safe, res->status);
    }
    int rc = hbm_progress_read(body ? body : "", len, safe, sample, err);
    free(body);
    return rc;
}

void hbm_progress_url_safe(const char *url, char *buf, size_t n)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    size_t hostlen = strcspn(host, "/?#");
    const char *at = memchr(host, '@', hostlen);
    /* memrchr is not C17: find the last '@' of the authority by hand */
    for (const char *q = at; q && q < host + hostlen; q++)
        if (*q == '@')
            at = q;
    if (!at) {
        snprintf(buf, n, "%s", url);
        return;
    }
    snprintf(buf, n, "%.*s%s", (int)(host - url), url, at + 1);
}

void hbm_progress_metrics_url(const char *url, char *buf, size_t n)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    size_t hostlen = strcspn(host, "/?#");
    snprintf(buf, n, "%.*s/metrics", (int)(host + hostlen - url), url);
}
