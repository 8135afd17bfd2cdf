/* The log reader: streams any input in chunks (a gigabyte log never sits in memory),
 * cuts over-long lines, cleans container-log decoration, and matches each line against
 * the catalogue. The literal prefilter (prefilter.c) passes over whole buffers to the next
 * line that holds a keyword or an error word; such a line then has to contain one of an
 * entry's literal keywords, so the regular expressions only run on the few that can match. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain_int.h"
#include "hbm/redact.h"
#include "hbm/util.h"

#define TEXT_KEEP 2048 /* bytes of a matching line kept for the report */
#define TAIL_KEEP 400  /* bytes of an error-looking line kept */
#define NO_FINDING ((size_t)-1)
#define XKIND_SHIFT 29 /* extra literals' targets: kind in the top bits */
#define XKIND_KEYWORD 3 /* a catalogue keyword; 0-2 index xhits */
#define XKIND_ERROR_WORD 4 /* one of error_words */
#define JOIN_MIN 40    /* a line shorter than this was not wrapped by a terminal or a page */
#define WRAP_MIN 80    /* the narrowest hard wrap: terminals and pages are this wide or wider */
#define SPAN_MAX 64   /* bytes either side of a hard wrap's cut a keyword can span */
#define DETAIL_LINES 4 /* lines after a generic code that may say what failed */
#define DETAIL_KEEP 400 /* bytes of that detail kept */
#define DETAIL_HEAD 256 /* bytes of the code's line its block's lines may repeat */

/* Words that make an unknown line look like an error (case-insensitive). */
static const char *const error_words[] = {
    "error", "exception", "traceback", "fail", "fatal", "refused", "killed",
    "out of memory", "timed out", "timeout", "abort", "panic", "denied",
    "segmentation fault", "core dumped", "reset by peer", NULL};

struct hbm_explain_scanner {
    const hbm_catalog *cat;
    char *line; /* owned: HBM_EXPLAIN_LINE_MAX + 1 */
    size_t len;
    bool cutting; /* the current line is over the limit: skip to its newline */
    char *pending; /* owned: CRI partial records waiting for their final part */
    size_t plen;
    uint64_t pending_line;
    uint64_t lineno;
    hbm_explain_report rep;
    pcre2_match_data *md;
    uint8_t *cand;  /* per entry: keyword seen in this line */
    uint32_t *hits; /* entries seen in this line */
    size_t nhits;
    size_t *finding_of; /* per entry: index into rep.findings */
    expl_prefilter pf; /* the keywords' and error words' anchors */
    expl_structure st;
    expl_needles extra; /* keywords, code literals, code-table keywords, the structure's
                           literals, error words: one pass over a line finds them all */
    bool error_word;    /* the line holds one of error_words */
    uint32_t xhits[3][64]; /* per line, by kind: code literal, table, structure literal */
    size_t nx[3];
    bool no_captures; /* the match being recorded came from a literal, md holds none */
    char *prev; /* owned: the last line read when nothing matched it (HBM_EXPLAIN_LINE_MAX) */
    size_t prev_len;
    uint64_t prev_line;
    size_t prev_finding; /* the finding the previous line opened, NO_FINDING = none */
    bool prev_candidates; /* the previous line held a keyword */
    char *join;     /* owned: the previous line and this one joined */
    bool want_next; /* read the next line even where the prefilter sees nothing */
    size_t wrap_prev;  /* the previous line's length when WRAP_MIN or more, else 0 */
    size_t wrap_run;   /* the same when it does not end in a blank: it may start a run */
    size_t wrap_width; /* the width a run of lines of one length showed, 0 = none */
    size_t join_skip;  /* an entry a join is not matched against, NO_FINDING = none */
    size_t pf_longest; /* the longest needle of the prefilter, at most SPAN_MAX */
    /* The block of a generic code whose detail is still to come (expl_detail_words). */
    size_t detail_finding; /* NO_FINDING = none open */
    char detail_code[32];
    size_t detail_code_len;
    char detail_head[DETAIL_HEAD]; /* the code's line, as its block's lines may repeat it */
    size_t detail_head_len;
    uint64_t detail_last; /* the block's last line read */
    unsigned detail_left; /* lines it may still take */
};

/* ---- matching ---- */

typedef struct lookup_ctx {
    const hbm_explain_finding *f;
    const expl_rt *rt;
    const hbm_explain_report *rep;
} lookup_ctx;

static const expl_rt no_units;

