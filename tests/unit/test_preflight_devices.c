/* The preflight module: which live devices a launch would use (the visible-device
 * variables' rules), their memory and holders in the plan input, the device and verdict
 * of `run --preflight`, plan's device from its options, and run's steps before the start. */
#include "helpers.h"
#include "hbm/preflight.h"

#define GIB (1024LL * 1024 * 1024)
#define MODEL "tests/fixtures/models/qwen3-0.6b"

/* n NVIDIA H100s; device i has i GiB used by pid 100 + i (none on device 0). */
static void nvidia_obs(hbm_obs *obs, int n)
{
    hbm_obs_init(obs);
    snprintf(obs->backend, sizeof obs->backend, "nvml");
    for (int i = 0; i < n; i++) {
        hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_NVIDIA);
        d->index = i;
        snprintf(d->name, sizeof d->name, "NVIDIA H100 80GB HBM3");
        snprintf(d->uuid, sizeof d->uuid, "GPU-%d1b2c3d", i);
        d->memory_total_bytes = 80 * GIB;
        d->memory_used_bytes = i * GIB;
        if (i) {
            hbm_dproc *p = hbm_device_add_proc(d);
            p->pid = 100 + i;
            snprintf(p->name, sizeof p->name, "python%d", i);
            p->memory_bytes = i * GIB;
        }
    }
}

static void ascend_obs(hbm_obs *obs, int n)
{
    hbm_obs_init(obs);
    snprintf(obs->backend, sizeof obs->backend, "dcmi");
    for (int i = 0; i < n; i++) {
        hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
        d->index = i;
        d->logic_id = i;
        snprintf(d->name, sizeof d->name, "910B3");
        d->memory_total_bytes = 64 * GIB;
        d->memory_used_bytes = 3 * GIB;
    }
}

static int clear_env(void **state)
{
    (void)state;
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    return 0;
}

static void test_visible_cuda(void **state)
{
    (void)state;
    hbm_obs obs;
    nvidia_obs(&obs, 4);
    size_t use[4];
    char why[256] = "";
    /* CUDA's order, not the host's */
    assert_int_equal(hbm_preflight_visible(&obs, HBM_VENDOR_NVIDIA, "3, 1", use, 4, why,
                                           sizeof why), 2);
    assert_int_equal(use[0], 3);
    assert_int_equal(use[1], 1);
    assert_string_equal(why, "");
    /* it stops at the first entry it cannot use and sees nothing after it */
    assert_int_equal(hbm_preflight_visible(&obs, HBM_VENDOR_NVIDIA, "1,7,3", use, 4, why,
                                           sizeof why), 1);
    assert_string_equal(why, "CUDA stops at \"7\": no such device here");
    /* a device named twice is invalid there too */
    why[0] = 0;
    assert_int_equal(hbm_preflight_visible(&obs, HBM_VENDOR_NVIDIA, "2,2,0", use, 4, why,
                                           sizeof why), 1);
    assert_non_null(strstr(why, "\"2\""));
    /* a UUID prefix names a device */
    why[0] = 0;
    assert_int_equal(hbm_preflight_visible(&obs, HBM_VENDOR_NVIDIA, "GPU-21b", use, 4, why,
                                           sizeof why), 1);
    assert_int_equal(use[0], 2);
    hbm_obs_free(&obs);
}

static void test_visible_ascend(void **state)
{
    (void)state;
    hbm_obs obs;
    ascend_obs(&obs, 4);
    size_t use[4];
    char why[256] = "";
    assert_int_equal(hbm_preflight_visible(&obs, HBM_VENDOR_ASCEND, "0,2", use, 4, why,
                                           sizeof why), 2);
    assert_int_equal(use[1], 2);
    /* the Ascend runtime refuses the whole list out of order or out of range */
    assert_int_equal(hbm_preflight_visible(&obs, HBM_VENDOR_ASCEND, "2,1", use, 4, why,
                                           sizeof why), -1);
    assert_string_equal(why, "2,1: \"1\" breaks the ascending order the Ascend runtime requires");
    assert_int_equal(hbm_preflight_visible(&obs, HBM_VENDOR_ASCEND, "1,9", use, 4, why,
                                           sizeof why), -1);
    assert_string_equal(why, "1,9: \"9\" is not a logic id of this host (hbmctl status lists them)");
    hbm_obs_free(&obs);
}

