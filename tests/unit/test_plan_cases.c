/* The planner against real vLLM start-ups (research/vllm-cases.jsonl): the prediction from
 * config, device and flags alone (never --kv-cache-memory-bytes), printed with its error
 * against vLLM's logged figure, within 5% unless the case is a documented miss
 * (docs/planner.md says why). Case numbers are line numbers (from 0) of that file; cases
 * from elsewhere name their public thread instead. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/plan.h"

#define GIB 1073741824.0
#define FIX "tests/fixtures/models/"

typedef struct pcase {
    int line;               /* line of vllm-cases.jsonl, from 0 */
    const char *model;      /* fixture directory */
    const char *device;     /* device table name */
    const char *version;    /* vLLM release (assumed where the case does not say: see docs) */
    int64_t tp;
    double util;            /* NAN: vLLM's default */
    int64_t mml;            /* -1: the model's */
    int64_t want_tokens;    /* vLLM's "GPU KV cache size", -1 when not logged */
    double want_kv_gib;     /* vLLM's "Available KV cache memory", NAN when not logged */
    const char *want_error; /* error kind vLLM raised, NULL when it started */
    bool known_miss;        /* outside 5%, explained in docs/planner.md */
    int64_t pp;             /* 0: 1 */
    bool eager;             /* --enforce-eager */
    bool kv_only;           /* vLLM failed after sizing the KV cache: only its figures count */
    const char *source;     /* public thread of a case not in vllm-cases.jsonl (line -1) */
} pcase;

static const pcase cases[] = {
    {0, "qwen2-7b-instruct", "A100-80G", "0.10.1", 1, 0.25, 16384, 93872, 5.01, NULL, false, 0,
     false, false, NULL},
    {1, "qwen2-7b-instruct", "A100-80G", "0.10.1", 2, 0.25, 16384, 450192, 12.02, NULL, false, 0,
     false, false, NULL},
    {2, "qwen2-7b-instruct", "A100-40G", "0.10.1", 2, 0.5, 16384, 412944, 11.03, NULL, true, 0,
     false, false, NULL},
    {4, "qwen2.5-32b", "A100-80G", "0.10.1", 1, NAN, 16384, -1, 9.70, NULL, false, 0, false, false,
     NULL},
    {6, "llama-3.1-8b-instruct", "H100-80G", "0.11.0", 1, 0.9, 16000, -1, 51.38, NULL, false, 0,
     false, false, NULL},
    {7, "llama-3.3-70b-instruct-fp8-dynamic", "H100-80G", "0.11.0", 1, 0.9, 16000, -1, -1.44,
     "no_kv_memory", false, 0, false, false, NULL},
    {8, "qwen3-32b", "H100-80G", "0.11.0", 1, 0.9, 16000, -1, 4.45, NULL, false, 0, false, false,
     NULL},
    {9, "qwen3-32b", "H100-80G", "0.11.0", 1, 0.9, 32000, -1, NAN, "max_model_len", false, 0,
     false, false, NULL},
    {10, "qwen3-0.6b", "H100-80G", "0.11.0", 1, 0.9, 16000, -1, 64.45, NULL, false, 0, false,
     false, NULL},
    {13, "llama-3.1-8b-instruct", "3090", "0.6.4", 1, 0.9, 20000, 31232, 3.81, NULL, false, 0,
     false, false, NULL},
    {14, "llama-3.1-8b-instruct", "3090", "0.6.4", 1, 0.9, 29000, 23648, 2.89, "max_model_len",
     false, 0, false, false, NULL},
    {26, "qwen3-0.6b", "H100-80G", "0.11.0", 1, 0.9, 32000, -1, 64.45, NULL, false, 0, false,
     false, NULL},
    /* MoE at TP > 1 on PCIe cards. vllm#17469: vLLM 0.8.5 printed no budget line; graph
     * capture, outside the budget in that release, then ran out of memory */
    {-1, "qwen3-30b-a3b", "A10", "0.8.5", 4, NAN, 8192, 198784, NAN, NULL, false, 0, false,
     true, "vllm#17469"},
    /* vllm#20665: DeepSeek-V2-Lite (the Chat fixture: the same architecture), a build between
     * 0.9.2 and 0.10.0; tokens as the first stage printed them, the budget of the last stage
     * (lm_head and sampler), the smaller one that sizes the cache */
    {-1, "deepseek-v2-lite-chat", "L4", "0.9.2", 2, NAN, 1024, 807792, 11.33, NULL, false, 2,
     true, false, "vllm#20665"},
};

