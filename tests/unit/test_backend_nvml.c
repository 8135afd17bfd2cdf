/* The NVML backend against the fake libnvidia-ml (tests/fakes/fake_nvml.c), current and old
 * exports: field mapping and units, both process-entry sizes, buffer growth, compute and
 * graphics merged per pid, MIG, health evidence, topology, and unknown-not-zero when a
 * call is missing or unsupported. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "helpers.h"
#include "hbm/backend.h"

#define FAKE HBM_BINARY_DIR "/fakes/libnvidia-ml.so.1"
#define FAKE_OLD HBM_BINARY_DIR "/fakes/old/libnvidia-ml.so.1"
#define GIB (1024LL * 1024 * 1024)
#define MIB (1024LL * 1024)

static char scn_path[64];

/* Writes the scenario and points the fake at it. */
static void scenario(const char *lib, const char *json)
{
    th_tmpfile(scn_path, sizeof scn_path, "nvml-unit", json);
    setenv("HBM_FAKE_NVML_SCENARIO", scn_path, 1);
    setenv("HBMCTL_NVML_LIB", lib, 1);
}

static void observe(hbm_obs *obs)
{
    hbm_err err = {{0}};
    hbm_obs_init(obs);
    int rc = hbm_backend_nvml.observe(obs, 5, &err);
    unlink(scn_path);
    if (rc != 0)
        fail_msg("observe: %s", err.msg);
}

static const hbm_dproc *proc(const hbm_device *d, int64_t pid)
{
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid)
            return &d->procs[i];
    return NULL;
}

/* Three GPUs; %d is the entry size the _v3 process calls write. */
#define THREE_GPUS \
    "{\"driver_version\": \"550.54.15\", \"process_entry_size\": %d," \
    " \"topology\": [[0, 10, 50], [10, 0, 50], [50, 50, 0]]," \
    " \"devices\": [" \
    "  {\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-aaaa\"," \
    "   \"bus_id\": \"00000000:18:00.0\", \"memory_total\": 85899345920," \
    "   \"memory_used\": 10737418240, \"memory_reserved\": 570425344," \
    "   \"utilization_gpu\": 35, \"temperature\": 41, \"power_mw\": 71500," \
    "   \"ecc_uncorrected\": 0, \"mig_mode\": 0, \"nvlinks\": [\"00000000:19:00.0\"]," \
    "   \"compute\": [{\"pid\": 4242, \"used_memory\": 8589934592}," \
    "                 {\"pid\": 777, \"used_memory\": null}]," \
    "   \"graphics\": [{\"pid\": 4242, \"used_memory\": 1073741824}," \
    "                  {\"pid\": 999, \"used_memory\": 2097152}]}," \
    "  {\"name\": \"NVIDIA A100-SXM4-40GB\", \"uuid\": \"GPU-bbbb\"," \
    "   \"bus_id\": \"00000000:19:00.0\", \"memory_total\": 42949672960," \
    "   \"memory_used\": 3221225472, \"utilization_gpu\": 0, \"temperature\": 30," \
    "   \"power_mw\": 50000, \"ecc_uncorrected\": 2, \"mig_mode\": 1, \"mig_instances\": 3," \
    "   \"nvlinks\": [\"00000000:18:00.0\"]," \
    "   \"compute\": [{\"pid\": 31337, \"used_memory\": 1073741824, \"gi\": 1, \"ci\": 0}," \
    "                 {\"pid\": 31337, \"used_memory\": 2147483648, \"gi\": 2, \"ci\": 0}]}," \
    "  {\"name\": \"NVIDIA L4\", \"bus_id\": \"00000000:AF:00.0\", \"lost\": true}]}"

