/* The structure reader: whatever the catalogue knows, a log shows which engine ran, the
 * start-up phases it went through and how it ended. Markers are literals (the engines' own
 * log lines and, inside a traceback, the function names of each phase), so the scanner's
 * prefilter still skips every other line; the terminal error is the last exception of the
 * last traceback chain (a summary error that points above gives way to the exception
 * before it), else the first fatal line, else an exit code or a signal. Each candidate
 * carries the phase the log was in when it was printed, which is the failed phase. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain_int.h"
#include "hbm/redact.h"
#include "hbm/util.h"

#define ERR_KEEP 400

static const char *const phase_ids[HBM_EXPLAIN_PHASES] = {
    "weights", "profile_run", "kv_cache", "graph_capture", "warm_up", "serving"};
static const char *const phase_names[HBM_EXPLAIN_PHASES] = {
    "weights", "profile run", "KV cache", "graph capture", "warm-up", "serving"};

enum { PH_WEIGHTS, PH_PROFILE, PH_KV, PH_GRAPH, PH_WARMUP, PH_SERVING };
/* vLLM runs the sampler on dummy requests twice: inside the profile run, before the KV
 * cache is sized, and again in the warm-up after it (vLLM PR #14728 moved the OOM check
 * into _dummy_sampler_run for that reason). Its frame and its message name no phase of
 * their own: the phase is the profile run until the KV cache was sized, the warm-up after. */
#define PH_SAMPLER (-2)

typedef struct marker {
    const char *s;
    int phase;
} marker;

/* Log lines of vLLM (V0, V1), vllm-ascend, SGLang and MindIE, and the functions that run
 * each phase as they appear in traceback frames ("profile_run"). */
static const marker markers[] = {
    {"Starting to load model", PH_WEIGHTS},
    {"Loading safetensors checkpoint shards", PH_WEIGHTS},
    {"Loading weights took", PH_WEIGHTS},
    {"Model loading took", PH_WEIGHTS},
    {"Load weight begin", PH_WEIGHTS},
    {"Load weight end", PH_WEIGHTS},
    {"load_model", PH_WEIGHTS},
    {"load_weights", PH_WEIGHTS},
    {"_initialize_model", PH_WEIGHTS},
    {"profile_run", PH_PROFILE},
    {"determine_available_memory", PH_PROFILE},
    {"determine_num_available_blocks", PH_PROFILE},
    {"_determine_available_memory", PH_PROFILE},
    {"Memory profiling takes", PH_PROFILE},
    {"profile_max_num_token", PH_PROFILE},
    {"Available KV cache memory", PH_KV},
    {"GPU KV cache size", PH_KV},
    {"# GPU blocks", PH_KV},
    {"# NPU blocks", PH_KV},
    {"# npu blocks", PH_KV},
    {"# cuda blocks", PH_KV},
    {"initialize_kv_cache", PH_KV},
    {"_initialize_kv_caches", PH_KV},
    {"initialize_from_config", PH_KV},
    {"init_memory_pool", PH_KV},
    {"KV Cache is allocated", PH_KV},
    {"Memory pool end", PH_KV},
    {"Maximum concurrency for", PH_KV},
    {"Capturing cudagraphs", PH_GRAPH},
    {"Capturing CUDA graph", PH_GRAPH},
    {"Capturing the model for CUDA graphs", PH_GRAPH},
    {"Capture cuda graph begin", PH_GRAPH},
    {"Capture npu graph begin", PH_GRAPH},
    {"Capturing ACL graph", PH_GRAPH},
    {"Graph capturing finished", PH_GRAPH},
    {"capture_model", PH_GRAPH},
    {"init_cuda_graphs", PH_GRAPH},
    {"compile_or_warm_up_model", PH_WARMUP},
    {"_dummy_sampler_run", PH_SAMPLER},
    {"when warming up sampler", PH_SAMPLER},
    {"warm up", PH_WARMUP},
    {"Warm up", PH_WARMUP},
    {"warmup model", PH_WARMUP},
    {"Warmup failed", PH_WARMUP},
    {"in warm_up", PH_WARMUP},
    {"Uvicorn running on", PH_SERVING},
    {"Application startup complete", PH_SERVING},
    {"Starting vLLM API server", PH_SERVING},
    {"Starting vLLM server on", PH_SERVING},
    {"The server is fired up and ready to roll", PH_SERVING},
    {"Daemon start success", PH_SERVING},
};

