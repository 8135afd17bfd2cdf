/* Speculative decoding in the plan: --speculative-config parsing and its errors, what each
 * method adds to the start-up (n-gram nothing, EAGLE a layer, a draft model its weights
 * and KV layers, MTP the target's own layers), and the older V0 flags by release. */
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
#include <jansson.h>

#include "hbm/plan.h"

#define FIX "tests/fixtures/models/"
#define GIB 1073741824LL

static int parse(const char *text, hbm_plan_spec_config *sc, hbm_err *err)
{
    return hbm_plan_spec_parse(text, strlen(text), sc, err);
}

static void test_parse(void **state)
{
    (void)state;
    hbm_plan_spec_config sc;
    hbm_err err = {{0}};
    assert_int_equal(parse("{\"method\": \"eagle3\", \"model\": \"d\", "
                           "\"num_speculative_tokens\": 3, \"draft_tensor_parallel_size\": 1}",
                           &sc, &err), 0);
    assert_string_equal(sc.method, "eagle3");
    assert_string_equal(sc.model, "d");
    assert_int_equal(sc.num_speculative_tokens, 3);
    assert_int_equal(sc.draft_tensor_parallel_size, 1);
    /* no method: vLLM goes by the draft's name */
    assert_int_equal(parse("{\"model\": \"yuhuili/EAGLE-LLaMA3-Instruct-8B\", "
                           "\"num_speculative_tokens\": 5}", &sc, &err), 0);
    assert_string_equal(sc.method, "eagle");
    assert_int_equal(parse("{\"model\": \"Qwen/Qwen3-0.6B\", \"num_speculative_tokens\": 4}",
                           &sc, &err), 0);
    assert_string_equal(sc.method, "draft_model");
    assert_int_equal(parse("{\"model\": \"[ngram]\", \"num_speculative_tokens\": 4}", &sc, &err), 0);
    assert_string_equal(sc.method, "ngram");
    assert_int_equal(parse("{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}",
                           &sc, &err), 0);
    assert_int_equal(sc.draft_tensor_parallel_size, -1);
    /* no method, no model: the target's MTP layers, decided with the target */
    assert_int_equal(parse("{\"num_speculative_tokens\": 1}", &sc, &err), 0);
    assert_string_equal(sc.method, "");
}

static void expect_error(const char *text, const char *words)
{
    hbm_plan_spec_config sc;
    hbm_err err = {{0}};
    assert_int_equal(parse(text, &sc, &err), -1);
    printf("%s -> %s\n", text, err.msg);
    assert_non_null(strstr(err.msg, "--speculative-config"));
    assert_non_null(strstr(err.msg, words));
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("{\"method\": \"ngram\"", "not JSON");
    expect_error("[\"ngram\"]", "must be a JSON object");
    expect_error("{\"method\": \"lookahead\"}", "method \"lookahead\" is not one vLLM knows");
    expect_error("{\"method\": \"eagle\", \"num_speculative_tokens\": 2}", "needs a \"model\"");
    expect_error("{\"method\": \"ngram\"}", "needs \"num_speculative_tokens\"");
    expect_error("{\"method\": \"ngram\", \"num_speculative_tokens\": 0}",
                 "num_speculative_tokens must be a positive integer");
    expect_error("{\"method\": \"ngram\", \"num_speculative_tokens\": \"3\"}",
                 "num_speculative_tokens must be a positive integer");
    expect_error("{\"method\": 3}", "method must be a string");
    expect_error("{\"method\": \"ngram\", \"method\": \"eagle\"}", "not JSON");
}

/* A plan of model on an H100 with flags. */
static void plan(const char *model, const char *version, int argc, char **argv,
                 hbm_plan_result *r)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, argc, argv, &err), 0);
    in.model_path = model;
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = (int64_t)(79.18 * GIB);
    in.engine_version = version;
    in.max_model_len = 8192;
    if (hbm_plan_run(&in, r, &err) < 0)
        fail_msg("%s", err.msg);
}

