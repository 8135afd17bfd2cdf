/* Vendor error-code tables (data/codes.json): CUDA runtime and driver, NCCL, ACL, CANN,
 * HCCL and MindIE codes, each table citing the vendor's documentation. A line that no
 * signature explains is still explained when it names a code: by one of an entry's own
 * literals (its name or the vendor's message), or by a table's pattern capturing the code,
 * looked up exactly and else by the longest matching family prefix. Each entry and family
 * becomes a catalogue entry after the signatures, so findings, rendering and JSON are the
 * signatures' own. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain_int.h"
#include "hbm/util.h"

#define CODES_MAX_BYTES (4 * 1024 * 1024)
#define CODES_SCHEMA "hbmctl.codes/1"

typedef struct tload {
    const char *path;
    hbm_err *err;
    const char *table;
} tload;

static int tbad(tload *tl, const char *what)
{
    return hbm_err_set(tl->err, "%s: table '%s': %s", tl->path, tl->table ? tl->table : "?", what);
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

/* Table text is shown as is: a brace would read as a template expression. */
static bool plain(const char *s)
{
    return !s || !strpbrk(s, "{}");
}

static hbm_sig *new_entry(hbm_catalog *cat, const char *id)
{
    size_t i = cat->n + cat->ncodes++;
    cat->sigs = hbm_xrealloc(cat->sigs, (i + 1) * sizeof *cat->sigs);
    cat->rt = hbm_xrealloc(cat->rt, (i + 1) * sizeof *cat->rt);
    memset(&cat->sigs[i], 0, sizeof cat->sigs[i]);
    memset(&cat->rt[i], 0, sizeof cat->rt[i]);
    hbm_sig *s = &cat->sigs[i];
    s->id = hbm_xstrdup(id);
    for (char *p = s->id; *p; p++)
        *p = *p == '?' ? 'x' : isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '_';
    s->kind = hbm_xstrdup("failure");
    s->severity = hbm_xstrdup("error");
    cat->rt[i].kind = EXPL_FAILURE;
    cat->rt[i].names = hbm_xcalloc(1, sizeof *cat->rt[i].names);
    snprintf(cat->rt[i].names[0], sizeof cat->rt[i].names[0], "code");
    cat->rt[i].nnames = 1;
    return s;
}

static void add_note(hbm_sig_note **v, size_t *n, const char *text)
{
    *v = hbm_xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[(*n)++] = (hbm_sig_note){.text = hbm_xstrdup(text)};
}

static int add_remedies(tload *tl, hbm_sig *s, json_t *a)
{
    size_t i;
    json_t *r;
    json_array_foreach(a, i, r) {
        if (!json_is_string(r) || !plain(json_string_value(r)))
            return tbad(tl, "remedies must be strings without braces");
        add_note(&s->remedies, &s->nremedies, json_string_value(r));
    }
    return 0;
}

/* One code or family as a catalogue entry; *out is its index. */
static int make_entry(tload *tl, hbm_catalog *cat, json_t *t, json_t *e, bool family,
                      uint32_t *out)
{
    const char *code = str(e, family ? "prefix" : "code"), *name = str(e, "name");
    const char *meaning = str(e, "meaning"), *src = str(e, "source");
    if (!code || !meaning || !plain(meaning) || !plain(name))
        return tbad(tl, family ? "a family needs 'prefix' and 'meaning' (no braces)"
                               : "an entry needs 'code' and 'meaning' (no braces)");
    char *id = hbm_xasprintf("%s_%s%s", tl->table, family ? "family_" : "", code);
    *out = (uint32_t)(cat->n + cat->ncodes);
    hbm_sig *s = new_entry(cat, id);
    free(id);
    cat->rt[*out].detail_after = json_is_true(json_object_get(e, "detail_after"));
    s->wrapper = json_is_true(json_object_get(e, "summary"));
    for (size_t i = 0; i + 1 < cat->n + cat->ncodes; i++)
        if (strcmp(cat->sigs[i].id, s->id) == 0)
            return tbad(tl, "an entry's id is used twice");
    const char *title = str(t, "title");
    s->title = family ? hbm_xasprintf("%s %s... (family)", title, code)
                      : hbm_xasprintf("%s %s%s%s", title, code, name ? " " : "", name ? name : "");
    s->cause = hbm_xasprintf("%c%s.", toupper((unsigned char)meaning[0]), meaning + 1);
    s->products = hbm_xcalloc(1, sizeof *s->products);
    s->products[0].name = hbm_xstrdup(str(t, "product"));
    s->products[0].versions = hbm_xstrdup(str(t, "versions"));
    s->nproducts = 1;
    s->sources = hbm_xcalloc(1, sizeof *s->sources);
    s->sources[0] = hbm_xstrdup(src ? src : str(t, "source"));
    s->nsources = 1;
    char *note = hbm_xasprintf("From the vendor's table: %s", s->sources[0]);
    add_note(&s->meaning, &s->nmeaning, note);
    free(note);
    json_t *rem = json_object_get(e, "remedies");
    if (!json_is_array(rem) || json_array_size(rem) == 0)
        rem = json_object_get(t, "remedies");
    if (json_is_array(rem) && add_remedies(tl, s, rem) < 0)
        return -1;
    if (s->nremedies == 0) {
        char *r = hbm_xasprintf("Read the lines before it for the first error, and the vendor's "
                                "entry for %s (%s).", code, s->sources[0]);
        add_note(&s->remedies, &s->nremedies, r);
        free(r);
    }
    return 0;
}

