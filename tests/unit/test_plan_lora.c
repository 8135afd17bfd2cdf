/* LoRA adapter slots against vLLM's create_lora_weights worked by hand (Qwen3-0.6B: 28 layers,
 * hidden 1024, 16 heads and 8 KV heads of 128, intermediate 3072, no embedding modules),
 * their TP sharding with and without --fully-sharded-loras, the scaling with --max-loras and
 * --max-lora-rank, what changed between releases, and the flags as read. */
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

static hbm_plan_input lora_input(const char *model, int64_t tp)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = model;
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = (int64_t)(79.18 * GIB);
    in.large_device = true;
    in.tensor_parallel_size = tp;
    in.vllm.enable_lora = 1;
    return in;
}

static void run(const hbm_plan_input *in, hbm_plan_result *r)
{
    hbm_err err = {{0}};
    if (hbm_plan_run(in, r, &err) < 0)
        fail_msg("%s", err.msg);
}

static int64_t slot_bytes(const hbm_plan_input *in)
{
    hbm_plan_result r;
    run(in, &r);
    assert_true(r.lora.enabled);
    int64_t b = r.lora.slot_bytes;
    hbm_plan_result_free(&r);
    return b;
}

/* One slot of rank 16 at TP 1, per layer: qkv_proj lora_a 3 x 16 x 1024, lora_b (2048 + 1024 +
 * 1024) x 16; o_proj 16 x 2048 + 1024 x 16; gate_up_proj 2 x 16 x 1024 + 2 x 3072 x 16;
 * down_proj 16 x 3072 + 1024 x 16: 360,448 elements, x 28 layers x 2 bytes. */
static void test_slot_bytes_by_hand(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "qwen3-0.6b", 1);
    hbm_plan_result r;
    run(&in, &r);
    assert_int_equal(r.lora.max_loras, 1);
    assert_int_equal(r.lora.max_lora_rank, 16);
    assert_int_equal(r.lora.dtype_bytes, 2);
    assert_int_equal(r.lora.slot_bytes, 360448LL * 28 * 2);
    assert_int_equal(r.lora.adapter_bytes, r.lora.slot_bytes);
    assert_int_equal(r.lora.extra_vocab, 0); /* Qwen3 names no embedding modules */
    int64_t with = r.weights_bytes;
    hbm_plan_result_free(&r);
    /* the slots are part of what "Model loading took" reports */
    in.vllm.enable_lora = 0;
    run(&in, &r);
    assert_false(r.lora.enabled);
    assert_int_equal(with - r.weights_bytes, 360448LL * 28 * 2);
    hbm_plan_result_free(&r);
}

/* TP 2: lora_b of the column layers and lora_a of the row layers halve (237,568 per layer);
 * fully sharded also halves the column lora_a rank and the row lora_b output (180,224). */
static void test_tp_sharding(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "qwen3-0.6b", 2);
    assert_int_equal(slot_bytes(&in), 237568LL * 28 * 2);
    in.vllm.fully_sharded_loras = 1;
    assert_int_equal(slot_bytes(&in), 180224LL * 28 * 2);
}

/* Slots scale with --max-loras and --max-lora-rank, and with --lora-dtype's width. */
static void test_scaling(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "qwen3-0.6b", 1);
    int64_t one = slot_bytes(&in);
    in.vllm.max_loras = 4;
    assert_int_equal(slot_bytes(&in), 4 * one);
    in.vllm.max_lora_rank = 64;
    assert_int_equal(slot_bytes(&in), 16 * one);
    in.vllm.lora_dtype = "float32";
    assert_int_equal(slot_bytes(&in), 32 * one);
    /* more slots leave less for the KV cache */
    hbm_plan_result a, b;
    in.vllm.max_loras = 1, in.vllm.max_lora_rank = 16, in.vllm.lora_dtype = NULL;
    run(&in, &a);
    in.vllm.max_loras = 8, in.vllm.max_lora_rank = 256;
    run(&in, &b);
    assert_true(b.kv_cache_bytes < a.kv_cache_bytes);
    assert_true(b.activation_bytes >= a.activation_bytes);
    hbm_plan_result_free(&a);
    hbm_plan_result_free(&b);
}

/* Llama adapts embed_tokens and lm_head; before 0.12 with 256 extra vocabulary rows */
static void test_embeddings_by_release(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "llama-3.1-8b-instruct", 1);
    in.engine_version = "0.11.0";
    hbm_plan_result r;
    run(&in, &r);
    assert_int_equal(r.lora.extra_vocab, 256);
    int64_t old = r.lora.slot_bytes;
    hbm_plan_result_free(&r);
    in.engine_version = "0.12.0";
    run(&in, &r);
    assert_int_equal(r.lora.extra_vocab, 0);
    /* the embedding's lora_a over the vocabulary: 128,256 x 16 elements */
    assert_true(r.lora.slot_bytes > 128256LL * 16 * 2);
    assert_true(r.lora.slot_bytes < old);
    hbm_plan_result_free(&r);
}

/* Routed experts carry slots from 0.11.1 (FusedMoE LoRA) */
static void test_experts_by_release(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "qwen3-30b-a3b", 1);
    in.engine_version = "0.11.0";
    int64_t before = slot_bytes(&in);
    in.engine_version = "0.12.0";
    int64_t after = slot_bytes(&in);
    assert_true(after > 10 * before);
}

