/* safetensors headers on real files this test writes: several dtypes, sharded checkpoints
 * with an index, and broken files (corrupt length, header larger than the file, shape that
 * does not match its byte range), plus config.json reading (nested text_config, MLA,
 * hybrid layer kinds, kv heads, head size). */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "hbm/plan.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    return th_mkdtemp(dir, sizeof dir, "plan-st");
}

static int teardown(void **state)
{
    (void)state;
    return th_rmtree(dir);
}

static char *path_of(const char *name)
{
    static char p[PATH_MAX];
    th_path(p, sizeof p, dir, name);
    return p;
}

/* A safetensors file with the given header; data_bytes of real zero data after it.
 * len_override replaces the 8-byte length when not 0. */
static void write_st(const char *name, const char *header, size_t data_bytes,
                     uint64_t len_override)
{
    FILE *f = fopen(path_of(name), "wb");
    assert_non_null(f);
    uint64_t n = len_override ? len_override : strlen(header);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(n >> (8 * i));
    fwrite(len, 1, 8, f);
    fputs(header, f);
    for (size_t i = 0; i < data_bytes; i++)
        fputc(0, f);
    fclose(f);
}

static void test_dtypes(void **state)
{
    (void)state;
    /* BF16 2x3 = 12 B, F32 4 = 16 B, F8_E4M3 8 = 8 B, I32 3 = 12 B (GPTQ packed), F16 2x2 = 8 B */
    write_st("one.safetensors",
             "{\"__metadata__\":{\"format\":\"pt\"},"
             "\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[12,28]},"
             "\"b\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,4],\"data_offsets\":[28,36]},"
             "\"q.qweight\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[36,48]},"
             "\"lm_head.weight\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[48,56]}}",
             56, 0);
    hbm_plan_st_sum s;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_safetensors_file(path_of("one.safetensors"), &s, &err), 0);
    assert_int_equal(s.tensor_bytes, 56);
    assert_int_equal(s.tensors, 5);
    assert_int_equal(s.embed_bytes, 12 + 8);
}

static void test_corrupt_length(void **state)
{
    (void)state;
    hbm_plan_st_sum s;
    hbm_err err = {{0}};
    /* length larger than the file */
    write_st("big.safetensors", "{}", 0, 4096);
    assert_int_equal(hbm_plan_safetensors_file(path_of("big.safetensors"), &s, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "big.safetensors"));
    assert_non_null(strstr(err.msg, "header length 4096 at offset 0 is larger than the file"));
    /* an absurd length, as a random 8 bytes give */
    write_st("absurd.safetensors", "{}", 0, 0xffffffffffffff00ULL);
    assert_int_equal(hbm_plan_safetensors_file(path_of("absurd.safetensors"), &s, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "at offset 0"));
    /* an absurd length inside a (claimed) huge file: refused before reading it */
    uint8_t head[8] = {0, 0, 0, 0, 1, 0, 0, 0}; /* 2^32 */
    assert_int_equal(hbm_plan_safetensors_parse(head, 8, 1ULL << 40, "huge.safetensors", &s, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "huge.safetensors: header length 4294967296 at offset 0 is absurd"));
    /* too short to hold a length */
    th_write_text(dir, "short.safetensors", "abc");
    assert_int_equal(hbm_plan_safetensors_file(path_of("short.safetensors"), &s, &err), -1);
    assert_non_null(strstr(err.msg, "too short"));
    /* not JSON */
    write_st("junk.safetensors", "{\"a\":", 0, 0);
    assert_int_equal(hbm_plan_safetensors_file(path_of("junk.safetensors"), &s, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "header JSON at offset"));
    /* a shape that does not match its bytes */
    write_st("lie.safetensors",
             "{\"a\":{\"dtype\":\"BF16\",\"shape\":[1000],\"data_offsets\":[0,8]}}", 8, 0);
    assert_int_equal(hbm_plan_safetensors_file(path_of("lie.safetensors"), &s, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "tensor \"a\": BF16 shape needs 2000 bytes"));
    /* a range past the end of the data */
    write_st("past.safetensors",
             "{\"a\":{\"dtype\":\"U8\",\"shape\":[100],\"data_offsets\":[0,100]}}", 10, 0);
    assert_int_equal(hbm_plan_safetensors_file(path_of("past.safetensors"), &s, &err), -1);
    assert_non_null(strstr(err.msg, "outside"));
}

