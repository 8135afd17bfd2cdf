/* node-problem-detector's custom plugin checks (docs/kubernetes.md): one line of at most
 * HBM_NPD_LINE_MAX bytes naming the first device hit and its cause, and NPD's exit codes
 * (0 OK, 1 NonOK, 2 Unknown). */
#include <stdio.h>
#include <string.h>

#include "hbm/probe.h"
#include "hbm/text.h"
#include "hbm/util.h"
#include "hbm/watch.h"

const char *const hbm_npd_names[] = {"orphaned", "unaccounted", "unhealthy", "leaking",
                                     "stalled",  NULL};

bool hbm_npd_needs_host(hbm_npd_check c)
{
    return c != HBM_NPD_UNHEALTHY && c != HBM_NPD_LEAKING;
}

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

static bool npd_hit(hbm_npd_check c, const hbm_device *d, const npd_leaks *l)
{
    const hbm_history_dev *h;
    switch (c) {
    case HBM_NPD_LEAKING: return (h = npd_hist(l, d)) && hbm_history_judge(h, NULL).leak;
    case HBM_NPD_STALLED: return false;
    case HBM_NPD_ORPHANED: return d->verdict == HBM_VERDICT_ORPHANED;
    case HBM_NPD_UNACCOUNTED: return d->verdict == HBM_VERDICT_UNACCOUNTED;
    case HBM_NPD_UNHEALTHY: return d->verdict == HBM_VERDICT_UNHEALTHY || !d->healthy;
    }
    return false;
}

/* The orphan and its pod, or its name. */
static void npd_orphan(const hbm_device *d, char *buf, size_t n)
{
    char sz[32];
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

/* The cause on one device in a few words: the orphan and its pod, the memory nobody holds,
 * the vendor's health word, the staircase. */
static void npd_cause(hbm_npd_check c, const hbm_device *d, const npd_leaks *l, char *buf,
                      size_t n)
{
    char sz[32];
    if (c == HBM_NPD_LEAKING) {
        hbm_leak_status st = hbm_history_judge(npd_hist(l, d), NULL);
        hbm_fmt_size(sz, sizeof sz, st.growth);
        snprintf(buf, n, "memory grew %s in %d steps", sz, st.steps);
    } else if (c == HBM_NPD_UNHEALTHY) {
        snprintf(buf, n, "health %s", d->health[0] ? d->health : "not OK");
    } else if (c == HBM_NPD_UNACCOUNTED) {
        hbm_fmt_size(sz, sizeof sz, d->unaccounted_bytes);
        snprintf(buf, n, "%s held by no process", sz);
    } else {
        npd_orphan(d, buf, n);
    }
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

hbm_probe_result hbm_npd_run(hbm_npd_check c, const hbm_obs *obs, bool observed, hbm_err *err,
                             const char *history, char *line, size_t n)
{
    npd_leaks leaks = {0};
    if (!observed || obs->ndevs == 0 ||
        (c == HBM_NPD_LEAKING && npd_history(history, obs, &leaks, err) < 0)) {
        hbm_history_free(&leaks.hist);
        hbm_text_fitf(line, n, "unknown: %s",
                      obs->ndevs || err->msg[0] ? err->msg : "no device found");
        return HBM_PROBE_UNKNOWN;
    }
    const hbm_device *first = NULL;
    size_t hits = 0;
    for (size_t i = 0; i < obs->ndevs; i++)
        if (npd_hit(c, &obs->devs[i], &leaks) && !hits++)
            first = &obs->devs[i];
    if (!first) {
        snprintf(line, n, "ok: %zu device%s, none %s", obs->ndevs, obs->ndevs == 1 ? "" : "s",
                 hbm_npd_names[c]);
    } else {
        char cause[400], more[32] = "";
        npd_cause(c, first, &leaks, cause, sizeof cause);
        if (hits > 1)
            snprintf(more, sizeof more, " (+%zu more)", hits - 1);
        snprintf(line, n, "%s %lld %s%s: %s", first->vendor == HBM_VENDOR_ASCEND ? "NPU" : "GPU",
                 (long long)hbm_device_user_id(first),
                 c == HBM_NPD_LEAKING ? "LEAK" : hbm_verdict_name(first->verdict), more, cause);
    }
    hbm_history_free(&leaks.hist);
    return first ? HBM_PROBE_BAD : HBM_PROBE_OK;
}

hbm_probe_result hbm_npd_stalled(const hbm_probe_progress_opts *po, char *line, size_t n)
{
    if (!po->url) {
        snprintf(line, n, "unknown: --npd stalled needs --metrics-url");
        return HBM_PROBE_UNKNOWN;
    }
    hbm_probe p;
    hbm_probe_init(&p);
    hbm_probe_progress(&p, po);
    const char *word = p.worst == HBM_PROBE_OK ? "ok" : p.worst == HBM_PROBE_BAD ? "server"
                                                                               : "unknown";
    snprintf(line, n, "%s: %s", word, hbm_probe_reason(&p));
    hbm_probe_free(&p);
    return p.worst;
}

size_t hbm_npd_fit(const char *line)
{
    size_t n = strlen(line);
    if (n > HBM_NPD_LINE_MAX) {
        n = HBM_NPD_LINE_MAX;
        while (n > 0 && ((unsigned char)line[n] & 0xC0) == 0x80)
            n--;
    }
    return n;
}
