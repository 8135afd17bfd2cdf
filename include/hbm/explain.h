/* hbmctl explain: a catalogue of known failure signatures (data/signatures.json, data not
 * code), a streaming log scanner that finds them, and live cross-checks of each finding
 * against an observation (hbmctl(1), docs/snapshot.md).
 *
 * The catalogue holds three kinds of entries: "failure" (reported), "fact" (remembered
 * context such as the server port or the tensor-parallel size, used by live checks) and
 * "benign" (lines that look like errors but are not: they never count as error lines).
 * Patterns are PCRE2 with named captures; "meaning" and "remedies" are templates whose
 * {expr[:fmt]} parts are computed from the captured numbers (the language is described
 * in data/signatures.json's "template_help"). */
#ifndef HBM_EXPLAIN_H
#define HBM_EXPLAIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"
#include "hbm/obs.h"

/* Lines longer than this are cut (the rest up to the newline is skipped) so memory stays
 * bounded whatever the input. */
#define HBM_EXPLAIN_LINE_MAX (16 * 1024)
/* How many error-looking lines an unknown log keeps (the last ones). */
#define HBM_EXPLAIN_TAIL 8
/* A summary line ("EngineCore failed to start.") is followed by the traceback it sums up:
 * a finding this many lines after it is in its block. */
#define HBM_EXPLAIN_SUMMARY_BLOCK 20

typedef struct hbm_sig_product {
    char *name;     /* owned: "vLLM", "vllm-ascend", "torch_npu", ... */
    char *versions; /* owned: free text, e.g. ">= 0.9.1 (V1 engine)" */
} hbm_sig_product;

/* A template shown when its condition holds and every number in it is known; otherwise
 * the fallback template (if any, and if its own numbers are known) is shown instead. */
typedef struct hbm_sig_note {
    char *text;      /* owned template */
    char *when;      /* owned condition expression, NULL = always */
    char *otherwise; /* owned template ("else"), NULL = nothing */
} hbm_sig_note;

/* One catalogue entry. Every pointer is owned by the catalogue. */
typedef struct hbm_sig {
    char *id;
    char *kind;     /* failure, fact, benign */
    char *severity; /* error, warning (failures only) */
    char *title;
    char *cause; /* plain text */
    bool wrapper; /* a summary error: the root cause is another line */
    bool cause_after; /* a summary logged before the traceback that holds its cause */
    hbm_sig_product *products;
    size_t nproducts;
    char **keywords; /* literal strings; a line holds one of them before patterns run */
    size_t nkeywords;
    char **patterns; /* PCRE2 sources, tried in order; the first match wins */
    size_t npatterns;
    hbm_sig_note *meaning;
    size_t nmeaning;
    hbm_sig_note *remedies; /* in the order to try */
    size_t nremedies;
    char **checks; /* live checks: holders, port, servers, visible_devices, health */
    size_t nchecks;
    char **sources; /* where the wording comes from (URLs) */
    size_t nsources;
} hbm_sig;

typedef struct hbm_catalog hbm_catalog; /* opaque; owns its entries and compiled patterns */

/* Finds the catalogue: explicit path (--catalog), else $HBMCTL_CATALOG, else
 * <dir of the executable>/../share/hbmctl/signatures.json, else the source tree's
 * data/signatures.json. *path is owned by the caller; *origin (static text) says which.
 * Fails with every place tried. */
int hbm_explain_catalog_locate(const char *explicit_path, char **path, const char **origin,
                               hbm_err *err);
/* Loads and validates (errors name the entry id); patterns are compiled once. */
int hbm_explain_catalog_load(const char *path, hbm_catalog **out, hbm_err *err);
int hbm_explain_catalog_parse(const char *text, size_t len, const char *origin,
                              hbm_catalog **out, hbm_err *err);
void hbm_explain_catalog_free(hbm_catalog *cat);
size_t hbm_explain_catalog_size(const hbm_catalog *cat);
const hbm_sig *hbm_explain_catalog_get(const hbm_catalog *cat, size_t i);
const hbm_sig *hbm_explain_catalog_find(const hbm_catalog *cat, const char *id);
/* Words in a process's command line that mark an inference server (vllm, sglang...). */
size_t hbm_explain_catalog_servers(const hbm_catalog *cat, const char *const **words);

