/* The verdict rules of docs/verdicts.md, one at a time on observations built here: the
 * precedence, the idle baselines, the margin max(1 GiB, 3%), the baseline learned from
 * idle peers within 1.5 GiB, a dead pid against a pid outside hbmctl's view, the orphan
 * states of a live pid, utilisation, and what is judged when facts are missing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/verdict.h"

#define V_FREE HBM_VERDICT_FREE
#define V_UNACC HBM_VERDICT_UNACCOUNTED

/* An Ascend chip with a process table, healthy, idle utilisation. */
static hbm_device *chip(hbm_obs *obs, const char *name, int64_t total, int64_t used)
{
    hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
    d->index = (int64_t)obs->ndevs - 1;
    d->chip = 0;
    snprintf(d->name, sizeof d->name, "%s", name);
    d->memory_total_bytes = total;
    d->memory_used_bytes = used;
    d->utilization_ratio = 0.0;
    d->procs_known = true;
    return d;
}

static void listed(hbm_device *d, int64_t pid, int64_t bytes)
{
    hbm_dproc *p = hbm_device_add_proc(d);
    p->pid = pid;
    p->memory_bytes = bytes;
}

/* Host facts as a scan leaves them; procs must be added in ascending pid order (the
 * lookup is a binary search). */
static void host(hbm_obs *obs, bool sees_host_pids)
{
    obs->has_host = true;
    obs->host.sees_host_pids = sees_host_pids;
    if (!sees_host_pids)
        snprintf(obs->host.sees_host_pids_why, sizeof obs->host.sees_host_pids_why,
                 "PID namespace differs from init's");
}

static hbm_hproc *host_proc(hbm_obs *obs, int pid, int ppid, char state, const char *comm)
{
    hbm_host *h = &obs->host;
    h->procs = hbm_xrealloc(h->procs, (h->nprocs + 1) * sizeof *h->procs);
    hbm_hproc *hp = &h->procs[h->nprocs++];
    memset(hp, 0, sizeof *hp);
    hp->pid = pid;
    hp->ppid = ppid;
    hp->state = state;
    snprintf(hp->comm, sizeof hp->comm, "%s", comm);
    return hp;
}

static void judged(hbm_obs *obs, size_t i, hbm_verdict want, const char *reason_part)
{
    hbm_verdict_apply(obs);
    const hbm_device *d = &obs->devs[i];
    if (d->verdict != want)
        fail_msg("device %zu: %s, want %s (%s)", i, hbm_verdict_name(d->verdict),
                 hbm_verdict_name(want), d->reason);
    if (reason_part && !strstr(d->reason, reason_part))
        fail_msg("device %zu reason lacks \"%s\": %s", i, reason_part, d->reason);
}

/* Each rule is stacked on one chip and taken away in turn: the highest that applies wins. */
static void test_precedence(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host(&obs, true);
    host_proc(&obs, 100, 50, 'S', "python3");
    hbm_device *d = chip(&obs, "910B3", 64 * HBM_GIB, 40 * HBM_GIB);
    listed(d, 100, 20 * HBM_GIB);
    listed(d, 200, 10 * HBM_GIB); /* not on the host: gone */
    d->utilization_ratio = 0.5;
    d->healthy = false;
    snprintf(d->health, sizeof d->health, "Alarm");
    judged(&obs, 0, HBM_VERDICT_UNHEALTHY, "health is Alarm");
    d->healthy = true;
    judged(&obs, 0, HBM_VERDICT_ORPHANED, "pid 200 is listed by the driver but no longer exists");
    assert_int_equal(d->procs[0].state, HBM_PID_LIVE);
    assert_int_equal(d->procs[1].state, HBM_PID_GONE);
    d->nprocs = 1;
    judged(&obs, 0, HBM_VERDICT_BUSY, "1 process listed: python3 holds");
    d->nprocs = 0;
    judged(&obs, 0, V_UNACC, "memory left behind");
    d->memory_used_bytes = 4 * HBM_GIB;
    judged(&obs, 0, V_UNACC, "utilisation is 50%");
    d->utilization_ratio = 0.0;
    judged(&obs, 0, V_FREE, "no process;");
    hbm_obs_free(&obs);
}

