/* MindIE as an engine: its keys as flags and in its config.json, its defaults, its block
 * rule, a typo's suggestion and its start-up checks in its own words. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/plan.h"

#define QWEN2 "tests/fixtures/models/qwen2-7b-instruct"
#define CONFIG "tests/fixtures/mindie/config.json"
/* Qwen2-7B per block of 128 tokens: 28 layers x 4 KV heads x (128 + 128) x 2 bytes */
#define QWEN2_BLOCK (128LL * 28 * 4 * 256 * 2)

static void mindie_input(hbm_plan_input *in)
{
    hbm_plan_input_init(in);
    in->engine = HBM_PLAN_ENGINE_MINDIE;
    const hbm_plan_device *d = hbm_plan_device_find("910B3");
    assert_non_null(d);
    in->device_name = d->name;
    in->platform = d->platform;
    in->mem_total_bytes = d->total_bytes;
}

static void test_flags(void **state)
{
    (void)state;
    char *argv[] = {"serve", QWEN2, "--npuMemSize", "-1", "--maxSeqLen=4096",
                    "--maxInputTokenLen", "2048", "--maxPrefillTokens", "4096",
                    "--maxBatchSize", "64", "--cacheBlockSize", "64", "--worldSize", "2",
                    "--maxIterTimes", "1024", "--NPU_MEMORY_FRACTION", "0.9",
                    "--maxPrefillBatchSize", "8", "--port", "1025"};
    hbm_plan_input in;
    mindie_input(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, (int)(sizeof argv / sizeof argv[0]), argv,
                                             &err), 0);
    assert_string_equal(in.model_path, QWEN2);
    assert_int_equal(in.mindie.npu_mem_size_gib, -1);
    assert_int_equal(in.max_model_len, 4096);
    assert_int_equal(in.mindie.max_input_len, 2048);
    assert_int_equal(in.max_num_batched_tokens, 4096);
    assert_int_equal(in.max_num_seqs, 64);
    assert_int_equal(in.block_size, 64);
    assert_int_equal(in.tensor_parallel_size, 2);
    assert_int_equal(in.mindie.max_iter_times, 1024);
    assert_int_equal(in.mindie.max_prefill_batch_size, 8);
    assert_true(fabs(in.gpu_memory_utilization - 0.9) < 1e-12);
    /* the table holds MindIE's names; a typo is refused with the nearest one */
    size_t n;
    assert_non_null(hbm_plan_flags(HBM_PLAN_ENGINE_MINDIE, &n));
    assert_true(n > 10);
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_MINDIE, "--npuMemSze", NULL),
                        "--npuMemSize");
    char *typo[] = {"--maxSeqLenn", "4096"};
    mindie_input(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 2, typo, &err), -1);
    assert_non_null(strstr(err.msg, "did you mean --maxSeqLen?"));
    char *zero[] = {"--npuMemSize", "0"};
    mindie_input(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 2, zero, &err), -1);
    assert_non_null(strstr(err.msg, "it should be within (0, 4294967295] or -1"));
}

