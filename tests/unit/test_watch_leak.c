/* The leak detector on synthetic series (bench/): stepwise growth of 1 GiB per step held
 * for 5 samples or more is reported within 3 steps; flat memory with +-2% noise, a sawtooth
 * that returns to its baseline and a single spike never are. Every series is generated
 * here from a seeded generator, over several levels, hold lengths and seeds. Staircases
 * start after 40 flat samples: the detector judges steps once it has a noise estimate
 * (30 samples, docs/leak-detection.md). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hbm/watch.h"

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
    rng_state = s * 0x9E3779B97F4A7C15ULL + 1;
}

/* Uniform in [0, 1). */
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Uniform noise of +-pct of x. */
static int64_t noisy(double x, double pct)
{
    return (int64_t)(x * (1.0 + pct * (2.0 * urand() - 1.0)));
}

/* Uniform noise of +-jitter bytes (allocator and driver bookkeeping). */
static int64_t jittered(double x, double jitter)
{
    return (int64_t)(x + jitter * (2.0 * urand() - 1.0));
}

static const double levels_gib[] = {1, 4, 10, 30, 60, 120};
#define NLEVELS (sizeof levels_gib / sizeof levels_gib[0])

/* Feeds a staircase (flat for `lead` samples, then +1 GiB every `hold` samples) with noise
 * of +-pct of the level and +-jitter bytes, and returns the step (1-based, fractional)
 * during which the leak was reported, or -1. */
static double staircase_detect(double base_gib, int lead, int hold, double pct, double jitter,
                               int nsteps)
{
    hbm_leak d;
    hbm_leak_init(&d, NULL);
    int n = lead + hold * nsteps;
    for (int i = 0; i < n; i++) {
        int step = i < lead ? 0 : (i - lead) / hold + 1;
        double x = (base_gib + step) * (double)HBM_GIB;
        const hbm_leak_status *st =
            hbm_leak_add(&d, i, jittered((double)noisy(x, pct), jitter), 80 * HBM_GIB);
        if (st->leak)
            return 1.0 + (double)(i - lead) / hold;
    }
    return -1;
}

static void test_steps_reported_within_three(void **state)
{
    (void)state;
    int holds[] = {5, 6, 8, 12, 30};
    double jitter[] = {0, 32.0 * HBM_MIB, 64.0 * HBM_MIB};
    for (size_t li = 0; li < NLEVELS; li++)
        for (size_t hi = 0; hi < sizeof holds / sizeof holds[0]; hi++)
            for (size_t ji = 0; ji < sizeof jitter / sizeof jitter[0]; ji++)
                for (uint64_t seed = 1; seed <= 10; seed++) {
                    rng_seed(seed);
                    double at =
                        staircase_detect(levels_gib[li], 40, holds[hi], 0, jitter[ji], 8);
                    if (at < 1.0 || at >= 4.0)
                        fail_msg("base %.0f GiB hold %d jitter %.0f MiB seed %llu: leak at step "
                                 "%.2f (want within 3 steps)",
                                 levels_gib[li], holds[hi], jitter[ji] / HBM_MIB,
                                 (unsigned long long)seed, at);
                }
}

/* With noise of +-2% of the used memory, steps at a low level (where 2% is well under a
 * step) are still reported within 3 steps. */
static void test_steps_with_two_percent_noise_low_level(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        rng_seed(seed);
        double at = staircase_detect(2, 40, 5, 0.02, 0, 8);
        if (at < 1.0 || at >= 4.0)
            fail_msg("seed %llu: leak at step %.2f", (unsigned long long)seed, at);
    }
}

/* No step growth before the staircase starts, and the report names the growth. */
static void test_report_fields(void **state)
{
    (void)state;
    hbm_leak d;
    hbm_leak_init(&d, NULL);
    const hbm_leak_status *st = NULL;
    for (int i = 0; i < 40; i++) {
        st = hbm_leak_add(&d, i, 10 * HBM_GIB, 64 * HBM_GIB);
        assert_false(st->leak);
        assert_int_equal(st->steps, 0);
    }
    assert_true(st->ready);
    assert_int_equal(st->level, 10 * HBM_GIB);
    int64_t x = 10 * HBM_GIB;
    for (int s = 1; s <= 3; s++) {
        x += HBM_GIB;
        for (int i = 0; i < 6; i++)
            st = hbm_leak_add(&d, 40 + s * 6 + i, x, 64 * HBM_GIB);
    }
    assert_true(st->leak);
    assert_int_equal(st->steps, 3);
    assert_int_equal(st->growth, 3 * HBM_GIB);
    assert_int_equal(st->base, 10 * HBM_GIB);
    assert_true(isfinite(st->since));
    assert_true(st->since >= 46 && st->since < 52);
}

