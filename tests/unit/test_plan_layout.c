/* The KV layout and version rules, each against vLLM's own arithmetic: page sizes per layer
 * type, heads split or replicated by TP, MLA, fp8, pipeline stages, sliding-window and
 * linear-attention groups (Qwen3-Next), and what moved between releases. Budgets are fixed
 * with --kv-cache-memory-bytes where the test is about the layout only. The profile run's
 * fused-MoE workspace is checked here too, against fused_experts_impl's buffer shapes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "hbm/plan.h"

#define GIB 1073741824.0
#define FIX "tests/fixtures/models/"

static hbm_plan_input base(const char *model)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = model;
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = (int64_t)(79.18 * GIB);
    in.large_device = true;
    return in;
}

static void run(const hbm_plan_input *in, hbm_plan_result *r)
{
    hbm_err err = {{0}};
    if (hbm_plan_run(in, r, &err) < 0)
        fail_msg("%s", err.msg);
}

static void test_tp_heads(void **state)
{
    (void)state;
    /* Qwen3-32B: 8 KV heads. TP 2 -> 4 per rank; TP 16 -> 1 per rank (replicated) */
    hbm_plan_input in = base(FIX "qwen3-32b");
    in.max_model_len = 4096;
    hbm_plan_result r;
    in.tensor_parallel_size = 2;
    run(&in, &r);
    assert_int_equal(r.kv_bytes_per_token, 64 * 2 * 4 * 128 * 2);
    hbm_plan_result_free(&r);
    in.tensor_parallel_size = 16;
    run(&in, &r);
    assert_int_equal(r.kv_bytes_per_token, 64 * 2 * 1 * 128 * 2);
    hbm_plan_result_free(&r);
    /* fp8 KV: one byte per element */
    in.tensor_parallel_size = 1;
    in.kv_cache_dtype = "fp8";
    run(&in, &r);
    assert_int_equal(r.kv_bytes_per_token, 64 * 2 * 8 * 128);
    hbm_plan_result_free(&r);
    /* PP 2: each stage holds half the layers (and the smaller of the stages' blocks) */
    in.kv_cache_dtype = NULL;
    in.pipeline_parallel_size = 2;
    run(&in, &r);
    assert_int_equal(r.kv_bytes_per_token, 32 * 2 * 8 * 128 * 2);
    hbm_plan_result_free(&r);
}

static void test_fixed_budget_blocks(void **state)
{
    (void)state;
    /* --kv-cache-memory-bytes: blocks = bytes / page / layers, tokens = blocks x 16 */
    hbm_plan_input in = base(FIX "llama-3.1-8b-instruct");
    in.max_model_len = 8192;
    in.engine_version = "0.11.0";
    in.kv_cache_memory_bytes = 10LL << 30;
    hbm_plan_result r;
    run(&in, &r);
    int64_t page = 16 * 8 * 128 * 2 * 2;
    assert_int_equal(r.num_blocks, (10LL << 30) / page / 32);
    assert_int_equal(r.kv_cache_tokens, r.num_blocks * 16);
    assert_true(fabs(r.max_concurrency - (double)r.num_blocks / 512.0) < 1e-9);
    hbm_plan_result_free(&r);
    /* newest rules print tokens as concurrency x max_model_len */
    in.engine_version = NULL;
    in.max_model_len = 8000;
    run(&in, &r);
    assert_int_equal(r.kv_cache_tokens, (int64_t)((double)r.num_blocks / 500.0 * 8000));
    hbm_plan_result_free(&r);
}

static void test_mla(void **state)
{
    (void)state;
    hbm_plan_input in = base(FIX "deepseek-v2-lite-chat");
    in.max_model_len = 32768;
    in.tensor_parallel_size = 4;
    hbm_plan_result r;
    run(&in, &r);
    /* the latent is not divided by TP */
    assert_int_equal(r.kv_bytes_per_token, 27 * 576 * 2);
    hbm_plan_result_free(&r);
}

