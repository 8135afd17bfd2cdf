/* A watch session (include/hbm/watch.h): one observation per sample fed to the detectors,
 * what changed kept as events for the line, JSON and full-screen views. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/util.h"
#include "hbm/watch.h"

void hbm_watch_session_init(hbm_watch_session *s, const hbm_leak_params *p,
                            const hbm_source_opts *src, const int64_t *only, size_t nonly,
                            hbm_progress_servers *servers)
{
    memset(s, 0, sizeof *s);
    s->src = src;
    s->only = only;
    s->nonly = nonly;
    s->servers = servers;
    hbm_watch_init(&s->w, p);
}

void hbm_watch_session_free(hbm_watch_session *s)
{
    if (s->have_obs)
        hbm_obs_free(&s->obs);
    hbm_watch_free(&s->w);
    free(s->last_state);
    s->have_obs = false;
    s->last_state = NULL;
    s->nlast = 0;
}

bool hbm_watch_session_wanted(const hbm_watch_session *s, const hbm_device *d)
{
    if (s->nonly == 0)
        return true;
    int64_t id = hbm_device_user_id(d);
    for (size_t i = 0; i < s->nonly; i++)
        if (s->only[i] == id)
            return true;
    return false;
}

/* A new event, its time now; the oldest goes when the ring is full. */
static hbm_watch_event *add_event(hbm_watch_session *s, hbm_watch_event_kind kind)
{
    if (s->nevents == HBM_WATCH_EVENTS) {
        memmove(&s->events[0], &s->events[1], sizeof s->events[0] * (HBM_WATCH_EVENTS - 1));
        s->nevents--;
    }
    hbm_watch_event *e = &s->events[s->nevents++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->wall = hbm_now_wall();
    e->pid = HBM_UNKNOWN;
    s->events_total++;
    return e;
}

size_t hbm_watch_session_first_unshown(hbm_watch_session *s)
{
    unsigned long fresh = s->events_total - s->events_shown;
    s->events_shown = s->events_total;
    return fresh >= s->nevents ? 0 : s->nevents - (size_t)fresh;
}

/* A series' events of this sample, in the order a reader follows them. */
static void series_events(hbm_watch_session *s, const hbm_watch_series *ser)
{
    static const struct {
        unsigned bit;
        hbm_watch_event_kind kind;
    } kinds[] = {
        {HBM_LEAK_EV_LEAK, HBM_WATCH_EV_LEAK},
        {HBM_LEAK_EV_LEAK_CLEAR, HBM_WATCH_EV_LEAK_CLEAR},
        {HBM_LEAK_EV_CROSS_UP, HBM_WATCH_EV_CROSS_UP},
        {HBM_LEAK_EV_CROSS_DOWN, HBM_WATCH_EV_CROSS_DOWN},
    };
    const hbm_leak_status *st = &ser->det.st;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (!(st->events & kinds[i].bit))
            continue;
        if (kinds[i].kind == HBM_WATCH_EV_LEAK)
            s->problem_seen = true;
        hbm_watch_event *e = add_event(s, kinds[i].kind);
        e->device = ser->device;
        e->pid = ser->pid;
        snprintf(e->name, sizeof e->name, "%s", ser->name);
        e->growth_bytes = st->growth;
        e->level_bytes = st->level;
        e->steps = st->steps;
    }
}

void hbm_watch_session_server_events(hbm_watch_session *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->servers->n; i++) {
        const hbm_progress_server *v = &s->servers->s[i];
        for (size_t g = 0; g < v->track.n; g++, k++) {
            if (k >= s->nlast) {
                s->last_state = hbm_xrealloc(s->last_state, (k + 1) * sizeof *s->last_state);
                s->last_state[k] = HBM_PROGRESS_UNKNOWN;
                s->nlast = k + 1;
            }
            const hbm_progress_engine *eng = &v->track.e[g];
            bool was = s->last_state[k] == HBM_PROGRESS_STALLED;
            bool is = eng->state == HBM_PROGRESS_STALLED;
            if (is != was) {
                s->problem_seen |= is;
                hbm_watch_event *e = add_event(s, is ? HBM_WATCH_EV_STALL : HBM_WATCH_EV_STALL_END);
                snprintf(e->url, sizeof e->url, "%s", v->safe);
                hbm_progress_line(eng, e->line, sizeof e->line);
            }
            s->last_state[k] = eng->state;
        }
    }
}

