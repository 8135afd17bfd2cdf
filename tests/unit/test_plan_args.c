/* Serving flags read from real vLLM command lines, and the device table. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/plan.h"

static void test_vllm_serve_line(void **state)
{
    (void)state;
    /* the openPangu serve script's shape, with both spellings and --flag=value */
    char *argv[] = {"vllm", "serve", "/home/models/openPangu-72B", "--served-model-name", "pangu",
                    "--tensor-parallel-size", "4", "--gpu_memory_utilization", "0.85",
                    "--max-model-len=131072", "--max-num-seqs", "32", "--block-size", "128",
                    "--enable-expert-parallel", "--compilation_config",
                    "{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}", "--max_num_batched_tokens",
                    "8192", "--kv-cache-dtype", "fp8", "--enforce-eager", "--port", "8000"};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, (int)(sizeof argv / sizeof argv[0]), argv, &err), 0);
    assert_string_equal(in.model_path, "/home/models/openPangu-72B");
    assert_int_equal(in.tensor_parallel_size, 4);
    assert_true(fabs(in.gpu_memory_utilization - 0.85) < 1e-12);
    assert_int_equal(in.max_model_len, 131072);
    assert_int_equal(in.max_num_seqs, 32);
    assert_int_equal(in.block_size, 128);
    assert_int_equal(in.max_num_batched_tokens, 8192);
    assert_string_equal(in.kv_cache_dtype, "fp8");
    assert_int_equal(in.enforce_eager, 1);
    assert_int_equal(in.pipeline_parallel_size, -1);
}

static void test_api_server_and_errors(void **state)
{
    (void)state;
    char *argv[] = {"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-8B",
                    "--max-model-len", "32k", "--kv-cache-memory-bytes", "8GiB", "-tp", "2"};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 11, argv, &err), 0);
    assert_string_equal(in.model_path, "Qwen/Qwen3-8B");
    assert_int_equal(in.max_model_len, 32000);
    assert_int_equal(in.kv_cache_memory_bytes, 8LL << 30);
    assert_int_equal(in.tensor_parallel_size, 2);

    char *bad[] = {"vllm", "serve", "m", "--gpu-memory-utilization", "1.5"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, bad, &err), -1);
    assert_non_null(strstr(err.msg, "--gpu-memory-utilization"));
    char *bad2[] = {"vllm", "serve", "m", "--max-num-seqs"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 4, bad2, &err), -1);
    assert_non_null(strstr(err.msg, "needs a value"));
    char *bad3[] = {"vllm", "serve", "m", "--tensor-parallel-size", "two"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, bad3, &err), -1);
    /* read, not skipped: vLLM allocates these blocks in place of the budget's */
    char *ovr[] = {"vllm", "serve", "m", "--num-gpu-blocks-override", "1024"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, ovr, &err), 0);
    assert_int_equal(in.num_gpu_blocks_override, 1024);
    assert_int_equal(in.nunmodelled, 0);
    char *bad4[] = {"vllm", "serve", "m", "--num-gpu-blocks-override", "0"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, bad4, &err), -1);
}

static void test_flag_table(void **state)
{
    (void)state;
    bool att;
    const hbm_plan_flag *f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--max_model_len=8192", &att);
    assert_non_null(f);
    assert_string_equal(f->name, "--max-model-len");
    assert_true(att);
    f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--port", &att);
    assert_non_null(f);
    assert_true(f->value);
    assert_false(att);
    assert_int_equal(f->use, HBM_PLAN_FLAG_IGNORED);
    f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--trust-remote-code", NULL);
    assert_non_null(f);
    assert_false(f->value);
    /* vLLM's --no- form of a boolean, but not of a flag that takes a value */
    f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--no-enable-prefix-caching", NULL);
    assert_non_null(f);
    assert_string_equal(f->name, "--enable-prefix-caching");
    assert_null(hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--no-port", NULL));
    /* -O3 carries its value; a JSON flag's key takes one */
    f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "-O3", &att);
    assert_non_null(f);
    assert_string_equal(f->name, "-O");
    assert_true(att);
    assert_int_equal(f->use, HBM_PLAN_FLAG_UNMODELLED);
    f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--compilation-config.cudagraph_mode", &att);
    assert_non_null(f);
    assert_string_equal(f->name, "--compilation-config");
    assert_false(att);
    /* current releases' shorthand for a key of --compilation-config, with its value */
    f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "-cc.mode=none", &att);
    assert_non_null(f);
    assert_string_equal(f->name, "-cc");
    assert_true(att);
    assert_int_equal(f->use, HBM_PLAN_FLAG_UNMODELLED);
    assert_int_equal(hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--attention_backend", NULL)->use,
                     HBM_PLAN_FLAG_UNMODELLED);
    assert_int_equal(
        hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--default-chat-template-kwargs", NULL)->use,
        HBM_PLAN_FLAG_IGNORED);
    assert_null(hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--max-model-lne", NULL));
    assert_null(hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, "--trust-remote-code.x", NULL)); /* keys of values only */
    /* every name is unique and found as itself */
    size_t n;
    const hbm_plan_flag *all = hbm_plan_flags(HBM_PLAN_ENGINE_VLLM, &n);
    assert_true(n > 100);
    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, all[i].name, NULL), &all[i]);
        for (size_t k = i + 1; k < n; k++)
            assert_string_not_equal(all[i].name, all[k].name);
    }
}