/* Qwen3-Next: 12 attention layers (2 KV heads x 256) and 36 Gated DeltaNet layers whose
 * state (conv (128*16*2 + 128*32) x 3 + 32 x 128 x 128, bf16) sets the attention block:
 * 544 tokens at TP 1 and 272 at TP 4 (the arithmetic of research/vllm-memory.md). */
static void test_hybrid_linear(void **state)
{
    (void)state;
    hbm_plan_input in = base(FIX "qwen3-next-80b-a3b");
    in.max_model_len = 32768;
    in.kv_cache_memory_bytes = 20LL << 30;
    hbm_plan_result r;
    run(&in, &r);
    assert_int_equal(r.block_size, 544);
    assert_int_equal(r.kv_bytes_per_token, 12 * 2 * 2 * 256 * 2); /* full attention only */
    int64_t page = 544 * 2048;
    assert_int_equal(r.num_blocks, (20LL << 30) / page / 12);
    /* per request: cdiv(32768, 544) attention blocks + one per linear group (3) */
    double per_req = (double)((32768 + 543) / 544 + 3);
    assert_true(fabs(r.max_concurrency - (double)r.num_blocks / per_req) < 1e-9);
    hbm_plan_result_free(&r);
    in.tensor_parallel_size = 4;
    run(&in, &r);
    assert_int_equal(r.block_size, 272);
    hbm_plan_result_free(&r);
    /* full CUDA graphs need a state block per decode sequence (newest rules) */
    in.kv_cache_memory_bytes = 1LL << 30;
    in.max_model_len = 4096;
    in.max_num_seqs = 512;
    run(&in, &r);
    assert_int_equal(r.num_blocks, (1LL << 30) / (272 * 1024) / 12);
    assert_false(r.fits);
    assert_string_equal(r.errors[0].kind, "mamba_blocks");
    assert_non_null(strstr(r.errors[0].message, "max_num_seqs (512) exceeds available Mamba cache blocks (321)"));
    hbm_plan_result_free(&r);
    in.enforce_eager = 1;
    run(&in, &r);
    assert_true(r.fits);
    hbm_plan_result_free(&r);
    in.enforce_eager = -1;
    in.max_num_seqs = -1;
    in.max_model_len = 32768;
    in.kv_cache_memory_bytes = 20LL << 30;
    /* 0.10.2-0.20 printed blocks // groups x block */
    in.tensor_parallel_size = 1;
    in.engine_version = "0.19.0";
    run(&in, &r);
    assert_int_equal(r.kv_cache_tokens, r.num_blocks / 4 * 544);
    hbm_plan_result_free(&r);
}

/* A gpt-oss-like config: 24 layers alternating sliding (128) and full attention. */
static void test_sliding_window(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_int_equal(th_mkdtemp(dir, sizeof dir, "plan-sw"), 0);
    char p[PATH_MAX];
    th_path(p, sizeof p, dir, "config.json");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "{\"model_type\":\"gpt_oss\",\"hidden_size\":2880,\"num_hidden_layers\":24,"
               "\"num_attention_heads\":64,\"num_key_value_heads\":8,\"head_dim\":64,"
               "\"vocab_size\":201088,\"intermediate_size\":2880,\"num_local_experts\":32,"
               "\"num_experts_per_tok\":4,\"sliding_window\":128,\"max_position_embeddings\":"
               "131072,\"torch_dtype\":\"bfloat16\",\"layer_types\":[");
    for (int i = 0; i < 24; i++)
        fprintf(f, "%s\"%s\"", i ? "," : "", i % 2 ? "full_attention" : "sliding_attention");
    fprintf(f, "]}\n");
    fclose(f);
    hbm_plan_input in = base(dir);
    in.max_model_len = 16384;
    in.kv_cache_memory_bytes = 8LL << 30;
    hbm_plan_result r;
    run(&in, &r);
    int64_t tok = 8 * 64 * 2 * 2;
    assert_int_equal(r.kv_bytes_per_token, tok * 24);
    /* two groups of 12 layers share the pool */
    int64_t blocks = (8LL << 30) / (16 * tok) / 12;
    assert_int_equal(r.num_blocks, blocks);
    /* a request: 1024 blocks in the full group + cdiv(127 + 8192, 16) + 1 in the sliding one */
    double per_req = 1024.0 + (double)((127 + 8192 + 15) / 16 + 1);
    assert_true(fabs(r.max_concurrency - (double)blocks / per_req) < 1e-9);
    hbm_plan_result_free(&r);
    assert_int_equal(th_rmtree(dir), 0);
}

