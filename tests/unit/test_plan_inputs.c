/* What the planner takes from outside: a live device's memory as the framework sees it
 * (one function for `plan --device auto` and `run --preflight`), the vLLM release (only
 * those the rules know), and the model path, which the flag lines turn into something
 * `vllm serve` loads (a directory or a hub name, never a config file). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

static void test_device_memory(void **state)
{
    (void)state;
    hbm_plan_devmem dm;
    hbm_err err = {{0}};
    const hbm_plan_device *h100 = hbm_plan_device_find("H100-80G");
    /* whatever NVML calls the total (80 GiB here, 81559 MiB on real drivers), torch sees
     * the table's; what the driver says is used is used in both views */
    int64_t nvml_totals[] = {(int64_t)(80 * GIB), 81559LL << 20};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(hbm_plan_device_memory("NVIDIA H100 80GB HBM3", HBM_PLAN_PLATFORM_CUDA, false,
                                                nvml_totals[i], (int64_t)(27 * GIB), &dm, &err),
                         0);
        assert_ptr_equal(dm.row, h100);
        assert_int_equal(dm.total_bytes, h100->total_bytes);
        assert_int_equal(dm.free_bytes, h100->total_bytes - (int64_t)(27 * GIB));
        assert_true(dm.large_device);
    }
    /* every row is taken for a driver total a little above it */
    size_t n;
    const hbm_plan_device *all = hbm_plan_devices(&n);
    for (size_t i = 0; i < n; i++) {
        int64_t drv = (int64_t)((double)all[i].total_bytes / 0.95);
        assert_int_equal(hbm_plan_device_memory(all[i].name, all[i].platform, false, drv, 0, &dm, &err),
                         0);
        assert_ptr_equal(dm.row, &all[i]);
        assert_int_equal(dm.free_bytes, all[i].total_bytes);
    }
    /* a 300I Duo chip is a "310P3" with 44278 MB: the 48 GB row, not the 24 GB one */
    int64_t duo = 44278LL << 20;
    assert_int_equal(hbm_plan_device_memory("310P3", HBM_PLAN_PLATFORM_ASCEND, false, duo,
                                            1500LL << 20, &dm, &err),
                     0);
    assert_non_null(dm.row);
    assert_string_equal(dm.row->name, "310P3-48G");
    assert_int_equal(dm.total_bytes, duo);
    assert_int_equal(dm.free_bytes, duo - (1500LL << 20));
    assert_false(dm.large_device);
    /* an H100 NVL (94 GB) is not the 80 GB row */
    assert_int_equal(hbm_plan_device_memory("NVIDIA H100 NVL", HBM_PLAN_PLATFORM_CUDA, false,
                                            95830LL << 20, 0, &dm, &err),
                     0);
    assert_null(dm.row);
    assert_true(dm.large_device);
    /* unknown devices: the driver's figures; the batch defaults by size, never on A100 */
    assert_int_equal(hbm_plan_device_memory("NVIDIA A40", HBM_PLAN_PLATFORM_CUDA, false, 46428596470LL,
                                            28625957028LL, &dm, &err),
                     0);
    assert_null(dm.row);
    assert_int_equal(dm.free_bytes, 46428596470LL - 28625957028LL);
    assert_false(dm.large_device);
    assert_int_equal(hbm_plan_device_memory("NVIDIA A100-SXM4-96GB", HBM_PLAN_PLATFORM_CUDA, false,
                                            98304LL << 20, 0, &dm, &err),
                     0);
    assert_false(dm.large_device);
    /* WSL2: CUDA's total is the driver's (a 24 GB RTX 4090 prints 23.99 GiB there,
     * llmso-v027-*), not the native row's 23.64 */
    const hbm_plan_device *r4090 = hbm_plan_device_find("4090");
    for (int wsl = 0; wsl < 2; wsl++) {
        assert_int_equal(hbm_plan_device_memory("NVIDIA GeForce RTX 4090", HBM_PLAN_PLATFORM_CUDA,
                                                wsl, 24564LL << 20, 1LL << 30, &dm, &err),
                         0);
        assert_ptr_equal(dm.row, r4090);
        assert_int_equal(dm.total_bytes, wsl ? 24564LL << 20 : r4090->total_bytes);
        assert_int_equal(dm.free_bytes, dm.total_bytes - (1LL << 30));
    }
    /* more used than the framework's total: nothing free, never negative */
    assert_int_equal(hbm_plan_device_memory("NVIDIA H100 80GB HBM3", HBM_PLAN_PLATFORM_CUDA, false,
                                            81559LL << 20, 81500LL << 20, &dm, &err),
                     0);
    assert_int_equal(dm.free_bytes, 0);
    /* no figures: an error naming the device */
    assert_int_equal(hbm_plan_device_memory("NVIDIA H100 80GB HBM3", HBM_PLAN_PLATFORM_CUDA, false,
                                            81559LL << 20, HBM_UNKNOWN, &dm, &err),
                     -1);
    assert_non_null(strstr(err.msg, "NVIDIA H100 80GB HBM3"));
}

