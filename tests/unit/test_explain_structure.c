/* The structure reader (engine, phases, terminal error), the vendors' code tables, pasted
 * text (quote markers, fences, docker JSON records, syslog prefixes) and messages wrapped
 * over two lines, on real fixtures and on members of each class the fixtures do not hold. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "explain_fixture.h"

#define LOGS HBM_SOURCE_DIR "/tests/fixtures/logs"

static void scan_text(const char *text, size_t chunk, hbm_explain_report *rep)
{
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    size_t n = strlen(text);
    for (size_t off = 0; off < n; off += chunk)
        hbm_explain_scanner_feed(s, text + off, n - off < chunk ? n - off : chunk);
    hbm_explain_scanner_finish(s, rep);
    hbm_explain_scanner_free(s);
}

/* A vLLM V1 start-up that fails in the profile run: engine, version, phases in order, the
 * last exception (not the summary after it) and the phase named from the traceback. */
static void test_phases_and_terminal_error(void **state)
{
    (void)state;
    const char *log =
        "(APIServer pid=1) INFO 08-01 10:00:00 [api_server.py:1805] vLLM API server version 0.10.1.1\n"
        "(EngineCore_0 pid=9) INFO 08-01 10:00:05 [gpu_model_runner.py:1953] Starting to load model m...\n"
        "(EngineCore_0 pid=9) INFO 08-01 10:00:09 [gpu_model_runner.py:2007] Model loading took 7.1 GiB\n"
        "(EngineCore_0 pid=9) ERROR 08-01 10:00:10 [core.py:700] EngineCore failed to start.\n"
        "(EngineCore_0 pid=9) ERROR 08-01 10:00:10 [core.py:700] Traceback (most recent call last):\n"
        "(EngineCore_0 pid=9) ERROR 08-01 10:00:10 [core.py:700]   File \"gpu_worker.py\", line 9, in determine_available_memory\n"
        "(EngineCore_0 pid=9) ERROR 08-01 10:00:10 [core.py:700]   File \"gpu_model_runner.py\", line 9, in profile_run\n"
        "(EngineCore_0 pid=9) ERROR 08-01 10:00:10 [core.py:700] AssertionError: expected 3 dims, got 2\n"
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n";
    hbm_explain_report rep;
    scan_text(log, 7, &rep);
    const hbm_explain_structure *st = &rep.structure;
    assert_string_equal(st->engine, "vLLM");
    assert_string_equal(st->version, "0.10.1.1");
    assert_int_equal(st->phase_line[0], 2); /* weights */
    assert_int_equal(st->phase_line[1], 6); /* profile run, from the traceback */
    assert_non_null(st->error);
    assert_string_equal(st->error_kind, "exception");
    assert_string_equal(st->error, "AssertionError: expected 3 dims, got 2");
    assert_int_equal(st->error_line, 8);
    assert_string_equal(hbm_explain_phase_id(st->phase), "profile_run");
    assert_true(hbm_explain_report_failed(&rep));
    const char *const *steps;
    assert_true(hbm_explain_phase_steps(st->phase, &steps) > 0);
    hbm_explain_report_free(&rep);
}

