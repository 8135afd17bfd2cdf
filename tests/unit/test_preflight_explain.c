/* explain's findings put to the planner (hbm_preflight_explain): a real vLLM 0.10.1
 * start-up's release and "non-default args" line, a real sampler warm-up failure, the
 * model's real config.json. Every figure must be the planner's own for that launch, each
 * remedy's value must pass when the launch is re-planned with it and fail one step further,
 * and nothing is planned when the model or the device is not known. */
#include "helpers.h"
#include "hbm/preflight.h"

#include "explain_fixture.h"

#define LOGS HBM_SOURCE_DIR "/tests/fixtures/logs"
#define MODEL "tests/fixtures/models/qwen2-7b-instruct"
#define SAMPLER "vllm_sampler_warmup_oom"

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = NULL;
    size_t len = 0;
    char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0; len += n) {
        text = realloc(text, len + n + 1);
        memcpy(text + len, buf, n);
    }
    fclose(f);
    assert_non_null(text);
    text[len] = '\0';
    return text;
}

/* s with every `from` replaced by `to` (owned; s freed). */
static char *replaced(char *s, const char *from, const char *to)
{
    size_t nfrom = strlen(from), nto = strlen(to);
    for (char *at = strstr(s, from); at; at = strstr(at, from)) {
        size_t head = (size_t)(at - s);
        char *out = malloc(strlen(s) - nfrom + nto + 1);
        memcpy(out, s, head);
        memcpy(out + head, to, nto);
        strcpy(out + head + nto, at + nfrom);
        free(s);
        s = out;
        at = s + head + nto;
    }
    return s;
}

/* As tests/e2e/explain_plan.sh builds its scenes: the start-up's first 12 lines with the
 * release and the utilisation given (and, with short_context, one device and 8192 tokens
 * of context), then the failure line, 256 dummy requests. */
static void scene(const char *release, const char *util, bool short_context,
                  hbm_explain_report *rep)
{
    char *text = read_text(LOGS "/vllm_healthy.log");
    char *cut = text;
    for (int i = 0; i < 12; i++)
        cut = strchr(cut, '\n') + 1;
    *cut = '\0';
    text = replaced(text, "0.10.1", release);
    char *share = hbm_xasprintf("'gpu_memory_utilization': %s}", util);
    text = replaced(text, "'gpu_memory_utilization': 0.9}", share);
    free(share);
    if (short_context)
        text = replaced(text, "'max_model_len': 32768, 'tensor_parallel_size': 2",
                        "'max_model_len': 8192");
    char *failure = read_text(LOGS "/sig/vllm_sampler_warmup_oom.variant.log");
    char *last = failure + strlen(failure) - 1;
    while (last > failure && last[-1] != '\n')
        last--;
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    hbm_explain_scanner_feed(s, text, strlen(text));
    hbm_explain_scanner_feed(s, last, strlen(last));
    hbm_explain_scanner_finish(s, rep);
    hbm_explain_scanner_free(s);
    free(text);
    free(failure);
}

static hbm_source_opts no_source;

static hbm_preflight_explain_opts opts(const char *device, char **launch, int nlaunch)
{
    return (hbm_preflight_explain_opts){.src = &no_source, .live = HBM_PREFLIGHT_LIVE_OFF,
                                        .model = MODEL, .device = device, .mem = HBM_UNKNOWN,
                                        .launch = launch, .nlaunch = nlaunch};
}

/* The sampler finding's figures; the report's other findings have none. */
static const hbm_preflight_figures *sampler(const hbm_explain_report *rep,
                                            const hbm_preflight_explained *ex)
{
    const hbm_preflight_figures *found = NULL;
    assert_int_equal(ex->nfigures, rep->nfindings);
    for (size_t i = 0; i < rep->nfindings; i++) {
        bool is = strcmp(rep->findings[i].sig->id, SAMPLER) == 0;
        assert_int_equal(ex->figures[i].sized, is);
        if (is)
            found = &ex->figures[i];
    }
    assert_non_null(found);
    return found;
}