static void test_ngram_is_free(void **state)
{
    (void)state;
    hbm_plan_result base, ng;
    plan(FIX "llama-3.1-8b-instruct", "0.11.0", 0, NULL, &base);
    char *argv[] = {"--speculative-config",
                    "{\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
                    "\"prompt_lookup_max\": 4}"};
    plan(FIX "llama-3.1-8b-instruct", "0.11.0", 2, argv, &ng);
    assert_true(ng.spec.on);
    assert_string_equal(ng.spec.method, "ngram");
    assert_int_equal(ng.spec.draft_weights_bytes, 0);
    assert_int_equal(ng.spec.draft_kv_bytes_per_token, 0);
    assert_int_equal(ng.weights_bytes, base.weights_bytes);
    assert_int_equal(ng.kv_bytes_per_token, base.kv_bytes_per_token);
    assert_int_equal(ng.kv_cache_tokens, base.kv_cache_tokens);
    assert_false(base.spec.on);
    hbm_plan_result_free(&base);
    hbm_plan_result_free(&ng);
}

static void test_eagle3_adds_a_layer(void **state)
{
    (void)state;
    hbm_plan_result base, e3;
    plan(FIX "llama-3.1-8b-instruct", "0.11.0", 0, NULL, &base);
    char *argv[] = {"--speculative-config",
                    "{\"method\": \"eagle3\", \"model\": \"" FIX "eagle3-llama3.1-instruct-8b\", "
                    "\"num_speculative_tokens\": 3}"};
    plan(FIX "llama-3.1-8b-instruct", "0.11.0", 2, argv, &e3);
    /* one decoder layer shaped like the target's: 8 KV heads x 128 x K,V x bf16 */
    assert_int_equal(e3.spec.draft_layers, 1);
    assert_int_equal(e3.spec.draft_kv_bytes_per_token, 8 * 128 * 2 * 2);
    assert_int_equal(e3.kv_bytes_per_token, base.kv_bytes_per_token + 8 * 128 * 2 * 2);
    /* q/k/v over 2 x 4096, o, MLP, fc over 3 x 4096, lm_head over 32000: 0.42 B parameters, 0.79 GiB in bf16 */
    double dw = (double)e3.spec.draft_weights_bytes / GIB;
    printf("EAGLE-3 head: %.3f GiB\n", dw);
    assert_true(dw > 0.78 && dw < 0.80);
    assert_int_equal(e3.weights_bytes, base.weights_bytes + e3.spec.draft_weights_bytes);
    assert_true(e3.kv_cache_tokens < base.kv_cache_tokens);
    json_t *j = hbm_plan_result_to_json(&e3);
    json_t *s = json_object_get(j, "speculative");
    assert_string_equal(json_string_value(json_object_get(s, "method")), "eagle3");
    assert_int_equal(json_integer_value(json_object_get(s, "num_speculative_tokens")), 3);
    assert_int_equal(json_integer_value(json_object_get(s, "draft_kv_bytes_per_token")), 4096);
    json_decref(j);
    j = hbm_plan_result_to_json(&base);
    assert_true(json_is_null(json_object_get(j, "speculative")));
    json_decref(j);
    hbm_plan_result_free(&base);
    hbm_plan_result_free(&e3);
}

static void test_draft_model_adds_weights_and_kv(void **state)
{
    (void)state;
    hbm_plan_result base, dm, draft;
    plan(FIX "qwen3-14b", "0.11.0", 0, NULL, &base);
    plan(FIX "qwen3-0.6b", "0.11.0", 0, NULL, &draft);
    char *argv[] = {"--speculative-config",
                    "{\"method\": \"draft_model\", \"model\": \"" FIX "qwen3-0.6b\", "
                    "\"num_speculative_tokens\": 4}"};
    plan(FIX "qwen3-14b", "0.11.0", 2, argv, &dm);
    /* all 28 layers of the draft join the KV cache; its weights are its checkpoint's */
    assert_int_equal(dm.spec.draft_layers, 28);
    assert_int_equal(dm.spec.draft_kv_bytes_per_token, draft.kv_bytes_per_token);
    assert_int_equal(dm.kv_bytes_per_token, base.kv_bytes_per_token + draft.kv_bytes_per_token);
    assert_int_equal(dm.spec.draft_weights_bytes, draft.model.weights_bytes);
    assert_int_equal(dm.weights_bytes, base.weights_bytes + draft.model.weights_bytes);
    hbm_plan_result_free(&base);
    hbm_plan_result_free(&dm);
    hbm_plan_result_free(&draft);
}

