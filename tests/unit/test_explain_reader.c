/* The log reader: container-log decoration, streaming across chunk boundaries, cut
 * lines, grouping of repeats, healthy and unknown logs, and the lines of a
 * reported `docker rm -f` case explained with their own numbers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hbm/explain.h"

#define LOGS HBM_SOURCE_DIR "/tests/fixtures/logs"

#include "explain_fixture.h"

static void scan_text(const char *text, size_t chunk, hbm_explain_report *rep)
{
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    size_t n = strlen(text);
    for (size_t off = 0; off < n; off += chunk)
        hbm_explain_scanner_feed(s, text + off, n - off < chunk ? n - off : chunk);
    hbm_explain_scanner_finish(s, rep);
    hbm_explain_scanner_free(s);
}

static char *clean(const char *in, bool *partial)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s", in);
    size_t n = hbm_explain_clean_line(buf, strlen(buf), partial);
    assert_int_equal(n, strlen(buf));
    return buf;
}

static void test_clean_line(void **state)
{
    (void)state;
    bool partial;
    assert_string_equal(clean("\033[1;31mERROR\033[0m boom", &partial), "ERROR boom");
    assert_false(partial);
    assert_string_equal(clean("2024-08-03T02:38:39.123456789Z stdout F hello", &partial), "hello");
    assert_false(partial);
    assert_string_equal(clean("2024-08-03T02:38:39.123456789Z stderr P part", &partial), "part");
    assert_true(partial);
    assert_string_equal(clean("2024-08-03T02:38:39.5+08:00 docker line", &partial), "docker line");
    assert_string_equal(clean("2024-08-03T02:38:39Z x", &partial), "x");
    /* An application's own "date time" prefix is content, not decoration. */
    assert_string_equal(clean("2024-08-03 02:38:39,123 - ERROR - x", &partial),
                        "2024-08-03 02:38:39,123 - ERROR - x");
    assert_string_equal(clean("windows line\r", &partial), "windows line");
    assert_string_equal(clean("\033]0;title\007text", &partial), "text");
    assert_string_equal(clean("2024-13", &partial), "2024-13");
    assert_string_equal(clean("", &partial), "");
}

static void test_docker_rm_log_explained(void **state)
{
    (void)state;
    hbm_explain_report rep;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/vllm_after_docker_rm.log", &rep, &err), 0);
    assert_int_equal(rep.nfindings, 4);

    const hbm_explain_finding *reset = find(&rep, "connection_reset");
    assert_non_null(reset);
    assert_int_equal(reset->line, 1);

    const hbm_explain_finding *fm = find(&rep, "vllm_startup_free_memory");
    assert_non_null(fm);
    assert_int_equal(fm->line, 2);
    assert_true(any_contains(fm->meaning, fm->nmeaning, "16.58 GiB free of 43.24 GiB"));
    assert_true(any_contains(fm->meaning, fm->nmeaning, "36.75 GiB = 0.85 x 43.24 GiB"));
    assert_true(any_contains(fm->meaning, fm->nmeaning, "held 26.66 GiB"));
    assert_true(any_contains(fm->meaning, fm->nmeaning, "passes now is 0.38"));
    assert_true(any_contains(fm->remedies, fm->nremedies, "to 0.38 or less"));
    assert_non_null(strstr(fm->sig->cause, "fragmentation is not the reason"));

    const hbm_explain_finding *oom = find(&rep, "npu_oom");
    assert_non_null(oom);
    assert_int_equal(oom->line, 3);
    const hbm_explain_num *want = hbm_explain_finding_num(oom, "want");
    assert_non_null(want);
    assert_true(fabs(want->value - 136.0 * 1024 * 1024) < 1);
    assert_true(any_contains(oom->meaning, oom->nmeaning, "only 136.00 MiB"));

    /* The context overflow: chunk the retrieval documents before raising the context. */
    const hbm_explain_finding *ctx = find(&rep, "prompt_exceeds_context");
    assert_non_null(ctx);
    assert_int_equal(ctx->line, 4);
    assert_true(any_contains(ctx->meaning, ctx->nmeaning, "2107 over the context of 4096"));
    assert_true(ctx->nremedies >= 2);
    assert_non_null(strstr(ctx->remedies[0], "chunk"));
    size_t raise = ctx->nremedies;
    for (size_t i = 0; i < ctx->nremedies; i++)
        if (strstr(ctx->remedies[i], "raise --max-model-len") && raise == ctx->nremedies)
            raise = i;
    assert_in_range(raise, 1, ctx->nremedies - 1);
    hbm_explain_report_free(&rep);
}