/* A scene and the device it is planned on. */
typedef struct setting {
    const char *release, *util;
    bool short_context;
    const char *device;
} setting;

/* The scene's sampler figures, with the flags after '--' (rep and ex are the caller's). */
static const hbm_preflight_figures *explained(const setting *st, char **launch, int nlaunch,
                                              hbm_explain_report *rep,
                                              hbm_preflight_explained *ex)
{
    scene(st->release, st->util, st->short_context, rep);
    hbm_preflight_explain_opts o = opts(st->device, launch, nlaunch);
    hbm_preflight_explain(rep, cat, &o, ex);
    const hbm_preflight_figures *f = sampler(rep, ex);
    assert_null(f->skipped);
    return f;
}

/* The scene re-planned at a fix's value and one step past it, as `explain LOG -- vllm serve
 * x FLAG VALUE` does: at[0] the fix, at[1] one step further. */
static void replanned(const setting *st, const char *flag, int decimals, double value,
                      double step, hbm_preflight_figures at[2])
{
    for (int i = 0; i < 2; i++) {
        char v[32];
        snprintf(v, sizeof v, "%.*f", decimals, value + i * step);
        char *launch[] = {"vllm", "serve", "x", (char *)flag, v};
        hbm_explain_report rep;
        hbm_preflight_explained ex;
        const hbm_preflight_figures *f = explained(st, launch, 5, &rep, &ex);
        at[i] = (hbm_preflight_figures){.predicted = f->predicted,
                                        .headroom_bytes = f->headroom_bytes,
                                        .plan = {.sampler_bytes = f->plan.sampler_bytes,
                                                 .kv_cache_tokens = f->plan.kv_cache_tokens}};
        hbm_preflight_explained_free(&ex);
        hbm_explain_report_free(&rep);
    }
}

/* Room left: the figures are `hbmctl plan`'s for the log's launch, and --max-num-seqs at the
 * fix halves the sampler's need while one more request would not. */
static void test_room(void **state)
{
    (void)state;
    const setting room = {"0.10.1", "0.9", false, "A100-80G"};
    hbm_explain_report rep;
    hbm_preflight_explained ex;
    const hbm_preflight_figures *f = explained(&room, NULL, 0, &rep, &ex);
    assert_string_equal(f->model, MODEL);
    assert_string_equal(f->plan.vllm_version, "0.10.1");
    assert_int_equal(f->plan.sampler_rows, 256);

    char *argv[] = {"vllm", "serve", MODEL, "--max-model-len", "32768",
                    "--tensor-parallel-size", "2", "--gpu-memory-utilization", "0.9",
                    "--max-num-seqs", "256"};
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, 11, argv, &err), 0);
    const hbm_plan_device *d = hbm_plan_device_find("A100-80G");
    in.engine_version = "0.10.1";
    in.device_name = d->name;
    in.mem_total_bytes = d->total_bytes;
    in.large_device = d->large_class;
    in.platform = d->platform;
    hbm_plan_result ref;
    assert_int_equal(hbm_plan_run(&in, &ref, &err), 0);
    assert_int_equal(f->plan.sampler_bytes, ref.sampler_bytes);
    assert_int_equal(f->plan.kv_cache_tokens, ref.kv_cache_tokens);
    assert_int_equal(f->plan.kv_cache_bytes, ref.kv_cache_bytes);
    hbm_plan_result_free(&ref);
    assert_false(f->predicted);
    assert_true(f->headroom_bytes >= f->plan.sampler_bytes);

    int64_t half = f->plan.sampler_bytes / 2, m = f->seqs.max_num_seqs;
    assert_true(m > 0 && m < 256);
    hbm_preflight_figures p[2];
    replanned(&room, "--max-num-seqs", 0, (double)m, 1, p);
    assert_true(p[0].plan.sampler_bytes <= half);
    assert_int_equal(p[0].plan.sampler_bytes, f->seqs.sampler_bytes);
    assert_int_equal(p[0].plan.kv_cache_tokens, f->seqs.kv_cache_tokens);
    assert_true(p[1].plan.sampler_bytes > half);

    double u = f->util.gpu_memory_utilization;
    assert_true(u < 0.9 && u >= 0.01);
    replanned(&room, "--gpu-memory-utilization", 2, u, 0.01, p);
    assert_int_equal(p[0].plan.kv_cache_tokens, f->util.kv_cache_tokens);
    assert_int_equal(p[0].headroom_bytes - p[0].plan.sampler_bytes, f->util.free_bytes);
    hbm_preflight_explained_free(&ex);
    hbm_explain_report_free(&rep);
}

