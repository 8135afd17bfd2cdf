/* The host scan under a root prefix, on fixture trees of situations this machine cannot
 * produce: device holders in every container runtime, a D-state worker, processes whose
 * container cgroup is gone, hugepages on two NUMA nodes, THP modes, a hybrid cgroup host,
 * and hbmctl itself inside a container's PID namespace. Trees that need real symlinks or
 * variants are built at run time in a temporary directory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "hbm/host.h"
#include "hbm/util.h"

#define FIX HBM_SOURCE_DIR "/tests/fixtures/host/"

static char *repeat(const char *two)
{
    static char buf[8][65];
    static int k;
    char *b = buf[k++ % 8];
    for (int i = 0; i < 32; i++)
        memcpy(b + 2 * i, two, 2);
    b[64] = '\0';
    return b;
}

static bool has_dev(const hbm_hproc *p, const char *path)
{
    for (size_t i = 0; i < p->ndev_paths; i++)
        if (!strcmp(p->dev_paths[i], path))
            return true;
    return false;
}

static const hbm_hproc *must_find(const hbm_host *h, int pid)
{
    const hbm_hproc *p = hbm_host_find(h, pid);
    if (!p)
        fail_msg("pid %d not recorded", pid);
    return p;
}

static void scan(hbm_host *h, const char *root, const int *want, size_t nwant,
                 const char *const *pats)
{
    hbm_host_opts o = {.root = root, .want_pids = want, .nwant_pids = nwant, .dev_patterns = pats};
    hbm_err err;
    if (hbm_host_scan(h, &o, &err) < 0)
        fail_msg("scan of %s: %s", root, err.msg);
}

static void test_containers(void **state)
{
    (void)state;
    static const int want[] = {1009, 1022, 4242};
    hbm_host h;
    scan(&h, FIX "containers", want, 3, hbm_host_default_dev_patterns);
    assert_true(h.sees_host_pids);
    assert_non_null(strstr(h.sees_host_pids_why, "kthreadd"));
    assert_true(h.boot_time == 1764000000.0);

    /* recorded: device holders, wanted pids that exist, the server, the SysV creator, the
     * listener's owner, and init as the parent of the zombies 1009 and 1012 and of the
     * D-state 1008 (1022's parent 1001 is recorded anyway); not kthreadd, the shell or a
     * plain python script */
    static const int expect[] = {1,    1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008,
                                 1009, 1010, 1011, 1012, 1021, 1022, 1023, 1025};
    assert_int_equal(h.nprocs, sizeof expect / sizeof expect[0]);
    for (size_t i = 0; i < h.nprocs; i++)
        assert_int_equal(h.procs[i].pid, expect[i]);
    assert_null(hbm_host_find(&h, 4242));
    assert_null(hbm_host_find(&h, 1020));
    assert_null(hbm_host_find(&h, 1024));

    const hbm_hproc *p = must_find(&h, 1001);
    assert_string_equal(p->runtime, "docker");
    assert_string_equal(p->container_id, repeat("a1"));
    assert_int_equal(p->ndev_paths, 2); /* davinci_manager held twice counts once */
    assert_true(has_dev(p, "/dev/davinci0"));
    assert_true(has_dev(p, "/dev/davinci_manager"));
    assert_string_equal(p->visible_devices, "0");
    assert_string_equal(p->cmdline, "python3 train.py");
    assert_int_equal(p->starttime, 2001);
    assert_int_equal(p->ppid, 1);
    assert_int_equal(p->nnspid, 1);
    assert_false(p->cgroup_gone); /* v1 only: nothing to check against */

    p = must_find(&h, 1002);
    assert_string_equal(p->runtime, "docker");
    assert_string_equal(p->container_id, repeat("b2"));
    assert_int_equal(p->ndev_paths, 3);
    assert_string_equal(p->visible_devices, "0");
    assert_false(p->cgroup_gone);

    p = must_find(&h, 1003);
    assert_string_equal(p->runtime, "docker");
    assert_string_equal(p->container_id, repeat("c3"));
    assert_string_equal(p->comm, "VLLM::EngineCor");
    assert_int_equal(p->uid, 1000);
    assert_null(p->visible_devices);

    p = must_find(&h, 1004);
    assert_string_equal(p->runtime, "containerd");
    assert_string_equal(p->container_id, repeat("d4"));
    assert_string_equal(p->pod_uid, "0f7c3a52-9b1e-4d6a-8c2f-1e2d3c4b5a69");
    assert_non_null(strstr(p->cgroup, "kubepods-burstable"));

    p = must_find(&h, 1005);
    assert_string_equal(p->runtime, "cri-o");
    assert_string_equal(p->container_id, repeat("e5"));
    assert_string_equal(p->pod_uid, "0f7c3a52-9b1e-4d6a-8c2f-1e2d3c4b5a69");
    assert_true(has_dev(p, "/dev/devmm_svm"));

    p = must_find(&h, 1006);
    assert_string_equal(p->runtime, "kubepods");
    assert_string_equal(p->container_id, repeat("f6"));
    assert_string_equal(p->pod_uid, "0f7c3a52-9b1e-4d6a-8c2f-1e2d3c4b5a69");

    p = must_find(&h, 1007);
    assert_string_equal(p->runtime, "podman");
    assert_string_equal(p->container_id, repeat("0a"));
    assert_true(has_dev(p, "/dev/svm0"));
    assert_false(p->cgroup_gone);

    p = must_find(&h, 1008);
    assert_int_equal(p->state, 'D');
    assert_string_equal(p->wchan, "uvm_spin_loop");
    assert_false(p->cgroup_gone);

    p = must_find(&h, 1009);
    assert_int_equal(p->state, 'Z');
    assert_true(p->cgroup_gone); /* " (deleted)" */
    assert_string_equal(p->container_id, repeat("2c"));
    assert_int_equal(p->ndev_paths, 0);

    p = must_find(&h, 1010);
    assert_true(p->cgroup_gone); /* no directory under the cgroup2 mount */
    assert_string_equal(p->container_id, repeat("3d"));

    p = must_find(&h, 1011); /* matched from the "/dev/" inside a driver container's path */
    assert_int_equal(p->ndev_paths, 1);
    assert_string_equal(p->dev_paths[0], "/run/nvidia/driver/dev/nvidia3");

    p = must_find(&h, 1012); /* zombie leader: its live threads hold the device */
    assert_int_equal(p->state, 'Z');
    assert_int_equal(p->zombie_live_threads, 2);
    assert_int_equal(p->ndev_paths, 1);
    assert_string_equal(p->dev_paths[0], "/dev/davinci_manager");
    assert_int_equal(must_find(&h, 1009)->zombie_live_threads, 0);
    assert_int_equal(must_find(&h, 1022)->zombie_live_threads, 0);

    p = must_find(&h, 1021);
    assert_int_equal(p->ndev_paths, 0);
    assert_non_null(strstr(p->cmdline, "vllm.entrypoints"));
    assert_string_equal(must_find(&h, 1022)->comm, "python3");
    assert_int_equal(must_find(&h, 1022)->state, 'Z');
    assert_string_equal(must_find(&h, 1008)->wchan, "uvm_spin_loop");
    assert_string_equal(must_find(&h, 1001)->wchan, "");

    assert_int_equal(h.nsysv, 2);
    assert_int_equal(h.sysv[0].key, 0x474f4c46);
    assert_true(h.sysv[0].cpid_alive);
    assert_false(h.sysv[0].lpid_alive);
    assert_false(h.sysv[1].cpid_alive);
    assert_true(h.sysv[1].lpid_alive);
    assert_int_equal(h.sysv[1].size, 268435456);

    assert_int_equal(h.nlisteners, 2);
    assert_string_equal(h.listeners[0].addr, "0.0.0.0");
    assert_int_equal(h.listeners[0].port, 8000);
    assert_int_equal(h.listeners[0].pid, 1003);
    assert_string_equal(h.listeners[1].addr, "127.0.0.1");
    assert_int_equal(h.listeners[1].port, 3306);
    assert_int_equal(h.listeners[1].pid, 1025);

    assert_int_equal(h.nposix, 2);
    assert_string_equal(h.posix[0].path, "/dev/shm/hcclShareMem0");
    assert_int_equal(h.posix[0].size, 64);
    assert_int_equal(h.posix[0].nholders, 1);
    assert_int_equal(h.posix[0].holders[0], 1004);
    assert_string_equal(h.posix[1].path, "/dev/shm/sem.orphan");
    assert_int_equal(h.posix[1].nholders, 0);
    assert_int_equal(h.devshm_total_bytes, HBM_UNKNOWN); /* a plain directory: nothing mounted */
    hbm_host_free(&h);

    /* custom patterns: only the numbered NVIDIA nodes count as devices now */
    static const char *const nv[] = {"/dev/nvidia[0-9]*", NULL};
    scan(&h, FIX "containers", NULL, 0, nv);
    assert_int_equal(must_find(&h, 1002)->ndev_paths, 1);
    assert_true(has_dev(must_find(&h, 1008), "/dev/nvidia2"));
    assert_null(hbm_host_find(&h, 1001));
    assert_null(hbm_host_find(&h, 1005));
    hbm_host_free(&h);
}