/* Qwen3-30B-A3B at TP 1 (hidden 2048, top-8 of moe_intermediate 768, so N = 1536): with 16
 * sequences the sampler is small and the MoE layer sets the peak: the residual stream
 * (T x 3 x 2048) plus, per chunk row and routed expert, cache13 (max(N, 2048)) and cache2
 * (N / 2), bf16. Past 32768 tokens the workspace stops growing (one chunk at a time). */
static void test_fused_moe_workspace(void **state)
{
    (void)state;
    hbm_plan_input in = base(FIX "qwen3-30b-a3b");
    in.engine_version = "0.9.2";
    in.max_model_len = 8192;
    in.max_num_seqs = 16;
    in.max_num_batched_tokens = 8192;
    hbm_plan_result r;
    run(&in, &r);
    assert_int_equal(r.activation_bytes, 8192LL * 3 * 2048 * 2 + 8192LL * 8 * (2048 + 768) * 2);
    hbm_plan_result_free(&r);
    in.max_num_batched_tokens = 65536;
    run(&in, &r);
    assert_int_equal(r.activation_bytes, 65536LL * 3 * 2048 * 2 + 32768LL * 8 * (2048 + 768) * 2);
    hbm_plan_result_free(&r);
}

static void test_version_rules(void **state)
{
    (void)state;
    hbm_plan_input in = base(FIX "qwen3-0.6b");
    in.max_model_len = 8192;
    hbm_plan_result r;
    /* default utilisation: 0.92 from 0.21, with graph memory inside the budget */
    run(&in, &r);
    assert_true(fabs(r.gpu_memory_utilization - 0.92) < 1e-9);
    assert_true(r.graph_bytes > 0);
    int64_t with_graph = r.kv_cache_bytes;
    hbm_plan_result_free(&r);
    in.enforce_eager = 1;
    run(&in, &r);
    assert_int_equal(r.graph_bytes, 0);
    assert_int_equal(r.kv_cache_bytes, with_graph + (int64_t)(0.35 * GIB) + 28 * (6LL << 20));
    hbm_plan_result_free(&r);
    in.enforce_eager = -1;
    in.engine_version = "0.20.1";
    run(&in, &r);
    assert_true(fabs(r.gpu_memory_utilization - 0.9) < 1e-9);
    assert_int_equal(r.graph_bytes, 0);
    assert_true(r.graph_outside_bytes > 0);
    hbm_plan_result_free(&r);
    /* vllm-ascend before 0.15: no pre-check; memory others hold shrinks the KV cache */
    in.platform = HBM_PLAN_PLATFORM_ASCEND;
    in.mem_total_bytes = (int64_t)(61.27 * GIB);
    in.large_device = false;
    in.engine_version = "0.11.0";
    in.gpu_memory_utilization = 0.85;
    run(&in, &r);
    int64_t clean = r.kv_cache_bytes;
    assert_int_equal(r.block_size, 128);
    hbm_plan_result_free(&r);
    in.mem_free_bytes = (int64_t)(41.27 * GIB);
    run(&in, &r);
    assert_int_equal(r.nerrors, 0);
    assert_true(r.fits);
    assert_true(llabs(clean - r.kv_cache_bytes - (int64_t)(20 * GIB)) < 1024);
    hbm_plan_result_free(&r);
    /* from 0.15 it refuses to start instead, in the same words as vLLM */
    in.engine_version = "0.15.0";
    run(&in, &r);
    assert_false(r.fits);
    assert_string_equal(r.errors[0].kind, "free_memory");
    assert_non_null(strstr(r.errors[0].message, "Free memory on device (41.27/61.27 GiB)"));
    assert_non_null(strstr(r.errors[0].message, "(0.85, 52.08 GiB)"));
    hbm_plan_result_free(&r);
    /* small devices keep the 2048 / 256 batch defaults; large non-A100 get 8192 / 1024 */
    in = base(FIX "qwen3-0.6b");
    in.max_model_len = 8192;
    run(&in, &r);
    assert_int_equal(r.max_num_batched_tokens, 8192);
    assert_int_equal(r.max_num_seqs, 1024);
    hbm_plan_result_free(&r);
    in.large_device = false;
    run(&in, &r);
    assert_int_equal(r.max_num_batched_tokens, 2048);
    assert_int_equal(r.max_num_seqs, 256);
    hbm_plan_result_free(&r);
    /* from 0.28.0 the server batches 16384 tokens on cards of 160 GiB and more */
    in.large_device = true;
    in.mem_total_bytes = in.mem_free_bytes = (int64_t)(178.35 * GIB);
    in.engine_version = "0.28.0";
    run(&in, &r);
    assert_int_equal(r.max_num_batched_tokens, 16384);
    hbm_plan_result_free(&r);
    in.engine_version = "0.27.1";
    run(&in, &r);
    assert_int_equal(r.max_num_batched_tokens, 8192);
    hbm_plan_result_free(&r);
    /* a bad version string is refused */
    in.engine_version = "latest";
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), -1);
    assert_non_null(strstr(err.msg, "--vllm-version"));
    hbm_plan_result_free(&r);
}