static void test_draft_not_local(void **state)
{
    (void)state;
    hbm_plan_result r;
    char *argv[] = {"--speculative-config",
                    "{\"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", "
                    "\"num_speculative_tokens\": 2}"};
    plan(FIX "llama-3.1-8b-instruct", "0.11.0", 2, argv, &r);
    assert_true(r.spec.on);
    assert_false(r.spec.modelled);
    assert_int_equal(r.spec.draft_weights_bytes, -1);
    bool noted = false;
    for (size_t i = 0; i < r.nnotes; i++)
        noted |= strstr(r.notes[i], "not a local model directory") != NULL;
    assert_true(noted);
    hbm_plan_result_free(&r);
}

/* A copy of a fixture's config with one more key, in a directory of its own. */
static void config_with(const char *fixture, const char *key, int value, char *dir, size_t n)
{
    snprintf(dir, n, "/tmp/hbm-spec-%d-%s", (int)getpid(), key);
    mkdir(dir, 0700);
    char src[256], dst[300];
    snprintf(src, sizeof src, FIX "%s/config.json", fixture);
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    json_t *c = json_load_file(src, 0, NULL);
    assert_non_null(c);
    json_object_set_new(c, key, json_integer(value));
    assert_int_equal(json_dump_file(c, dst, 0), 0);
    json_decref(c);
}

static void remove_dir(const char *dir)
{
    char p[300];
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    rmdir(dir);
}

static void test_mtp_layers(void **state)
{
    (void)state;
    char dir[128];
    config_with("deepseek-v2-lite-chat", "num_nextn_predict_layers", 1, dir, sizeof dir);
    hbm_plan_result base, mtp;
    plan(dir, "0.11.0", 0, NULL, &base);
    char *argv[] = {"--speculative-config", "{\"method\": \"deepseek_mtp\"}"};
    plan(dir, "0.11.0", 2, argv, &mtp);
    /* one MLA layer more: 576 latent x bf16; weights of one average layer, estimated */
    assert_int_equal(mtp.spec.draft_layers, 1);
    assert_int_equal(mtp.spec.draft_kv_bytes_per_token, 576 * 2);
    assert_int_equal(mtp.kv_bytes_per_token, base.kv_bytes_per_token + 576 * 2);
    assert_int_equal(mtp.spec.num_speculative_tokens, 1);
    assert_true(mtp.spec.draft_weights_bytes > 0);
    hbm_plan_result_free(&base);
    hbm_plan_result_free(&mtp);
    remove_dir(dir);

    /* a target without MTP layers cannot run them */
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 2, argv, &err), 0);
    in.model_path = FIX "deepseek-v2-lite-chat";
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = 80 * GIB;
    hbm_plan_result r;
    assert_int_equal(hbm_plan_run(&in, &r, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "MTP layers"));
    hbm_plan_result_free(&r);
}

/* Qwen3-Next's MTP layer is one more full-attention layer, and each Mamba group keeps a
 * state block per speculative token besides its own. */
static void test_mtp_on_a_hybrid(void **state)
{
    (void)state;
    char dir[128];
    config_with("qwen3-next-80b-a3b", "mtp_num_hidden_layers", 1, dir, sizeof dir);
    hbm_plan_result base, mtp;
    char *tp[] = {"--tensor-parallel-size", "4"};
    plan(dir, "0.11.0", 2, tp, &base);
    char *argv[] = {"--tensor-parallel-size", "4", "--speculative-config",
                    "{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}"};
    plan(dir, "0.11.0", 4, argv, &mtp);
    assert_int_equal(mtp.spec.draft_layers, 1);
    assert_int_equal(mtp.spec.draft_kv_bytes_per_token, 1 * 256 * 2 * 2);
    assert_int_equal(mtp.kv_bytes_per_token, base.kv_bytes_per_token + 256 * 2 * 2);
    printf("Qwen3-Next concurrency %.2f -> %.2f with MTP x2\n", base.max_concurrency,
           mtp.max_concurrency);
    assert_true(mtp.max_concurrency < base.max_concurrency);
    hbm_plan_result_free(&base);
    hbm_plan_result_free(&mtp);
    remove_dir(dir);
}

static int run_flags(const char *version, int argc, char **argv, hbm_plan_result *r,
                     hbm_err *err)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    if (hbm_plan_args_from_argv(&in, argc, argv, err) < 0)
        return -1;
    in.model_path = FIX "qwen3-14b";
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = 80 * GIB;
    in.engine_version = version;
    in.max_model_len = 8192;
    return hbm_plan_run(&in, r, err);
}

/* --speculative-model / --num-speculative-tokens: V0's flags, deprecated by 0.8.0's
 * --speculative-config and removed in 0.8.3. */