static void test_flag_suggest(void **state)
{
    (void)state;
    const char *const own[] = {"--device", "--mem", "--free", NULL};
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--devcie", own), "--device");
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--max-model-lne", own), "--max-model-len");
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--max_num_seq=4", own), "--max-num-seqs");
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--tensor-paralel-size", NULL),
                        "--tensor-parallel-size");
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--gpu-memory-utilisation", NULL),
                        "--gpu-memory-utilization");
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--tp", NULL), "-tp");
    /* an abbreviation of exactly one name */
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--max-num-batched", NULL),
                        "--max-num-batched-tokens");
    /* nothing close: no guess; short words allow one edit only */
    assert_null(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--zzqqxx", own));
    assert_null(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--abc", own));
    assert_null(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_VLLM, "--max", NULL)); /* abbreviates many: no guess */
}

static void test_skipped_flags(void **state)
{
    (void)state;
    /* a skipped flag takes its value only when the table says so, so the model that
     * follows a boolean is still the model; unmodelled flags are listed once */
    char *argv[] = {"vllm", "serve", "--trust-remote-code", "/m", "--port", "8000",
                    "--cpu-offload-gb", "4", "--unknown-bool", "--cpu_offload_gb=2",
                    "--enable-eplb", "--max-model-len", "4096"};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 13, argv, &err), 0);
    assert_string_equal(in.model_path, "/m");
    assert_int_equal(in.max_model_len, 4096);
    assert_int_equal(in.nunmodelled, 2);
    assert_string_equal(in.unmodelled[0], "--cpu-offload-gb");
    assert_string_equal(in.unmodelled[1], "--enable-eplb");
}

