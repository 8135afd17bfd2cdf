/* The exposition writer and the metrics of an observation built here: label escaping,
 * unknown facts left out (never 0), a failed observation, families written whole, and
 * leak and finding metrics. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/export.h"

static void test_escape_label(void **state)
{
    (void)state;
    hbm_export_buf b = {0};
    hbm_export_escape_label(&b, "a\\b\"c\nd");
    assert_string_equal(b.data, "a\\\\b\\\"c\\nd");
    b.len = 0;
    hbm_export_escape_label(&b, "");
    assert_int_equal(b.len, 0);
    hbm_export_label l[2] = {{"name", "x\"y"}, {"container", "tab\there"}};
    hbm_export_sample(&b, "m_bytes", l, 2, 3);
    assert_string_equal(b.data, "m_bytes{name=\"x\\\"y\",container=\"tab\there\"} 3\n");
    hbm_export_buf_free(&b);
}

static void test_family_and_values(void **state)
{
    (void)state;
    hbm_export_buf b = {0};
    hbm_export_family(&b, "m_ratio", "gauge", "line one\nback\\slash");
    assert_string_equal(b.data, "# HELP m_ratio line one\\nback\\\\slash\n# TYPE m_ratio gauge\n");
    b.len = 0;
    hbm_export_sample(&b, "m_ratio", NULL, 0, 0.25);
    hbm_export_sample(&b, "m_ratio", NULL, 0, NAN);
    hbm_export_sample_i64(&b, "m_bytes", NULL, 0, HBM_UNKNOWN);
    hbm_export_sample_i64(&b, "m_bytes", NULL, 0, 68719476736LL);
    hbm_export_sample(&b, "m_bytes", NULL, 0, 68719476736.0);
    assert_string_equal(b.data, "m_ratio 0.25\nm_bytes 68719476736\nm_bytes 68719476736\n");
    /* A long line goes through the slow path of the formatter. */
    b.len = 0;
    char name[400];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    hbm_export_buf_printf(&b, "%s %d", name, 7);
    assert_int_equal(b.len, sizeof name - 1 + 2);
    hbm_export_buf_free(&b);
}