static void test_flags_read(void **state)
{
    (void)state;
    char *argv[] = {"vllm", "serve", "/m", "--enable-lora", "--max-loras", "3",
                    "--max_lora_rank=32", "--max-cpu-loras", "8", "--lora-dtype", "bfloat16",
                    "--fully-sharded-loras", "--lora-extra-vocab-size", "128"};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 14, argv, &err), 0);
    assert_int_equal(in.vllm.enable_lora, 1);
    assert_int_equal(in.vllm.max_loras, 3);
    assert_int_equal(in.vllm.max_lora_rank, 32);
    assert_int_equal(in.vllm.max_cpu_loras, 8);
    assert_string_equal(in.vllm.lora_dtype, "bfloat16");
    assert_int_equal(in.vllm.fully_sharded_loras, 1);
    assert_int_equal(in.vllm.lora_extra_vocab_size, 128);
    assert_int_equal(in.nunmodelled, 0);
    const char *names[] = {"--enable-lora", "--max-loras", "--max-lora-rank", "--max-cpu-loras",
                           "--lora-dtype", "--fully-sharded-loras", "--lora-extra-vocab-size"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const hbm_plan_flag *f = hbm_plan_flag_find(HBM_PLAN_ENGINE_VLLM, names[i], NULL);
        assert_non_null(f);
        assert_int_equal(f->use, HBM_PLAN_FLAG_MODELLED);
    }
    char *bad[] = {"vllm", "serve", "/m", "--max-loras", "0"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, bad, &err), -1);
    assert_non_null(strstr(err.msg, "--max-loras"));
    char *dtype[] = {"vllm", "serve", "/m", "--lora-dtype", "int4"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, dtype, &err), -1);
    char *off[] = {"vllm", "serve", "/m", "--enable-lora", "--no-enable-lora"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, off, &err), 0);
    assert_int_equal(in.vllm.enable_lora, 0);
}

/* 0.8.0-0.8.2 sent LoRA back to V0 (V0's defaults: 256 sequences on a large device); from
 * 0.8.3 V1 takes it */
static void test_v0_engine_by_release(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "qwen3-0.6b", 1);
    in.engine_version = "0.8.2";
    hbm_plan_result r;
    run(&in, &r);
    assert_non_null(strstr(r.launch_line, "--max-num-seqs 256"));
    hbm_plan_result_free(&r);
    in.vllm.enable_lora = 0;
    run(&in, &r);
    assert_non_null(strstr(r.launch_line, "--max-num-seqs 1024"));
    hbm_plan_result_free(&r);
    in.vllm.enable_lora = 1;
    in.engine_version = "0.8.3";
    run(&in, &r);
    assert_non_null(strstr(r.launch_line, "--max-num-seqs 1024"));
    hbm_plan_result_free(&r);
}

/* Before 0.8 V0 built the slots after measuring the weights: more or larger slots left the
 * blocks unchanged (#14450); from 0.8.0 they come out of the budget */
static void test_budget_by_release(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "qwen3-0.6b", 1);
    const char *versions[] = {"0.7.3", "0.8.0"};
    int64_t blocks[2][2];
    for (int v = 0; v < 2; v++)
        for (int k = 0; k < 2; k++) {
            in.engine_version = versions[v];
            in.vllm.max_loras = k ? 8 : 1;
            in.vllm.max_lora_rank = k ? 64 : 16;
            hbm_plan_result r;
            run(&in, &r);
            blocks[v][k] = r.num_blocks;
            hbm_plan_result_free(&r);
        }
    assert_int_equal(blocks[0][0], blocks[0][1]);
    assert_true(blocks[1][1] < blocks[1][0]);
}

/* The plan's JSON names the slots; the flag lines keep the LoRA flags */
static void test_json_and_flag_line(void **state)
{
    (void)state;
    hbm_plan_input in = lora_input(FIX "qwen3-0.6b", 1);
    in.vllm.max_loras = 2;
    hbm_plan_result r;
    run(&in, &r);
    json_t *j = hbm_plan_result_to_json(&r);
    json_t *l = json_object_get(j, "lora");
    assert_non_null(l);
    assert_int_equal(json_integer_value(json_object_get(l, "max_loras")), 2);
    assert_int_equal(json_integer_value(json_object_get(l, "max_lora_rank")), 16);
    assert_int_equal(json_integer_value(json_object_get(l, "slot_bytes")), 2 * 360448LL * 28 * 2);
    assert_int_equal(json_integer_value(json_object_get(l, "adapter_bytes")), 360448LL * 28 * 2);
    assert_non_null(strstr(r.launch_line, " --enable-lora --max-loras 2"));
    json_decref(j);
    hbm_plan_result_free(&r);
    in.vllm.enable_lora = -1;
    run(&in, &r);
    j = hbm_plan_result_to_json(&r);
    assert_null(json_object_get(j, "lora"));
    json_decref(j);
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_bytes_by_hand), cmocka_unit_test(test_tp_sharding),
        cmocka_unit_test(test_scaling),           cmocka_unit_test(test_embeddings_by_release),
        cmocka_unit_test(test_experts_by_release), cmocka_unit_test(test_flags_read),
        cmocka_unit_test(test_json_and_flag_line), cmocka_unit_test(test_v0_engine_by_release),
        cmocka_unit_test(test_budget_by_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
