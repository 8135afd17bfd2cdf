/* Pure decisions of the supervisor: restart policy and budget, backoff, exit codes, the
 * allocator setting and --devices. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "hbm/run.h"

static void test_restart_parse(void **state)
{
    (void)state;
    hbm_run_restart r;
    hbm_err err;
    assert_int_equal(hbm_run_parse_restart("never", &r, &err), 0);
    assert_int_equal(r, HBM_RUN_RESTART_NEVER);
    assert_int_equal(hbm_run_parse_restart("on-failure", &r, &err), 0);
    assert_int_equal(r, HBM_RUN_RESTART_ON_FAILURE);
    assert_int_equal(hbm_run_parse_restart("always", &r, &err), 0);
    assert_int_equal(r, HBM_RUN_RESTART_ALWAYS);
    assert_int_equal(hbm_run_parse_restart("sometimes", &r, &err), -1);
    assert_non_null(strstr(err.msg, "on-failure"));
    assert_int_equal(hbm_run_parse_restart(NULL, &r, &err), -1);
}

static void test_budget(void **state)
{
    (void)state;
    hbm_run_budget b;
    hbm_err err;
    assert_int_equal(hbm_run_parse_budget("5/1d", &b, &err), 0);
    assert_int_equal(b.max, 5);
    assert_true(fabs(b.window_s - 86400) < 1e-9);
    assert_int_equal(hbm_run_parse_budget("3", &b, &err), 0);
    assert_true(isinf(b.window_s));
    assert_int_equal(hbm_run_parse_budget("0", &b, &err), 0);
    assert_int_equal(b.max, 0);
    const char *bad[] = {"", "x", "-1", "5/", "5/0s", "5/soon", "5d", "1/2/3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(hbm_run_parse_budget(bad[i], &b, &err), -1);

    /* 2 per 100 s: a third restart inside the window is refused, allowed once one ages out */
    hbm_run_budget two = {2, 100};
    double past[] = {10, 50};
    assert_true(hbm_run_budget_allows(&two, past, 0, 0));
    assert_true(hbm_run_budget_allows(&two, past, 1, 60));
    assert_false(hbm_run_budget_allows(&two, past, 2, 60));
    assert_false(hbm_run_budget_allows(&two, past, 2, 109.9));
    assert_true(hbm_run_budget_allows(&two, past, 2, 110.1));
    hbm_run_budget none = {0, INFINITY};
    assert_false(hbm_run_budget_allows(&none, past, 0, 0));
    hbm_run_budget forever = {2, INFINITY};
    assert_false(hbm_run_budget_allows(&forever, past, 2, 1e9));
}

static void test_backoff(void **state)
{
    (void)state;
    assert_true(fabs(hbm_run_backoff(1, 1, 60) - 1) < 1e-9);
    assert_true(fabs(hbm_run_backoff(1, 2, 60) - 2) < 1e-9);
    assert_true(fabs(hbm_run_backoff(1, 4, 60) - 8) < 1e-9);
    assert_true(fabs(hbm_run_backoff(1, 7, 60) - 60) < 1e-9);
    assert_true(fabs(hbm_run_backoff(1, 1000, 60) - 60) < 1e-9);
    assert_true(fabs(hbm_run_backoff(0.1, 0, 60) - 0.1) < 1e-9);
}

static void test_wants_restart(void **state)
{
    (void)state;
    assert_false(hbm_run_wants_restart(HBM_RUN_RESTART_NEVER, 1, false));
    assert_true(hbm_run_wants_restart(HBM_RUN_RESTART_ON_FAILURE, 1, false));
    assert_true(hbm_run_wants_restart(HBM_RUN_RESTART_ON_FAILURE, 137, false));
    assert_false(hbm_run_wants_restart(HBM_RUN_RESTART_ON_FAILURE, 0, false));
    assert_true(hbm_run_wants_restart(HBM_RUN_RESTART_ALWAYS, 0, false));
    /* told to stop: never restarted, whatever the status */
    assert_false(hbm_run_wants_restart(HBM_RUN_RESTART_ALWAYS, 143, true));
    assert_false(hbm_run_wants_restart(HBM_RUN_RESTART_ON_FAILURE, 1, true));
}

static void test_exit_code(void **state)
{
    (void)state;
    /* wait statuses built as the kernel encodes them */
    assert_int_equal(hbm_run_exit_code(3 << 8), 3);
    assert_int_equal(hbm_run_exit_code(0), 0);
    assert_int_equal(hbm_run_exit_code(255 << 8), 255);
    assert_int_equal(hbm_run_exit_code(9), 137);
    assert_int_equal(hbm_run_exit_code(11 | 0x80), 139); /* SIGSEGV, core dumped */
    assert_int_equal(hbm_run_exit_code(15), 143);
}

static void test_alloc_conf(void **state)
{
    (void)state;
    char *out = NULL, why[300];
    assert_int_equal(hbm_run_alloc_conf(NULL, &out, why, sizeof why), 1);
    assert_string_equal(out, "expandable_segments:True");
    free(out);
    assert_int_equal(hbm_run_alloc_conf("", &out, why, sizeof why), 1);
    free(out);
    assert_int_equal(hbm_run_alloc_conf("garbage_collection_threshold:0.6", &out, why, sizeof why), 1);
    assert_string_equal(out, "garbage_collection_threshold:0.6,expandable_segments:True");
    free(out);
    assert_int_equal(hbm_run_alloc_conf("expandable_segments:False", &out, why, sizeof why), 0);
    assert_non_null(strstr(why, "already"));
    assert_int_equal(hbm_run_alloc_conf("max_split_size_mb:128", &out, why, sizeof why), 0);
    assert_non_null(strstr(why, "max_split_size_mb"));
}

static void test_devices(void **state)
{
    (void)state;
    size_t count, n;
    int64_t *ids;
    hbm_err err;
    assert_int_equal(hbm_run_parse_devices("2", &count, &ids, &n, &err), 0);
    assert_int_equal(count, 2);
    assert_int_equal(n, 0);
    assert_null(ids);
    assert_int_equal(hbm_run_parse_devices("3,1,1", &count, &ids, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(count, 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 3);
    free(ids);
    assert_int_equal(hbm_run_parse_devices("4-7", &count, &ids, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(ids[3], 7);
    free(ids);
    assert_int_equal(hbm_run_parse_devices("5,", &count, &ids, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 5);
    free(ids);
    const char *bad[] = {"", "0", "-1", "a", "1,,2", "7-4", ",", "1;2", "2x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(hbm_run_parse_devices(bad[i], &count, &ids, &n, &err), -1);
        assert_null(ids);
    }
}

static void test_opts_defaults(void **state)
{
    (void)state;
    hbm_run_opts o;
    hbm_run_opts_init(&o);
    assert_true(fabs(o.grace_s - 30) < 1e-9);
    assert_true(fabs(o.release_timeout_s - 60) < 1e-9);
    assert_true(fabs(o.mem_window_s - 60) < 1e-9);
    assert_int_equal(o.budget.max, 5);
    assert_true(fabs(o.budget.window_s - 86400) < 1e-9);
    assert_true(isnan(o.restart_on_mem));
    assert_int_equal(o.restart, HBM_RUN_RESTART_NEVER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_parse), cmocka_unit_test(test_budget),
        cmocka_unit_test(test_backoff),       cmocka_unit_test(test_wants_restart),
        cmocka_unit_test(test_exit_code),     cmocka_unit_test(test_alloc_conf),
        cmocka_unit_test(test_devices),       cmocka_unit_test(test_opts_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
