/* The probe's checks on built observations: which result wins and which detail explains it,
 * health and memory against a share and a size (and when neither can be judged), devices
 * asked for that are not there, an unusable URL, a server's progress judged; then the
 * node-problem-detector checks: each one's hit and its line, several hits, the first line
 * of a failed observation, the leak staircase through a history file, and the cut at 80
 * bytes on a character boundary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "hbm/probe.h"
#include "hbm/util.h"

static hbm_device *npu(hbm_obs *obs, int id, int64_t used_gib)
{
    hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
    d->index = id;
    d->logic_id = id;
    d->healthy = true;
    snprintf(d->health, sizeof d->health, "OK");
    snprintf(d->name, sizeof d->name, "910B3");
    d->memory_total_bytes = 64 * HBM_GIB;
    d->memory_used_bytes = used_gib * HBM_GIB;
    d->verdict = HBM_VERDICT_FREE;
    return d;
}

static hbm_dproc *orphan(hbm_device *d, int pid, const char *name, const char *pod)
{
    hbm_dproc *p = hbm_device_add_proc(d);
    p->pid = pid;
    p->memory_bytes = 20 * HBM_GIB;
    p->state = HBM_PID_ABANDONED;
    snprintf(p->name, sizeof p->name, "%s", name);
    if (pod) {
        snprintf(p->pod.ns, sizeof p->pod.ns, "ml");
        snprintf(p->pod.name, sizeof p->pod.name, "%s", pod);
    }
    d->verdict = HBM_VERDICT_ORPHANED;
    return p;
}

/* The i-th check's field as a string ("" when absent). */
static const char *field(const hbm_probe *p, size_t i, const char *key)
{
    const char *s = json_string_value(json_object_get(json_array_get(p->checks, i), key));
    return s ? s : "";
}

static void test_worst_and_reason(void **state)
{
    (void)state;
    hbm_probe p;
    hbm_probe_init(&p);
    hbm_probe_record(&p, "a", HBM_PROBE_OK, NULL, "fine %d", 1);
    hbm_probe_record(&p, "b", HBM_PROBE_OK, NULL, "fine %d", 2);
    assert_int_equal(p.worst, HBM_PROBE_OK);
    assert_string_equal(hbm_probe_reason(&p), "fine 1; fine 2");
    hbm_probe_record(&p, "c", HBM_PROBE_UNKNOWN, NULL, "cannot tell");
    assert_int_equal(p.worst, HBM_PROBE_UNKNOWN);
    hbm_probe_record(&p, "d", HBM_PROBE_BAD, NULL, "broken");
    hbm_probe_record(&p, "e", HBM_PROBE_BAD, NULL, "broken too");
    hbm_probe_record(&p, "f", HBM_PROBE_UNKNOWN, NULL, "cannot tell either");
    /* unhealthy beats could-not-check; the first unhealthy check explains it */
    assert_int_equal(p.worst, HBM_PROBE_BAD);
    assert_string_equal(hbm_probe_reason(&p), "broken");
    assert_string_equal(field(&p, 3, "result"), "unhealthy");
    assert_string_equal(field(&p, 2, "result"), "unknown");
    assert_true(json_is_false(json_object_get(json_array_get(p.checks, 3), "ok")));
    json_t *j = hbm_probe_json(&p);
    assert_null(p.checks);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "unhealthy");
    assert_int_equal(json_integer_value(json_object_get(j, "exit")), 1);
    assert_int_equal(json_array_size(json_object_get(j, "checks")), 6);
    json_decref(j);
    hbm_probe_free(&p);
}

static void test_oks_cut(void **state)
{
    (void)state;
    hbm_probe p;
    hbm_probe_init(&p);
    char long_detail[300];
    memset(long_detail, 'x', sizeof long_detail - 1);
    long_detail[sizeof long_detail - 1] = '\0';
    for (int i = 0; i < 3; i++)
        hbm_probe_record(&p, "a", HBM_PROBE_OK, NULL, "%s", long_detail);
    assert_int_equal(strlen(hbm_probe_reason(&p)), sizeof p.oks - 1);
    assert_memory_equal(p.oks + 299, "; x", 3);
    hbm_probe_free(&p);
}