static void test_flat_noise_never(void **state)
{
    (void)state;
    for (size_t li = 0; li < NLEVELS; li++)
        for (uint64_t seed = 1; seed <= 20; seed++) {
            rng_seed(seed);
            hbm_leak d;
            hbm_leak_init(&d, NULL);
            for (int i = 0; i < 5000; i++) {
                const hbm_leak_status *st =
                    hbm_leak_add(&d, i, noisy(levels_gib[li] * (double)HBM_GIB, 0.02), -1);
                if (st->leak)
                    fail_msg("flat %.0f GiB +-2%% seed %llu: leak reported at sample %d",
                             levels_gib[li], (unsigned long long)seed, i);
            }
        }
}

/* Request-driven load: memory ramps up (or jumps) while a request runs and returns to the
 * baseline between requests. Ramps of 1..30 samples, amplitudes of 1..16 GiB, tops held
 * 0..8 samples, 0..6 samples at the baseline between requests (0: the classic sawtooth,
 * back at the baseline for the one sample of the drop), without and with +-64 MiB jitter. */
static void test_sawtooth_never(void **state)
{
    (void)state;
    double amps[] = {1, 2, 4, 8, 16};
    for (int ramp = 1; ramp <= 30; ramp++)
        for (size_t ai = 0; ai < sizeof amps / sizeof amps[0]; ai++)
            for (int top = 0; top <= 8; top += 2)
                for (int rest = 0; rest <= 6; rest++)
                    for (int noise = 0; noise <= 1; noise++) {
                        rng_seed((uint64_t)(ramp * 1000 + top * 10 + rest));
                        hbm_leak d;
                        hbm_leak_init(&d, NULL);
                        int period = ramp + top + rest;
                        for (int i = 0; i < 60 * period; i++) {
                            int ph = i % period;
                            double frac = ph < ramp ? (double)(ph + 1) / ramp
                                          : ph < ramp + top ? 1.0
                                                            : 0.0;
                            if (rest == 0 && ph == 0)
                                frac = 0; /* the drop */
                            double x = (20 + amps[ai] * frac) * (double)HBM_GIB;
                            const hbm_leak_status *st = hbm_leak_add(
                                &d, i, jittered(x, noise ? 64.0 * HBM_MIB : 0), -1);
                            if (st->leak)
                                fail_msg("sawtooth ramp %d amp %.0f top %d rest %d noise %d: "
                                         "leak at sample %d",
                                         ramp, amps[ai], top, rest, noise, i);
                        }
                    }
}

/* One sample (or two in a row) far above the level: never a step, never a crossing. */
static void test_single_spike_never(void **state)
{
    (void)state;
    for (int width = 1; width <= 2; width++)
        for (int at = 5; at < 40; at += 3) {
            hbm_leak_params p;
            hbm_leak_params_default(&p);
            p.threshold_bytes = 30 * HBM_GIB;
            hbm_leak d;
            hbm_leak_init(&d, &p);
            for (int i = 0; i < 200; i++) {
                int64_t x = (i >= at && i < at + width) ? 70 * HBM_GIB : 20 * HBM_GIB;
                const hbm_leak_status *st = hbm_leak_add(&d, i, x, 80 * HBM_GIB);
                assert_false(st->leak);
                assert_int_equal(st->steps, 0);
                assert_false(st->above);
                assert_int_equal(st->events & HBM_LEAK_EV_CROSS_UP, 0);
            }
        }
}

