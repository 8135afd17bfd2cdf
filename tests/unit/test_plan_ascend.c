/* vllm-ascend's 310P worker (src/plan/ascend.c): the halved budget from 0.15, the second
 * charge of other processes' memory up to 0.22 only, the FRACTAL_NZ copy of the vocabulary
 * tables from 0.22, and no change on other chips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/plan.h"

#define GIB 1073741824.0

/* A model at a release on a device of the table, 4096 tokens long, the whole chip. */
static hbm_plan_input chip_input(const char *model, const char *device, const char *version)
{
    const hbm_plan_device *d = hbm_plan_device_find(device);
    assert_non_null(d);
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = model;
    in.device_name = d->name;
    in.platform = d->platform;
    in.mem_total_bytes = d->total_bytes;
    in.engine_version = version;
    in.max_model_len = 4096;
    return in;
}

static hbm_plan_result plan_ok(const hbm_plan_input *in)
{
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(in, &r, &err), 0);
    return r;
}

/* Qwen3-0.6B at utilisation 0.5 on a chip where another process holds free_gib less than
 * the total (issue #14004's launch). */
static int64_t kv_budget(const char *device, const char *version, double free_gib)
{
    hbm_plan_input in = chip_input("tests/fixtures/models/qwen3-0.6b", device, version);
    in.mem_free_bytes = (int64_t)(free_gib * GIB);
    in.max_num_seqs = 1;
    in.gpu_memory_utilization = 0.5;
    hbm_plan_result r = plan_ok(&in);
    int64_t kv = r.kv_cache_bytes;
    hbm_plan_result_free(&r);
    return kv;
}

static void test_310p_rules_by_release(void **state)
{
    (void)state;
    const hbm_plan_device *d = hbm_plan_device_find("310P3-48G");
    assert_non_null(d);
    double total = (double)d->total_bytes / GIB;
    int64_t whole = kv_budget("910B3", "0.22.1", 61.27);
    int64_t fixed = kv_budget("310P3-48G", "0.23.0", total - 19.79);
    int64_t twice = kv_budget("310P3-48G", "0.22.1", total - 19.79);
    int64_t alone = kv_budget("310P3-48G", "0.22.1", total);
    /* other processes only pass the start-up check from 0.23; up to 0.22 they are
     * charged again, halved with the rest */
    assert_true(fixed > twice);
    assert_true(llabs(2 * (fixed - twice) - (int64_t)(19.79 * GIB)) < (int64_t)(0.01 * GIB));
    /* alone on the chip both releases agree */
    assert_true(llabs(alone - fixed) < 1024);
    /* the halving: the 910B3 keeps all of a budget sized on a larger total */
    assert_true(whole > 2 * fixed);
    /* before 0.15 the 310P has no worker of its own in the rules: device-delta budget */
    int64_t old = kv_budget("310P3-48G", "0.14.0", total);
    assert_true(old > fixed + (int64_t)(9 * GIB));
}

/* One rank's weights for a model on a device at a release (util 0.9, the whole chip). */
static int64_t weights(const char *model, const char *device, const char *version, int64_t tp)
{
    hbm_plan_input in = chip_input(model, device, version);
    in.tensor_parallel_size = tp;
    hbm_plan_result r = plan_ok(&in);
    int64_t w = r.weights_bytes;
    hbm_plan_result_free(&r);
    return w;
}

static void test_310p_vocabulary_held_twice(void **state)
{
    (void)state;
    const char *small = "tests/fixtures/models/qwen3-0.6b", *big = "tests/fixtures/models/qwen3-14b";
    /* tied: the lm_head is the embedding module, one 151936 x 1024 copy at 2 bytes */
    assert_int_equal(weights(small, "310P3-48G", "0.22.1", 1) - weights(small, "910B3", "0.22.1", 1),
                     151936LL * 1024 * 2);
    /* untied: the embedding and the lm_head each get one; TP splits the rows */
    assert_int_equal(weights(big, "310P3-48G", "0.23.0", 2) - weights(big, "910B3", "0.23.0", 2),
                     2LL * (151936 / 2) * 5120 * 2);
    /* the copy is not read before the 0.22 line */
    assert_int_equal(weights(small, "310P3-48G", "0.21.0", 1), weights(small, "910B3", "0.21.0", 1));
}

/* Python's LLM(...) profiles vLLM's offline batch, cut to max_num_seqs x max_model_len. */
static void test_offline_batch_defaults(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = "tests/fixtures/models/qwen3-0.6b";
    in.platform = HBM_PLAN_PLATFORM_ASCEND;
    in.mem_total_bytes = (int64_t)(43.24 * GIB);
    in.engine_version = "0.22.1";
    in.max_model_len = 4096;
    int64_t seqs[] = {1, HBM_UNKNOWN}, want[][2] = {{2048, 4096}, {2048, 8192}};
    for (int k = 0; k < 2; k++)
        for (int offline = 0; offline < 2; offline++) {
            in.max_num_seqs = seqs[k];
            in.vllm.llm_class = offline;
            hbm_plan_result r = plan_ok(&in);
            assert_int_equal(r.max_num_batched_tokens, want[k][offline]);
            hbm_plan_result_free(&r);
        }
}

/* MoE on vllm-ascend 0.13-0.14: the note that the profile run now samples on top of memory
 * the rules do not size; not on 0.12 (no sampling) nor on a dense model. */
static void test_moe_sampling_note(void **state)
{
    (void)state;
    const char *model[] = {"qwen3-next-80b-a3b", "qwen3-next-80b-a3b", "qwen3-0.6b"};
    const char *ver[] = {"0.13.0", "0.12.0", "0.13.0"};
    for (int k = 0; k < 3; k++) {
        char path[128];
        snprintf(path, sizeof path, "tests/fixtures/models/%s", model[k]);
        hbm_plan_input in;
        hbm_plan_input_init(&in);
        in.model_path = path;
        in.platform = HBM_PLAN_PLATFORM_ASCEND;
        in.mem_total_bytes = (int64_t)(61.27 * GIB);
        in.engine_version = ver[k];
        in.tensor_parallel_size = 4;
        in.max_model_len = 4096;
        hbm_plan_result r = plan_ok(&in);
        bool noted = false;
        for (size_t i = 0; i < r.nnotes; i++)
            noted |= strstr(r.notes[i], "the profile run samples (#4993)") != NULL;
        assert_int_equal(noted, k == 0);
        hbm_plan_result_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_310p_rules_by_release),
        cmocka_unit_test(test_310p_vocabulary_held_twice),
        cmocka_unit_test(test_offline_batch_defaults),
        cmocka_unit_test(test_moe_sampling_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