static bool finding_lookup(void *ctx, const char *name, double *value, const char **text)
{
    lookup_ctx *lc = ctx;
    if (strncmp(name, EXPL_FACT_PREFIX, strlen(EXPL_FACT_PREFIX)) == 0) {
        /* Validated at load: a fact's capture. Unknown when the log never showed it. */
        const hbm_explain_fact *fact =
            hbm_explain_report_fact(lc->rep, name + strlen(EXPL_FACT_PREFIX));
        *text = fact ? fact->text : NULL;
        bool bytes;
        *value = fact ? expl_capture_value(fact->text, &no_units, name, &bytes) : NAN;
        return true;
    }
    if (strncmp(name, EXPL_OWN_PREFIX, strlen(EXPL_OWN_PREFIX)) == 0) {
        /* Validated at load: one of the entry's captures, read as a pid. */
        const hbm_explain_num *n = hbm_explain_finding_num(lc->f, name + strlen(EXPL_OWN_PREFIX));
        const hbm_explain_proc *own =
            n && !isnan(n->value) ? hbm_explain_report_proc(lc->rep, (long)n->value) : NULL;
        *value = n && !isnan(n->value) ? own != NULL : NAN;
        *text = own ? own->name : NULL; /* {own_pid:text}: the name its lines carry */
        return true;
    }
    for (size_t i = 0; i < lc->f->nnums; i++)
        if (strcmp(lc->f->nums[i].name, name) == 0) {
            *value = lc->f->nums[i].value;
            *text = lc->f->nums[i].text;
            return true;
        }
    for (size_t i = 0; i < lc->rt->nnames; i++)
        if (strcmp(lc->rt->names[i], name) == 0) {
            *value = NAN;
            *text = NULL;
            return true;
        }
    return false;
}

/* A note renders when its condition holds and its numbers are known; else its fallback. */
static char *render_note(const hbm_sig_note *note, lookup_ctx *lc)
{
    hbm_err err = {{0}};
    bool ok = true;
    if (note->when) {
        double v;
        ok = hbm_explain_eval(note->when, finding_lookup, lc, &v, &err) == 0 && !isnan(v) &&
             v != 0.0;
    }
    if (ok) {
        bool unknown;
        char *out = hbm_explain_render(note->text, finding_lookup, lc, &unknown, &err);
        if (out)
            return out;
    }
    if (!note->otherwise)
        return NULL;
    bool unknown;
    return hbm_explain_render(note->otherwise, finding_lookup, lc, &unknown, &err);
}

static void render_finding(hbm_explain_finding *f, const expl_rt *rt,
                           const hbm_explain_report *rep)
{
    lookup_ctx lc = {.f = f, .rt = rt, .rep = rep};
    const hbm_sig *s = f->sig;
    f->meaning = hbm_xcalloc(s->nmeaning + 1, sizeof *f->meaning);
    for (size_t i = 0; i < s->nmeaning; i++) {
        char *t = render_note(&s->meaning[i], &lc);
        if (t)
            f->meaning[f->nmeaning++] = t;
    }
    f->remedies = hbm_xcalloc(s->nremedies + 1, sizeof *f->remedies);
    for (size_t i = 0; i < s->nremedies; i++) {
        char *t = render_note(&s->remedies[i], &lc);
        if (t)
            f->remedies[f->nremedies++] = t;
    }
}

/* A log line as the report keeps it: redacted whole (a cut could split a credential from
 * its name), then cut to keep bytes. */
static char *kept_text(const char *line, size_t len, size_t keep)
{
    char *t = hbm_redact_text(line, len);
    if (strlen(t) > keep)
        t[keep] = '\0';
    return t;
}

static void take_captures(hbm_explain_scanner *s, const expl_rt *rt, hbm_explain_num **nums,
                          size_t *n)
{
    *nums = hbm_xcalloc(rt->nnames + 1, sizeof **nums);
    *n = 0;
    for (size_t i = 0; i < rt->nnames && !s->no_captures; i++) {
        PCRE2_UCHAR *buf;
        PCRE2_SIZE blen;
        if (pcre2_substring_get_byname(s->md, (PCRE2_SPTR)rt->names[i], &buf, &blen) != 0)
            continue;
        hbm_explain_num *num = &(*nums)[(*n)++];
        snprintf(num->name, sizeof num->name, "%s", rt->names[i]);
        num->text = hbm_redact_text((const char *)buf, blen);
        num->value = expl_capture_value(num->text, rt, num->name, &num->bytes);
        pcre2_substring_free(buf);
    }
}