static void test_single_process(void **state)
{
    (void)state;
    hbm_hproc p;
    hbm_err err;
    assert_int_equal(hbm_host_read_proc(FIX "containers", 1008, &p, &err), 0);
    assert_int_equal(p.state, 'D');
    assert_true(has_dev(&p, "/dev/nvidia2"));
    assert_true(has_dev(&p, "/dev/nvidiactl"));
    assert_string_equal(p.container_id, repeat("1b"));
    hbm_hproc_free(&p);
    assert_int_equal(hbm_host_read_proc(FIX "containers", 4242, &p, &err), -1);
    assert_non_null(strstr(err.msg, "ESRCH"));

    assert_true(hbm_host_pid_matches(FIX "containers", 1008, 2008));
    assert_false(hbm_host_pid_matches(FIX "containers", 1008, 2009)); /* reused pid */
    assert_false(hbm_host_pid_matches(FIX "containers", 4242, 5242));
}

static void test_system(void **state)
{
    (void)state;
    hbm_host h;
    scan(&h, FIX "system", NULL, 0, NULL);
    assert_true(h.sees_host_pids);
    assert_int_equal(h.nprocs, 0);
    assert_int_equal(h.nhuge, 5);
    const hbm_hugepages *s = &h.huge[0];
    assert_int_equal(s->node, -1);
    assert_int_equal(s->page_size_bytes, 2 << 20);
    assert_int_equal(s->total, 200000);
    assert_int_equal(s->free, 150000);
    assert_int_equal(s->rsvd, 1200);
    assert_int_equal(s->surp, 0);
    assert_int_equal(h.huge[1].node, 0);
    assert_int_equal(h.huge[1].page_size_bytes, 2 << 20);
    assert_int_equal(h.huge[1].total, 100000);
    assert_int_equal(h.huge[1].free, 50000);
    assert_int_equal(h.huge[1].rsvd, HBM_UNKNOWN);
    assert_int_equal(h.huge[2].node, 0);
    assert_int_equal(h.huge[2].page_size_bytes, 1 << 30);
    assert_int_equal(h.huge[2].total, 2);
    assert_int_equal(h.huge[2].free, 1);
    assert_int_equal(h.huge[3].node, 1);
    assert_int_equal(h.huge[3].free, 100000);
    assert_int_equal(h.huge[3].surp, 3);
    assert_int_equal(h.huge[4].node, 1);
    assert_int_equal(h.huge[4].total, 0);
    assert_string_equal(h.thp, "never");
    assert_string_equal(h.thp_defrag, "defer+madvise");
    assert_int_equal(h.nsysv, 0);
    assert_int_equal(h.nlisteners, 0);
    hbm_host_free(&h);

    char mnt[512];
    hbm_err err;
    assert_int_equal(hbm_host_cgroup2_mount(FIX "system", mnt, sizeof mnt, &err), 0);
    assert_string_equal(mnt, FIX "system/sys/fs/cgroup/unified");
    assert_int_equal(hbm_host_cgroup2_mount(FIX "containers", mnt, sizeof mnt, &err), 0);
    assert_string_equal(mnt, FIX "containers/sys/fs/cgroup");
}