static void check_three(hbm_obs *obs)
{
    assert_int_equal(obs->ndevs, 3);
    assert_string_equal(obs->driver_version, "550.54.15");
    hbm_device *d = &obs->devs[0];
    assert_int_equal(d->vendor, HBM_VENDOR_NVIDIA);
    assert_int_equal(d->index, 0);
    assert_int_equal(d->chip, 0);
    assert_string_equal(d->name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(d->uuid, "GPU-aaaa");
    assert_string_equal(d->bus_id, "00000000:18:00.0");
    assert_int_equal(d->memory_total_bytes, 80 * GIB);
    assert_int_equal(d->memory_used_bytes, 10 * GIB);
    assert_int_equal(d->memory_reserved_bytes, 544 * MIB);
    assert_float_equal(d->utilization_ratio, 0.35, 1e-9);
    assert_float_equal(d->temperature_celsius, 41, 1e-9);
    assert_float_equal(d->power_watts, 71.5, 1e-9);
    assert_string_equal(d->health, "OK");
    assert_true(d->healthy);
    assert_string_equal(d->mig, "");
    assert_true(d->procs_known);
    /* 4242 is in both lists: one entry, the larger figure; 777's memory is unknown. */
    assert_int_equal(d->nprocs, 3);
    assert_int_equal(proc(d, 4242)->memory_bytes, 8 * GIB);
    assert_int_equal(proc(d, 777)->memory_bytes, HBM_UNKNOWN);
    assert_int_equal(proc(d, 999)->memory_bytes, 2 * MIB);

    d = &obs->devs[1];
    assert_string_equal(d->mig, "enabled, 3 instances");
    assert_false(d->healthy);
    assert_string_equal(d->health, "ECC: 2 uncorrected");
    assert_int_equal(d->memory_reserved_bytes, 0);
    /* One process in two MIG instances: its memory is the sum. */
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(proc(d, 31337)->memory_bytes, 3 * GIB);

    d = &obs->devs[2];
    assert_int_equal(d->index, 2);
    assert_false(d->healthy);
    assert_string_equal(d->health, "GPU lost");
    assert_int_equal(d->memory_total_bytes, HBM_UNKNOWN);
    assert_false(d->procs_known);

    assert_non_null(obs->topo);
    assert_int_equal(hbm_obs_link(obs, 0, 1), HBM_LINK_NVLINK);
    assert_int_equal(hbm_obs_link(obs, 1, 0), HBM_LINK_NVLINK);
    assert_int_equal(hbm_obs_link(obs, 0, 2), HBM_LINK_UNKNOWN);
    assert_int_equal(hbm_obs_link(obs, 1, 1), HBM_LINK_SELF);
}

/* Either entry size the _v3 call may write gives the same pids and memory. */
static void test_entry_sizes(void **state)
{
    (void)state;
    static const int sizes[] = {24, 32};
    for (size_t i = 0; i < 2; i++) {
        char buf[4096];
        snprintf(buf, sizeof buf, THREE_GPUS, sizes[i]);
        scenario(FAKE, buf);
        hbm_obs obs;
        observe(&obs);
        check_three(&obs);
        hbm_obs_free(&obs);
    }
}

/* An old driver: the first memory call (reserved counted as used, reserved unknown), the
 * 16-byte process entries, the oldest PCI struct, no MIG, no row remapping. */
static void test_old_driver(void **state)
{
    (void)state;
    char buf[4096];
    snprintf(buf, sizeof buf, THREE_GPUS, 32);
    scenario(FAKE_OLD, buf);
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.ndevs, 3);
    hbm_device *d = &obs.devs[0];
    assert_int_equal(d->memory_reserved_bytes, HBM_UNKNOWN);
    assert_int_equal(d->memory_used_bytes, 10 * GIB + 544 * MIB);
    assert_string_equal(d->bus_id, "00000000:18:00.0");
    assert_int_equal(d->nprocs, 3);
    assert_int_equal(proc(d, 4242)->memory_bytes, 8 * GIB);
    assert_string_equal(obs.devs[1].mig, "");
    assert_int_equal(proc(&obs.devs[1], 31337)->memory_bytes, 3 * GIB);
    /* NVLink still found through the link state and the far end's PCI address. */
    assert_int_equal(hbm_obs_link(&obs, 0, 1), HBM_LINK_NVLINK);
    hbm_obs_free(&obs);
}

/* More processes than the first buffer holds: the call is repeated with a larger one. */
static void test_many_processes(void **state)
{
    (void)state;
    size_t cap = 64 * 1024;
    char *buf = malloc(cap);
    size_t n = (size_t)snprintf(buf, cap,
                                "{\"process_entry_size\": 32, \"devices\": [{\"name\": \"G\","
                                " \"bus_id\": \"0:1:0\", \"compute\": [");
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s{\"pid\": %d, \"used_memory\": %d}",
                              i ? "," : "", 1000 + i, (i + 1) * 1048576);
    snprintf(buf + n, cap - n, "]}]}");
    scenario(FAKE, buf);
    free(buf);
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.devs[0].nprocs, 150);
    for (int i = 0; i < 150; i++)
        assert_int_equal(proc(&obs.devs[0], 1000 + i)->memory_bytes, (i + 1) * MIB);
    assert_null(obs.topo);
    hbm_obs_free(&obs);
}

/* Calls the driver refuses leave facts unknown, never 0; a refused newest process call
 * falls back to the older one. */
