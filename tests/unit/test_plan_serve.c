/* Planning backwards: for each target, the answer's own flags, read back as the engine's
 * command line and planned forward, serve it; 0.01 less utilisation does not, and no layout
 * with fewer devices does at any utilisation up to 0.99. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/plan.h"

#define FIX "tests/fixtures/models/"

typedef struct target {
    const char *model, *device;
    int64_t requests, len;
    const char *version;  /* NULL: newest rules */
    const char *kv_dtype; /* NULL: the model's */
    double free_gib;      /* < 0: all free */
    const char *engine;   /* NULL: vLLM */
} target;

static const target targets[] = {
    {"qwen3-0.6b", "H100-80G", 256, 32768, NULL, NULL, -1, NULL},
    {"qwen3-32b", "H100-80G", 16, 32768, NULL, NULL, -1, NULL},
    {"qwen3-32b", "A100-80G", 32, 16384, "0.10.1", NULL, -1, NULL},
    {"llama-3.1-8b-instruct", "L4", 4, 8192, NULL, NULL, -1, NULL},
    {"llama-3.1-8b-instruct", "A10G", 8, 16384, "0.11.0", NULL, -1, NULL},
    {"llama-3.3-70b-instruct-fp8-dynamic", "H100-80G", 8, 32768, NULL, NULL, -1, NULL},
    {"llama-3.3-70b-instruct-fp8-dynamic", "L40S", 4, 16384, NULL, "fp8", -1, NULL},
    {"qwen2.5-14b", "910B3", 16, 32768, "0.11.0", NULL, -1, NULL},
    {"qwen2.5-32b", "910B4", 8, 32768, "0.13.0", NULL, -1, NULL},
    {"qwen2.5-32b", "910B3", 64, 32768, NULL, NULL, 40, NULL},
    {"qwen3-30b-a3b", "B200", 128, 32768, NULL, NULL, -1, NULL},
    {"qwen3-30b-a3b", "910C", 32, 65536, NULL, NULL, -1, NULL},
    {"qwen3-next-80b-a3b", "H200", 64, 131072, NULL, NULL, -1, NULL},
    {"deepseek-v2-lite-chat", "A800", 32, 32768, NULL, NULL, -1, NULL},
    {"qwen2-7b-instruct", "A100-40G", 64, 8192, "0.9.2", NULL, -1, NULL},
    {"qwen3-14b", "RTX6000Ada", 8, 32768, NULL, NULL, -1, NULL},
    {"qwen3-14b", "310P3-48G", 4, 16384, "0.11.0", NULL, -1, NULL},
    {"llama-3.1-8b-instruct", "MI300X", 512, 16384, NULL, NULL, -1, NULL},
    {"qwen3-32b", "L20", 8, 32768, NULL, "fp8", -1, NULL},
    {"qwen3-14b", "910B4", 16, 32768, "0.11.0", NULL, 20, NULL},
    {"qwen3-32b", "H100-80G", 16, 32768, NULL, NULL, -1, "sglang"},
    {"llama-3.1-8b-instruct", "L4", 4, 8192, "0.4.3", NULL, -1, "sglang"},
    {"qwen2.5-14b", "A100-80G", 32, 16384, NULL, NULL, 60, "sglang"},
    {"deepseek-v2-lite-chat", "H200", 64, 32768, NULL, NULL, -1, "sglang"},
    {"qwen2.5-14b", "910B3", 64, 8192, NULL, NULL, -1, "mindie"},
    {"qwen2.5-32b", "910B4", 16, 32768, NULL, NULL, -1, "mindie"},
};

/* How each engine's command line names what the test varies. */
typedef struct engine_words {
    const char *name;
    const char *launcher[4];
    bool model_positional;
    const char *util, *tp, *pp; /* pp NULL: the engine has none */
} engine_words;

static const engine_words engines[] = {
    {"vllm", {"serve", NULL}, true, "--gpu-memory-utilization", "-tp", "-pp"},
    {"sglang", {"python", "-m", "sglang.launch_server", NULL}, false, "--mem-fraction-static",
     "--tp-size", "--pp-size"},
    {"mindie", {NULL}, false, "--NPU_MEMORY_FRACTION", "--worldSize", NULL},
};

static const engine_words *words_of(const target *t)
{
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (!strcmp(engines[i].name, t->engine ? t->engine : "vllm"))
            return &engines[i];
    fail_msg("no engine %s", t->engine);
    return NULL;
}

static void base_input(const target *t, const char *path, hbm_plan_input *in)
{
    const hbm_plan_device *d = hbm_plan_device_find(t->device);
    assert_non_null(d);
    hbm_plan_input_init(in);
    in->model_path = path;
    in->platform = d->platform;
    in->device_name = d->name;
    in->mem_total_bytes = d->total_bytes;
    in->large_device = d->large_class;
    if (t->free_gib >= 0)
        in->mem_free_bytes = (int64_t)(t->free_gib * 1073741824.0);
    in->engine_version = t->version;
    in->kv_cache_dtype = t->kv_dtype;
    if (t->engine)
        assert_int_equal(hbm_plan_engine_parse(t->engine, &in->engine, NULL), 0);
}

