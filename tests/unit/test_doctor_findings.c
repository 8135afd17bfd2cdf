/* The findings engine on built observations: one test per finding, and the cases that must
 * not produce one (a live creator, an attached segment, a process hbmctl cannot judge). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/doctor.h"
#include "hbm/verdict.h"
#include "hbm/util.h"

static hbm_device *npu(hbm_obs *obs, int idx, int64_t used_gib)
{
    hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
    d->index = idx;
    d->chip = 0;
    d->logic_id = idx;
    d->healthy = true;
    snprintf(d->health, sizeof d->health, "OK");
    snprintf(d->name, sizeof d->name, "910B3");
    d->memory_total_bytes = 64 * HBM_GIB;
    d->memory_used_bytes = used_gib * HBM_GIB;
    d->procs_known = true;
    d->verdict = HBM_VERDICT_FREE;
    return d;
}

static void host_on(hbm_obs *obs)
{
    obs->has_host = true;
    obs->host.sees_host_pids = true;
    obs->host.clk_tck = 100;
    obs->host.boot_time = 1000;
    obs->captured_at = 1000 + 3600;
    obs->host.devshm_total_bytes = HBM_UNKNOWN;
    obs->host.devshm_used_bytes = HBM_UNKNOWN;
}

static hbm_hproc *hproc(hbm_obs *obs, int pid, int ppid, char state, const char *comm,
                        const char *cmdline)
{
    hbm_host *h = &obs->host;
    h->procs = hbm_xrealloc(h->procs, (h->nprocs + 1) * sizeof *h->procs);
    hbm_hproc *p = &h->procs[h->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->ppid = ppid;
    p->state = state;
    p->starttime = 100 * 60; /* a minute after boot */
    snprintf(p->comm, sizeof p->comm, "%s", comm);
    p->cmdline = hbm_xstrdup(cmdline);
    return p;
}

static hbm_dproc *dproc(hbm_device *d, int pid, int64_t gib, hbm_pid_state st)
{
    hbm_dproc *p = hbm_device_add_proc(d);
    p->pid = pid;
    p->memory_bytes = gib * HBM_GIB;
    p->state = st;
    d->verdict = st == HBM_PID_LIVE ? HBM_VERDICT_BUSY : HBM_VERDICT_ORPHANED;
    return p;
}

/* The nth finding with this id; fails the test when there is none. */
static const hbm_finding *find(const hbm_findings *f, const char *id, int nth)
{
    static const hbm_finding none;
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->items[i].id, id) == 0 && nth-- == 0)
            return &f->items[i];
    fail_msg("no finding %s", id);
    return &none;
}

static size_t count(const hbm_findings *f, const char *id)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += strcmp(f->items[i].id, id) == 0;
    return n;
}