static void test_old_flags_by_version(void **state)
{
    (void)state;
    char *old[] = {"vllm", "serve", "m", "--speculative-model", FIX "qwen3-0.6b",
                   "--num-speculative-tokens", "5", "--use-v2-block-manager"};
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(run_flags("0.6.3", 8, old, &r, &err), 0);
    assert_string_equal(r.spec.method, "draft_model");
    assert_int_equal(r.spec.num_speculative_tokens, 5);
    assert_int_equal(r.spec.draft_layers, 28);
    hbm_plan_result_free(&r);
    assert_int_equal(run_flags("0.8.2", 8, old, &r, &err), 0);
    hbm_plan_result_free(&r);
    assert_int_equal(run_flags("0.8.3", 8, old, &r, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "--speculative-model: removed in vLLM 0.8.3"));
    assert_non_null(strstr(err.msg, "--speculative-config"));
    hbm_plan_result_free(&r);
    assert_int_equal(run_flags(NULL, 8, old, &r, &err), -1);
    hbm_plan_result_free(&r);

    char *json[] = {"--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 3}"};
    assert_int_equal(run_flags("0.7.3", 2, json, &r, &err), -1);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "came with 0.8.0"));
    hbm_plan_result_free(&r);
    assert_int_equal(run_flags("0.8.0", 2, json, &r, &err), 0);
    assert_string_equal(r.spec.method, "ngram");
    hbm_plan_result_free(&r);

    char *both[] = {"--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 3}",
                    "--num-speculative-tokens", "3"};
    assert_int_equal(run_flags("0.8.1", 4, both, &r, &err), -1);
    assert_non_null(strstr(err.msg, "not both"));
    hbm_plan_result_free(&r);

    char *bad[] = {"--num-speculative-tokens", "zero"};
    assert_int_equal(run_flags("0.6.3", 2, bad, &r, &err), -1);
    assert_non_null(strstr(err.msg, "--num-speculative-tokens"));
}

/* The changes that make it fit keep the drafter, which their figures count; one key of the
 * JSON flag is not read, and says so. */
static void test_flag_lines_keep_the_drafter(void **state)
{
    (void)state;
    char *argv[] = {"vllm", "serve", FIX "qwen3-14b", "--max-model-len", "40960",
                    "--speculative-config",
                    "{\"method\": \"draft_model\", \"model\": \"" FIX "qwen3-0.6b\", "
                    "\"num_speculative_tokens\": 4}"};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 7, argv, &err), 0);
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = 40 * GIB;
    in.engine_version = "0.11.0";
    hbm_plan_result r;
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_non_null(strstr(r.launch_line, "--speculative-config '{\"method\": \"draft_model\""));
    assert_false(r.fits);
    assert_true(r.nrecs > 0);
    for (size_t i = 0; i < r.nrecs; i++)
        assert_non_null(strstr(r.recs[i].launch_line, "--speculative-config"));
    hbm_plan_result_free(&r);

    char *dotted[] = {"vllm", "serve", "m", "--speculative-config.method", "ngram"};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, dotted, &err), 0);
    assert_null(in.vllm.speculative_config);
    assert_int_equal(in.nunmodelled, 1);
    assert_string_equal(in.unmodelled[0], "--speculative-config");
}

/* V0's DeepSeek MTP: --num-speculative-tokens alone runs the target's own layers. */
static void test_v0_mtp_from_the_count(void **state)
{
    (void)state;
    char dir[128];
    config_with("deepseek-v2-lite-chat", "num_nextn_predict_layers", 1, dir, sizeof dir);
    char *argv[] = {"--num-speculative-tokens", "1"};
    hbm_plan_result r;
    plan(dir, "0.7.3", 2, argv, &r);
    assert_string_equal(r.spec.method, "mtp");
    assert_int_equal(r.spec.draft_layers, 1);
    assert_non_null(strstr(r.launch_line, "--num-speculative-tokens 1"));
    hbm_plan_result_free(&r);
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_ngram_is_free),
        cmocka_unit_test(test_eagle3_adds_a_layer),
        cmocka_unit_test(test_draft_model_adds_weights_and_kv),
        cmocka_unit_test(test_draft_not_local),
        cmocka_unit_test(test_mtp_layers),
        cmocka_unit_test(test_mtp_on_a_hybrid),
        cmocka_unit_test(test_old_flags_by_version),
        cmocka_unit_test(test_flag_lines_keep_the_drafter),
        cmocka_unit_test(test_v0_mtp_from_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
