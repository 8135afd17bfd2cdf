/* The /proc and /sys parsers on real-format text, including the awkward cases: comm with
 * ") " inside, every container runtime's cgroup spelling, hybrid cgroup mounts, IPv6
 * listeners, and malformed input that must fail with the line or field named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/procfs.h"
#include "hbm/util.h"

#define S(x) x, sizeof(x) - 1

static const char ID[] = "4f1c2d3e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d";

static void test_stat(void **state)
{
    (void)state;
    hbm_pstat st;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_stat(S("4242 (VLLM::EngineCor) S 1 4242 4242 0 -1 4194560 "
                                             "1 0 0 0 5 3 0 0 20 0 1 0 987654 1 2 3\n"),
                                           &st, &err),
                     0);
    assert_int_equal(st.pid, 4242);
    assert_string_equal(st.comm, "VLLM::EngineCor");
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.ppid, 1);
    assert_int_equal(st.starttime, 987654);

    /* comm holding ") Z (" must not fool the parser: the last ')' ends it. */
    assert_int_equal(hbm_procfs_parse_stat(S("77 (a) Z (b) D 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 "
                                             "0 12345\n"),
                                           &st, &err),
                     0);
    assert_string_equal(st.comm, "a) Z (b");
    assert_int_equal(st.state, 'D');
    assert_int_equal(st.ppid, 9);
    assert_int_equal(st.starttime, 12345);

    assert_int_equal(hbm_procfs_parse_stat(S("77 (x) S 1 2 3"), &st, &err), -1);
    assert_non_null(strstr(err.msg, "field 7"));
    assert_int_equal(hbm_procfs_parse_stat(S("77 (x) S q 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1"),
                                           &st, &err),
                     -1);
    assert_non_null(strstr(err.msg, "field 4 (ppid)"));
    assert_int_equal(hbm_procfs_parse_stat(S("77 (x S 1"), &st, &err), -1);
    assert_int_equal(hbm_procfs_parse_stat(S(""), &st, &err), -1);
}

static void test_status(void **state)
{
    (void)state;
    hbm_pstatus s;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_status(S("Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\n"
                                               "Tgid:\t812\nNgid:\t0\nPid:\t812\nPPid:\t800\n"
                                               "Uid:\t1000\t1000\t1000\t1000\n"
                                               "NStgid:\t812\t7\nNSpid:\t812\t7\n"),
                                             &s, &err),
                     0);
    assert_string_equal(s.name, "python3");
    assert_int_equal(s.pid, 812);
    assert_int_equal(s.ppid, 800);
    assert_int_equal(s.uid, 1000);
    assert_int_equal(s.nnspid, 2);
    assert_int_equal(s.nspid[0], 812);
    assert_int_equal(s.nspid[1], 7);

    assert_int_equal(hbm_procfs_parse_status(S("Name:\tx\nPid:\t1\nNSpid:\t1\tx\n"), &s, &err), -1);
    assert_non_null(strstr(err.msg, "line 3 (NSpid)"));
    assert_int_equal(hbm_procfs_parse_status(S("Name:\tx\n"), &s, &err), -1);
    assert_non_null(strstr(err.msg, "no Pid"));
}

/* Parses one cgroup file and checks what it says about the container. */
static void cg(const char *text, const char *id, const char *runtime, const char *pod,
               bool deleted)
{
    hbm_cgroup_info ci;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_cgroup(text, strlen(text), &ci, &err), 0);
    assert_string_equal(ci.container_id, id);
    assert_string_equal(ci.runtime, runtime);
    assert_string_equal(ci.pod_uid, pod);
    assert_int_equal(ci.deleted, deleted);
    if (text[0])
        assert_non_null(ci.line);
    if (id[0])
        assert_non_null(strstr(ci.line, id));
    hbm_cgroup_info_free(&ci);
}

