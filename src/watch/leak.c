/* The leak detector: a staircase detector over a robust level (docs/leak-detection.md).
 *
 * 1. Level: the running median of the last `window` samples. A spike shorter than half the
 *    window never moves it.
 * 2. Noise: the median absolute residual between a sample and the running median centred
 *    on it, over the last HBM_LEAK_NOISE_RING samples, scaled to a standard deviation
 *    (/0.4897: the value of that median for unit normal noise and a window of 5). A clean
 *    step and a linear ramp leave no residual; a spike leaves one, which the median ignores.
 *    The estimate may rise at once but falls by at most 3% per sample.
 * 3. Step size T = max(step_min_bytes, noise_k x noise).
 * 4. Plateau: the last `hold` levels lie within T/2 of each other; its value is their
 *    minimum (the floor).
 * 5. Jump: the level rose by 3T/4 or more from one sample to the next. A step is a jump
 *    followed by a plateau, so a ramp (too steep to be flat, or too flat to jump) never
 *    makes one.
 * 6. Staircase: a stack of plateaus, base first. A plateau at least T above the top that
 *    begins within `hold` samples of the start of a run of jumps is a step. Any sample
 *    below the midpoint between a step and the level before it undoes that step (the
 *    memory returned between requests). Without steps the base follows the plateaus.
 * 7. A leak is reported when `steps` steps stand, and stays reported until every step has
 *    been undone (hysteresis). A threshold is crossed when the last `hold` levels are all
 *    above it, and crossed back when all are below it by T/2. */
#include <math.h>
#include <string.h>

#include "hbm/watch.h"

#define NOISE_MIN_RESIDUALS 30 /* residuals needed before steps are judged */
#define NOISE_DECAY 0.97      /* per sample: how fast the noise estimate may fall */
#define RESID_PER_SIGMA 0.4897 /* median |x - centred median of 5| for unit normal noise */
#define MED_RING (HBM_LEAK_HOLD_MAX + 2)

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
    if (n == 0)
        return 0;
    double tmp[HBM_LEAK_NOISE_RING];
    memcpy(tmp, d->resid, n * sizeof tmp[0]);
    sort_dbl(tmp, n);
    double mad = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
    return mad / RESID_PER_SIGMA;
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

static int64_t med_at(const hbm_leak *d, uint64_t k)
{
    return d->med[k % MED_RING];
}

/* Feeds one confirmed plateau into the staircase; jumped: it began right after a jump. */
static void staircase(hbm_leak *d, double t, int64_t plateau, int64_t step, bool jumped)
{
    if (d->nlevels == 0) {
        d->levels[0] = plateau;
        d->level_t[0] = t;
        d->nlevels = 1;
        return;
    }
    int64_t top = d->levels[d->nlevels - 1];
    if (plateau >= top + step && jumped) {
        if (d->nlevels < HBM_LEAK_LEVELS_MAX) {
            d->levels[d->nlevels] = plateau;
            d->level_t[d->nlevels] = t;
            d->nlevels++;
        } else {
            d->levels[d->nlevels - 1] = plateau; /* the stack is full: keep the top current */
        }
        d->st.events |= HBM_LEAK_EV_STEP;
    } else if (d->nlevels == 1 && plateau < top + step) {
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
    d->n++;
    if (d->n < w)
        return st;

    int64_t level = window_median(d);
    int64_t centred = d->win[(d->n - 1 - w / 2) % w];
    d->resid[d->nresid % HBM_LEAK_NOISE_RING] = fabs((double)centred - (double)level);
    d->nresid++;
    d->nmed++; /* index of this level; starts at 1 so jump_start 0 means none */
    d->med[d->nmed % MED_RING] = level;
    st->ready = true;
    st->level = level;
    /* A median over few residuals swings low by chance; letting the estimate fall only
     * slowly keeps one lucky stretch from shrinking the step size. */
    double noise = noise_scale(d);
    if (d->nresid > NOISE_MIN_RESIDUALS && noise < st->noise_bytes * NOISE_DECAY)
        noise = st->noise_bytes * NOISE_DECAY;
    st->noise_bytes = noise;
    double noise_step = d->p.noise_k * st->noise_bytes;
    int64_t step = d->p.step_min_bytes;
    if (noise_step > (double)step)
        step = noise_step > 9e18 ? INT64_MAX / 4 : (int64_t)noise_step;
    st->step_bytes = step;
    st->judging = d->nresid >= NOISE_MIN_RESIDUALS;

    if (d->nmed >= 2) {
        if (level - med_at(d, d->nmed - 1) >= step - step / 4) {
            if (d->jump_end + 1 != d->nmed)
                d->jump_start = d->nmed; /* a new run of rises */
            d->jump_end = d->nmed;
        }
    }
    returns(d, bytes);
    /* The last `hold` levels: their spread says plateau or not, their minimum is the floor
     * and their maximum what a threshold crossing downwards must clear. */
    int64_t lo = level, hi = level;
    if (d->nmed >= d->p.hold) {
        for (uint64_t k = d->nmed - d->p.hold + 1; k <= d->nmed; k++) {
            lo = med_at(d, k) < lo ? med_at(d, k) : lo;
            hi = med_at(d, k) > hi ? med_at(d, k) : hi;
        }
        uint64_t start = d->nmed - d->p.hold + 1;
        bool jumped = d->jump_start > 0 && d->jump_start <= start &&
                      start - d->jump_start <= d->p.hold;
        if (st->judging && hi - lo <= step / 2)
            staircase(d, t, lo, step, jumped);
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