static void test_holders(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    hbm_device *d0 = npu(&obs, 0, 30);
    dproc(d0, 4001, 26, HBM_PID_ABANDONED);
    hproc(&obs, 4001, 1, 'S', "python3", "python3 -m vllm.entrypoints")->cgroup_gone = true;
    hbm_device *d1 = npu(&obs, 1, 20);
    dproc(d1, 4002, 16, HBM_PID_LIVE);
    hproc(&obs, 4002, 1, 'S', "VLLM::EngineCor", "VLLM::EngineCore");
    hbm_device *d2 = npu(&obs, 2, 20);
    dproc(d2, 4003, 16, HBM_PID_LIVE);
    hproc(&obs, 4003, 1, 'S', "python3", "python3 serve.py"); /* a service under init */
    hbm_device *d3 = npu(&obs, 3, 5);
    dproc(d3, 4004, 1, HBM_PID_ZOMBIE);
    hproc(&obs, 4004, 4100, 'Z', "vllmEngineCore", "");
    hproc(&obs, 4100, 1, 'S', "bash", "/bin/bash");
    hbm_device *d4 = npu(&obs, 4, 5);
    dproc(d4, 4005, 1, HBM_PID_STUCK);
    snprintf(hproc(&obs, 4005, 1, 'D', "VLLM::Worker_TP", "")->wchan, 64, "uvm_spin_loop");
    hbm_device *d5 = npu(&obs, 5, 30);
    dproc(d5, 4006, 26, HBM_PID_GONE);

    /* The driver/host join decides each process's state, as in a real observation: the
     * re-parented EngineCore (4002) is judged abandoned there, not here. */
    hbm_verdict_apply(&obs);
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "orphan-holder"), 2);
    const hbm_finding *o = find(&f, "orphan-holder", 0);
    assert_int_equal(o->severity, HBM_SEV_CRITICAL);
    assert_int_equal(o->device, 0);
    assert_int_equal(o->action.kind, HBM_ACT_KILL);
    assert_int_equal(o->action.pid, 4001);
    assert_int_equal(o->action.starttime, 6000);
    json_t *ev = json_object_get(o->evidence, "process");
    assert_int_equal(json_integer_value(json_object_get(ev, "ppid")), 1);
    assert_true(fabs(json_real_value(json_object_get(ev, "age_seconds")) - 3540) < 1e-6);
    assert_int_equal(find(&f, "orphan-holder", 1)->action.pid, 4002);

    const hbm_finding *z = find(&f, "zombie-holder", 0);
    assert_non_null(z);
    assert_int_equal(z->action.kind, HBM_ACT_NONE);
    assert_non_null(strstr(z->remedy, "pid 4100 (bash, `/bin/bash`) has not reaped it"));
    assert_non_null(strstr(z->remedy, "End or restart pid 4100"));
    assert_non_null(strstr(z->remedy, "npu-smi set -t reset -i 3 -c 0"));
    json_t *zp = json_object_get(z->evidence, "parent");
    assert_int_equal(json_integer_value(json_object_get(zp, "pid")), 4100);
    assert_string_equal(json_string_value(json_object_get(zp, "name")), "bash");
    const hbm_finding *s = find(&f, "stuck-holder", 0);
    assert_non_null(strstr(s->summary, "D state at uvm_spin_loop"));
    assert_int_equal(s->action.kind, HBM_ACT_NONE);
    const hbm_finding *g = find(&f, "gone-holder", 0);
    assert_non_null(strstr(g->remedy, "npu-smi set -t reset -i 5 -c 0"));
    /* A server under init that is nobody's worker is not an orphan. */
    for (size_t i = 0; i < f.n; i++)
        assert_int_not_equal(f.items[i].device, 2);
    /* Sorted: every critical first. */
    for (size_t i = 1; i < f.n; i++)
        assert_true(f.items[i - 1].severity >= f.items[i].severity);
    char v[512];
    hbm_findings_verdict(&f, v, sizeof v);
    assert_non_null(strstr(v, "5 problems: 5 critical (gone-holder, orphan-holder"));
    json_t *j = hbm_findings_to_json(&f);
    json_t *first = json_array_get(json_object_get(j, "findings"), 0);
    const char *keys[] = {"id", "severity", "summary", "evidence", "remedy", "action"};
    for (size_t k = 0; k < 6; k++)
        assert_non_null(json_object_get(first, keys[k]));
    json_decref(j);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

/* After `docker rm -f`: npu-smi's Hugepages-Usage at 100% on a 310P is the card's memory
 * held by the leftover process; the remedy is ending it, not ipcrm. */
/* The zombie's parent as the observation knows it: not recorded, pid 1, a long command line
 * (the remedy stays whole, with the reset command at its end). */
static void test_zombie_parents(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    dproc(npu(&obs, 0, 5), 5001, 1, HBM_PID_ZOMBIE);
    hproc(&obs, 5001, 5100, 'Z', "python3", "");
    dproc(npu(&obs, 1, 5), 5002, 1, HBM_PID_ZOMBIE);
    hproc(&obs, 5002, 1, 'Z', "python3", "");
    hproc(&obs, 1, 0, 'S', "sleep", "sleep infinity");
    dproc(npu(&obs, 2, 5), 5003, 1, HBM_PID_ZOMBIE);
    hproc(&obs, 5003, 5200, 'Z', "python3", "");
    char longcmd[400];
    memset(longcmd, 'x', sizeof longcmd - 1);
    longcmd[sizeof longcmd - 1] = '\0';
    hproc(&obs, 5200, 1, 'S', "python3.11-with-a-long-name", longcmd);
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "zombie-holder"), 3);
    for (int i = 0; i < 3; i++) {
        const hbm_finding *z = find(&f, "zombie-holder", i);
        char reset[64];
        snprintf(reset, sizeof reset, "npu-smi set -t reset -i %d -c 0", (int)z->device);
        assert_non_null(strstr(z->remedy, reset));
        assert_true(strlen(z->remedy) + 1 < sizeof z->remedy);
        json_t *par = json_object_get(z->evidence, "parent");
        if (z->device == 0) {
            assert_non_null(strstr(z->remedy, "parent pid 5100 has not reaped it"));
            assert_true(json_is_null(par));
        } else if (z->device == 1) {
            assert_non_null(strstr(z->remedy, "parent is pid 1 (sleep)"));
            assert_int_equal(json_integer_value(json_object_get(par, "pid")), 1);
        } else {
            assert_non_null(strstr(z->remedy, "pid 5200 (python3.11-with-a-long-name, `xxx"));
            assert_non_null(strstr(z->remedy, "xxx...`) has not reaped it"));
        }
    }
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