/* A small MoE config with the quantisation named by the caller. */
static void quant_model(hbm_plan_model *m, const char *quant)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "{\"architectures\":[\"GptOssForCausalLM\"],\"hidden_size\":2880,"
             "\"num_hidden_layers\":2,\"num_attention_heads\":64,\"num_key_value_heads\":8,"
             "\"head_dim\":64,\"intermediate_size\":2880,\"num_local_experts\":128,"
             "\"num_experts_per_tok\":4,\"vocab_size\":1024,\"torch_dtype\":\"bfloat16\"%s}",
             quant);
    hbm_plan_model_init(m);
    hbm_err err = {{0}};
    if (hbm_plan_model_parse_config(cfg, strlen(cfg), "config.json", m, &err) < 0)
        fail_msg("%s", err.msg);
}

/* Weights from the architecture under a quantisation: vLLM's MXFP4 method quantises only the
 * routed experts (4 bits, a byte of scale per 32, bf16 biases), other methods every linear
 * layer but the modules the config leaves out; MXFP4 experts are padded per rank as
 * mxfp4.py's Marlin layout wants (n % 256, k % 128). */
static void test_quantised_weights(void **state)
{
    (void)state;
    const double H = 2880, I = 2880, E = 128, L = 2;
    const double attn = H * 64 * 64 + H * 8 * 128 + 64 * 64 * H, router = H * E;
    const double experts = E * 3 * H * I, norms = 2 * H * L + H, emb = 2 * 1024 * H;
    hbm_plan_model m;
    quant_model(&m, ",\"quantization_config\":{\"quant_method\":\"mxfp4\"}");
    assert_int_equal(m.expert_params, (int64_t)(experts * L));
    double want = L * (attn + router) * 2 + norms * 2 + emb * 2 +
                  L * E * (3 * I * H * (0.5 + 1.0 / 32) + (2 * I + H) * 2);
    assert_true(fabs((double)m.weights_bytes - want) < 16);
    hbm_plan_model_free(&m);

    quant_model(&m, ",\"quantization_config\":{\"quant_method\":\"awq\"}");
    int64_t all4 = m.weights_bytes;
    hbm_plan_model_free(&m);
    quant_model(&m, ",\"quantization_config\":{\"quant_method\":\"awq\",\"modules_to_not_convert\":"
                    "[\"model.layers.*.self_attn\",\"mlp.gate\",\"lm_head\"]}");
    assert_int_equal(m.quant_skip, HBM_PLAN_QSKIP_ATTN | HBM_PLAN_QSKIP_ROUTER);
    double more = L * (attn + router) * (2 - (0.5 + 0.03125));
    assert_true(fabs((double)(m.weights_bytes - all4) - more) < 16);
    hbm_plan_model_free(&m);
    /* gate_proj is a dense MLP's, not the router */
    quant_model(&m, ",\"quantization_config\":{\"quant_method\":\"gptq\",\"ignore\":"
                    "[\"re:.*gate_proj.*\",\"re:.*shared_expert.*\"]}");
    assert_int_equal(m.quant_skip, HBM_PLAN_QSKIP_SHARED);
    hbm_plan_model_free(&m);
    /* one numbered layer's MLP is not every layer's experts */
    quant_model(&m, ",\"quantization_config\":{\"quant_method\":\"awq\",\"modules_to_not_convert\":"
                    "[\"model.layers.0.mlp\"]}");
    assert_int_equal(m.quant_skip, 0);
    assert_int_equal(m.weights_bytes, all4);
    hbm_plan_model_free(&m);

    /* the published gpt-oss-120b under 0.10.1's Marlin layout, as vLLM logged "Model loading
     * took": 17.22 GiB per rank at TP 4 on A100s (720 rows per rank padded to 768, hidden to
     * 3072; vllm-cases:3) and 65.97 GiB at TP 1 on an H100 (2944 x 3072; vllm#23278) */
    const int64_t tp[] = {4, 1};
    const char *dev[] = {"A100-80G", "H100-80G"};
    const double logged[] = {17.22, 65.97};
    for (int k = 0; k < 2; k++) {
        hbm_plan_input in = base(FIX "gpt-oss-120b");
        const hbm_plan_device *d = hbm_plan_device_find(dev[k]);
        in.device_name = d->name;
        in.mem_total_bytes = d->total_bytes;
        in.engine_version = "0.10.1";
        in.tensor_parallel_size = tp[k];
        hbm_plan_result r;
        run(&in, &r);
        double w = (double)r.weights_bytes / GIB;
        print_message("%s TP %lld: weights %.3f GiB per rank, vLLM %.2f GiB\n", dev[k],
                      (long long)tp[k], w, logged[k]);
        assert_true(fabs(w - logged[k]) / logged[k] < 0.01);
        hbm_plan_result_free(&r);
    }
}