static void test_cgroup_runtimes(void **state)
{
    (void)state;
    char t[1024];
    const char *pod = "0f7c3a52-9b1e-4d6a-8c2f-1e2d3c4b5a69";
    /* docker, cgroupfs driver, cgroup v1 */
    snprintf(t, sizeof t, "12:pids:/docker/%s\n11:memory:/docker/%s\n1:name=systemd:/docker/%s\n",
             ID, ID, ID);
    cg(t, ID, "docker", "", false);
    /* docker, cgroupfs driver, cgroup v2 */
    snprintf(t, sizeof t, "0::/docker/%s\n", ID);
    cg(t, ID, "docker", "", false);
    /* docker, systemd driver */
    snprintf(t, sizeof t, "0::/system.slice/docker-%s.scope\n", ID);
    cg(t, ID, "docker", "", false);
    /* containerd under Kubernetes with the systemd driver, burstable pod */
    snprintf(t, sizeof t,
             "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f7c3a52_9b1e_4d6a_"
             "8c2f_1e2d3c4b5a69.slice/cri-containerd-%s.scope\n",
             ID);
    cg(t, ID, "containerd", pod, false);
    /* cri-o */
    snprintf(t, sizeof t,
             "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f7c3a52_9b1e_"
             "4d6a_8c2f_1e2d3c4b5a69.slice/crio-%s.scope\n",
             ID);
    cg(t, ID, "cri-o", pod, false);
    /* kubepods, cgroupfs driver (the runtime is not in the path) */
    snprintf(t, sizeof t, "4:memory:/kubepods/burstable/pod%s/%s\n0::/\n", pod, ID);
    cg(t, ID, "kubepods", pod, false);
    /* guaranteed pod: no QoS level in the slice name */
    snprintf(t, sizeof t,
             "0::/kubepods.slice/kubepods-pod0f7c3a52_9b1e_4d6a_8c2f_1e2d3c4b5a69.slice/"
             "cri-containerd-%s.scope\n",
             ID);
    cg(t, ID, "containerd", pod, false);
    /* podman: systemd (root and rootless) and cgroupfs */
    snprintf(t, sizeof t, "0::/machine.slice/libpod-%s.scope/container\n", ID);
    cg(t, ID, "podman", "", false);
    snprintf(t, sizeof t,
             "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-%s.scope\n", ID);
    cg(t, ID, "podman", "", false);
    snprintf(t, sizeof t, "0::/libpod_parent/libpod-%s\n", ID);
    cg(t, ID, "podman", "", false);
    /* a member of a podman pod under cgroupfs: the pod's id comes first and is no container */
    snprintf(t, sizeof t,
             "0::/libpod_parent/"
             "69134ac511cf8c851f0782ca603fa0c3f3528f2f590af36cad8da14de5f84bb7/libpod-%s\n",
             ID);
    cg(t, ID, "podman", "", false);
    /* a container whose cgroup was removed while a zombie still points at it */
    snprintf(t, sizeof t, "0::/system.slice/docker-%s.scope (deleted)\n", ID);
    cg(t, ID, "docker", "", true);
    /* not containers */
    cg("0::/init.scope\n", "", "", "", false);
    cg("0::/user.slice/user-0.slice/session-3.scope\n", "", "", "", false);
    cg("", "", "", "", false);
    /* a short id is not a container id */
    cg("0::/system.slice/docker-4f1c2d3e.scope\n", "", "", "", false);
}

static void test_cgroup_bad(void **state)
{
    (void)state;
    hbm_cgroup_info ci;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_cgroup(S("0::/\nnonsense\n"), &ci, &err), -1);
    assert_non_null(strstr(err.msg, "line 2"));
    assert_int_equal(hbm_procfs_parse_cgroup(S("x:cpu:/\n"), &ci, &err), -1);
    assert_non_null(strstr(err.msg, "line 1"));
}

static void test_cgroup_v2_path(void **state)
{
    (void)state;
    hbm_cgroup_info ci;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_cgroup(S("12:pids:/user.slice\n0::/user.slice/x.scope\n"),
                                             &ci, &err),
                     0);
    assert_string_equal(ci.v2_path, "/user.slice/x.scope");
    assert_string_equal(ci.line, "0::/user.slice/x.scope");
    hbm_cgroup_info_free(&ci);
    assert_int_equal(hbm_procfs_parse_cgroup(S("12:pids:/a\n11:cpu:/b\n"), &ci, &err), 0);
    assert_null(ci.v2_path);
    assert_string_equal(ci.line, "12:pids:/a");
    assert_null(ci.freezer_path);
    hbm_cgroup_info_free(&ci);
}

