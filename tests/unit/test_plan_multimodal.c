/* Multimodal checkpoints (docs/planner.md, "vLLM, multimodal models"): which item vLLM's
 * profile run encodes and how many, the encoder cache budget, the tower's weights, the
 * flags that change them, and the note that tells a text-only user what the images cost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "hbm/plan.h"

#define GIB 1073741824.0
#define QWEN3B "tests/fixtures/models/qwen2.5-vl-3b-instruct"
#define GEMMA "tests/fixtures/models/gemma-3-27b-it"

/* Plans model on a device of the table with a vLLM command line (NULL-terminated). */
static void plan(hbm_plan_result *r, const char *model, const char *device, const char *ver,
                 ...)
{
    char *argv[32] = {"vllm", "serve", (char *)model};
    int argc = 3;
    va_list ap;
    va_start(ap, ver);
    for (char *a; (a = va_arg(ap, char *)) && argc < 32;)
        argv[argc++] = a;
    va_end(ap);
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    const hbm_plan_device *d = hbm_plan_device_find(device);
    assert_non_null(d);
    in.platform = d->platform;
    in.mem_total_bytes = d->total_bytes;
    in.large_device = d->large_class;
    in.device_name = d->name;
    in.engine_version = ver;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, argc, argv, &err), 0);
    assert_int_equal(hbm_plan_run(&in, r, &err), 0);
}

static const char *note_with(const hbm_plan_result *r, const char *needle)
{
    for (size_t i = 0; i < r->nnotes; i++)
        if (strstr(r->notes[i], needle))
            return r->notes[i];
    return NULL;
}

/* The defaults profile a video as long as max_model_len holds; video off profiles the
 * largest image; every modality off profiles nothing and loads no tower. */
static void test_profiling_follows_the_limits(void **state)
{
    (void)state;
    hbm_plan_result dflt, image, text;
    plan(&dflt, QWEN3B, "A100-40G", "0.11.0", NULL);
    plan(&image, QWEN3B, "A100-40G", "0.11.0", "--limit-mm-per-prompt",
         "{\"image\": 1, \"video\": 0}", NULL);
    plan(&text, QWEN3B, "A100-40G", "0.11.0", "--limit-mm-per-prompt", "image=0,video=0", NULL);
    assert_true(dflt.multimodal.present && dflt.multimodal.profiled);
    assert_string_equal(dflt.multimodal.modality, "video");
    /* 14 frames of 3584 x 3584 fit 128,000 tokens: 7 temporal patches x 16,384 */
    assert_int_equal(dflt.multimodal.tokens_per_item, 7 * 16384);
    assert_string_equal(image.multimodal.modality, "image");
    assert_int_equal(image.multimodal.tokens_per_item, 16384);
    assert_int_equal(image.multimodal.items, 1);
    assert_false(text.multimodal.profiled);
    assert_false(text.multimodal.tower_loaded);
    assert_int_equal(text.multimodal.encoder_weights_bytes, 0);
    /* the video is 7 images' patches: 7 times the encoder's peak */
    assert_true(llabs(dflt.multimodal.encoder_activation_bytes -
                      7 * image.multimodal.encoder_activation_bytes) < 8);
    assert_true(dflt.kv_cache_bytes < image.kv_cache_bytes);
    assert_true(image.kv_cache_bytes < text.kv_cache_bytes);
    /* the tower is not loaded: the weights are smaller by its bytes */
    assert_int_equal(image.weights_bytes - text.weights_bytes,
                     image.multimodal.encoder_weights_bytes);
    printf("KV: defaults %.2f, video off %.2f, text only %.2f GiB\n",
           (double)dflt.kv_cache_bytes / GIB, (double)image.kv_cache_bytes / GIB,
           (double)text.kv_cache_bytes / GIB);
    hbm_plan_result_free(&dflt);
    hbm_plan_result_free(&image);
    hbm_plan_result_free(&text);
}

/* The encoder's bytes per patch for Qwen2.5-VL-3B's 65,536-patch image (width 1280, head
 * 80): at 0.11 the attention's 20 widths (input, norm, qkv, the contiguous q, k, v, the q|k
 * concatenation, its fp32 copy and fp32 rotation, the cast back), the bf16 pixels
 * (3 x 2 x 14 x 14) and the fp32 angle table with its cos and sin (3 x 40 x 4); up to 0.10
 * q and k are rotated one at a time, 13 widths (input, norm, qkv, q, k, v, one fp32 copy,
 * its fp32 rotation, the cast back), and before 0.9.1 the pixels are fp32; from 0.12 the
 * attention keeps 9 widths and the MLP's 12.0 (input, norm, the fused norm's residual pair,
 * gate|up, activation: 4 + 3 x 3420 / 1280) are the peak. At TP 2 the MLP is the peak:
 * 0.10.0's separate gate and up keep input, norm and down_proj's output (3 + 1.5 x 3420 /
 * 1280 = 7.0 widths, under the attention's 7.5), 0.10.1's fused norm a residual pair more
 * (8.0). */