/* --sampler: the dummy sampler's rows x vocabulary at FlashInfer's 10 bytes an entry or the
 * torch sort-based 38, whatever the release would choose; V0 keeps its own. */
static void test_sampler_choice(void **state)
{
    (void)state;
    const char *ver[] = {"0.10.1", "0.11.0", "0.7.3"};
    for (int k = 0; k < 3; k++) {
        int64_t bytes[3];
        for (int s = 0; s < 3; s++) {
            hbm_plan_input in = base(FIX "qwen2-7b-instruct");
            in.engine_version = ver[k];
            in.vllm.sampler = (hbm_plan_sampler)s;
            hbm_plan_result r;
            run(&in, &r);
            bytes[s] = r.sampler_bytes;
            if (s == 0 && k < 2) /* an H100's V1 default of 1024 sequences */
                assert_int_equal(r.sampler_rows, 1024);
            hbm_plan_result_free(&r);
        }
        int64_t entries = 1024LL * 152064;
        print_message("%s: default %lld, flashinfer %lld, torch %lld\n", ver[k],
                      (long long)bytes[0], (long long)bytes[1], (long long)bytes[2]);
        if (k == 2) { /* V0: the option is ignored */
            assert_int_equal(bytes[1], bytes[0]);
            assert_int_equal(bytes[2], bytes[0]);
            continue;
        }
        assert_int_equal(bytes[2] - bytes[1], entries * 28);
        assert_int_equal(bytes[0], k == 0 ? bytes[1] : bytes[2]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_heads),
        cmocka_unit_test(test_fixed_budget_blocks),
        cmocka_unit_test(test_mla),
        cmocka_unit_test(test_hybrid_linear),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_version_rules),
        cmocka_unit_test(test_fused_moe_workspace),
        cmocka_unit_test(test_quantised_weights),
        cmocka_unit_test(test_sampler_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
