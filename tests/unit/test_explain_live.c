/* Live checks against a built observation (the form a snapshot gives): holders with their
 * memory, device health, visible devices against the tensor-parallel size, and ports with
 * the server processes that listen, all without reading this host's /proc. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/explain.h"

#define GIB (1024LL * 1024 * 1024)

#include "explain_fixture.h"

/* Two GPUs: 0 held by pid 4242 (BUSY), 1 unhealthy. A vllm server pid 777 listens on 6017. */
static void build_obs(hbm_obs *obs)
{
    hbm_obs_init(obs);
    for (int i = 0; i < 2; i++) {
        hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_NVIDIA);
        d->index = i;
        d->chip = 0;
        snprintf(d->name, sizeof d->name, "NVIDIA H100");
        d->memory_total_bytes = 80 * GIB;
        d->memory_used_bytes = i == 0 ? 21 * GIB : GIB / 2;
        snprintf(d->health, sizeof d->health, "%s", i == 0 ? "OK" : "Alarm");
        d->healthy = i == 0;
        d->verdict = i == 0 ? HBM_VERDICT_BUSY : HBM_VERDICT_UNHEALTHY;
        snprintf(d->reason, sizeof d->reason, "%s", i == 0 ? "pid 4242 holds it" : "health Alarm");
    }
    hbm_dproc *p = hbm_device_add_proc(&obs->devs[0]);
    p->pid = 4242;
    snprintf(p->name, sizeof p->name, "python3");
    p->memory_bytes = 20 * GIB;
    p->state = HBM_PID_LIVE;
    obs->has_host = true;
    obs->host.procs = hbm_xcalloc(1, sizeof *obs->host.procs);
    obs->host.nprocs = 1;
    hbm_hproc *hp = &obs->host.procs[0];
    hp->pid = 777;
    hp->state = 'S';
    snprintf(hp->comm, sizeof hp->comm, "python3");
    hp->cmdline = hbm_xstrdup("python3 -m vllm.entrypoints.openai.api_server --port 6017");
    hp->visible_devices = hbm_xstrdup("0,1");
    obs->host.listeners = hbm_xcalloc(1, sizeof *obs->host.listeners);
    obs->host.nlisteners = 1;
    snprintf(obs->host.listeners[0].addr, sizeof obs->host.listeners[0].addr, "0.0.0.0");
    obs->host.listeners[0].port = 6017;
    obs->host.listeners[0].pid = 777;
}

static void explain(const char *log, hbm_explain_report *rep)
{
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    hbm_explain_scanner_feed(s, log, strlen(log));
    hbm_explain_scanner_finish(s, rep);
    hbm_explain_scanner_free(s);
    hbm_obs obs;
    build_obs(&obs);
    hbm_explain_live_apply(rep, cat, &obs, NULL, "snapshot test");
    hbm_obs_free(&obs);
}

static bool said(const hbm_explain_finding *f, const char *needle)
{
    for (size_t i = 0; i < f->nlive_lines; i++)
        if (strstr(f->live_lines[i], needle))
            return true;
    fprintf(stderr, "not said: %s\n", needle);
    for (size_t i = 0; i < f->nlive_lines; i++)
        fprintf(stderr, "  said: %s\n", f->live_lines[i]);
    return false;
}

static void test_visible_devices_vs_tp(void **state)
{
    (void)state;
    hbm_explain_report rep;
    explain("export CUDA_VISIBLE_DEVICES=0,5\n"
            "ValueError: local_world_size (4) must be less than or equal to the number of "
            "visible devices (2).\n",
            &rep);
    assert_int_equal(rep.nfindings, 1);
    const hbm_explain_finding *f = &rep.findings[0];
    json_t *v = json_object_get(f->live, "visible_devices");
    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "tp")), 4);
    assert_string_equal(json_string_value(json_object_get(v, "visible")), "0,5");
    assert_int_equal(json_integer_value(json_object_get(v, "visible_count")), 2);
    assert_true(json_is_false(json_object_get(v, "match")));
    assert_int_equal(json_integer_value(json_array_get(json_object_get(v, "missing"), 0)), 5);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(v, "not_free"), 0)), 0);
    assert_true(said(f, "tensor-parallel size 4 needs 4 visible devices, only 2 are visible"));
    assert_true(said(f, "visible device 5 does not exist here"));
    assert_true(said(f, "this host shows 2 devices"));
    assert_string_equal(json_string_value(json_object_get(f->live, "source")), "snapshot test");
    hbm_explain_report_free(&rep);

    /* No variable in the log: the running server's environment is used. */
    explain("RuntimeError: please ensure that world_size (2) is less than than max local gpu "
            "count (1)\n", &rep);
    f = &rep.findings[0];
    v = json_object_get(f->live, "visible_devices");
    assert_string_equal(json_string_value(json_object_get(v, "visible")), "0,1");
    assert_true(json_is_true(json_object_get(v, "match")));
    assert_true(said(f, "from a running server's environment"));
    hbm_explain_report_free(&rep);
}