static void test_device_hugepages(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    hbm_device *d = npu(&obs, 6, 26);
    snprintf(d->name, sizeof d->name, "310P3");
    d->hugepages_used = d->hugepages_total = 13312;
    dproc(d, 2871044, 26, HBM_PID_ABANDONED);
    hproc(&obs, 2871044, 1, 'S', "VLLM::EngineCor", "vllm serve")->cgroup_gone = true;
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    const hbm_finding *h = find(&f, "device-hugepages-full", 0);
    assert_non_null(h);
    assert_int_equal(h->severity, HBM_SEV_WARNING);
    assert_non_null(strstr(h->summary, "not host hugepages"));
    assert_non_null(strstr(h->remedy, "Only ending the process"));
    assert_non_null(strstr(h->remedy, "0x474f4c46"));
    assert_int_equal(h->action.kind, HBM_ACT_NONE);
    assert_non_null(find(&f, "orphan-holder", 0));
    assert_int_equal(count(&f, "hugepages-exhausted"), 0); /* host pool untouched */
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

static void test_unaccounted_and_reset(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    hbm_device *d = npu(&obs, 2, 30);
    d->verdict = HBM_VERDICT_UNACCOUNTED;
    hbm_device *sick = npu(&obs, 3, 3);
    sick->healthy = false;
    snprintf(sick->health, sizeof sick->health, "Critical");
    hbm_device *gpu = hbm_obs_add_device(&obs, HBM_VENDOR_NVIDIA);
    gpu->index = 1;
    gpu->chip = 0;
    gpu->healthy = false;
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    const hbm_finding *u = find(&f, "unaccounted-memory", 0);
    assert_non_null(u);
    assert_true(json_is_true(json_object_get(u->evidence, "sees_host_pids")));
    assert_int_equal(count(&f, "device-needs-reset"), 3);
    bool npu_cmd = false, gpu_cmd = false, checks = false;
    for (size_t i = 0; i < f.n; i++) {
        npu_cmd |= strstr(f.items[i].remedy, "npu-smi set -t reset -i 3 -c 0") != NULL;
        gpu_cmd |= strstr(f.items[i].remedy, "nvidia-smi --gpu-reset -i 1") != NULL;
        checks |= json_object_get(f.items[i].evidence, "checks_passed") != NULL;
    }
    assert_true(npu_cmd && gpu_cmd && checks);
    hbm_findings_free(&f);

    /* Inside a container the same memory gets a different remedy and no reset. */
    obs.host.sees_host_pids = false;
    snprintf(obs.host.sees_host_pids_why, sizeof obs.host.sees_host_pids_why,
             "own PID namespace");
    hbm_doctor_findings(&obs, NULL, &f);
    u = find(&f, "unaccounted-memory", 0);
    assert_non_null(strstr(u->remedy, "cannot see the host's pids here (own PID namespace)"));
    assert_int_equal(count(&f, "device-needs-reset"), 2); /* only the unhealthy ones */
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

static void add_seg(hbm_obs *obs, int shmid, int64_t key, uint64_t nattch, int cpid, bool calive,
                    int lpid, bool lalive)
{
    hbm_host *h = &obs->host;
    h->sysv = hbm_xrealloc(h->sysv, (h->nsysv + 1) * sizeof *h->sysv);
    hbm_sysv_seg *s = &h->sysv[h->nsysv++];
    memset(s, 0, sizeof *s);
    s->shmid = shmid;
    s->key = key;
    s->size = 4096;
    s->nattch = nattch;
    s->cpid = cpid;
    s->cpid_alive = calive;
    s->lpid = lpid;
    s->lpid_alive = lalive;
}

static void test_shared_memory(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    add_seg(&obs, 1, 0x474f4c46, 0, 1203, true, 1500, false); /* slogd alive: normal */
    add_seg(&obs, 2, 0, 0, 900, false, 901, false);           /* stale */
    add_seg(&obs, 3, 0, 1, 900, false, 902, true);            /* attached */
    add_seg(&obs, 4, 0, 0, 0, false, 0, false);               /* creator not visible */
    add_seg(&obs, 5, 0x474f4c46, 0, 800, false, 0, false);    /* slogd died: stale */
    hbm_host *h = &obs.host;
    h->posix = hbm_xcalloc(2, sizeof *h->posix);
    h->nposix = 2;
    h->posix[0].path = hbm_xstrdup("/dev/shm/sem.hcclShareMem0");
    h->posix[1].path = hbm_xstrdup("/dev/shm/hcclShareMem1");
    h->posix[1].holders = hbm_xcalloc(1, sizeof(int));
    h->posix[1].holders[0] = 77;
    h->posix[1].nholders = 1;
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "stale-sysv-shm"), 2);
    assert_int_equal(find(&f, "stale-sysv-shm", 0)->action.kind, HBM_ACT_SYSV_RMID);
    int a = find(&f, "stale-sysv-shm", 0)->action.shmid, b = find(&f, "stale-sysv-shm", 1)->action.shmid;
    assert_true((a == 2 && b == 5) || (a == 5 && b == 2));
    assert_int_equal(count(&f, "stale-posix-shm"), 1);
    const hbm_finding *p = find(&f, "stale-posix-shm", 0);
    assert_string_equal(p->action.path, "/dev/shm/sem.hcclShareMem0");
    assert_int_equal(p->action.kind, HBM_ACT_SHM_UNLINK);
    hbm_findings_free(&f);
    /* Without the host's pids nothing about liveness can be told: no finding, no action. */
    obs.host.sees_host_pids = false;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "stale-sysv-shm") + count(&f, "stale-posix-shm"), 0);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