/* The config after '--' fills what no flag set; the flag given wins. */
static void test_config(void **state)
{
    (void)state;
    char *argv[] = {"--maxBatchSize", "32", "--", "/usr/local/Ascend/mindie/latest/"
                    "mindie-service/bin/mindieservice_daemon", CONFIG};
    hbm_plan_input in;
    mindie_input(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, argv, &err), 0);
    assert_string_equal(in.model_path, QWEN2);
    assert_int_equal(in.mindie.npu_mem_size_gib, 8);
    assert_int_equal(in.max_model_len, 8192);
    assert_int_equal(in.mindie.max_input_len, 6144);
    assert_int_equal(in.tensor_parallel_size, 2);
    assert_int_equal(in.block_size, 128);
    assert_int_equal(in.mindie.max_prefill_batch_size, 20);
    assert_int_equal(in.max_num_batched_tokens, 8192);
    assert_int_equal(in.mindie.max_iter_times, 2048);
    assert_int_equal(in.max_num_seqs, 32);
    /* npuMemSize 8 GiB over blocks of 2 KV heads per rank */
    hbm_plan_result r;
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_true(r.fits);
    assert_int_equal(r.num_blocks, (8LL << 30) / (QWEN2_BLOCK / 2));
    assert_int_equal(r.kv_cache_tokens, r.num_blocks * 128);
    assert_non_null(strstr(r.launch_line, "--npuMemSize 8 --maxSeqLen 8192"));
    hbm_plan_result_free(&r);

    const char *bad = "{\"BackendConfig\": {\"ModelDeployConfig\": {\"maxSeqLen\": \"8k\", "
                      "\"ModelConfig\": [{}]}, \"ScheduleConfig\": {}}}";
    mindie_input(&in);
    assert_int_equal(hbm_plan_mindie_config_parse(bad, strlen(bad), "c.json", &in, &err), -1);
    assert_non_null(strstr(err.msg, "c.json: BackendConfig.ModelDeployConfig.maxSeqLen: is not "
                                    "an integer"));
    const char *noback = "{\"ServerConfig\": {}}";
    assert_int_equal(hbm_plan_mindie_config_parse(noback, strlen(noback), "c.json", &in, &err),
                     -1);
    assert_non_null(strstr(err.msg, "BackendConfig is missing"));
    /* broken JSON: file and line, as every reader says it */
    const char *cut = "{\"BackendConfig\": {\n  \"ModelDeployConfig\": {\n    \"maxSeqLen\": ,";
    assert_int_equal(hbm_plan_mindie_config_parse(cut, strlen(cut), "c.json", &in, &err), -1);
    assert_non_null(strstr(err.msg, "c.json:3: not JSON: "));
}

/* Defaults: npuMemSize -1 takes 0.8 of the card less weights, warm-up and non-torch. */
static void test_defaults(void **state)
{
    (void)state;
    hbm_plan_input in;
    mindie_input(&in);
    in.model_path = QWEN2;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_true(r.fits);
    assert_int_equal(r.block_size, 128);
    assert_int_equal(r.max_model_len, 2560);
    assert_int_equal(r.max_num_seqs, 200);
    assert_int_equal(r.max_num_batched_tokens, 8192);
    assert_int_equal(r.tensor_parallel_size, 1);
    assert_true(fabs(r.gpu_memory_utilization - 0.8) < 1e-12);
    int64_t budget = (int64_t)((double)in.mem_total_bytes * 0.8) - r.weights_bytes -
                     r.activation_bytes - r.non_torch_bytes;
    assert_int_equal(r.kv_cache_bytes, budget);
    assert_int_equal(r.num_blocks, budget / QWEN2_BLOCK);
    assert_int_equal(r.kv_bytes_per_token, QWEN2_BLOCK / 128);
    hbm_plan_result_free(&r);
}

/* A warm-up request longer than the blocks: MindIE's words and a maxSeqLen that fits. */
static void test_warmup_check(void **state)
{
    (void)state;
    hbm_plan_input in;
    mindie_input(&in);
    in.model_path = QWEN2;
    in.mem_total_bytes = 30LL << 30;
    in.max_model_len = 131072;
    in.mindie.max_input_len = 32768;
    in.max_num_batched_tokens = 32768;
    in.mindie.max_iter_times = 131072;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_false(r.fits);
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.errors[0].kind, "max_seq_len");
    printf("%s\n", r.errors[0].message);
    assert_non_null(strstr(r.errors[0].message, "Required block number: 1024. Left block "
                                                "number: "));
    bool seq = false;
    for (size_t i = 0; i < r.nrecs; i++)
        seq |= !strcmp(r.recs[i].kind, "maxSeqLen");
    assert_true(seq);
    hbm_plan_result_free(&r);

    /* the config check comes first in MindIE's start-up */
    mindie_input(&in);
    in.model_path = QWEN2;
    in.mindie.max_input_len = 16384;
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_false(r.fits);
    assert_string_equal(r.errors[0].kind, "config");
    assert_string_equal(r.errors[0].message, "The value of maxPrefillTokens should not be less "
                                             "than maxInputTokenLen.");
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_warmup_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
