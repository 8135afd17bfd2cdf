/* The fleet view from Prometheus answers: which labels name a holder's pod (with and
 * without honor_labels), stale nodes kept, worst first, and unreadable answers refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/fleet.h"

/* The answers' buffers: the samples' labels live in them until the test frees them. */
static char bufs[HBM_FQ_COUNT][4096];
static int nbufs;

static void vec(hbm_fleet_prom_vec *v, const char *result)
{
    char *buf = bufs[nbufs++];
    snprintf(buf, sizeof bufs[0], "{\"status\":\"success\",\"data\":{\"resultType\":"
                                  "\"vector\",\"result\":[%s]}}", result);
    hbm_err err;
    if (hbm_fleet_prom_parse(buf, strlen(buf), "test", NULL, v, &err) < 0)
        fail_msg("%s", err.msg);
}

#define UP(inst, v, pod) "{\"metric\":{\"instance\":\"" inst "\",\"job\":\"hbmctl\"" pod "}," \
                         "\"value\":[1,\"" v "\"]}"

static void test_pods_and_order(void **state)
{
    (void)state;
    hbm_fleet_prom_vec ans[HBM_FQ_COUNT];
    memset(ans, 0, sizeof ans);
    /* a: exporter pod monitoring/exp-a as target labels, honor_labels off: the holder's
     * pod arrives as exported_*; b: honor_labels off, holder outside any pod, so the plain
     * labels are the target's own; c: down. */
    vec(&ans[HBM_FQ_UP], UP("a:1", "1", ",\"namespace\":\"monitoring\",\"pod\":\"exp-a\"") ","
                         UP("b:1", "1", ",\"namespace\":\"monitoring\",\"pod\":\"exp-b\"") ","
                         UP("c:1", "0", ""));
    vec(&ans[HBM_FQ_VERDICT],
        "{\"metric\":{\"instance\":\"a:1\",\"device\":\"0\",\"verdict\":\"BUSY\",\"name\":\"H100\"},"
        "\"value\":[1,\"1\"]},"
        "{\"metric\":{\"instance\":\"b:1\",\"device\":\"1\",\"verdict\":\"ORPHANED\"},\"value\":[1,\"1\"]},"
        "{\"metric\":{\"instance\":\"b:1\",\"device\":\"0\",\"verdict\":\"FREE\"},\"value\":[1,\"1\"]},"
        "{\"metric\":{\"instance\":\"c:1\",\"device\":\"0\",\"verdict\":\"FREE\"},\"value\":[1,\"1\"]}");
    vec(&ans[HBM_FQ_PROC_MEM],
        "{\"metric\":{\"instance\":\"a:1\",\"device\":\"0\",\"pid\":\"7\",\"namespace\":\"monitoring\","
        "\"pod\":\"exp-a\",\"exported_namespace\":\"ml\",\"exported_pod\":\"vllm-0\","
        "\"exported_container\":\"vllm\"},\"value\":[1,\"1024\"]},"
        "{\"metric\":{\"instance\":\"b:1\",\"device\":\"1\",\"pid\":\"9\",\"namespace\":\"monitoring\","
        "\"pod\":\"exp-b\"},\"value\":[1,\"2048\"]}");
    vec(&ans[HBM_FQ_USED], "{\"metric\":{\"instance\":\"a:1\",\"device\":\"0\"},\"value\":[1,\"NaN\"]}");
    hbm_fleet f;
    memset(&f, 0, sizeof f);
    hbm_fleet_build(&f, ans);
    assert_int_equal(f.nnodes, 3);
    /* worst first: ORPHANED, stale, BUSY */
    assert_string_equal(f.nodes[0].instance, "b:1");
    assert_string_equal(f.nodes[1].instance, "c:1");
    assert_true(f.nodes[1].stale);
    assert_int_equal(f.nodes[1].ndevs, 0); /* a stale node's series are not current */
    assert_string_equal(f.nodes[2].instance, "a:1");
    const hbm_fleet_proc *pa = &f.nodes[2].devs[0].procs[0];
    assert_string_equal(pa->ns, "ml");
    assert_string_equal(pa->pod, "vllm-0");
    assert_string_equal(pa->container, "vllm");
    assert_int_equal(f.nodes[2].devs[0].memory_used_bytes, -1); /* NaN is unknown, not 0 */
    assert_string_equal(f.nodes[0].devs[0].index, "0"); /* devices in index order */
    const hbm_fleet_proc *pb = &f.nodes[0].devs[1].procs[0];
    assert_int_equal(pb->pid, 9);
    assert_string_equal(pb->pod, ""); /* the exporter's own pod is not the holder's */
    assert_true(hbm_fleet_dirty(&f));
    assert_int_equal(hbm_fleet_stale(&f), 1);
    hbm_fleet_free(&f);
    for (int q = 0; q < HBM_FQ_COUNT; q++)
        hbm_fleet_prom_vec_free(&ans[q]);
}

static void test_refused(void **state)
{
    (void)state;
    hbm_fleet_prom_vec v;
    hbm_err err;
    const char *cases[][2] = {
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"2\"]}}",
         "must be a vector"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
         "[{\"metric\":{},\"value\":[1,\"x\"]}]}}", "data.result[0]"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
         "[{\"metric\":{\"a\":1},\"value\":[1,\"1\"]}]}}", "data.result[0].metric.a"},
        {"<html>", "answer line 1"},
        {"{\"status\":\"error\",\"error\":\"bad\"}", "Prometheus says: bad"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", cases[i][0]);
        assert_int_equal(hbm_fleet_prom_parse(buf, strlen(buf), "q", NULL, &v, &err), -1);
        if (!strstr(err.msg, cases[i][1]))
            fail_msg("'%s' does not say '%s'", err.msg, cases[i][1]);
    }
}

/* A node is named by its hostname unless that is unknown or another node's too. */
static void test_node_name(void **state)
{
    (void)state;
    hbm_fleet_node n;
    memset(&n, 0, sizeof n);
    snprintf(n.instance, sizeof n.instance, "10.0.0.7:9400");
    assert_string_equal(hbm_fleet_node_name(&n), "10.0.0.7:9400");
    snprintf(n.hostname, sizeof n.hostname, "gpu-7");
    assert_string_equal(hbm_fleet_node_name(&n), "gpu-7");
    n.hostname_shared = true;
    assert_string_equal(hbm_fleet_node_name(&n), "10.0.0.7:9400");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pods_and_order),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_node_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
