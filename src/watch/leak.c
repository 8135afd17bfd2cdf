/* The leak detector: a staircase detector over a robust level (docs/leak-detection.md).
 *
 * 1. Level: the running median of the last `window` samples. A spike shorter than half the
 *    window never moves it.
 * 2. Noise: 1.4826 x the median absolute difference between consecutive samples, divided
 *    by sqrt 2, over the last HBM_LEAK_NOISE_RING samples. A step or a spike is one or two
 *    large differences among many, which the median ignores.
 * 3. Step size T = max(step_min_bytes, noise_k x noise).
 * 4. Plateau: the last `hold` levels lie within T/2 of each other; its value is their
 *    minimum (the floor).
 * 5. Staircase: a stack of plateaus, base first. A plateau at least T above the top is a
 *    step. Any sample below the midpoint between a step and the level before it undoes
 *    that step (the memory returned between requests). Without steps the base follows
 *    the plateaus, so slow drift and sawtooth load never accumulate.
 * 6. A leak is reported when `steps` steps stand, and stays reported until every step has
 *    been undone (hysteresis). A threshold is crossed when the last `hold` levels are all
 *    above it, and crossed back when all are below it by T/2. */
#include <math.h>
#include <string.h>

#include "hbm/watch.h"

#define NOISE_MIN_RESIDUALS 5 /* residuals needed before steps are judged */
#define MAD_TO_SIGMA 1.4826   /* MAD of a normal distribution -> its standard deviation */
#define SQRT2 1.4142135623730951

void hbm_leak_params_default(hbm_leak_params *p)
{
    p->window = 5;
    p->hold = 3;
    p->steps = 3;
    p->step_min_bytes = 512 * HBM_MIB;
    p->noise_k = 4.0;
    p->threshold_bytes = HBM_UNKNOWN;
    p->threshold_ratio = NAN;
}

