/* A watch session: one observation per sample fed to the leak detectors, their events kept
 * as messages. The line view (cmd_watch.c) and the full-screen view (watch_tui.c) show it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "watch_session.h"

bool watch_wanted(const watch_ctx *c, const hbm_device *d)
{
    if (c->only.n == 0)
        return true;
    int64_t id = hbm_device_user_id(d);
    for (size_t i = 0; i < c->only.n; i++)
        if (c->only.id[i] == id)
            return true;
    return false;
}

void watch_clock_text(char *buf, size_t n, double wall)
{
    time_t t = (time_t)wall;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%H:%M:%S", &tm);
}

static void add_event(watch_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_event(watch_ctx *c, const char *fmt, ...)
{
    if (c->nevents == WATCH_EVENTS) {
        memmove(c->events[0], c->events[1], sizeof c->events[0] * (WATCH_EVENTS - 1));
        c->nevents--;
    }
    char when[16];
    watch_clock_text(when, sizeof when, hbm_now_wall());
    char msg[180];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->events[c->nevents++], sizeof c->events[0], "%s %s", when, msg);
    c->events_total++;
}

size_t watch_first_unshown(watch_ctx *c)
{
    unsigned long fresh = c->events_total - c->events_shown;
    c->events_shown = c->events_total;
    return fresh >= c->nevents ? 0 : c->nevents - (size_t)fresh;
}

/* Turns a series' events of this sample into messages. */
static void series_events(watch_ctx *c, const hbm_watch_series *s)
{
    const hbm_leak_status *st = &s->det.st;
    char who[120], g[32], lvl[32];
    if (s->pid == HBM_UNKNOWN)
        snprintf(who, sizeof who, "device %lld", (long long)s->device);
    else
        snprintf(who, sizeof who, "device %lld pid %lld (%s)", (long long)s->device,
                 (long long)s->pid, s->name[0] ? s->name : "?");
    hbm_fmt_size(g, sizeof g, st->growth);
    hbm_fmt_size(lvl, sizeof lvl, st->level);
    if (st->events & HBM_LEAK_EV_LEAK) {
        c->leak_seen = true;
        add_event(c, "LEAK %s: memory grew %s in %d steps that never returned (now %s)", who,
                  g, st->steps, lvl);
    }
    if (st->events & HBM_LEAK_EV_LEAK_CLEAR)
        add_event(c, "%s: memory back at its earlier level (%s): leak cleared", who, lvl);
    if (st->events & HBM_LEAK_EV_CROSS_UP)
        add_event(c, "%s: memory %s crossed the threshold", who, lvl);
    if (st->events & HBM_LEAK_EV_CROSS_DOWN)
        add_event(c, "%s: memory %s back below the threshold", who, lvl);
}

/* Each server engine that turned stalled, or stopped being stalled, is an event. */
static void server_events(watch_ctx *c)
{
    size_t k = 0;
    for (size_t i = 0; i < c->servers.n; i++) {
        const hbm_progress_server *v = &c->servers.s[i];
        for (size_t e = 0; e < v->track.n; e++, k++) {
            if (k >= c->nlast) {
                c->last_state = hbm_xrealloc(c->last_state, (k + 1) * sizeof *c->last_state);
                c->last_state[k] = HBM_PROGRESS_UNKNOWN;
                c->nlast = k + 1;
            }
            const hbm_progress_engine *g = &v->track.e[e];
            hbm_progress_state was = c->last_state[k];
            char line[400];
            hbm_progress_line(g, line, sizeof line);
            if (g->state == HBM_PROGRESS_STALLED && was != HBM_PROGRESS_STALLED) {
                c->leak_seen = true;
                add_event(c, "STALL %s: %s", v->safe, line);
            } else if (g->state != HBM_PROGRESS_STALLED && was == HBM_PROGRESS_STALLED) {
                add_event(c, "%s: %s", v->safe, line);
            }
            c->last_state[k] = g->state;
        }
    }
}

bool watch_server_line(const watch_ctx *c, size_t k, char *buf, size_t n, bool *stalled)
{
    for (size_t i = 0; i < c->servers.n; i++) {
        const hbm_progress_server *v = &c->servers.s[i];
        size_t lines = v->up ? (v->track.n ? v->track.n : 1) : 1;
        if (k >= lines) {
            k -= lines;
            continue;
        }
        *stalled = false;
        if (!v->up) {
            snprintf(buf, n, "server %s", v->error);
        } else if (!v->track.n) {
            snprintf(buf, n, "server %s: no vLLM, SGLang or MindIE metric", v->safe);
        } else {
            char line[400];
            hbm_progress_line(&v->track.e[k], line, sizeof line);
            snprintf(buf, n, "server %s  %s", v->safe, line);
            *stalled = v->track.e[k].state == HBM_PROGRESS_STALLED;
        }
        return true;
    }
    return false;
}

int watch_sample(watch_ctx *c)
{
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_err err = {{0}};
    c->samples++;
    if (c->started == 0)
        c->started = hbm_now_wall();
    if (c->servers.n) {
        hbm_progress_servers_sample(&c->servers);
        server_events(c);
    }
    if (hbm_observe(&obs, &c->common.src, &err) < 0) {
        hbm_obs_free(&obs);
        snprintf(c->error, sizeof c->error, "%s", err.msg);
        return -1;
    }
    c->error[0] = '\0';
    if (c->have_obs)
        hbm_obs_free(&c->obs);
    c->obs = obs;
    c->have_obs = true;
    hbm_watch_update(&c->w, &c->obs, hbm_now_mono());
    for (size_t i = 0; i < c->w.nseries; i++) {
        const hbm_watch_series *s = &c->w.series[i];
        const hbm_device *d = hbm_obs_find_device(&c->obs, s->device);
        if (d && !watch_wanted(c, d))
            continue;
        series_events(c, s);
    }
    return 0;
}