static void make_obs(hbm_obs *obs)
{
    hbm_obs_init(obs);
    hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
    d->index = 6;
    d->chip = 0;
    d->logic_id = 2;
    snprintf(d->name, sizeof d->name, "910B4");
    snprintf(d->bus_id, sizeof d->bus_id, "0000:C1:00.0");
    snprintf(d->health, sizeof d->health, "OK");
    d->memory_used_bytes = 20 * HBM_GIB;
    d->memory_total_bytes = 32 * HBM_GIB;
    d->temperature_celsius = 41;
    d->procs_known = true;
    d->verdict = HBM_VERDICT_BUSY;
    hbm_dproc *p = hbm_device_add_proc(d);
    p->pid = 4242;
    snprintf(p->name, sizeof p->name, "python \"vllm\"");
    p->memory_bytes = 16 * HBM_GIB;
    p->state = HBM_PID_LIVE;
    d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
    d->index = 7;
    d->chip = 0;
    d->logic_id = 3;
    snprintf(d->name, sizeof d->name, "910B4");
    d->verdict = HBM_VERDICT_UNHEALTHY;
    d->healthy = false;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_render_observation(void **state)
{
    (void)state;
    hbm_obs obs;
    make_obs(&obs);
    hbm_watch w;
    hbm_watch_init(&w, NULL);
    for (int i = 0; i < 10; i++)
        hbm_watch_update(&w, &obs, i);
    hbm_findings f = {0};
    f.cap = f.n = 3;
    f.items = calloc(3, sizeof *f.items);
    for (int i = 0; i < 3; i++) {
        snprintf(f.items[i].id, sizeof f.items[i].id, "%s", i < 2 ? "stale-sysv" : "orphan-holder");
        f.items[i].severity = i < 2 ? HBM_SEV_WARNING : HBM_SEV_CRITICAL;
        f.items[i].device = i < 2 ? HBM_UNKNOWN : 2;
    }
    hbm_lease_info lease = {.device = 2, .pid = 99, .held = true};
    snprintf(lease.name, sizeof lease.name, "svc");
    hbm_export_input in = {.obs = &obs, .watch = &w, .findings = &f, .leases = &lease,
                           .nleases = 1, .leases_known = true};
    hbm_export_buf b = {0};
    hbm_export_render(&in, &b);
    const char *t = b.data;
    assert_non_null(strstr(t, "hbmctl_up 1\n"));
    assert_non_null(strstr(t, "hbmctl_device_memory_used_bytes{device=\"2\",chip=\"0\","
                              "name=\"910B4\",vendor=\"ascend\",bus_id=\"0000:C1:00.0\"} "
                              "21474836480\n"));
    /* Device 3 reports no memory: no sample, never a 0. */
    assert_null(strstr(t, "hbmctl_device_memory_used_bytes{device=\"3\""));
    assert_int_equal(count(t, "hbmctl_device_memory_used_bytes{"), 1);
    assert_non_null(strstr(t, "hbmctl_device_temperature_celsius{device=\"2\""));
    assert_non_null(strstr(t, "name=\"python \\\"vllm\\\"\""));
    assert_non_null(strstr(t, "hbmctl_device_verdict{device=\"2\",chip=\"0\",name=\"910B4\","
                              "vendor=\"ascend\",bus_id=\"0000:C1:00.0\",verdict=\"BUSY\"} 1"));
    assert_non_null(strstr(t, "verdict=\"UNHEALTHY\"} 1"));
    assert_int_equal(count(t, "hbmctl_device_verdict{"), 10);
    assert_non_null(strstr(t, "hbmctl_device_healthy{device=\"3\",chip=\"0\",name=\"910B4\","
                              "vendor=\"ascend\",bus_id=\"\"} 0"));
    assert_non_null(strstr(t, "hbmctl_device_memory_leak{device=\"2\""));
    assert_non_null(strstr(t, "hbmctl_findings{id=\"stale-sysv\",severity=\"warning\","
                              "device=\"\"} 2\n"));
    assert_non_null(strstr(t, "hbmctl_findings{id=\"orphan-holder\",severity=\"critical\","
                              "device=\"2\"} 1\n"));
    assert_non_null(strstr(t, "hbmctl_findings_by_severity{severity=\"info\"} 0\n"));
    assert_non_null(strstr(t, "hbmctl_lease_held{device=\"2\",name=\"svc\",pid=\"99\"} 1\n"));
    assert_non_null(strstr(t, "hbmctl_leases_held 1\n"));
    /* Each family is declared once and all of its samples follow its TYPE line. */
    for (const char *p = strstr(t, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
        char fam[128];
        assert_int_equal(sscanf(p, "# TYPE %127s", fam), 1);
        char decl[160];
        snprintf(decl, sizeof decl, "# TYPE %s ", fam);
        assert_int_equal(count(t, decl), 1);
    }
    hbm_export_buf_free(&b);
    free(f.items);
    hbm_watch_free(&w);
    hbm_obs_free(&obs);
}

static void test_render_failed_observation(void **state)
{
    (void)state;
    hbm_export_input in = {.obs = NULL, .obs_error = "libnvidia-ml.so.1: \"not\" found"};
    hbm_export_buf b = {0};
    hbm_export_render(&in, &b);
    assert_non_null(strstr(b.data, "hbmctl_up 0\n"));
    assert_non_null(strstr(b.data, "hbmctl_observe_error{error=\"libnvidia-ml.so.1: \\\"not\\\" "
                                   "found\"} 1\n"));
    assert_null(strstr(b.data, "hbmctl_device_"));
    hbm_export_buf_free(&b);
}

static void test_parse_listen(void **state)
{
    (void)state;
    char ss[128];
    unsigned len;
    bool v6;
    hbm_err err;
    assert_int_equal(hbm_export_parse_listen("127.0.0.1:9464", ss, &len, &v6, &err), 0);
    assert_false(v6);
    assert_int_equal(hbm_export_parse_listen("[::1]:0", ss, &len, &v6, &err), 0);
    assert_true(v6);
    assert_int_equal(hbm_export_parse_listen(":9464", ss, &len, &v6, &err), 0);
    assert_int_equal(hbm_export_parse_listen("localhost:9464", ss, &len, &v6, &err), -1);
    assert_non_null(strstr(err.msg, "numeric"));
    assert_int_equal(hbm_export_parse_listen("127.0.0.1:70000", ss, &len, &v6, &err), -1);
    assert_int_equal(hbm_export_parse_listen("127.0.0.1", ss, &len, &v6, &err), -1);
    assert_int_equal(hbm_export_parse_listen("[::1]9464", ss, &len, &v6, &err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_label),
        cmocka_unit_test(test_family_and_values),
        cmocka_unit_test(test_render_observation),
        cmocka_unit_test(test_render_failed_observation),
        cmocka_unit_test(test_parse_listen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