static void test_live_devices(void **state)
{
    (void)state;
    hbm_obs obs;
    nvidia_obs(&obs, 4);
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_preflight_live live;
    hbm_err err = {{0}};
    /* unset: the first two in the host's order; the least free of them, every holder */
    assert_int_equal(hbm_preflight_live_devices(&obs, 2, &in, &live, &err), 0);
    assert_int_equal(in.platform, HBM_PLAN_PLATFORM_CUDA);
    assert_true(in.live);
    assert_int_equal(in.ndevice_ids, 2);
    assert_int_equal(in.device_ids[1], 1);
    assert_null(in.visible_devices);
    assert_int_equal(in.nholders, 1);
    assert_int_equal(in.holders[0].pid, 101);
    assert_string_equal(in.holders[0].name, "python1");
    assert_int_equal(in.mem_total_bytes - in.mem_free_bytes, 1 * GIB);
    assert_string_equal(in.device_name, "NVIDIA H100 80GB HBM3");
    hbm_preflight_live_free(&live);

    /* set: its devices, in its order, named in the input; the smallest total and free
     * among them (a device the table does not know keeps the driver's total), a holder
     * without a name shown as "?" */
    setenv("CUDA_VISIBLE_DEVICES", "3,2", 1);
    snprintf(obs.devs[2].name, sizeof obs.devs[2].name, "Some GPU");
    obs.devs[2].memory_total_bytes = 40 * GIB;
    obs.devs[2].procs[0].name[0] = '\0';
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_live_devices(&obs, 2, &in, &live, &err), 0);
    assert_int_equal(in.device_ids[0], 3);
    assert_string_equal(in.visible_devices, "CUDA_VISIBLE_DEVICES=3,2");
    assert_int_equal(in.nholders, 2);
    assert_string_equal(in.holders[1].name, "?");
    assert_int_equal(in.mem_total_bytes, 40 * GIB);
    assert_int_equal(in.mem_free_bytes, 38 * GIB);
    hbm_preflight_live_free(&live);

    /* TP x PP wants more than the variable leaves */
    setenv("CUDA_VISIBLE_DEVICES", "1,7,3", 1);
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_live_devices(&obs, 2, &in, &live, &err), -1);
    assert_string_equal(err.msg, "TP x PP needs 2 devices but CUDA_VISIBLE_DEVICES=\"1,7,3\" "
                                 "leaves 1 (CUDA stops at \"7\": no such device here)");
    hbm_preflight_live_free(&live);
    unsetenv("CUDA_VISIBLE_DEVICES");
    hbm_obs_free(&obs);

    /* no device at all */
    hbm_obs_init(&obs);
    snprintf(obs.backend, sizeof obs.backend, "npu-smi");
    assert_int_equal(hbm_preflight_live_devices(&obs, 1, &in, &live, &err), -1);
    assert_string_equal(err.msg, "the npu-smi backend sees no device");
    hbm_obs_free(&obs);
}

static void test_live_fragment(void **state)
{
    (void)state;
    hbm_obs obs;
    ascend_obs(&obs, 1);
    obs.devs[0].name[0] = '\0';
    obs.partial = true;
    snprintf(obs.partial_why, sizeof obs.partial_why, "the paste ends mid-table");
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_preflight_live live;
    hbm_err err = {{0}};
    assert_int_equal(hbm_preflight_live_devices(&obs, 1, &in, &live, &err), 0);
    assert_int_equal(in.platform, HBM_PLAN_PLATFORM_ASCEND);
    assert_string_equal(in.device_name, "device"); /* a device without a name */
    assert_string_equal(in.live_partial, "the paste ends mid-table");
    hbm_preflight_live_free(&live);
    hbm_obs_free(&obs);
}

static void test_run_device(void **state)
{
    (void)state;
    hbm_obs obs;
    nvidia_obs(&obs, 4);
    /* among the chosen, the one with the least free memory */
    size_t chosen[] = {1, 3, 2};
    assert_ptr_equal(hbm_preflight_device(&obs, chosen, 3), &obs.devs[3]);
    /* none chosen: the first the variable names, else the first */
    setenv("CUDA_VISIBLE_DEVICES", "2", 1);
    assert_ptr_equal(hbm_preflight_device(&obs, NULL, 0), &obs.devs[2]);
    setenv("CUDA_VISIBLE_DEVICES", "9", 1);
    assert_ptr_equal(hbm_preflight_device(&obs, NULL, 0), &obs.devs[0]);
    unsetenv("CUDA_VISIBLE_DEVICES");
    hbm_obs_free(&obs);
    hbm_obs_init(&obs);
    assert_null(hbm_preflight_device(&obs, NULL, 0));
    hbm_err err = {{0}};
    hbm_preflight_verdict v;
    char *argv[] = {"vllm", "serve", MODEL};
    assert_int_equal(hbm_preflight_run(&obs, NULL, 0, MODEL, 3, argv, &v, &err), -1);
    assert_string_equal(err.msg, "no device is visible to plan against");
    hbm_obs_free(&obs);
}