static void test_container_view(void **state)
{
    (void)state;
    hbm_host h;
    scan(&h, FIX "container-view", NULL, 0, NULL);
    assert_false(h.sees_host_pids);
    assert_non_null(strstr(h.sees_host_pids_why, "tini"));
    assert_int_equal(h.nprocs, 1);
    assert_int_equal(h.procs[0].pid, 12);
    assert_true(has_dev(&h.procs[0], "/dev/davinci_manager"));
    assert_int_equal(h.devshm_total_bytes, HBM_UNKNOWN); /* a plain directory: nothing mounted */
    hbm_host_free(&h);
}

/* ---- trees built at run time ---- */

static char tmp[256];

static int make_tmp(void **state)
{
    (void)state;
    return th_mkdtemp(tmp, sizeof tmp, "host-fix");
}

static int drop_tmp(void **state)
{
    (void)state;
    return th_rmtree(tmp);
}

static const char STAT_TAIL[] = " 1 300 300 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n";

static void test_symlinks_and_nesting(void **state)
{
    (void)state;
    /* a nested PID namespace: two NSpid levels (kthreadd visible or not) */
    th_write_text(tmp, "proc/self/status", "Name:\thbmctl\nPid:\t4945\nNSpid:\t4945\t12\n");
    th_write_text(tmp, "proc/2/stat",
                  "2 (kthreadd) S 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 2 0 0\n");
    char line[256];
    snprintf(line, sizeof line, "300 (python3) S%s", STAT_TAIL);
    th_write_text(tmp, "proc/300/stat", line);
    th_write_text(tmp, "proc/300/status",
                  "Name:\tpython3\nPid:\t300\nPPid:\t1\nUid:\t0\t0\t0\t0\nNSpid:\t300\n");
    th_write_text(tmp, "proc/300/cgroup", "0::/\n");
    char dir[512], link[512];
    snprintf(dir, sizeof dir, "%s/proc/300/fd", tmp);
    mkdir(dir, 0755);
    th_path(link, sizeof link, dir, "3");
    assert_int_equal(symlink("/dev/davinci5", link), 0); /* real links, as on a live host */
    th_path(link, sizeof link, dir, "4");
    assert_int_equal(symlink("/dev/tty", link), 0);

    hbm_host h;
    scan(&h, tmp, NULL, 0, NULL);
    assert_false(h.sees_host_pids);
    assert_non_null(strstr(h.sees_host_pids_why, "nested"));
    assert_int_equal(h.nprocs, 1);
    assert_int_equal(h.procs[0].ndev_paths, 1);
    assert_string_equal(h.procs[0].dev_paths[0], "/dev/davinci5");
    assert_int_equal(h.procs[0].starttime, 4242);
    assert_string_equal(h.thp, ""); /* no THP files: unknown */
    assert_int_equal(h.nhuge, 0);
    hbm_host_free(&h);

    /* one level and kthreadd at pid 2: the host */
    th_write_text(tmp, "proc/self/status", "Name:\thbmctl\nPid:\t4945\nNSpid:\t4945\n");
    scan(&h, tmp, NULL, 0, NULL);
    assert_true(h.sees_host_pids);
    hbm_host_free(&h);
}