static bool match_entry(hbm_explain_scanner *s, size_t e, const char *line, size_t len)
{
    const expl_rt *rt = &s->cat->rt[e];
    for (size_t i = 0; i < rt->nre; i++)
        if (pcre2_match(rt->re[i], (PCRE2_SPTR)line, len, 0, 0, s->md, NULL) >= 0)
            return true;
    return false;
}

static void record_failure(hbm_explain_scanner *s, size_t e, const char *line, size_t len,
                           uint64_t lineno)
{
    hbm_explain_report *rep = &s->rep;
    if (s->finding_of[e] != NO_FINDING) {
        hbm_explain_finding *f = &rep->findings[s->finding_of[e]];
        f->count++;
        f->last_line = lineno;
        return;
    }
    hbm_grow((void **)&rep->findings, &rep->cap_findings, rep->nfindings,
             sizeof *rep->findings);
    s->finding_of[e] = rep->nfindings;
    hbm_explain_finding *f = &rep->findings[rep->nfindings++];
    memset(f, 0, sizeof *f);
    f->sig = &s->cat->sigs[e];
    f->phase = s->st.cur_phase;
    f->line = f->last_line = lineno;
    f->count = 1;
    f->text = kept_text(line, len, TEXT_KEEP);
    take_captures(s, &s->cat->rt[e], &f->nums, &f->nnums);
}

static void record_facts(hbm_explain_scanner *s, size_t e, uint64_t lineno)
{
    hbm_explain_num *nums;
    size_t n;
    take_captures(s, &s->cat->rt[e], &nums, &n);
    hbm_explain_report *rep = &s->rep;
    for (size_t i = 0; i < n; i++) {
        hbm_explain_fact *fact = NULL;
        for (size_t k = 0; k < rep->nfacts && !fact; k++)
            if (strcmp(rep->facts[k].name, nums[i].name) == 0)
                fact = &rep->facts[k];
        if (!fact) {
            hbm_grow((void **)&rep->facts, &rep->cap_facts, rep->nfacts, sizeof *rep->facts);
            fact = &rep->facts[rep->nfacts++];
            memset(fact, 0, sizeof *fact);
            snprintf(fact->name, sizeof fact->name, "%s", nums[i].name);
        }
        free(fact->text);
        fact->text = nums[i].text;
        fact->line = lineno;
    }
    free(nums);
}

static void push_tail(hbm_explain_report *rep, const char *line, size_t len, uint64_t lineno)
{
    if (rep->ntail == HBM_EXPLAIN_TAIL) {
        free(rep->tail[0].text);
        memmove(&rep->tail[0], &rep->tail[1], (HBM_EXPLAIN_TAIL - 1) * sizeof rep->tail[0]);
        rep->ntail--;
    }
    rep->tail[rep->ntail].line = lineno;
    rep->tail[rep->ntail].text = kept_text(line, len, TAIL_KEEP);
    rep->ntail++;
}

static void on_keyword(void *ctx, uint32_t e)
{
    hbm_explain_scanner *s = ctx;
    if (s->cand[e])
        return;
    s->cand[e] = 1;
    size_t i = s->nhits++;
    while (i > 0 && s->hits[i - 1] > e) { /* keep catalogue order */
        s->hits[i] = s->hits[i - 1];
        i--;
    }
    s->hits[i] = e;
}


/* Matches the catalogue on one line of text: benign entries, then failures, then (on a
 * real line) the vendors' code tables and the facts. Returns what the line is. */
static void on_extra(void *ctx, uint32_t t)
{
    hbm_explain_scanner *s = ctx;
    size_t kind = t >> XKIND_SHIFT;
    if (kind == XKIND_KEYWORD)
        on_keyword(s, t & ((1u << XKIND_SHIFT) - 1));
    else if (kind == XKIND_ERROR_WORD)
        s->error_word = true;
    else if (s->nx[kind] < 64)
        s->xhits[kind][s->nx[kind]++] = t & ((1u << XKIND_SHIFT) - 1);
}

/* Takes the detail from a line of the open block, when it says something; true when
 * the block is done with. */
static bool take_detail(hbm_explain_scanner *s, const char *line, size_t len, uint64_t lineno,
                        const char *head, size_t head_len)
{
    size_t start;
    bool other;
    size_t n = expl_detail_words(line, len, s->detail_code, s->detail_code_len, head, head_len,
                                 &start, &other);
    if (n == 0)
        return other;
    hbm_explain_finding *f = &s->rep.findings[s->detail_finding];
    f->detail = kept_text(line + start, n, DETAIL_KEEP);
    f->detail_line = lineno;
    return true;
}

