/* Every change the planner recommends is a real fix: its `vllm serve` line, read back as
 * vLLM would read it and planned again on the same device, starts (for "free the memory",
 * once the memory is free). Also the one-paragraph verdict `hbmctl run --preflight` shows. */
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

typedef struct scenario {
    const char *model, *device, *version;
    double total_gib, free_gib; /* 0: from the device table / not known */
    const char *flags;          /* extra vLLM flags, space separated */
} scenario;

static const scenario scenarios[] = {
    {FIX "qwen3-32b", "H100-80G", "0.11.0", 0, 0, "--max-model-len 32000"},
    {FIX "qwen3-32b", "H100-80G", NULL, 0, 0, "--max-model-len 40960 --max-num-seqs 512"},
    {FIX "qwen2.5-14b", NULL, NULL, 43.24, 16.58,
     "--gpu-memory-utilization 0.85 --max-model-len 8192"},
    {FIX "qwen2.5-32b", "910B3", NULL, 0, 0, ""},
    {FIX "llama-3.1-8b-instruct", "4090", NULL, 0, 0, "--max-model-len 131072"},
    {FIX "qwen3-14b", "A100-40G", "0.10.1", 0, 30, "--max-model-len 32768"},
    {FIX "deepseek-v2-lite-chat", "4090", NULL, 0, 0, "--max-model-len 163840"},
    {FIX "qwen3-next-80b-a3b", "H100-80G", NULL, 0, 0,
     "--tensor-parallel-size 4 --max-num-seqs 1024 --max-model-len 262144 "
     "--kv-cache-memory-bytes 2GiB"},
};

/* Splits a flag line into argv (in place); returns argc. */
static int split(char *line, char **argv, int max)
{
    int n = 0;
    for (char *t = strtok(line, " "); t && n < max; t = strtok(NULL, " "))
        argv[n++] = t;
    return n;
}

static void setup_input(const scenario *s, hbm_plan_input *in)
{
    hbm_plan_input_init(in);
    in->vllm_version = s->version;
    if (s->device) {
        const hbm_plan_device *d = hbm_plan_device_find(s->device);
        assert_non_null(d);
        in->mem_total_bytes = d->total_bytes;
        in->platform = d->platform;
        in->large_device = d->large_class;
        in->device_name = d->name;
    } else {
        in->mem_total_bytes = (int64_t)(s->total_gib * GIB);
        in->platform = HBM_PLAN_PLATFORM_ASCEND;
    }
    if (s->free_gib > 0)
        in->mem_free_bytes = (int64_t)(s->free_gib * GIB);
}

static void test_every_recommendation_fits(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        const scenario *s = &scenarios[i];
        hbm_plan_input in;
        setup_input(s, &in);
        char line[512];
        snprintf(line, sizeof line, "vllm serve %s %s", s->model, s->flags);
        char *argv[64];
        int argc = split(line, argv, 64);
        hbm_err err = {{0}};
        assert_int_equal(hbm_plan_args_from_argv(&in, argc, argv, &err), 0);
        hbm_plan_result r;
        if (hbm_plan_run(&in, &r, &err) < 0)
            fail_msg("scenario %zu: %s", i, err.msg);
        assert_false(r.fits);
        assert_true(r.nrecs > 0);
        for (size_t k = 0; k < r.nrecs; k++) {
            hbm_plan_input again;
            setup_input(s, &again);
            if (!strcmp(r.recs[k].kind, "free_memory"))
                again.mem_free_bytes = again.mem_total_bytes;
            char copy[1024];
            snprintf(copy, sizeof copy, "%s", r.recs[k].vllm_args);
            char *av[64];
            int ac = split(copy, av, 64);
            assert_int_equal(hbm_plan_args_from_argv(&again, ac, av, &err), 0);
            hbm_plan_result t;
            assert_int_equal(hbm_plan_run(&again, &t, &err), 0);
            printf("scenario %zu, %-24s %-48s -> %s\n", i, r.recs[k].kind, r.recs[k].flags,
                   t.fits ? "starts" : "DOES NOT START");
            if (!t.fits)
                fail_msg("scenario %zu: recommendation \"%s\" does not fit: %s", i,
                         r.recs[k].vllm_args, t.nerrors ? t.errors[0].message : "");
            hbm_plan_result_free(&t);
            checked++;
        }
        hbm_plan_result_free(&r);
    }
    printf("%d recommendations re-planned, all start\n", checked);
    assert_true(checked >= 10);
}

static void test_verdict_text(void **state)
{
    (void)state;
    hbm_plan_input in;
    setup_input(&scenarios[2], &in);
    in.model_path = scenarios[2].model;
    in.gpu_memory_utilization = 0.85;
    in.max_model_len = 8192;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    char *v = hbm_plan_verdict_text(&r);
    printf("%s\n", v);
    assert_non_null(strstr(v, "vLLM will not start: Free memory on device (16.58/43.24 GiB)"));
    assert_non_null(strstr(v, "Best change: No --gpu-memory-utilization works"));
    free(v);
    hbm_plan_result_free(&r);
    in.mem_free_bytes = in.mem_total_bytes;
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    v = hbm_plan_verdict_text(&r);
    assert_non_null(strstr(v, "vLLM starts: "));
    assert_non_null(strstr(v, "at max-model-len 8192"));
    free(v);
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_recommendation_fits),
        cmocka_unit_test(test_verdict_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
