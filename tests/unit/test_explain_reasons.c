/* Where the class is right, the reason must be too: an implausible CUDA-graph estimate is
 * named as the problem (its switch first, no "raise the utilization"), a device the log
 * shows shared is freed or changed before the share is raised, a pid the log shows as the
 * server's own worker is never offered as a holder to end, and the sampler's dummy run is
 * placed in the phase its caller names (profile run or warm-up). Real excerpts and
 * variants from tests/fixtures/logs/sig (sources in its expect.tsv), and the sizes around
 * each threshold. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "explain_fixture.h"

#define SIG HBM_SOURCE_DIR "/tests/fixtures/logs/sig/"

static void scan_file(const char *path, hbm_explain_report *rep)
{
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, path, rep, &err), 0);
}

static void scan_text(const char *text, hbm_explain_report *rep)
{
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    hbm_explain_scanner_feed(s, text, strlen(text));
    hbm_explain_scanner_finish(s, rep);
    hbm_explain_scanner_free(s);
}

static const hbm_explain_finding *must(const hbm_explain_report *rep, const char *id)
{
    const hbm_explain_finding *f = find(rep, id);
    if (!f)
        fail_msg("no finding %s", id);
    return f;
}

#define RAISE "raise --gpu-memory-utilization"
#define GRAPH_SWITCH "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0"

static void test_graph_estimate_named(void **state)
{
    (void)state;
    hbm_explain_report rep;
    /* 118.65 GiB, no device total in the excerpt: judged as a size. */
    scan_file(SIG "vllm_no_kv_cache_blocks.graph_estimate.log", &rep);
    const hbm_explain_finding *f = must(&rep, "vllm_no_kv_cache_blocks");
    assert_true(f->nremedies > 0 && strstr(f->remedies[0], GRAPH_SWITCH));
    assert_false(any_contains(f->remedies, f->nremedies, RAISE));
    assert_true(any_contains(f->meaning, f->nmeaning, "118.65 GiB"));
    hbm_explain_report_free(&rep);
    /* 21.40 GiB where vLLM says 0.92 is 0.6524 without it: 27% of the device. */
    scan_file(SIG "vllm_no_kv_cache_blocks.graph_estimate.variant.log", &rep);
    const char *ids[] = {"vllm_no_kv_cache_blocks", "vllm_negative_kv_cache"};
    for (size_t i = 0; i < 2; i++) {
        f = must(&rep, ids[i]);
        assert_true(strstr(f->remedies[0], GRAPH_SWITCH));
        assert_false(any_contains(f->remedies, f->nremedies, "raise --gpu-memory-utilization"));
        assert_true(any_contains(f->meaning, f->nmeaning, "21.40 GiB, 27% of the device"));
    }
    hbm_explain_report_free(&rep);
    /* A real estimate of a healthy size (gpustack/runner#251: 0.36 GiB, 0.82 vs 0.8048) and
     * one under the size bar with no total: the usual order stands. */
    const char *small[] = {
        "(Worker_TP0 pid=447) INFO 08-14 14:07:22 [gpu_model_runner.py:6806] Estimated CUDA graph "
        "memory: 0.36 GiB total\n"
        "(Worker_TP0 pid=447) INFO 08-14 14:07:22 [gpu_worker.py:578] CUDA graph memory profiling "
        "is enabled (default since v0.21.0). The current --gpu-memory-utilization=0.8200 is "
        "equivalent to --gpu-memory-utilization=0.8048 without CUDA graph memory profiling.\n"
        "ValueError: No available memory for the cache blocks.\n",
        "Estimated CUDA graph memory: 31.00 GiB total\n"
        "ValueError: No available memory for the cache blocks.\n",
        "Free memory on device (78.10/79.19 GiB) on startup. Desired GPU memory utilization is "
        "(0.9, 71.27 GiB).\nEstimated CUDA graph memory: 7.50 GiB total\n"
        "ValueError: No available memory for the cache blocks.\n"};
    for (size_t i = 0; i < 3; i++) {
        scan_text(small[i], &rep);
        f = must(&rep, "vllm_no_kv_cache_blocks");
        assert_true(strstr(f->remedies[0], RAISE));
        assert_false(any_contains(f->remedies, f->nremedies, GRAPH_SWITCH));
        hbm_explain_report_free(&rep);
    }
    /* The same 7.50 GiB on a 48 GiB device is 16% of it. */
    scan_text("Free memory on device (47.10/47.38 GiB) on startup.\n"
              "Estimated CUDA graph memory: 7.50 GiB total\n"
              "ValueError: No available memory for the cache blocks.\n", &rep);
    assert_true(strstr(must(&rep, "vllm_no_kv_cache_blocks")->remedies[0], GRAPH_SWITCH));
    hbm_explain_report_free(&rep);
}