/* Plans qwen3-0.6b for release v on a device of mem GiB; r is freed by the caller. */
static int run_qwen3(const char *v, hbm_plan_platform platform, double mem, hbm_plan_sampler s,
                     hbm_plan_result *r, hbm_err *err)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = "tests/fixtures/models/qwen3-0.6b";
    in.platform = platform;
    in.mem_total_bytes = (int64_t)(mem * GIB);
    in.engine_version = v;
    in.vllm.sampler = s;
    return hbm_plan_run(&in, r, err);
}

static int run_version(const char *v, hbm_plan_platform platform, hbm_plan_result *r,
                       hbm_err *err)
{
    return run_qwen3(v, platform, 64, HBM_PLAN_SAMPLER_DEFAULT, r, err);
}

static void test_versions(void **state)
{
    (void)state;
    hbm_err err = {{0}};
    hbm_plan_result r, newest;
    assert_int_equal(run_version(NULL, HBM_PLAN_PLATFORM_CUDA, &newest, &err), 0);
    assert_false(newest.rules_newer);
    assert_string_equal(newest.engine_version, "");
    char range[64];
    snprintf(range, sizeof range, "0.6.0 to %.*s.x",
             (int)(strrchr(newest.rules_version, '.') - newest.rules_version),
             newest.rules_version);
    const char *known[] = {"0.6.0", "0.6.4", "0.10.1.1", "v0.11.0", "0.23", "0.23.7"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (run_version(known[i], HBM_PLAN_PLATFORM_CUDA, &r, &err) < 0)
            fail_msg("%s: %s", known[i], err.msg);
        assert_false(r.rules_newer);
        assert_string_equal(r.rules_version, r.vllm_version);
        hbm_plan_result_free(&r);
    }
    /* newer than the rules: the newest rules, the same figures, and said so */
    const char *newer[] = {"9.9.9", "1.0", "0.99.0rc1", "v2.3.4"};
    for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++) {
        if (run_version(newer[i], HBM_PLAN_PLATFORM_CUDA, &r, &err) < 0)
            fail_msg("%s: %s", newer[i], err.msg);
        assert_true(r.rules_newer);
        assert_string_equal(r.engine_version, newer[i]);
        assert_string_equal(r.rules_version, newest.rules_version);
        assert_int_equal(r.kv_cache_tokens, newest.kv_cache_tokens);
        assert_non_null(strstr(r.notes[0], "is newer than the releases the rules know"));
        hbm_plan_result_free(&r);
    }
    /* older ones are refused, naming the range */
    const char *older[] = {"0.1", "0.5.9", "0.0.1"};
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++) {
        assert_int_equal(run_version(older[i], HBM_PLAN_PLATFORM_CUDA, &r, &err), -1);
        hbm_plan_result_free(&r);
        assert_non_null(strstr(err.msg, older[i]));
        assert_non_null(strstr(err.msg, range));
    }
    /* vllm-ascend began with 0.7; a newer one gets the newest rules */
    assert_int_equal(run_version("0.6.4", HBM_PLAN_PLATFORM_ASCEND, &r, &err), -1);
    hbm_plan_result_free(&r);
    assert_non_null(strstr(err.msg, "vllm-ascend 0.6.4"));
    assert_non_null(strstr(err.msg, "0.7.0 to "));
    assert_int_equal(run_version("0.7.3", HBM_PLAN_PLATFORM_ASCEND, &r, &err), 0);
    hbm_plan_result_free(&r);
    assert_int_equal(run_version("5.0.0", HBM_PLAN_PLATFORM_ASCEND, &r, &err), 0);
    assert_true(r.rules_newer);
    assert_non_null(strstr(r.notes[0], "vllm-ascend 5.0.0 is newer"));
    hbm_plan_result_free(&r);
    const char *bad[] = {"zero", "100.0", "0.100.0", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_version(bad[i], HBM_PLAN_PLATFORM_CUDA, &r, &err), -1);
        hbm_plan_result_free(&r);
        assert_non_null(strstr(err.msg, "not a version"));
    }
    hbm_plan_result_free(&newest);
}