static void test_healthy_log_has_no_finding(void **state)
{
    (void)state;
    hbm_explain_report rep;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/vllm_healthy.log", &rep, &err), 0);
    for (size_t i = 0; i < rep.nfindings; i++)
        fprintf(stderr, "unexpected: %s at %llu\n", rep.findings[i].sig->id,
                (unsigned long long)rep.findings[i].line);
    assert_int_equal(rep.nfindings, 0);
    /* The allocator's "can be ignored" ERROR line is benign, not an error line. */
    assert_int_equal(rep.ntail, 0);
    const hbm_explain_fact *port = hbm_explain_report_fact(&rep, "port");
    assert_non_null(port);
    assert_string_equal(port->text, "8000");
    const hbm_explain_fact *tp = hbm_explain_report_fact(&rep, "tp");
    assert_non_null(tp);
    assert_string_equal(tp->text, "2");
    assert_int_equal(rep.lines, 22);
    hbm_explain_report_free(&rep);
}

static void test_container_log(void **state)
{
    (void)state;
    hbm_explain_report rep;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/cri_ansi.log", &rep, &err), 0);
    const hbm_explain_finding *fm = find(&rep, "vllm_startup_free_memory");
    assert_non_null(fm);
    assert_int_equal(fm->line, 2);
    assert_true(hbm_str_starts(fm->text, "(EngineCore pid=344) ERROR 08-03"));
    /* The OOM was split into two CRI records; it is matched whole, at its first line. */
    const hbm_explain_finding *oom = find(&rep, "npu_oom");
    assert_non_null(oom);
    assert_int_equal(oom->line, 3);
    assert_string_equal(hbm_explain_finding_num(oom, "want")->text, "136.00 MiB");
    const hbm_explain_finding *refused = find(&rep, "connection_refused");
    assert_non_null(refused);
    assert_int_equal(refused->line, 5);
    assert_string_equal(hbm_explain_finding_num(refused, "port")->text, "18019");
    hbm_explain_report_free(&rep);
}

/* Feeding the same log in 1-byte, 7-byte and whole chunks gives the same report. */
static void test_chunking_does_not_matter(void **state)
{
    (void)state;
    char *text = NULL;
    assert_int_equal(
        hbm_read_file(LOGS "/vllm_after_docker_rm.log", 1 << 20, &text, NULL, NULL), 0);
    hbm_explain_report whole;
    scan_text(text, strlen(text), &whole);
    size_t chunks[] = {1, 7, 4096};
    for (size_t c = 0; c < 3; c++) {
        hbm_explain_report rep;
        scan_text(text, chunks[c], &rep);
        assert_int_equal(rep.nfindings, whole.nfindings);
        assert_int_equal(rep.lines, whole.lines);
        for (size_t i = 0; i < rep.nfindings; i++) {
            assert_string_equal(rep.findings[i].sig->id, whole.findings[i].sig->id);
            assert_int_equal(rep.findings[i].line, whole.findings[i].line);
            assert_string_equal(rep.findings[i].text, whole.findings[i].text);
        }
        hbm_explain_report_free(&rep);
    }
    hbm_explain_report_free(&whole);
    free(text);
}

/* Keywords and error words cut by escape sequences, CR, NUL or CRI partial records are
 * found when whole buffers are read as when every line takes the full path (1-byte chunks). */
