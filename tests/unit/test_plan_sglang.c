/* SGLang as the planner's engine: its command line, its defaults by release and card, the
 * nearest flag for a typo, and its refusal when no KV token fits. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/plan.h"

#define FIX "tests/fixtures/models/"
#define GIB 1073741824.0

static int read_argv(hbm_plan_input *in, int argc, char **argv, hbm_err *err)
{
    hbm_plan_input_init(in);
    in->engine = HBM_PLAN_ENGINE_SGLANG;
    return hbm_plan_args_from_argv(in, argc, argv, err);
}

static void test_launch_server_line(void **state)
{
    (void)state;
    char *argv[] = {"python3", "-m", "sglang.launch_server", "--model-path", "/models/qwen",
                    "--tp", "2", "--mem-fraction-static=0.8", "--context-length", "8192",
                    "--chunked-prefill-size", "-1", "--max-running-requests", "64",
                    "--max-total-tokens", "100000", "--cuda-graph-bs", "1", "2", "4", "16",
                    "--disable-cuda-graph", "--kv-cache-dtype", "fp8_e5m2", "--page-size", "16",
                    "--host", "0.0.0.0", "--trust-remote-code", "--enable-dp-attention",
                    "--dtype", "bfloat16", "--quantization", "fp8"};
    hbm_plan_input in;
    hbm_err err = {{0}};
    assert_int_equal(read_argv(&in, (int)(sizeof argv / sizeof argv[0]), argv, &err), 0);
    assert_string_equal(in.model_path, "/models/qwen");
    assert_int_equal(in.tensor_parallel_size, 2);
    assert_true(fabs(in.gpu_memory_utilization - 0.8) < 1e-12);
    assert_int_equal(in.max_model_len, 8192);
    assert_int_equal(in.max_num_batched_tokens, 0); /* -1: chunked prefill off */
    assert_int_equal(in.max_num_seqs, 64);
    assert_int_equal(in.sglang.max_total_tokens, 100000);
    assert_int_equal(in.sglang.cuda_graph_max_bs, 16);
    assert_int_equal(in.enforce_eager, 1);
    assert_string_equal(in.kv_cache_dtype, "fp8_e5m2");
    assert_int_equal(in.block_size, 16);
    assert_string_equal(in.dtype, "bfloat16");
    assert_string_equal(in.quantization, "fp8");
    assert_int_equal(in.nunmodelled, 1);
    assert_string_equal(in.unmodelled[0], "--enable-dp-attention");
    assert_int_equal(in.pipeline_parallel_size, -1);

    /* hbmctl's own form: "serve MODEL" then the flags */
    char *own[] = {"serve", "/models/llama", "--tp-size", "4"};
    assert_int_equal(read_argv(&in, 4, own, &err), 0);
    assert_string_equal(in.model_path, "/models/llama");
    assert_int_equal(in.tensor_parallel_size, 4);
}

static void test_bad_values_and_unknown_flags(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_err err = {{0}};
    char *frac[] = {"--mem-fraction-static", "1.2"};
    assert_int_equal(read_argv(&in, 2, frac, &err), -1);
    assert_non_null(strstr(err.msg, "--mem-fraction-static"));
    char *typo[] = {"--model-path", "/m", "--mem-fraction-statc", "0.8"};
    assert_int_equal(read_argv(&in, 4, typo, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "did you mean --mem-fraction-static?"));
    char *negated[] = {"--no-disable-cuda-graph"};
    assert_int_equal(read_argv(&in, 1, negated, &err), -1);
    /* vLLM's name is not SGLang's */
    char *vllm[] = {"--gpu-memory-utilization", "0.9"};
    assert_int_equal(read_argv(&in, 2, vllm, &err), -1);
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_SGLANG, "--tp-sise", NULL),
                        "--tp-size");
    assert_string_equal(hbm_plan_flag_suggest(HBM_PLAN_ENGINE_SGLANG, "--max-total", NULL),
                        "--max-total-tokens");
    assert_null(hbm_plan_flag_find(HBM_PLAN_ENGINE_SGLANG, "--max-model-len", NULL));
    size_t n;
    const hbm_plan_flag *fl = hbm_plan_flags(HBM_PLAN_ENGINE_SGLANG, &n);
    assert_non_null(fl);
    assert_true(n > 50);
    assert_string_equal(fl[0].name, "--model-path");
    hbm_plan_engine e;
    assert_int_equal(hbm_plan_engine_parse("SGLang", &e, &err), 0);
    assert_int_equal(e, HBM_PLAN_ENGINE_SGLANG);
    assert_string_equal(hbm_plan_engine_name(HBM_PLAN_ENGINE_SGLANG), "sglang");
}

/* A plan of a model on a card under a release, with the flags of argv. */
static void plan(const char *model, double total_gib, const char *ver, int argc, char **argv,
                 hbm_plan_result *r)
{
    hbm_plan_input in;
    hbm_err err = {{0}};
    assert_int_equal(read_argv(&in, argc, argv, &err), 0);
    in.model_path = model;
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = (int64_t)(total_gib * GIB);
    in.engine_version = ver;
    assert_int_equal(hbm_plan_run(&in, r, &err), 0);
}