static void test_encoder_peak_per_patch(void **state)
{
    (void)state;
    const char *video_off[] = {"--limit-mm-per-prompt", "{\"image\": 1, \"video\": 0}"};
    const struct {
        const char *ver;
        const char *tp;
        int64_t per_patch;
    } want[] = {
        {"0.11.0", "1", 20 * 2560 + 1176 * 2 + 480},
        {"0.9.1", "1", 13 * 2560 + 1176 * 2 + 480},
        {"0.9.0", "1", 13 * 2560 + 1176 * 4 + 480},
        {"0.12.0", "1", (4 * 1280 + 3 * 3420) * 2 + 1176 * 2 + 480},
        {"0.10.0", "2", 15 * 1280 + 1176 * 2 + 480},
        {"0.10.1", "2", (4 * 1280 + 3 * 3420 / 2) * 2 + 1176 * 2 + 480},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        hbm_plan_result r;
        plan(&r, QWEN3B, "A100-40G", want[i].ver, video_off[0], video_off[1],
             "--tensor-parallel-size", want[i].tp, NULL);
        assert_string_equal(r.multimodal.modality, "image");
        assert_int_equal(r.multimodal.encoder_activation_bytes, 65536 * want[i].per_patch);
        hbm_plan_result_free(&r);
    }
}

/* encoder cache = max(max_num_batched_tokens, the item's tokens); items = budget // item */
static void test_encoder_cache_budget(void **state)
{
    (void)state;
    hbm_plan_result r;
    plan(&r, GEMMA, "MI300X", "0.11.0", "--max-model-len", "4096", NULL);
    assert_int_equal(r.multimodal.encoder_cache_tokens, 8192);
    assert_int_equal(r.multimodal.tokens_per_item, 260);
    assert_int_equal(r.multimodal.items, 31); /* vLLM's log: "profiled with 31 image items" */
    hbm_plan_result_free(&r);
    plan(&r, GEMMA, "MI300X", "0.11.0", "--max-model-len", "4096", "--max-num-batched-tokens",
         "2048", NULL);
    assert_int_equal(r.multimodal.encoder_cache_tokens, 2048);
    assert_int_equal(r.multimodal.items, 7);
    hbm_plan_result_free(&r);
    /* an item larger than the batch sets the budget: one Qwen image of 16,384 tokens */
    plan(&r, QWEN3B, "A100-40G", "0.11.0", "--limit-mm-per-prompt.video", "0", NULL);
    assert_int_equal(r.multimodal.encoder_cache_tokens, 16384);
    assert_int_equal(r.multimodal.items, 1);
    hbm_plan_result_free(&r);
    /* a batch of two such images profiles two */
    plan(&r, QWEN3B, "A100-40G", "0.11.0", "--limit-mm-per-prompt.video", "0",
         "--max-num-batched-tokens", "32768", NULL);
    assert_int_equal(r.multimodal.encoder_cache_tokens, 32768);
    assert_int_equal(r.multimodal.items, 2);
    hbm_plan_result_free(&r);
}

/* A VL checkpoint used without the limits says what the profile costs and how to skip it. */
static void test_text_only_trap_note(void **state)
{
    (void)state;
    hbm_plan_result r;
    plan(&r, QWEN3B, "A100-80G", "0.8.5", "--gpu-memory-utilization", "0.3", NULL);
    assert_false(r.fits);
    const char *n = note_with(&r, "--limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'");
    assert_non_null(n);
    printf("%s\n", n);
    assert_non_null(strstr(n, "1 video item of 114688 tokens"));
    assert_non_null(strstr(n, "GiB of peak"));
    assert_non_null(note_with(&r, "'{\"video\": 0}' keeps images"));
    hbm_plan_result_free(&r);
    plan(&r, QWEN3B, "A100-80G", "0.11.0", "--limit-mm-per-prompt", "{\"image\":0,\"video\":0}",
         NULL);
    assert_true(r.fits);
    assert_null(note_with(&r, "skips it"));
    assert_non_null(note_with(&r, "builds no vision tower"));
    hbm_plan_result_free(&r);
    /* the advice's flag lines keep the limits */
    plan(&r, QWEN3B, "A100-80G", "0.11.0", "--limit-mm-per-prompt", "image=0,video=0",
         "--max-model-len", "2000000", NULL);
    assert_true(r.nrecs > 0);
    assert_non_null(strstr(r.recs[0].launch_line,
                           "--limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'"));
    hbm_plan_result_free(&r);
}