static void test_prefilter_reads_as_the_cleaner(void **state)
{
    (void)state;
    static const char text[] =
        "INFO healthy line\n"
        "RuntimeError: NPU out\x1b[31m of mem\x1b[0mory. Tried to allocate 136.00 MiB\n"
        "OSError: [Errno 98] Address\x1b]0;title\x07 already in use\r\n"
        "2024-08-03T02:38:39.1Z stdout P RuntimeError: NPU out of \n"
        "2024-08-03T02:38:39.2Z stdout F memory. Tried to allocate 2.00 GiB\n"
        "some Err\x1b" "cor happened\n"
        "INFO ok\rdone\n"
        "warn: pan\x1b]8;;x\x1b\\ic now\n"
        "warn: timed\0out\n"
        "INFO tail without newline";
    size_t n = sizeof text - 1;
    hbm_explain_report rep[2];
    size_t chunks[] = {n, 1};
    for (size_t c = 0; c < 2; c++) {
        hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
        for (size_t off = 0; off < n; off += chunks[c])
            hbm_explain_scanner_feed(s, text + off, n - off < chunks[c] ? n - off : chunks[c]);
        hbm_explain_scanner_finish(s, &rep[c]);
        hbm_explain_scanner_free(s);
    }
    const hbm_explain_finding *oom = find(&rep[0], "npu_oom");
    assert_non_null(oom);
    assert_int_equal(oom->count, 2);
    assert_non_null(find(&rep[0], "address_in_use"));
    assert_int_equal(rep[0].ntail, 3);
    assert_int_equal(rep[0].lines, 10);
    assert_int_equal(rep[0].nfindings, rep[1].nfindings);
    assert_int_equal(rep[0].lines, rep[1].lines);
    for (size_t i = 0; i < rep[0].nfindings; i++) {
        assert_string_equal(rep[0].findings[i].sig->id, rep[1].findings[i].sig->id);
        assert_int_equal(rep[0].findings[i].count, rep[1].findings[i].count);
        assert_string_equal(rep[0].findings[i].text, rep[1].findings[i].text);
    }
    assert_int_equal(rep[0].ntail, rep[1].ntail);
    for (size_t i = 0; i < rep[0].ntail; i++) {
        assert_int_equal(rep[0].tail[i].line, rep[1].tail[i].line);
        assert_string_equal(rep[0].tail[i].text, rep[1].tail[i].text);
    }
    hbm_explain_report_free(&rep[0]);
    hbm_explain_report_free(&rep[1]);
}

static void test_repeats_grouped(void **state)
{
    (void)state;
    const char *log = "start\n"
                      "RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB\n"
                      "retrying\n"
                      "RuntimeError: NPU out of memory. Tried to allocate 44.00 MiB\n"
                      "RuntimeError: NPU out of memory. Tried to allocate 88.00 MiB";
    hbm_explain_report rep;
    scan_text(log, strlen(log), &rep);
    assert_int_equal(rep.nfindings, 1);
    assert_int_equal(rep.findings[0].count, 3);
    assert_int_equal(rep.findings[0].line, 2);
    assert_int_equal(rep.findings[0].last_line, 5);
    /* The numbers are the first occurrence's. */
    assert_string_equal(hbm_explain_finding_num(&rep.findings[0], "want")->text, "22.00 MiB");
    assert_int_equal(rep.lines, 5);
    hbm_explain_report_free(&rep);
}

/* A line over the limit is cut: what fits is matched, the rest skipped, and the next line
 * keeps its number. Memory stays bounded whatever the line length. */
static void test_long_lines_cut(void **state)
{
    (void)state;
    size_t big = HBM_EXPLAIN_LINE_MAX * 3;
    char *log = malloc(2 * big + 400);
    assert_non_null(log);
    size_t n = 0;
    n += (size_t)sprintf(log + n, "RuntimeError: NPU out of memory. Tried to allocate 1.00 GiB ");
    memset(log + n, 'x', big);
    n += big;
    n += (size_t)sprintf(log + n, " Connection reset by peer\n");
    memset(log + n, 'y', big);
    n += big;
    n += (size_t)sprintf(log + n, "\nOSError: [Errno 98] Address already in use\n");
    log[n] = '\0';
    hbm_explain_report rep;
    scan_text(log, 65536, &rep);
    assert_int_equal(rep.lines, 3);
    assert_int_equal(rep.cut_lines, 2);
    assert_non_null(find(&rep, "npu_oom"));
    assert_null(find(&rep, "connection_reset")); /* past the cut */
    const hbm_explain_finding *inuse = find(&rep, "address_in_use");
    assert_non_null(inuse);
    assert_int_equal(inuse->line, 3);
    assert_true(strlen(find(&rep, "npu_oom")->text) <= 2048);
    hbm_explain_report_free(&rep);
    free(log);
}

