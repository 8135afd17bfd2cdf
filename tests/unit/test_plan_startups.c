/* Reported start-ups planned before launch: a 14B model beside an orphan, a 32B model too
 * big for one 910B, a 72B MoE on TP 4. */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "hbm/plan.h"

#define GIB 1073741824.0

static void print_result(const hbm_plan_result *r)
{
    json_t *j = hbm_plan_result_to_json(r);
    char *t = json_dumps(j, JSON_INDENT(2));
    printf("%s\n", t);
    free(t);
    json_decref(j);
}

static const hbm_plan_rec *find_rec(const hbm_plan_result *r, const char *kind)
{
    for (size_t i = 0; i < r->nrecs; i++)
        if (!strcmp(r->recs[i].kind, kind))
            return &r->recs[i];
    return NULL;
}

/* XiYanSQL-QwenCoder-14B (Qwen2.5-14B architecture, bf16) on a 43.24 GiB Ascend
 * device where an orphaned EngineCore holds ~26 GB: 16.58 GiB free, utilisation 0.85. */
static void test_qwen14b_beside_orphan_310p3(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = "tests/fixtures/models/qwen2.5-14b";
    in.platform = HBM_PLAN_PLATFORM_ASCEND;
    in.mem_total_bytes = (int64_t)(43.24 * GIB);
    in.mem_free_bytes = (int64_t)(16.58 * GIB);
    in.gpu_memory_utilization = 0.85;
    in.max_model_len = 8192;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    print_result(&r);
    /* ~27.5 GiB of weights, estimated from the architecture (no safetensors here) */
    assert_true(r.model.weights_estimated);
    assert_true(fabs((double)r.weights_bytes / GIB - 27.5) < 0.3);
    /* vLLM's own refusal, same numbers */
    assert_false(r.fits);
    assert_string_equal(r.errors[0].kind, "free_memory");
    assert_string_equal(r.errors[0].message,
                        "Free memory on device (16.58/43.24 GiB) on startup is less than "
                        "desired GPU memory utilization (0.85, 36.75 GiB). Decrease GPU memory "
                        "utilization or reduce GPU memory used by other processes.");
    /* the truth: no utilisation works while the memory is held; free it first */
    assert_true(r.nrecs >= 2);
    assert_string_equal(r.recs[0].kind, "free_memory");
    assert_non_null(strstr(r.recs[0].change, "No --gpu-memory-utilization works while 26.66 GiB"));
    assert_non_null(strstr(r.recs[0].change, "hbmctl doctor"));
    assert_null(find_rec(&r, "gpu_memory_utilization"));
    /* after freeing: 0.85 fits; the numbers in the advice are the plan's own */
    hbm_plan_input freed = in;
    freed.mem_free_bytes = in.mem_total_bytes;
    hbm_plan_result f;
    assert_int_equal(hbm_plan_run(&freed, &f, &err), 0);
    assert_true(f.fits);
    char want[160];
    snprintf(want, sizeof want, "%lld KV tokens, max concurrency %.2fx at max-model-len 8192",
             (long long)f.kv_cache_tokens, f.max_concurrency);
    printf("freed: %s\n", want);
    assert_non_null(strstr(r.recs[0].change, "--gpu-memory-utilization 0.85 fits"));
    assert_non_null(strstr(r.recs[0].change, want));
    assert_true(f.kv_cache_tokens > 8192);
    hbm_plan_result_free(&f);
    /* or two devices */
    const hbm_plan_rec *tp = find_rec(&r, "tensor_parallel_size");
    assert_non_null(tp);
    assert_non_null(strstr(tp->flags, "--tensor-parallel-size 2"));
    assert_non_null(strstr(tp->launch_line, "--tensor-parallel-size 2"));
    hbm_plan_result_free(&r);
}