/* Repeated spikes on a staircase do not change when it is reported. */
static void test_spikes_on_staircase(void **state)
{
    (void)state;
    hbm_leak d;
    hbm_leak_init(&d, NULL);
    int reported = -1;
    for (int i = 0; i < 100 && reported < 0; i++) {
        int step = i < 40 ? 0 : (i - 40) / 5 + 1;
        int64_t x = (8 + step) * HBM_GIB;
        if (i % 7 == 3)
            x += 20 * HBM_GIB;
        if (hbm_leak_add(&d, i, x, -1)->leak)
            reported = i;
    }
    assert_in_range(reported, 50, 54); /* during the third step */
}

static void test_threshold_crossing(void **state)
{
    (void)state;
    hbm_leak_params p;
    hbm_leak_params_default(&p);
    p.threshold_ratio = 0.8;
    hbm_leak d;
    hbm_leak_init(&d, &p);
    int up = 0, down = 0;
    const int64_t total = 64 * HBM_GIB;
    for (int i = 0; i < 300; i++) {
        /* Up to 90%, hold, back to 50%, with a little noise around the threshold. */
        double r = i < 100 ? 0.5 : i < 200 ? 0.9 : 0.5;
        int64_t x = (int64_t)(r * (double)total) + (i % 2 ? HBM_MIB : -HBM_MIB);
        const hbm_leak_status *st = hbm_leak_add(&d, i, x, total);
        if (st->events & HBM_LEAK_EV_CROSS_UP) {
            up++;
            assert_in_range(i, 100, 105);
        }
        if (st->events & HBM_LEAK_EV_CROSS_DOWN) {
            down++;
            assert_in_range(i, 200, 205);
        }
    }
    assert_int_equal(up, 1);
    assert_int_equal(down, 1);
}

/* A reported leak stays reported while any step stands and clears once the memory is
 * back at the level before the staircase (e.g. after a restart). */
static void test_leak_clears_on_return(void **state)
{
    (void)state;
    hbm_leak d;
    hbm_leak_init(&d, NULL);
    int64_t x = 10 * HBM_GIB;
    for (int i = 0; i < 40; i++)
        hbm_leak_add(&d, i, x, -1);
    int t = 40;
    for (int s = 0; s < 4; s++) {
        x += HBM_GIB;
        for (int i = 0; i < 6; i++)
            hbm_leak_add(&d, t++, x, -1);
    }
    assert_true(d.st.leak);
    x -= 2 * HBM_GIB; /* back two steps: still leaking */
    for (int i = 0; i < 10; i++)
        hbm_leak_add(&d, t++, x, -1);
    assert_true(d.st.leak);
    assert_int_equal(d.st.steps, 2);
    assert_true(d.st.events == 0 || !(d.st.events & HBM_LEAK_EV_LEAK_CLEAR));
    unsigned seen = 0;
    for (int i = 0; i < 10; i++)
        seen |= hbm_leak_add(&d, t++, 10 * HBM_GIB, -1)->events;
    assert_false(d.st.leak);
    assert_int_equal(d.st.steps, 0);
    assert_true(seen & HBM_LEAK_EV_LEAK_CLEAR);
}

/* Unknown samples are skipped; parameters are clamped. */
static void test_unknown_and_params(void **state)
{
    (void)state;
    hbm_leak_params p;
    hbm_leak_params_default(&p);
    p.window = 1000;
    p.hold = 0;
    p.steps = 0;
    p.noise_k = NAN;
    hbm_leak d;
    hbm_leak_init(&d, &p);
    assert_int_equal(d.p.window, HBM_LEAK_WINDOW_MAX);
    assert_int_equal(d.p.hold, 1);
    assert_int_equal(d.p.steps, 1);
    assert_float_equal(d.p.noise_k, 0.0, 0.0);
    for (int i = 0; i < 40; i++)
        assert_false(hbm_leak_add(&d, i, HBM_UNKNOWN, -1)->ready);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_reported_within_three),
        cmocka_unit_test(test_steps_with_two_percent_noise_low_level),
        cmocka_unit_test(test_report_fields),
        cmocka_unit_test(test_flat_noise_never),
        cmocka_unit_test(test_sawtooth_never),
        cmocka_unit_test(test_single_spike_never),
        cmocka_unit_test(test_spikes_on_staircase),
        cmocka_unit_test(test_threshold_crossing),
        cmocka_unit_test(test_leak_clears_on_return),
        cmocka_unit_test(test_unknown_and_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
