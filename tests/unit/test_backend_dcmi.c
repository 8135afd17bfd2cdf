/* The DCMI backend against the fake libdcmi (tests/fakes/fake_dcmi.c), current and old
 * exports: the four numberings, units (MB, 0.1 W, bytes), HBM vs the general memory call,
 * two-chip cards, the 64-entry process call, health evidence, the vNPU utilisation bit,
 * and topology codes whose meaning differs between header versions. */
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

#define FAKE HBM_BINARY_DIR "/fakes/libdcmi.so"
#define FAKE_OLD HBM_BINARY_DIR "/fakes/old/libdcmi.so"
#define MIB (1024LL * 1024)

static char scn_path[64];

static void scenario(const char *lib, const char *json)
{
    th_tmpfile(scn_path, sizeof scn_path, "dcmi-unit", json);
    setenv("HBM_FAKE_DCMI_SCENARIO", scn_path, 1);
    setenv("HBMCTL_DCMI_LIB", lib, 1);
}

static void observe(hbm_obs *obs)
{
    hbm_err err = {{0}};
    hbm_obs_init(obs);
    int rc = hbm_backend_dcmi.observe(obs, 5, &err);
    unlink(scn_path);
    if (rc != 0)
        fail_msg("observe: %s", err.msg);
}

/* Card 1792 holds one 910B3; card 96 is a two-chip 300I Duo (310P3, no HBM). */
#define MIXED                                                                               \
    "{\"driver_version\": \"24.1.rc2\","                                                    \
    " \"topology\": [[0, 6, 1], [6, 0, 6], [1, 6, 0]],"                                      \
    " \"cards\": ["                                                                         \
    "  {\"card_id\": 1792, \"chips\": [{\"logic_id\": 0, \"phy_id\": 4, \"name\": \"910B3\","   \
    "    \"health\": 0, \"temperature\": 45, \"power_dw\": 953, \"aicore_util\": 37,"       \
    "    \"hbm\": {\"total_mb\": 65536, \"used_mb\": 3400}, \"bus_id\": \"0000:C1:00.0\","  \
    "    \"processes\": [{\"pid\": 4242, \"memory\": 27917287424}]}]},"                     \
    "  {\"card_id\": 96, \"chips\": ["                                                      \
    "   {\"logic_id\": 1, \"phy_id\": 0, \"name\": \"310P3\", \"health\": 1,"               \
    "    \"temperature\": 32767, \"aicore_util\": 512,"                                     \
    "    \"memory\": {\"total_mb\": 44280, \"available_mb\": 43000, \"hugepages_total\": 15,"\
    "                \"hugepages_free\": 5}, \"bus_id\": \"0001:01:00.1\","                 \
    "    \"processes\": [{\"pid\": 4242, \"memory\": 113246208}]},"                         \
    "   {\"logic_id\": 2, \"phy_id\": 1, \"name\": \"310P3\", \"health\": 2,"               \
    "    \"error_codes\": [2162169857], \"aicore_util\": 1000,"                             \
    "    \"memory\": {\"total_mb\": 44280, \"available_mb\": 10000}, \"processes\": []}]}]}"