/* A generic code's line opens its block: the line itself may already say what failed
 * ("AclNN_Inner_Error(EZ9999): Parse dynamic kernel config fail."), else the next lines. */
static void open_detail(hbm_explain_scanner *s, size_t finding, const char *line, size_t len,
                        uint64_t lineno, const char *code, size_t code_len)
{
    if (s->rep.findings[finding].detail || s->detail_finding == finding ||
        code_len >= sizeof s->detail_code)
        return;
    s->detail_finding = finding;
    memcpy(s->detail_code, code, code_len);
    s->detail_code_len = code_len;
    if (take_detail(s, line, len, lineno, "", 0)) {
        s->detail_finding = NO_FINDING;
        return;
    }
    s->detail_head_len = len < DETAIL_HEAD ? len : DETAIL_HEAD;
    memcpy(s->detail_head, line, s->detail_head_len);
    s->detail_last = lineno;
    s->detail_left = DETAIL_LINES;
}

/* The next line of an open block: consecutive, within DETAIL_LINES of the code. */
static void continue_detail(hbm_explain_scanner *s, const char *line, size_t len,
                            uint64_t lineno)
{
    if (lineno != s->detail_last + 1 || s->detail_left == 0 ||
        take_detail(s, line, len, lineno, s->detail_head, s->detail_head_len)) {
        s->detail_finding = NO_FINDING;
        return;
    }
    s->detail_last = lineno;
    s->detail_left--;
}

static int match_line(hbm_explain_scanner *s, const char *line, size_t len, uint64_t lineno,
                      bool joined)
{
    if (joined) { /* a real line's keywords came with the other literals (process_line) */
        s->nhits = 0;
        expl_needles_scan(&s->cat->kw, line, len, on_keyword, s);
    }
    int verdict = EXPL_LINE_NONE;
    for (size_t i = 0; i < s->nhits && verdict == EXPL_LINE_NONE; i++)
        if (s->cat->rt[s->hits[i]].kind == EXPL_BENIGN && match_entry(s, s->hits[i], line, len))
            verdict = EXPL_LINE_BENIGN;
    for (size_t i = 0; i < s->nhits && verdict == EXPL_LINE_NONE; i++) {
        size_t e = s->hits[i];
        if (s->cat->rt[e].kind == EXPL_FAILURE && e != s->join_skip &&
            match_entry(s, e, line, len)) {
            record_failure(s, e, line, len, lineno);
            verdict = s->cat->sigs[e].wrapper ? EXPL_LINE_WRAPPER : EXPL_LINE_FAILURE;
        }
    }
    if (verdict == EXPL_LINE_NONE && !joined && s->cat->ntables) {
        bool captured;
        const char *code = NULL;
        size_t code_len = 0;
        long e = expl_codes_match(s->cat, line, len, s->md, &captured, s->xhits[0], s->nx[0],
                                  s->xhits[1], s->nx[1], &code, &code_len);
        if (e >= 0) {
            s->no_captures = !captured;
            record_failure(s, (size_t)e, line, len, lineno);
            s->no_captures = false;
            verdict = EXPL_LINE_FAILURE;
            if (s->cat->rt[e].detail_after)
                open_detail(s, s->finding_of[e], line, len, lineno, code, code_len);
        }
    }
    for (size_t i = 0; i < s->nhits; i++) {
        size_t e = s->hits[i];
        if (!joined && s->cat->rt[e].kind == EXPL_FACT && match_entry(s, e, line, len))
            record_facts(s, e, lineno);
        s->cand[e] = 0;
    }
    return verdict;
}

