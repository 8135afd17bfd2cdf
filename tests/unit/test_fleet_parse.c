/* Prometheus answers read in place: JSON escapes decoded as JSON means them, fields in any
 * order, whatever the answer holds beside the vector passed over; text that is not JSON,
 * not UTF-8, or would cut a label short (NUL) refused with where. Secret files and URLs as
 * messages show them. */
#include <fcntl.h>
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

#include "hbm/fleet.h"

static int parse(const char *text, hbm_fleet_prom_vec *v, char *buf, size_t cap, hbm_err *err)
{
    snprintf(buf, cap, "%s", text);
    return hbm_fleet_prom_parse(buf, strlen(buf), "q", NULL, v, err);
}

static void test_decoded(void **state)
{
    (void)state;
    char buf[1024];
    hbm_fleet_prom_vec v;
    hbm_err err;
    const char *text =
        "{\"warnings\":[\"w\",{\"x\":[1,-2.5e-3,true,false,null]}],\"data\":{\"result\":"
        "[{\"value\":[1796228580.5,\"+Inf\"],\"histogram\":{},\"metric\":{\"instance\":"
        "\"n\\u00e9\\ud83d\\ude00:1\",\"job\":\"a\\\"b\\\\c\\/d\\n\",\"name\":\"\xe6\x97\xa5\"}},"
        "{\"metric\":{},\"value\":[0,\"-1.5e3\"]}],\"resultType\":\"vector\"},\"status\":"
        "\"success\"}";
    if (parse(text, &v, buf, sizeof buf, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(v.n, 2);
    assert_string_equal(hbm_fleet_prom_label(&v.s[0], "instance"), "n\xc3\xa9\xf0\x9f\x98\x80:1");
    assert_string_equal(hbm_fleet_prom_label(&v.s[0], "job"), "a\"b\\c/d\n");
    assert_string_equal(hbm_fleet_prom_label(&v.s[0], "name"), "\xe6\x97\xa5");
    assert_string_equal(hbm_fleet_prom_label(&v.s[0], "nam"), ""); /* a prefix is no match */
    assert_string_equal(hbm_fleet_prom_label(&v.s[0], "names"), "");
    assert_true(v.s[0].value > 1e308);
    assert_string_equal(hbm_fleet_prom_label(&v.s[1], "instance"), "");
    assert_true(v.s[1].value == -1500);
    hbm_fleet_prom_vec_free(&v);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{\"a\":\"\xc3\"},\"value\":[1,\"1\"]}]}}", "invalid UTF-8"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{\"a\":\"\xed\xa0\x80\"},\"value\":[1,\"1\"]}]}}", "invalid UTF-8"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{\"a\":\"x\\ud800y\"},\"value\":[1,\"1\"]}]}}", "lone UTF-16 surrogate"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{\"a\":\"x\\u0000y\"},\"value\":[1,\"1\"]}]}}", "a NUL in a string"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{\"\":\"x\"},\"value\":[1,\"1\"]}]}}", "empty label name"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
         "{\"a\":\"x\"}}]}}", "data.result[0]: want metric and value"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}} x",
         "text after the answer"},
        {"{\"status\":\"success\",\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
         "[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
         "]]]]]]]}", "nested too deep"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]},\n"
         "\"x\":01}", "answer line 2, column 5: want a number"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\"}}", "must be a vector"},
        {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]", "want ','"},
        {"{\"status\":\"ok\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
         "status must be"},
        {"", "want a JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[1024];
        hbm_fleet_prom_vec v;
        hbm_err err;
        assert_int_equal(parse(cases[i][0], &v, buf, sizeof buf, &err), -1);
        if (!strstr(err.msg, cases[i][1]))
            fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i][1]);
        assert_null(v.s);
    }
}

/* A label longer than its field is cut before a UTF-8 sequence, never inside one. */
static void test_cut_utf8(void **state)
{
    (void)state;
    char text[2048], buf[2048], host[400] = "";
    for (int i = 0; i < 70; i++)
        strcat(host, "\xc3\xa9"); /* 140 bytes, more than the hostname field holds */
    snprintf(text, sizeof text,
             "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
             "{\"instance\":\"a:1\",\"hostname\":\"x%s\"},\"value\":[1,\"1\"]}]}}", host);
    hbm_fleet_prom_vec ans[HBM_FQ_COUNT];
    memset(ans, 0, sizeof ans);
    hbm_err err;
    if (parse(text, &ans[HBM_FQ_UP], buf, sizeof buf, &err) < 0)
        fail_msg("%s", err.msg);
    ans[HBM_FQ_SOURCE] = ans[HBM_FQ_UP];
    hbm_fleet f;
    memset(&f, 0, sizeof f);
    hbm_fleet_build(&f, ans);
    assert_int_equal(f.nnodes, 1);
    size_t len = strlen(f.nodes[0].hostname);
    assert_true(len < sizeof f.nodes[0].hostname && len > 100);
    assert_int_equal(len % 2, 1); /* "x" and whole two-byte sequences */
    json_t *j = hbm_fleet_node_json(&f.nodes[0]);
    assert_non_null(json_string_value(json_object_get(j, "hostname")));
    json_decref(j);
    hbm_fleet_free(&f);
    hbm_fleet_prom_vec_free(&ans[HBM_FQ_UP]);
}