/* Qwen2.5-32B bf16 does not load on one 64 GB 910B; TP 2 or more fits. */
static void test_qwen32b_needs_tp2_on_910b(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = "tests/fixtures/models/qwen2.5-32b";
    const hbm_plan_device *d = hbm_plan_device_find("910B3");
    assert_non_null(d);
    in.platform = d->platform;
    in.mem_total_bytes = d->total_bytes;
    in.device_name = d->name;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    print_result(&r);
    assert_false(r.fits);
    /* 61.03 GiB of weights against the 60.96 GiB vllm-ascend sees: they do not load */
    assert_string_equal(r.errors[0].kind, "weights_oom");
    assert_true(r.weights_bytes > d->total_bytes);
    const hbm_plan_rec *tp = find_rec(&r, "tensor_parallel_size");
    assert_non_null(tp);
    assert_string_equal(r.recs[0].kind, "tensor_parallel_size");
    int n = atoi(strstr(tp->flags, "--tensor-parallel-size ") + 23);
    assert_true(n >= 2);
    /* and the flag line it gives really fits */
    hbm_plan_input two = in;
    two.tensor_parallel_size = n;
    hbm_plan_result t;
    assert_int_equal(hbm_plan_run(&two, &t, &err), 0);
    assert_true(t.fits);
    hbm_plan_result_free(&t);
    hbm_plan_result_free(&r);
}

/* Writes a sparse safetensors shard: a real header whose tensors span `bytes` of data; the
 * data region is a hole, so 36 GB costs no disk. */
static void write_sparse_shard(const char *path, const char *tensor, int64_t bytes)
{
    int64_t elems = bytes / 2;
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr,
                     "{\"%s\":{\"dtype\":\"BF16\",\"shape\":[%lld],\"data_offsets\":[0,%lld]}}",
                     tensor, (long long)elems, (long long)(elems * 2));
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    assert_true(fd >= 0);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    assert_int_equal(write(fd, len, 8), 8);
    assert_int_equal(write(fd, hdr, (size_t)n), n);
    assert_int_equal(ftruncate(fd, 8 + n + elems * 2), 0);
    close(fd);
}

/* openPangu-72B with the reported facts: 50 layers, 80 routed experts, 8 per
 * token, 4 KV heads, bf16, 128K context, ~144 GB of weights. ASSUMED (the report does not
 * say): hidden_size 8192, 64 attention heads, head_dim 128, moe_intermediate_size 1536,
 * vocab 153600. TP 4 on 64 GB 910B, utilisation 0.85, block size 128, vllm-ascend 0.11.0. */
static void make_pangu(const char *dir)
{
    th_write_text(dir, "config.json",
                  "{\"architectures\":[\"PanguProMoEForCausalLM\"],\"model_type\":\"pangu\","
                  "\"num_hidden_layers\":50,\"n_routed_experts\":80,\"num_experts_per_tok\":8,"
                  "\"num_key_value_heads\":4,\"torch_dtype\":\"bfloat16\","
                  "\"max_position_embeddings\":131072,"
                  "\"hidden_size\":8192,\"num_attention_heads\":64,\"head_dim\":128,"
                  "\"moe_intermediate_size\":1536,\"vocab_size\":153600}\n");
    /* 144 GB in four shards with an index, as checkpoints ship */
    char index[512];
    int at = snprintf(index, sizeof index,
                      "{\"metadata\":{\"total_size\":144000000000},\"weight_map\":{");
    for (int i = 1; i <= 4; i++) {
        char name[64], shard[PATH_MAX];
        snprintf(name, sizeof name, "model-0000%d-of-00004.safetensors", i);
        th_path(shard, sizeof shard, dir, name);
        write_sparse_shard(shard, i == 1 ? "model.embed_tokens.weight" : "model.layers.w",
                           36000000000LL);
        at += snprintf(index + at, sizeof index - (size_t)at, "%s\"t%d\":\"%s\"",
                       i > 1 ? "," : "", i, name);
    }
    snprintf(index + at, sizeof index - (size_t)at, "}}\n");
    th_write_text(dir, "model.safetensors.index.json", index);

}