static void test_thp_modes(void **state)
{
    (void)state;
    static const char *const modes[] = {"always", "madvise", "never"};
    th_write_text(tmp, "proc/self/status", "Name:\thbmctl\nPid:\t1\nNSpid:\t1\n");
    for (int i = 0; i < 3; i++) {
        char text[128] = "";
        for (int k = 0; k < 3; k++) {
            strcat(text, i == k ? "[" : "");
            strcat(text, modes[k]);
            strcat(text, i == k ? "]" : "");
            strcat(text, k < 2 ? " " : "\n");
        }
        th_write_text(tmp, "sys/kernel/mm/transparent_hugepage/enabled", text);
        hbm_host h;
        scan(&h, tmp, NULL, 0, NULL);
        assert_string_equal(h.thp, modes[i]);
        hbm_host_free(&h);
    }
}

/* WSL2, by either sign: its kernel release (microsoft-standard-WSL2) or the /dev/dxg device;
 * neither on a native kernel. */
static void test_wsl2(void **state)
{
    (void)state;
    th_write_text(tmp, "proc/self/status", "Name:\thbmctl\nPid:\t1\nNSpid:\t1\n");
    th_write_text(tmp, "proc/sys/kernel/osrelease", "6.8.0-49-generic\n");
    hbm_host h;
    scan(&h, tmp, NULL, 0, NULL);
    assert_false(h.wsl2);
    hbm_host_free(&h);
    th_write_text(tmp, "proc/sys/kernel/osrelease", "5.15.167.4-microsoft-standard-WSL2\n");
    scan(&h, tmp, NULL, 0, NULL);
    assert_true(h.wsl2);
    hbm_host_free(&h);
    th_write_text(tmp, "proc/sys/kernel/osrelease", "6.8.0-49-generic\n");
    th_write_text(tmp, "dev/dxg", "");
    scan(&h, tmp, NULL, 0, NULL);
    assert_true(h.wsl2);
    hbm_host_free(&h);
}