static bool word_byte(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* How the previous line and this one are joined: at a blank (leading blanks of this one
 * dropped), directly where a soft wrap split a word, or as cut: a hard wrap at a fixed
 * width cut the text at a column, so nothing is dropped or added. */
enum { JOIN_BLANK, JOIN_WORD, JOIN_AS_CUT };

/* Builds the previous line and this one joined as how says; false when that join does not
 * apply. */
static bool build_join(hbm_explain_scanner *s, const char *line, size_t len, int how,
                       size_t *n)
{
    size_t lead = 0;
    while (how == JOIN_BLANK && lead < len && (line[lead] == ' ' || line[lead] == '\t'))
        lead++;
    if (how == JOIN_WORD &&
        !(word_byte(s->prev[s->prev_len - 1]) && len && word_byte(line[0])))
        return false;
    *n = s->prev_len;
    memcpy(s->join, s->prev, *n);
    if (how == JOIN_BLANK)
        s->join[(*n)++] = ' ';
    memcpy(s->join + *n, line + lead, len - lead);
    *n += len - lead;
    s->join[*n] = '\0';
    return true;
}

/* The previous line matched an entry on its own, but the message goes on here: when the
 * joined text gives the entry more of its numbers, the finding takes them. */
static void upgrade_previous(hbm_explain_scanner *s, const char *line, size_t len, bool hard)
{
    hbm_explain_finding *f = &s->rep.findings[s->prev_finding];
    const expl_rt *rt = &s->cat->rt[f->sig - s->cat->sigs];
    if (rt->nre == 0 || f->nnums == rt->nnames)
        return;
    size_t n;
    int first = hard ? JOIN_AS_CUT : JOIN_BLANK, last = hard ? JOIN_AS_CUT : JOIN_WORD;
    for (int how = first; how <= last; how++) {
        if (!build_join(s, line, len, how, &n) || !match_entry(s, (size_t)(f->sig - s->cat->sigs), s->join, n))
            continue;
        hbm_explain_num *nums;
        size_t nn;
        take_captures(s, rt, &nums, &nn);
        if (nn > f->nnums) {
            for (size_t k = 0; k < f->nnums; k++)
                free(f->nums[k].text);
            free(f->nums);
            f->nums = nums;
            f->nnums = nn;
            free(f->text);
            f->text = hbm_xstrndup(s->join, n < TEXT_KEEP ? n : TEXT_KEEP);
            return;
        }
        for (size_t k = 0; k < nn; k++)
            free(nums[k].text);
        free(nums);
    }
}

/* A message wrapped over two lines by a terminal or by the page it was pasted into: the
 * previous line and this one joined are matched as one line (reported at the first). */
static int join_previous(hbm_explain_scanner *s, const char *line, size_t len, bool hard)
{
    size_t n;
    int first = hard ? JOIN_AS_CUT : JOIN_BLANK, last = hard ? JOIN_AS_CUT : JOIN_WORD;
    for (int how = first; how <= last; how++) {
        if (!build_join(s, line, len, how, &n))
            continue;
        int v = match_line(s, s->join, n, s->prev_line, true);
        if (v == EXPL_LINE_FAILURE || v == EXPL_LINE_WRAPPER)
            return v;
    }
    return EXPL_LINE_NONE;
}

/* A line's length without its CR, 0 when under WRAP_MIN; *run, the same when it does
 * not end in a blank (a padded line is not a cut one). */
static size_t cut_width(const char *raw, size_t n, size_t *run)
{
    if (n && raw[n - 1] == '\r')
        n--;
    size_t w = n >= WRAP_MIN ? n : 0;
    *run = w && raw[n - 1] != ' ' && raw[n - 1] != '\t' ? w : 0;
    return w;
}

/* Whether a hard wrap cut the line before this one, which this one continues: a terminal or
 * a page that wraps at a fixed width leaves runs of lines of that one length, not all
 * ending in a blank (lines padded to a width do); once the log showed one, a line of that
 * width is cut (wherever the column fell, a blank too). The previous line and this one may
 * be the run. */
static bool runs_on(const hbm_explain_scanner *s, size_t w, size_t run)
{
    return w && w == s->wrap_prev && (run || s->wrap_run);
}

static bool after_hard_wrap(hbm_explain_scanner *s, size_t w, size_t run)
{
    if (runs_on(s, w, run))
        s->wrap_width = w;
    bool cut = s->wrap_prev && s->wrap_prev == s->wrap_width;
    s->wrap_prev = w;
    s->wrap_run = run;
    return cut;
}

/* Whether a keyword or an error word spans the end of line a and the start of b, joined as
 * a hard wrap cut them: the prefilter over the bytes either side of the cut. */
static bool spans_cut(const hbm_explain_scanner *s, const char *a, size_t an, const char *b,
                      size_t bn)
{
    char both[2 * SPAN_MAX];
    size_t k = s->pf_longest > 1 ? s->pf_longest - 1 : 1;
    size_t ta = an < k ? an : k, tb = bn < k ? bn : k;
    memcpy(both, a + an - ta, ta);
    memcpy(both + ta, b, tb);
    return expl_prefilter_spans(&s->pf, both, ta + tb, ta);
}

static void process_line(hbm_explain_scanner *s, const char *line, size_t len, uint64_t lineno,
                         bool hard)
{
    size_t before = s->rep.nfindings;
    s->nx[0] = s->nx[1] = s->nx[2] = 0;
    s->nhits = 0;
    s->error_word = false;
    expl_needles_scan(&s->extra, line, len, on_extra, s);
    if (s->detail_finding != NO_FINDING)
        continue_detail(s, line, len, lineno);
    int verdict = match_line(s, line, len, lineno, false);
    bool candidates = s->nhits > 0;
    /* Joined only after a long line, where one of the two holds a keyword, or after one a
     * hard wrap cut (the cut may split the only keyword: "out of me|mory"). */
    hard = hard && s->prev_len > 0 && s->prev_line + 1 == lineno &&
           (candidates || s->prev_candidates || spans_cut(s, s->prev, s->prev_len, line, len));
    bool adjacent = hard || (s->prev_len >= JOIN_MIN && s->prev_line + 1 == lineno &&
                             (candidates || s->prev_candidates));
    if (verdict == EXPL_LINE_NONE && adjacent && s->prev_finding == NO_FINDING)
        verdict = join_previous(s, line, len, hard);
    else if (verdict == EXPL_LINE_NONE && adjacent) {
        upgrade_previous(s, line, len, hard);
        /* The piece before a cut may have matched a looser entry than the whole line. */
        s->join_skip = hard ? (size_t)(s->rep.findings[s->prev_finding].sig - s->cat->sigs)
                            : NO_FINDING;
        if (hard)
            verdict = join_previous(s, line, len, true);
        s->join_skip = NO_FINDING;
    }
    if (verdict == EXPL_LINE_NONE && s->error_word)
        push_tail(&s->rep, line, len, lineno);
    expl_structure_line(&s->st, &s->rep.structure, line, len, lineno, verdict, s->xhits[2],
                        s->nx[2]);
    if (len && line[0] == '(')
        expl_read_prefixes(&s->rep, line, len, lineno);
    /* Kept for the next line, which may continue it; a line with a keyword may be the
     * first half of a wrapped message, so the next line is read even where the prefilter
     * sees nothing in it. */
    bool opened = s->rep.nfindings > before && verdict != EXPL_LINE_NONE;
    /* A phase the failing line itself names ("when warming up sampler") is its phase. */
    if (opened)
        s->rep.findings[before].phase = s->st.cur_phase;
    s->prev_len = verdict == EXPL_LINE_NONE || opened ? len : 0;
    memcpy(s->prev, line, s->prev_len);
    s->prev_line = lineno;
    s->prev_finding = opened ? before : NO_FINDING;
    s->prev_candidates = candidates;
    /* Only a long line that stops mid-sentence can go on in the next one. */
    char last = len ? line[len - 1] : '.';
    s->want_next = ((candidates || verdict == EXPL_LINE_FAILURE || verdict == EXPL_LINE_WRAPPER) &&
                    len >= JOIN_MIN && !strchr(".)]}!:", last)) ||
                   s->detail_finding != NO_FINDING; /* its block's lines hold no keyword */
}

/* ---- streaming ---- */

static void end_line(hbm_explain_scanner *s)
{
    s->lineno++;
    if (s->cutting)
        s->rep.cut_lines++;
    size_t run = 0, w = s->cutting ? 0 : cut_width(s->line, s->len, &run);
    bool hard = after_hard_wrap(s, w, run);
    bool partial;
    size_t len = hbm_explain_clean_line(s->line, s->len, &partial);
    s->len = 0;
    s->cutting = false;
    if (partial || s->plen) {
        /* CRI splits long lines into records; join them (bounded) before matching. */
        if (s->plen == 0)
            s->pending_line = s->lineno;
        size_t room = HBM_EXPLAIN_LINE_MAX - s->plen;
        size_t take = len < room ? len : room;
        memcpy(s->pending + s->plen, s->line, take);
        s->plen += take;
        if (partial)
            return;
        s->pending[s->plen] = '\0';
        process_line(s, s->pending, s->plen, s->pending_line, false);
        s->plen = 0;
        return;
    }
    process_line(s, s->line, len, s->lineno, hard);
}

hbm_explain_scanner *hbm_explain_scanner_new(const hbm_catalog *cat)
{
    hbm_explain_scanner *s = hbm_xcalloc(1, sizeof *s);
    s->cat = cat;
    s->line = hbm_xmalloc(HBM_EXPLAIN_LINE_MAX + 1);
    s->pending = hbm_xmalloc(HBM_EXPLAIN_LINE_MAX + 1);
    s->prev = hbm_xmalloc(HBM_EXPLAIN_LINE_MAX + 1);
    s->join = hbm_xmalloc(2 * HBM_EXPLAIN_LINE_MAX + 2);
    s->prev_finding = NO_FINDING;
    s->detail_finding = NO_FINDING;
    s->join_skip = NO_FINDING;
    s->md = pcre2_match_data_create(cat->max_ovector ? cat->max_ovector : 1, NULL);
    if (!s->md)
        abort();
    s->cand = hbm_xcalloc(cat->n + 1, 1);
    s->hits = hbm_xcalloc(cat->n + 1, sizeof *s->hits);
    s->finding_of = hbm_xmalloc((cat->n + cat->ncodes + 1) * sizeof *s->finding_of);
    for (size_t i = 0; i <= cat->n + cat->ncodes; i++)
        s->finding_of[i] = NO_FINDING;
    expl_prefilter_init(&s->pf);
    const expl_needles *sets[] = {&cat->kw, &cat->code_lit, &cat->code_kw};
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < sets[k]->n; i++)
            expl_prefilter_add(&s->pf, sets[k]->v[i].s, sets[k]->v[i].n, sets[k]->fold);
    /* One pass per line finds the catalogue's keywords, the code tables' literals, the
     * structure reader's and the error words. */
    expl_needles_init(&s->extra, false);
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < sets[k]->n; i++)
            expl_needles_add(&s->extra, sets[k]->v[i].s,
                             (uint32_t)(k ? k - 1 : XKIND_KEYWORD) << XKIND_SHIFT |
                                 sets[k]->v[i].target);
    for (size_t i = 0; error_words[i]; i++) {
        expl_prefilter_add(&s->pf, error_words[i], strlen(error_words[i]), true);
        expl_needles_add_as(&s->extra, error_words[i], (uint32_t)XKIND_ERROR_WORD << XKIND_SHIFT,
                            true);
    }
    expl_structure_init(&s->st, &s->pf, &s->extra, 2u << XKIND_SHIFT);
    for (size_t i = 0; i < s->pf.n; i++)
        if (s->pf.v[i].n > s->pf_longest)
            s->pf_longest = s->pf.v[i].n < SPAN_MAX ? s->pf.v[i].n : SPAN_MAX;
    return s;
}

