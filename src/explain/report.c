/* The explain report as data: lookups, the reading order, the server's processes named by
 * line prefixes, release, and its JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain_int.h"
#include "hbm/redact.h"
#include "hbm/util.h"

/* Log text may hold any bytes; JSON needs UTF-8, so invalid bytes become '?'. */
static json_t *text_json(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    size_t n = strlen(s);
    char *c = hbm_xmalloc(n + 1);
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = u[i] < 0x80 ? 1 : (u[i] >> 5) == 6 ? 2 : (u[i] >> 4) == 14 ? 3
                                     : (u[i] >> 3) == 30 ? 4 : 0;
        bool ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = (u[i + k] & 0xc0) == 0x80;
        if (ok) {
            memcpy(c + i, s + i, len);
            i += len;
        } else {
            c[i++] = '?';
        }
    }
    c[n] = '\0';
    j = json_string(c);
    if (!j) { /* overlong forms or surrogates: keep only ASCII */
        for (i = 0; i < n; i++)
            if (u[i] >= 0x80)
                c[i] = '?';
        j = json_string(c);
    }
    free(c);
    return j;
}

static void free_lines(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void hbm_explain_report_free(hbm_explain_report *rep)
{
    for (size_t i = 0; i < rep->nfindings; i++) {
        hbm_explain_finding *f = &rep->findings[i];
        free(f->text);
        free(f->detail);
        for (size_t k = 0; k < f->nnums; k++)
            free(f->nums[k].text);
        free(f->nums);
        free_lines(f->meaning, f->nmeaning);
        free_lines(f->remedies, f->nremedies);
        free_lines(f->live_lines, f->nlive_lines);
        json_decref(f->live);
    }
    free(rep->findings);
    for (size_t i = 0; i < rep->nfacts; i++)
        free(rep->facts[i].text);
    free(rep->facts);
    free(rep->structure.error);
    free(rep->structure.exit_text);
    for (size_t i = 0; i < rep->ntail; i++)
        free(rep->tail[i].text);
    memset(rep, 0, sizeof *rep);
}

const hbm_explain_fact *hbm_explain_report_fact(const hbm_explain_report *rep,
                                                const char *name)
{
    for (size_t i = 0; i < rep->nfacts; i++)
        if (strcmp(rep->facts[i].name, name) == 0)
            return &rep->facts[i];
    return NULL;
}

const hbm_explain_proc *hbm_explain_report_proc(const hbm_explain_report *rep, long pid)
{
    for (size_t i = 0; i < rep->nprocs; i++)
        if (rep->procs[i].pid == pid)
            return &rep->procs[i];
    return NULL;
}

const hbm_explain_num *hbm_explain_finding_num(const hbm_explain_finding *f,
                                               const char *name)
{
    for (size_t i = 0; i < f->nnums; i++)
        if (strcmp(f->nums[i].name, name) == 0)
            return &f->nums[i];
    return NULL;
}

bool hbm_explain_report_failed(const hbm_explain_report *rep)
{
    return rep->nfindings > 0 || rep->structure.error;
}

bool hbm_explain_report_known(const hbm_explain_report *rep)
{
    for (size_t i = 0; i < rep->nfindings; i++)
        if (!rep->findings[i].sig->wrapper)
            return true;
    return false;
}

long hbm_explain_root_cause(const hbm_explain_report *rep, size_t idx)
{
    const hbm_explain_finding *f = &rep->findings[idx];
    /* the cause comes before a summary, or in the block printed right after it */
    for (size_t k = 0; k < rep->nfindings; k++)
        if (!rep->findings[k].sig->wrapper &&
            (k < idx || rep->findings[k].line <= f->line + HBM_EXPLAIN_SUMMARY_BLOCK))
            return (long)k;
    return -1;
}

bool hbm_explain_report_wants_live(const hbm_explain_report *rep)
{
    for (size_t i = 0; i < rep->nfindings; i++)
        if (rep->findings[i].sig->nchecks > 0)
            return true;
    return false;
}

static json_t *strings_json(char **v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *notes_json(const hbm_sig_note *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s}", "text", v[i].text);
        if (v[i].when)
            json_object_set_new(o, "when", json_string(v[i].when));
        if (v[i].otherwise)
            json_object_set_new(o, "else", json_string(v[i].otherwise));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *products_json(const hbm_sig *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->nproducts; i++)
        json_array_append_new(a, json_pack("{s:s,s:s}", "name", s->products[i].name,
                                           "versions", s->products[i].versions));
    return a;
}

static json_t *structure_json(const hbm_explain_structure *st)
{
    json_t *phases = json_array();
    for (int p = 0; p < HBM_EXPLAIN_PHASES; p++)
        if (st->phase_line[p])
            json_array_append_new(phases, json_pack("{s:s,s:I}", "phase", hbm_explain_phase_id(p),
                                                    "line", (json_int_t)st->phase_line[p]));
    json_t *o = json_object();
    json_object_set_new(o, "engine", st->engine[0] ? json_string(st->engine) : json_null());
    json_object_set_new(o, "version", st->version[0] ? json_string(st->version) : json_null());
    json_object_set_new(o, "phases", phases);
    json_object_set_new(o, "reached", st->reached >= 0 ? json_string(hbm_explain_phase_id(st->reached))
                                                       : json_null());
    json_object_set_new(o, "failed", json_boolean(st->error != NULL));
    if (st->error) {
        const char *const *steps;
        size_t n = hbm_explain_phase_steps(st->phase, &steps);
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, json_string(steps[i]));
        json_object_set_new(o, "error", json_pack("{s:s,s:o,s:I,s:s,s:o}", "kind", st->error_kind,
                                                  "text", text_json(st->error), "line",
                                                  (json_int_t)st->error_line, "phase",
                                                  hbm_explain_phase_id(st->phase), "next_steps", a));
    } else {
        json_object_set_new(o, "error", json_null());
    }
    if (st->exit_text)
        json_object_set_new(o, "exit", json_pack("{s:o,s:o,s:I,s:o}", "code",
                                                 st->has_exit_code ? json_integer(st->exit_code)
                                                                   : json_null(),
                                                 "signal", st->signal ? json_integer(st->signal) : json_null(),
                                                 "line", (json_int_t)st->exit_line, "text",
                                                 text_json(st->exit_text)));
    else
        json_object_set_new(o, "exit", json_null());
    return o;
}

