/* The catalogue as data: the template language, validation errors that name the entry,
 * and where the catalogue is looked for. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hbm/explain.h"

#define CATALOG HBM_SOURCE_DIR "/data/signatures.json"

/* free=16.58 GiB, total=43.24 GiB, util=0.85, dev="cuda:0"; "gone" is known but unset. */
static bool lookup(void *ctx, const char *name, double *value, const char **text)
{
    (void)ctx;
    static const struct {
        const char *name;
        double v;
        const char *t;
    } vals[] = {{"free", 16.58 * 1073741824.0, "16.58"},
                {"total", 43.24 * 1073741824.0, "43.24"},
                {"util", 0.85, "0.85"},
                {"dev", NAN, "cuda:0"},
                {"gone", NAN, NULL}};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (strcmp(vals[i].name, name) == 0) {
            *value = vals[i].v;
            *text = vals[i].t;
            return true;
        }
    return false;
}

static double eval(const char *expr)
{
    double v = -12345;
    hbm_err err = {{0}};
    if (hbm_explain_eval(expr, lookup, NULL, &v, &err) < 0)
        fail_msg("%s: %s", expr, err.msg);
    return v;
}

static void test_expressions(void **state)
{
    (void)state;
    assert_true(fabs(eval("1 + 2 * 3") - 7) < 1e-12);
    assert_true(fabs(eval("(1 + 2) * 3") - 9) < 1e-12);
    assert_true(fabs(eval("-2 - -3") - 1) < 1e-12);
    assert_true(fabs(eval("10 / 4") - 2.5) < 1e-12);
    assert_true(fabs(eval("floor(free / total * 100) / 100") - 0.38) < 1e-12);
    assert_true(fabs(eval("util * total / GiB") - 36.754) < 1e-9);
    assert_float_equal(eval("total - free > GiB"), 1.0, 0.0);
    assert_float_equal(eval("free >= total"), 0.0, 0.0);
    assert_float_equal(eval("1 < 2 && 2 <= 2 && 3 != 4 && !(1 == 2)"), 1.0, 0.0);
    assert_float_equal(eval("0 || 1"), 1.0, 0.0);
    assert_true(fabs(eval("max(1, min(5, 3))") - 3) < 1e-12);
    assert_true(fabs(eval("abs(-2) + ceil(0.2) + round(1.6)") - 5) < 1e-12);
    /* Unknown values propagate, except where && / || are decided without them. */
    assert_true(isnan(eval("gone + 1")));
    assert_true(isnan(eval("gone > 1")));
    assert_float_equal(eval("0 && gone"), 0.0, 0.0);
    assert_float_equal(eval("1 || gone"), 1.0, 0.0);
    assert_true(isnan(eval("1 / 0")));

    const char *bad[] = {"1 +", "nosuch + 1", "(1", "1 2", "frob(1)", "min(1)", "$", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v;
        hbm_err err = {{0}};
        assert_int_equal(hbm_explain_eval(bad[i], lookup, NULL, &v, &err), -1);
        assert_string_not_equal(err.msg, "");
    }
}

static void test_render(void **state)
{
    (void)state;
    bool unknown;
    hbm_err err = {{0}};
    char *s = hbm_explain_render("{free:size} free of {total:size}; wanted {util * total:size} = "
                                 "{util} x total on {dev:text} ({free / total:pct}, "
                                 "{free / total:.3}, {7.9:int})",
                                 lookup, NULL, &unknown, &err);
    assert_non_null(s);
    assert_string_equal(s, "16.58 GiB free of 43.24 GiB; wanted 36.75 GiB = 0.85 x total on "
                           "cuda:0 (38%, 0.383, 7)");
    free(s);
    s = hbm_explain_render("{free - total:size}", lookup, NULL, &unknown, &err);
    assert_string_equal(s, "-26.66 GiB");
    free(s);
    s = hbm_explain_render("no braces", lookup, NULL, &unknown, &err);
    assert_string_equal(s, "no braces");
    free(s);
    /* A value that is not known leaves the whole template out. */
    assert_null(hbm_explain_render("x {gone} y", lookup, NULL, &unknown, &err));
    assert_true(unknown);
    assert_null(hbm_explain_render("x {gone:text} y", lookup, NULL, &unknown, &err));
    assert_true(unknown);
    const char *bad[] = {"{", "{}", "{free:bogus}", "{nosuch}", "{1 +}", "{free + 1:text}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        assert_null(hbm_explain_render(bad[i], lookup, NULL, &unknown, &err));
        assert_false(unknown);
        assert_string_not_equal(err.msg, "");
    }
}