static void test_host_memory(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    hbm_host *h = &obs.host;
    h->huge = hbm_xcalloc(3, sizeof *h->huge);
    h->nhuge = 3;
    h->huge[0] = (hbm_hugepages){.node = -1, .page_size_bytes = 2 * HBM_MIB, .total = 1024,
                                 .free = 10, .rsvd = 10, .surp = 0};
    h->huge[1] = (hbm_hugepages){.node = 0, .page_size_bytes = 2 * HBM_MIB, .total = 512,
                                 .free = 10, .rsvd = 0, .surp = 0};
    h->huge[2] = (hbm_hugepages){.node = 1, .page_size_bytes = 2 * HBM_MIB, .total = 512,
                                 .free = 0, .rsvd = 0, .surp = 0};
    snprintf(h->thp, sizeof h->thp, "always");
    h->devshm_total_bytes = 100 * HBM_MIB;
    h->devshm_used_bytes = 95 * HBM_MIB;
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "hugepages-exhausted"), 2);
    bool node1 = false, system = false;
    for (int i = 0; i < 2; i++) {
        node1 |= strstr(find(&f, "hugepages-exhausted", i)->summary, "NUMA node 1") != NULL;
        system |= strstr(find(&f, "hugepages-exhausted", i)->summary, "system pool") != NULL;
    }
    assert_true(node1 && system);
    assert_int_equal(find(&f, "thp-always", 0)->severity, HBM_SEV_INFO);
    assert_int_equal(find(&f, "devshm-nearly-full", 0)->severity, HBM_SEV_WARNING);
    hbm_findings_free(&f);
    snprintf(h->thp, sizeof h->thp, "madvise");
    h->devshm_used_bytes = 99 * HBM_MIB;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "thp-always"), 0);
    assert_int_equal(find(&f, "devshm-nearly-full", 0)->severity, HBM_SEV_CRITICAL);
    hbm_findings_free(&f);
    h->devshm_used_bytes = 50 * HBM_MIB;
    hbm_doctor_opts o = {.devshm_full_ratio = 0.4};
    hbm_doctor_findings(&obs, &o, &f);
    assert_int_equal(count(&f, "devshm-nearly-full"), 1);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