static void test_devices_memory(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    npu(&obs, 0, 40);
    npu(&obs, 1, 8);
    hbm_err err = {{0}};
    hbm_probe p;
    hbm_probe_init(&p);
    hbm_probe_devices(&p, &obs, true, &err, NULL, 0, (hbm_probe_limit){HBM_UNKNOWN, 0.5});
    assert_int_equal(p.worst, HBM_PROBE_BAD);
    assert_string_equal(hbm_probe_reason(&p),
                        "device 0 memory 40.00 GiB of 64.00 GiB (62.5%) above --max-mem 50%");
    assert_int_equal(json_array_size(p.checks), 4); /* health, max-mem per device */
    assert_string_equal(field(&p, 3, "detail"),
                        "device 1 memory 8.00 GiB of 64.00 GiB (12.5%) within --max-mem 50%");
    assert_true(json_real_value(json_object_get(json_array_get(p.checks, 1), "used_ratio")) ==
                0.625);
    hbm_probe_free(&p);

    /* a size: the limit in bytes, no ratio */
    hbm_probe_init(&p);
    int64_t ids[] = {1};
    hbm_probe_devices(&p, &obs, true, &err, ids, 1, (hbm_probe_limit){10 * HBM_GIB, NAN});
    assert_int_equal(p.worst, HBM_PROBE_OK);
    assert_string_equal(hbm_probe_reason(&p), "device 1 health OK; device 1 memory 8.00 GiB "
                                              "of 64.00 GiB within --max-mem 10.00 GiB");
    json_t *c = json_array_get(p.checks, 1);
    assert_int_equal(json_integer_value(json_object_get(c, "limit_bytes")), 10 * HBM_GIB);
    assert_null(json_object_get(c, "used_ratio"));
    hbm_probe_free(&p);

    /* neither: health alone */
    hbm_probe_init(&p);
    hbm_probe_devices(&p, &obs, true, &err, NULL, 0, (hbm_probe_limit){HBM_UNKNOWN, NAN});
    assert_int_equal(json_array_size(p.checks), 2);
    assert_string_equal(hbm_probe_reason(&p), "device 0 health OK; device 1 health OK");
    hbm_probe_free(&p);
    hbm_obs_free(&obs);
}

static void test_devices_unknowns(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_device *d0 = npu(&obs, 0, 40);
    hbm_device *d1 = npu(&obs, 1, 8);
    d0->memory_used_bytes = HBM_UNKNOWN;
    d1->memory_total_bytes = HBM_UNKNOWN;
    hbm_err err = {{0}};
    hbm_probe p;
    hbm_probe_init(&p);
    hbm_probe_devices(&p, &obs, true, &err, NULL, 0, (hbm_probe_limit){HBM_UNKNOWN, 0.5});
    assert_int_equal(p.worst, HBM_PROBE_UNKNOWN);
    assert_string_equal(hbm_probe_reason(&p), "device 0 does not report its memory use");
    assert_string_equal(field(&p, 3, "detail"), "device 1 does not report its memory total; "
                                                "give --max-mem as a size");
    assert_true(json_is_null(json_object_get(json_array_get(p.checks, 1), "memory_used_bytes")));
    hbm_probe_free(&p);

    /* an unhealthy device beats one not found; its vendor word is quoted */
    snprintf(d1->health, sizeof d1->health, "Alarm");
    d1->healthy = false;
    int64_t ids[] = {7, 1};
    hbm_probe_init(&p);
    hbm_probe_devices(&p, &obs, true, &err, ids, 2, (hbm_probe_limit){HBM_UNKNOWN, NAN});
    assert_string_equal(field(&p, 0, "detail"),
                        "device 7 not found (2 devices; ids are logic ids on Ascend, indexes on "
                        "NVIDIA)");
    assert_int_equal(p.worst, HBM_PROBE_BAD);
    assert_string_equal(hbm_probe_reason(&p), "device 1 (910B3) health is Alarm");
    hbm_probe_free(&p);
    hbm_obs_free(&obs);

    /* nothing to check: no device, or no observation */
    hbm_obs_init(&obs);
    snprintf(obs.backend, sizeof obs.backend, "nvml");
    hbm_probe_init(&p);
    hbm_probe_devices(&p, &obs, true, &err, NULL, 0, (hbm_probe_limit){HBM_UNKNOWN, NAN});
    assert_string_equal(hbm_probe_reason(&p), "no device found (backend nvml)");
    hbm_probe_free(&p);
    hbm_err_set(&err, "driver hung");
    hbm_probe_init(&p);
    hbm_probe_devices(&p, &obs, false, &err, NULL, 0, (hbm_probe_limit){HBM_UNKNOWN, NAN});
    assert_int_equal(p.worst, HBM_PROBE_UNKNOWN);
    assert_string_equal(hbm_probe_reason(&p), "driver hung");
    assert_string_equal(field(&p, 0, "check"), "devices");
    hbm_probe_free(&p);
    hbm_obs_free(&obs);
}