static void test_unknown_log_keeps_error_lines(void **state)
{
    (void)state;
    hbm_explain_report rep;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/unknown.log", &rep, &err), 0);
    assert_int_equal(rep.nfindings, 0);
    assert_int_equal(rep.ntail, 2);
    assert_int_equal(rep.tail[0].line, 2);
    assert_string_equal(rep.tail[0].text, "Traceback (most recent call last):");
    assert_int_equal(rep.tail[1].line, 5);
    hbm_explain_report_free(&rep);

    /* Only the last HBM_EXPLAIN_TAIL are kept, oldest first. */
    char log[4096] = "";
    for (int i = 1; i <= 20; i++)
        snprintf(log + strlen(log), sizeof log - strlen(log), "error number %d\nfine\n", i);
    scan_text(log, strlen(log), &rep);
    assert_int_equal(rep.ntail, HBM_EXPLAIN_TAIL);
    assert_string_equal(rep.tail[HBM_EXPLAIN_TAIL - 1].text, "error number 20");
    assert_int_equal(rep.tail[0].line, 2 * (20 - HBM_EXPLAIN_TAIL + 1) - 1);
    hbm_explain_report_free(&rep);
}

static void test_missing_file(void **state)
{
    (void)state;
    hbm_explain_report rep;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/does-not-exist.log", &rep, &err), -1);
    assert_non_null(strstr(err.msg, "does-not-exist.log"));
}

/* The port the log's server used is a fact templates can compare with the client's. */
static void test_port_slip_from_the_log(void **state)
{
    (void)state;
    const char *log = "vllm serve /data --port 6017 --served-model-name q\n"
                      "curl: (7) Failed to connect to 127.0.0.1 port 18019: Connection refused\n";
    hbm_explain_report rep;
    scan_text(log, strlen(log), &rep);
    const hbm_explain_finding *f = find(&rep, "connection_refused");
    assert_non_null(f);
    assert_true(any_contains(f->meaning, f->nmeaning, "port as 6017, but the client used 18019"));
    hbm_explain_report_free(&rep);

    const char *same = "vllm serve /data --port 8000\n"
                       "curl: (7) Failed to connect to localhost port 8000: Connection refused\n";
    scan_text(same, strlen(same), &rep);
    f = find(&rep, "connection_refused");
    assert_non_null(f);
    assert_false(any_contains(f->meaning, f->nmeaning, "port slip"));
    hbm_explain_report_free(&rep);
}