static void listen_on(hbm_obs *obs, int port, int pid)
{
    hbm_host *h = &obs->host;
    h->listeners = hbm_xrealloc(h->listeners, (h->nlisteners + 1) * sizeof *h->listeners);
    hbm_listener *l = &h->listeners[h->nlisteners++];
    memset(l, 0, sizeof *l);
    snprintf(l->addr, sizeof l->addr, "0.0.0.0");
    l->port = port;
    l->pid = pid;
}

static void test_servers(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    for (int i = 0; i < 4; i++)
        npu(&obs, i, 3);
    dproc(&obs.devs[1], 6000, 20, HBM_PID_LIVE); /* another service on device 1 */
    hproc(&obs, 6000, 1, 'S', "mindie", "mindieservice_daemon");
    dproc(&obs.devs[0], 5001, 20, HBM_PID_LIVE); /* the server's own worker */
    hbm_hproc *s = hproc(&obs, 5000, 1, 'S', "vllm",
                         "/usr/bin/python3 /usr/bin/vllm serve /m --tensor-parallel-size 4 "
                         "--port 8000");
    s->visible_devices = hbm_xstrdup("0,1,9");
    hproc(&obs, 5001, 5000, 'S', "VLLM::EngineCor", "VLLM::EngineCore")->visible_devices =
        hbm_xstrdup("0,1,9");
    hbm_hproc *t = hproc(&obs, 5100, 1, 'S', "vllm", "vllm serve /m2 --port=9000 -tp 1");
    t->visible_devices = hbm_xstrdup("2,3");
    listen_on(&obs, 9000, 6000);
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "visible-device-missing"), 1);
    assert_int_equal(find(&f, "visible-device-missing", 0)->device, 9);
    assert_int_equal(count(&f, "visible-device-busy"), 1);
    const hbm_finding *b = find(&f, "visible-device-busy", 0);
    assert_int_equal(b->device, 1);
    assert_int_equal(json_integer_value(json_object_get(b->evidence, "other_pid")), 6000);
    assert_int_equal(count(&f, "visible-devices-tp-mismatch"), 2);
    const hbm_finding *m = find(&f, "visible-devices-tp-mismatch", 0);
    assert_int_equal(m->severity, HBM_SEV_WARNING); /* 3 devices for TP 4 */
    assert_int_equal(find(&f, "visible-devices-tp-mismatch", 1)->severity, HBM_SEV_INFO);
    assert_int_equal(count(&f, "port-not-listening"), 1);
    assert_int_equal(json_integer_value(json_object_get(find(&f, "port-not-listening", 0)->evidence,
                                                        "port")), 8000);
    assert_int_equal(count(&f, "port-held-by-other"), 1);
    hbm_findings_free(&f);
    /* Once the server's own child listens, the port finding goes away. */
    listen_on(&obs, 8000, 5001);
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "port-not-listening"), 0);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

/* A vLLM worker outliving its API server inherited `--port` in its command line: it is
 * not the server, and orphan-holder already covers it; a real server still gets one. */
static void test_orphaned_worker_port(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    npu(&obs, 0, 30);
    npu(&obs, 1, 30);
    dproc(&obs.devs[0], 7001, 26, HBM_PID_ABANDONED);
    hproc(&obs, 7001, 1, 'S', "VLLM::EngineCor",
          "/usr/bin/python3 /usr/bin/vllm serve /m --port 8000");
    /* Its container is gone and init adopted it: abandoned, though no child by its title. */
    dproc(&obs.devs[1], 7002, 26, HBM_PID_ABANDONED);
    hproc(&obs, 7002, 1, 'S', "python3",
          "python3 -m vllm.entrypoints.openai.api_server --port 8001");
    /* A multiprocessing child of a server that no longer exists, holding no device. */
    hproc(&obs, 7003, 1, 'S', "python3",
          "python3 -c from multiprocessing.spawn import spawn_main; spawn_main() "
          "--multiprocessing-fork vllm --port 8002");
    /* A live server started by init that does not listen: still reported. */
    hproc(&obs, 7100, 1, 'S', "vllm", "vllm serve /m2 --port 8003");
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "orphan-holder"), 2);
    assert_int_equal(count(&f, "port-not-listening"), 1);
    assert_int_equal(json_integer_value(json_object_get(find(&f, "port-not-listening", 0)->evidence,
                                                        "port")), 8003);
    assert_int_equal(count(&f, "port-held-by-other"), 0);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