/* --sampler names the top-k/top-p implementation: it sizes the profile of the V1 runner, but
 * Model Runner V2's dummy sampler skips top-k/top-p, so there it changes nothing. */
static int64_t tokens_with_sampler(const char *v, hbm_plan_sampler s, bool *ignored)
{
    hbm_plan_result r;
    hbm_err err = {{0}};
    if (run_qwen3(v, HBM_PLAN_PLATFORM_CUDA, 24, s, &r, &err) < 0)
        fail_msg("%s: %s", v, err.msg);
    *ignored = false;
    for (size_t i = 0; i < r.nnotes; i++)
        if (strstr(r.notes[i], "Model Runner V2's profile skips top-k/top-p"))
            *ignored = true;
    int64_t t = r.kv_cache_tokens;
    hbm_plan_result_free(&r);
    return t;
}

static void test_sampler_choice(void **state)
{
    (void)state;
    bool ign;
    /* Qwen3 dense runs on Model Runner V2 from 0.22 */
    int64_t dflt = tokens_with_sampler("0.27.1", HBM_PLAN_SAMPLER_DEFAULT, &ign);
    assert_false(ign);
    assert_int_equal(tokens_with_sampler("0.27.1", HBM_PLAN_SAMPLER_TORCH, &ign), dflt);
    assert_true(ign);
    assert_int_equal(tokens_with_sampler("0.27.1", HBM_PLAN_SAMPLER_FLASHINFER, &ign), dflt);
    assert_true(ign);
    /* the V1 runner before it samples with top-k/top-p: torch's costs more than FlashInfer's */
    int64_t torch = tokens_with_sampler("0.21.0", HBM_PLAN_SAMPLER_TORCH, &ign);
    assert_false(ign);
    assert_true(torch < tokens_with_sampler("0.21.0", HBM_PLAN_SAMPLER_FLASHINFER, &ign));
}

/* A compiled plan says it assumes vLLM's compile cache is warm: a profile run that compiles
 * has left up to 1.9 GiB less (docs/planner.md). Nothing is compiled with --enforce-eager or
 * by V0, and the measurements are CUDA's, so those plans and Ascend's carry no note. */
