/* A watch session's words: its events and server lines, as the line view (cmd_watch.c) and
 * the full-screen view (watch_tui.c) show them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "watch_session.h"

void watch_clock_text(char *buf, size_t n, double wall)
{
    time_t t = (time_t)wall;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%H:%M:%S", &tm);
}

/* Formats a message cut at the line's size, as the views' fixed-width lines want it. */
static void msgf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void msgf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

const char *watch_event_text(const hbm_watch_event *e, char *buf, size_t n)
{
    char who[120], g[32], lvl[32], msg[180], when[16];
    if (e->pid == HBM_UNKNOWN)
        snprintf(who, sizeof who, "device %lld", (long long)e->device);
    else
        snprintf(who, sizeof who, "device %lld pid %lld (%s)", (long long)e->device,
                 (long long)e->pid, e->name[0] ? e->name : "?");
    hbm_fmt_size(g, sizeof g, e->growth_bytes);
    hbm_fmt_size(lvl, sizeof lvl, e->level_bytes);
    switch (e->kind) {
    case HBM_WATCH_EV_LEAK:
        msgf(msg, sizeof msg, "LEAK %s: memory grew %s in %d steps that never returned "
                 "(now %s)", who, g, e->steps, lvl);
        break;
    case HBM_WATCH_EV_LEAK_CLEAR:
        msgf(msg, sizeof msg, "%s: memory back at its earlier level (%s): leak cleared",
                 who, lvl);
        break;
    case HBM_WATCH_EV_CROSS_UP:
        msgf(msg, sizeof msg, "%s: memory %s crossed the threshold", who, lvl);
        break;
    case HBM_WATCH_EV_CROSS_DOWN:
        msgf(msg, sizeof msg, "%s: memory %s back below the threshold", who, lvl);
        break;
    case HBM_WATCH_EV_STALL:
        msgf(msg, sizeof msg, "STALL %s: %s", e->url, e->line);
        break;
    case HBM_WATCH_EV_STALL_END:
        msgf(msg, sizeof msg, "%s: %s", e->url, e->line);
        break;
    }
    watch_clock_text(when, sizeof when, e->wall);
    msgf(buf, n, "%s %s", when, msg);
    return buf;
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