/* The reported launch's device and release: 64 GB 910B, block 128, vllm-ascend 0.11.0. */
static void pangu_input(const char *dir, hbm_plan_input *in)
{
    const hbm_plan_device *d = hbm_plan_device_find("910B");
    assert_non_null(d);
    hbm_plan_input_init(in);
    in->model_path = dir;
    in->platform = d->platform;
    in->mem_total_bytes = d->total_bytes;
    in->device_name = d->name;
    in->engine_version = "0.11.0";
    in->block_size = 128;
}

static void test_pangu72b_tp4_kv_budget(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_int_equal(th_mkdtemp(dir, sizeof dir, "plan-pangu"), 0);
    make_pangu(dir);
    for (int k = 0; k < 2; k++) {
        hbm_plan_input in;
        pangu_input(dir, &in);
        in.tensor_parallel_size = 4;
        in.gpu_memory_utilization = 0.85;
        in.max_model_len = k == 0 ? 131072 : 8192;
        hbm_plan_result r;
        hbm_err err = {{0}};
        if (hbm_plan_run(&in, &r, &err) < 0)
            fail_msg("%s", err.msg);
        print_result(&r);
        printf("openPangu-72B at max-model-len %lld: %lld KV tokens, max concurrency %.2fx\n",
               (long long)r.max_model_len, (long long)r.kv_cache_tokens, r.max_concurrency);
        assert_false(r.model.weights_estimated);
        assert_int_equal(r.model.weights_bytes, 144000000000LL);
        assert_int_equal(r.model.weights_files, 4);
        assert_true(r.fits);
        assert_int_equal(r.block_size, 128);
        /* 4 KV heads over TP 4: one per rank, 50 layers, K and V, bf16 */
        assert_int_equal(r.kv_bytes_per_token, 50 * 2 * 1 * 128 * 2);
        assert_true(r.kv_cache_tokens >= in.max_model_len);
        /* concurrency is blocks over blocks per request, as vLLM prints it */
        double want = (double)r.num_blocks / (double)((in.max_model_len + 127) / 128);
        assert_true(fabs(r.max_concurrency - want) < 1e-9);
        assert_true(r.max_concurrency >= 1.0);
        hbm_plan_result_free(&r);
    }
    assert_int_equal(th_rmtree(dir), 0);
}

/* The question asked of it, in one call: how many 910B and what utilisation serve 4
 * requests of the whole 128K context at once (block 128, vllm-ascend 0.11.0)? */
static void test_pangu72b_serve_128k(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_int_equal(th_mkdtemp(dir, sizeof dir, "plan-pangu"), 0);
    make_pangu(dir);
    hbm_plan_input in;
    pangu_input(dir, &in);
    in.max_model_len = 131072;
    in.serve_requests = 4;
    hbm_plan_result r;
    hbm_err err = {{0}};
    if (hbm_plan_serve(&in, &r, &err) < 0)
        fail_msg("%s", err.msg);
    const hbm_plan_launch *l = &r.launch;
    printf("openPangu-72B, 4 x 131072: TP %lld PP %lld at %.2f, %.2fx; fewer devices %.2fx, "
           "0.01 less %.2fx\n",
           (long long)l->tensor_parallel_size, (long long)l->pipeline_parallel_size,
           l->gpu_memory_utilization, l->max_concurrency, l->fewer_devices_concurrency,
           l->lower_util_concurrency);
    assert_true(l->serves);
    assert_true(r.fits);
    /* 144 GB of weights: two 61.27 GiB devices cannot hold them */
    assert_true(l->tensor_parallel_size * l->pipeline_parallel_size >= 3);
    assert_true(l->max_concurrency >= 4 && l->lower_util_concurrency < 4);
    assert_true(l->fewer_devices_concurrency < 4);
    hbm_plan_result_free(&r);
    assert_int_equal(th_rmtree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen14b_beside_orphan_310p3),
        cmocka_unit_test(test_qwen32b_needs_tp2_on_910b),
        cmocka_unit_test(test_pangu72b_tp4_kv_budget),
        cmocka_unit_test(test_pangu72b_serve_128k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