typedef struct engine_mark {
    const char *s;
    const char *engine;
} engine_mark;

/* The later engine wins over vLLM: vllm-ascend logs through vLLM's own logger. */
static const engine_mark engine_marks[] = {
    {"vLLM API server version", "vLLM"},
    /* The start-up banner that replaced that line: its logo ends in "█  version 0.23.0". */
    {"\u2588  version ", "vLLM"},
    {"LLM engine (v", "vLLM"},
    {"vllm.entrypoints", "vLLM"},
    {"vllm_ascend", "vllm-ascend"},
    {"vllm-ascend", "vllm-ascend"},
    {"Platform plugin ascend is activated", "vllm-ascend"},
    {"sglang", "SGLang"},
    {"server_args=ServerArgs", "SGLang"},
    /* MindIE's own words, not any path that holds "mindie" (a user "mindieuser" running
     * vllm-ascend, vllm-ascend#1736) */
    {"mindie server", "MindIE"},
    {"mindie_llm", "MindIE"},
    {"mindie-service", "MindIE"},
    {"/mindie/", "MindIE"},
    {"MindIE", "MindIE"},
    {"mindieservice", "MindIE"},
};

/* Literals of exit codes and signals; the error words already bring "killed" and "core
 * dumped" lines through the prefilter. */
static const char *const exit_marks[] = {"exit code", "exitcode", "exited with", "exit status",
                                         "Signals.SIG", "by signal", "Killed", "OOMKilled",
                                         "Segmentation fault", "Aborted"};

#define N_MARKERS (sizeof markers / sizeof markers[0])
#define N_ENGINES (sizeof engine_marks / sizeof engine_marks[0])
#define N_EXITS (sizeof exit_marks / sizeof exit_marks[0])
#define T_ENGINE 1000u
#define T_EXIT 2000u

/* Generic next steps for a failure in each phase (and before any, last). */
static const char *const steps[HBM_EXPLAIN_PHASES + 1][3] = {
    {"Check the model path and that every weight shard is complete and readable.",
     "Check that the engine (and transformers) version supports this model's architecture "
     "and quantization.",
     "Check that the weights fit: the model's size divided by the tensor-parallel size "
     "against each device's free memory (hbmctl plan)."},
    {"The profile run measures peak activation memory with the largest batch: lower "
     "--max-num-batched-tokens or --max-model-len.",
     "Check that no other process holds memory on the devices in use (hbmctl snapshot).",
     NULL},
    {"Too little memory is left for the KV cache: lower --max-model-len or --max-num-seqs, "
     "use more devices (tensor parallelism), or a quantized KV cache.",
     "Raise the memory fraction the engine may use only if the devices are not shared.",
     NULL},
    {"Graph capture needs memory beyond the KV cache: capture fewer batch sizes "
     "(--max-num-seqs, the capture-size list) or run eager (--enforce-eager) to confirm.",
     NULL, NULL},
    {"The warm-up runs the largest batch and the sampler once: lower --max-num-seqs or "
     "--max-num-batched-tokens (MindIE: maxPrefillTokens, maxBatchSize, npuMemSize).",
     NULL, NULL},
    {"The server had started: the error came with a request or a later event; check the "
     "request before it and the devices' health (hbmctl doctor).",
     NULL, NULL},
    {"It failed before the model was loaded: check the command line, the environment "
     "(driver, visible devices, ports) and the first error lines.",
     NULL, NULL},
};

const char *hbm_explain_phase_id(int phase)
{
    return phase >= 0 && phase < HBM_EXPLAIN_PHASES ? phase_ids[phase] : "start";
}

const char *hbm_explain_phase_name(int phase)
{
    return phase >= 0 && phase < HBM_EXPLAIN_PHASES ? phase_names[phase] : "start-up";
}