/* The v1 freezer hierarchy's path, where a paused container is told (its own line, or one
 * shared with other controllers); "freezerx" is not "freezer". */
static void test_cgroup_freezer_path(void **state)
{
    (void)state;
    hbm_cgroup_info ci;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_cgroup(S("4:cpu,cpuacct:/docker/a\n9:freezer:/docker/f\n"
                                               "0::/\n"), &ci, &err), 0);
    assert_string_equal(ci.freezer_path, "/docker/f");
    assert_string_equal(ci.v2_path, "/");
    hbm_cgroup_info_free(&ci);
    assert_int_equal(hbm_procfs_parse_cgroup(S("3:blkio,freezer,devices:/x\n"), &ci, &err), 0);
    assert_string_equal(ci.freezer_path, "/x");
    hbm_cgroup_info_free(&ci);
    assert_int_equal(hbm_procfs_parse_cgroup(S("3:freezerx:/x\n2:name=freezer:/y\n"), &ci, &err),
                     0);
    assert_null(ci.freezer_path);
    hbm_cgroup_info_free(&ci);
}

static void test_mountinfo(void **state)
{
    (void)state;
    char mnt[256];
    hbm_err err;
    /* hybrid: v1 controllers plus the unified hierarchy */
    const char *hybrid =
        "25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw\n"
        "31 25 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:4 - cgroup2 cgroup2 rw\n";
    assert_int_equal(hbm_procfs_cgroup2_mount(hybrid, strlen(hybrid), mnt, sizeof mnt, &err), 1);
    assert_string_equal(mnt, "/sys/fs/cgroup/unified");
    const char *unified = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw\n";
    assert_int_equal(hbm_procfs_cgroup2_mount(unified, strlen(unified), mnt, sizeof mnt, &err), 1);
    assert_string_equal(mnt, "/sys/fs/cgroup");
    /* a subtree mount (container without its own cgroup namespace) does not count; an
     * escaped blank in the mount point is undone */
    const char *sub = "29 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
                      "30 23 0:26 / /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n";
    assert_int_equal(hbm_procfs_cgroup2_mount(sub, strlen(sub), mnt, sizeof mnt, &err), 1);
    assert_string_equal(mnt, "/mnt/my cg");
    const char *v1 = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
    assert_int_equal(hbm_procfs_cgroup2_mount(v1, strlen(v1), mnt, sizeof mnt, &err), 0);
    assert_int_equal(hbm_procfs_cgroup2_mount(S("32 31 0:29 / /x rw\n"), mnt, sizeof mnt, &err), -1);
    assert_non_null(strstr(err.msg, "line 1"));
}

static void test_fdlink(void **state)
{
    (void)state;
    hbm_fdlink fl;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_fdlink(S("socket:[123456]"), &fl, &err), 0);
    assert_int_equal(fl.kind, HBM_FD_SOCKET);
    assert_int_equal(fl.inode, 123456);
    assert_int_equal(hbm_procfs_parse_fdlink(S("pipe:[9]"), &fl, &err), 0);
    assert_int_equal(fl.kind, HBM_FD_PIPE);
    assert_int_equal(hbm_procfs_parse_fdlink(S("anon_inode:[eventfd]"), &fl, &err), 0);
    assert_int_equal(fl.kind, HBM_FD_ANON);
    assert_int_equal(hbm_procfs_parse_fdlink(S("/dev/shm/hcclShareMem0 (deleted)"), &fl, &err), 0);
    assert_int_equal(fl.kind, HBM_FD_PATH);
    assert_true(fl.deleted);
    assert_int_equal(fl.path_len, strlen("/dev/shm/hcclShareMem0"));
    assert_int_equal(hbm_procfs_parse_fdlink(S("socket:[12x]"), &fl, &err), -1);
    assert_non_null(strstr(err.msg, "socket:[12x]"));
    assert_int_equal(hbm_procfs_parse_fdlink(S(""), &fl, &err), -1);
}

