/* Series bookkeeping across observations: one series per device and per device process,
 * history in order, series of vanished processes dropped, a staircase in one process's
 * memory reported for that process only, a recycled pid starting afresh, and memory limits
 * as users write them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/watch.h"

/* Two devices; device 1 has processes 100 and (while with_200) 200. */
static void make_obs(hbm_obs *obs, int64_t mem100, bool with_200)
{
    hbm_obs_init(obs);
    for (int i = 0; i < 2; i++) {
        hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_NVIDIA);
        d->index = i;
        d->chip = 0;
        snprintf(d->name, sizeof d->name, "gpu%d", i);
        d->memory_total_bytes = 80 * HBM_GIB;
        d->memory_used_bytes = (i + 1) * 10 * HBM_GIB;
        d->procs_known = true;
        if (i == 1) {
            hbm_dproc *p = hbm_device_add_proc(d);
            p->pid = 100;
            snprintf(p->name, sizeof p->name, "vllm");
            p->memory_bytes = mem100;
            if (with_200) {
                p = hbm_device_add_proc(d);
                p->pid = 200;
                p->memory_bytes = 2 * HBM_GIB;
            }
        }
    }
}

static void test_series_lifecycle(void **state)
{
    (void)state;
    hbm_watch w;
    hbm_watch_init(&w, NULL);
    hbm_obs obs;
    for (int t = 0; t < 3; t++) {
        make_obs(&obs, (4 + t) * HBM_GIB, t < 2);
        hbm_watch_update(&w, &obs, t);
        hbm_obs_free(&obs);
    }
    assert_int_equal(w.nsamples, 3);
    const hbm_watch_series *d0 = hbm_watch_find(&w, 0, HBM_UNKNOWN);
    assert_non_null(d0);
    assert_string_equal(d0->name, "gpu0");
    assert_int_equal(d0->nhist, 3);
    assert_int_equal(hbm_watch_hist_at(d0, 0), 10 * HBM_GIB);
    assert_int_equal(hbm_watch_hist_at(d0, 3), HBM_UNKNOWN);
    const hbm_watch_series *p100 = hbm_watch_find(&w, 1, 100);
    assert_non_null(p100);
    assert_string_equal(p100->name, "vllm");
    assert_int_equal(hbm_watch_hist_at(p100, 0), 6 * HBM_GIB); /* newest first */
    assert_int_equal(hbm_watch_hist_at(p100, 2), 4 * HBM_GIB);
    assert_null(hbm_watch_find(&w, 1, 200)); /* gone in the third observation */
    assert_null(hbm_watch_find(&w, 0, 100));
    char buf[128];
    assert_non_null(strstr(hbm_watch_describe(d0, buf, sizeof buf), "learning"));
    hbm_watch_free(&w);
}

/* The history ring keeps the newest HBM_WATCH_HISTORY samples. */
static void test_history_wraps(void **state)
{
    (void)state;
    hbm_watch w;
    hbm_watch_init(&w, NULL);
    hbm_obs obs;
    for (int t = 0; t < HBM_WATCH_HISTORY + 10; t++) {
        make_obs(&obs, t * HBM_MIB, false);
        hbm_watch_update(&w, &obs, t);
        hbm_obs_free(&obs);
    }
    const hbm_watch_series *p = hbm_watch_find(&w, 1, 100);
    assert_int_equal(p->nhist, HBM_WATCH_HISTORY);
    assert_int_equal(hbm_watch_hist_at(p, 0), (HBM_WATCH_HISTORY + 9) * HBM_MIB);
    assert_int_equal(hbm_watch_hist_at(p, HBM_WATCH_HISTORY - 1), 10 * HBM_MIB);
    hbm_watch_free(&w);
}

/* A process whose memory climbs in 1 GiB steps while its device's total stays flat
 * (another process shrinks) is reported; the device is not. */
static void test_process_staircase(void **state)
{
    (void)state;
    hbm_watch w;
    hbm_watch_init(&w, NULL);
    hbm_obs obs;
    bool reported = false;
    for (int t = 0; t < 80; t++) {
        int step = t < 40 ? 0 : (t - 40) / 6 + 1;
        make_obs(&obs, (4 + step) * HBM_GIB, false);
        hbm_watch_update(&w, &obs, t);
        hbm_obs_free(&obs);
        const hbm_watch_series *p = hbm_watch_find(&w, 1, 100);
        if (p->det.st.leak && !reported) {
            reported = true;
            assert_true(t < 40 + 3 * 6);
        }
    }
    assert_true(reported);
    assert_false(hbm_watch_find(&w, 1, HBM_UNKNOWN)->det.st.leak);
    char buf[128];
    assert_non_null(strstr(hbm_watch_describe(hbm_watch_find(&w, 1, 100), buf, sizeof buf),
                           "LEAK: grew"));
    hbm_watch_free(&w);
}

/* A pid the host shows with another start time is another process: its series starts
 * afresh instead of inheriting the old one's history and steps. */
static void test_recycled_pid(void **state)
{
    (void)state;
    hbm_watch w;
    hbm_watch_init(&w, NULL);
    hbm_obs obs;
    for (int t = 0; t < 4; t++) {
        make_obs(&obs, 4 * HBM_GIB, false);
        obs.has_host = true;
        obs.host.procs = calloc(1, sizeof *obs.host.procs);
        obs.host.nprocs = 1;
        obs.host.procs[0].pid = 100;
        obs.host.procs[0].starttime = t < 3 ? 5000 : 9000;
        hbm_watch_update(&w, &obs, t);
        const hbm_watch_series *p = hbm_watch_find(&w, 1, 100);
        assert_int_equal(p->nhist, t < 3 ? (size_t)t + 1 : 1);
        assert_int_equal(p->starttime, t < 3 ? 5000 : 9000);
        hbm_obs_free(&obs);
    }
    hbm_watch_free(&w);
}

static void test_parse_limit(void **state)
{
    (void)state;
    int64_t b;
    double r;
    hbm_err err;
    assert_int_equal(hbm_watch_parse_limit("80%", &b, &r, &err), 0);
    assert_true(fabs(r - 0.8) < 1e-9);
    assert_int_equal(b, HBM_UNKNOWN);
    assert_int_equal(hbm_watch_parse_limit("0.75", &b, &r, &err), 0);
    assert_true(fabs(r - 0.75) < 1e-9);
    assert_int_equal(hbm_watch_parse_limit("60GiB", &b, &r, &err), 0);
    assert_int_equal(b, 60 * HBM_GIB);
    assert_true(isnan(r));
    assert_int_equal(hbm_watch_parse_limit("4096", &b, &r, &err), -1);
    assert_non_null(strstr(err.msg, "unit"));
    assert_int_equal(hbm_watch_parse_limit("150%", &b, &r, &err), -1);
    assert_int_equal(hbm_watch_parse_limit("lots", &b, &r, &err), -1);
    assert_int_equal(hbm_watch_parse_limit("", &b, &r, &err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series_lifecycle),
        cmocka_unit_test(test_history_wraps),
        cmocka_unit_test(test_process_staircase),
        cmocka_unit_test(test_recycled_pid),
        cmocka_unit_test(test_parse_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
