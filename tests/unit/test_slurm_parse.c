/* What Slurm hands hbmctl, read right: device lists, `scontrol show node -o` lines (the
 * reason without Slurm's user@time suffix, an administrator's reason told from hbmctl's), and
 * job membership in environ and cgroup text, with bad input failing with the offset named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
    char text[32];
    hbm_slurm_format_devlist(ids, n, text, sizeof text);
    assert_string_equal(text, "0,2,3,4");
    hbm_slurm_format_devlist(ids, 0, text, sizeof text);
    assert_string_equal(text, "");
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

static void test_job_id(void **state)
{
    (void)state;
    assert_true(hbm_slurm_job_id_valid("42"));
    assert_true(hbm_slurm_job_id_valid("1234_7"));
    assert_true(hbm_slurm_job_id_valid("1234+1"));
    assert_false(hbm_slurm_job_id_valid(""));
    assert_false(hbm_slurm_job_id_valid("1/../../etc"));
    assert_false(hbm_slurm_job_id_valid(".."));
    assert_false(hbm_slurm_job_id_valid("42/"));
    assert_false(hbm_slurm_job_id_valid("42_"));
    assert_false(hbm_slurm_job_id_valid("42_1_2"));
    assert_false(hbm_slurm_job_id_valid("-1"));
    assert_false(hbm_slurm_job_id_valid("42 "));
    assert_false(hbm_slurm_job_id_valid("4\n2"));
    assert_false(hbm_slurm_job_id_valid("12345678901234567890"));
}

static void test_hostlist(void **state)
{
    (void)state;
    assert_true(hbm_slurm_hostlist_has(S("n1"), "n1"));
    assert_false(hbm_slurm_hostlist_has(S("n1"), "n10"));
    assert_true(hbm_slurm_hostlist_has(S("gpu[01-04,07]"), "gpu07"));
    assert_true(hbm_slurm_hostlist_has(S("gpu[01-04,07]"), "gpu03"));
    assert_false(hbm_slurm_hostlist_has(S("gpu[01-04,07]"), "gpu3"));
    assert_false(hbm_slurm_hostlist_has(S("gpu[01-04,07]"), "gpu05"));
    assert_true(hbm_slurm_hostlist_has(S("a1,gpu[1-12]-ib,b2"), "gpu11-ib"));
    assert_true(hbm_slurm_hostlist_has(S("a1,gpu[1-12]-ib,b2"), "b2"));
    assert_false(hbm_slurm_hostlist_has(S("gpu[1-12]-ib"), "gpu13-ib"));
}

static void test_job_gres(void **state)
{
    (void)state;
    int64_t ids[8];
    size_t n;
    hbm_err err;
    static const char one[] =
        "JobId=17 JobName=wrap\n   JOB_GRES=gpu:2\n"
        "     Nodes=n1 CPU_IDs=0-1 Mem=0 GRES=gpu:2(IDX:1,3)\n"
        "     Nodes=n2 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)\n   TresPerNode=gres:gpu:2\n";
    assert_int_equal(hbm_slurm_parse_job_gres(S(one), "n1", ids, 8, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 3);
    assert_int_equal(hbm_slurm_parse_job_gres(S(one), "n2", ids, 8, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 0);
    /* Not this node's job: its devices here are unknown, never "none" or "all". */
    assert_int_equal(hbm_slurm_parse_job_gres(S(one), "n3", ids, 8, &n, &err), -1);
    assert_non_null(strstr(err.msg, "n3"));
    /* Typed gres, an npu gres, a gres that is neither (shard, mps), a CPU-only job. */
    assert_int_equal(hbm_slurm_parse_job_gres(
                         S("JobId=5\n Nodes=npu[01-02] CPU_IDs=0 Mem=0 "
                           "GRES=gpu:910b:2(IDX:0-1),npu:1(IDX:6),mps:50(50/100,0/100)\n"),
                         "npu02", ids, 8, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(ids[2], 6);
    assert_int_equal(hbm_slurm_parse_job_gres(S("JobId=6\n Nodes=n1 CPU_IDs=0 Mem=0 GRES=\n"),
                                              "n1", ids, 8, &n, &err), 0);
    assert_int_equal(n, 0);
    /* A completing job (Slurm 22.05, as its epilog sees it): devices, but no IDX any more. */
    assert_int_equal(hbm_slurm_parse_job_gres(S("JobId=6 JobName=a\n   JobState=COMPLETING\n"
                                                "   JOB_GRES=gpu:1\n"
                                                "     Nodes=n1 CPU_IDs=0 Mem=0 GRES=\n"
                                                "   TresPerNode=gres:gpu:1\n"),
                                              "n1", ids, 8, &n, &err), -1);
    assert_non_null(strstr(err.msg, "no IDX"));
    assert_int_equal(hbm_slurm_parse_job_gres(S("JobId=6\n Nodes=n1 CPU_IDs=0 Mem=0\n"), "n1",
                                              ids, 8, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(hbm_slurm_parse_job_gres(S("JobId=7\n Nodes=n1 GRES=gpu:1(IDX:x)\n"),
                                              "n1", ids, 8, &n, &err), -1);
    assert_non_null(strstr(err.msg, "line 2"));
    assert_int_equal(hbm_slurm_parse_job_gres(S("slurm_load_jobs error: Invalid job id\n"),
                                              "n1", ids, 8, &n, &err), -1);
    assert_int_equal(hbm_slurm_parse_job_gres(S("JobId=7\n Nodes=n1 GRES=gpu:1(IDX:0\n"), "n1",
                                              ids, 8, &n, &err), -1);
}

/* Only IDLE, MIXED or ALLOCATED with no flag an administrator or Slurm set, and a drain
 * only with hbmctl's reason, are hbmctl's to change. */
static void test_node_changeable(void **state)
{
    (void)state;
    static const struct {
        const char *state, *reason;
        bool ok;
    } cases[] = {
        {"IDLE", "", true},
        {"MIXED", "", true},
        {"ALLOCATED+COMPLETING", "", true},
        {"IDLE+DRAIN", "hbmctl: GPU 0 holds 1 GiB", true},
        {"IDLE+DRAIN", "disk replacement", false},
        {"MIXED+DRAIN", "", false},
        {"DOWN", "bad PSU", false},
        {"DOWN+DRAIN", "hbmctl: GPU 0 holds 1 GiB", false},
        {"DOWN+NOT_RESPONDING", "", false},
        {"IDLE+FAIL", "fan", false},
        {"MIXED+MAINT", "", false},
        {"IDLE+RESERVED", "", false},
        {"IDLE+REBOOT_REQUESTED", "", false},
        {"IDLE+DRAIN+REBOOT_ISSUED", "hbmctl: x", false},
        {"IDLE+POWERED_DOWN", "", false},
        {"FUTURE", "", false},
        {"IDLE+SOMETHING_NEW", "", false},
        {"IDLE++DRAIN", "hbmctl: x", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hbm_slurm_node nd = {0};
        snprintf(nd.state, sizeof nd.state, "%s", cases[i].state);
        snprintf(nd.reason, sizeof nd.reason, "%s", cases[i].reason);
        nd.drain = strstr(nd.state, "DRAIN") != NULL;
        char why[320];
        bool ok = hbm_slurm_node_changeable(&nd, why, sizeof why);
        if (ok != cases[i].ok)
            fail_msg("%s (%s): %d expected", cases[i].state, cases[i].reason, cases[i].ok);
        if (!ok)
            assert_non_null(strstr(why, cases[i].state));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devlist),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_job_id),
        cmocka_unit_test(test_hostlist),
        cmocka_unit_test(test_job_gres),
        cmocka_unit_test(test_node_changeable),
        cmocka_unit_test(test_membership),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