/* Warm-up named from the traceback on an Ascend log; SGLang's own phase lines. */
static void test_other_engines(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_text("INFO 01-01 [platform.py:1] Platform plugin ascend is activated\n"
              "Traceback (most recent call last):\n"
              "  File \"worker.py\", line 3, in compile_or_warm_up_model\n"
              "  File \"model_runner.py\", line 9, in _dummy_sampler_run\n"
              "ZeroDivisionError: division by zero\n",
              64, &rep);
    assert_string_equal(rep.structure.engine, "vllm-ascend");
    assert_string_equal(hbm_explain_phase_id(rep.structure.phase), "warm_up");
    hbm_explain_report_free(&rep);
    /* A path that holds "mindie" is not MindIE (vllm-ascend#1736: user mindieuser); its own
     * lines are. */
    static const char *const engines[][2] = {
        {"  File \"/home/mindieuser/vv/vllm-ascend/vllm_ascend/quantization/w8a8.py\", line 95\n",
         "vllm-ascend"},
        {"[2025-09-29 10:42:08.994+08:00] [378828] [baixin] [system] [server] [Start mindie "
         "server] [success]\n",
         "MindIE"}};
    for (size_t i = 0; i < 2; i++) {
        scan_text(engines[i][0], 64, &rep);
        assert_string_equal(rep.structure.engine, engines[i][1]);
        hbm_explain_report_free(&rep);
    }
    scan_text("[2025-06-12 10:00:00 TP0] Load weight begin. avail mem=78.1 GB\n"
              "server_args=ServerArgs(model_path='m')\n"
              "[2025-06-12 10:00:30 TP0] KV Cache is allocated. #tokens: 1000\n"
              "[2025-06-12 10:00:31 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
              "[2025-06-12 10:00:40 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
              "IndexError: list index out of range\n",
              4096, &rep);
    assert_string_equal(rep.structure.engine, "SGLang");
    assert_string_equal(hbm_explain_phase_id(rep.structure.phase), "graph_capture");
    assert_string_equal(rep.structure.error, "IndexError: list index out of range");
    hbm_explain_report_free(&rep);
}

/* Current vLLM names itself and its version in its start-up banner, or in the V1 engine line. */
static void test_current_vllm(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_text("(APIServer pid=1) INFO 06-19 15:35:00 [api_utils.py:339]        \u2588     \u2588     \u2588\u2584   \u2584\u2588\n"
              "(APIServer pid=1) INFO 06-19 15:35:00 [api_utils.py:339]  \u2584\u2584 \u2584\u2588 \u2588     \u2588     "
              "\u2588 \u2580\u2584\u2580 \u2588  version 0.23.0\n",
              4096, &rep);
    assert_string_equal(rep.structure.engine, "vLLM");
    assert_string_equal(rep.structure.version, "0.23.0");
    hbm_explain_report_free(&rep);
    scan_text("(EngineCore pid=107) INFO 07-06 22:50:46 [core.py:114] Initializing a V1 LLM engine (v0.24.0) "
              "with config: model='m'\n",
              4096, &rep);
    assert_string_equal(rep.structure.engine, "vLLM");
    assert_string_equal(rep.structure.version, "0.24.0");
    hbm_explain_report_free(&rep);
    /* "Starting vLLM server on" replaced "Starting vLLM API server": a later error is the server's. */
    scan_text("(EngineCore pid=7) INFO 08-26 15:04:50 [kv_cache_utils.py:2147] Maximum concurrency for 4,096 "
              "tokens per request: 3.10x\n"
              "(APIServer pid=385) INFO 08-26 15:05:02 [api_server.py:583] Starting vLLM server on "
              "http://0.0.0.0:8019\n"
              "(APIServer pid=385) ERROR 08-26 15:06:00 [serving.py:1] ValueError: bad request state\n",
              4096, &rep);
    assert_string_equal(hbm_explain_phase_id(rep.structure.phase), "serving");
    hbm_explain_report_free(&rep);
}

/* Exit codes and signals when nothing else says how it ended; a clean exit is none. */
static void test_exit_and_signal(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_text("INFO starting\nworker exited with code 137\n", 4096, &rep);
    assert_string_equal(rep.structure.error_kind, "signal");
    assert_int_equal(rep.structure.signal, 9);
    assert_int_equal(rep.structure.exit_code, 137);
    assert_int_equal(rep.structure.error_line, 2);
    hbm_explain_report_free(&rep);
    scan_text("torchrun: exitcode  : -6 (pid: 77)\n", 4096, &rep);
    assert_int_equal(rep.structure.signal, 6);
    hbm_explain_report_free(&rep);
    scan_text("process 12 exited with code 0\nall done\n", 4096, &rep);
    assert_null(rep.structure.error);
    assert_false(hbm_explain_report_failed(&rep));
    hbm_explain_report_free(&rep);
    scan_text("bash: line 1:  4242 Killed                  python3 serve.py\n", 4096, &rep);
    assert_int_equal(rep.structure.signal, 9);
    assert_non_null(find(&rep, "killed_by_kernel"));
    hbm_explain_report_free(&rep);
}