static void test_holders_and_health(void **state)
{
    (void)state;
    hbm_explain_report rep;
    explain("ValueError: Free memory on device (59.32/79.15 GiB) on startup is less than desired "
            "GPU memory utilization (0.9, 71.24 GiB).\n"
            "Device[1] lost heartbeat.\n",
            &rep);
    assert_int_equal(rep.nfindings, 2);
    const hbm_explain_finding *fm = &rep.findings[0];
    json_t *h = json_object_get(fm->live, "holders");
    assert_int_equal(json_array_size(h), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 0), "pid")), 4242);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(h, 0), "memory_bytes")),
                     20 * GIB);
    assert_true(said(fm, "pid 4242 python3 holds 20.00 GiB (live)"));
    assert_true(said(fm, "device 0 (NVIDIA H100): 21.00 GiB of 80.00 GiB used, BUSY"));

    const hbm_explain_finding *hb = &rep.findings[1];
    assert_string_equal(hb->sig->id, "ascend_lost_heartbeat");
    json_t *bad = json_object_get(hb->live, "unhealthy");
    assert_int_equal(json_array_size(bad), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(bad, 0), "device")), 1);
    assert_true(said(hb, "device 1 health is Alarm now"));
    hbm_explain_report_free(&rep);
}

static void test_port_and_servers(void **state)
{
    (void)state;
    hbm_explain_report rep;
    explain("curl: (7) Failed to connect to 127.0.0.1 port 18019 after 0 ms: Couldn't connect "
            "to server\n", &rep);
    const hbm_explain_finding *f = &rep.findings[0];
    json_t *port = json_object_get(f->live, "port");
    assert_int_equal(json_integer_value(json_object_get(port, "port")), 18019);
    assert_true(json_is_false(json_object_get(port, "listening")));
    json_t *srv = json_array_get(json_object_get(f->live, "servers"), 0);
    assert_int_equal(json_integer_value(json_object_get(srv, "pid")), 777);
    assert_string_equal(json_string_value(json_object_get(srv, "name")), "vllm");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(srv, "ports"), 0)), 6017);
    assert_true(said(f, "port 18019: nothing listens on this host now"));
    assert_true(said(f, "a vllm process (pid 777) listens on 6017"));
    assert_true(said(f, "the log's port 18019 is not the server's --port 6017"));
    hbm_explain_report_free(&rep);

    explain("OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 6017): "
            "address already in use\n", &rep);
    f = &rep.findings[0];
    assert_string_equal(f->sig->id, "address_in_use");
    port = json_object_get(f->live, "port");
    assert_true(json_is_true(json_object_get(port, "listening")));
    assert_true(said(f, "port 6017: listening on 0.0.0.0 (pid 777, python3)"));
    hbm_explain_report_free(&rep);
}

/* A finding without checks gets no live object; a clean log none at all. */
static void test_no_checks(void **state)
{
    (void)state;
    hbm_explain_report rep;
    explain("Warning: PYTORCH_CUDA_ALLOC_CONF is deprecated, use PYTORCH_ALLOC_CONF instead\n",
            &rep);
    assert_int_equal(rep.nfindings, 1);
    assert_false(hbm_explain_report_wants_live(&rep));
    assert_null(rep.findings[0].live);
    hbm_explain_report_free(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_visible_devices_vs_tp),
        cmocka_unit_test(test_holders_and_health),
        cmocka_unit_test(test_port_and_servers),
        cmocka_unit_test(test_no_checks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