json_t *hbm_explain_report_json(const hbm_explain_report *rep)
{
    json_t *findings = json_array();
    for (size_t i = 0; i < rep->nfindings; i++) {
        const hbm_explain_finding *f = &rep->findings[i];
        json_t *nums = json_object();
        for (size_t k = 0; k < f->nnums; k++) {
            double v = f->nums[k].value;
            json_t *jv;
            if (isnan(v))
                jv = text_json(f->nums[k].text);
            else if (f->nums[k].bytes || (v == floor(v) && fabs(v) < 9e15))
                jv = json_integer((json_int_t)llround(v)); /* sizes in whole bytes */
            else
                jv = json_real(v);
            json_object_set_new(nums, f->nums[k].name, jv);
        }
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(f->sig->id));
        json_object_set_new(o, "severity", json_string(f->sig->severity));
        json_object_set_new(o, "title", json_string(f->sig->title));
        json_object_set_new(o, "line", json_integer((json_int_t)f->line));
        json_object_set_new(o, "last_line", json_integer((json_int_t)f->last_line));
        json_object_set_new(o, "count", json_integer((json_int_t)f->count));
        json_object_set_new(o, "text", text_json(f->text));
        json_object_set_new(o, "detail", f->detail ? json_pack("{s:o,s:I}", "text",
                                                               text_json(f->detail), "line",
                                                               (json_int_t)f->detail_line)
                                                   : json_null());
        json_object_set_new(o, "cause", json_string(f->sig->cause));
        json_object_set_new(o, "meaning", strings_json(f->meaning, f->nmeaning));
        json_object_set_new(o, "numbers", nums);
        json_object_set_new(o, "remedies", strings_json(f->remedies, f->nremedies));
        json_object_set_new(o, "wrapper", json_boolean(f->sig->wrapper));
        json_object_set_new(o, "phase", json_string(hbm_explain_phase_id(f->phase)));
        json_object_set_new(o, "live", f->live ? json_incref(f->live) : json_null());
        json_array_append_new(findings, o);
    }
    json_t *tail = json_array();
    if (rep->nfindings == 0)
        for (size_t i = 0; i < rep->ntail; i++)
            json_array_append_new(tail, json_pack("{s:I,s:o}", "line",
                                                  (json_int_t)rep->tail[i].line, "text",
                                                  text_json(rep->tail[i].text)));
    json_t *procs = json_array();
    for (size_t i = 0; i < rep->nprocs; i++)
        json_array_append_new(procs, json_pack("{s:i,s:o,s:I}", "pid", rep->procs[i].pid, "name",
                                               text_json(rep->procs[i].name), "line",
                                               (json_int_t)rep->procs[i].line));
    json_t *facts = json_object();
    for (size_t i = 0; i < rep->nfacts; i++)
        json_object_set_new(facts, rep->facts[i].name,
                            json_pack("{s:o,s:I}", "value",
                                      text_json(rep->facts[i].text), "line",
                                      (json_int_t)rep->facts[i].line));
    return json_pack("{s:o,s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "findings", findings, "lines",
                     (json_int_t)rep->lines, "bytes", (json_int_t)rep->bytes, "cut_lines",
                     (json_int_t)rep->cut_lines, "error_lines", tail, "facts", facts,
                     "structure", structure_json(&rep->structure), "server_processes", procs);
}