int hbm_watch_session_sample(hbm_watch_session *s)
{
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_err err = {{0}};
    s->samples++;
    if (s->started == 0)
        s->started = hbm_now_wall();
    if (s->servers && s->servers->n) {
        hbm_progress_servers_sample(s->servers);
        hbm_watch_session_server_events(s);
    }
    if (hbm_observe(&obs, s->src, &err) < 0) {
        hbm_obs_free(&obs);
        snprintf(s->error, sizeof s->error, "%s", err.msg);
        return -1;
    }
    s->error[0] = '\0';
    if (s->have_obs)
        hbm_obs_free(&s->obs);
    s->obs = obs;
    s->have_obs = true;
    hbm_watch_update(&s->w, &s->obs, hbm_now_mono());
    for (size_t i = 0; i < s->w.nseries; i++) {
        const hbm_watch_series *ser = &s->w.series[i];
        const hbm_device *d = hbm_obs_find_device(&s->obs, ser->device);
        if (d && !hbm_watch_session_wanted(s, d))
            continue;
        series_events(s, ser);
    }
    return 0;
}

static json_t *bytes_or_null(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

static json_t *series_json(const hbm_watch_series *ser)
{
    const hbm_leak_status *st = &ser->det.st;
    char desc[160];
    json_t *j = json_object();
    json_object_set_new(j, "ready", json_boolean(st->ready));
    json_object_set_new(j, "leak", json_boolean(st->leak));
    json_object_set_new(j, "above_threshold", json_boolean(st->above));
    json_object_set_new(j, "steps", json_integer(st->steps));
    json_object_set_new(j, "growth_bytes", json_integer(st->growth));
    json_object_set_new(j, "level_bytes", bytes_or_null(st->level));
    json_object_set_new(j, "base_bytes", bytes_or_null(st->base));
    json_object_set_new(j, "step_bytes", json_integer(st->step_bytes));
    json_object_set_new(j, "noise_bytes",
                        isfinite(st->noise_bytes) ? json_real(st->noise_bytes) : json_null());
    json_object_set_new(j, "summary", json_string(hbm_watch_describe(ser, desc, sizeof desc)));
    return j;
}

static json_t *processes_json(const hbm_watch_session *s, const hbm_device *d, int64_t id)
{
    json_t *procs = json_array();
    for (size_t k = 0; k < d->nprocs; k++) {
        const hbm_watch_series *ps = hbm_watch_find(&s->w, id, d->procs[k].pid);
        json_t *pj = json_object();
        json_object_set_new(pj, "pid", json_integer(d->procs[k].pid));
        json_object_set_new(pj, "name", json_string(d->procs[k].name));
        json_object_set_new(pj, "memory_bytes", bytes_or_null(d->procs[k].memory_bytes));
        json_object_set_new(pj, "leak", ps ? series_json(ps) : json_null());
        json_array_append_new(procs, pj);
    }
    return procs;
}

json_t *hbm_watch_session_devices_json(const hbm_watch_session *s)
{
    json_t *devs = json_array();
    for (size_t i = 0; i < s->obs.ndevs; i++) {
        const hbm_device *d = &s->obs.devs[i];
        if (!hbm_watch_session_wanted(s, d))
            continue;
        int64_t id = hbm_device_user_id(d);
        json_t *dj = json_object();
        json_object_set_new(dj, "device", id >= 0 ? json_integer(id) : json_null());
        json_object_set_new(dj, "name", json_string(d->name));
        json_object_set_new(dj, "memory_used_bytes", bytes_or_null(d->memory_used_bytes));
        json_object_set_new(dj, "memory_total_bytes", bytes_or_null(d->memory_total_bytes));
        json_object_set_new(dj, "verdict", json_string(hbm_verdict_name(d->verdict)));
        const hbm_watch_series *ser = hbm_watch_find(&s->w, id, HBM_UNKNOWN);
        json_object_set_new(dj, "leak", ser ? series_json(ser) : json_null());
        json_object_set_new(dj, "processes", processes_json(s, d, id));
        json_array_append_new(devs, dj);
    }
    return devs;
}

json_t *hbm_watch_session_servers_json(const hbm_watch_session *s)
{
    json_t *servers = json_array();
    for (size_t i = 0; s->servers && i < s->servers->n; i++) {
        const hbm_progress_server *v = &s->servers->s[i];
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
