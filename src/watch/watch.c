/* Series bookkeeping across observations: one leak detector and one history ring per
 * device and per device process. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/watch.h"

void hbm_watch_init(hbm_watch *w, const hbm_leak_params *p)
{
    memset(w, 0, sizeof *w);
    if (p)
        w->params = *p;
    else
        hbm_leak_params_default(&w->params);
}

void hbm_watch_free(hbm_watch *w)
{
    free(w->series);
    memset(w, 0, sizeof *w);
}

static hbm_watch_series *find_mut(hbm_watch *w, int64_t device, int64_t pid)
{
    for (size_t i = 0; i < w->nseries; i++)
        if (w->series[i].device == device && w->series[i].pid == pid)
            return &w->series[i];
    return NULL;
}

const hbm_watch_series *hbm_watch_find(const hbm_watch *w, int64_t device, int64_t pid)
{
    return find_mut((hbm_watch *)w, device, pid);
}

static hbm_watch_series *get_series(hbm_watch *w, int64_t device, int64_t pid)
{
    hbm_watch_series *s = find_mut(w, device, pid);
    if (s)
        return s;
    hbm_grow((void **)&w->series, &w->cap, w->nseries, sizeof *w->series);
    s = &w->series[w->nseries++];
    memset(s, 0, sizeof *s);
    s->device = device;
    s->pid = pid;
    s->total_bytes = HBM_UNKNOWN;
    hbm_leak_params p = w->params;
    if (pid != HBM_UNKNOWN) {
        /* Thresholds are about the device; a process series only looks for steps. */
        p.threshold_bytes = HBM_UNKNOWN;
        p.threshold_ratio = NAN;
    }
    hbm_leak_init(&s->det, &p);
    return s;
}

/* Forgets a series' history and detector state, keeping its key. */
static void restart_series(const hbm_watch *w, hbm_watch_series *s)
{
    s->nhist = s->ihist = 0;
    hbm_leak_params p = w->params;
    p.threshold_bytes = HBM_UNKNOWN;
    p.threshold_ratio = NAN;
    hbm_leak_init(&s->det, &p);
}

static void feed(hbm_watch_series *s, uint64_t gen, double t, int64_t bytes, int64_t total)
{
    s->seen_gen = gen;
    s->total_bytes = total;
    s->hist[s->ihist] = bytes;
    s->ihist = (s->ihist + 1) % HBM_WATCH_HISTORY;
    if (s->nhist < HBM_WATCH_HISTORY)
        s->nhist++;
    hbm_leak_add(&s->det, t, bytes, total);
}

void hbm_watch_update(hbm_watch *w, const hbm_obs *obs, double t)
{
    w->gen++;
    w->nsamples++;
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        int64_t id = hbm_device_user_id(d);
        hbm_watch_series *s = get_series(w, id, HBM_UNKNOWN);
        snprintf(s->name, sizeof s->name, "%s", d->name);
        feed(s, w->gen, t, d->memory_used_bytes, d->memory_total_bytes);
        for (size_t j = 0; j < d->nprocs; j++) {
            const hbm_dproc *p = &d->procs[j];
            if (p->pid < 0)
                continue;
            hbm_watch_series *ps = get_series(w, id, p->pid);
            if (ps->seen_gen == w->gen)
                continue; /* listed twice on one chip: count it once */
            const hbm_hproc *hp = obs->has_host && p->pid <= INT32_MAX
                                      ? hbm_host_find(&obs->host, (int)p->pid)
                                      : NULL;
            if (hp && hp->starttime) {
                if (ps->starttime && ps->starttime != hp->starttime)
                    restart_series(w, ps); /* another process got this pid */
                ps->starttime = hp->starttime;
            }
            snprintf(ps->name, sizeof ps->name, "%s", p->name);
            feed(ps, w->gen, t, p->memory_bytes, d->memory_total_bytes);
        }
    }
    size_t keep = 0;
    for (size_t i = 0; i < w->nseries; i++)
        if (w->series[i].seen_gen == w->gen)
            w->series[keep++] = w->series[i];
    w->nseries = keep;
}

int64_t hbm_watch_hist_at(const hbm_watch_series *s, size_t i)
{
    if (i >= s->nhist)
        return HBM_UNKNOWN;
    size_t pos = (s->ihist + HBM_WATCH_HISTORY - 1 - i) % HBM_WATCH_HISTORY;
    return s->hist[pos];
}

const char *hbm_watch_describe(const hbm_watch_series *s, char *buf, size_t n)
{
    const hbm_leak_status *st = &s->det.st;
    char g[32], lvl[32];
    if (!st->ready || (!st->judging && !st->above)) {
        snprintf(buf, n, "learning (sample %llu)", (unsigned long long)s->det.n);
    } else if (st->leak) {
        snprintf(buf, n, "LEAK: grew %s in %d steps that never returned",
                 hbm_fmt_size(g, sizeof g, st->growth), st->steps);
    } else if (st->steps > 0) {
        snprintf(buf, n, "growing: %d step%s, +%s", st->steps, st->steps == 1 ? "" : "s",
                 hbm_fmt_size(g, sizeof g, st->growth));
    } else if (st->above) {
        snprintf(buf, n, "above threshold (level %s)", hbm_fmt_size(lvl, sizeof lvl, st->level));
    } else {
        snprintf(buf, n, "steady");
    }
    if (st->ready && st->above && (st->leak || st->steps > 0)) {
        size_t len = strlen(buf);
        if (len < n)
            snprintf(buf + len, n - len, "; above threshold");
    }
    return buf;
}

int hbm_watch_parse_limit(const char *s, int64_t *bytes, double *ratio, hbm_err *err)
{
    *bytes = HBM_UNKNOWN;
    *ratio = NAN;
    if (!s || !*s)
        return hbm_err_set(err, "empty memory limit: want 80%% or a size such as 60GiB");
    size_t n = strlen(s);
    bool has_unit = false;
    for (size_t i = 0; i < n; i++)
        if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z'))
            has_unit = true;
    if (s[n - 1] == '%' || (!has_unit && strchr(s, '.'))) {
        if (hbm_parse_ratio(s, ratio, err) < 0)
            return hbm_err_prefix(err, "memory limit '%s'", s);
        return 0;
    }
    if (!has_unit)
        return hbm_err_set(err, "memory limit '%s': give a unit (60GiB) or a percentage (80%%)",
                           s);
    if (hbm_parse_size(s, bytes, err) < 0)
        return hbm_err_prefix(err, "memory limit '%s'", s);
    return 0;
}
