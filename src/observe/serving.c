/* The inference servers listening on this host and their progress: two samples of each
 * one's own /metrics, interval_s apart, judged by the progress module and written into the
 * observation, so doctor judges a live host and a replayed snapshot alike. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hbm/inference.h"
#include "hbm/observe.h"
#include "hbm/progress.h"
#include "hbm/util.h"

/* Servers beyond this many are not sampled (each costs two requests). */
#define MAX_SERVERS 32

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

/* Every outermost server with a listener of its own tree on its port, once per server. */
static void find_servers(hbm_obs *obs, hbm_progress_servers *set)
{
    for (size_t i = 0; i < obs->host.nprocs && obs->nservers < MAX_SERVERS; i++) {
        const hbm_hproc *s = &obs->host.procs[i];
        if (!hbm_inference_server(s) || hbm_inference_parent_is_server(obs, s))
            continue;
        long port = hbm_inference_port(s);
        for (size_t k = 0; port > 0 && k < obs->host.nlisteners; k++) {
            const hbm_listener *l = &obs->host.listeners[k];
            if (l->port != port || l->pid <= 0 || !hbm_obs_in_tree(obs, s->pid, l->pid))
                continue;
            char url[128];
            metrics_url(l, url, sizeof url);
            hbm_progress_servers_add(set, url);
            hbm_server *v = &obs->servers[obs->nservers++];
            memset(v, 0, sizeof *v);
            v->pid = s->pid;
            snprintf(v->comm, sizeof v->comm, "%s", s->comm);
            break;
        }
    }
}

/* What the second sample judged, with the first sample's token count (engines are matched
 * by position: both samples list them in the page's order). */
static void record(hbm_server *v, const hbm_progress_server *p, const hbm_progress *first)
{
    snprintf(v->url, sizeof v->url, "%s", p->safe);
    v->up = p->up;
    if (!p->up) {
        snprintf(v->error, sizeof v->error, "%s", p->error);
        return;
    }
    v->nengines = p->track.n;
    v->engines = hbm_xcalloc(v->nengines ? v->nengines : 1, sizeof *v->engines);
    for (size_t k = 0; k < p->track.n; k++) {
        const hbm_progress_engine *e = &p->track.e[k];
        hbm_server_engine *o = &v->engines[k];
        snprintf(o->kind, sizeof o->kind, "%s", e->kind);
        snprintf(o->model, sizeof o->model, "%s", e->model);
        snprintf(o->engine, sizeof o->engine, "%s", e->engine);
        snprintf(o->state, sizeof o->state, "%s", hbm_progress_state_name(e->state));
        hbm_progress_line(e, o->line, sizeof o->line);
        if (e->state == HBM_PROGRESS_UNKNOWN)
            snprintf(o->why, sizeof o->why, "%s",
                     e->judged || isnan(e->tokens) ? "no token counter"
                                                   : "only the second sample could be read");
        o->running = e->running;
        o->waiting = e->waiting;
        o->tokens_before = k < first->n ? first->e[k].tokens : NAN;
        o->tokens_after = e->tokens;
        o->stalled_for_s = e->stalled_for_s;
    }
}

void hbm_observe_servers(hbm_obs *obs, double interval_s)
{
    if (!obs->has_host || interval_s <= 0)
        return;
    obs->servers = hbm_xcalloc(MAX_SERVERS, sizeof *obs->servers);
    hbm_progress_servers set;
    /* a stall here means no token for the whole interval */
    hbm_progress_servers_init(&set, interval_s * 0.9, 2);
    find_servers(obs, &set);
    obs->servers_interval_s = interval_s;
    if (obs->nservers == 0) {
        hbm_progress_servers_free(&set);
        return; /* nothing to wait for */
    }
    hbm_progress_servers_sample(&set);
    hbm_progress first[MAX_SERVERS];
    for (size_t i = 0; i < obs->nservers; i++) {
        hbm_progress_init(&first[i]);
        for (size_t k = 0; k < set.s[i].track.n; k++) {
            hbm_grow((void **)&first[i].e, &first[i].cap, first[i].n, sizeof *first[i].e);
            first[i].e[first[i].n++] = set.s[i].track.e[k];
        }
    }
    struct timespec ts = {(time_t)interval_s, (long)((interval_s - floor(interval_s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    hbm_progress_servers_sample(&set);
    for (size_t i = 0; i < obs->nservers; i++) {
        record(&obs->servers[i], &set.s[i], &first[i]);
        hbm_progress_free(&first[i]);
    }
    hbm_progress_servers_free(&set);
}