static void run_case(const pcase *c, hbm_plan_result *r)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    char path[256];
    snprintf(path, sizeof path, FIX "%s", c->model);
    in.model_path = path;
    const hbm_plan_device *d = hbm_plan_device_find(c->device);
    assert_non_null(d);
    in.device_name = d->name;
    in.platform = d->platform;
    in.mem_total_bytes = d->total_bytes;
    in.large_device = d->large_class;
    in.vllm_version = c->version;
    in.tensor_parallel_size = c->tp;
    in.gpu_memory_utilization = c->util;
    in.max_model_len = c->mml;
    if (c->pp > 0)
        in.pipeline_parallel_size = c->pp;
    if (c->eager)
        in.enforce_eager = 1;
    hbm_err err = {{0}};
    int rc = hbm_plan_run(&in, r, &err);
    if (rc < 0)
        fail_msg("case %d %s: %s", c->line, c->source ? c->source : "", err.msg);
}

static double pct(double got, double want)
{
    return 100.0 * (got - want) / fabs(want);
}

static void test_cases(void **state)
{
    (void)state;
    int misses = 0, checked = 0;
    printf("%-10s %-34s %-9s %-5s %12s %12s %8s\n", "case", "model", "device", "what", "vLLM",
           "predicted", "error");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pcase *c = &cases[i];
        hbm_plan_result r;
        run_case(c, &r);
        char id[16];
        if (c->source)
            snprintf(id, sizeof id, "%s", c->source);
        else
            snprintf(id, sizeof id, "%d", c->line);
        bool ok = true;
        if (c->want_tokens > 0) {
            double e = pct((double)r.kv_cache_tokens, (double)c->want_tokens);
            printf("%-10s %-34s %-9s %-5s %12lld %12lld %+7.2f%%\n", id, c->model, c->device,
                   "tok", (long long)c->want_tokens, (long long)r.kv_cache_tokens, e);
            ok &= fabs(e) <= 5.0;
            checked++;
        }
        if (!isnan(c->want_kv_gib)) {
            double got = (double)r.kv_cache_bytes / GIB;
            /* a negative budget is a shortfall: its error is measured against the
             * requested memory, the figure it is carved from */
            double e = c->want_kv_gib > 0 ? pct(got, c->want_kv_gib)
                                          : 100.0 * (got - c->want_kv_gib) /
                                                ((double)r.requested_bytes / GIB);
            printf("%-10s %-34s %-9s %-5s %12.2f %12.2f %+7.2f%%\n", id, c->model,
                   c->device, c->want_kv_gib > 0 ? "KVGiB" : "short", c->want_kv_gib, got, e);
            ok &= fabs(e) <= 5.0;
            checked++;
        }
        if (c->want_error) {
            bool found = false;
            for (size_t k = 0; k < r.nerrors; k++)
                found |= !strcmp(r.errors[k].kind, c->want_error);
            printf("%-10s %-34s %-9s %-5s %12s %12s %8s\n", id, c->model, c->device, "fails",
                   c->want_error, r.nerrors ? r.errors[0].kind : "(starts)",
                   found ? "same" : "DIFFERS");
            ok &= found && !r.fits;
            if (r.nerrors)
                printf("      %s\n", r.errors[0].message);
        } else if (c->kv_only) {
            printf("%-10s %-34s %-9s %-5s %12s %12s\n", id, c->model, c->device, "later",
                   "fails", r.fits ? "(starts)" : r.errors[0].kind);
        } else {
            ok &= r.fits;
        }
        if (c->known_miss) {
            printf("      known miss (docs/planner.md): %s\n", ok ? "now within 5%" : "outside 5%");
            misses++;
        } else if (!ok) {
            hbm_plan_result_free(&r);
            fail_msg("case %s (%s on %s) is outside 5%% or has the wrong verdict", id, c->model,
                     c->device);
        }
        hbm_plan_result_free(&r);
    }
    printf("%d figures checked, %d documented misses\n", checked, misses);
}