static void test_defaults_by_release(void **state)
{
    (void)state;
    hbm_plan_result r;
    char *none[] = {"serve"};
    char *tp4[] = {"--tp-size", "4"};
    /* before 0.4.7: by TP alone */
    plan(FIX "qwen3-14b", 79.18, "0.4.3", 2, tp4, &r);
    assert_true(fabs(r.gpu_memory_utilization - 0.85) < 1e-9);
    assert_int_equal(r.max_num_batched_tokens, 8192);
    assert_int_equal(r.engine, HBM_PLAN_ENGINE_SGLANG);
    assert_string_equal(r.vllm_version, "0.4.3");
    hbm_plan_result_free(&r);
    /* 0.4.7 to 0.5.3: (9.5 + 1/2) GiB reserved on an 80 GB card at TP 1 */
    plan(FIX "qwen3-14b", 79.18, "0.4.8", 1, none, &r);
    double mib = 79.18 * 1024;
    assert_true(fabs(r.gpu_memory_utilization - round((mib - 10240) / mib * 1000) / 1000) < 1e-9);
    hbm_plan_result_free(&r);
    /* 0.5.4 on: 512 + 8192 x 1.5 + 256 x 2 + 128 MiB; the 4090 takes 2048 and 24 */
    plan(FIX "qwen3-14b", 79.18, NULL, 1, none, &r);
    assert_true(fabs(r.gpu_memory_utilization - round((mib - 13440) / mib * 1000) / 1000) < 1e-9);
    assert_int_equal(r.max_num_batched_tokens, 8192);
    assert_true(r.fits);
    /* the pool: (total - weights) - total x (1 - fraction), over 40 layers x 8 heads x 256 x 2 */
    assert_int_equal(r.kv_bytes_per_token, 40 * 8 * 256 * 2);
    assert_int_equal(r.kv_cache_tokens, r.kv_cache_bytes / r.kv_bytes_per_token);
    assert_non_null(strstr(r.launch_line, "python -m sglang.launch_server --model-path "));
    hbm_plan_result_free(&r);
    mib = 23.64 * 1024;
    plan(FIX "qwen3-0.6b", 23.64, "0.5.4", 1, none, &r);
    assert_true(fabs(r.gpu_memory_utilization -
                     round((mib - (512 + 2048 * 1.5 + 48 + 128)) / mib * 1000) / 1000) < 1e-9);
    assert_int_equal(r.max_num_batched_tokens, 2048);
    hbm_plan_result_free(&r);
    /* --max-total-tokens caps the pool, down to a whole page */
    char *cap[] = {"--max-total-tokens", "20000", "--page-size", "64"};
    plan(FIX "qwen3-0.6b", 79.18, NULL, 4, cap, &r);
    assert_int_equal(r.kv_cache_tokens, 19968);
    assert_int_equal(r.num_blocks, 312);
    hbm_plan_result_free(&r);
}

static void test_not_enough_memory(void **state)
{
    (void)state;
    hbm_plan_result r;
    /* 15.11 GiB of weights in 0.6 of a 22 GiB card */
    char *low[] = {"--mem-fraction-static", "0.6", "--context-length", "8192"};
    plan(FIX "llama-3.1-8b-instruct", 22.03, "0.4.3", 4, low, &r);
    assert_false(r.fits);
    assert_int_equal(r.kv_cache_tokens, 0);
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.errors[0].kind, "no_kv_memory");
    assert_string_equal(r.errors[0].message,
                        "Not enough memory. Please try to increase --mem-fraction-static.");
    /* the fixes: the fraction that holds the weights and one 8192-token request, then TP 2 */
    assert_true(r.nrecs >= 2);
    assert_string_equal(r.recs[0].kind, "gpu_memory_utilization");
    assert_string_equal(r.recs[0].flags, "--mem-fraction-static 0.75");
    assert_non_null(strstr(r.recs[0].launch_line, "--mem-fraction-static 0.75"));
    assert_string_equal(r.recs[1].flags, "--tp-size 2");
    hbm_plan_result_free(&r);
    /* newer releases name the value */
    plan(FIX "llama-3.1-8b-instruct", 22.03, "0.5.6", 4, low, &r);
    assert_non_null(strstr(r.errors[0].message,
                           "Current value: self.server_args.mem_fraction_static=0.6"));
    hbm_plan_result_free(&r);
    /* weights beyond the card: torch's out of memory while loading */
    char *big[] = {"--context-length", "8192"};
    plan(FIX "qwen2.5-32b", 22.03, NULL, 2, big, &r);
    assert_false(r.fits);
    assert_string_equal(r.errors[0].kind, "weights_oom");
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_server_line),
        cmocka_unit_test(test_bad_values_and_unknown_flags),
        cmocka_unit_test(test_defaults_by_release),
        cmocka_unit_test(test_not_enough_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