static void test_shipped_catalogue_loads(void **state)
{
    (void)state;
    hbm_catalog *cat = NULL;
    hbm_err err = {{0}};
    if (hbm_explain_catalog_load(CATALOG, &cat, &err) < 0)
        fail_msg("%s", err.msg);
    assert_true(hbm_explain_catalog_size(cat) >= 40);
    const hbm_sig *s = hbm_explain_catalog_find(cat, "vllm_startup_free_memory");
    assert_non_null(s);
    assert_true(s->npatterns >= 2);
    assert_true(s->nproducts >= 1);
    assert_true(s->nchecks >= 1);
    assert_null(hbm_explain_catalog_find(cat, "no_such_entry"));
    const char *const *words;
    assert_true(hbm_explain_catalog_servers(cat, &words) > 0);
    assert_string_equal(words[0], "vllm");
    json_t *j = hbm_explain_catalog_json(cat);
    assert_int_equal(json_array_size(json_object_get(j, "entries")), hbm_explain_catalog_size(cat));
    json_decref(j);
    hbm_explain_catalog_free(cat);
}

static const char *HEAD = "{\"schema\": \"hbmctl.signatures/1\", \"entries\": [";
static const char *OK_ENTRY =
    "{\"id\": \"ok_one\", \"title\": \"t\", \"cause\": \"c\", \"products\": [{\"name\": \"x\", "
    "\"versions\": \"all\"}], \"keywords\": [\"boom\"], \"patterns\": [\"boom (?<n>\\\\d+)\"], "
    "\"remedies\": [\"r\"]}";

/* Loads HEAD + OK_ENTRY + "," + entry + "]}" and expects an error naming want. */
static void expect_error(const char *entry, const char *want1, const char *want2)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s,%s]}", HEAD, OK_ENTRY, entry);
    hbm_catalog *cat = NULL;
    hbm_err err = {{0}};
    int rc = hbm_explain_catalog_parse(text, strlen(text), "test.json", &cat, &err);
    if (rc == 0) {
        hbm_explain_catalog_free(cat);
        fail_msg("accepted: %s", entry);
    }
    if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2)))
        fail_msg("error '%s' lacks '%s' / '%s'", err.msg, want1, want2 ? want2 : "");
}

static void test_validation_names_the_entry(void **state)
{
    (void)state;
    const char *base = "\"title\": \"t\", \"cause\": \"c\", \"products\": [{\"name\": \"x\", "
                       "\"versions\": \"v\"}], \"remedies\": [\"r\"]";
    char e[2048];
    snprintf(e, sizeof e, "{\"id\": \"bad_re\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"ok\", \"(unclosed\"]}", base);
    expect_error(e, "entry 'bad_re'", "patterns[1]");
    snprintf(e, sizeof e, "{\"id\": \"no_pat\", %s, \"keywords\": [\"abc\"]}", base);
    expect_error(e, "entry 'no_pat'", "'patterns' is missing");
    snprintf(e, sizeof e, "{\"id\": \"bad_check\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"abc\"], \"checks\": [\"telepathy\"]}", base);
    expect_error(e, "entry 'bad_check'", "telepathy");
    snprintf(e, sizeof e, "{\"id\": \"typo_key\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"abc\"], \"remedy\": [\"x\"]}", base);
    expect_error(e, "entry 'typo_key'", "unknown key 'remedy'");
    snprintf(e, sizeof e, "{\"id\": \"bad_tmpl\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"abc (?<a>\\\\d+)\"], \"meaning\": [\"{a + b}\"]}", base);
    expect_error(e, "entry 'bad_tmpl'", "unknown name");
    snprintf(e, sizeof e, "{\"id\": \"bad_when\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"abc (?<a>\\\\d+)\"], \"meaning\": [{\"text\": \"x\", \"when\": "
                          "\"a >\"}]}", base);
    expect_error(e, "entry 'bad_when'", "when");
    snprintf(e, sizeof e, "{\"id\": \"bad_unit\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"abc (?<a>\\\\d+)\"], \"units\": {\"b\": \"GiB\"}}", base);
    expect_error(e, "entry 'bad_unit'", "'b' is not a capture");
    snprintf(e, sizeof e, "{\"id\": \"short_kw\", %s, \"keywords\": [\"ab\"], \"patterns\": "
                          "[\"ab\"]}", base);
    expect_error(e, "entry 'short_kw'", "shorter than 3");
    snprintf(e, sizeof e, "{\"id\": \"ok_one\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"abc\"]}", base);
    expect_error(e, "entry 'ok_one'", "twice");
    snprintf(e, sizeof e, "{\"id\": \"lone_after\", %s, \"keywords\": [\"abc\"], "
                          "\"patterns\": [\"abc\"], \"cause_after\": true}", base);
    expect_error(e, "entry 'lone_after'", "only on a wrapper");
    snprintf(e, sizeof e, "{\"id\": \"Bad-Id\", %s, \"keywords\": [\"abc\"], \"patterns\": "
                          "[\"abc\"]}", base);
    expect_error(e, "Bad-Id", "a-z");
    snprintf(e, sizeof e, "{\"id\": \"no_remedy\", \"title\": \"t\", \"cause\": \"c\", "
                          "\"products\": [{\"name\": \"x\", \"versions\": \"v\"}], "
                          "\"keywords\": [\"abc\"], \"patterns\": [\"abc\"]}");
    expect_error(e, "entry 'no_remedy'", "remedies");
    expect_error("{\"kind\": \"fact\"}", "entry #2", "'id' is missing");
    snprintf(e, sizeof e, "{\"id\": \"fact_nocap\", \"kind\": \"fact\", \"keywords\": "
                          "[\"abc\"], \"patterns\": [\"abc\"]}");
    expect_error(e, "entry 'fact_nocap'", "named captures");
    /* log_<name> must be a fact's capture. */
    snprintf(e, sizeof e, "{\"id\": \"bad_fact_ref\", %s, \"keywords\": [\"abc\"], "
                          "\"patterns\": [\"abc\"], \"meaning\": [\"{log_port}\"]}", base);
    expect_error(e, "entry 'bad_fact_ref'", "unknown name");

    const char *broken = "{\"schema\": \"hbmctl.signatures/1\",\n \"entries\": [}";
    hbm_catalog *cat = NULL;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_catalog_parse(broken, strlen(broken), "x.json", &cat, &err), -1);
    assert_non_null(strstr(err.msg, "x.json:2:"));
    const char *noschema = "{\"entries\": []}";
    assert_int_equal(hbm_explain_catalog_parse(noschema, strlen(noschema), "y.json", &cat, &err), -1);
    assert_non_null(strstr(err.msg, "hbmctl.signatures/1"));
}

