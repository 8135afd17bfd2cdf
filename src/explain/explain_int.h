/* Internals shared by the explain module's files (not a public interface). */
#ifndef HBM_EXPLAIN_INT_H
#define HBM_EXPLAIN_INT_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "hbm/explain.h"

/* Loads PCRE2 (pcre.c) before the first pattern is compiled; 0, or -1 saying why. The
 * static build links it. */
#ifdef HBM_STATIC_BUILD
static inline int expl_pcre_load(hbm_err *err)
{
    (void)err;
    return 0;
}
#else
int expl_pcre_load(hbm_err *err);
#endif

/* Many literal needles found in one pass over a line: each position's two bytes index a
 * table of the needles starting with them, so a line costs about one lookup per byte
 * whatever the number of needles. */
typedef struct expl_needle {
    const char *s; /* borrowed */
    size_t n;
    int32_t next;
    uint32_t target;
    bool fold; /* ASCII case-insensitive */
} expl_needle;

typedef struct expl_needles {
    int32_t *head; /* owned: 65536 slots, -1 = none */
    uint64_t used[1024]; /* a bit per slot with a needle: 8 KiB stay in cache, head does not */
    /* Common bigrams ("er", "in") pass that gate at many positions: a second one, a bit per
     * 16-bit hash of the first four bytes of each needle of four or more, rejects most of
     * them; a slot with a shorter needle skips it. */
    uint64_t quad[1024];
    uint64_t short_used[1024];
    uint8_t lower[256];  /* ASCII folding: the index is folded, each needle says how it compares */
    expl_needle *v; /* owned */
    size_t n, cap;
    bool fold; /* the case-insensitivity of needles added by expl_needles_add */
} expl_needles;

void expl_needles_init(expl_needles *ns, bool fold);
void expl_needles_add(expl_needles *ns, const char *s, uint32_t target);
/* A needle compared as fold says, whatever the set's own default. */
void expl_needles_add_as(expl_needles *ns, const char *s, uint32_t target, bool fold);
/* Calls hit(ctx, target) for every needle found in line (a target may repeat). */
void expl_needles_scan(const expl_needles *ns, const char *line, size_t len,
                       void (*hit)(void *ctx, uint32_t target), void *ctx);
void expl_needles_free(expl_needles *ns);

/* Rejection of whole lines before the matchers (prefilter.c). */
typedef struct expl_anchor {
    const char *s; /* borrowed */
    size_t n;
    unsigned hash; /* of the last four bytes */
    bool fold;     /* ASCII case-insensitive */
    int32_t next;
} expl_anchor;

#define EXPL_PREFILTER_HEADS 4096 /* chains of needles by hash, a power of two */

typedef struct expl_prefilter {
    uint8_t bits[(1u << 18) / 8]; /* hashed last four bytes of each needle, case-folded */
    int32_t head[EXPL_PREFILTER_HEADS]; /* hash -> first needle, -1 = none */
    expl_anchor *v;               /* owned */
    size_t n, cap;
    uint8_t fold[256];
    bool all; /* a needle too short for an anchor */
} expl_prefilter;

void expl_prefilter_init(expl_prefilter *pf);
void expl_prefilter_add(expl_prefilter *pf, const char *s, size_t n, bool fold);
/* Offset of the first byte of buf, read from a line start, that ends a needle in the text
 * as cleaned or a CRI partial record's tag; n when none. Lines before the one holding it
 * cannot change the report. */
size_t expl_prefilter_next(const expl_prefilter *pf, const char *buf, size_t n);
/* Whether a needle starts before buf[cut] and ends at or after it (one that a cut there
 * split); the bytes are read as they are. */
bool expl_prefilter_spans(const expl_prefilter *pf, const char *buf, size_t n, size_t cut);
void expl_prefilter_free(expl_prefilter *pf);

typedef struct expl_unit {
    char name[32];
    double mult; /* the capture is a bare number in this unit */
} expl_unit;

/* Compiled form of one entry. */
typedef struct expl_rt {
    pcre2_code **re; /* owned, one per pattern */
    size_t nre;
    char (*names)[32]; /* owned: every capture name of the entry */
    size_t nnames;
    expl_unit *units; /* owned */
    size_t nunits;
    int kind; /* EXPL_FAILURE, EXPL_FACT, EXPL_BENIGN */
    /* A code-table entry whose line is generic ("E69999: Inner Error!"): the lines after it
     * say what failed, and the finding carries the first that does (codes.json
     * "detail_after"). */
    bool detail_after;
    const char *code; /* a code-table entry's code (its table owns it), else NULL */
} expl_rt;

enum { EXPL_FAILURE, EXPL_FACT, EXPL_BENIGN };

/* Templates name a fact remembered from the log as log_<capture>, e.g. {log_port}. */
#define EXPL_FACT_PREFIX "log_"
/* own_<capture> is 1 when the capture is a pid the log shows as the server's own process
 * (its line prefixes), 0 when not, unknown without the capture; as text, the name the
 * log gives that process: {own_pid:text}. */
#define EXPL_OWN_PREFIX "own_"