/* The documented idle use per part, and by size for parts the table does not name. */
static void test_baselines(void **state)
{
    (void)state;
    const struct {
        const char *name;
        hbm_vendor vendor;
        int64_t total, want;
    } rows[] = {
        {"NVIDIA A40", HBM_VENDOR_NVIDIA, 48 * HBM_GIB, 600 * HBM_MIB},
        {"Tesla T4", HBM_VENDOR_NVIDIA, HBM_UNKNOWN, 600 * HBM_MIB},
        {"910B3", HBM_VENDOR_ASCEND, 64 * HBM_GIB, 4 * HBM_GIB},
        {"910B4", HBM_VENDOR_ASCEND, 32 * HBM_GIB, 3 * HBM_GIB},
        {"910_93", HBM_VENDOR_ASCEND, 64 * HBM_GIB, 4 * HBM_GIB},
        {"310P3", HBM_VENDOR_ASCEND, 44280 * HBM_MIB, 1536 * HBM_MIB},
        {"310", HBM_VENDOR_ASCEND, 8 * HBM_GIB, 640 * HBM_MIB},
        {"910ProB", HBM_VENDOR_ASCEND, 32 * HBM_GIB, 64 * HBM_MIB},
        {"910B", HBM_VENDOR_ASCEND, 32 * HBM_GIB, 64 * HBM_MIB},
        {"310P3vir02", HBM_VENDOR_ASCEND, 12 * HBM_GIB, 256 * HBM_MIB},
        {"310B1", HBM_VENDOR_ASCEND, 8 * HBM_GIB, HBM_UNKNOWN},
        {"NewPart", HBM_VENDOR_ASCEND, 16 * HBM_GIB, 16 * HBM_GIB / 10},
        {"NewPart", HBM_VENDOR_ASCEND, HBM_UNKNOWN, HBM_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t got = hbm_verdict_baseline(rows[i].name, rows[i].vendor, rows[i].total);
        if (got != rows[i].want)
            fail_msg("%s: baseline %lld, want %lld", rows[i].name, (long long)got,
                     (long long)rows[i].want);
    }
}

/* Memory above the baseline counts only past max(1 GiB, 3% of total), and strictly. Two
 * idle peers at the documented value hold the learned baseline there; a lone chip is judged
 * against the table, never against its own use. */
static void test_margin(void **state)
{
    (void)state;
    const struct {
        hbm_vendor vendor;
        const char *name;
        int64_t total, base, margin;
    } parts[] = {
        /* 64 GiB: 3% (1.92 GiB) is the margin, so 1.5 GiB over is still idle */
        {HBM_VENDOR_ASCEND, "910B3", 64 * HBM_GIB, 4 * HBM_GIB, 64 * HBM_GIB * 3 / 100},
        /* 16 GiB: 3% is 0.48 GiB, so the 1 GiB floor applies */
        {HBM_VENDOR_NVIDIA, "Tesla T4", 16 * HBM_GIB, 600 * HBM_MIB, HBM_GIB},
    };
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        const int64_t over[] = {HBM_GIB / 2, parts[k].margin, parts[k].margin + 1};
        for (size_t j = 0; j < 3; j++) {
            hbm_obs obs;
            hbm_obs_init(&obs);
            host(&obs, true);
            for (int i = 0; i < 3; i++) {
                hbm_device *d = hbm_obs_add_device(&obs, parts[k].vendor);
                snprintf(d->name, sizeof d->name, "%s", parts[k].name);
                d->procs_known = true;
                d->memory_total_bytes = parts[k].total;
                d->memory_used_bytes = parts[k].base + (i == 0 ? over[j] : 0);
            }
            hbm_verdict_apply(&obs);
            hbm_verdict want = j == 2 ? V_UNACC : V_FREE;
            if (obs.devs[0].verdict != want)
                fail_msg("%s %lld B over: %s, want %s (%s)", parts[k].name,
                         (long long)over[j], hbm_verdict_name(obs.devs[0].verdict),
                         hbm_verdict_name(want), obs.devs[0].reason);
            hbm_obs_free(&obs);
        }
    }
    /* alone, 1.2 GiB over the T4's 600 MiB: within 1.5 GiB of the table, past the margin */
    hbm_obs obs;
    hbm_obs_init(&obs);
    host(&obs, true);
    hbm_device *t4 = hbm_obs_add_device(&obs, HBM_VENDOR_NVIDIA);
    snprintf(t4->name, sizeof t4->name, "Tesla T4");
    t4->procs_known = true;
    t4->memory_total_bytes = 16 * HBM_GIB;
    t4->memory_used_bytes = 600 * HBM_MIB + 1229 * HBM_MIB;
    hbm_verdict_apply(&obs);
    assert_int_equal(obs.devs[0].verdict, V_UNACC);
    hbm_obs_free(&obs);
}