static void test_run_verdict(void **state)
{
    (void)state;
    hbm_obs obs;
    nvidia_obs(&obs, 2);
    hbm_err err = {{0}};
    hbm_preflight_verdict v;
    char *argv[] = {"vllm", "serve", MODEL, "--gpu-memory-utilization", "0.9"};
    /* an idle H100 takes a 0.6B model */
    assert_int_equal(hbm_preflight_run(&obs, NULL, 0, MODEL, 5, argv, &v, &err), 0);
    assert_true(v.fits);
    assert_int_equal(v.device, 0);
    assert_true(v.plan.live);
    hbm_preflight_verdict_free(&v);
    /* the same launch on a device another process holds 20 GiB of is refused, in vLLM's
     * words, the holder named in the changes */
    obs.devs[1].memory_used_bytes = obs.devs[1].procs[0].memory_bytes = 20 * GIB;
    size_t chosen[] = {1};
    assert_int_equal(hbm_preflight_run(&obs, chosen, 1, MODEL, 5, argv, &v, &err), 0);
    assert_false(v.fits);
    assert_int_equal(v.device, 1);
    assert_true(v.plan.nerrors > 0);
    assert_non_null(strstr(v.plan.errors[0].message, "Free memory on device"));
    hbm_preflight_verdict_free(&v);
    /* no model to read: no verdict, and why */
    assert_int_equal(hbm_preflight_run(&obs, NULL, 0, "/nonexistent", 5, argv, &v, &err), -1);
    assert_non_null(strstr(err.msg, "cannot plan: "));
    hbm_obs_free(&obs);
}

static void test_target(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_preflight_live live;
    hbm_err err = {{0}};
    hbm_preflight_target t = {.device = "H100-80G", .mem_bytes = HBM_UNKNOWN,
                              .free_bytes = HBM_UNKNOWN};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_target_input(&t, NULL, &in, &live, &err), 0);
    assert_string_equal(in.device_name, "H100-80G");
    assert_int_equal(in.platform, HBM_PLAN_PLATFORM_CUDA);
    assert_true(in.large_device);
    assert_false(hbm_preflight_target_live(&t));

    t.device = "H100-81G";
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_target_input(&t, NULL, &in, &live, &err), -1);
    assert_non_null(strstr(err.msg, "\"H100-81G\" is not in the device table"));

    /* --mem alone: the platform defaults to CUDA, the batch class from the size */
    t = (hbm_preflight_target){.mem_bytes = 40 * GIB, .free_bytes = 50 * GIB};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_target_input(&t, NULL, &in, &live, &err), -1);
    assert_string_equal(err.msg, "--free: 53687091200 bytes is more than the device's "
                                 "42949672960");
    t.free_bytes = HBM_UNKNOWN;
    t.platform = HBM_PLAN_PLATFORM_ASCEND;
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_target_input(&t, NULL, &in, &live, &err), 0);
    assert_int_equal(in.platform, HBM_PLAN_PLATFORM_ASCEND);
    assert_false(in.large_device);
    t.mem_bytes = 80 * GIB; /* vLLM's large-device batch defaults from 70 GiB */
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_target_input(&t, NULL, &in, &live, &err), 0);
    assert_true(in.large_device);

    t = (hbm_preflight_target){.mem_bytes = HBM_UNKNOWN, .free_bytes = HBM_UNKNOWN};
    hbm_plan_input_init(&in);
    assert_int_equal(hbm_preflight_target_input(&t, NULL, &in, &live, &err), -1);
    assert_string_equal(err.msg, "plan: which device? give --device NAME, --device auto or "
                                 "--mem SIZE");

    /* planning backwards chooses the devices: not on the live host's */
    t.device = "auto";
    t.serve = 4;
    assert_true(hbm_preflight_target_live(&t));
    assert_int_equal(hbm_preflight_target_input(&t, NULL, &in, &live, &err), -1);
    assert_non_null(strstr(err.msg, "--serve chooses how many devices"));

    /* the live host: TP x PP devices of it, errors named for --device auto */
    hbm_obs obs;
    nvidia_obs(&obs, 1);
    t.serve = 0;
    hbm_plan_input_init(&in);
    in.tensor_parallel_size = 2;
    assert_int_equal(hbm_preflight_target_input(&t, &obs, &in, &live, &err), -1);
    assert_string_equal(err.msg, "--device auto: TP x PP needs 2 devices but the host leaves 1");
    hbm_preflight_live_free(&live);
    hbm_obs_free(&obs);
}