static void add_key(expl_code_table *ct, const char *key, uint32_t entry)
{
    ct->keys = hbm_xrealloc(ct->keys, (ct->nkeys + 1) * sizeof *ct->keys);
    ct->keys[ct->nkeys++] = (expl_code_key){.key = hbm_xstrdup(key), .entry = entry};
}

static void add_kw(expl_code_table *ct, const char *kw)
{
    ct->kw = hbm_xrealloc(ct->kw, (ct->nkw + 1) * sizeof *ct->kw);
    ct->kw[ct->nkw++] = hbm_xstrdup(kw);
}

static int load_codes(tload *tl, hbm_catalog *cat, json_t *t, expl_code_table *ct,
                      bool family)
{
    json_t *a = json_object_get(t, family ? "families" : "codes");
    if (!a)
        return family ? 0 : tbad(tl, "'codes' is missing");
    if (!json_is_array(a))
        return tbad(tl, "'codes' and 'families' must be arrays");
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        uint32_t idx = 0;
        if (!json_is_object(e))
            return tbad(tl, "entries must be objects");
        if (make_entry(tl, cat, t, e, family, &idx) < 0)
            return -1;
        if (family) {
            ct->fams = hbm_xrealloc(ct->fams, (ct->nfams + 1) * sizeof *ct->fams);
            ct->fams[ct->nfams++] = (expl_code_family){hbm_xstrdup(str(e, "prefix")), idx};
            continue;
        }
        add_key(ct, str(e, "code"), idx);
        cat->rt[idx].code = ct->keys[ct->nkeys - 1].key;
        if (str(e, "name"))
            add_key(ct, str(e, "name"), idx);
        json_t *lits = json_object_get(e, "literals"), *l;
        size_t k;
        json_array_foreach(lits, k, l) {
            if (!json_is_string(l) || json_string_length(l) < 4)
                return tbad(tl, "literals must be strings of 4 bytes or more");
            add_kw(ct, json_string_value(l)); /* kept by the table for the needles */
            expl_needles_add(&cat->code_lit, ct->kw[ct->nkw - 1], idx);
        }
    }
    return 0;
}

static int compile_table(tload *tl, hbm_catalog *cat, json_t *t, expl_code_table *ct)
{
    json_t *pats = json_object_get(t, "patterns"), *p;
    size_t i;
    ct->re = hbm_xcalloc(json_array_size(pats) + 1, sizeof *ct->re);
    json_array_foreach(pats, i, p) {
        int ec;
        PCRE2_SIZE off;
        const char *src = json_string_value(p);
        pcre2_code *re = src ? pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, 0, &ec,
                                             &off, NULL)
                             : NULL;
        if (!re || pcre2_substring_number_from_name(re, (PCRE2_SPTR) "code") < 0) {
            pcre2_code_free(re);
            return tbad(tl, "patterns must compile and capture (?<code>...)");
        }
        uint32_t cap;
        pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &cap);
        if (cap + 1 > cat->max_ovector)
            cat->max_ovector = cap + 1;
        ct->re[ct->nre++] = re;
    }
    json_t *kws = json_object_get(t, "keywords"), *k;
    json_array_foreach(kws, i, k) {
        if (!json_is_string(k) || json_string_length(k) < 3)
            return tbad(tl, "keywords must be strings of 3 bytes or more");
        add_kw(ct, json_string_value(k));
    }
    /* Codes such as EI0006 hold no fixed word: their family and first two digits are one. */
    if (json_is_true(json_object_get(t, "prefix_keywords")))
        for (size_t f = 0; f < ct->nfams; f++)
            if (strlen(ct->fams[f].prefix) == 2 && !strchr(ct->fams[f].prefix, '?'))
                for (int d = 0; d < 100; d++) {
                    char kw[8];
                    snprintf(kw, sizeof kw, "%s%02d", ct->fams[f].prefix, d);
                    add_kw(ct, kw);
                }
    return 0;
}