json_t *hbm_explain_catalog_json(const hbm_catalog *cat)
{
    json_t *a = json_array();
    for (size_t i = 0; i < cat->n; i++) {
        const hbm_sig *s = &cat->sigs[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(s->id));
        json_object_set_new(o, "kind", json_string(s->kind));
        json_object_set_new(o, "severity", json_string(s->severity));
        json_object_set_new(o, "title", s->title ? json_string(s->title) : json_null());
        json_object_set_new(o, "products", products_json(s));
        json_object_set_new(o, "patterns", strings_json(s->patterns, s->npatterns));
        json_object_set_new(o, "cause", s->cause ? json_string(s->cause) : json_null());
        json_object_set_new(o, "remedies", notes_json(s->remedies, s->nremedies));
        json_object_set_new(o, "checks", strings_json(s->checks, s->nchecks));
        json_array_append_new(a, o);
    }
    return json_pack("{s:o}", "entries", a);
}

typedef struct reading_key {
    bool warning;
    uint64_t at;   /* the line it is read at */
    bool moved;    /* a summary read after its block */
    uint64_t line; /* among summaries of one block, the nearer to the cause first */
    size_t index;
} reading_key;

static int cmp_reading(const void *a, const void *b)
{
    const reading_key *x = a, *y = b;
    if (x->warning != y->warning)
        return x->warning ? 1 : -1;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    if (x->moved != y->moved)
        return x->moved ? 1 : -1;
    if (x->line != y->line)
        return (x->line < y->line) != x->moved ? -1 : 1;
    return x->index < y->index ? -1 : 1;
}

/* A summary (a wrapper) is read after a cause printed right after it (vLLM logs
 * "EngineCore failed to start." before the traceback that holds the cause), and a warning
 * after every failure: the first finding is the one to act on. */
void expl_order_for_reading(hbm_explain_report *rep)
{
    size_t n = rep->nfindings;
    if (n < 2)
        return;
    reading_key *keys = hbm_xcalloc(n, sizeof *keys);
    hbm_explain_finding *sorted = hbm_xcalloc(n, sizeof *sorted);
    for (size_t i = 0; i < n; i++) {
        const hbm_explain_finding *f = &rep->findings[i];
        reading_key *k = &keys[i];
        k->warning = strcmp(f->sig->severity, "error") != 0;
        k->at = k->line = f->line;
        k->index = i;
        for (size_t j = 0; f->sig->wrapper && j < n; j++) {
            uint64_t other = rep->findings[j].line;
            /* A summary goes after a cause printed with it; one logged before its traceback
             * also after the other summaries of that traceback. */
            if (other > k->at && other <= f->line + HBM_EXPLAIN_SUMMARY_BLOCK &&
                (f->sig->cause_after || !rep->findings[j].sig->wrapper))
                k->at = other;
        }
        k->moved = k->at != f->line;
    }
    qsort(keys, n, sizeof *keys, cmp_reading);
    for (size_t i = 0; i < n; i++)
        sorted[i] = rep->findings[keys[i].index];
    memcpy(rep->findings, sorted, n * sizeof *sorted);
    free(sorted);
    free(keys);
}

/* The server's own processes, from the prefixes its child processes' lines carry:
 * "(EngineCore_DP0 pid=68) ", "(APIServer pid=1) (EngineCore_DP0 pid=68) ". */
void expl_read_prefixes(hbm_explain_report *rep, const char *line, size_t len, uint64_t lineno)
{
    size_t p = 0;
    for (int k = 0; k < 3 && p < len && line[p] == '('; k++) {
        const char *close = memchr(line + p, ')', len - p < 64 ? len - p : 64);
        if (!close)
            return;
        size_t n = (size_t)(close - (line + p)) - 1;
        const char *in = line + p + 1, *at = NULL;
        for (size_t i = 0; i + 5 <= n && !at; i++)
            if (memcmp(in + i, " pid=", 5) == 0)
                at = in + i;
        if (!at || at == in || at + 5 >= close)
            return;
        long pid = strtol(at + 5, NULL, 10);
        if (pid > 0 && pid < INT32_MAX && !hbm_explain_report_proc(rep, pid) &&
            rep->nprocs < HBM_EXPLAIN_PROCS) {
            hbm_explain_proc *pr = &rep->procs[rep->nprocs++];
            pr->pid = (int)pid;
            char *name = hbm_redact_text(in, (size_t)(at - in)); /* it is printed */
            snprintf(pr->name, sizeof pr->name, "%s", name);
            free(name);
            pr->line = lineno;
        }
        p = (size_t)(close - line) + 1;
        while (p < len && line[p] == ' ')
            p++;
    }
}
