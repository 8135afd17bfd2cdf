/* Every failure entry of the shipped catalogue against real log excerpts
 * (tests/fixtures/logs/sig/<id>.log, from research/error-signatures.md and the field
 * notes) and a variant with other numbers (<id>.variant.log): the entry is found, on the
 * right line, with the right captures. expect.tsv lists what each file must give; an entry
 * without both files fails the coverage test, so a new signature cannot ship untested. */
#include <math.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/explain.h"

#define SIGDIR HBM_SOURCE_DIR "/tests/fixtures/logs/sig"
#define CATALOG HBM_SOURCE_DIR "/data/signatures.json"

static hbm_catalog *cat;

static int setup(void **state)
{
    (void)state;
    hbm_err err = {{0}};
    if (hbm_explain_catalog_load(CATALOG, &cat, &err) < 0) {
        fprintf(stderr, "catalogue: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    hbm_explain_catalog_free(cat);
    return 0;
}

typedef struct row {
    char file[128];
    char id[64];
    unsigned long line;
    char nums[512];
} row;

static size_t read_rows(row *rows, size_t max)
{
    FILE *f = fopen(SIGDIR "/expect.tsv", "r");
    assert_non_null(f);
    char buf[1024];
    size_t n = 0;
    while (fgets(buf, sizeof buf, f)) {
        if (buf[0] == '#' || buf[0] == '\n')
            continue;
        buf[strcspn(buf, "\n")] = '\0';
        assert_true(n < max);
        row *r = &rows[n];
        memset(r, 0, sizeof *r);
        char *save = NULL;
        char *a = strtok_r(buf, "\t", &save), *b = strtok_r(NULL, "\t", &save),
             *c = strtok_r(NULL, "\t", &save), *d = strtok_r(NULL, "\t", &save);
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(c);
        snprintf(r->file, sizeof r->file, "%s", a);
        snprintf(r->id, sizeof r->id, "%s", b);
        r->line = strtoul(c, NULL, 10);
        snprintf(r->nums, sizeof r->nums, "%s", d ? d : "");
        n++;
    }
    fclose(f);
    return n;
}

static void scan_fixture(const char *file, hbm_explain_report *rep)
{
    char path[PATH_MAX];
    assert_true(snprintf(path, sizeof path, "%s/%s", SIGDIR, file) < PATH_MAX);
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, path, rep, &err), 0);
}

static const hbm_explain_finding *find(const hbm_explain_report *rep, const char *id)
{
    for (size_t i = 0; i < rep->nfindings; i++)
        if (strcmp(rep->findings[i].sig->id, id) == 0)
            return &rep->findings[i];
    return NULL;
}

static void test_every_fixture(void **state)
{
    (void)state;
    static row rows[400];
    size_t n = read_rows(rows, 400);
    assert_true(n > 0);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        hbm_explain_report rep;
        scan_fixture(rows[i].file, &rep);
        const hbm_explain_finding *f = find(&rep, rows[i].id);
        if (!f) {
            fprintf(stderr, "%s: no finding '%s'\n", rows[i].file, rows[i].id);
            failures++;
            hbm_explain_report_free(&rep);
            continue;
        }
        if (f->line != rows[i].line) {
            fprintf(stderr, "%s: '%s' on line %llu, expected %lu\n", rows[i].file, rows[i].id,
                    (unsigned long long)f->line, rows[i].line);
            failures++;
        }
        if (f->nremedies == 0 || !f->sig->cause) {
            fprintf(stderr, "%s: '%s' without cause or remedies\n", rows[i].file, rows[i].id);
            failures++;
        }
        char nums[512];
        snprintf(nums, sizeof nums, "%s", rows[i].nums);
        char *save = NULL;
        for (char *kv = strtok_r(nums, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(kv, '=');
            assert_non_null(eq);
            *eq = '\0';
            const hbm_explain_num *num = hbm_explain_finding_num(f, kv);
            if (!num || strcmp(num->text, eq + 1) != 0) {
                fprintf(stderr, "%s: '%s' capture %s = '%s', expected '%s'\n", rows[i].file,
                        rows[i].id, kv, num ? num->text : "(none)", eq + 1);
                failures++;
            }
        }
        /* A capture that reads as a number must have a value: templates depend on it. */
        for (size_t k = 0; k < f->nnums; k++)
            if (strspn(f->nums[k].text, "0123456789.,") == strlen(f->nums[k].text) &&
                strchr("0123456789", f->nums[k].text[0]) && strchr(f->nums[k].text, '.') ==
                strrchr(f->nums[k].text, '.') && isnan(f->nums[k].value)) {
                fprintf(stderr, "%s: capture %s has no value\n", rows[i].file, f->nums[k].name);
                failures++;
            }
        hbm_explain_report_free(&rep);
    }
    assert_int_equal(failures, 0);
}

