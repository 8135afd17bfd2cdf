/* Snapshot JSON through its field tables: every field of a snapshot that sets them all
 * (tests/fixtures/snapshot/every-field.json: no null anywhere) survives write -> read ->
 * write byte for byte, and a bad value is refused naming its path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/snapshot.h"

#define FIX HBM_SOURCE_DIR "/tests/fixtures/snapshot/every-field.json"

static char *read_fixture(size_t *len)
{
    char *text;
    hbm_err err = {{0}};
    assert_int_equal(hbm_read_file(FIX, 1 << 20, &text, len, &err), 0);
    return text;
}

/* Reads text and writes it back as `hbmctl snapshot` does; NULL with err set on failure. */
static char *rewrite(const char *text, size_t len, hbm_err *err)
{
    hbm_obs obs;
    if (hbm_snapshot_parse(&obs, text, len, "every-field.json", err) < 0)
        return NULL;
    json_t *j = hbm_snapshot_to_json(&obs);
    char *out = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(j);
    hbm_obs_free(&obs);
    return out;
}

static void test_every_field_survives(void **state)
{
    (void)state;
    size_t len;
    char *text = read_fixture(&len);
    hbm_err err = {{0}};
    char *w1 = rewrite(text, len, &err);
    if (!w1)
        fail_msg("%s", err.msg);
    /* a field the reader dropped would be written back null or empty */
    assert_null(strstr(w1, "null"));
    assert_null(strstr(w1, "\"\""));
    char *w2 = rewrite(w1, strlen(w1), &err);
    if (!w2)
        fail_msg("%s", err.msg);
    assert_string_equal(w1, w2);
    free(w1);
    free(w2);
    free(text);
}

/* The fixture with the first occurrence of from replaced by to must be refused with want. */
static void refused(const char *from, const char *to, const char *want)
{
    size_t len;
    char *text = read_fixture(&len);
    const char *at = strstr(text, from);
    assert_non_null(at);
    char *bad = hbm_xasprintf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    hbm_err err = {{0}};
    char *out = rewrite(bad, strlen(bad), &err);
    if (out)
        fail_msg("accepted %s -> %s", from, to);
    assert_string_equal(err.msg, want);
    free(bad);
    free(text);
}

static void test_bad_values_named(void **state)
{
    (void)state;
    refused("\"memory_used_bytes\": ", "\"memory_used_bytes\": \"x\", \"was\": ",
            "every-field.json: devices[0].memory_used_bytes: must be an integer");
    refused("\"state_why\": ", "\"state_why\": 3, \"was\": ",
            "every-field.json: devices[0].processes[0].state_why: must be a string");
    refused("\"nattch\": ", "\"was\": ",
            "every-field.json: host.sysv_shm[0].nattch: missing");
    refused("\"device_files\": [", "\"device_files\": [1, ",
            "every-field.json: host.holders[0].device_files: must hold strings");
    refused("\"port\": ", "\"port\": 4294967296, \"was\": ",
            "every-field.json: host.listeners[0].port: out of range");
    refused("\"utilization_ratio\": ", "\"utilization_ratio\": 2.5, \"was\": ",
            "every-field.json: devices[0].utilization_ratio: must be within 0..1");
    refused("\"boot_time\": ", "\"boot_time\": [], \"was\": ",
            "every-field.json: boot_time: must be a number");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_survives),
        cmocka_unit_test(test_bad_values_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