/* Informational lines that name an error type are not errors. */
static void test_quiet_lines(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_text("(APIServer pid=1) INFO 08-01 10:00:00 [x.py:1] ValueError: shown as info\n"
              "WARNING 08-01 [y.py:2] Failed to import from vllm._C with ImportError('x')\n",
              4096, &rep);
    assert_null(rep.structure.error);
    hbm_explain_report_free(&rep);
}

/* A code no signature knows is explained from the vendor's table: exactly, by family, by
 * the vendor's own message; a signature still wins over a table. */
static void test_code_tables(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_text("RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward "
              "compatibility was attempted on non supported HW\n"
              "x: CUDA_ERROR_NO_DEVICE\n"
              "RuntimeError: call aclnnFoo failed, error code is 561000\n"
              "RuntimeError: npu error, error code is 107001\n"
              "EL0002: 2025-01-01-00:00:00 invalid device\n"
              "EH1234: Inner Error! a module this table does not list\n"
              "[ERROR] HCCL(1,python):x [a.cc:1] call trace: hcclRet -> 11\n"
              "MIE05E040000 config check failed\n"
              "RuntimeError: NCCL error in: x.cpp:1, ncclRemoteError: remote process exited\n",
              13, &rep);
    assert_non_null(find(&rep, "cuda_runtime_804"));
    assert_non_null(find(&rep, "cuda_driver_100"));
    assert_non_null(find(&rep, "acl_family_5"));
    assert_non_null(find(&rep, "acl_107001"));
    assert_non_null(find(&rep, "cann_el0002"));
    assert_non_null(find(&rep, "cann_family_e"));
    assert_non_null(find(&rep, "hccl_11"));
    assert_non_null(find(&rep, "mindie_mie05e040000"));
    assert_non_null(find(&rep, "nccl_6"));
    const hbm_explain_num *code = hbm_explain_finding_num(find(&rep, "acl_family_5"), "code");
    assert_non_null(code);
    assert_string_equal(code->text, "561000");
    assert_true(find(&rep, "cuda_runtime_804")->nremedies > 0);
    hbm_explain_report_free(&rep);
    /* A timestamp or a count of six digits is no ACL code. */
    scan_text("INFO processed 207001 requests\n", 4096, &rep);
    assert_int_equal(rep.nfindings, 0);
    hbm_explain_report_free(&rep);
}