/* The baseline is the median of process-free chips of the same model and size, counting
 * only those within 1.5 GiB of the documented value. Device 0 at 7 GiB is 3 GiB over the
 * table (4 GiB) but 1.6 GiB over 5.4 GiB, inside the 1.92 GiB margin. */
static void test_refined_baseline(void **state)
{
    (void)state;
    const int64_t total = 64 * HBM_GIB, test_used = 7 * HBM_GIB;
    const struct {
        const char *peer_name;
        int64_t peer_total, peer_used;
        bool peer_busy;
        hbm_verdict want;
    } cases[] = {
        {"910B3", total, 5 * HBM_GIB + 410 * HBM_MIB, false, V_FREE},
        {"910B3", total, 4 * HBM_GIB + 1536 * HBM_MIB, false, V_FREE},     /* at 1.5 GiB */
        {"910B3", total, 4 * HBM_GIB + 1536 * HBM_MIB + 1, false, V_UNACC}, /* past it */
        {"910B3", total, 4 * HBM_GIB - 1536 * HBM_MIB - 1, false, V_UNACC},
        {"910B4", total, 5 * HBM_GIB + 410 * HBM_MIB, false, V_UNACC}, /* another model */
        {"910B3", 32 * HBM_GIB, 5 * HBM_GIB + 410 * HBM_MIB, false, V_UNACC}, /* size */
        {"910B3", total, 5 * HBM_GIB + 410 * HBM_MIB, true, V_UNACC},         /* busy */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        hbm_obs obs;
        hbm_obs_init(&obs);
        host(&obs, true);
        host_proc(&obs, 100, 50, 'S', "python3");
        chip(&obs, "910B3", total, test_used);
        for (int i = 0; i < 3; i++) {
            hbm_device *p = chip(&obs, cases[k].peer_name, cases[k].peer_total,
                                 cases[k].peer_used);
            if (cases[k].peer_busy)
                listed(p, 100, HBM_MIB);
        }
        hbm_verdict_apply(&obs);
        if (obs.devs[0].verdict != cases[k].want)
            fail_msg("case %zu: %s, want %s (%s)", k, hbm_verdict_name(obs.devs[0].verdict),
                     hbm_verdict_name(cases[k].want), obs.devs[0].reason);
        hbm_obs_free(&obs);
    }
    /* Peers that all hold leftovers (2 GiB over the table) are not learned as idle: they
     * are UNACCOUNTED themselves, and so is the chip beside them. */
    hbm_obs obs;
    hbm_obs_init(&obs);
    host(&obs, true);
    for (int i = 0; i < 4; i++)
        chip(&obs, "910B3", total, 6 * HBM_GIB + HBM_MIB);
    hbm_verdict_apply(&obs);
    for (size_t i = 0; i < obs.ndevs; i++)
        assert_int_equal(obs.devs[i].verdict, V_UNACC);
    hbm_obs_free(&obs);
    /* The learned value is the one the reason names. */
    hbm_obs_init(&obs);
    host(&obs, true);
    chip(&obs, "910B3", total, 9 * HBM_GIB);
    chip(&obs, "910B3", total, 5 * HBM_GIB);
    chip(&obs, "910B3", total, 5 * HBM_GIB);
    chip(&obs, "910B3", total, 5 * HBM_GIB + 512 * HBM_MIB);
    judged(&obs, 0, V_UNACC, "4.00 GiB above the 5.00 GiB idle baseline");
    hbm_obs_free(&obs);
}

/* A driver-listed pid missing from /proc: dead when hbmctl sees every host pid, outside its
 * view when it runs in another PID namespace; with no host facts it is taken as listed. */
static void test_dead_or_unseen(void **state)
{
    (void)state;
    for (int k = 0; k < 4; k++) {
        hbm_obs obs;
        hbm_obs_init(&obs);
        if (k < 3)
            host(&obs, k == 0);
        hbm_device *d = chip(&obs, "310P3", 44280 * HBM_MIB, 27303 * HBM_MIB);
        listed(d, 4242, 26 * HBM_GIB);
        if (k == 2)
            d->memory_used_bytes = 1536 * HBM_MIB;
        hbm_verdict_apply(&obs);
        const hbm_pid_state want_state[] = {HBM_PID_GONE, HBM_PID_UNSEEN, HBM_PID_UNSEEN,
                                            HBM_PID_UNCHECKED};
        assert_int_equal(d->procs[0].state, want_state[k]);
        switch (k) {
        case 0:
            judged(&obs, 0, HBM_VERDICT_ORPHANED, "pid 4242 is listed by the driver but no "
                                                  "longer exists");
            break;
        case 1:
            judged(&obs, 0, V_UNACC, "pid 4242 is not in this PID namespace (PID namespace "
                                     "differs from init's): a process outside hbmctl's view");
            break;
        case 2:
            judged(&obs, 0, V_UNACC, "memory 1.50 GiB is at the idle baseline");
            break;
        default:
            judged(&obs, 0, HBM_VERDICT_BUSY, "1 process listed holds 26.00 GiB");
        }
        hbm_obs_free(&obs);
    }
}