static void test_sysv(void **state)
{
    (void)state;
    const char *t =
        "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  "
        "cgid      atime      dtime      ctime                   rss                  swap\n"
        "1196379206          0   666                  4096  1204  1311      0     0     0     0 "
        "    0 1764000000 1764000100 1763999000                  4096                     0\n"
        "         0      32769  1600              67108864  2201  2201      2  1000  1000  1000  "
        "1000 1764000200          0 1764000150              67108864                     0\n";
    hbm_sysv_seg *segs = NULL;
    size_t n = 0;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_sysv_shm(t, strlen(t), &segs, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(segs[0].key, 0x474f4c46);
    assert_int_equal(segs[0].perms, 0666);
    assert_int_equal(segs[0].size, 4096);
    assert_int_equal(segs[0].cpid, 1204);
    assert_int_equal(segs[0].lpid, 1311);
    assert_int_equal(segs[0].nattch, 0);
    assert_int_equal(segs[0].dtime, 1764000100);
    assert_int_equal(segs[1].shmid, 32769);
    assert_int_equal(segs[1].perms, 01600);
    assert_int_equal(segs[1].nattch, 2);
    assert_int_equal(segs[1].uid, 1000);
    free(segs);
    segs = NULL;
    n = 0;
    assert_int_equal(hbm_procfs_parse_sysv_shm(S("key shmid\n1 2 3 4 5\n"), &segs, &n, &err), -1);
    assert_non_null(strstr(err.msg, "line 2"));
    assert_int_equal(hbm_procfs_parse_sysv_shm(S("1 2 999 4 5 6 7 8 9 10 11 12 13 14\n"), &segs, &n,
                                               &err),
                     -1);
    assert_non_null(strstr(err.msg, "perms"));
    free(segs);
}

static void test_meminfo_thp_count(void **state)
{
    (void)state;
    hbm_hugepages hp;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_meminfo_huge(S("MemTotal:       24683584 kB\n"
                                                     "HugePages_Total:     512\n"
                                                     "HugePages_Free:      500\n"
                                                     "HugePages_Rsvd:        3\n"
                                                     "HugePages_Surp:        0\n"
                                                     "Hugepagesize:       2048 kB\n"),
                                                   &hp, &err),
                     0);
    assert_int_equal(hp.node, -1);
    assert_int_equal(hp.total, 512);
    assert_int_equal(hp.free, 500);
    assert_int_equal(hp.rsvd, 3);
    assert_int_equal(hp.surp, 0);
    assert_int_equal(hp.page_size_bytes, 2 * 1024 * 1024);
    assert_int_equal(hbm_procfs_parse_meminfo_huge(S("MemTotal: 1 kB\n"), &hp, &err), 0);
    assert_int_equal(hp.total, HBM_UNKNOWN);
    assert_int_equal(hbm_procfs_parse_meminfo_huge(S("HugePages_Free: lots\n"), &hp, &err), -1);
    assert_non_null(strstr(err.msg, "line 1 (HugePages_Free)"));

    char mode[16];
    assert_int_equal(hbm_procfs_parse_thp(S("always [madvise] never\n"), mode, sizeof mode, &err), 0);
    assert_string_equal(mode, "madvise");
    assert_int_equal(hbm_procfs_parse_thp(S("[always] defer defer+madvise madvise never\n"), mode,
                                          sizeof mode, &err),
                     0);
    assert_string_equal(mode, "always");
    assert_int_equal(hbm_procfs_parse_thp(S("always madvise never\n"), mode, sizeof mode, &err), -1);

    int64_t v;
    assert_int_equal(hbm_procfs_parse_count(S("128\n"), &v, &err), 0);
    assert_int_equal(v, 128);
    assert_int_equal(hbm_procfs_parse_count(S("12 8\n"), &v, &err), -1);
    assert_int_equal(hbm_procfs_parse_count(S("\n"), &v, &err), -1);
}