static void test_shared_device_first(void **state)
{
    (void)state;
    /* 68.01 of 79.15 GiB in use before this server (the real excerpt), 40.05 of 79.19 GiB
     * free at its start (the variant): free or change the device first, and its share is
     * what was free, never "raise". */
    static const struct {
        const char *file, *share, *meaning;
    } cases[] = {
        {SIG "vllm_no_kv_cache_blocks.shared_device.log", "at 0.14 or less",
         "68.01 GiB of 79.15 GiB"},
        {SIG "vllm_no_kv_cache_blocks.shared_device.variant.log", "at 0.50 or less",
         "only 40.05 GiB of 79.19 GiB was free"},
    };
    hbm_explain_report rep;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scan_file(cases[i].file, &rep);
        const hbm_explain_finding *f = must(&rep, "vllm_no_kv_cache_blocks");
        assert_true(strstr(f->remedies[0], "Free the device or pick another"));
        assert_true(strstr(f->remedies[1], cases[i].share));
        assert_false(any_contains(f->remedies, f->nremedies, RAISE));
        assert_true(any_contains(f->meaning, f->nmeaning, cases[i].meaning));
        hbm_explain_report_free(&rep);
    }
    /* The context checks offer the same choice where they offered "raise". */
    scan_text("Free memory on device (40.05/79.19 GiB) on startup. Desired GPU memory utilization "
              "is (0.4, 31.68 GiB).\n"
              "ValueError: To serve at least one request with the models's max seq len (131072), "
              "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
              "(0.71 GiB).\n"
              "Maximum concurrency for 29000 tokens per request: 0.82x\n", &rep);
    const char *ctx[] = {"vllm_max_seq_len_exceeds_kv", "vllm_concurrency_below_one"};
    for (size_t i = 0; i < 2; i++) {
        const hbm_explain_finding *f = must(&rep, ctx[i]);
        assert_true(any_contains(f->remedies, f->nremedies, "free it or pick another"));
        assert_false(any_contains(f->remedies, f->nremedies, "raise --gpu-memory-utilization"));
    }
    hbm_explain_report_free(&rep);
    /* Under a GiB held (this process's own CUDA context) is no other server. */
    scan_text("Memory profiling results: total_gpu_memory=79.15GiB initial_memory_usage=0.62GiB "
              "peak_torch_memory=10.77GiB\nValueError: No available memory for the cache blocks.\n",
              &rep);
    const hbm_explain_finding *f = must(&rep, "vllm_no_kv_cache_blocks");
    assert_true(strstr(f->remedies[0], RAISE));
    assert_false(any_contains(f->remedies, f->nremedies, "pick another"));
    hbm_explain_report_free(&rep);
}

static void test_own_worker_not_a_holder(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_file(SIG "cuda_oom.own_worker.variant.log", &rep);
    const hbm_explain_finding *f = must(&rep, "cuda_oom");
    assert_true(any_contains(f->meaning, f->nmeaning, "this server's own VllmWorker rank=1"));
    assert_true(strstr(f->remedies[0], "Do not end pid 2978"));
    assert_false(any_contains(f->remedies, f->nremedies, "end the holder"));
    assert_false(any_contains(f->meaning, f->nmeaning, "see whether that is this server"));
    const hbm_explain_proc *p = hbm_explain_report_proc(&rep, 2978);
    assert_non_null(p);
    assert_string_equal(p->name, "VllmWorker rank=1");
    json_t *j = hbm_explain_report_json(&rep);
    json_t *procs = json_object_get(j, "server_processes");
    assert_int_equal(json_array_size(procs), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(procs, 0), "pid")), 2978);
    json_decref(j);
    hbm_explain_report_free(&rep);
    /* The same message from a pid the log does not name (another container's, a host pid):
     * it may be a holder to find. */
    scan_file(SIG "cuda_oom.variant.log", &rep);
    f = must(&rep, "cuda_oom");
    assert_true(strstr(f->remedies[0], "find and end the holder"));
    assert_true(any_contains(f->meaning, f->nmeaning, "see whether that is this server"));
    assert_int_equal(rep.nprocs, 0);
    hbm_explain_report_free(&rep);
    /* Nested prefixes name both processes; text that only looks like one names none. */
    scan_text("(APIServer pid=1) (EngineCore_DP0 pid=68) ERROR x [core.py:1] failed\n"
              "(pid=5) ERROR x\n(Worker pid=) ERROR x\n", &rep);
    assert_int_equal(rep.nprocs, 2);
    assert_string_equal(hbm_explain_report_proc(&rep, 68)->name, "EngineCore_DP0");
    assert_non_null(hbm_explain_report_proc(&rep, 1));
    assert_null(hbm_explain_report_proc(&rep, 5));
    hbm_explain_report_free(&rep);
}