static void test_url_unusable(void **state)
{
    (void)state;
    hbm_probe p;
    hbm_probe_init(&p);
    hbm_probe_url(&p, "notascheme://x", 1);
    /* a URL that cannot be used is could-not-check, not unhealthy */
    assert_int_equal(p.worst, HBM_PROBE_UNKNOWN);
    assert_string_equal(field(&p, 0, "check"), "http");
    assert_string_equal(field(&p, 0, "url"), "notascheme://x");
    hbm_probe_free(&p);
}

/* One vLLM sample with these gauges and tokens, judged at t with a 10 s stall. */
static void sample(hbm_progress *track, int running, double tokens, double t)
{
    char page[300];
    snprintf(page, sizeof page,
             "vllm:num_requests_running{model_name=\"m\"} %d\n"
             "vllm:num_requests_waiting{model_name=\"m\"} 0\n"
             "vllm:generation_tokens_total{model_name=\"m\"} %g\n", running, tokens);
    hbm_progress s;
    hbm_err err = {{0}};
    assert_int_equal(hbm_progress_read(page, strlen(page), "page", &s, &err), 0);
    hbm_progress_judge(track, &s, t, 10);
}

/* The progress check's result on track, and its state word. */
static hbm_probe_result judged(const hbm_progress *track, char *word, size_t n)
{
    hbm_probe p;
    hbm_probe_init(&p);
    json_t *c = json_object();
    json_object_set_new(c, "url", json_string("http://h/metrics"));
    hbm_probe_progress_judged(&p, c, track);
    snprintf(word, n, "%s", field(&p, 0, "state"));
    hbm_probe_result r = p.worst;
    hbm_probe_free(&p);
    return r;
}

static void test_progress(void **state)
{
    (void)state;
    char word[32];
    hbm_progress tr;
    hbm_progress_init(&tr);
    assert_int_equal(judged(&tr, word, sizeof word), HBM_PROBE_UNKNOWN); /* no engine */
    assert_string_equal(word, "unknown");
    sample(&tr, 3, 100, 1000);
    assert_int_equal(judged(&tr, word, sizeof word), HBM_PROBE_OK); /* a first sample */
    sample(&tr, 3, 150, 1005);
    assert_int_equal(judged(&tr, word, sizeof word), HBM_PROBE_OK);
    assert_string_equal(word, "progressing");
    sample(&tr, 3, 150, 1020);
    assert_int_equal(judged(&tr, word, sizeof word), HBM_PROBE_BAD);
    assert_string_equal(word, "stalled");
    hbm_progress_free(&tr);
}