static int load_table(tload *tl, hbm_catalog *cat, json_t *t, size_t ti)
{
    tl->table = str(t, "id");
    if (!tl->table || !str(t, "title") || !str(t, "product") || !str(t, "versions") ||
        !str(t, "source") || !json_is_array(json_object_get(t, "patterns")) ||
        !json_is_array(json_object_get(t, "keywords")))
        return tbad(tl, "needs id, title, product, versions, source, keywords and patterns");
    expl_code_table *ct = &cat->tables[ti];
    if (load_codes(tl, cat, t, ct, false) < 0 || load_codes(tl, cat, t, ct, true) < 0)
        return -1;
    size_t first_kw = ct->nkw; /* the literals are needles of their own */
    if (compile_table(tl, cat, t, ct) < 0)
        return -1;
    for (size_t i = first_kw; i < ct->nkw; i++)
        expl_needles_add(&cat->code_kw, ct->kw[i], (uint32_t)ti);
    return 0;
}

int expl_codes_load(hbm_catalog *cat, const char *path, hbm_err *err)
{
    char *text;
    size_t len;
    if (hbm_read_file(path, CODES_MAX_BYTES, &text, &len, err) < 0)
        return hbm_err_prefix(err, "code tables named by the catalogue");
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root)
        return hbm_err_set(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    tload tl = {.path = path, .err = err};
    json_t *tables = json_object_get(root, "tables");
    int rc = 0;
    if (!str(root, "schema") || strcmp(str(root, "schema"), CODES_SCHEMA) != 0 ||
        !json_is_array(tables)) {
        rc = hbm_err_set(err, "%s: not code tables (\"schema\": \"%s\" and \"tables\" expected)",
                         path, CODES_SCHEMA);
    } else {
        cat->tables = hbm_xcalloc(json_array_size(tables) + 1, sizeof *cat->tables);
        size_t i;
        json_t *t;
        json_array_foreach(tables, i, t) {
            cat->ntables = i + 1;
            if ((rc = json_is_object(t) ? load_table(&tl, cat, t, i) : tbad(&tl, "not an object")) < 0)
                break;
        }
    }
    json_decref(root);
    return rc;
}

void expl_codes_free(hbm_catalog *cat)
{
    for (size_t t = 0; t < cat->ntables; t++) {
        expl_code_table *ct = &cat->tables[t];
        for (size_t i = 0; i < ct->nre; i++)
            pcre2_code_free(ct->re[i]);
        free(ct->re);
        for (size_t i = 0; i < ct->nkeys; i++)
            free(ct->keys[i].key);
        free(ct->keys);
        for (size_t i = 0; i < ct->nfams; i++)
            free(ct->fams[i].prefix);
        free(ct->fams);
        for (size_t i = 0; i < ct->nkw; i++)
            free(ct->kw[i]);
        free(ct->kw);
    }
    free(cat->tables);
    cat->tables = NULL;
    cat->ntables = 0;
}

/* The family whose prefix matches most characters of code, or -1. */
static long family_of(const expl_code_table *ct, const char *code, size_t n)
{
    long best = -1;
    size_t best_fixed = 0;
    for (size_t f = 0; f < ct->nfams; f++) {
        const char *p = ct->fams[f].prefix;
        size_t pl = strlen(p), fixed = 0, i = 0;
        if (pl > n)
            continue;
        for (; i < pl && (p[i] == '?' || p[i] == code[i]); i++)
            fixed += p[i] != '?';
        if (i == pl && (best < 0 || fixed > best_fixed)) {
            best = (long)ct->fams[f].entry;
            best_fixed = fixed;
        }
    }
    return best;
}

long expl_codes_match(const hbm_catalog *cat, const char *line, size_t len,
                      pcre2_match_data *md, bool *captured, const uint32_t *lits, size_t nlits,
                      const uint32_t *tabs, size_t ntabs, const char **code, size_t *code_len)
{
    *captured = false;
    long first = -1;
    for (size_t i = 0; i < nlits; i++)
        if (first < 0 || (long)lits[i] < first)
            first = (long)lits[i];
    if (first >= 0) {
        *code = cat->rt[first].code ? cat->rt[first].code : "";
        *code_len = strlen(*code);
        return first;
    }
    for (size_t t = 0; t < cat->ntables; t++) {
        bool hit = false;
        for (size_t i = 0; i < ntabs && !hit; i++)
            hit = tabs[i] == t;
        if (!hit)
            continue;
        const expl_code_table *ct = &cat->tables[t];
        for (size_t r = 0; r < ct->nre; r++) {
            if (pcre2_match(ct->re[r], (PCRE2_SPTR)line, len, 0, 0, md, NULL) < 0)
                continue;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            int g = pcre2_substring_number_from_name(ct->re[r], (PCRE2_SPTR) "code");
            size_t n = ov[2 * g + 1] - ov[2 * g];
            *code = line + ov[2 * g];
            *code_len = n;
            *captured = true;
            for (size_t k = 0; k < ct->nkeys; k++)
                if (strlen(ct->keys[k].key) == n && memcmp(ct->keys[k].key, *code, n) == 0)
                    return (long)ct->keys[k].entry;
            long fam = family_of(ct, *code, n);
            if (fam >= 0)
                return fam;
        }
    }
    return -1;
}