/* The launch's flags as a vllm serve line, planned forward. */
static bool serves(const target *t, const char *path, char *const *flags, size_t nflags,
                   const char *util, int64_t tp, int64_t pp)
{
    char *argv[64];
    int argc = 0;
    char tps[16], pps[16];
    const engine_words *e = words_of(t);
    for (int k = 0; e->launcher[k]; k++)
        argv[argc++] = (char *)e->launcher[k];
    if (e->model_positional)
        argv[argc++] = (char *)path;
    for (size_t i = 0; i < nflags && argc < 56; i++)
        argv[argc++] = flags[i];
    if (util) { /* a variation of the answer: appended flags win, as in the engines' parsers */
        snprintf(tps, sizeof tps, "%lld", (long long)tp);
        snprintf(pps, sizeof pps, "%lld", (long long)pp);
        argv[argc++] = (char *)e->util;
        argv[argc++] = (char *)util;
        argv[argc++] = (char *)e->tp;
        argv[argc++] = tps;
        if (e->pp) {
            argv[argc++] = (char *)e->pp;
            argv[argc++] = pps;
        }
    }
    hbm_plan_input in;
    base_input(t, path, &in);
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_args_from_argv(&in, argc, argv, &err), 0);
    hbm_plan_result r;
    if (hbm_plan_run(&in, &r, &err) < 0)
        fail_msg("%s", err.msg);
    int64_t room = in.mem_free_bytes >= 0 ? in.mem_free_bytes : in.mem_total_bytes;
    bool ok = r.fits && r.max_concurrency >= (double)t->requests &&
              r.requested_bytes + r.graph_outside_bytes <= room + (1 << 20);
    assert_int_equal(r.max_model_len, t->len);
    hbm_plan_result_free(&r);
    return ok;
}

static void test_targets(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        const target *t = &targets[k];
        char path[256];
        snprintf(path, sizeof path, FIX "%s/config.json", t->model);
        hbm_plan_input in;
        base_input(t, path, &in);
        in.serve_requests = t->requests;
        in.max_model_len = t->len;
        hbm_plan_result r;
        hbm_err err = {{0}};
        if (hbm_plan_serve(&in, &r, &err) < 0)
            fail_msg("%s", err.msg);
        const hbm_plan_launch *l = &r.launch;
        printf("%-36s %-10s %4lld x %6lld: TP %2lld PP %lld util %.2f, %.2fx (fewer devices "
               "%.2fx, 0.01 less %.2fx)\n",
               t->model, t->device, (long long)t->requests, (long long)t->len,
               (long long)l->tensor_parallel_size, (long long)l->pipeline_parallel_size,
               l->gpu_memory_utilization, l->max_concurrency, l->fewer_devices_concurrency,
               l->lower_util_concurrency);
        assert_true(l->asked);
        if (!l->serves)
            fail_msg("target %zu (%s on %s) not served", k, t->model, t->device);
        /* the answer, read back from its own flags, serves the target */
        assert_true(serves(t, path, l->flags, l->nflags, NULL, 0, 0));
        /* 0.01 less does not */
        int cents = (int)lround(l->gpu_memory_utilization * 100);
        if (cents > 1) {
            char less[16];
            snprintf(less, sizeof less, "%.2f", (cents - 1) / 100.0);
            assert_false(serves(t, path, l->flags, l->nflags, less,
                                l->tensor_parallel_size, l->pipeline_parallel_size));
        }
        /* nor does any layout with fewer devices, even at 0.99 */
        int64_t devices = l->tensor_parallel_size * l->pipeline_parallel_size;
        for (int64_t tp = 1; tp <= HBM_PLAN_SERVE_MAX_TP; tp *= 2)
            for (int64_t pp = 1; pp <= (words_of(t)->pp ? HBM_PLAN_SERVE_MAX_PP : 1) &&
                                 tp * pp < devices;
                 pp++)
                if (r.model.num_heads % tp == 0)
                    assert_false(serves(t, path, l->flags, l->nflags, "0.99", tp, pp));
        hbm_plan_result_free(&r);
    }
}

/* A target no launch serves: the closest, and exit code material (serves false). */
static void test_nothing_fits(void **state)
{
    (void)state;
    const target t = {"qwen3-32b", "L4", 1000, 131072, NULL, NULL, -1, NULL};
    char path[256];
    snprintf(path, sizeof path, FIX "%s/config.json", t.model);
    hbm_plan_input in;
    base_input(&t, path, &in);
    in.serve_requests = t.requests;
    in.max_model_len = t.len;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_serve(&in, &r, &err), 0);
    assert_true(r.launch.asked);
    assert_false(r.launch.serves);
    assert_true(r.launch.max_concurrency > 1 && r.launch.max_concurrency < 1000);
    assert_true(r.launch.nflags > 0);
    hbm_plan_result_free(&r);
    /* no target length: an error naming the flag */
    in.max_model_len = HBM_UNKNOWN;
    assert_int_equal(hbm_plan_serve(&in, &r, &err), -1);
    assert_non_null(strstr(err.msg, "--max-model-len"));
    hbm_plan_result_free(&r);
    /* the utilisation is what is chosen: one given is refused, not silently replaced */
    in.max_model_len = t.len;
    in.gpu_memory_utilization = 0.9;
    assert_int_equal(hbm_plan_serve(&in, &r, &err), -1);
    assert_non_null(strstr(err.msg, "drop --gpu-memory-utilization"));
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_nothing_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
