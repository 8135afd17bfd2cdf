/* Every change the planner recommends is a real fix: its `vllm serve` line, read back as
 * vLLM would read it and planned again on the same device, starts (for "free the memory",
 * once the memory is free, and not before: freeing must be what it takes). Costs are the
 * re-planned ones; the order is best first. */
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
    /* the free-memory check passes (52 > 0.42 x 79.18 GiB); only max_model_len fails */
    {FIX "qwen3-14b", NULL, NULL, 79.18, 52, "--gpu-memory-utilization 0.42"},
    /* rules that charge what others hold to the KV budget (no start-up check) */
    {FIX "qwen3-14b", "A100-40G", "0.8.5", 0, 30, "--max-model-len 32768"},
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
    in->engine_version = s->version;
    if (s->device) {
        const hbm_plan_device *d = hbm_plan_device_find(s->device);
        assert_non_null(d);
        in->mem_total_bytes = d->total_bytes;
        in->platform = d->platform;
        in->large_device = d->large_class;
        in->device_name = d->name;
    } else {
        in->mem_total_bytes = (int64_t)(s->total_gib * GIB);
        in->platform = s->total_gib > 70 ? HBM_PLAN_PLATFORM_CUDA : HBM_PLAN_PLATFORM_ASCEND;
        in->large_device = s->total_gib > 70;
    }
    if (s->free_gib > 0)
        in->mem_free_bytes = (int64_t)(s->free_gib * GIB);
}

/* The cost a recommendation states is the re-planned one (t: the plan of its flag line). */
static void check_cost(size_t i, const hbm_plan_result *r, const hbm_plan_rec *rec,
                       const hbm_plan_result *t)
{
    if (strcmp(rec->kind, "gpu_memory_utilization"))
        return;
    if (t->gpu_memory_utilization > r->gpu_memory_utilization) {
        /* a raise takes only memory that is free now, and says what stays free */
        int64_t free_now = t->free_bytes >= 0 ? t->free_bytes : t->total_bytes;
        int64_t left = free_now - t->requested_bytes;
        for (size_t n = 0; n < t->nnotes; n++)
            if (strstr(t->notes[n], "charge memory held by other processes"))
                left = t->total_bytes - t->requested_bytes; /* util x total includes theirs */
        assert_true(left >= 0);
        char want[96];
        if (left >= (int64_t)(0.01 * GIB))
            snprintf(want, sizeof want, "%.2f GiB of the device stays free", (double)left / GIB);
        else
            snprintf(want, sizeof want, "no free memory left");
        if (!strstr(rec->cost, want))
            fail_msg("scenario %zu: cost \"%s\" should say \"%s\"", i, rec->cost, want);
    } else {
        char want[96];
        snprintf(want, sizeof want, "a smaller KV cache (%.2f GiB per rank)",
                 (double)t->kv_cache_bytes / GIB);
        if (!strstr(rec->cost, want))
            fail_msg("scenario %zu: cost \"%s\" should say \"%s\"", i, rec->cost, want);
    }
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
            snprintf(copy, sizeof copy, "%s", r.recs[k].launch_line);
            char *av[64];
            int ac = split(copy, av, 64);
            assert_int_equal(hbm_plan_args_from_argv(&again, ac, av, &err), 0);
            hbm_plan_result t;
            assert_int_equal(hbm_plan_run(&again, &t, &err), 0);
            printf("scenario %zu, %-24s %-48s -> %s\n", i, r.recs[k].kind, r.recs[k].flags,
                   t.fits ? "starts" : "DOES NOT START");
            if (!t.fits)
                fail_msg("scenario %zu: recommendation \"%s\" does not fit: %s", i,
                         r.recs[k].launch_line, t.nerrors ? t.errors[0].message : "");
            check_cost(i, &r, &r.recs[k], &t);
            hbm_plan_result_free(&t);
            if (!strcmp(r.recs[k].kind, "free_memory")) {
                /* the same flags while the memory stays held must not start: else freeing
                 * was never needed and does not belong in the advice */
                hbm_plan_input held;
                setup_input(s, &held);
                snprintf(copy, sizeof copy, "%s", r.recs[k].launch_line);
                ac = split(copy, av, 64);
                assert_int_equal(hbm_plan_args_from_argv(&held, ac, av, &err), 0);
                assert_int_equal(hbm_plan_run(&held, &t, &err), 0);
                if (t.fits)
                    fail_msg("scenario %zu: \"%s\" starts without freeing anything", i,
                             r.recs[k].launch_line);
                assert_int_equal(k, 0); /* when it is needed, it comes first */
                hbm_plan_result_free(&t);
            }
            checked++;
        }
        hbm_plan_result_free(&r);
    }
    printf("%d recommendations re-planned, all start\n", checked);
    assert_true(checked >= 10);
}

/* The free-memory check passes and only max_model_len fails: freeing what others hold
 * changes nothing, so it is not offered; the first change is the lowest higher utilisation
 * that fits in the memory free now, and its cost says how much stays free. */
static void test_free_check_passes(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = FIX "qwen3-14b";
    in.platform = HBM_PLAN_PLATFORM_CUDA;
    in.large_device = true;
    in.mem_total_bytes = (int64_t)(79.18 * GIB);
    in.mem_free_bytes = (int64_t)(52 * GIB);
    in.gpu_memory_utilization = 0.42;
    hbm_plan_result r;
    hbm_err err = {{0}};
    assert_int_equal(hbm_plan_run(&in, &r, &err), 0);
    assert_false(r.fits);
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.errors[0].kind, "max_model_len");
    assert_true(r.nrecs >= 2);
    for (size_t k = 0; k < r.nrecs; k++) {
        assert_string_not_equal(r.recs[k].kind, "free_memory");
        assert_null(strstr(r.recs[k].change, "Until then"));
    }
    assert_string_equal(r.recs[0].kind, "gpu_memory_utilization");
    double u = atof(r.recs[0].flags + strlen("--gpu-memory-utilization "));
    assert_true(u > 0.42 && u * 79.18 < 52);
    assert_null(strstr(r.recs[0].cost, "none left"));
    /* the lowest that fits: 0.01 less does not */
    hbm_plan_input less = in;
    less.gpu_memory_utilization = round((u - 0.01) * 100) / 100;
    hbm_plan_result t;
    assert_int_equal(hbm_plan_run(&less, &t, &err), 0);
    assert_false(t.fits);
    hbm_plan_result_free(&t);
    /* the shorter context is still offered */
    bool mml = false;
    for (size_t k = 0; k < r.nrecs; k++)
        mml |= !strcmp(r.recs[k].kind, "max_model_len");
    assert_true(mml);
    hbm_plan_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_recommendation_fits),
        cmocka_unit_test(test_free_check_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