/* vLLM 0.8.5 captures its graphs outside the budget: at 0.98 of an L4 the plan predicts the
 * failure, and each fix, re-planned through the log, is not short while one step further is. */
static void test_predicted(void **state)
{
    (void)state;
    const setting tight = {"0.8.5", "0.98", true, "L4"};
    hbm_explain_report rep;
    hbm_preflight_explained ex;
    const hbm_preflight_figures *f = explained(&tight, NULL, 0, &rep, &ex);
    assert_true(f->predicted);
    assert_true(f->headroom_bytes < f->plan.sampler_bytes);
    assert_true(f->plan.graph_outside_bytes > 0);

    hbm_preflight_figures p[2];
    int64_t m = f->seqs.max_num_seqs;
    assert_true(m > 0 && m < 256);
    replanned(&tight, "--max-num-seqs", 0, (double)m, 1, p);
    assert_false(p[0].predicted);
    assert_true(p[1].predicted);

    double u = f->util.gpu_memory_utilization;
    assert_true(u < 0.98);
    replanned(&tight, "--gpu-memory-utilization", 2, u, 0.01, p);
    assert_false(p[0].predicted);
    assert_true(p[1].predicted);
    hbm_preflight_explained_free(&ex);
    hbm_explain_report_free(&rep);
}

/* Why there are no figures, in out; NULL when there are. */
static void skipped(hbm_explain_report *rep, const hbm_preflight_explain_opts *o, char *out,
                    size_t n)
{
    hbm_preflight_explained ex;
    hbm_preflight_explain(rep, cat, o, &ex);
    const hbm_preflight_figures *f = sampler(rep, &ex);
    snprintf(out, n, "%s", f->skipped ? f->skipped : "(planned)");
    hbm_preflight_explained_free(&ex);
}

static void test_skipped(void **state)
{
    (void)state;
    char why[512];
    hbm_explain_report rep;
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/sig/vllm_sampler_warmup_oom.log", &rep,
                                           &(hbm_err){{0}}),
                     0);
    hbm_preflight_explain_opts o = opts("H100-80G", NULL, 0);
    o.model = NULL;
    skipped(&rep, &o, why, sizeof why);
    assert_string_equal(why, "give --model DIR: the log does not name its model");
    o = opts(NULL, NULL, 0);
    skipped(&rep, &o, why, sizeof why);
    assert_string_equal(why, "give --device NAME or --mem SIZE: the device's memory");
    o = opts("no-such-card", NULL, 0);
    skipped(&rep, &o, why, sizeof why);
    assert_non_null(strstr(why, "\"no-such-card\" is not in the device table"));
    char *bad[] = {"vllm", "serve", "x", "--max-num-seqs", "lots"};
    o = opts(NULL, bad, 5);
    o.mem = 24 * HBM_GIB;
    skipped(&rep, &o, why, sizeof why);
    assert_non_null(strstr(why, "the launch after '--'"));
    assert_non_null(strstr(why, "--max-num-seqs"));
    o = opts(NULL, NULL, 0);
    o.mem = 24 * HBM_GIB;
    skipped(&rep, &o, why, sizeof why);
    assert_string_equal(why, "(planned)");
    hbm_explain_report_free(&rep);

    scene("0.10.1", "0.9", false, &rep);
    o = opts("A100-80G", NULL, 0);
    o.model = NULL;
    skipped(&rep, &o, why, sizeof why);
    assert_string_equal(why, "give --model DIR: the log's model \"Qwen/Qwen2.5-7B-Instruct\" "
                             "is not a model directory here");
    hbm_explain_report_free(&rep);
}

