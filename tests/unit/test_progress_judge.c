/* The Prometheus reader (values, labels, escapes, errors with their line), engines keyed by
 * model and engine index with other labels summed, and the decision over a sequence of
 * samples: first, progressing, within --stall, stalled, idle, work arriving after idle, a
 * counter reset. The state file round-trips and refuses what it cannot use. */
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

#include "hbm/progress.h"
#include "hbm/util.h"

static int count_samples(const hbm_prom_sample *s, void *ctx)
{
    int *n = ctx;
    if (strcmp(s->name, "x") == 0) {
        assert_int_equal(s->nlabels, 2);
        assert_string_equal(hbm_prom_label(s, "a"), "q\"b\\c\nd");
        assert_null(hbm_prom_label(s, "zz"));
    }
    (*n)++;
    return 0;
}

static void test_reader(void **state)
{
    (void)state;
    const char ok[] = "# HELP x help\n# TYPE x gauge\n\nx{a=\"q\\\"b\\\\c\\nd\",b=\"\"} 1.5 123\n"
                      "y NaN\nz{} +Inf\r\n";
    int n = 0;
    hbm_err err = {{0}};
    assert_int_equal(hbm_prom_parse(ok, sizeof ok - 1, "t", count_samples, &n, &err), 0);
    assert_int_equal(n, 3);
    static const struct {
        const char *text;
        const char *want;
    } bad[] = {
        {"ok 1\n{a=\"1\"} 2\n", "t:2: metric name expected"},
        {"x{a=1} 2\n", "t:1: label value must be a quoted string"},
        {"x{a=\"1\" 2\n", "t:1: ',' or '}' expected"},
        {"x 1 2 3\n", "t:1: only a timestamp"},
        {"x one\n", "t:1: value is not a number"},
        {"x\n", "t:1: a space and the value expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = 0;
        assert_int_equal(hbm_prom_parse(bad[i].text, strlen(bad[i].text), "t", count_samples,
                                        &n, &err), -1);
        assert_non_null(strstr(err.msg, bad[i].want));
    }
}

static void read_page(const char *text, hbm_progress *out)
{
    hbm_err err = {{0}};
    assert_int_equal(hbm_progress_read(text, strlen(text), "page", out, &err), 0);
}

static void test_engines(void **state)
{
    (void)state;
    hbm_progress p;
    read_page("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2\n"
              "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 0\n"
              "vllm:num_requests_swapped{engine=\"1\",model_name=\"m\"} 3\n"
              "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 10\n"
              "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 5\n"
              "vllm:iteration_tokens_total_sum{engine=\"1\",model_name=\"m\"} 7\n"
              "sglang:num_running_reqs{model_name=\"s\",tp_rank=\"0\"} 1\n"
              "sglang:num_running_reqs{model_name=\"s\",tp_rank=\"1\"} 1\n"
              "other_metric 4\n", &p);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.e[0].engine, "0");
    assert_true(p.e[0].running == 2 && p.e[0].tokens == 15 && isnan(p.e[0].waiting));
    assert_true(p.e[1].waiting == 3 && p.e[1].tokens == 7); /* swapped; iteration sum */
    assert_string_equal(p.e[2].kind, "sglang");
    assert_true(p.e[2].running == 2 && isnan(p.e[2].tokens));
    hbm_progress_free(&p);
    read_page("# nothing an engine reports\nup 1\n", &p);
    assert_int_equal(p.n, 0);
    hbm_progress_free(&p);
}

/* One sample of a vLLM server with these gauges and token count, judged at time t. */
static const hbm_progress_engine *step(hbm_progress *track, int running, int waiting,
                                       double tokens, double t)
{
    char page[300];
    snprintf(page, sizeof page,
             "vllm:num_requests_running{model_name=\"m\"} %d\n"
             "vllm:num_requests_waiting{model_name=\"m\"} %d\n"
             "vllm:generation_tokens_total{model_name=\"m\"} %g\n", running, waiting, tokens);
    hbm_progress s;
    read_page(page, &s);
    hbm_progress_judge(track, &s, t, 10);
    assert_int_equal(track->n, 1);
    return &track->e[0];
}