static void test_mixed_cards(void **state)
{
    (void)state;
    scenario(FAKE, MIXED);
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.ndevs, 3);
    assert_string_equal(obs.driver_version, "24.1.rc2");

    hbm_device *d = &obs.devs[0];
    assert_int_equal(d->vendor, HBM_VENDOR_ASCEND);
    assert_int_equal(d->index, 1792);
    assert_int_equal(d->chip, 0);
    assert_int_equal(d->logic_id, 0);
    assert_int_equal(d->phy_id, 4);
    assert_string_equal(d->name, "910B3");
    assert_string_equal(d->health, "OK");
    assert_true(d->healthy);
    assert_float_equal(d->temperature_celsius, 45, 1e-9);
    assert_float_equal(d->power_watts, 95.3, 1e-9);
    assert_float_equal(d->utilization_ratio, 0.37, 1e-9);
    assert_int_equal(d->memory_total_bytes, 65536 * MIB);
    assert_int_equal(d->memory_used_bytes, 3400 * MIB);
    assert_int_equal(d->ddr_total_bytes, HBM_UNKNOWN);
    assert_int_equal(d->hugepages_total, HBM_UNKNOWN);
    assert_string_equal(d->bus_id, "0000:C1:00.0");
    assert_true(d->procs_known);
    assert_int_equal(d->nprocs, 1);
    assert_int_equal(d->procs[0].pid, 4242);
    assert_int_equal(d->procs[0].memory_bytes, 27917287424LL);

    d = &obs.devs[1];
    assert_int_equal(d->index, 96);
    assert_int_equal(d->chip, 0);
    assert_int_equal(d->logic_id, 1);
    assert_int_equal(d->phy_id, 0);
    /* A minor alarm leaves the chip usable. */
    assert_string_equal(d->health, "Warning");
    assert_true(d->healthy);
    assert_true(isnan(d->temperature_celsius)); /* 0x7fff: the read failed */
    assert_true(isnan(d->power_watts));
    assert_float_equal(d->utilization_ratio, 0.0, 1e-9); /* 512 = vNPU bit + 0 % */
    assert_int_equal(d->memory_total_bytes, 44280 * MIB);
    assert_int_equal(d->memory_used_bytes, 1280 * MIB);
    assert_int_equal(d->hugepages_total, 15);
    assert_int_equal(d->hugepages_used, 10);
    assert_string_equal(d->bus_id, "0001:01:00.1");
    assert_int_equal(d->procs[0].memory_bytes, 108 * MIB);

    d = &obs.devs[2];
    assert_int_equal(d->index, 96);
    assert_int_equal(d->chip, 1);
    assert_string_equal(d->health, "Alarm 0x80E01801");
    assert_false(d->healthy);
    assert_true(isnan(d->utilization_ratio)); /* 1000 less the vNPU bit: 488, no percentage */
    assert_true(d->procs_known);
    assert_int_equal(d->nprocs, 0);
    assert_string_equal(d->bus_id, "");

    /* 6 between the dies of one card is SIO; between cards an old driver's "unknown". */
    assert_int_equal(hbm_obs_link(&obs, 1, 2), HBM_LINK_HCCS);
    assert_int_equal(hbm_obs_link(&obs, 0, 1), HBM_LINK_UNKNOWN);
    assert_int_equal(hbm_obs_link(&obs, 0, 2), HBM_LINK_SYS);
    hbm_obs_free(&obs);
}

/* Eight 910B chips on HCCS; topology codes 0..5 and 7..9. */
static void test_eight_npus_topology(void **state)
{
    (void)state;
    char buf[16384];
    size_t n = (size_t)snprintf(buf, sizeof buf, "{\"topology\": [");
    for (int i = 0; i < 8; i++) {
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s[", i ? "," : "");
        for (int j = 0; j < 8; j++) {
            int code = i == j ? 0 : (i < 4 && j < 4) ? 3 : (i >= 4 && j >= 4) ? 7 : 9;
            if ((i == 4 && j == 5) || (i == 5 && j == 4))
                code = 5;
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%d", j ? "," : "", code);
        }
        n += (size_t)snprintf(buf + n, sizeof buf - n, "]");
    }
    n += (size_t)snprintf(buf + n, sizeof buf - n, "], \"cards\": [");
    for (int i = 0; i < 8; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "%s{\"card_id\": %d, \"chips\": [{\"logic_id\": %d, \"phy_id\": %d,"
                              " \"name\": \"910B4\", \"hbm\": {\"total_mb\": 32768,"
                              " \"used_mb\": 2900}}]}",
                              i ? "," : "", i, i, 7 - i);
    snprintf(buf + n, sizeof buf - n, "]}");
    scenario(FAKE, buf);
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.ndevs, 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(obs.devs[i].index, i);
        assert_int_equal(obs.devs[i].phy_id, 7 - i);
    }
    assert_int_equal(hbm_obs_link(&obs, 0, 3), HBM_LINK_HCCS);
    assert_int_equal(hbm_obs_link(&obs, 6, 7), HBM_LINK_HCCS); /* switched HCCS */
    assert_int_equal(hbm_obs_link(&obs, 4, 5), HBM_LINK_PIX);
    assert_int_equal(hbm_obs_link(&obs, 0, 7), HBM_LINK_UNKNOWN);
    hbm_obs_free(&obs);
}