size_t hbm_explain_phase_steps(int phase, const char *const **out)
{
    int row = phase >= 0 && phase < HBM_EXPLAIN_PHASES ? phase : HBM_EXPLAIN_PHASES;
    *out = steps[row];
    size_t n = 0;
    while (n < 3 && steps[row][n])
        n++;
    return n;
}

static pcre2_code *compile(const char *re)
{
    int ec;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, 0, &ec, &off, NULL);
    if (!c)
        abort(); /* a constant of this file */
    return c;
}

void expl_structure_init(expl_structure *st, expl_prefilter *pf, expl_needles *into,
                         uint32_t tag)
{
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < N_MARKERS; i++)
        expl_needles_add(into, markers[i].s, tag | (uint32_t)i);
    for (size_t i = 0; i < N_ENGINES; i++)
        expl_needles_add(into, engine_marks[i].s, tag | (T_ENGINE + (uint32_t)i));
    for (size_t i = 0; i < N_EXITS; i++)
        expl_needles_add(into, exit_marks[i], tag | (T_EXIT + (uint32_t)i));
    for (size_t i = 0; i < N_MARKERS; i++)
        expl_prefilter_add(pf, markers[i].s, strlen(markers[i].s), false);
    for (size_t i = 0; i < N_ENGINES; i++)
        expl_prefilter_add(pf, engine_marks[i].s, strlen(engine_marks[i].s), false);
    for (size_t i = 0; i < N_EXITS; i++)
        expl_prefilter_add(pf, exit_marks[i], strlen(exit_marks[i]), false);
    /* An exception as Python prints it, after any logger prefix: "ValueError: ...". */
    st->exc_re = compile("(?:^|[\\s\\]):|>])((?:[A-Za-z_]\\w*\\.)*[A-Z]\\w*(?:Error|Exception)"
                         ")(?::\\s|:?\\s*$)");
    st->exit_re = compile(
        "(?:exit(?:ed with)? code|exitcode|exit status|non-zero exit status)[:= ]*"
        "(?<code>-?\\d+)|<Signals\\.(?<sig>SIG[A-Z]+): (?<signo>\\d+)>"
        "|(?:killed|terminated) by signal:? (?<signo2>\\d+)|(?:^|[\\s:])(?<killed>Killed)(?:\\s*$|\\s{2,})"
        "|(?<segv>Segmentation fault)|(?<abrt>Aborted) \\(core dumped\\)|(?<oomk>OOMKilled)");
    st->ver_re = compile("(?:API server version |\u2588  version |LLM engine \\(v|vllm_ascend version:? |"
                         "sglang(?:==| version:? )|MindIE[ -]Service version:? )"
                         "v?(?<v>\\d+\\.\\d+[\\w.+-]*)");
    st->md = pcre2_match_data_create(12, NULL);
    if (!st->md)
        abort();
    st->cur_phase = -1;
}

void expl_structure_reset(expl_structure *st)
{
    free(st->exc.text);
    free(st->exc_root.text);
    free(st->fatal.text);
    memset(&st->exc, 0, sizeof st->exc);
    memset(&st->exc_root, 0, sizeof st->exc_root);
    memset(&st->fatal, 0, sizeof st->fatal);
    st->cur_phase = -1;
}

void expl_structure_free(expl_structure *st)
{
    pcre2_code_free(st->exc_re);
    pcre2_code_free(st->exit_re);
    pcre2_code_free(st->ver_re);
    pcre2_match_data_free(st->md);
    free(st->exc.text);
    free(st->exc_root.text);
    free(st->fatal.text);
    memset(st, 0, sizeof *st);
}

static void keep(expl_candidate *c, const char *text, size_t len, uint64_t lineno, int phase)
{
    free(c->text);
    c->text = hbm_redact_text(text, len < ERR_KEEP ? len : ERR_KEEP); /* it is printed */
    c->line = lineno;
    c->phase = phase;
}

typedef struct mark_ctx {
    expl_structure *st;
    hbm_explain_structure *out;
    uint64_t lineno;
    bool exit_seen;
} mark_ctx;