/* ---- node-problem-detector ---- */

static hbm_probe_result npd(hbm_npd_check c, hbm_obs *obs, char *line, size_t n)
{
    hbm_err err = {{0}};
    return hbm_npd_run(c, obs, true, &err, NULL, line, n);
}

static void test_npd_checks(void **state)
{
    (void)state;
    char line[700];
    hbm_obs obs;
    hbm_obs_init(&obs);
    npu(&obs, 0, 3);
    hbm_device *d1 = npu(&obs, 1, 30);
    hbm_device *d2 = npu(&obs, 2, 30);
    for (int c = HBM_NPD_ORPHANED; c <= HBM_NPD_UNHEALTHY; c++) {
        assert_int_equal(npd(c, &obs, line, sizeof line), HBM_PROBE_OK);
        char want[64];
        snprintf(want, sizeof want, "ok: 3 devices, none %s", hbm_npd_names[c]);
        assert_string_equal(line, want);
    }
    orphan(d1, 4242, "python3", "vllm-0");
    orphan(d2, 4343, "", NULL);
    assert_int_equal(npd(HBM_NPD_ORPHANED, &obs, line, sizeof line), HBM_PROBE_BAD);
    assert_string_equal(line, "NPU 1 ORPHANED (+1 more): abandoned pid 4242 pod ml/vllm-0 "
                              "holds 20.00 GiB");
    d1->verdict = HBM_VERDICT_BUSY;
    assert_int_equal(npd(HBM_NPD_ORPHANED, &obs, line, sizeof line), HBM_PROBE_BAD);
    assert_string_equal(line, "NPU 2 ORPHANED: abandoned pid 4343 (?) holds 20.00 GiB");
    d2->procs[0].state = HBM_PID_LIVE;
    assert_int_equal(npd(HBM_NPD_ORPHANED, &obs, line, sizeof line), HBM_PROBE_BAD);
    assert_string_equal(line, "NPU 2 ORPHANED: held by a process that is gone");

    d2->verdict = HBM_VERDICT_UNACCOUNTED;
    d2->unaccounted_bytes = 27 * HBM_GIB;
    assert_int_equal(npd(HBM_NPD_UNACCOUNTED, &obs, line, sizeof line), HBM_PROBE_BAD);
    assert_string_equal(line, "NPU 2 UNACCOUNTED: 27.00 GiB held by no process");

    /* unhealthy by the driver's word even where the verdict says otherwise */
    d1->healthy = false;
    d1->health[0] = '\0';
    d1->vendor = HBM_VENDOR_NVIDIA;
    assert_int_equal(npd(HBM_NPD_UNHEALTHY, &obs, line, sizeof line), HBM_PROBE_BAD);
    assert_string_equal(line, "GPU 1 BUSY: health not OK");
    hbm_obs_free(&obs);

    assert_true(hbm_npd_needs_host(HBM_NPD_ORPHANED));
    assert_true(hbm_npd_needs_host(HBM_NPD_UNACCOUNTED));
    assert_false(hbm_npd_needs_host(HBM_NPD_UNHEALTHY));
    assert_false(hbm_npd_needs_host(HBM_NPD_LEAKING));
}

static void test_npd_unknown(void **state)
{
    (void)state;
    char line[700];
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_err err = {{0}};
    assert_int_equal(hbm_npd_run(HBM_NPD_ORPHANED, &obs, true, &err, NULL, line, sizeof line),
                     HBM_PROBE_UNKNOWN);
    assert_string_equal(line, "unknown: no device found");
    hbm_err_set(&err, "dcmi: dcmi_init did not return within 5s");
    assert_int_equal(hbm_npd_run(HBM_NPD_UNHEALTHY, &obs, false, &err, NULL, line, sizeof line),
                     HBM_PROBE_UNKNOWN);
    assert_string_equal(line, "unknown: dcmi: dcmi_init did not return within 5s");
    hbm_obs_free(&obs);

    hbm_probe_progress_opts po = {.state_file = "/nonexistent/state.json", .stall = 60,
                                  .timeout = 1};
    assert_int_equal(hbm_npd_stalled(&po, line, sizeof line), HBM_PROBE_UNKNOWN);
    assert_string_equal(line, "unknown: --npd stalled needs --metrics-url");
    po.url = "notascheme://x";
    assert_int_equal(hbm_npd_stalled(&po, line, sizeof line), HBM_PROBE_UNKNOWN);
    assert_memory_equal(line, "unknown: ", 9);
}