static void test_plan(void **state)
{
    (void)state;
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = MODEL;
    hbm_plan_result res;
    memset(&res, 0, sizeof res);
    hbm_err err = {{0}};
    hbm_preflight_target t = {.device = "H100-80G", .mem_bytes = HBM_UNKNOWN,
                              .free_bytes = HBM_UNKNOWN};
    assert_int_equal(hbm_preflight_plan(&t, NULL, &in, &res, &err), 1);
    hbm_plan_result_free(&res);
    /* 10 GiB free of 80: vLLM's start-up check fails at its default utilisation */
    hbm_plan_input_init(&in);
    in.model_path = MODEL;
    t.free_bytes = 10 * GIB;
    memset(&res, 0, sizeof res);
    assert_int_equal(hbm_preflight_plan(&t, NULL, &in, &res, &err), 0);
    assert_false(res.fits);
    hbm_plan_result_free(&res);
}

/* run's steps before the start on a snapshot of two 310P3 chips, one held */
static void test_start(void **state)
{
    (void)state;
    hbm_source_opts src = {.snapshot = "examples/310P3-after-docker-rm.snapshot.json"};
    char *argv[] = {"vllm", "serve", MODEL};
    hbm_preflight_start_opts o = {.src = &src, .model = MODEL, .argc = 3, .argv = argv};
    hbm_preflight_start st;
    hbm_err err = {{0}};
    /* nothing asked: nothing observed */
    hbm_preflight_start_opts none = {.src = &src};
    assert_int_equal(hbm_preflight_start_run(&none, &st, &err), 0);
    assert_int_equal(st.outcome, HBM_PREFLIGHT_GO);
    assert_false(st.observed);
    hbm_preflight_start_free(&st);
    /* the preflight alone: judged on the first device, which is held */
    assert_int_equal(hbm_preflight_start_run(&o, &st, &err), 0);
    assert_true(st.observed && st.vendor_known && st.judged);
    assert_int_equal(st.vendor, HBM_VENDOR_ASCEND);
    assert_int_equal(st.verdict.device, 0);
    assert_false(st.verdict.fits); /* 26.66 of 43.24 GiB held: vLLM's 0.9 is not free */
    assert_int_equal(st.outcome, HBM_PREFLIGHT_REFUSED);
    hbm_preflight_start_free(&st);
    /* three devices wanted of two: refused before any verdict */
    o.count = 3;
    assert_int_equal(hbm_preflight_start_run(&o, &st, &err), 0);
    assert_int_equal(st.outcome, HBM_PREFLIGHT_NO_DEVICES);
    assert_false(st.judged);
    assert_true(st.pick.nrefused > 0);
    hbm_preflight_start_free(&st);
    /* the one free device picked: the verdict is on it */
    o.count = 1;
    assert_int_equal(hbm_preflight_start_run(&o, &st, &err), 0);
    assert_int_equal(st.pick.n, 1);
    assert_int_equal(st.verdict.device, 1);
    assert_int_equal(st.pick.devices[0], 1);
    assert_true(st.verdict.fits);
    assert_int_equal(st.outcome, HBM_PREFLIGHT_GO);
    hbm_preflight_start_free(&st);
    /* no observation: the step is named */
    src.snapshot = "/nonexistent.json";
    assert_int_equal(hbm_preflight_start_run(&o, &st, &err), -1);
    assert_non_null(strstr(err.msg, "cannot observe devices: "));
    hbm_preflight_start_free(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_visible_cuda, clear_env),
        cmocka_unit_test_setup(test_visible_ascend, clear_env),
        cmocka_unit_test_setup(test_live_devices, clear_env),
        cmocka_unit_test_setup(test_live_fragment, clear_env),
        cmocka_unit_test_setup(test_run_device, clear_env),
        cmocka_unit_test_setup(test_run_verdict, clear_env),
        cmocka_unit_test_setup(test_target, clear_env),
        cmocka_unit_test_setup(test_plan, clear_env),
        cmocka_unit_test_setup(test_start, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