/* Counts the whole lines of buf, read from a line start, before the first one the
 * prefilter stops at or one over the limit; returns the bytes they take. Lines a hard wrap
 * cut are skipped too, unless a keyword spans the cut: then the cut line and the next are
 * read. */
static size_t skip_quiet_lines(hbm_explain_scanner *s, const char *buf, size_t n,
                               const char **stop)
{
    if (!*stop || *stop < buf) /* the stop found before, unless passed */
        *stop = buf + expl_prefilter_next(&s->pf, buf, n);
    size_t at = (size_t)(*stop - buf);
    const char *last = memrchr(buf, '\n', at);
    const char *end = last ? last + 1 : buf, *p = buf, *prev = NULL;
    size_t prev_len = 0, prev_wrap = 0, prev_run = 0; /* and the wrap state before it */
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)(nl - p);
        if (len > HBM_EXPLAIN_LINE_MAX)
            break; /* counted as cut by the full path */
        size_t wrap = s->wrap_prev, wrap_run = s->wrap_run, run;
        size_t w = cut_width(p, len, &run);
        bool after_cut = after_hard_wrap(s, w, run);
        const char *a = prev;
        size_t an = prev_len;
        if (!a && s->prev_line == s->lineno) { /* the line before: read by the full path */
            a = s->prev;
            an = s->prev_len;
        }
        if (after_cut && an && spans_cut(s, a, an, p, len)) {
            if (prev) {
                p = prev;
                s->lineno--;
                wrap = prev_wrap;
                wrap_run = prev_run;
            }
            s->wrap_prev = wrap;
            s->wrap_run = wrap_run;
            return (size_t)(p - buf);
        }
        prev = p;
        prev_len = len;
        prev_wrap = wrap;
        prev_run = wrap_run;
        s->lineno++;
        p = nl + 1;
    }
    return (size_t)(p - buf);
}