static void procs_scenario(char *buf, size_t cap, int nprocs)
{
    size_t n = (size_t)snprintf(buf, cap, "{\"cards\": [{\"card_id\": 0, \"chips\": ["
                                          "{\"logic_id\": 0, \"name\": \"910B2\", \"processes\": [");
    for (int i = 0; i < nprocs; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s{\"pid\": %d, \"memory\": %d}", i ? "," : "",
                              20000 + i, (i + 1) * 1048576);
    snprintf(buf + n, cap - n, "]}]}]}");
}

/* 40 processes on one chip all show; past 64 the driver itself stops writing. */
static void test_many_processes(void **state)
{
    (void)state;
    static char buf[65536];
    procs_scenario(buf, sizeof buf, 40);
    scenario(FAKE, buf);
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.devs[0].nprocs, 40);
    for (int i = 0; i < 40; i++) {
        assert_int_equal(obs.devs[0].procs[i].pid, 20000 + i);
        assert_int_equal(obs.devs[0].procs[i].memory_bytes, (i + 1) * MIB);
    }
    hbm_obs_free(&obs);

    procs_scenario(buf, sizeof buf, 70);
    scenario(FAKE, buf);
    observe(&obs);
    assert_int_equal(obs.devs[0].nprocs, 64);
    hbm_obs_free(&obs);
}

/* An old driver: the deprecated card list and HBM calls, the first PCIe struct (no
 * domain), the percentage-only memory call; phy ids unknown, no topology. */
static void test_old_driver(void **state)
{
    (void)state;
    scenario(FAKE_OLD, MIXED);
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.ndevs, 3);
    hbm_device *d = &obs.devs[0];
    assert_int_equal(d->index, 1792);
    assert_int_equal(d->logic_id, 0);
    assert_int_equal(d->phy_id, HBM_UNKNOWN);
    assert_int_equal(d->memory_total_bytes, 65536 * MIB);
    assert_int_equal(d->memory_used_bytes, 3400 * MIB);
    assert_string_equal(d->bus_id, "0000:C1:00.0");
    d = &obs.devs[1];
    assert_int_equal(d->memory_total_bytes, 44280 * MIB);
    /* (44280 - 43000) * 100 / 44280 = 2 %: a percentage is all the old call gives. */
    assert_int_equal(d->memory_used_bytes, 44280 * MIB * 2 / 100);
    assert_int_equal(d->hugepages_total, HBM_UNKNOWN);
    assert_string_equal(d->bus_id, "0000:01:00.1");
    /* No error-code call: the health word alone. */
    assert_string_equal(obs.devs[2].health, "Alarm");
    assert_false(obs.devs[2].healthy);
    assert_null(obs.topo);
    hbm_obs_free(&obs);
}

/* The HBM call answers NOT_SUPPORT or a zero size on chips without HBM; calls that fail
 * leave facts unknown. */
