/* server-stalled: an inference server found listening on this host (its process and its
 * --port, or the engine's default port) whose /metrics shows work running or waiting and no
 * token between two samples a few seconds apart. Its /health may answer all along. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "doctor/doctor_int.h"
#include "hbm/progress.h"

typedef struct found {
    int pid;
    char comm[32];
} found;

/* The port a server serves on: --port, else its engine's default when its tree listens there. */
static long server_port(const hbm_hproc *s)
{
    const char *c = s->cmdline ? s->cmdline : "";
    long dflt = strstr(c, "sglang") ? 30000 : strstr(c, "vllm") ? 8000 : -1;
    return doc_arg_long(c, "--port", NULL, dflt);
}

static void metrics_url(const hbm_listener *l, char *buf, size_t n)
{
    const char *a = l->addr;
    bool any = !*a || strcmp(a, "0.0.0.0") == 0 || strcmp(a, "::") == 0;
    if (any)
        snprintf(buf, n, "http://127.0.0.1:%d/metrics", l->port);
    else if (strchr(a, ':'))
        snprintf(buf, n, "http://[%s]:%d/metrics", a, l->port);
    else
        snprintf(buf, n, "http://%s:%d/metrics", a, l->port);
}

/* Every outermost server with a listener of its own tree on its port, once per port. */
static size_t find_servers(const hbm_obs *obs, hbm_progress_servers *set, found *who, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < obs->host.nprocs && n < cap; i++) {
        const hbm_hproc *s = &obs->host.procs[i];
        if (!doc_is_server(s) || doc_parent_is_server(obs, s))
            continue;
        long port = server_port(s);
        for (size_t k = 0; port > 0 && k < obs->host.nlisteners; k++) {
            const hbm_listener *l = &obs->host.listeners[k];
            if (l->port != port || l->pid <= 0 || !doc_in_tree(obs, s->pid, l->pid))
                continue;
            char url[128];
            metrics_url(l, url, sizeof url);
            hbm_progress_servers_add(set, url);
            who[n].pid = s->pid;
            snprintf(who[n].comm, sizeof who[n].comm, "%s", s->comm);
            n++;
            break;
        }
    }
    return n;
}

static void stalled_finding(const hbm_progress_server *v, const found *w,
                            const hbm_progress_engine *e, double before, hbm_findings *out)
{
    char line[400];
    hbm_progress_line(e, line, sizeof line);
    hbm_finding *x = doc_add(out, DOC_SERVER_STALLED, HBM_SEV_CRITICAL, HBM_UNKNOWN,
                             "pid %d (%s) at %s is %s", w->pid, w->comm, v->safe, line);
    json_t *ev = x->evidence;
    json_object_set_new(ev, "pid", json_integer(w->pid));
    json_object_set_new(ev, "url", json_string(v->safe));
    json_object_set_new(ev, "engine_kind", json_string(e->kind));
    json_object_set_new(ev, "model", e->model[0] ? json_string(e->model) : json_null());
    json_object_set_new(ev, "engine", e->engine[0] ? json_string(e->engine) : json_null());
    json_object_set_new(ev, "running", isnan(e->running) ? json_null() : json_real(e->running));
    json_object_set_new(ev, "waiting", isnan(e->waiting) ? json_null() : json_real(e->waiting));
    json_object_set_new(ev, "tokens_before", isnan(before) ? json_null() : json_real(before));
    json_object_set_new(ev, "tokens_after", json_real(e->tokens));
    json_object_set_new(ev, "seconds_without_token", json_real(e->stalled_for_s));
    doc_remedy(x, "The server answers but produces no token (a hung collective or worker; "
                  "/health can stay 200). Read its log (`hbmctl explain`), then restart it; "
                  "`hbmctl run --stall DUR` restarts it on its own.");
}

static void unknown_finding(const hbm_progress_server *v, const found *w, const char *why,
                            hbm_findings *out)
{
    hbm_finding *x = doc_add(out, DOC_SERVER_PROGRESS_UNKNOWN, HBM_SEV_INFO, HBM_UNKNOWN,
                             "pid %d (%s) at %s: could not tell whether it makes progress (%s)",
                             w->pid, w->comm, v->safe, why);
    json_object_set_new(x->evidence, "pid", json_integer(w->pid));
    json_object_set_new(x->evidence, "url", json_string(v->safe));
    json_object_set_new(x->evidence, "why", json_string(why));
    doc_remedy(x, "Serve the engine's Prometheus metrics on that port (SGLang: "
                  "--enable-metrics) so a hung server can be told from a busy one.");
}

/* The token count of an engine in the first sample (matched by position: both samples
 * list engines in the page's order). */
static double tokens_in(const double *first, size_t nfirst, size_t k)
{
    return k < nfirst ? first[k] : NAN;
}

void doc_check_progress(const doc_ctx *c, hbm_findings *out)
{
    const hbm_obs *obs = c->obs;
    double interval_s = c->opts->progress_interval_s;
    if (!obs->has_host || interval_s <= 0)
        return;
    enum { MAX_SERVERS = 32 };
    found who[MAX_SERVERS];
    hbm_progress_servers set;
    /* a stall here means no token for the whole interval */
    hbm_progress_servers_init(&set, interval_s * 0.9, 2);
    size_t n = find_servers(obs, &set, who, MAX_SERVERS);
    if (n == 0) {
        hbm_progress_servers_free(&set);
        return; /* nothing to wait for */
    }
    hbm_progress_servers_sample(&set);
    double first[MAX_SERVERS][8];
    size_t nfirst[MAX_SERVERS];
    for (size_t i = 0; i < n; i++) {
        nfirst[i] = set.s[i].track.n < 8 ? set.s[i].track.n : 8;
        for (size_t k = 0; k < nfirst[i]; k++)
            first[i][k] = set.s[i].track.e[k].tokens;
    }
    struct timespec ts = {(time_t)interval_s, (long)((interval_s - floor(interval_s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    hbm_progress_servers_sample(&set);
    for (size_t i = 0; i < n; i++) {
        const hbm_progress_server *v = &set.s[i];
        if (!v->up) {
            unknown_finding(v, &who[i], v->error, out);
            continue;
        }
        if (v->track.n == 0) {
            unknown_finding(v, &who[i], "no vLLM, SGLang or MindIE metric there", out);
            continue;
        }
        for (size_t k = 0; k < v->track.n; k++) {
            const hbm_progress_engine *e = &v->track.e[k];
            if (e->state == HBM_PROGRESS_STALLED)
                stalled_finding(v, &who[i], e, tokens_in(first[i], nfirst[i], k), out);
            else if (e->state == HBM_PROGRESS_UNKNOWN)
                unknown_finding(v, &who[i], e->judged || isnan(e->tokens)
                                                ? "no token counter"
                                                : "only the second sample could be read", out);
        }
    }
    hbm_progress_servers_free(&set);
}