void hbm_explain_scanner_feed(hbm_explain_scanner *s, const char *buf, size_t n)
{
    s->rep.bytes += n;
    const char *stop = NULL; /* the prefilter's stop in buf, found once for all skips */
    while (n > 0) {
        if (s->len == 0 && !s->cutting && s->plen == 0 && !s->want_next) {
            size_t quiet = skip_quiet_lines(s, buf, n, &stop);
            buf += quiet;
            n -= quiet;
            if (n == 0)
                return;
        }
        const char *nl = memchr(buf, '\n', n);
        size_t take = nl ? (size_t)(nl - buf) : n;
        if (!s->cutting) {
            size_t room = HBM_EXPLAIN_LINE_MAX - s->len;
            size_t copy = take < room ? take : room;
            memcpy(s->line + s->len, buf, copy);
            s->len += copy;
            if (take > room)
                s->cutting = true;
        }
        if (!nl)
            return;
        end_line(s);
        buf = nl + 1;
        n -= take + 1;
    }
}

void hbm_explain_scanner_finish(hbm_explain_scanner *s, hbm_explain_report *out)
{
    if (s->len > 0 || s->cutting)
        end_line(s);
    if (s->plen > 0) { /* a partial record never finished: match what there is */
        s->pending[s->plen] = '\0';
        process_line(s, s->pending, s->plen, s->pending_line, false);
        s->plen = 0;
    }
    s->rep.lines = s->lineno;
    expl_structure_finish(&s->st, &s->rep.structure);
    hbm_explain_structure *st = &s->rep.structure;
    for (size_t i = 0; i < s->rep.nfindings && !st->error; i++) {
        /* No exception, fatal line or exit in the log: the first known error is the end. */
        const hbm_explain_finding *f = &s->rep.findings[i];
        if (f->sig->wrapper || strcmp(f->sig->severity, "error") != 0)
            continue;
        st->error = hbm_xstrndup(f->text, 400);
        st->error_line = f->line;
        st->error_kind = "known";
        st->phase = f->phase;
    }
    expl_order_for_reading(&s->rep);
    /* Rendered at the end, so templates see facts from anywhere in the log. */
    for (size_t i = 0; i < s->rep.nfindings; i++) {
        hbm_explain_finding *f = &s->rep.findings[i];
        render_finding(f, &s->cat->rt[f->sig - s->cat->sigs], &s->rep);
    }
    *out = s->rep;
    memset(&s->rep, 0, sizeof s->rep);
    for (size_t i = 0; i <= s->cat->n + s->cat->ncodes; i++)
        s->finding_of[i] = NO_FINDING;
    expl_structure_reset(&s->st);
    s->prev_len = 0;
    s->prev_finding = NO_FINDING;
    s->detail_finding = NO_FINDING;
    s->want_next = false;
    s->wrap_prev = s->wrap_run = s->wrap_width = 0;
}