/* Flat memory for 32 runs, then 4 steps of 2 GiB held 6 runs each: a leak on device 0,
 * judged through the history file the runs share. */
static void test_npd_leaking(void **state)
{
    (void)state;
    char dir[64], path[128], line[700];
    assert_int_equal(th_mkdtemp(dir, sizeof dir, "npd"), 0);
    th_path(path, sizeof path, dir, "history.json");
    hbm_probe_result r = HBM_PROBE_UNKNOWN;
    for (int k = 0; k < 56; k++) {
        hbm_obs obs;
        hbm_obs_init(&obs);
        int step = k < 32 ? 0 : (k - 32) / 6 + 1;
        npu(&obs, 0, 10 + 2 * step);
        npu(&obs, 1, 10);
        obs.captured_at = 1e9 + 30 * k;
        hbm_err err = {{0}};
        r = hbm_npd_run(HBM_NPD_LEAKING, &obs, true, &err, path, line, sizeof line);
        if (k == 31) {
            assert_int_equal(r, HBM_PROBE_OK);
            assert_string_equal(line, "ok: 2 devices, none leaking");
        }
        hbm_obs_free(&obs);
    }
    assert_int_equal(r, HBM_PROBE_BAD);
    assert_string_equal(line, "NPU 0 LEAK: memory grew 8.00 GiB in 4 steps");

    /* a history that cannot be read is Unknown, naming the file */
    th_write_text(dir, "history.json", "{\"schema\": \"hbmctl.history/1\", \"devices\": 7}");
    hbm_obs obs;
    hbm_obs_init(&obs);
    npu(&obs, 0, 10);
    hbm_err err = {{0}};
    assert_int_equal(hbm_npd_run(HBM_NPD_LEAKING, &obs, true, &err, path, line, sizeof line),
                     HBM_PROBE_UNKNOWN);
    assert_non_null(strstr(line, "history.json"));
    assert_memory_equal(line, "unknown: ", 9);
    hbm_obs_free(&obs);
    assert_int_equal(th_rmtree(dir), 0);
}

static void test_npd_fit(void **state)
{
    (void)state;
    char line[200];
    assert_int_equal(hbm_npd_fit("ok: 1 device, none orphaned"), 27);
    memset(line, 'a', 100);
    line[100] = '\0';
    assert_int_equal(hbm_npd_fit(line), HBM_NPD_LINE_MAX);
    /* "é" (2 bytes) at bytes 79-80 would be cut in half: the cut moves before it */
    memset(line, 'a', 79);
    snprintf(line + 79, sizeof line - 79, "\xc3\xa9 and more");
    assert_int_equal(hbm_npd_fit(line), 79);
    memset(line, 'a', 78);
    snprintf(line + 78, sizeof line - 78, "\xc3\xa9 and more");
    assert_int_equal(hbm_npd_fit(line), 80);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worst_and_reason), cmocka_unit_test(test_oks_cut),
        cmocka_unit_test(test_devices_memory),   cmocka_unit_test(test_devices_unknowns),
        cmocka_unit_test(test_url_unusable),     cmocka_unit_test(test_progress),
        cmocka_unit_test(test_npd_checks),       cmocka_unit_test(test_npd_unknown),
        cmocka_unit_test(test_npd_leaking),      cmocka_unit_test(test_npd_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