/* Pasted and shipped text: the decoration goes, the message is found. */
static void test_paste(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_text("```text\n"
              "> > RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n"
              "```\n"
              "{\"log\":\"OSError: [Errno 98] Address already in use\\n\",\"stream\":\"stderr\"}\n"
              "Aug  3 02:38:39 node1 vllm[1234]: ValueError: Model architectures ['FooForCausalLM'] "
              "are not supported for now.\n",
              5, &rep);
    assert_int_equal(find(&rep, "npu_oom")->line, 2);
    assert_string_equal(find(&rep, "npu_oom")->text,
                        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB");
    assert_int_equal(find(&rep, "address_in_use")->line, 4);
    assert_string_equal(find(&rep, "address_in_use")->text, "OSError: [Errno 98] Address already in use");
    assert_int_equal(find(&rep, "model_arch_unsupported")->line, 5);
    hbm_explain_report_free(&rep);
}

/* Wrapped at a blank (an issue's line length) or inside a word (a terminal's width). */
static void test_wrapped(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scan_text("RuntimeError: NPU out of memory. Tried to allocate\n"
              "    2.00 GiB (NPU 0; 60.97 GiB total capacity)\n",
              3, &rep);
    const hbm_explain_finding *f = find(&rep, "npu_oom");
    assert_non_null(f);
    assert_int_equal(f->line, 1);
    assert_int_equal((long long)hbm_explain_finding_num(f, "want")->value, 2LL << 30);
    hbm_explain_report_free(&rep);
    scan_text("ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cach\n"
              "e is needed, which is larger than the available KV cache memory (4.25 GiB). Based on the avai\n",
              4096, &rep);
    assert_non_null(hbm_explain_finding_num(find(&rep, "vllm_max_seq_len_exceeds_kv"), "available"));
    hbm_explain_report_free(&rep);
    /* Two unrelated lines are not joined into a finding. */
    scan_text("INFO NPU out of\nmemory usage is fine\n", 4096, &rep);
    assert_int_equal(rep.nfindings, 0);
    hbm_explain_report_free(&rep);
}

/* Every failing fixture gives a phase and a terminal error; healthy start-ups give none. */
static void test_every_fixture(void **state)
{
    (void)state;
    const char *dirs[] = {LOGS "/sig", LOGS "/healthy"};
    for (size_t d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        assert_non_null(dir);
        struct dirent *de;
        size_t n = 0;
        while ((de = readdir(dir))) {
            size_t l = strlen(de->d_name);
            if (l < 5 || strcmp(de->d_name + l - 4, ".log") != 0)
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dirs[d], de->d_name);
            hbm_explain_report rep;
            hbm_err err = {{0}};
            assert_int_equal(hbm_explain_scan_path(cat, path, &rep, &err), 0);
            bool errors = false;
            for (size_t i = 0; i < rep.nfindings; i++)
                errors |= strcmp(rep.findings[i].sig->severity, "error") == 0;
            if (d == 1 && (rep.structure.error || rep.nfindings))
                fail_msg("%s: a healthy start-up raised %s", path,
                         rep.structure.error ? rep.structure.error : rep.findings[0].sig->id);
            if (d == 0 && errors && (!rep.structure.error || !rep.structure.error_line))
                fail_msg("%s: failing, but no terminal error", path);
            hbm_explain_report_free(&rep);
            n++;
        }
        closedir(dir);
        assert_true(n > 0);
    }
}

/* A summary's cause: a known failure before it or in the block printed right after it (the
 * real ACL 507008 report: the context-null summary, then the cause two lines below, which
 * is listed first); one printed further away is not its cause, and a summary alone has
 * none. */
static void test_root_cause(void **state)
{
    (void)state;
    hbm_explain_report rep;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/sig/acl_soc_version_507008.log", &rep,
                                           &err),
                     0);
    assert_int_equal(rep.nfindings, 2);
    /* findings are in reading order: the cause first, its summary after it */
    assert_string_equal(rep.findings[0].sig->id, "acl_soc_version_507008");
    assert_true(rep.findings[1].sig->wrapper);
    assert_int_equal(hbm_explain_root_cause(&rep, 1), 0);
    assert_true(hbm_explain_report_known(&rep));
    hbm_explain_report_free(&rep);

    char text[4096] = "EE1001: The argument is invalid.Reason: rtGetDevMsg execute failed, "
                      "reason=[context pointer null]\n";
    for (int i = 0; i < 21; i++)
        strcat(text, "INFO unrelated progress line\n");
    strcat(text, "[Init][Version]init soc version failed, ret = 507008\n");
    scan_text(text, sizeof text, &rep);
    assert_int_equal(rep.nfindings, 2);
    assert_true(rep.findings[0].sig->wrapper);
    assert_int_equal(hbm_explain_root_cause(&rep, 0), -1);
    hbm_explain_report_free(&rep);

    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/sig/ascend_op_inner_error.log", &rep,
                                           &err),
                     0);
    assert_int_equal(rep.nfindings, 1);
    assert_true(rep.findings[0].sig->wrapper);
    assert_int_equal(hbm_explain_root_cause(&rep, 0), -1);
    assert_false(hbm_explain_report_known(&rep));
    hbm_explain_report_free(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phases_and_terminal_error),
        cmocka_unit_test(test_other_engines),
        cmocka_unit_test(test_current_vllm),
        cmocka_unit_test(test_exit_and_signal),
        cmocka_unit_test(test_quiet_lines),
        cmocka_unit_test(test_code_tables),
        cmocka_unit_test(test_paste),
        cmocka_unit_test(test_wrapped),
        cmocka_unit_test(test_every_fixture),
        cmocka_unit_test(test_root_cause),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