static void on_mark(void *ctx, uint32_t t)
{
    mark_ctx *m = ctx;
    if (t >= T_EXIT) {
        m->exit_seen = true;
    } else if (t >= T_ENGINE) {
        const char *e = engine_marks[t - T_ENGINE].engine;
        /* vllm-ascend is vLLM with a plugin: it overrides vLLM, never the other way. */
        if (!m->out->engine[0] || (strcmp(m->out->engine, "vLLM") == 0 && strcmp(e, "vLLM"))) {
            snprintf(m->out->engine, sizeof m->out->engine, "%s", e);
            m->out->engine_line = m->lineno;
        }
    } else {
        int p = markers[t].phase;
        if (p == PH_SAMPLER)
            p = m->st->cur_phase >= PH_KV ? PH_WARMUP : PH_PROFILE;
        if (!m->out->phase_line[p])
            m->out->phase_line[p] = m->lineno;
        m->st->cur_phase = p;
    }
}

/* Whether a short line holds word (at least two bytes): memchr for its second byte, rarer
 * than the spaces and brackets words start with, then one compare. On lines of a hundred
 * bytes this costs a fraction of memmem, whose setup dominates there (bench/explain). */
static bool has_word(const char *line, size_t len, const char *word)
{
    size_t n = strlen(word);
    if (len < n)
        return false;
    const char *end = line + len - n + 1; /* one past the last place word[1] may start */
    for (const char *p = line + 1; p < end + 1; p++) {
        p = memchr(p, word[1], (size_t)(end + 1 - p));
        if (!p)
            return false;
        if (p[-1] == word[0] && memcmp(p + 1, word + 2, n - 2) == 0)
            return true;
    }
    return false;
}

/* The log level of a logger's line, when it says the line is not an error. */
static bool quiet_level(const char *line, size_t len)
{
    static const char *const levels[] = {" INFO ", "INFO:", "[INFO]", " WARNING ", "WARNING:",
                                         "[WARNING]", "[WARN]", " DEBUG ", "[DEBUG]", "[W ",
                                         "[I ", NULL};
    size_t head = len < 120 ? len : 120;
    for (size_t i = 0; levels[i]; i++)
        if (has_word(line, head, levels[i]))
            return true;
    return strncmp(line, "INFO", 4) == 0 || strncmp(line, "WARNING", 7) == 0;
}

static bool fatal_level(const char *line, size_t len)
{
    static const char *const levels[] = {" ERROR ", "[ERROR]", "ERROR:", " CRITICAL ",
                                         "[CRITICAL]", "FATAL", "[E ", "Fatal Python error",
                                         "terminate called", NULL};
    size_t head = len < 120 ? len : 120;
    for (size_t i = 0; levels[i]; i++)
        if (has_word(line, head, levels[i]))
            return true;
    return strncmp(line, "ERROR", 5) == 0;
}

static int group_int(expl_structure *st, const char *name, const char *line, bool *set)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
    int n = pcre2_substring_number_from_name(st->exit_re, (PCRE2_SPTR)name);
    *set = n > 0 && ov[2 * n] != PCRE2_UNSET;
    if (!*set)
        return 0;
    return atoi(line + ov[2 * n]);
}

static bool group_set(expl_structure *st, const char *name)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
    int n = pcre2_substring_number_from_name(st->exit_re, (PCRE2_SPTR)name);
    return n > 0 && ov[2 * n] != PCRE2_UNSET;
}