/* A named capture of a match. */
typedef struct hbm_explain_num {
    char name[32];
    char *text;   /* owned: the captured text as it appears */
    double value; /* number (bytes when the text or the entry's unit is a size); NAN if none */
    bool bytes;   /* value is a size in bytes */
} hbm_explain_num;

/* A remembered fact (last value seen in the log). */
typedef struct hbm_explain_fact {
    char name[32];
    char *text; /* owned */
    uint64_t line;
} hbm_explain_fact;

typedef struct hbm_explain_finding {
    const hbm_sig *sig; /* borrowed from the catalogue */
    int phase;          /* start-up phase the log was in at its first line, -1 = before any */
    uint64_t line;      /* first matching line (1-based) */
    uint64_t last_line;
    uint64_t count;     /* matching lines */
    char *text;         /* owned: the first matching line, cleaned */
    /* owned: what failed, for a code whose own line is generic (CANN's "E69999: Inner
     * Error!"): the first line of its block that says more, from the code on; NULL = none */
    char *detail;
    uint64_t detail_line;
    hbm_explain_num *nums; /* owned: captures of the first match */
    size_t nnums;
    char **meaning;  /* owned: rendered notes whose condition held and numbers were known */
    size_t nmeaning;
    char **remedies; /* owned: rendered */
    size_t nremedies;
    json_t *live;       /* owned reference: live checks, NULL when none ran */
    char **live_lines;  /* owned: the same in words */
    size_t nlive_lines;
} hbm_explain_finding;

typedef struct hbm_explain_tail_line {
    uint64_t line;
    char *text; /* owned */
} hbm_explain_tail_line;

/* Start-up phases in the order engines go through them (hbm_explain_phase_name). */
#define HBM_EXPLAIN_PHASES 6

/* What any log shows of its own structure, whatever the catalogue knows. */
typedef struct hbm_explain_structure {
    char engine[24];   /* "vLLM", "vllm-ascend", "SGLang", "MindIE"; "" unknown */
    char version[32];  /* "" unknown */
    uint64_t engine_line;
    uint64_t phase_line[HBM_EXPLAIN_PHASES]; /* first line showing each phase, 0 = none */
    int reached;       /* the latest phase the log showed, -1 = none */
    char *error;       /* owned: the terminal error, NULL when the log shows none */
    uint64_t error_line;
    const char *error_kind; /* static: exception, fatal, exit, signal, known (a finding) */
    int phase;         /* the phase it failed in, -1 = before any */
    char *exit_text;   /* owned: the first exit code or signal line, NULL = none */
    uint64_t exit_line;
    int exit_code;
    bool has_exit_code;
    int signal;        /* 0 = none */
    int exit_phase;
} hbm_explain_structure;

const char *hbm_explain_phase_id(int phase);   /* "kv_cache"; "start" for -1 */
const char *hbm_explain_phase_name(int phase); /* "KV cache"; "start-up" for -1 */
/* Generic next steps for a failure in the phase (-1: before any). */
size_t hbm_explain_phase_steps(int phase, const char *const **steps);

/* How many of the server's own processes a log names in its line prefixes. */
#define HBM_EXPLAIN_PROCS 32

/* A process of the server the log comes from, as its lines name it: vLLM prefixes each
 * line of a child process with "(EngineCore_DP0 pid=68)", "(VllmWorker rank=1 pid=9)". */
typedef struct hbm_explain_proc {
    int pid;
    char name[32]; /* "EngineCore_DP0", "VllmWorker rank=1" */
    uint64_t line; /* the first line naming it */
} hbm_explain_proc;

typedef struct hbm_explain_report {
    /* owned, in reading order: failures before warnings; a summary (wrapper) after the
     * causes printed right after it (one logged before its traceback, cause_after, after
     * every finding of that block); otherwise by first line. */
    hbm_explain_finding *findings;
    size_t nfindings;
    size_t cap_findings;
    hbm_explain_fact *facts; /* owned */
    size_t nfacts;
    size_t cap_facts;
    hbm_explain_tail_line tail[HBM_EXPLAIN_TAIL]; /* last error-looking lines, oldest first */
    size_t ntail;
    uint64_t lines;
    uint64_t bytes;
    uint64_t cut_lines; /* lines longer than HBM_EXPLAIN_LINE_MAX */
    hbm_explain_structure structure;
    hbm_explain_proc procs[HBM_EXPLAIN_PROCS]; /* the server's own, from lines read */
    size_t nprocs;
} hbm_explain_report;