static void test_malformed(void **state)
{
    (void)state;
    th_write_text(tmp, "proc/self/status", "Name:\thbmctl\nPid:\t1\nNSpid:\t1\n");
    th_write_text(tmp, "proc/301/stat", "301 (x) S one\n");
    th_write_text(tmp, "proc/301/fd/3", "/dev/nvidia0\n");
    hbm_host h;
    hbm_err err;
    hbm_host_opts o = {.root = tmp};
    assert_int_equal(hbm_host_scan(&h, &o, &err), -1);
    assert_non_null(strstr(err.msg, "/proc/301/stat"));
    assert_non_null(strstr(err.msg, "field 4"));
    th_write_text(tmp, "proc/301/stat", "301 (x) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 0 7\n");
    th_write_text(tmp, "proc/sysvipc/shm", "key shmid\n1 2 3\n");
    assert_int_equal(hbm_host_scan(&h, &o, &err), -1);
    assert_non_null(strstr(err.msg, "/proc/sysvipc/shm"));
    assert_non_null(strstr(err.msg, "line 2"));
    th_write_text(tmp, "proc/sysvipc/shm", "");
    th_write_text(tmp, "proc/meminfo", "HugePages_Total: many\n");
    assert_int_equal(hbm_host_scan(&h, &o, &err), -1);
    assert_non_null(strstr(err.msg, "/proc/meminfo"));
    th_write_text(tmp, "proc/meminfo", "HugePages_Total: 1\n");
    th_write_text(tmp, "proc/net/tcp",
                  "sl\n   0: 0100007F:1F90 00000000:0000 0A 0 0 0 0 0 inode\n");
    assert_int_equal(hbm_host_scan(&h, &o, &err), -1);
    assert_non_null(strstr(err.msg, "/proc/net/tcp"));
    assert_non_null(strstr(err.msg, "inode"));
    o.root = "/nonexistent-hbm-root";
    assert_int_equal(hbm_host_scan(&h, &o, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent-hbm-root/proc"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_containers),
        cmocka_unit_test(test_single_process),
        cmocka_unit_test(test_system),
        cmocka_unit_test(test_container_view),
        cmocka_unit_test_setup_teardown(test_symlinks_and_nesting, make_tmp, drop_tmp),
        cmocka_unit_test_setup_teardown(test_thp_modes, make_tmp, drop_tmp),
        cmocka_unit_test_setup_teardown(test_wsl2, make_tmp, drop_tmp),
        cmocka_unit_test_setup_teardown(test_malformed, make_tmp, drop_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