static const char *finding_phase(const char *log, const char *id)
{
    hbm_explain_report rep;
    scan_text(log, &rep);
    static char out[32];
    snprintf(out, sizeof out, "%s", hbm_explain_phase_id(must(&rep, id)->phase));
    hbm_explain_report_free(&rep);
    return out;
}

#define TB "(Worker pid=226322) ERROR 10-25 13:12:42 [multiproc_executor.py:671] "
#define SAMPLER_OOM TB "RuntimeError: CUDA out of memory occurred when warming up sampler with " \
    "1024 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when " \
    "initializing the engine.\n"

static void test_sampler_phase_from_caller(void **state)
{
    (void)state;
    /* The same message from the profile run (vLLM PR #14728) and from the warm-up. */
    assert_string_equal(finding_phase(TB "Traceback (most recent call last):\n"
                                      TB "  File \"gpu_worker.py\", line 9, in determine_available_memory\n"
                                      TB "  File \"gpu_model_runner.py\", line 9, in profile_run\n"
                                      TB "  File \"gpu_model_runner.py\", line 9, in _dummy_sampler_run\n"
                                      SAMPLER_OOM,
                                      "vllm_sampler_warmup_oom"),
                        "profile_run");
    assert_string_equal(finding_phase(TB "Traceback (most recent call last):\n"
                                      TB "  File \"gpu_worker.py\", line 9, in compile_or_warm_up_model\n"
                                      TB "    self.model_runner._dummy_sampler_run(\n"
                                      TB "  File \"gpu_model_runner.py\", line 9, in _dummy_sampler_run\n"
                                      SAMPLER_OOM,
                                      "vllm_sampler_warmup_oom"),
                        "warm_up");
    /* No frames: after the KV cache was sized it is the warm-up, before it the profile run. */
    assert_string_equal(finding_phase("(EngineCore_DP0 pid=270) INFO 11-19 12:16:30 "
                                      "[gpu_worker.py:298] Available KV cache memory: 18.41 GiB\n"
                                      SAMPLER_OOM, "vllm_sampler_warmup_oom"),
                        "warm_up");
    assert_string_equal(finding_phase(SAMPLER_OOM, "vllm_sampler_warmup_oom"), "profile_run");
    /* MindIE names its warm-up in the failing line itself (the real excerpt). */
    hbm_explain_report rep;
    scan_file(SIG "mindie_warmup_oom.log", &rep);
    assert_string_equal(hbm_explain_phase_id(must(&rep, "mindie_warmup_oom")->phase), "warm_up");
    hbm_explain_report_free(&rep);
    /* A plain OOM under the profile run's sampler is the profile run's too. */
    assert_string_equal(finding_phase(TB "  File \"a.py\", line 9, in profile_run\n"
                                      TB "  File \"a.py\", line 9, in _dummy_sampler_run\n"
                                      TB "torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                      "allocate 4.00 GiB.\n", "cuda_oom"),
                        "profile_run");
}

/* known() is the one function an unknown number does not make unknown. */
/* A generic CANN code ("E69999: Inner Error!") is explained by what its block's next line
 * says failed: the top finding carries it, from the code on, without CANN's decoration. */
static void test_code_detail(void **state)
{
    (void)state;
    static const struct {
        const char *file, *detail;
        uint64_t line;
    } cases[] = {
        {SIG "cann_family_ex9.log", "op[QuantBatchMatmulV3], this platform only support output "
                                    "transpose_x1 false and transpose_x2 true, actual [false, false]", 6},
        {SIG "cann_family_ex9.variant.log", "op[GroupedMatmul], this platform only support weight "
                                            "format ND, actual [FRACTAL_NZ]", 3},
        /* after ACL's 500001 (a summary of its own): the E-code's block is the cause */
        {SIG "cann_family_ex9.soc.log", "[Init][PlatformInfo]init runtime platform info failed, "
                                        "SocVersion = Ascend910B2", 6},
        {SIG "cann_family_ex9.soc.variant.log", "[Init][PlatformInfo]init runtime platform info "
                                                "failed, SocVersion = Ascend910_9392", 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hbm_explain_report rep;
        scan_file(cases[i].file, &rep);
        assert_true(rep.nfindings > 0);
        const hbm_explain_finding *f = &rep.findings[0];
        if (strcmp(f->sig->id, "cann_family_ex9") != 0 || !f->detail ||
            strcmp(f->detail, cases[i].detail) != 0 || f->detail_line != cases[i].line)
            fail_msg("%s: top %s, detail '%s' at %llu", cases[i].file, f->sig->id,
                     f->detail ? f->detail : "(none)", (unsigned long long)f->detail_line);
        hbm_explain_report_free(&rep);
    }
    hbm_explain_report rep;
    /* An indented line under the code, as in MindSpore's EE9999 block. */
    scan_file(SIG "cann_driver_oom.log", &rep);
    assert_string_equal(must(&rep, "cann_ee9999")->detail,
                        "[driver interface] halMemAlloc failed: device_id=6, size=32212254720, "
                        "type=2, env_type=3, drvRetCode=6!");
    hbm_explain_report_free(&rep);
    /* The code's own line says it (vllm-ascend#4859's form). */
    scan_text("EZ9999[PID: 3473945] 2025-12-10-10:52:09.632.838 AclNN_Inner_Error(EZ9999):  "
              "Parse dynamic kernel config fail.\n        TraceBack (most recent call last):\n",
              &rep);
    assert_string_equal(must(&rep, "cann_ez9999")->detail, "Parse dynamic kernel config fail.");
    assert_int_equal(must(&rep, "cann_ez9999")->detail_line, 1);
    hbm_explain_report_free(&rep);
    /* A line that neither names the code nor is indented under it is another message, and
     * four lines of "see below" are all the block may take. */
    scan_text("EE9999: Inner Error!\nTraceback (most recent call last):\n  File \"a.py\", line 3\n",
              &rep);
    assert_null(must(&rep, "cann_ee9999")->detail);
    hbm_explain_report_free(&rep);
    scan_text("EE9999: Inner Error!\nEE9999: Inner Error!\nEE9999: Inner Error!\n"
              "EE9999: Inner Error!\nEE9999: Inner Error!\n        rtMalloc failed\n",
              &rep);
    assert_null(must(&rep, "cann_ee9999")->detail);
    hbm_explain_report_free(&rep);
    /* A detail line with no keyword and no error word is read all the same. */
    scan_text("EZ9999: Inner Error!\n        op[Cast], this platform supports only ND\n", &rep);
    assert_string_equal(must(&rep, "cann_ez9999")->detail, "op[Cast], this platform supports only ND");
    hbm_explain_report_free(&rep);
    /* A credential in the detail is redacted like every excerpt. */
    scan_text("E19999: Inner Error!\n        download failed: https://u:secret@example.com/x\n",
              &rep);
    assert_non_null(rep.findings[0].detail);
    assert_null(strstr(rep.findings[0].detail, "secret"));
    hbm_explain_report_free(&rep);
}

static bool no_names(void *ctx, const char *name, double *value, const char **text)
{
    (void)ctx;
    *value = strcmp(name, "x") == 0 ? 2.0 : NAN;
    *text = NULL;
    return strcmp(name, "x") == 0 || strcmp(name, "y") == 0;
}

static void test_known(void **state)
{
    (void)state;
    hbm_err err = {{0}};
    double v;
    assert_int_equal(hbm_explain_eval("known(x)", no_names, NULL, &v, &err), 0);
    assert_true(v == 1.0);
    assert_int_equal(hbm_explain_eval("known(y)", no_names, NULL, &v, &err), 0);
    assert_true(v == 0.0);
    assert_int_equal(hbm_explain_eval("known(y) && y > 1 || !known(y) && x > 1", no_names, NULL,
                                      &v, &err), 0);
    assert_true(v == 1.0);
    assert_int_equal(hbm_explain_eval("y > 1", no_names, NULL, &v, &err), 0);
    assert_true(isnan(v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_estimate_named),
        cmocka_unit_test(test_shared_device_first),
        cmocka_unit_test(test_own_worker_not_a_holder),
        cmocka_unit_test(test_sampler_phase_from_caller),
        cmocka_unit_test(test_known),
        cmocka_unit_test(test_code_detail),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