/* More wordings from the research notes, one line each: id and one capture. */
static void test_other_wordings(void **state)
{
    (void)state;
    static const struct {
        const char *line, *id, *name, *text;
    } cases[] = {
        {"Cannot connect to host 127.0.0.1:8000 ssl:default [Connect call failed ('127.0.0.1', "
         "8000)]", "connection_refused", "port", "8000"},
        {"ValueError: The prompt (total length 25938) is too long to fit into the model (context "
         "length 4096). Make sure that `max_model_len` is no smaller than the number of text "
         "tokens plus multimodal tokens.", "prompt_exceeds_context", "prompt", "25938"},
        {"Free memory on device cuda:N (120.52/287.98 GiB) \xe2\x80\xa6 is less than desired GPU "
         "memory utilization", "vllm_startup_free_memory", "total", "287.98"},
        {"RuntimeError: CUDA out of memory. Tried to allocate 16.00 GiB (GPU 0; 11.93 GiB total "
         "capacity; 4.00 GiB already allocated; 7.33 GiB free; 179.00 KiB cached)", "cuda_oom",
         "reserved", "179.00 KiB"},
        {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 23.65 "
         "GiB total capacity; 10.01 GiB already allocated; 3.06 MiB free; 11.93 GiB allowed; "
         "10.92 GiB reserved in total by PyTorch)", "cuda_oom", "allowed", "11.93 GiB"},
        {"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 MiB. GPU 0 has a "
         "total capacity of 255.98 GiB of which 244.65 GiB is free. 1.05 GiB allowed; Of the "
         "allocated memory 1017.01 MiB is allocated by PyTorch, with 17.00 MiB allocated in "
         "private pools (e.g., HIP Graphs), and 54.99 MiB is reserved by PyTorch but unallocated.",
         "cuda_oom", "unallocated", "54.99 MiB"},
        {"torch.OutOfMemoryError: NPU out of memory. Tried to allocate 72.00 MiB (NPU 0; 61.27 GiB "
         "total capacity; 56.05 GiB already allocated; 56.05 GiB current active; 5.04 MiB free; "
         "58.39 GiB reserved in total by PyTorch).If reserved memory is >> allocated memory try "
         "setting max_split_size_mb to avoid fragmentation.", "npu_oom", "reserved", "58.39 GiB"},
        {"ValueError: This model's maximum context length is 16384 tokens. However, you requested "
         "10000 output tokens and your prompt contains at least 112947 input tokens, for a total "
         "of at least 122947 tokens.", "prompt_exceeds_context", "prompt", "112947"},
        {"HCCL function error : hcclCommInitRootInfoConfig(...),error code is 1", "hccl_init_failed",
         "code", "1"},
        {"nvidia-container-cli: initialization error: nvml error: driver/library version "
         "mismatch: unknown", "nvml_driver_mismatch", NULL, NULL},
        {"Communication_Error_Get_Socket(EI0006): Getting socket times out.", "hccl_socket_timeout",
         NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char log[2048];
        snprintf(log, sizeof log, "%s\n", cases[i].line);
        hbm_explain_report rep;
        scan_text(log, strlen(log), &rep);
        const hbm_explain_finding *f = find(&rep, cases[i].id);
        if (!f)
            fail_msg("case %zu: no %s", i, cases[i].id);
        if (cases[i].name) {
            const hbm_explain_num *n = hbm_explain_finding_num(f, cases[i].name);
            if (!n || strcmp(n->text, cases[i].text) != 0)
                fail_msg("case %zu: %s = %s", i, cases[i].name, n ? n->text : "(none)");
        }
        hbm_explain_report_free(&rep);
    }
}

/* The catalogue's findings of a log in reading order, as "id@line numbers...;" for
 * comparison (the vendors' code tables read lines as they are, never joined ones). */
static void findings_text(const char *text, size_t chunk, bool lines, char *out, size_t size)
{
    hbm_explain_report rep;
    scan_text(text, chunk, &rep);
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < rep.nfindings && n < size; i++) {
        const hbm_explain_finding *f = &rep.findings[i];
        if ((size_t)(f->sig - hbm_explain_catalog_get(cat, 0)) >= hbm_explain_catalog_size(cat))
            continue;
        n += (size_t)snprintf(out + n, size - n, "%s@%llu", f->sig->id,
                              lines ? (unsigned long long)f->line : 0ULL);
        for (size_t k = 0; k < f->nnums && n < size; k++)
            n += (size_t)snprintf(out + n, size - n, " %s=%s", f->nums[k].name, f->nums[k].text);
        n += n < size ? (size_t)snprintf(out + n, size - n, ";") : 0;
    }
    hbm_explain_report_free(&rep);
}

static char *read_log(const char *path)
{
    char *text = NULL;
    assert_int_equal(hbm_read_file(path, 1 << 20, &text, NULL, NULL), 0);
    return text;
}

/* A terminal or a page that wraps at a fixed width cuts every long line at that column, the
 * only keyword too ("wai|t socket establish timeout"): a real excerpt cut at 80 and at 120
 * columns gives the findings of the excerpt, with their numbers, read in buffers as line by
 * line; lines that are naturally of one length (healthy start-ups with runs of such lines)
 * are not joined into a finding. */