static const char *small_config =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":64,"
    "\"intermediate_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
    "\"num_key_value_heads\":2,\"vocab_size\":100,\"max_position_embeddings\":256,"
    "\"torch_dtype\":\"bfloat16\"}";

static void test_shards_and_model_dir(void **state)
{
    (void)state;
    char sub[128];
    th_path(sub, sizeof sub, dir, "sharded");
    assert_int_equal(mkdir(sub, 0755), 0);
    th_write_text(dir, "sharded/config.json", small_config);
    write_st("sharded/model-00001-of-00002.safetensors",
             "{\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[100,64],"
             "\"data_offsets\":[0,12800]}}",
             12800, 0);
    write_st("sharded/model-00002-of-00002.safetensors",
             "{\"w\":{\"dtype\":\"F32\",\"shape\":[10,10],\"data_offsets\":[0,400]},"
             "\"x\":{\"dtype\":\"BF16\",\"shape\":[5],\"data_offsets\":[400,410]}}",
             410, 0);
    /* a stray file the index does not name must not count */
    write_st("sharded/stray.safetensors",
             "{\"s\":{\"dtype\":\"U8\",\"shape\":[7],\"data_offsets\":[0,7]}}", 7, 0);
    th_write_text(dir, "sharded/model.safetensors.index.json",
               "{\"metadata\":{\"total_size\":13210},\"weight_map\":{"
               "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
               "\"w\":\"model-00002-of-00002.safetensors\","
               "\"x\":\"model-00002-of-00002.safetensors\"}}");
    hbm_plan_model m;
    hbm_plan_model_init(&m);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_model_load(sub, &m, &err), 0);
    assert_false(m.weights_estimated);
    assert_int_equal(m.weights_bytes, 12800 + 400 + 10);
    assert_int_equal(m.weights_files, 2);
    assert_int_equal(m.embed_bytes, 12800);
    assert_int_equal(m.head_dim, 16);
    assert_int_equal(m.num_kv_heads, 2);
    hbm_plan_model_free(&m);

    /* without the index every *.safetensors counts */
    unlink(path_of("sharded/model.safetensors.index.json"));
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_load(sub, &m, &err), 0);
    assert_int_equal(m.weights_bytes, 12800 + 400 + 10 + 7);
    assert_int_equal(m.weights_files, 3);
    hbm_plan_model_free(&m);

    /* a broken shard fails the whole model with its name */
    write_st("sharded/stray.safetensors", "{}", 0, 999999);
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_load(sub, &m, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "stray.safetensors"));
    hbm_plan_model_free(&m);

    /* an index naming a missing shard */
    unlink(path_of("sharded/stray.safetensors"));
    th_write_text(dir, "sharded/model.safetensors.index.json",
               "{\"weight_map\":{\"w\":\"model-00003-of-00003.safetensors\"}}");
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_load(sub, &m, &err), -1);
    assert_non_null(strstr(err.msg, "model-00003-of-00003.safetensors"));
    hbm_plan_model_free(&m);
}

static void test_estimate_without_weights(void **state)
{
    (void)state;
    char sub[128];
    th_path(sub, sizeof sub, dir, "noweights");
    assert_int_equal(mkdir(sub, 0755), 0);
    th_write_text(dir, "noweights/config.json", small_config);
    hbm_plan_model m;
    hbm_plan_model_init(&m);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_model_load(sub, &m, &err), 0);
    assert_true(m.weights_estimated);
    /* per layer: q 64x64, k,v 64x32 each, o 64x64, mlp 3x64x128, norms 2x64 */
    int64_t layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64;
    int64_t params = 2 * layer + 2 * 100 * 64 + 64;
    assert_int_equal(m.params_estimated, params);
    assert_int_equal(m.weights_bytes, params * 2);
    hbm_plan_model_free(&m);
}