/* --mm-processor-kwargs max_pixels resizes the largest image; --skip-mm-profiling skips it */
static void test_processor_kwargs_and_skip(void **state)
{
    (void)state;
    hbm_plan_result r;
    plan(&r, QWEN3B, "A100-40G", "0.11.0", "--limit-mm-per-prompt", "{\"video\": 0}",
         "--mm-processor-kwargs", "{\"max_pixels\": 1003520}", NULL);
    /* 980 x 980 after smart_resize: 70 x 70 patches, 1,225 tokens */
    assert_int_equal(r.multimodal.tokens_per_item, 1225);
    assert_int_equal(r.multimodal.encoder_cache_tokens, 2048);
    assert_int_equal(r.multimodal.items, 1);
    hbm_plan_result_free(&r);
    plan(&r, QWEN3B, "A100-40G", "0.11.0", "--skip-mm-profiling", NULL);
    assert_false(r.multimodal.profiled);
    assert_true(r.multimodal.tower_loaded);
    assert_non_null(note_with(&r, "--skip-mm-profiling"));
    hbm_plan_result_free(&r);
}

/* --mm-encoder-tp-mode data keeps the whole tower on every rank */
static void test_encoder_tp_mode(void **state)
{
    (void)state;
    hbm_plan_result w, d;
    plan(&w, QWEN3B, "A100-40G", "0.11.0", "-tp", "2", NULL);
    plan(&d, QWEN3B, "A100-40G", "0.11.0", "-tp", "2", "--mm-encoder-tp-mode", "data", NULL);
    assert_true(d.multimodal.encoder_weights_bytes > 2 * w.multimodal.encoder_weights_bytes - 2);
    assert_true(d.multimodal.encoder_weights_bytes < 2 * w.multimodal.encoder_weights_bytes + 2);
    assert_true(d.weights_bytes > w.weights_bytes);
    /* weights mode splits the qkv and MLP work among the ranks */
    assert_true(w.multimodal.encoder_activation_bytes < d.multimodal.encoder_activation_bytes);
    hbm_plan_result_free(&w);
    hbm_plan_result_free(&d);
}

static void expect_refused(const char *flag, const char *value, const char *needle)
{
    char *argv[] = {"vllm", "serve", QWEN3B, (char *)flag, (char *)value};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, argv, &err), -1);
    printf("%s %s: %s\n", flag, value, err.msg);
    assert_non_null(strstr(err.msg, needle));
}

static void test_bad_values_are_refused(void **state)
{
    (void)state;
    expect_refused("--limit-mm-per-prompt", "{\"image\": -1}", "--limit-mm-per-prompt");
    expect_refused("--limit-mm-per-prompt", "{\"image\": ", "--limit-mm-per-prompt");
    expect_refused("--limit-mm-per-prompt", "image", "--limit-mm-per-prompt");
    expect_refused("--mm-processor-kwargs", "max_pixels=3", "--mm-processor-kwargs");
    expect_refused("--mm-encoder-tp-mode", "pipeline", "--mm-encoder-tp-mode");
    /* {"count": N} objects (vLLM 0.11+) are counts too */
    char *argv[] = {"vllm", "serve", QWEN3B, "--limit-mm-per-prompt",
                    "{\"image\": {\"count\": 3, \"width\": 512}, \"video\": 0}"};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 5, argv, &err), 0);
    assert_int_equal(in.vllm.mm_limit_image, 3);
    assert_int_equal(in.vllm.mm_limit_video, 0);
}

/* JSON: a multimodal object for VL checkpoints, null for text models */
static void test_json(void **state)
{
    (void)state;
    hbm_plan_result r;
    plan(&r, QWEN3B, "A100-40G", "0.11.0", NULL);
    json_t *j = hbm_plan_result_to_json(&r);
    json_t *mm = json_object_get(j, "multimodal");
    assert_true(json_is_object(mm));
    assert_true(json_is_true(json_object_get(mm, "images_profiled")));
    assert_string_equal(json_string_value(json_object_get(mm, "modality")), "video");
    assert_int_equal(json_integer_value(json_object_get(mm, "encoder_cache_tokens")), 114688);
    assert_true(json_integer_value(json_object_get(mm, "encoder_weights_bytes")) > 0);
    assert_true(json_integer_value(json_object_get(mm, "encoder_activation_bytes")) > 0);
    json_decref(j);
    hbm_plan_result_free(&r);
    plan(&r, "tests/fixtures/models/qwen3-0.6b", "A100-40G", "0.11.0", NULL);
    j = hbm_plan_result_to_json(&r);
    assert_true(json_is_null(json_object_get(j, "multimodal")));
    json_decref(j);
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiling_follows_the_limits),
        cmocka_unit_test(test_encoder_peak_per_patch),
        cmocka_unit_test(test_encoder_cache_budget),
        cmocka_unit_test(test_text_only_trap_note),
        cmocka_unit_test(test_processor_kwargs_and_skip),
        cmocka_unit_test(test_encoder_tp_mode),
        cmocka_unit_test(test_bad_values_are_refused),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
