/* The supervisor's /proc and cgroup readers: /proc/PID/stat fields, the cgroup2 line of
 * mountinfo (hybrid and unified hosts, escapes, sub-tree mounts), the leaf directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hbm/procfs.h"
#include "run/run_int.h"

static void test_stat(void **state)
{
    (void)state;
    hbm_pstat p;
    const char *s = "1234 (VLLM::EngineCor) S 1 1200 1100 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 "
                    "9 0 987654 100000 200 18446744073709551615\n";
    assert_int_equal(hbm_procfs_parse_stat(s, strlen(s), &p, NULL), 0);
    assert_int_equal(p.pid, 1234);
    assert_string_equal(p.comm, "VLLM::EngineCor");
    assert_int_equal(p.state, 'S');
    assert_int_equal(p.ppid, 1);
    assert_int_equal(p.pgrp, 1200);
    assert_int_equal(p.sid, 1100);
    assert_int_equal(p.starttime, 987654);
    /* a comm holding ") " and spaces: bounded by the last ')' */
    const char *t = "77 (a) b (c) Z 5 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n";
    assert_int_equal(hbm_procfs_parse_stat(t, strlen(t), &p, NULL), 0);
    assert_string_equal(p.comm, "a) b (c");
    assert_int_equal(p.state, 'Z');
    assert_int_equal(p.ppid, 5);
    assert_int_equal(p.starttime, 42);
    /* cut short: no field 22 */
    const char *u = "77 (x) S 5 77 77 0";
    assert_int_equal(hbm_procfs_parse_stat(u, strlen(u), &p, NULL), -1);
    assert_int_equal(hbm_procfs_parse_stat("garbage", 7, &p, NULL), -1);
    assert_int_equal(hbm_procfs_parse_stat("", 0, &p, NULL), -1);
}

static void test_mountinfo(void **state)
{
    (void)state;
    char mnt[256], root[256];
    /* hybrid host: v1 hierarchies and the v2 one at /sys/fs/cgroup/unified */
    const char *hybrid =
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw\n";
    assert_int_equal(run_mountinfo_cgroup2(hybrid, mnt, sizeof mnt, root, sizeof root), 1);
    assert_string_equal(mnt, "/sys/fs/cgroup/unified");
    assert_string_equal(root, "/");
    /* unified, no optional fields, a sub-tree root and an escaped space */
    const char *uni = "29 22 0:26 /kubepods/pod1 /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw,nsdelegate";
    assert_int_equal(run_mountinfo_cgroup2(uni, mnt, sizeof mnt, root, sizeof root), 1);
    assert_string_equal(mnt, "/sys/fs/cgroup x");
    assert_string_equal(root, "/kubepods/pod1");
    /* none (a v1-only host), and a file system whose name only starts like cgroup2 */
    const char *none = "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                       "36 31 0:33 / /x rw - cgroup2fs none rw\n";
    assert_int_equal(run_mountinfo_cgroup2(none, mnt, sizeof mnt, root, sizeof root), 0);
    assert_int_equal(run_mountinfo_cgroup2("", mnt, sizeof mnt, root, sizeof root), 0);
    assert_int_equal(run_mountinfo_cgroup2("short - cgroup2 x", mnt, sizeof mnt, root, sizeof root), 0);
}

static void test_cgroup_dir(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(run_cgroup_dir("/sys/fs/cgroup", "/", "/", out, sizeof out), 0);
    assert_string_equal(out, "/sys/fs/cgroup");
    assert_int_equal(run_cgroup_dir("/sys/fs/cgroup", "/", "/system.slice/x.service", out, sizeof out), 0);
    assert_string_equal(out, "/sys/fs/cgroup/system.slice/x.service");
    assert_int_equal(run_cgroup_dir("/c", "/kubepods", "/kubepods/pod1/ctr", out, sizeof out), 0);
    assert_string_equal(out, "/c/pod1/ctr");
    /* outside the mounted sub-tree, or a prefix that is not a path component */
    assert_int_equal(run_cgroup_dir("/c", "/kubepods", "/system.slice", out, sizeof out), -1);
    assert_int_equal(run_cgroup_dir("/c", "/kube", "/kubepods/x", out, sizeof out), -1);
    char tiny[8];
    assert_int_equal(run_cgroup_dir("/sys/fs/cgroup", "/", "/a", tiny, sizeof tiny), -1);
}

static void test_tree_self(void **state)
{
    (void)state;
    /* the live tree of this test process: it has no children, so no members; its own
     * pid and ancestors are protected */
    run_tree t;
    run_tree_init(&t, NULL);
    assert_int_equal(t.self, (int)getpid());
    run_proc *m = NULL;
    size_t n = 99;
    assert_int_equal(run_tree_members(&t, &m, &n), 0);
    assert_int_equal(n, 0);
    free(m);
    run_tree_note_reaped(&t, 4242);
    assert_true(run_tree_was_member(&t, 4242));
    assert_false(run_tree_was_member(&t, 4243));
    run_tree_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat),
        cmocka_unit_test(test_mountinfo),
        cmocka_unit_test(test_cgroup_dir),
        cmocka_unit_test(test_tree_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