/* No device named: the observation's first device (a snapshot's Ascend 310P3) is planned;
 * without the live checks there is none. */
static void test_live_device(void **state)
{
    (void)state;
    hbm_explain_report rep;
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/sig/vllm_sampler_warmup_oom.log", &rep,
                                           &(hbm_err){{0}}),
                     0);
    hbm_source_opts snap = {.snapshot = "tests/fixtures/snapshot/every-field.json"};
    hbm_preflight_explain_opts o = opts(NULL, NULL, 0);
    o.src = &snap;
    o.live = HBM_PREFLIGHT_LIVE_AUTO;
    hbm_preflight_explained ex;
    hbm_preflight_explain(&rep, cat, &o, &ex);
    const hbm_preflight_figures *f = sampler(&rep, &ex);
    assert_null(f->skipped);
    assert_string_equal(ex.live_note, "");
    assert_string_equal(f->plan.device_name, "310P3");
    assert_int_equal(f->plan.platform, HBM_PLAN_PLATFORM_ASCEND);
    hbm_preflight_explained_free(&ex);

    snap.snapshot = "tests/fixtures/snapshot/no-such.json";
    hbm_preflight_explain(&rep, cat, &o, &ex);
    assert_non_null(strstr(ex.live_note, "live checks skipped: "));
    assert_non_null(strstr(sampler(&rep, &ex)->skipped, "give --device NAME"));
    hbm_preflight_explained_free(&ex);
    hbm_explain_report_free(&rep);
}

/* explain --json: the figures under the sampler finding's `plan`, the log, the catalogue. */
static void test_json(void **state)
{
    (void)state;
    hbm_explain_report rep;
    scene("0.10.1", "0.9", false, &rep);
    hbm_preflight_explain_opts o = opts("A100-80G", NULL, 0);
    hbm_preflight_explained ex;
    hbm_preflight_explain(&rep, cat, &o, &ex);
    const hbm_preflight_figures *f = sampler(&rep, &ex);
    json_t *j = hbm_preflight_explain_json(&rep, &ex, "x.log", "signatures.json");
    json_t *found = json_object_get(j, "findings");
    json_t *plan = NULL;
    for (size_t i = 0; i < json_array_size(found); i++) {
        json_t *p = json_object_get(json_array_get(found, i), "plan");
        assert_int_equal(p != NULL, ex.figures[i].sized);
        plan = p ? p : plan;
    }
    assert_non_null(plan);
    assert_int_equal(json_integer_value(json_object_get(plan, "sampler_bytes")),
                     f->plan.sampler_bytes);
    assert_int_equal(json_integer_value(json_object_get(plan, "headroom_bytes")),
                     f->headroom_bytes);
    assert_true(json_is_false(json_object_get(plan, "predicted")));
    json_t *fix = json_object_get(plan, "max_num_seqs_fix");
    assert_int_equal(json_integer_value(json_object_get(fix, "max_num_seqs")),
                     f->seqs.max_num_seqs);
    fix = json_object_get(plan, "gpu_memory_utilization_fix");
    assert_true(json_real_value(json_object_get(fix, "gpu_memory_utilization")) ==
                f->util.gpu_memory_utilization);
    assert_string_equal(json_string_value(json_object_get(j, "log")), "x.log");
    assert_string_equal(json_string_value(json_object_get(j, "catalog")), "signatures.json");
    assert_true(json_is_null(json_object_get(j, "live_note")));
    json_decref(j);
    hbm_preflight_explained_free(&ex);
    hbm_explain_report_free(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_room),     cmocka_unit_test(test_predicted),
        cmocka_unit_test(test_skipped),  cmocka_unit_test(test_live_device),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