static void test_memory_fallback_and_failures(void **state)
{
    (void)state;
    scenario(FAKE, "{\"errors\": {\"dcmi_get_device_temperature\": -8255,"
                   "  \"dcmi_get_device_resource_info\": -8013},"
                   " \"cards\": [{\"card_id\": 0, \"chips\": ["
                   "  {\"logic_id\": 0, \"name\": \"310P3\", \"hbm\": {\"total_mb\": 0, \"used_mb\": 0},"
                   "   \"memory\": {\"total_mb\": 21527, \"available_mb\": 21000}},"
                   "  {\"logic_id\": 1, \"name\": \"Ascend910\", \"hbm\": {\"total_mb\": 32768,"
                   "   \"used_mb\": 1000}, \"memory\": {\"total_mb\": 15600, \"available_mb\": 15000},"
                   "   \"errors\": {\"dcmi_get_device_health\": -8005}}]}]}");
    hbm_obs obs;
    observe(&obs);
    hbm_device *d = &obs.devs[0];
    assert_int_equal(d->memory_total_bytes, 21527 * MIB);
    assert_int_equal(d->memory_used_bytes, 527 * MIB);
    assert_true(isnan(d->temperature_celsius));
    assert_false(d->procs_known);
    d = &obs.devs[1];
    /* First-generation 910: HBM is the memory, the general call its DDR. */
    assert_int_equal(d->memory_total_bytes, 32768 * MIB);
    assert_int_equal(d->ddr_total_bytes, 15600 * MIB);
    assert_int_equal(d->ddr_used_bytes, 600 * MIB);
    assert_string_equal(d->health, "");
    assert_true(d->healthy);
    hbm_obs_free(&obs);
}

/* Health words as npu-smi prints them; only major, critical and absent are evidence. */
static void test_health_words(void **state)
{
    (void)state;
    scenario(FAKE, "{\"cards\": [{\"card_id\": 5, \"chips\": ["
                   "  {\"logic_id\": 0, \"health\": 3, \"error_codes\": []},"
                   "  {\"logic_id\": 1, \"health\": 4294967295},"
                   "  {\"logic_id\": 2, \"health\": 7},"
                   "  {\"logic_id\": 3, \"health\": 1, \"error_codes\": [16]}]}]}");
    hbm_obs obs;
    observe(&obs);
    assert_int_equal(obs.ndevs, 4);
    assert_string_equal(obs.devs[0].health, "Critical");
    assert_false(obs.devs[0].healthy);
    assert_string_equal(obs.devs[1].health, "Absent");
    assert_false(obs.devs[1].healthy);
    assert_string_equal(obs.devs[2].health, "UNKNOWN");
    assert_true(obs.devs[2].healthy);
    assert_string_equal(obs.devs[3].health, "Warning 0x00000010");
    assert_true(obs.devs[3].healthy);
    hbm_obs_free(&obs);
}

static void test_init_failure_and_absence(void **state)
{
    (void)state;
    scenario(FAKE, "{\"init_error\": -8008, \"cards\": []}");
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_err err = {{0}};
    /* Loading the library runs its constructors: only observe does it, under the deadline. */
    assert_null(hbm_backend_dcmi.available);
    assert_int_equal(hbm_backend_dcmi.observe(&obs, 5, &err), -1);
    unlink(scn_path);
    assert_non_null(strstr(err.msg, "-8008"));
    assert_non_null(strstr(err.msg, "device does not exist"));
    hbm_obs_free(&obs);

    setenv("HBMCTL_DCMI_LIB", "/nonexistent/libdcmi.so", 1);
    hbm_obs_init(&obs);
    assert_int_equal(hbm_backend_dcmi.observe(&obs, 5, &err), -1);
    hbm_obs_free(&obs);
    assert_non_null(strstr(err.msg, "HBMCTL_DCMI_LIB"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_cards),
        cmocka_unit_test(test_eight_npus_topology),
        cmocka_unit_test(test_many_processes),
        cmocka_unit_test(test_old_driver),
        cmocka_unit_test(test_memory_fallback_and_failures),
        cmocka_unit_test(test_health_words),
        cmocka_unit_test(test_init_failure_and_absence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