static bool compile_noted(const char *v, hbm_plan_platform platform, int eager)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = "tests/fixtures/models/qwen3-0.6b";
    in.platform = platform;
    in.mem_total_bytes = (int64_t)(64 * GIB);
    in.engine_version = v;
    in.enforce_eager = eager;
    hbm_plan_result r;
    hbm_err err = {{0}};
    if (hbm_plan_run(&in, &r, &err) < 0)
        fail_msg("%s: %s", v, err.msg);
    bool noted = false;
    for (size_t i = 0; i < r.nnotes; i++)
        noted |= strstr(r.notes[i], "loads the compiled model from its compile cache") != NULL;
    hbm_plan_result_free(&r);
    return noted;
}

static void test_compile_cache_note(void **state)
{
    (void)state;
    assert_true(compile_noted("0.29.0", HBM_PLAN_PLATFORM_CUDA, -1));
    assert_true(compile_noted("0.9.2", HBM_PLAN_PLATFORM_CUDA, 0));
    assert_false(compile_noted("0.29.0", HBM_PLAN_PLATFORM_CUDA, 1));
    assert_false(compile_noted("0.6.4", HBM_PLAN_PLATFORM_CUDA, -1));
    assert_false(compile_noted("0.22.1", HBM_PLAN_PLATFORM_ASCEND, -1));
}

/* Plans path (not fitting, so recommendations exist) and checks that the whole flag line and
 * every recommendation's serve `want`. */
static void check_served(const char *path, const char *want, const char *note)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    char *argv[] = {"serve", (char *)path, "--max-model-len", "40960"};
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 4, argv, &err), 0);
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.mem_total_bytes = (int64_t)(8 * GIB);
    hbm_plan_result r;
    if (hbm_plan_run(&in, &r, &err) < 0)
        fail_msg("%s: %s", path, err.msg);
    char prefix[1200];
    snprintf(prefix, sizeof prefix, "vllm serve %s --", want);
    printf("%s -> %s\n", path, r.launch_line);
    assert_int_equal(strncmp(r.launch_line, prefix, strlen(prefix)), 0);
    assert_false(r.fits);
    assert_true(r.nrecs > 0);
    for (size_t i = 0; i < r.nrecs; i++)
        assert_int_equal(strncmp(r.recs[i].launch_line, prefix, strlen(prefix)), 0);
    bool noted = false;
    for (size_t i = 0; i < r.nnotes; i++)
        noted |= note && strstr(r.notes[i], note) != NULL;
    assert_int_equal(noted, note != NULL);
    hbm_plan_result_free(&r);
}

/* the scratch directory of test_served_model, removed even when the test fails */
static char dir[PATH_MAX];

static int scratch_make(void **state)
{
    (void)state;
    return th_mkdtemp(dir, sizeof dir, "plan-served");
}

static int scratch_remove(void **state)
{
    (void)state;
    return th_rmtree(dir);
}

static void test_served_model(void **state)
{
    (void)state;
#define CFG                                                                                  \
    "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", "                  \
    "\"hidden_size\": 5120, \"intermediate_size\": 17408, \"num_hidden_layers\": 40, "           \
    "\"num_attention_heads\": 40, \"num_key_value_heads\": 8, \"head_dim\": 128, "               \
    "\"vocab_size\": 151936, \"torch_dtype\": \"bfloat16\", "                                   \
    "\"max_position_embeddings\": 40960%s}\n"
    char p[512], text[1024], want[512];
    /* a model directory's config.json: the directory */
    th_path(p, sizeof p, dir, "model");
    assert_int_equal(mkdir(p, 0755), 0);
    th_path(p, sizeof p, dir, "model/config.json");
    snprintf(text, sizeof text, CFG, ", \"_name_or_path\": \"Qwen/Qwen3-14B\"");
    th_write_text(dir, "model/config.json", text);
    th_path(want, sizeof want, dir, "model");
    check_served(p, want, NULL);
    check_served(want, want, NULL);
    /* a config under another name, outside any model directory: its _name_or_path, noted;
     * the safetensors file next to it is not its weights */
    th_path(p, sizeof p, dir, "Qwen__Qwen3-14B.json");
    th_write_text(dir, "Qwen__Qwen3-14B.json", text);
    th_write_text(dir, "stray.safetensors", "not a safetensors file");
    check_served(p, "Qwen/Qwen3-14B", "serve its _name_or_path, Qwen/Qwen3-14B");
    hbm_plan_model m;
    hbm_plan_model_init(&m);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_model_load(p, &m, &err), 0);
    assert_true(m.weights_estimated);
    assert_false(m.model_dir);
    hbm_plan_model_free(&m);
    /* and without one: a MODEL to fill in, said so */
    th_path(p, sizeof p, dir, "bare.json");
    snprintf(text, sizeof text, CFG, "");
    th_write_text(dir, "bare.json", text);
    check_served(p, "MODEL", "in place of MODEL");
    /* a hub name as given stays as given */
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    char *argv[] = {"serve", "Qwen/Qwen3-14B"};
    assert_int_equal(hbm_plan_args_from_argv(&in, 2, argv, &err), 0);
    in.model_path = p;
    in.mem_total_bytes = (int64_t)(80 * GIB);
    hbm_plan_result r;
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_int_equal(strncmp(r.launch_line, "vllm serve Qwen/Qwen3-14B --", 28), 0);
    hbm_plan_result_free(&r);
}

