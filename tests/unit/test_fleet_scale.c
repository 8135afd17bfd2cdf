/* The fleet view in linear time: answers for 4,096 nodes x 8 devices (32,768 series a
 * query, as Prometheus returns them: nodes interleaved) are parsed and built in under 2 s,
 * also under ASan; every lookup visits at most 3 index slots on average, whatever the size
 * (counted: a lookup that scans every node visits thousands), and 8 times the nodes cost
 * at most 8 x 4 the time (64 x when quadratic). Every device and process lands on its own
 * node. Times are the process's CPU time, the better of two runs: other work on a shared
 * machine, and the first touch of fresh pages, do not count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "hbm/fleet.h"
#include "hbm/util.h"

#define DEVS 8

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if ((size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        }
        t->cap = t->cap ? t->cap * 2 : 1 << 20;
        t->s = hbm_xrealloc(t->s, t->cap);
    }
}

/* The labels of query q's series beside instance and job, as the exporter writes them
 * (docs/metrics.md). */
static void labels_of(int q, int i, int d, char *buf, size_t n)
{
    char dev[160];
    snprintf(dev, sizeof dev, ",\"device\":\"%d\",\"chip\":\"0\",\"vendor\":\"nvidia\","
                              "\"bus_id\":\"00000000:%02X:00.0\"", d, 0x18 + d);
    if (q == HBM_FQ_UP)
        snprintf(buf, n, "%s", "");
    else if (q == HBM_FQ_SOURCE)
        snprintf(buf, n, ",\"backend\":\"nvml\",\"hostname\":\"gpu-%d\"", i);
    else if (q == HBM_FQ_FINDINGS)
        snprintf(buf, n, ",\"id\":\"orphan-holder\",\"severity\":\"warning\",\"device\":\"1\"");
    else if (q == HBM_FQ_PROC_MEM || q == HBM_FQ_PROC_LEAK)
        snprintf(buf, n, "%s,\"pid\":\"%d\",\"name\":\"VLLM::Worker\",\"namespace\":\"ml\","
                         "\"pod\":\"vllm-%d\",\"container\":\"vllm\"", dev, 1000 + d, i);
    else
        snprintf(buf, n, "%s,\"name\":\"NVIDIA H100 80GB HBM3\"%s", dev,
                 q == HBM_FQ_VERDICT ? ",\"verdict\":\"BUSY\"" : "");
}

/* The answer to query q for nodes x DEVS devices: device-major order, so one node's series
 * are far apart, as in Prometheus's answers. */
static void answer(text *t, int q, int nodes)
{
    t->n = 0;
    add(t, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[");
    int per_node = q <= HBM_FQ_SOURCE || q == HBM_FQ_FINDINGS ? 1 : DEVS;
    for (int d = 0; d < per_node; d++) {
        for (int i = 0; i < nodes; i++) {
            char more[320];
            labels_of(q, i, d, more, sizeof more);
            add(t, "%s{\"metric\":{\"__name__\":\"m\",\"instance\":\"10.%d.%d.%d:9464\","
                   "\"job\":\"hbmctl\"%s},\"value\":[1796228580.123,\"%d\"]}",
                d || i ? "," : "", i >> 16, (i >> 8) & 255, i & 255, more,
                q == HBM_FQ_UP ? 1 : (d + 1) << 20);
        }
    }
    add(t, "]}}");
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parses and builds the view of nodes x DEVS; returns the seconds it took (answers'
 * text written beforehand is not counted). */
static double build(int nodes, bool check)
{
    text t[HBM_FQ_COUNT];
    memset(t, 0, sizeof t);
    for (int q = 0; q < HBM_FQ_COUNT; q++)
        answer(&t[q], q, nodes);
    hbm_fleet f;
    memset(&f, 0, sizeof f);
    double t0 = cpu_now();
    for (int q = 0; q < HBM_FQ_COUNT; q++) {
        hbm_fleet_prom_vec v;
        hbm_err err;
        if (hbm_fleet_prom_parse(t[q].s, t[q].n, "scale", hbm_fleet_labels(q), &v, &err) <
            0)
            fail_msg("%s", err.msg);
        hbm_fleet_add(&f, q, &v);
        hbm_fleet_prom_vec_free(&v);
    }
    size_t lookups = f.lookups, probes = f.probes;
    hbm_fleet_finish(&f);
    double took = cpu_now() - t0;
    if (check) {
        printf("%d nodes: %zu lookups visited %zu slots\n", nodes, lookups, probes);
        assert_true(lookups >= (size_t)nodes * DEVS * 6); /* 6 device and process queries */
        assert_true(probes <= 3 * lookups);
        assert_int_equal(f.nnodes, nodes);
        for (size_t i = 0; i < f.nnodes; i++) {
            const hbm_fleet_node *n = &f.nodes[i];
            assert_int_equal(n->ndevs, DEVS);
            assert_int_equal(n->nfindings, 1);
            for (int d = 0; d < DEVS; d++) {
                assert_int_equal(n->devs[d].memory_used_bytes, (int64_t)(d + 1) << 20);
                assert_int_equal(n->devs[d].nprocs, 1);
                assert_int_equal(n->devs[d].procs[0].pid, 1000 + d);
                /* the pod of this node's process, not another node's */
                assert_string_equal(n->devs[d].procs[0].pod + 5, n->hostname + 4);
            }
        }
    }
    hbm_fleet_free(&f);
    for (int q = 0; q < HBM_FQ_COUNT; q++)
        free(t[q].s);
    return took;
}

static double best_of_3(int nodes)
{
    double best = 1e9;
    for (int i = 0; i < 3; i++) {
        double t = build(nodes, false);
        best = t < best ? t : best;
    }
    return best;
}

static void test_32768_series(void **state)
{
    (void)state;
    build(512, true);
    double took = build(4096, true), again = build(4096, false);
    took = again < took ? again : took;
    printf("4,096 nodes x %d devices (32,768 series a query): %.3f s of CPU\n", DEVS, took);
    assert_true(took < 2.0);
}

static void test_linear(void **state)
{
    (void)state;
    double small = best_of_3(512), large = best_of_3(4096);
    printf("512 nodes: %.4f s, 4,096 nodes: %.4f s, ratio %.1f (8 linear, 64 quadratic)\n",
           small, large, large / small);
    assert_true(large < 32 * small); /* 8 when linear; 64 when quadratic */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_32768_series),
        cmocka_unit_test(test_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