void hbm_explain_scanner_free(hbm_explain_scanner *s)
{
    if (!s)
        return;
    hbm_explain_report_free(&s->rep);
    free(s->line);
    free(s->pending);
    free(s->prev);
    free(s->join);
    pcre2_match_data_free(s->md);
    free(s->cand);
    free(s->hits);
    free(s->finding_of);
    expl_prefilter_free(&s->pf);
    expl_structure_free(&s->st);
    expl_needles_free(&s->extra);
    free(s);
}

int hbm_explain_scan_path(const hbm_catalog *cat, const char *path, hbm_explain_report *out,
                          hbm_err *err)
{
    bool is_stdin = strcmp(path, "-") == 0;
    /* A log is streamed in chunks, so no size bound; but never a FIFO or a device. */
    int fd = is_stdin ? STDIN_FILENO : hbm_open_regular(AT_FDCWD, path, 0, 0, err);
    if (fd < 0)
        return -1;
    hbm_explain_scanner *s = hbm_explain_scanner_new(cat);
    char *buf = hbm_xmalloc(1 << 16);
    int rc = 0;
    for (;;) {
        ssize_t got = read(fd, buf, 1 << 16);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = hbm_err_set(err, "%s:%llu: %s", is_stdin ? "(stdin)" : path,
                             (unsigned long long)s->lineno + 1, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        /* As grep does: a NUL near the start means a binary file, not a log. */
        const char *nul = s->rep.bytes == 0 ? memchr(buf, '\0', (size_t)got < 4096 ? (size_t)got : 4096)
                                            : NULL;
        if (nul) {
            unsigned long long line = 1;
            for (const char *q = buf; q < nul; q++)
                line += *q == '\n';
            rc = hbm_err_set(err, "%s:%llu: binary data (NUL byte): not a text log",
                             is_stdin ? "(stdin)" : path, line);
            break;
        }
        hbm_explain_scanner_feed(s, buf, (size_t)got);
    }
    free(buf);
    if (!is_stdin)
        close(fd);
    if (rc == 0)
        hbm_explain_scanner_finish(s, out);
    hbm_explain_scanner_free(s);
    return rc;
}