/* An exit code or signal line: the first one that says the process did not end well. */
static void read_exit(expl_structure *st, hbm_explain_structure *out, const char *line,
                      size_t len, uint64_t lineno)
{
    if (out->exit_line || pcre2_match(st->exit_re, (PCRE2_SPTR)line, len, 0, 0, st->md, NULL) < 0)
        return;
    bool set;
    int code = group_int(st, "code", line, &set), sig = 0;
    if (set && code == 0)
        return;
    if (set)
        sig = code < 0 ? -code : code > 128 && code <= 128 + 64 ? code - 128 : 0;
    int signo = group_int(st, "signo", line, &set);
    if (set)
        sig = signo;
    signo = group_int(st, "signo2", line, &set);
    if (set)
        sig = signo;
    if (group_set(st, "killed") || group_set(st, "oomk"))
        sig = 9;
    if (group_set(st, "segv"))
        sig = 11;
    if (group_set(st, "abrt"))
        sig = 6;
    bool has_code;
    group_int(st, "code", line, &has_code);
    out->exit_code = code;
    out->has_exit_code = has_code;
    out->signal = sig;
    out->exit_line = lineno;
    out->exit_phase = st->cur_phase;
    free(out->exit_text);
    out->exit_text = hbm_redact_text(line, len < ERR_KEEP ? len : ERR_KEEP);
}

static void read_version(expl_structure *st, hbm_explain_structure *out, const char *line,
                         size_t len)
{
    if (out->version[0] || pcre2_match(st->ver_re, (PCRE2_SPTR)line, len, 0, 0, st->md, NULL) < 0)
        return;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
    size_t vl = ov[3] - ov[2];
    snprintf(out->version, sizeof out->version, "%.*s", (int)(vl < 31 ? vl : 31), line + ov[2]);
}

void expl_structure_line(expl_structure *st, hbm_explain_structure *out, const char *line,
                         size_t len, uint64_t lineno, int verdict, const uint32_t *marks,
                         size_t nmarks)
{
    mark_ctx m = {.st = st, .out = out, .lineno = lineno};
    for (size_t i = 0; i < nmarks; i++)
        on_mark(&m, marks[i]);
    if (out->engine_line == lineno)
        read_version(st, out, line, len);
    if (verdict == EXPL_LINE_BENIGN)
        return;
    /* Only the first exit and the first fatal line count: later lines skip those tests. */
    if (!out->exit_line && (m.exit_seen || has_word(line, len, "illed") || has_word(line, len, "dumped")))
        read_exit(st, out, line, len, lineno);
    bool exc_word = has_word(line, len, "Error") || has_word(line, len, "Exception");
    if ((!exc_word && st->fatal.text) || quiet_level(line, len))
        return;
    bool exc = exc_word && pcre2_match(st->exc_re, (PCRE2_SPTR)line, len, 0, 0, st->md, NULL) >= 0;
    if (exc) {
        const char *at = line + pcre2_get_ovector_pointer(st->md)[2];
        size_t rest = len - (size_t)(at - line);
        keep(&st->exc, at, rest, lineno, st->cur_phase);
        /* A summary ("see root cause above") leaves the exception before it as the cause. */
        if (verdict != EXPL_LINE_WRAPPER && !has_word(line, len, "root cause above"))
            keep(&st->exc_root, at, rest, lineno, st->cur_phase);
    }
    if (!st->fatal.text && (exc || fatal_level(line, len)))
        keep(&st->fatal, line, len, lineno, st->cur_phase);
}

void expl_structure_finish(expl_structure *st, hbm_explain_structure *out)
{
    const expl_candidate *c = NULL;
    if (st->exc_root.text)
        c = &st->exc_root;
    else if (st->exc.text)
        c = &st->exc;
    else if (st->fatal.text)
        c = &st->fatal;
    out->error_kind = c == &st->fatal ? "fatal" : c ? "exception" : NULL;
    if (c) {
        out->error = hbm_xstrdup(c->text);
        out->error_line = c->line;
        out->phase = c->phase;
    } else if (out->exit_line) {
        out->error_kind = out->signal ? "signal" : "exit";
        out->error = hbm_xstrdup(out->exit_text);
        out->error_line = out->exit_line;
        out->phase = out->exit_phase;
    } else {
        out->phase = -1;
    }
    /* The log ends in the last phase it showed when nothing failed. */
    out->reached = -1;
    for (int p = 0; p < HBM_EXPLAIN_PHASES; p++)
        if (out->phase_line[p] && (out->reached < 0 ||
                                   out->phase_line[p] >= out->phase_line[out->reached]))
            out->reached = p;
}