static void test_secret(void **state)
{
    (void)state;
    char dir[] = "/tmp/hbm-fleet-secret.XXXXXX", path[64], fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    static const struct {
        const char *text;
        size_t len;
        bool token, ok;
        const char *want; /* the secret, or what the message says */
    } cases[] = {
        {"tok-1\n", 6, true, true, "tok-1"},
        {"tok-1\r\n", 7, true, true, "tok-1"},
        {"tok-1", 5, true, true, "tok-1"},
        {"pa ss\n", 6, false, true, "pa ss"},
        {"tok-1\r\nX-Injected: 1\n", 21, true, false, "control byte (0x0d) at byte 6"},
        {"tok-1\n\n", 7, true, false, "control byte (0x0a)"},
        {"tok\0junk\n", 9, true, false, "control byte (0x00) at byte 4"},
        {"tok\x7f\n", 5, false, false, "control byte (0x7f)"},
        {"pa\tss\n", 6, false, false, "control byte (0x09)"},
        {"tok 1\n", 6, true, false, "a space at byte 4"},
        {"\n", 1, true, false, "empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *fp = fopen(path, "w");
        fwrite(cases[i].text, 1, cases[i].len, fp);
        fclose(fp);
        char *s;
        hbm_err err;
        int rc = hbm_fleet_read_secret(path, cases[i].token, &s, &err);
        if (cases[i].ok) {
            assert_int_equal(rc, 0);
            assert_string_equal(s, cases[i].want);
            free(s);
        } else {
            assert_int_equal(rc, -1);
            assert_null(s);
            if (!strstr(err.msg, cases[i].want))
                fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i].want);
        }
    }
    char *s;
    hbm_err err;
    assert_int_equal(mkfifo(fifo, 0600), 0); /* no writer: a blocking open would hang */
    assert_int_equal(hbm_fleet_read_secret(fifo, true, &s, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));
    assert_int_equal(hbm_fleet_read_secret(dir, true, &s, &err), -1);
    assert_int_equal(hbm_fleet_read_secret("/dev/zero", true, &s, &err), -1);
    FILE *fp = fopen(path, "w");
    for (int i = 0; i < 70000; i++)
        fputc('a', fp);
    fclose(fp);
    assert_int_equal(hbm_fleet_read_secret(path, true, &s, &err), -1);
    assert_non_null(strstr(err.msg, "larger than"));
    unlink(path);
    unlink(fifo);
    rmdir(dir);
}

/* RFC 7617 section 2: a user-id holds no ':' and no control character; a secret is wiped
 * before it is freed. */
static void test_user_and_wipe(void **state)
{
    (void)state;
    assert_true(hbm_fleet_user_ok("grafana.reader"));
    assert_true(hbm_fleet_user_ok(""));
    assert_false(hbm_fleet_user_ok("a:b"));
    assert_false(hbm_fleet_user_ok("a\r\nX-Forged: 1"));
    assert_false(hbm_fleet_user_ok("del\x7f"));
    char *s = strdup("tok-1");
    hbm_fleet_secret_free(s);
    hbm_fleet_secret_free(NULL);
}

static void test_redact(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"http://u:p@h:9090/x", "http://***@h:9090/x"},
        {"http://u:p/w@h:9090", "http://***@h:9090"},
        {"http://u:p@w@h", "http://***@h"},
        {"http://h:9090/?token=abc", "http://h:9090/?***"},
        {"http://h:9090/#frag", "http://h:9090/?***"},
        {"u:p@h", "***@h"},
        {"http://h:9090", "http://h:9090"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[128];
        hbm_fleet_redact_url(cases[i][0], buf, sizeof buf);
        assert_string_equal(buf, cases[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decoded),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_cut_utf8),
        cmocka_unit_test(test_secret),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_user_and_wipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
