/* The model of `watch`'s terminal view: row order, selection, history strip cells and
 * verdict tones, kept apart from the curses drawing so it is tested without a terminal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/watch.h"

/* Digits typed further apart than this start a new id. */
#define DIGIT_GAP_S 1.5

static const char *const sort_names[HBM_WATCH_SORT_N] = {"id", "used", "growth"};

void hbm_watch_view_init(hbm_watch_view *v)
{
    memset(v, 0, sizeof *v);
    v->sort = HBM_WATCH_SORT_ID;
    v->selected = HBM_UNKNOWN;
}

const char *hbm_watch_sort_name(hbm_watch_sort sort)
{
    return sort >= 0 && sort < HBM_WATCH_SORT_N ? sort_names[sort] : "?";
}

hbm_watch_tone hbm_watch_verdict_tone(hbm_verdict v)
{
    switch (v) {
    case HBM_VERDICT_FREE: return HBM_WATCH_TONE_FREE;
    case HBM_VERDICT_BUSY: return HBM_WATCH_TONE_BUSY;
    case HBM_VERDICT_UNACCOUNTED: return HBM_WATCH_TONE_ODD;
    case HBM_VERDICT_ORPHANED:
    case HBM_VERDICT_UNHEALTHY: return HBM_WATCH_TONE_BAD;
    default: return HBM_WATCH_TONE_PLAIN;
    }
}

static int64_t growth_of(const hbm_watch_session *s, const hbm_device *d)
{
    const hbm_watch_series *ser = hbm_watch_find(&s->w, hbm_device_user_id(d), HBM_UNKNOWN);
    return ser ? ser->det.st.growth : 0;
}

static bool sorts_after(const hbm_watch_session *s, hbm_watch_sort sort, const hbm_device *a,
                        const hbm_device *b)
{
    if (sort == HBM_WATCH_SORT_USED)
        return a->memory_used_bytes < b->memory_used_bytes;
    if (sort == HBM_WATCH_SORT_GROWTH)
        return growth_of(s, a) < growth_of(s, b);
    return hbm_device_user_id(a) > hbm_device_user_id(b);
}

/* The shown devices in display order; a stable insertion sort keeps equal rows in the
 * observation's order, so rows do not swap between samples. */
static size_t order(const hbm_watch_session *s, hbm_watch_sort sort, size_t *idx, size_t cap)
{
    size_t n = 0;
    if (!s->have_obs)
        return 0;
    for (size_t i = 0; i < s->obs.ndevs && n < cap; i++)
        if (hbm_watch_session_wanted(s, &s->obs.devs[i]))
            idx[n++] = i;
    for (size_t i = 1; i < n; i++) {
        size_t x = idx[i], j = i;
        for (; j > 0 && sorts_after(s, sort, &s->obs.devs[idx[j - 1]], &s->obs.devs[x]); j--)
            idx[j] = idx[j - 1];
        idx[j] = x;
    }
    return n;
}

size_t hbm_watch_view_rows(const hbm_watch_session *s, hbm_watch_view *v, size_t *idx,
                           size_t cap)
{
    size_t n = order(s, v->sort, idx, cap);
    if (n && v->selected == HBM_UNKNOWN)
        v->selected = hbm_device_user_id(&s->obs.devs[idx[0]]);
    return n;
}

void hbm_watch_view_move(hbm_watch_view *v, const hbm_watch_session *s, int delta)
{
    size_t idx[256];
    size_t n = order(s, v->sort, idx, sizeof idx / sizeof idx[0]);
    if (n == 0)
        return;
    size_t at = 0;
    for (size_t k = 0; k < n; k++)
        if (hbm_device_user_id(&s->obs.devs[idx[k]]) == v->selected)
            at = k;
    long next = (long)at + delta;
    next = next < 0 ? 0 : next >= (long)n ? (long)n - 1 : next;
    v->selected = hbm_device_user_id(&s->obs.devs[idx[next]]);
}

static bool has_device(const hbm_watch_session *s, int64_t id)
{
    return s->have_obs && hbm_obs_find_device((hbm_obs *)&s->obs, id);
}

void hbm_watch_view_digit(hbm_watch_view *v, const hbm_watch_session *s, char digit,
                          double now)
{
    size_t len = strlen(v->digits);
    if (now - v->digits_at > DIGIT_GAP_S || len + 1 >= sizeof v->digits)
        len = 0;
    v->digits[len] = digit;
    v->digits[len + 1] = '\0';
    v->digits_at = now;
    int64_t id = strtoll(v->digits, NULL, 10);
    if (has_device(s, id)) {
        v->selected = id;
    } else if (len > 0) {
        /* Not an id as typed: start again from this digit. */
        v->digits[0] = digit;
        v->digits[1] = '\0';
        if (has_device(s, digit - '0'))
            v->selected = digit - '0';
    }
}

int hbm_watch_strip_cells(int free_cols)
{
    return free_cols >= HBM_WATCH_STRIP_MIN ? free_cols : 0;
}

void hbm_watch_strip(const hbm_watch_series *s, int64_t total, int *levels, int width)
{
    int64_t top = total;
    for (size_t i = 0; top <= 0 && s && i < s->nhist; i++)
        top = hbm_watch_hist_at(s, i) > top ? hbm_watch_hist_at(s, i) : top;
    for (int k = 0; k < width; k++) {
        int64_t v = s ? hbm_watch_hist_at(s, (size_t)(width - 1 - k)) : HBM_UNKNOWN;
        int level = v < 0 ? -1 : 0;
        if (v >= 0 && top > 0) {
            level = (int)lround((double)v / (double)top * HBM_WATCH_STRIP_LEVELS);
            level = level < 1 ? 1 : level > HBM_WATCH_STRIP_LEVELS ? HBM_WATCH_STRIP_LEVELS
                                                                   : level;
        }
        levels[k] = level;
    }
}