static void test_configs(void **state)
{
    (void)state;
    hbm_plan_model m;
    hbm_err err = {{0}};
    /* multimodal: the language model sits in text_config */
    const char *vl = "{\"architectures\":[\"Qwen3VLForConditionalGeneration\"],"
                     "\"text_config\":{\"hidden_size\":4096,\"num_hidden_layers\":36,"
                     "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"head_dim\":128,"
                     "\"vocab_size\":151936,\"intermediate_size\":12288},"
                     "\"vision_config\":{\"hidden_size\":1152,\"depth\":27},"
                     "\"torch_dtype\":\"bfloat16\"}";
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_parse_config(vl, strlen(vl), "vl.json", &m, &err), 0);
    assert_int_equal(m.num_layers, 36);
    assert_int_equal(m.num_kv_heads, 8);
    assert_int_equal(m.head_dim, 128);
    hbm_plan_model_free(&m);

    /* MLA from the fixture: latent 512 + rope 64, one "head" */
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_load("tests/fixtures/models/deepseek-v2-lite-chat", &m, &err), 0);
    assert_true(m.mla);
    assert_int_equal(m.head_dim, 576);
    assert_int_equal(m.num_kv_heads, 1);
    hbm_plan_model_free(&m);

    /* Qwen3-Next: 12 of 48 layers full attention */
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_load("tests/fixtures/models/qwen3-next-80b-a3b", &m, &err), 0);
    int full = 0;
    for (int64_t i = 0; i < m.num_layers; i++)
        full += m.layer_kinds[i] == HBM_PLAN_LAYER_FULL;
    assert_int_equal(full, 12);
    hbm_plan_model_free(&m);

    /* Gemma-style pattern: 5 sliding, then one full */
    const char *gm = "{\"model_type\":\"gemma3_text\",\"hidden_size\":2560,\"num_hidden_layers\":"
                     "12,\"num_attention_heads\":8,\"num_key_value_heads\":4,\"head_dim\":256,"
                     "\"vocab_size\":262208,\"sliding_window\":1024,\"sliding_window_pattern\":6}";
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_parse_config(gm, strlen(gm), "g.json", &m, &err), 0);
    int sw = 0;
    for (int64_t i = 0; i < m.num_layers; i++)
        sw += m.layer_kinds[i] == HBM_PLAN_LAYER_SLIDING;
    assert_int_equal(sw, 10);
    assert_int_equal(m.sliding_window, 1024);
    hbm_plan_model_free(&m);

    /* Qwen2 with use_sliding_window false: full attention despite sliding_window */
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_load("tests/fixtures/models/qwen2.5-32b/config.json", &m, &err), 0);
    for (int64_t i = 0; i < m.num_layers; i++)
        assert_int_equal(m.layer_kinds[i], HBM_PLAN_LAYER_FULL);
    hbm_plan_model_free(&m);

    /* GLM's multi_query_group_num gives the KV heads; no head_dim -> hidden / heads */
    const char *glm = "{\"hidden_size\":4096,\"num_layers\":40,\"num_attention_heads\":32,"
                      "\"multi_query_group_num\":2,\"padded_vocab_size\":151552,"
                      "\"ffn_hidden_size\":13696,\"seq_length\":131072}";
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_parse_config(glm, strlen(glm), "glm.json", &m, &err), 0);
    assert_int_equal(m.num_kv_heads, 2);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.max_position_embeddings, 131072);
    hbm_plan_model_free(&m);

    /* errors name the file and line */
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_parse_config("{\n\"a\":", 6, "bad.json", &m, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "bad.json:2"));
    hbm_plan_model_free(&m);
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_parse_config("{\"x\":1}", 7, "empty.json", &m, &err), -1);
    assert_non_null(strstr(err.msg, "empty.json"));
    hbm_plan_model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_corrupt_length),
        cmocka_unit_test(test_shards_and_model_dir),
        cmocka_unit_test(test_estimate_without_weights),
        cmocka_unit_test(test_configs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