static void test_every_entry_has_fixtures(void **state)
{
    (void)state;
    static row rows[400];
    size_t n = read_rows(rows, 400);
    int missing = 0;
    for (size_t i = 0; i < hbm_explain_catalog_size(cat); i++) {
        const hbm_sig *s = hbm_explain_catalog_get(cat, i);
        if (strcmp(s->kind, "failure") != 0)
            continue;
        char real[128], variant[128];
        snprintf(real, sizeof real, "%s.log", s->id);
        snprintf(variant, sizeof variant, "%s.variant.log", s->id);
        bool has_real = false, has_variant = false;
        for (size_t k = 0; k < n; k++) {
            if (strcmp(rows[k].id, s->id) != 0)
                continue;
            has_real |= strcmp(rows[k].file, real) == 0;
            has_variant |= strcmp(rows[k].file, variant) == 0;
        }
        if (!has_real || !has_variant) {
            fprintf(stderr, "entry '%s' lacks %s\n", s->id, has_real ? variant : real);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

/* The variant must differ from the real excerpt in its numbers, or it proves nothing. */
static void test_variants_differ(void **state)
{
    (void)state;
    static row rows[400];
    size_t n = read_rows(rows, 400);
    for (size_t i = 0; i < n; i++) {
        if (!strstr(rows[i].file, ".variant.log"))
            continue;
        char real[PATH_MAX], var[PATH_MAX];
        assert_true(snprintf(real, sizeof real, "%s/%s.log", SIGDIR, rows[i].id) < PATH_MAX);
        assert_true(snprintf(var, sizeof var, "%s/%s", SIGDIR, rows[i].file) < PATH_MAX);
        char *a = NULL, *b = NULL;
        assert_int_equal(hbm_read_file(real, 1 << 20, &a, NULL, NULL), 0);
        assert_int_equal(hbm_read_file(var, 1 << 20, &b, NULL, NULL), 0);
        if (strcmp(a, b) == 0)
            fail_msg("%s is the same text as the real excerpt", rows[i].file);
        free(a);
        free(b);
    }
}

/* The first finding is the one to act on: a summary comes after the cause printed with it.
 * Real excerpts where the summary's line is the first known one. */
static void test_summary_after_its_cause(void **state)
{
    (void)state;
    static const struct {
        const char *file, *first, *summary;
    } cases[] = {
        /* "EngineCore failed to start." logged before the traceback (vLLM V1) */
        {"nccl_internal_error.variant.log", "nccl_internal_error", "vllm_engine_start_failed"},
        {"vllm_no_kv_cache_blocks.shared_device.variant.log", "vllm_no_kv_cache_blocks",
         "vllm_engine_start_failed"},
        /* torch_npu's follow-on 107002 before the code that caused it */
        {"acl_soc_version_507008.log", "acl_soc_version_507008", "acl_context_null_107002"},
        /* "PTA call acl api failed" before the CANN block */
        {"ascend_op_compile_failed.log", "ascend_op_compile_failed", "ascend_op_inner_error"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hbm_explain_report rep;
        scan_fixture(cases[i].file, &rep);
        const hbm_explain_finding *summary = find(&rep, cases[i].summary);
        assert_non_null(summary);
        assert_true(rep.nfindings >= 2);
        if (strcmp(rep.findings[0].sig->id, cases[i].first) != 0)
            fail_msg("%s: first finding '%s', expected '%s'", cases[i].file,
                     rep.findings[0].sig->id, cases[i].first);
        assert_true(summary->line < rep.findings[0].line);
        hbm_explain_report_free(&rep);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_fixture),
        cmocka_unit_test(test_every_entry_has_fixtures),
        cmocka_unit_test(test_variants_differ),
        cmocka_unit_test(test_summary_after_its_cause),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