/* Without a device source nothing is known about devices: a server's visible devices are
 * not "missing"; what the host alone shows is still judged. */
static void test_no_device_source(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    snprintf(obs.backend, sizeof obs.backend, "none");
    snprintf(obs.backend_why, sizeof obs.backend_why, "no accelerator backend found");
    hbm_hproc *s = hproc(&obs, 5000, 1, 'S', "vllm", "vllm serve /m -tp 4 --port 8000");
    s->visible_devices = hbm_xstrdup("0,1");
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "visible-device-missing"), 0);
    assert_int_equal(count(&f, "visible-devices-tp-mismatch"), 1);
    assert_int_equal(count(&f, "port-not-listening"), 1);
    hbm_findings_free(&f);
    /* The same server on a host whose source lists no device: the ids are wrong. */
    obs.backend_why[0] = '\0';
    snprintf(obs.backend, sizeof obs.backend, "nvml");
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(count(&f, "visible-device-missing"), 2);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

static void test_clean_host(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    npu(&obs, 0, 3);
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    assert_int_equal(f.n, 0);
    char v[128];
    hbm_findings_verdict(&f, v, sizeof v);
    assert_string_equal(v, "no problems");
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

/* Every value of the rule enum has its registry entry filled in (a designated initializer
 * left out would leave a hole of NULLs the length check cannot see), ids unique. */
static void test_registry_complete(void **state)
{
    (void)state;
    size_t n = hbm_doctor_nrules();
    assert_true(n >= 19);
    for (size_t i = 0; i < n; i++) {
        const hbm_doctor_rule *r = hbm_doctor_rule_at(i);
        assert_non_null(r->id);
        assert_non_null(r->severity);
        assert_non_null(r->when);
        assert_non_null(r->evidence);
        assert_non_null(r->remedy);
        assert_non_null(r->clean);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(hbm_doctor_rule_at(k)->id, r->id);
    }
    assert_null(hbm_doctor_rule_at(n));
}

/* The baseline doctor quotes is the one the verdict used: three idle peers sit 1 GiB above
 * the table's value, so the verdict learns theirs, and the finding says so (not the table's). */
static void test_refined_baseline(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    host_on(&obs);
    int64_t table = hbm_verdict_baseline("910B3", HBM_VENDOR_ASCEND, 64 * HBM_GIB);
    assert_true(table > 0);
    for (int i = 0; i < 3; i++)
        npu(&obs, i, 0)->memory_used_bytes = table + HBM_GIB;
    npu(&obs, 3, 20);
    hbm_verdict_apply(&obs);
    assert_int_equal(obs.devs[3].verdict, HBM_VERDICT_UNACCOUNTED);
    assert_int_equal(obs.devs[3].baseline_bytes, table + HBM_GIB);
    hbm_findings f;
    hbm_doctor_findings(&obs, NULL, &f);
    const hbm_finding *u = find(&f, "unaccounted-memory", 0);
    assert_int_equal(json_integer_value(json_object_get(u->evidence, "baseline_bytes")),
                     table + HBM_GIB);
    assert_int_equal(json_integer_value(json_object_get(u->evidence, "unaccounted_bytes")),
                     obs.devs[3].unaccounted_bytes);
    hbm_findings_free(&f);
    hbm_obs_free(&obs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_holders),
        cmocka_unit_test(test_zombie_parents),
        cmocka_unit_test(test_device_hugepages),
        cmocka_unit_test(test_unaccounted_and_reset),
        cmocka_unit_test(test_shared_memory),
        cmocka_unit_test(test_host_memory),
        cmocka_unit_test(test_servers),
        cmocka_unit_test(test_orphaned_worker_port),
        cmocka_unit_test(test_no_device_source),
        cmocka_unit_test(test_clean_host),
        cmocka_unit_test(test_registry_complete),
        cmocka_unit_test(test_refined_baseline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