/* vllm-cases line 15 (device not stated): only the bytes -> tokens step can be checked,
 * with vLLM's own logged budget given as --kv-cache-memory-bytes. */
static void test_bytes_to_tokens(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = FIX "qwen3-14b";
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = (int64_t)(79.18 * GIB);
    in.vllm_version = "0.11.0";
    in.max_model_len = 32768;
    in.kv_cache_memory_bytes = (int64_t)(6.51 * GIB);
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    printf("line 15: 6.51 GiB -> %lld tokens (vLLM 42656), %.2fx (vLLM 1.30x)\n",
           (long long)r.kv_cache_tokens, r.max_concurrency);
    assert_true(fabs(pct((double)r.kv_cache_tokens, 42656)) < 0.1);
    assert_true(fabs(r.max_concurrency - 1.30) < 0.006);
    assert_int_equal(r.kv_bytes_per_token, 40 * 2 * 8 * 128 * 2);
    hbm_plan_result_free(&r);
}

/* vllm-cases line 19: the pre-check text with the same numbers (newest wording). */
static void test_precheck_message(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = FIX "qwen3-0.6b";
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    /* vLLM printed 22.05 and 19.84 (= ceil(0.9 x total)): both hold for a total in
     * [22.045, 22.05) GiB */
    in.mem_total_bytes = (int64_t)(22.047 * GIB);
    in.mem_free_bytes = (int64_t)(19.77 * GIB);
    in.gpu_memory_utilization = 0.9;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_false(r.fits);
    assert_true(r.nerrors >= 1);
    printf("%s\n", r.errors[0].message);
    assert_string_equal(r.errors[0].kind, "free_memory");
    assert_non_null(strstr(r.errors[0].message,
                           "Free memory on device cuda:0 (19.77/22.05 GiB) on startup is less "
                           "than desired GPU memory utilization (0.9, 19.84 GiB)."));
    /* the fix: the highest utilisation that passes, with its exact value */
    bool util = false;
    for (size_t i = 0; i < r.nrecs; i++)
        if (!strcmp(r.recs[i].kind, "gpu_memory_utilization"))
            util = strstr(r.recs[i].flags, "0.89") != NULL;
    assert_true(util);
    hbm_plan_result_free(&r);
}

/* vllm-cases line 28: MLA needs 0.95 GiB for 32768 tokens against 0.93 available (two
 * ~22 GB GPUs: the latent is not split by TP, so each rank needs all of it). */
static void test_mla_needed(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = FIX "deepseek-v2-lite-chat";
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = (int64_t)(22.0 * GIB);
    in.vllm_version = "0.8.3";
    in.tensor_parallel_size = 2;
    in.max_model_len = 32768;
    in.kv_cache_memory_bytes = (int64_t)(0.93 * GIB);
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_int_equal(r.kv_bytes_per_token, 27 * 576 * 2);
    assert_false(r.fits);
    assert_int_equal(r.nerrors, 1);
    printf("%s\n", r.errors[0].message);
    assert_non_null(strstr(r.errors[0].message, "models's max seq len (32768), (0.95 GiB KV "
                                                "cache is needed, which is larger than the "
                                                "available KV cache memory (0.93 GiB)"));
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_bytes_to_tokens),
        cmocka_unit_test(test_precheck_message),
        cmocka_unit_test(test_mla_needed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