static void test_decision(void **state)
{
    (void)state;
    hbm_progress tr;
    hbm_progress_init(&tr);
    const hbm_progress_engine *e = step(&tr, 3, 12, 100, 1000);
    assert_int_equal(e->state, HBM_PROGRESS_UNKNOWN);
    assert_false(e->judged);
    e = step(&tr, 3, 12, 150, 1005);
    assert_int_equal(e->state, HBM_PROGRESS_PROGRESSING);
    assert_true(e->tokens_per_s == 10);
    e = step(&tr, 3, 12, 150, 1010);
    assert_int_equal(e->state, HBM_PROGRESS_PROGRESSING); /* 5s without a token < 10s */
    e = step(&tr, 3, 12, 150, 1015);
    assert_int_equal(e->state, HBM_PROGRESS_STALLED);
    assert_true(e->stalled_for_s == 10 && e->since_token_s == 10);
    char line[200];
    hbm_progress_line(e, line, sizeof line);
    assert_string_equal(line, "stalled: 3 running, 12 waiting, no token for 10s (m)");
    e = step(&tr, 0, 0, 150, 1020);
    assert_int_equal(e->state, HBM_PROGRESS_IDLE);
    e = step(&tr, 0, 0, 150, 1100);
    assert_int_equal(e->state, HBM_PROGRESS_IDLE);
    assert_true(e->since_token_s == 95); /* still the truth, though not a stall */
    e = step(&tr, 1, 0, 150, 1101); /* work arrives: the stall clock starts now */
    assert_int_equal(e->state, HBM_PROGRESS_PROGRESSING);
    e = step(&tr, 1, 0, 150, 1110);
    assert_int_equal(e->state, HBM_PROGRESS_PROGRESSING);
    e = step(&tr, 1, 0, 150, 1111);
    assert_int_equal(e->state, HBM_PROGRESS_STALLED);
    e = step(&tr, 1, 0, 3, 1112); /* restarted: counters from zero */
    assert_int_equal(e->state, HBM_PROGRESS_PROGRESSING);
    assert_true(e->reset);
    e = step(&tr, 1, 0, 3, 1121);
    assert_int_equal(e->state, HBM_PROGRESS_PROGRESSING);
    e = step(&tr, 1, 0, 3, 1200);
    assert_int_equal(e->state, HBM_PROGRESS_STALLED);
    hbm_progress_free(&tr);
}

static void test_state_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/hbm-progress-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], why[600];
    snprintf(path, sizeof path, "%s/sub/s.json", dir);
    hbm_progress tr, back;
    hbm_progress_init(&tr);
    step(&tr, 3, 1, 42, hbm_now_wall() - 5);
    hbm_err err = {{0}};
    const char *url = "http://u:pw@h:1/metrics";
    assert_int_equal(hbm_progress_state_save(path, url, &tr, &err), 0);
    assert_int_equal(hbm_progress_state_load(path, url, &back, why, sizeof why), 0);
    assert_int_equal(back.n, 1);
    assert_true(back.e[0].tokens == 42 && back.e[0].at == tr.e[0].at);
    hbm_progress_free(&back);
    assert_int_equal(hbm_progress_state_load(path, "http://other/metrics", &back, why,
                                             sizeof why), 1);
    assert_non_null(strstr(why, "another URL"));
    FILE *f = fopen(path, "w");
    fputs("{\"schema\": \"hbmctl.progress/1\", \"url\": \"http://h:1/metrics\", \"engines\": [{}]}",
          f);
    fclose(f);
    assert_int_equal(hbm_progress_state_load(path, url, &back, why, sizeof why), 1);
    assert_non_null(strstr(why, "unusable"));
    unlink(path);
    assert_int_equal(hbm_progress_state_load(path, url, &back, why, sizeof why), 1);
    assert_string_equal(why, "no state file yet");
    hbm_progress_free(&tr);
    snprintf(path, sizeof path, "%s/sub", dir);
    rmdir(path);
    rmdir(dir);
}

static void test_urls(void **state)
{
    (void)state;
    char b[200];
    hbm_progress_url_safe("https://user:p@ss@host:8000/metrics?x=@", b, sizeof b);
    assert_string_equal(b, "https://host:8000/metrics?x=@");
    hbm_progress_url_safe("http://127.0.0.1:8000/metrics", b, sizeof b);
    assert_string_equal(b, "http://127.0.0.1:8000/metrics");
    hbm_progress_metrics_url("http://127.0.0.1:8000/health?x", b, sizeof b);
    assert_string_equal(b, "http://127.0.0.1:8000/metrics");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader),
        cmocka_unit_test(test_engines),
        cmocka_unit_test(test_decision),
        cmocka_unit_test(test_state_file),
        cmocka_unit_test(test_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
