/* What Slurm hands hbmctl, read right: device lists, `scontrol show node -o` lines (the
 * reason without Slurm's user@time suffix, an administrator's reason told from hbmctl's), and
 * job membership in environ and cgroup text, with bad input failing with the offset named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/slurm.h"

#define S(x) x, sizeof(x) - 1

static void test_devlist(void **state)
{
    (void)state;
    int64_t ids[8];
    size_t n;
    hbm_err err;
    assert_int_equal(hbm_slurm_parse_devlist("0,2-4,2", ids, 8, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[3], 4);
    assert_int_equal(hbm_slurm_parse_devlist("NoDevFiles", ids, 8, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(hbm_slurm_parse_devlist("0,GPU-1a2b", ids, 8, &n, &err), -1);
    assert_non_null(strstr(err.msg, "offset 2"));
    assert_int_equal(hbm_slurm_parse_devlist("5-3", ids, 8, &n, &err), -1);
    assert_non_null(strstr(err.msg, "backwards"));
    assert_int_equal(hbm_slurm_parse_devlist("0-9", ids, 8, &n, &err), -1);
    assert_non_null(strstr(err.msg, "more than 8"));
    assert_int_equal(hbm_slurm_parse_devlist("1;2", ids, 8, &n, &err), -1);
    assert_non_null(strstr(err.msg, "offset 1"));
}

static void test_node(void **state)
{
    (void)state;
    hbm_slurm_node nd;
    hbm_err err;
    assert_int_equal(hbm_slurm_parse_node(S("NodeName=n1 Arch=x86_64 State=IDLE+DRAIN "
                                            "Partitions=debug Reason=disk replacement "
                                            "[root@2026-12-02T15:59:42]\n"), &nd, &err), 0);
    assert_string_equal(nd.state, "IDLE+DRAIN");
    assert_true(nd.drain);
    assert_string_equal(nd.reason, "disk replacement");
    assert_int_equal(hbm_slurm_parse_node(S("NodeName=n1 State=MIXED Reason=(null)\n"), &nd,
                                          &err), 0);
    assert_false(nd.drain);
    assert_string_equal(nd.reason, "");
    /* AllocState= must not be taken for State= */
    assert_int_equal(hbm_slurm_parse_node(S("NodeName=n1 AllocState=DRAIN State=IDLE\n"), &nd,
                                          &err), 0);
    assert_string_equal(nd.state, "IDLE");
    assert_int_equal(hbm_slurm_parse_node(S("Node n1 not found\n"), &nd, &err), -1);
    assert_non_null(strstr(err.msg, "line 1"));
    assert_int_equal(hbm_slurm_parse_node(S("NodeName=n1 Arch=x86_64\n"), &nd, &err), -1);
    assert_non_null(strstr(err.msg, "State="));
}

static void test_membership(void **state)
{
    (void)state;
    assert_true(hbm_slurm_environ_has_job(S("A=1\0SLURM_JOB_ID=42\0B=2\0"), "42"));
    assert_true(hbm_slurm_environ_has_job(S("SLURM_JOBID=42"), "42"));
    assert_false(hbm_slurm_environ_has_job(S("SLURM_JOB_ID=421\0"), "42"));
    assert_false(hbm_slurm_environ_has_job(S("X_SLURM_JOB_ID=42\0"), "42"));
    assert_true(hbm_slurm_cgroup_has_job(S("0::/system.slice/slurmstepd.scope/job_42/step_0\n"),
                                         "42"));
    assert_true(hbm_slurm_cgroup_has_job(S("4:memory:/slurm/uid_0/job_42\n"), "42"));
    assert_false(hbm_slurm_cgroup_has_job(S("0::/slurm/uid_0/job_420/step_0\n"), "42"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devlist),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_membership),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