static void test_devices(void **state)
{
    (void)state;
    const hbm_plan_device *d = hbm_plan_device_find("910B4");
    assert_non_null(d);
    assert_int_equal(d->platform, HBM_PLAN_PLATFORM_ASCEND);
    assert_true(fabs((double)d->total_bytes / 1073741824.0 - 29.49) < 0.005);
    d = hbm_plan_device_find("NVIDIA H100 80GB HBM3");
    assert_null(d); /* the exact lookup does not guess */
    /* driver names map to the family, then the nearest size */
    d = hbm_plan_device_match("NVIDIA H100 80GB HBM3", 81559LL << 20);
    assert_non_null(d);
    assert_string_equal(d->name, "H100-80G");
    d = hbm_plan_device_match("NVIDIA A100-SXM4-40GB", 40960LL << 20);
    assert_string_equal(d->name, "A100-40G");
    d = hbm_plan_device_match("NVIDIA A100 80GB PCIe", 81920LL << 20);
    assert_string_equal(d->name, "A100-80G");
    d = hbm_plan_device_match("910B4", 32768LL << 20);
    assert_string_equal(d->name, "910B4");
    d = hbm_plan_device_match("Ascend910B3", -1);
    assert_string_equal(d->name, "910B3");
    assert_null(hbm_plan_device_match("Tesla T4", 15360LL << 20));
    /* current cards by the names their drivers give: each its own row, never a neighbour's */
    static const struct {
        const char *driver, *row;
        int64_t mib;
    } cards[] = {
        {"NVIDIA GeForce RTX 5090", "5090", 32607},
        {"NVIDIA GeForce RTX 5080", "5080", 16303},
        {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTXPRO6000", 97887},
        {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTXPRO6000", 97887},
        {"NVIDIA RTX 6000 Ada Generation", "RTX6000Ada", 46068},
        {"AMD Instinct MI355X", "MI355X", 294896},
        {"AMD Instinct MI325X", "MI325X", 262128},
        {"NVIDIA A40", "A40", 46068},
        {"Ascend910B3", "910B3", 65536},
        {"Ascend910_93", "910C", 65536},
    };
    for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
        d = hbm_plan_device_match(cards[i].driver, cards[i].mib << 20);
        if (!d || strcmp(d->name, cards[i].row))
            fail_msg("%s: row %s, want %s", cards[i].driver, d ? d->name : "none",
                     cards[i].row);
    }
    /* the 64 GB Atlas A2 and A3 chips: the total vllm-ascend prints */
    assert_int_equal(hbm_plan_device_find("910B3")->total_bytes, 65452113920LL);
    assert_int_equal(hbm_plan_device_find("910C")->total_bytes, 65452113920LL);
    assert_true(hbm_plan_device_find("RTXPRO6000")->large_class);
    assert_false(hbm_plan_device_find("5090")->large_class);
    d = hbm_plan_device_find("h100-80g");
    assert_non_null(d);
    assert_true(fabs((double)d->total_bytes / 1073741824.0 - 79.18) < 0.005);
    assert_true(d->large_class);
    d = hbm_plan_device_find("A100_80G");
    assert_non_null(d);
    assert_false(d->large_class); /* vLLM keeps the small batch defaults on A100 */
    size_t n;
    const hbm_plan_device *all = hbm_plan_devices(&n);
    assert_true(n >= 12);
    for (size_t i = 0; i < n; i++) {
        assert_true(all[i].total_bytes > 0);
        assert_ptr_equal(hbm_plan_device_find(all[i].name), &all[i]);
    }
}

/* The "non-default args" line of a vLLM log, read back as the words of its launch and
 * then as the plan's flags. */
static void test_log_args(void **state)
{
    (void)state;
    const char *line = "{'model_tag': 'Qwen/Qwen3-32B', 'port': 8000, 'model': 'Qwen/Qwen3-32B', "
                       "'max_num_seqs': 1024, 'enforce_eager': True, "
                       "'enable_prefix_caching': False, 'quantization': None, "
                       "'limit_mm_per_prompt': {'image': 0}, 'served_model_name': ['a', \"b's\"], "
                       "'gpu_memory_utilization': 0.85, }";
    char **argv;
    int argc;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_argv_from_pydict(line, strlen(line), &argv, &argc, &err), 0);
    const char *want[] = {"--port", "8000", "--model", "Qwen/Qwen3-32B", "--max-num-seqs", "1024",
                          "--enforce-eager", "--no-enable-prefix-caching",
                          "--limit-mm-per-prompt", "{\"image\":0}", "--served-model-name",
                          "[\"a\",\"b's\"]", "--gpu-memory-utilization", "0.85"};
    assert_int_equal(argc, (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < argc; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[argc]);
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, argc, argv, &err), 0);
    assert_int_equal(in.max_num_seqs, 1024);
    assert_int_equal(in.enforce_eager, 1);
    assert_true(fabs(in.gpu_memory_utilization - 0.85) < 1e-9);
    assert_string_equal(in.model_path, "Qwen/Qwen3-32B");
    hbm_plan_argv_free(argv, argc);

    const char *bad[] = {"['model', 1]", "{'model': 'x'", "{'a' 1}", "{model: 1}",
                         "{'a': 1} tail", "{'a': [1, (2, 3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        assert_int_equal(hbm_plan_argv_from_pydict(bad[i], strlen(bad[i]), &argv, &argc, &err),
                         -1);
        assert_non_null(strstr(err.msg, "column"));
    }
    assert_int_equal(hbm_plan_argv_from_pydict("{}", 2, &argv, &argc, &err), 0);
    assert_int_equal(argc, 0);
    assert_null(argv[0]);
    hbm_plan_argv_free(argv, argc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_serve_line),
        cmocka_unit_test(test_api_server_and_errors),
        cmocka_unit_test(test_flag_table),
        cmocka_unit_test(test_flag_suggest),
        cmocka_unit_test(test_skipped_flags),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_log_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