static void test_hard_wrap(void **state)
{
    (void)state;
    char want[4096], got[4096];
    char *text = read_log(LOGS "/sig/hccl_link_establish_timeout.log");
    findings_text(text, strlen(text), false, want, sizeof want);
    free(text);
    if (!strstr(want, "hccl_link_establish_timeout@0 rank=12 role=1 timeout=120;"))
        fail_msg("%s", want);
    static const char *const cut[] = {LOGS "/sig/hccl_link_establish_timeout.cut80.log",
                                      LOGS "/sig/hccl_link_establish_timeout.cut120.log"};
    for (size_t i = 0; i < 2; i++) {
        text = read_log(cut[i]);
        for (size_t chunk = 1; chunk <= 4096; chunk *= 4096) {
            findings_text(text, chunk, false, got, sizeof got);
            if (strcmp(got, want) != 0)
                fail_msg("%s (chunks of %zu):\n  %s\nnot\n  %s", cut[i], chunk, got, want);
        }
        free(text);
    }
    static const char *const healthy[] = {
        LOGS "/healthy/vllm-0.10.1-tp2-ray-two-nodes.log",
        LOGS "/healthy/vllm-ascend-2026-09-startup-complete.log",
        LOGS "/healthy/vllm-ascend-0.11.0rc0-workers-kv.log",
        LOGS "/healthy/sglang-2025-10-tp8-memory-pool.log"};
    for (size_t i = 0; i < sizeof healthy / sizeof healthy[0]; i++) {
        text = read_log(healthy[i]);
        size_t runs = 0, prev = 0;
        for (const char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
            size_t n = (size_t)(nl - p);
            runs += n >= 80 && n == prev && nl[-1] != ' ';
            prev = n;
        }
        assert_true(runs > 0); /* the case this checks is in the log */
        hbm_explain_report rep;
        scan_text(text, strlen(text), &rep);
        if (rep.nfindings || rep.structure.error)
            fail_msg("%s: %s", healthy[i], rep.nfindings ? rep.findings[0].sig->id : rep.structure.error);
        hbm_explain_report_free(&rep);
        free(text);
    }
}

static void test_json_contract(void **state)
{
    (void)state;
    hbm_explain_report rep;
    hbm_err err = {{0}};
    assert_int_equal(hbm_explain_scan_path(cat, LOGS "/vllm_after_docker_rm.log", &rep, &err), 0);
    json_t *j = hbm_explain_report_json(&rep);
    json_t *fs = json_object_get(j, "findings");
    assert_int_equal(json_array_size(fs), 4);
    json_t *f = json_array_get(fs, 1);
    const char *keys[] = {"id", "line", "text", "cause", "remedies", "live", "count",
                          "last_line", "numbers"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_non_null(json_object_get(f, keys[i]));
    assert_true(json_is_null(json_object_get(f, "live")));
    json_t *nums = json_object_get(f, "numbers");
    /* Sizes in bytes (docs/snapshot.md): 43.24 GiB. */
    assert_int_equal(json_integer_value(json_object_get(nums, "total")),
                     (json_int_t)llround(43.24 * 1024 * 1024 * 1024));
    assert_true(fabs(json_real_value(json_object_get(nums, "util")) - 0.85) < 1e-9);
    char *dump = json_dumps(j, 0);
    assert_non_null(dump);
    free(dump);
    json_decref(j);
    hbm_explain_report_free(&rep);

    /* Invalid UTF-8 in a log still gives valid JSON: the bytes as visible escapes. */
    const char *bad = "Recv failure: Connection reset by peer \xff\xfe\n";
    scan_text(bad, strlen(bad), &rep);
    j = hbm_explain_report_json(&rep);
    dump = json_dumps(j, 0);
    assert_non_null(dump);
    assert_non_null(strstr(dump, "peer \\\\xff\\\\xfe"));
    free(dump);
    json_decref(j);
    hbm_explain_report_free(&rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_line),
        cmocka_unit_test(test_docker_rm_log_explained),
        cmocka_unit_test(test_healthy_log_has_no_finding),
        cmocka_unit_test(test_container_log),
        cmocka_unit_test(test_chunking_does_not_matter),
        cmocka_unit_test(test_repeats_grouped),
        cmocka_unit_test(test_long_lines_cut),
        cmocka_unit_test(test_unknown_log_keeps_error_lines),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_port_slip_from_the_log),
        cmocka_unit_test(test_other_wordings),
        cmocka_unit_test(test_json_contract),
        cmocka_unit_test(test_hard_wrap),
        cmocka_unit_test(test_prefilter_reads_as_the_cleaner),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