/* A live pid is still an orphan when it is a zombie, stuck in D, outlived its container
 * under init, or is a server's worker re-parented to init on the host. */
static void test_orphan_states(void **state)
{
    (void)state;
    const struct {
        char st;
        int ppid, live_threads;
        bool cgroup_gone, sees_host;
        const char *comm;
        hbm_verdict want;
        const char *why;
    } cases[] = {
        {'Z', 77, 0, false, true, "python3", HBM_VERDICT_ORPHANED, "is a zombie"},
        {'Z', 77, 3, false, true, "python3", HBM_VERDICT_BUSY, "1 process listed"},
        {'D', 77, 0, false, true, "python3", HBM_VERDICT_ORPHANED, "uninterruptible"},
        {'S', 1, 0, true, true, "python3", HBM_VERDICT_ORPHANED, "outlived its container"},
        {'S', 77, 0, true, true, "python3", HBM_VERDICT_BUSY, NULL},
        {'S', 1, 0, false, true, "VLLM::EngineCor", HBM_VERDICT_ORPHANED, "server's worker"},
        {'S', 1, 0, false, false, "VLLM::EngineCor", HBM_VERDICT_BUSY, NULL},
        {'S', 1, 0, false, true, "python3", HBM_VERDICT_BUSY, NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        hbm_obs obs;
        hbm_obs_init(&obs);
        host(&obs, cases[k].sees_host);
        hbm_hproc *hp = host_proc(&obs, 300, cases[k].ppid, cases[k].st, cases[k].comm);
        hp->zombie_live_threads = cases[k].live_threads;
        hp->cgroup_gone = cases[k].cgroup_gone;
        hbm_device *d = chip(&obs, "910B3", 64 * HBM_GIB, 30 * HBM_GIB);
        listed(d, 300, 26 * HBM_GIB);
        hbm_verdict_apply(&obs);
        if (d->verdict != cases[k].want ||
            (cases[k].why && !strstr(d->reason, cases[k].why)))
            fail_msg("case %zu: %s (%s), want %s with \"%s\"", k, hbm_verdict_name(d->verdict),
                     d->reason, hbm_verdict_name(cases[k].want),
                     cases[k].why ? cases[k].why : "");
        hbm_obs_free(&obs);
    }
}

/* In a running container, a server's worker whose parent is the container's init is left by
 * its dead server only when that init is a shell or a minimal init: a server that is PID 1
 * itself is its workers' parent, and a parent that is no container's init is the server. */
static void test_engine_left_in_container(void **state)
{
    (void)state;
    const struct {
        const char *comm, *ctr_state, *parent;
        bool parent_init;
        hbm_verdict want;
    } cases[] = {
        {"VLLM::EngineCor", "running", "bash", true, HBM_VERDICT_ORPHANED},
        {"VLLM::EngineCor", "running", "tini", true, HBM_VERDICT_ORPHANED},
        {"VLLM::EngineCor", "running", "python3", true, HBM_VERDICT_BUSY},
        {"VLLM::EngineCor", "running", "bash", false, HBM_VERDICT_BUSY},
        {"VLLM::EngineCor", "paused", "bash", true, HBM_VERDICT_BUSY},
        {"python3", "running", "bash", true, HBM_VERDICT_BUSY},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        hbm_obs obs;
        hbm_obs_init(&obs);
        host(&obs, true);
        hbm_hproc *hp = host_proc(&obs, 300, 290, 'S', cases[k].comm);
        snprintf(hp->container_id, sizeof hp->container_id, "%064d", 7);
        snprintf(hp->container_name, sizeof hp->container_name, "vllm-left");
        snprintf(hp->container_state, sizeof hp->container_state, "%s", cases[k].ctr_state);
        snprintf(hp->parent_comm, sizeof hp->parent_comm, "%s", cases[k].parent);
        hp->parent_container_init = cases[k].parent_init;
        hbm_device *d = chip(&obs, "910B3", 64 * HBM_GIB, 30 * HBM_GIB);
        listed(d, 300, 26 * HBM_GIB);
        hbm_verdict_apply(&obs);
        if (d->verdict != cases[k].want ||
            (cases[k].want == HBM_VERDICT_ORPHANED &&
             !strstr(d->reason, "init of running container vllm-left (pid 290, ")))
            fail_msg("case %zu: %s (%s), want %s", k, hbm_verdict_name(d->verdict), d->reason,
                     hbm_verdict_name(cases[k].want));
        hbm_obs_free(&obs);
    }
}

/* A process listed with a small entry here and most of its memory on another chip is named
 * as a context entry of that chip. */
static void test_context_entry(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host(&obs, true);
    host_proc(&obs, 500, 50, 'S', "python3");
    chip(&obs, "910_93", 64 * HBM_GIB, 4 * HBM_GIB + 116 * HBM_MIB);
    chip(&obs, "910_93", 64 * HBM_GIB, 40 * HBM_GIB)->chip = 1;
    /* pointers into devs are taken after the last add, which may move them */
    listed(&obs.devs[0], 500, 116 * HBM_MIB);
    listed(&obs.devs[1], 500, 36 * HBM_GIB);
    judged(&obs, 0, HBM_VERDICT_BUSY, "a context entry: it works on NPU 1 chip 1");
    judged(&obs, 1, HBM_VERDICT_BUSY, "1 process listed: python3 holds 36.00 GiB");
    hbm_obs_free(&obs);
}

/* No process and idle memory, but the chip computes: something runs unattributed. */
static void test_utilisation(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host(&obs, true);
    hbm_device *d = chip(&obs, "910B3", 64 * HBM_GIB, 4 * HBM_GIB);
    d->utilization_ratio = 0.10;
    judged(&obs, 0, V_UNACC, "utilisation is 10%");
    d->utilization_ratio = 0.09;
    judged(&obs, 0, V_FREE, NULL);
    d->utilization_ratio = NAN;
    judged(&obs, 0, V_FREE, NULL);
    hbm_obs_free(&obs);
}

/* What is judged when a fact is missing: the process table, memory, host facts, or the
 * baseline itself. */
static void test_missing_facts(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    hbm_device *d = chip(&obs, "910B3", 64 * HBM_GIB, HBM_UNKNOWN);
    judged(&obs, 0, V_FREE, "memory use unknown");
    d->procs_known = false;
    judged(&obs, 0, V_UNACC, "neither processes nor memory");
    d->memory_used_bytes = 4 * HBM_GIB;
    judged(&obs, 0, V_FREE, "judged on memory alone");
    d->memory_used_bytes = 30 * HBM_GIB;
    judged(&obs, 0, V_UNACC, "no process table for this chip");
    d->procs_known = true;
    judged(&obs, 0, V_UNACC, "from npu-smi text alone");
    host(&obs, false);
    judged(&obs, 0, V_UNACC, "does not see the host's pids (PID namespace differs");
    snprintf(d->name, sizeof d->name, "310B1");
    judged(&obs, 0, V_FREE, "no idle baseline");
    hbm_obs_free(&obs);
}

/* A verdict's name read back: each of the five, nothing else (the names are case-sensitive,
 * as they stand in metrics labels and JSON). */
static void test_parse(void **state)
{
    (void)state;
    for (hbm_verdict v = HBM_VERDICT_FREE; v <= HBM_VERDICT_UNHEALTHY; v++)
        assert_int_equal(hbm_verdict_parse(hbm_verdict_name(v)), v);
    assert_int_equal(hbm_verdict_parse("busy"), HBM_VERDICT_NONE);
    assert_int_equal(hbm_verdict_parse("UNKNOWN"), HBM_VERDICT_NONE);
    assert_int_equal(hbm_verdict_parse(""), HBM_VERDICT_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),      cmocka_unit_test(test_baselines),
        cmocka_unit_test(test_margin),          cmocka_unit_test(test_refined_baseline),
        cmocka_unit_test(test_dead_or_unseen),  cmocka_unit_test(test_orphan_states),
        cmocka_unit_test(test_engine_left_in_container),
        cmocka_unit_test(test_context_entry),   cmocka_unit_test(test_utilisation),
        cmocka_unit_test(test_missing_facts),     cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