/* A config of a family the rules were never checked against: the keys no rule consulted are
 * listed (in the text config first, then the wrapper's), except those that size nothing, and
 * a generic plan names them in a note. */
static void test_unread_keys(void **state)
{
    (void)state;
    static const char cfg[] =
        "{\"architectures\": [\"ZetaForCausalLM\"], \"model_type\": \"zeta\", "
        "\"text_config\": {\"hidden_size\": 4096, \"intermediate_size\": 14336, "
        "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 8, \"vocab_size\": 128256, \"memory_slots\": 64, "
        "\"rms_norm_eps\": 1e-05, \"attention_dropout\": 0.0, \"bos_token_id\": 1}, "
        "\"vision_config\": {\"hidden_size\": 1152}, \"memory_dim\": 1024, "
        "\"image_token_id\": 7, \"torch_dtype\": \"bfloat16\"}";
    hbm_plan_model m;
    hbm_plan_model_init(&m);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_model_parse_config(cfg, sizeof cfg - 1, "zeta.json", &m, &err), 0);
    assert_true(m.generic);
    assert_int_equal(m.nunread_keys, 2);
    assert_string_equal(m.unread_keys[0], "memory_slots");
    assert_string_equal(m.unread_keys[1], "memory_dim");
    hbm_plan_model_free(&m);
    assert_null(m.unread_keys);

    /* a family the rules know reads every key of this config */
    static const char llama[] =
        "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_hidden_layers\": 32, "
        "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"vocab_size\": 128256, "
        "\"intermediate_size\": 14336, \"max_position_embeddings\": 131072}";
    hbm_plan_model_init(&m);
    assert_int_equal(hbm_plan_model_parse_config(llama, sizeof llama - 1, "llama.json", &m,
                                                 &err), 0);
    assert_false(m.generic);
    assert_int_equal(m.nunread_keys, 0);
    hbm_plan_model_free(&m);

    th_write_text(dir, "zeta/config.json", cfg);
    char zeta[512];
    th_path(zeta, sizeof zeta, dir, "zeta");
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = zeta;
    in.mem_total_bytes = (int64_t)(80 * GIB);
    hbm_plan_result r;
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    bool noted = false;
    for (size_t i = 0; i < r.nnotes; i++)
        noted |= strstr(r.notes[i], "not in the plan: memory_slots, memory_dim") != NULL;
    assert_true(noted);
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_memory),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_sampler_choice),
        cmocka_unit_test(test_compile_cache_note),
        cmocka_unit_test_setup_teardown(test_unread_keys, scratch_make, scratch_remove),
        cmocka_unit_test_setup_teardown(test_served_model, scratch_make, scratch_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