static void test_unsupported_calls(void **state)
{
    (void)state;
    scenario(FAKE,
             "{\"errors\": {\"nvmlDeviceGetUtilizationRates\": 3,"
             "  \"nvmlDeviceGetTemperature\": 3, \"nvmlDeviceGetPowerUsage\": 3,"
             "  \"nvmlDeviceGetMemoryInfo_v2\": 13, \"nvmlDeviceGetMemoryInfo\": 3,"
             "  \"nvmlDeviceGetComputeRunningProcesses_v3\": 13,"
             "  \"nvmlDeviceGetGraphicsRunningProcesses_v3\": 13,"
             "  \"nvmlDeviceGetTotalEccErrors\": 3, \"nvmlDeviceGetRemappedRows\": 3,"
             "  \"nvmlDeviceGetRetiredPagesPendingStatus\": 3, \"nvmlDeviceGetMigMode\": 3},"
             " \"devices\": [{\"name\": \"G\", \"bus_id\": \"0:3b:0\", \"memory_total\": 1,"
             "   \"memory_used\": 1, \"utilization_gpu\": 5, \"temperature\": 5,"
             "   \"power_mw\": 5, \"compute\": [{\"pid\": 55, \"used_memory\": 4096}]}]}");
    hbm_obs obs;
    observe(&obs);
    hbm_device *d = &obs.devs[0];
    assert_true(isnan(d->utilization_ratio));
    assert_true(isnan(d->temperature_celsius));
    assert_true(isnan(d->power_watts));
    assert_int_equal(d->memory_total_bytes, HBM_UNKNOWN);
    assert_int_equal(d->memory_used_bytes, HBM_UNKNOWN);
    assert_string_equal(d->health, "");
    assert_true(d->healthy);
    assert_string_equal(d->bus_id, "00000000:3B:00.0");
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].pid, 55);
    assert_int_equal(d->procs[0].memory_bytes, 4096);
    hbm_obs_free(&obs);
}

/* Health is a verdict only with evidence: pending row remapping, pending page retirement. */
static void test_health_evidence(void **state)
{
    (void)state;
    scenario(FAKE, "{\"devices\": ["
                   " {\"name\": \"A\", \"ecc_uncorrected\": 0, \"remap_pending\": true},"
                   " {\"name\": \"B\", \"ecc_uncorrected\": 0, \"remap_failed\": true},"
                   " {\"name\": \"C\", \"ecc_uncorrected\": 0, \"retired_pending\": true},"
                   " {\"name\": \"D\", \"ecc_uncorrected\": 0}]}");
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.ndevs, 4);
    assert_string_equal(obs.devs[0].health, "row remap pending: reset");
    assert_string_equal(obs.devs[1].health, "row remapping failed");
    assert_string_equal(obs.devs[2].health, "page retirement pending");
    for (int i = 0; i < 3; i++)
        assert_false(obs.devs[i].healthy);
    assert_string_equal(obs.devs[3].health, "OK");
    assert_true(obs.devs[3].healthy);
    /* No bus ids: no topology evidence at all. */
    assert_null(obs.topo);
    hbm_obs_free(&obs);
}

/* GPUs on an NVSwitch fabric: every pair is NVLink; PCIe levels map to link kinds. */
static void test_topology(void **state)
{
    (void)state;
    scenario(FAKE, "{\"topology\": [[0, 10, 20, 30], [10, 0, 40, 50], [20, 40, 0, 50],"
                   "  [30, 50, 50, 0]],"
                   " \"devices\": ["
                   "  {\"name\": \"A\", \"bus_id\": \"0:18:0\", \"nvlinks\": [\"switch\", \"switch\"]},"
                   "  {\"name\": \"B\", \"bus_id\": \"0:19:0\", \"nvlinks\": [\"switch\"]},"
                   "  {\"name\": \"C\", \"bus_id\": \"0:3a:0\"},"
                   "  {\"name\": \"D\", \"bus_id\": \"0:3b:0\"}]}");
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(hbm_obs_link(&obs, 0, 1), HBM_LINK_NVLINK);
    assert_int_equal(hbm_obs_link(&obs, 0, 2), HBM_LINK_PXB);
    assert_int_equal(hbm_obs_link(&obs, 0, 3), HBM_LINK_PHB);
    assert_int_equal(hbm_obs_link(&obs, 1, 2), HBM_LINK_NODE);
    assert_int_equal(hbm_obs_link(&obs, 1, 3), HBM_LINK_SYS);
    assert_int_equal(hbm_obs_link(&obs, 2, 3), HBM_LINK_SYS);
    hbm_obs_free(&obs);
}

static void test_init_failure_and_absence(void **state)
{
    (void)state;
    scenario(FAKE, "{\"init_error\": 9, \"devices\": []}");
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_err err = {{0}};
    /* Loading the library runs its constructors: only observe does it, under the deadline. */
    assert_null(hbm_backend_nvml.available);
    assert_int_equal(hbm_backend_nvml.observe(&obs, 5, &err), -1);
    unlink(scn_path);
    assert_non_null(strstr(err.msg, "Driver Not Loaded"));
    hbm_obs_free(&obs);

    setenv("HBMCTL_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    hbm_obs_init(&obs);
    assert_int_equal(hbm_backend_nvml.observe(&obs, 5, &err), -1);
    hbm_obs_free(&obs);
    assert_non_null(strstr(err.msg, "HBMCTL_NVML_LIB"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_sizes),
        cmocka_unit_test(test_old_driver),
        cmocka_unit_test(test_many_processes),
        cmocka_unit_test(test_unsupported_calls),
        cmocka_unit_test(test_health_evidence),
        cmocka_unit_test(test_topology),
        cmocka_unit_test(test_init_failure_and_absence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
