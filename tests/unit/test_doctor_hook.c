/* The poststop hook's readers: the OCI state from a pipe (required fields, a pid or none,
 * the deadline) and the bundle's accelerator devices; the plan's step for a target; a failure
 * of the hook's own in the audit log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "hbm/hook.h"
#include "hbm/util.h"

/* The state read from a pipe holding text; the writer end closed unless keep_open. */
static int read_text(const char *text, bool keep_open, hbm_hook_state *st, hbm_err *err)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], text, strlen(text)), (ssize_t)strlen(text));
    if (!keep_open)
        close(p[1]);
    int rc = hbm_hook_read_state(p[0], 0.3, st, err);
    close(p[0]);
    if (keep_open)
        close(p[1]);
    return rc;
}

static void test_state(void **unused)
{
    (void)unused;
    hbm_hook_state st;
    hbm_err err = {{0}};
    assert_int_equal(read_text("{\"ociVersion\":\"1.0.2\",\"id\":\"abc\",\"status\":\"stopped\","
                               "\"bundle\":\"/b/abc\",\"annotations\":{}}", false, &st, &err), 0);
    assert_string_equal(st.id, "abc");
    assert_string_equal(st.bundle, "/b/abc");
    assert_int_equal(st.pid, 0); /* podman's poststop gives none */
    assert_int_equal(read_text("{\"id\":\"x\",\"pid\":4242,\"bundle\":\"/b\"}", false, &st, &err), 0);
    assert_int_equal(st.pid, 4242);
    assert_int_equal(read_text("{\"id\":\"x\",\"bundle\":\"b\"}", false, &st, &err), -1);
    assert_non_null(strstr(err.msg, "absolute"));
    assert_int_equal(read_text("{\"id\":\"a/b\",\"bundle\":\"/b\"}", false, &st, &err), -1);
    assert_int_equal(read_text("[1]", false, &st, &err), -1);
    assert_int_equal(read_text("{\"id\":\"x\",", true, &st, &err), -1);
    assert_non_null(strstr(err.msg, "within 0.3s"));
}

static void test_devices(void **unused)
{
    (void)unused;
    char dir[256];
    assert_int_equal(th_mkdtemp(dir, sizeof dir, "hook"), 0);
    th_write_text(dir, "config.json",
                  "{\"linux\":{\"devices\":["
                  "{\"path\":\"/dev/davinci3\",\"type\":\"c\",\"major\":236,\"minor\":3},"
                  "{\"path\":\"/dev/fuse\",\"type\":\"c\",\"major\":10,\"minor\":229},"
                  "{\"path\":\"/dev/nvidia0\",\"type\":\"p\",\"major\":195,\"minor\":0},"
                  "{\"path\":\"/dev/nvidia1\",\"type\":\"c\",\"major\":195,\"minor\":1}]}}");
    hbm_hook_state st = {0};
    snprintf(st.id, sizeof st.id, "c1");
    snprintf(st.bundle, sizeof st.bundle, "%s", dir);
    hbm_hook_container c;
    hbm_err err = {{0}};
    assert_int_equal(hbm_hook_container_read(&st, &c, &err), 0);
    assert_int_equal(c.ndevs, 2); /* fuse is no accelerator; a FIFO "device" is none */
    assert_string_equal(c.devs[0].path, "/dev/davinci3");
    assert_int_equal(c.devs[0].major, 236);
    assert_int_equal(c.devs[1].minor, 1);
    assert_true(c.since > 0);
    hbm_hook_container_free(&c);
    th_write_text(dir, "config.json", "{\"linux\":{}}");
    assert_int_equal(hbm_hook_container_read(&st, &c, &err), 0);
    assert_int_equal(c.ndevs, 0);
    hbm_hook_container_free(&c);
    snprintf(st.bundle, sizeof st.bundle, "%s/none", dir);
    assert_int_equal(hbm_hook_container_read(&st, &c, &err), -1);
    th_rmtree(dir);
}

static void test_step_of(void **unused)
{
    (void)unused;
    hbm_clean_step steps[2] = {{.action = {.pid = 41}}, {.action = {.pid = 42}}};
    hbm_hook_plan plan = {.clean = {.steps = steps, .n = 2, .cap = 2}};
    assert_ptr_equal(hbm_hook_step_of(&plan, 42), &steps[1]);
    assert_ptr_equal(hbm_hook_step_of(&plan, 41), &steps[0]);
    assert_null(hbm_hook_step_of(&plan, 43));
}

static void test_audit_error(void **unused)
{
    (void)unused;
    char dir[64], log[128];
    assert_int_equal(th_mkdtemp(dir, sizeof dir, "hook-audit"), 0);
    th_path(log, sizeof log, dir, "audit/audit.jsonl");
    hbm_clean_opts o = {.audit_path = log, .command = "hbmctl hook poststop"};
    hbm_hook_audit_error(&o, "abc", "bundle unreadable");
    json_error_t je;
    json_t *r = json_load_file(log, 0, &je);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "event")), "hook-error");
    assert_string_equal(json_string_value(json_object_get(r, "command")), "hbmctl hook poststop");
    assert_string_equal(json_string_value(json_object_get(r, "container")), "abc");
    assert_string_equal(json_string_value(json_object_get(r, "detail")), "bundle unreadable");
    json_decref(r);
    /* an audit log that cannot be written: nothing fails */
    o.audit_path = "/proc/hbmctl-no-such-dir/audit.jsonl";
    hbm_hook_audit_error(&o, "abc", "bundle unreadable");
    th_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_step_of),
        cmocka_unit_test(test_audit_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