static size_t clamp_size(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void hbm_leak_init(hbm_leak *d, const hbm_leak_params *p)
{
    memset(d, 0, sizeof *d);
    if (p)
        d->p = *p;
    else
        hbm_leak_params_default(&d->p);
    d->p.window = clamp_size(d->p.window | 1, 1, HBM_LEAK_WINDOW_MAX);
    d->p.hold = clamp_size(d->p.hold, 1, HBM_LEAK_HOLD_MAX);
    d->p.steps = clamp_size(d->p.steps, 1, HBM_LEAK_LEVELS_MAX - 1);
    if (d->p.step_min_bytes < 1)
        d->p.step_min_bytes = 1;
    if (!(d->p.noise_k >= 0))
        d->p.noise_k = 0;
    d->st.level = d->st.base = HBM_UNKNOWN;
    d->st.since = NAN;
    d->st.noise_bytes = NAN;
    d->st.step_bytes = d->p.step_min_bytes;
}

static void sort_i64(int64_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int64_t v = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

static void sort_dbl(double *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        double v = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

static int64_t window_median(const hbm_leak *d)
{
    int64_t tmp[HBM_LEAK_WINDOW_MAX];
    memcpy(tmp, d->win, d->p.window * sizeof tmp[0]);
    sort_i64(tmp, d->p.window);
    return tmp[d->p.window / 2];
}

static double noise_scale(const hbm_leak *d)
{
    size_t n = d->nresid < HBM_LEAK_NOISE_RING ? (size_t)d->nresid : HBM_LEAK_NOISE_RING;
    double tmp[HBM_LEAK_NOISE_RING];
    memcpy(tmp, d->resid, n * sizeof tmp[0]);
    sort_dbl(tmp, n);
    double mad = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
    return MAD_TO_SIGMA * mad / SQRT2; /* a difference of two samples has sqrt 2 x sigma */
}

static int64_t threshold_of(const hbm_leak *d, int64_t total)
{
    if (d->p.threshold_bytes >= 0)
        return d->p.threshold_bytes;
    if (isfinite(d->p.threshold_ratio) && total > 0)
        return (int64_t)(d->p.threshold_ratio * (double)total);
    return HBM_UNKNOWN;
}

/* Undoes every step whose prior level the memory came back to: a sample below the
 * midpoint between the step and the level before it. Raw samples, not the median: memory
 * that was released even once between requests was not leaked. */
static void returns(hbm_leak *d, int64_t sample)
{
    while (d->nlevels > 1 &&
           sample < d->levels[d->nlevels - 2] +
                        (d->levels[d->nlevels - 1] - d->levels[d->nlevels - 2]) / 2) {
        d->nlevels--;
        d->st.events |= HBM_LEAK_EV_RETURN;
    }
}

/* Feeds one confirmed plateau into the staircase. */
static void staircase(hbm_leak *d, double t, int64_t plateau, int64_t step)
{
    if (d->nlevels == 0) {
        d->levels[0] = plateau;
        d->level_t[0] = t;
        d->nlevels = 1;
        return;
    }
    int64_t top = d->levels[d->nlevels - 1];
    if (plateau >= top + step) {
        if (d->nlevels < HBM_LEAK_LEVELS_MAX) {
            d->levels[d->nlevels] = plateau;
            d->level_t[d->nlevels] = t;
            d->nlevels++;
        } else {
            d->levels[d->nlevels - 1] = plateau; /* the stack is full: keep the top current */
        }
        d->st.events |= HBM_LEAK_EV_STEP;
    } else if (d->nlevels == 1) {
        d->levels[0] = plateau; /* no staircase: the base follows drift and load */
        d->level_t[0] = t;
    }
}

const hbm_leak_status *hbm_leak_add(hbm_leak *d, double t, int64_t bytes, int64_t total_bytes)
{
    hbm_leak_status *st = &d->st;
    st->events = 0;
    if (bytes < 0)
        return st;
    size_t w = d->p.window;
    d->win[d->n % w] = bytes;
    if (d->n > 0) {
        d->resid[d->nresid % HBM_LEAK_NOISE_RING] = fabs((double)bytes - (double)d->prev);
        d->nresid++;
    }
    d->prev = bytes;
    d->n++;
    if (d->n < w)
        return st;

    int64_t level = window_median(d);
    d->med[d->nmed % d->p.hold] = level;
    d->nmed++;
    st->ready = true;
    st->level = level;
    st->noise_bytes = noise_scale(d);
    double noise_step = d->p.noise_k * st->noise_bytes;
    int64_t step = d->p.step_min_bytes;
    if (noise_step > (double)step)
        step = noise_step > 9e18 ? INT64_MAX / 4 : (int64_t)noise_step;
    st->step_bytes = step;

    returns(d, bytes);
    /* The last `hold` levels: their spread says plateau or not, their minimum is the floor
     * and their maximum what a threshold crossing downwards must clear. */
    int64_t lo = level, hi = level;
    if (d->nmed >= d->p.hold) {
        for (size_t i = 0; i < d->p.hold; i++) {
            lo = d->med[i] < lo ? d->med[i] : lo;
            hi = d->med[i] > hi ? d->med[i] : hi;
        }
        if (d->nresid >= NOISE_MIN_RESIDUALS && hi - lo <= step / 2)
            staircase(d, t, lo, step);
    }

    st->steps = d->nlevels > 0 ? (int)d->nlevels - 1 : 0;
    st->base = d->nlevels > 0 ? d->levels[0] : HBM_UNKNOWN;
    st->growth = st->steps > 0 ? d->levels[d->nlevels - 1] - d->levels[0] : 0;
    st->since = st->steps > 0 ? d->level_t[1] : NAN;
    if (!st->leak && st->steps >= (int)d->p.steps) {
        st->leak = true;
        st->events |= HBM_LEAK_EV_LEAK;
    } else if (st->leak && st->steps == 0) {
        st->leak = false;
        st->events |= HBM_LEAK_EV_LEAK_CLEAR;
    }

    int64_t thr = threshold_of(d, total_bytes);
    if (thr >= 0 && d->nmed >= d->p.hold) {
        if (!st->above && lo >= thr) {
            st->above = true;
            st->events |= HBM_LEAK_EV_CROSS_UP;
        } else if (st->above && hi < thr - step / 2) {
            st->above = false;
            st->events |= HBM_LEAK_EV_CROSS_DOWN;
        }
    }
    return st;
}