static void test_net_tcp(void **state)
{
    (void)state;
    const char *v4 =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0  "
        "      0 31337 1 0000000000000000 100 0 0 10 0\n"
        "   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0  "
        "      0 31338 1 0000000000000000 20 4 30 10 -1\n";
    hbm_listener *ls = NULL;
    size_t n = 0;
    hbm_err err;
    assert_int_equal(hbm_procfs_parse_net_tcp(v4, strlen(v4), false, &ls, &n, &err), 0);
    assert_int_equal(n, 1); /* the ESTABLISHED row is not a listener */
    assert_string_equal(ls[0].addr, "127.0.0.1");
    assert_int_equal(ls[0].port, 8080);
    assert_int_equal(ls[0].inode, 31337);
    assert_int_equal(ls[0].pid, -1);
    const char *v6 =
        "  sl  local_address                         remote_address                        st "
        "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 "
        "10 0\n"
        "   1: 00000000000000000000000001000000:2328 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 100 0 0 "
        "10 0\n";
    assert_int_equal(hbm_procfs_parse_net_tcp(v6, strlen(v6), true, &ls, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(ls[1].addr, "::");
    assert_int_equal(ls[1].port, 8000);
    assert_string_equal(ls[2].addr, "::1");
    assert_int_equal(ls[2].port, 9000);
    assert_int_equal(hbm_procfs_parse_net_tcp(S("   0: 0100007F:1F90 x 0A a b c d e 77\n"), false, &ls,
                                              &n, &err),
                     0);
    assert_int_equal(n, 4);
    assert_int_equal(hbm_procfs_parse_net_tcp(S("   0: 0100007F 00:00 0A a b c d e 77\n"), false, &ls,
                                              &n, &err),
                     -1);
    assert_non_null(strstr(err.msg, "local_address"));
    assert_int_equal(hbm_procfs_parse_net_tcp(S("   0: 0100007F:1F90 x 0A a b c d e\n"), false, &ls,
                                              &n, &err),
                     -1);
    assert_non_null(strstr(err.msg, "line 1"));
    free(ls);
}

static void test_environ(void **state)
{
    (void)state;
    char *v = hbm_procfs_environ_visible(S("PATH=/bin\0CUDA_VISIBLE_DEVICES=2,3\0HOME=/\0"));
    assert_string_equal(v, "2,3");
    free(v);
    v = hbm_procfs_environ_visible(S("CUDA_VISIBLE_DEVICES=1\0ASCEND_RT_VISIBLE_DEVICES=4,5"));
    assert_string_equal(v, "4,5");
    free(v);
    assert_null(hbm_procfs_environ_visible(S("XCUDA_VISIBLE_DEVICES=1\0")));
}

struct seen {
    char path[64];
    uint64_t inode;
    int n;
};

static void on_map(const char *path, size_t plen, uint64_t inode, void *arg)
{
    struct seen *s = arg;
    snprintf(s->path, sizeof s->path, "%.*s", (int)plen, path);
    s->inode = inode;
    s->n++;
}

static void test_maps(void **state)
{
    (void)state;
    struct seen s = {0};
    hbm_err err;
    const char *m = "7f0000000000-7f0000001000 rw-s 00000000 00:1a 4711       "
                    "/dev/shm/hcclShareMem0\n"
                    "7f0000002000-7f0000003000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6\n"
                    "7f0000004000-7f0000005000 rw-s 00000000 00:1a 4712 /dev/shm/gone (deleted)\n"
                    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n";
    assert_int_equal(hbm_procfs_parse_maps(m, strlen(m), "/dev/shm/", on_map, &s, &err), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.path, "/dev/shm/gone");
    assert_int_equal(s.inode, 4712);
    assert_int_equal(hbm_procfs_parse_maps(S("7f-8f rw-s 0\n"), "/dev/shm/", on_map, &s, &err), -1);
    assert_int_equal(hbm_procfs_parse_maps(S("7f-8f rw-s 0 00:1a x /dev/shm/a\n"), "/dev/shm/",
                                           on_map, &s, &err),
                     -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat),          cmocka_unit_test(test_status),
        cmocka_unit_test(test_cgroup_runtimes), cmocka_unit_test(test_cgroup_bad),
        cmocka_unit_test(test_cgroup_v2_path),
        cmocka_unit_test(test_cgroup_freezer_path), cmocka_unit_test(test_mountinfo),
        cmocka_unit_test(test_fdlink),        cmocka_unit_test(test_sysv),
        cmocka_unit_test(test_meminfo_thp_count), cmocka_unit_test(test_net_tcp),
        cmocka_unit_test(test_environ),       cmocka_unit_test(test_maps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