/* The server's own process pid as the log names it, NULL when the log does not. */
const hbm_explain_proc *hbm_explain_report_proc(const hbm_explain_report *rep, long pid);

/* True when the log shows a failure: a catalogue finding or a terminal error. */
bool hbm_explain_report_failed(const hbm_explain_report *rep);

/* Strips ANSI escape sequences, carriage returns and container-log prefixes (RFC 3339
 * timestamps, the CRI "TIME stdout F " form) in place; returns the new length.
 * *partial is set when the CRI tag says the line continues in the next record. */
size_t hbm_explain_clean_line(char *line, size_t len, bool *partial);

/* Streaming scanner: feed any chunks, then finish. Memory stays bounded. */
typedef struct hbm_explain_scanner hbm_explain_scanner;
hbm_explain_scanner *hbm_explain_scanner_new(const hbm_catalog *cat);
void hbm_explain_scanner_feed(hbm_explain_scanner *s, const char *buf, size_t n);
/* Moves the result into *out (which the caller frees with hbm_explain_report_free). */
void hbm_explain_scanner_finish(hbm_explain_scanner *s, hbm_explain_report *out);
void hbm_explain_scanner_free(hbm_explain_scanner *s);

/* Scans a file ("-" = standard input) by streaming it. */
int hbm_explain_scan_path(const hbm_catalog *cat, const char *path, hbm_explain_report *out,
                          hbm_err *err);
void hbm_explain_report_free(hbm_explain_report *rep);

const hbm_explain_fact *hbm_explain_report_fact(const hbm_explain_report *rep,
                                                const char *name);
const hbm_explain_num *hbm_explain_finding_num(const hbm_explain_finding *f,
                                               const char *name);
/* True when a finding is a known failure of its own, not only a summary of one printed
 * elsewhere (sig->wrapper): its remedies answer, not the failing phase's next steps. */
bool hbm_explain_report_known(const hbm_explain_report *rep);

/* For the summary finding at idx (sig->wrapper): the index of the finding that is its
 * cause, the first known failure before it or in the block printed right after it
 * (within HBM_EXPLAIN_SUMMARY_BLOCK lines); -1 when the log shows none. */
long hbm_explain_root_cause(const hbm_explain_report *rep, size_t idx);

/* True when some finding asks for a live check. */
bool hbm_explain_report_wants_live(const hbm_explain_report *rep);

/* Runs each finding's live checks against obs (devices may be absent: host facts still
 * answer the port, server and holder checks). source says where obs came from. root is
 * the host root prefix ("" live) for reading a listener's process that obs lacks; NULL when
 * obs is a capture (a snapshot), so nothing is read from this host. */
void hbm_explain_live_apply(hbm_explain_report *rep, const hbm_catalog *cat,
                            const hbm_obs *obs, const char *root, const char *source);

/* JSON contract: {"findings":[{"id","line","text","cause","remedies","live",...}], ...}. */
json_t *hbm_explain_report_json(const hbm_explain_report *rep);
json_t *hbm_explain_catalog_json(const hbm_catalog *cat);

/* Template engine, exposed for validation and tests: evaluates expr over named values
 * (lookup returns false for an unknown name). Returns NAN when a value is unknown. */
typedef bool (*hbm_explain_lookup)(void *ctx, const char *name, double *value,
                                   const char **text);
int hbm_explain_eval(const char *expr, hbm_explain_lookup lookup, void *ctx, double *out,
                     hbm_err *err);
/* Renders "text {expr} text {expr:.2} {name:size} {name:text}"; returns NULL (and sets
 * *unknown) when a value in it is unknown, NULL with err on a syntax error. */
char *hbm_explain_render(const char *tmpl, hbm_explain_lookup lookup, void *ctx,
                         bool *unknown, hbm_err *err);

#endif