/* A vendor's code table (data/codes.json): its entries and families are catalogue
 * entries after the signatures (hbm_catalog.ncodes of them). */
typedef struct expl_code_key {
    char *key; /* owned: a code or a name */
    uint32_t entry;
} expl_code_key;

typedef struct expl_code_family {
    char *prefix; /* owned; '?' is any character */
    uint32_t entry;
} expl_code_family;

typedef struct expl_code_table {
    pcre2_code **re; /* owned: each has a (?<code>...) capture */
    size_t nre;
    expl_code_key *keys; /* owned */
    size_t nkeys;
    expl_code_family *fams; /* owned */
    size_t nfams;
    char **kw; /* owned: literals that bring a line to the patterns */
    size_t nkw;
} expl_code_table;

struct hbm_catalog {
    hbm_sig *sigs; /* owned: the signatures, then the code tables' entries */
    expl_rt *rt;   /* owned, parallel to sigs */
    size_t n;      /* signatures (data/signatures.json) */
    size_t ncodes; /* code-table entries after them */
    char *codes_file; /* owned: "code_tables" as the catalogue names it, NULL = none */
    expl_code_table *tables; /* owned */
    size_t ntables;
    expl_needles code_kw;  /* table keyword -> table */
    expl_needles code_lit; /* an entry's own literal (name, message) -> entry */
    char **servers; /* owned */
    size_t nservers;
    expl_needles kw; /* keyword -> entry index */
    uint32_t max_ovector;
};

/* Value of a capture text: a number (commas allowed) times the unit, or a size with its
 * own unit ("136.00 MiB"), else NAN. *bytes says whether it is a size. */
double expl_capture_value(const char *text, const expl_rt *rt, const char *name, bool *bytes);

/* Loads the code tables at path into cat (codes.c). */
int expl_codes_load(hbm_catalog *cat, const char *path, hbm_err *err);
void expl_codes_free(hbm_catalog *cat);
/* The entry a line's vendor code names, or -1; *captured says whether md holds the match.
 * lits: the code_lit targets found in the line; tabs: the code_kw targets. *code is the
 * code as the line gives it (or the entry's own, found by a literal), *code_len its length. */
long expl_codes_match(const hbm_catalog *cat, const char *line, size_t len,
                      pcre2_match_data *md, bool *captured, const uint32_t *lits, size_t nlits,
                      const uint32_t *tabs, size_t ntabs, const char **code, size_t *code_len);

/* What a line of a vendor's error block adds about its code (detail.c): the text after the
 * code's last mention, or, in a line that does not name it, after the prefix it shares with
 * the code's line (head), which must leave it indented. Its [PID: n], time and [FUNC:...]
 * decoration is left out. Returns the length from *start, 0 when the line says nothing
 * ("Inner Error!", the "TraceBack (most recent call last):" head); *ends when the line
 * belongs to something else (not indented, and not naming the code). */
size_t expl_detail_words(const char *line, size_t len, const char *code, size_t code_len,
                         const char *head, size_t head_len, size_t *start, bool *ends);

/* Puts the findings in reading order (report.c): failures before warnings, by line, and a
 * summary after the cause printed within HBM_EXPLAIN_SUMMARY_BLOCK lines after it. */
void expl_order_for_reading(hbm_explain_report *rep);
/* Notes in the report (report.c) the server's own processes named by a line's prefixes, "(EngineCore_DP0 pid=68) ". */
void expl_read_prefixes(hbm_explain_report *rep, const char *line, size_t len, uint64_t lineno);

/* The structure reader (structure.c). */
typedef struct expl_candidate {
    char *text; /* owned */
    uint64_t line;
    int phase;
} expl_candidate;

typedef struct expl_structure {
    pcre2_code *exc_re, *exit_re, *ver_re; /* owned */
    pcre2_match_data *md;                  /* owned */
    int cur_phase;
    expl_candidate exc;      /* the last exception line */
    expl_candidate exc_root; /* the last one that is not a summary pointing above */
    expl_candidate fatal;    /* the first fatal line */
} expl_structure;

/* What the catalogue made of a line, for the structure reader. */
enum { EXPL_LINE_NONE, EXPL_LINE_BENIGN, EXPL_LINE_FAILURE, EXPL_LINE_WRAPPER };

/* Adds the reader's literals to into (targets ORed with tag) and to pf, so the lines
 * holding them reach it; the scanner finds them with its other literals in one pass. */
void expl_structure_init(expl_structure *st, expl_prefilter *pf, expl_needles *into,
                         uint32_t tag);
/* marks: the targets (tag removed) of the reader's literals found in the line. */
void expl_structure_line(expl_structure *st, hbm_explain_structure *out, const char *line,
                         size_t len, uint64_t lineno, int verdict, const uint32_t *marks,
                         size_t nmarks);
void expl_structure_finish(expl_structure *st, hbm_explain_structure *out);
/* Forgets the log read so far (the scanner is used again). */
void expl_structure_reset(expl_structure *st);
void expl_structure_free(expl_structure *st);

#endif