static void test_fact_reference_accepted(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "%s%s,{\"id\": \"f\", \"kind\": \"fact\", \"keywords\": [\"--port\"], \"patterns\": "
             "[\"--port (?<port>\\\\d+)\"]},{\"id\": \"uses\", \"title\": \"t\", \"cause\": \"c\", "
             "\"products\": [{\"name\": \"x\", \"versions\": \"v\"}], \"keywords\": [\"zap\"], "
             "\"patterns\": [\"zap (?<p>\\\\d+)\"], \"remedies\": [\"r\"], \"meaning\": "
             "[{\"text\": \"server {log_port}, client {p}\", \"when\": \"log_port != p\"}]}]}",
             HEAD, OK_ENTRY);
    hbm_catalog *cat = NULL;
    hbm_err err = {{0}};
    if (hbm_explain_catalog_parse(text, strlen(text), "t.json", &cat, &err) < 0)
        fail_msg("%s", err.msg);
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    const char *log = "zap 1\nrun --port 9\n";
    hbm_explain_scanner_feed(s, log, strlen(log));
    hbm_explain_report rep;
    hbm_explain_scanner_finish(s, &rep);
    hbm_explain_scanner_free(s);
    assert_int_equal(rep.nfindings, 1);
    assert_int_equal(rep.findings[0].nmeaning, 1);
    assert_string_equal(rep.findings[0].meaning[0], "server 9, client 1");
    hbm_explain_report_free(&rep);
    hbm_explain_catalog_free(cat);
}

static void test_locate(void **state)
{
    (void)state;
    char *path = NULL;
    const char *origin = NULL;
    hbm_err err = {{0}};
    unsetenv("HBMCTL_CATALOG");
    assert_int_equal(hbm_explain_catalog_locate("/nonexistent/sig.json", &path, &origin, &err), -1);
    assert_non_null(strstr(err.msg, "--catalog /nonexistent/sig.json"));

    assert_int_equal(hbm_explain_catalog_locate(CATALOG, &path, &origin, &err), 0);
    assert_string_equal(origin, "--catalog");
    free(path);

    setenv("HBMCTL_CATALOG", "/nonexistent/env.json", 1);
    assert_int_equal(hbm_explain_catalog_locate(NULL, &path, &origin, &err), -1);
    assert_non_null(strstr(err.msg, "HBMCTL_CATALOG=/nonexistent/env.json"));
    setenv("HBMCTL_CATALOG", CATALOG, 1);
    assert_int_equal(hbm_explain_catalog_locate(NULL, &path, &origin, &err), 0);
    assert_string_equal(origin, "HBMCTL_CATALOG");
    free(path);
    unsetenv("HBMCTL_CATALOG");

    /* The test binary is not installed, so the source tree is the fallback. */
    assert_int_equal(hbm_explain_catalog_locate(NULL, &path, &origin, &err), 0);
    assert_string_equal(origin, "source tree");
    assert_string_equal(path, CATALOG);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expressions),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_shipped_catalogue_loads),
        cmocka_unit_test(test_validation_names_the_entry),
        cmocka_unit_test(test_fact_reference_accepted),
        cmocka_unit_test(test_locate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
