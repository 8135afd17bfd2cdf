/* The signature catalogue: found, read, validated (every error names the entry) and
 * compiled once. The catalogue is data (data/signatures.json): adding a signature is an
 * edit there and a fixture under tests/fixtures/logs/sig/, never a code change. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain_int.h"
#include "hbm/util.h"

#define CATALOG_MAX_BYTES (8 * 1024 * 1024)
#define CATALOG_SCHEMA "hbmctl.signatures/1"

static const char *const known_checks[] = {"holders", "port", "servers", "visible_devices",
                                           "health", "dev_shm", "kernel_log", NULL};

/* ---- locating ---- */

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

int hbm_explain_catalog_locate(const char *explicit_path, char **path, const char **origin,
                               hbm_err *err)
{
    if (explicit_path) {
        if (!readable(explicit_path))
            return hbm_err_set(err, "--catalog %s: %s", explicit_path, strerror(errno));
        *path = hbm_xstrdup(explicit_path);
        *origin = "--catalog";
        return 0;
    }
    const char *env = getenv("HBMCTL_CATALOG");
    if (env && *env) {
        if (!readable(env))
            return hbm_err_set(err, "HBMCTL_CATALOG=%s: %s", env, strerror(errno));
        *path = hbm_xstrdup(env);
        *origin = "HBMCTL_CATALOG";
        return 0;
    }
    char tried[800] = "";
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char *cand = hbm_xasprintf("%s/../share/hbmctl/signatures.json", exe);
            if (readable(cand)) {
                *path = cand;
                *origin = "installed";
                return 0;
            }
            snprintf(tried, sizeof tried, "%s", cand);
            free(cand);
        }
    }
    char *src = hbm_xasprintf("%s/data/signatures.json", HBM_SOURCE_DIR);
    if (readable(src)) {
        *path = src;
        *origin = "source tree";
        return 0;
    }
    hbm_err_set(err,
                "no signature catalogue found (tried --catalog: not given; HBMCTL_CATALOG: "
                "not set; %s; %s); pass --catalog FILE or set HBMCTL_CATALOG",
                tried[0] ? tried : "executable path unknown", src);
    free(src);
    return -1;
}

/* ---- values ---- */

double expl_capture_value(const char *text, const expl_rt *rt, const char *name, bool *bytes)
{
    *bytes = false;
    char num[64];
    size_t k = 0;
    const char *p = text;
    while (*p == ' ')
        p++;
    for (; *p && k + 1 < sizeof num; p++)
        if (*p != ',')
            num[k++] = *p;
    num[k] = '\0';
    if (*p)
        return NAN;
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    if (end == num || errno || !isfinite(v))
        return NAN;
    while (*end == ' ')
        end++;
    if (*end == '\0') {
        for (size_t i = 0; i < rt->nunits; i++)
            if (strcmp(rt->units[i].name, name) == 0) {
                *bytes = true;
                return v * rt->units[i].mult;
            }
        return v;
    }
    int64_t size;
    if (hbm_parse_size(num, &size, NULL) == 0) {
        *bytes = true;
        return (double)size;
    }
    return NAN;
}

/* ---- loading ---- */

typedef struct loader {
    const char *origin;
    hbm_err *err;
    const hbm_sig *sig;
    size_t index;
} loader;

static int bad(loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(loader *ld, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hbm_err_set(ld->err, "%s", msg);
    if (ld->sig && ld->sig->id)
        hbm_err_prefix(ld->err, "%s: entry '%s'", ld->origin, ld->sig->id);
    else
        hbm_err_prefix(ld->err, "%s: entry #%zu", ld->origin, ld->index + 1);
    return -1;
}

static int get_string(loader *ld, json_t *obj, const char *key, bool required, char **out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        *out = NULL;
        return required ? bad(ld, "'%s' is missing", key) : 0;
    }
    if (!json_is_string(v) || json_string_length(v) == 0)
        return bad(ld, "'%s' must be a non-empty string", key);
    *out = hbm_xstrdup(json_string_value(v));
    return 0;
}

static int get_strings(loader *ld, json_t *obj, const char *key, bool required, char ***out,
                       size_t *n)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    *n = 0;
    if (!v)
        return required ? bad(ld, "'%s' is missing", key) : 0;
    if (!json_is_array(v) || (required && json_array_size(v) == 0))
        return bad(ld, "'%s' must be a non-empty array of strings", key);
    *out = hbm_xcalloc(json_array_size(v) + 1, sizeof **out);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || json_string_length(e) == 0)
            return bad(ld, "'%s' must hold non-empty strings", key);
        (*out)[(*n)++] = hbm_xstrdup(json_string_value(e));
    }
    return 0;
}

static int get_notes(loader *ld, json_t *obj, const char *key, bool required,
                     hbm_sig_note **out, size_t *n)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    *n = 0;
    if (!v)
        return required ? bad(ld, "'%s' is missing", key) : 0;
    if (!json_is_array(v) || (required && json_array_size(v) == 0))
        return bad(ld, "'%s' must be a non-empty array", key);
    *out = hbm_xcalloc(json_array_size(v) + 1, sizeof **out);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        hbm_sig_note *note = &(*out)[(*n)++];
        if (json_is_string(e)) {
            note->text = hbm_xstrdup(json_string_value(e));
            continue;
        }
        if (!json_is_object(e))
            return bad(ld, "'%s' items are strings or {text, when, else}", key);
        const char *k;
        json_t *x;
        json_object_foreach(e, k, x) {
            if (strcmp(k, "text") && strcmp(k, "when") && strcmp(k, "else"))
                return bad(ld, "unknown key '%s' in a note (text, when, else)", k);
        }
        if (get_string(ld, e, "text", true, &note->text) < 0 ||
            get_string(ld, e, "when", false, &note->when) < 0 ||
            get_string(ld, e, "else", false, &note->otherwise) < 0)
            return -1;
    }
    return 0;
}

static void free_notes(hbm_sig_note *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].text);
        free(v[i].when);
        free(v[i].otherwise);
    }
    free(v);
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void free_sig(hbm_sig *s, expl_rt *rt)
{
    free(s->id);
    free(s->kind);
    free(s->severity);
    free(s->title);
    free(s->cause);
    for (size_t i = 0; i < s->nproducts; i++) {
        free(s->products[i].name);
        free(s->products[i].versions);
    }
    free(s->products);
    free_strings(s->keywords, s->nkeywords);
    free_strings(s->patterns, s->npatterns);
    free_notes(s->meaning, s->nmeaning);
    free_notes(s->remedies, s->nremedies);
    free_strings(s->checks, s->nchecks);
    free_strings(s->sources, s->nsources);
    for (size_t i = 0; i < rt->nre; i++)
        pcre2_code_free(rt->re[i]);
    free(rt->re);
    free(rt->names);
    free(rt->units);
}

typedef struct known_ctx {
    const hbm_catalog *cat;
    const expl_rt *rt;
} known_ctx;

static bool has_name(const expl_rt *rt, const char *name)
{
    for (size_t i = 0; i < rt->nnames; i++)
        if (strcmp(rt->names[i], name) == 0)
            return true;
    return false;
}

/* Names a template may use: the entry's captures, own_<capture> for them, and log_<name>
 * for any fact's capture. */
static bool known_name(void *ctx, const char *name, double *value, const char **text)
{
    const known_ctx *kc = ctx;
    bool ok = has_name(kc->rt, name);
    if (!ok && strncmp(name, EXPL_OWN_PREFIX, strlen(EXPL_OWN_PREFIX)) == 0)
        ok = has_name(kc->rt, name + strlen(EXPL_OWN_PREFIX));
    if (!ok && strncmp(name, EXPL_FACT_PREFIX, strlen(EXPL_FACT_PREFIX)) == 0)
        for (size_t i = 0; i < kc->cat->n && !ok; i++)
            ok = kc->cat->rt[i].kind == EXPL_FACT &&
                 has_name(&kc->cat->rt[i], name + strlen(EXPL_FACT_PREFIX));
    *value = 1.0;
    *text = "x";
    return ok;
}

static void add_name(expl_rt *rt, const char *name)
{
    for (size_t i = 0; i < rt->nnames; i++)
        if (strcmp(rt->names[i], name) == 0)
            return;
    rt->names = hbm_xrealloc(rt->names, (rt->nnames + 1) * sizeof *rt->names);
    snprintf(rt->names[rt->nnames++], sizeof rt->names[0], "%s", name);
}

static int compile_patterns(loader *ld, hbm_sig *s, expl_rt *rt, uint32_t *max_ov)
{
    rt->re = hbm_xcalloc(s->npatterns, sizeof *rt->re);
    for (size_t i = 0; i < s->npatterns; i++) {
        int code;
        PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)s->patterns[i], PCRE2_ZERO_TERMINATED, 0,
                                       &code, &off, NULL);
        if (!re) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof msg);
            char what[400];
            snprintf(what, sizeof what, "patterns[%zu]: %s at offset %zu", i, (char *)msg,
                     (size_t)off);
            return bad(ld, "%s", what);
        }
        /* JIT makes the patterns cheap enough for gigabyte logs; without it (some
         * architectures) the interpreter gives the same answers. */
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
        rt->re[rt->nre++] = re;
        uint32_t caps = 0, count = 0, size = 0;
        PCRE2_SPTR table;
        pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &caps);
        if (caps + 1 > *max_ov)
            *max_ov = caps + 1;
        pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &count);
        pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &size);
        pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &table);
        for (uint32_t k = 0; k < count; k++) {
            const char *name = (const char *)table + k * size + 2;
            if (strlen(name) >= sizeof rt->names[0])
                return bad(ld, "capture name '%s' is too long", name);
            add_name(rt, name);
        }
    }
    return 0;
}

static int check_template(loader *ld, known_ctx *kc, const char *what, const char *tmpl,
                          bool is_expr)
{
    if (!tmpl)
        return 0;
    hbm_err e = {{0}};
    int rc;
    if (is_expr) {
        double v;
        rc = hbm_explain_eval(tmpl, known_name, kc, &v, &e);
    } else {
        bool unknown;
        char *out = hbm_explain_render(tmpl, known_name, kc, &unknown, &e);
        rc = out || unknown ? 0 : -1;
        free(out);
    }
    if (rc < 0) {
        char msg[1200];
        snprintf(msg, sizeof msg, "%s: %s", what, e.msg);
        return bad(ld, "%s", msg);
    }
    return 0;
}

static int get_units(loader *ld, json_t *obj, expl_rt *rt)
{
    json_t *v = json_object_get(obj, "units");
    if (!v)
        return 0;
    if (!json_is_object(v))
        return bad(ld, "'%s' must be an object {capture: unit}", "units");
    static const struct {
        const char *name;
        double mult;
    } mults[] = {{"B", 1}, {"KiB", (double)HBM_KIB}, {"MiB", (double)HBM_MIB},
                 {"GiB", (double)HBM_GIB}, {"TiB", (double)HBM_GIB * 1024}};
    const char *k;
    json_t *u;
    rt->units = hbm_xcalloc(json_object_size(v) + 1, sizeof *rt->units);
    json_object_foreach(v, k, u) {
        bool cap = false;
        for (size_t i = 0; i < rt->nnames; i++)
            cap |= strcmp(rt->names[i], k) == 0;
        if (!cap)
            return bad(ld, "units: '%s' is not a capture of any pattern", k);
        double m = 0;
        for (size_t i = 0; json_is_string(u) && i < sizeof mults / sizeof mults[0]; i++)
            if (strcmp(json_string_value(u), mults[i].name) == 0)
                m = mults[i].mult;
        if (m == 0)
            return bad(ld, "units: '%s' must be B, KiB, MiB, GiB or TiB", k);
        expl_unit *eu = &rt->units[rt->nunits++];
        snprintf(eu->name, sizeof eu->name, "%s", k);
        eu->mult = m;
    }
    return 0;
}

static int load_entry(loader *ld, json_t *e, hbm_sig *s, expl_rt *rt, uint32_t *max_ov)
{
    if (!json_is_object(e))
        return bad(ld, "%s", "must be an object");
    static const char *const keys[] = {"id", "kind", "severity", "title", "cause", "wrapper",
                                       "cause_after", "products", "keywords", "patterns", "units", "meaning",
                                       "remedies", "checks", "sources", NULL};
    const char *k;
    json_t *x;
    if (get_string(ld, e, "id", true, &s->id) < 0)
        return -1;
    ld->sig = s;
    for (const char *p = s->id; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
            return bad(ld, "%s", "id may hold only a-z, 0-9 and _");
    json_object_foreach(e, k, x) {
        bool ok = false;
        for (size_t i = 0; keys[i]; i++)
            ok |= strcmp(keys[i], k) == 0;
        if (!ok)
            return bad(ld, "unknown key '%s'", k);
    }
    if (get_string(ld, e, "kind", false, &s->kind) < 0)
        return -1;
    if (!s->kind)
        s->kind = hbm_xstrdup("failure");
    if (strcmp(s->kind, "failure") == 0)
        rt->kind = EXPL_FAILURE;
    else if (strcmp(s->kind, "fact") == 0)
        rt->kind = EXPL_FACT;
    else if (strcmp(s->kind, "benign") == 0)
        rt->kind = EXPL_BENIGN;
    else
        return bad(ld, "kind '%s' is not failure, fact or benign", s->kind);
    bool failure = rt->kind == EXPL_FAILURE;
    if (get_string(ld, e, "severity", false, &s->severity) < 0 ||
        get_string(ld, e, "title", failure, &s->title) < 0 ||
        get_string(ld, e, "cause", failure, &s->cause) < 0 ||
        get_strings(ld, e, "keywords", true, &s->keywords, &s->nkeywords) < 0 ||
        get_strings(ld, e, "patterns", true, &s->patterns, &s->npatterns) < 0 ||
        get_strings(ld, e, "checks", false, &s->checks, &s->nchecks) < 0 ||
        get_strings(ld, e, "sources", false, &s->sources, &s->nsources) < 0)
        return -1;
    if (!s->severity)
        s->severity = hbm_xstrdup("error");
    if (strcmp(s->severity, "error") && strcmp(s->severity, "warning"))
        return bad(ld, "severity '%s' is not error or warning", s->severity);
    json_t *w = json_object_get(e, "wrapper");
    if (w && !json_is_boolean(w))
        return bad(ld, "%s", "'wrapper' must be true or false");
    s->wrapper = json_is_true(w);
    json_t *after = json_object_get(e, "cause_after");
    if (after && (!json_is_boolean(after) || (json_is_true(after) && !s->wrapper)))
        return bad(ld, "%s", "'cause_after' must be true or false, and true only on a wrapper");
    s->cause_after = json_is_true(after);
    for (size_t i = 0; i < s->nkeywords; i++)
        if (strlen(s->keywords[i]) < 3)
            return bad(ld, "keyword '%s' is shorter than 3 bytes", s->keywords[i]);
    for (size_t i = 0; i < s->nchecks; i++) {
        bool ok = false;
        for (size_t j = 0; known_checks[j]; j++)
            ok |= strcmp(known_checks[j], s->checks[i]) == 0;
        if (!ok)
            return bad(ld, "check '%s' is not one of holders, port, servers, visible_devices, "
                           "health, dev_shm, kernel_log", s->checks[i]);
    }
    json_t *prods = json_object_get(e, "products");
    if (failure && (!json_is_array(prods) || json_array_size(prods) == 0))
        return bad(ld, "%s", "'products' must list at least one {name, versions}");
    if (prods) {
        if (!json_is_array(prods))
            return bad(ld, "%s", "'products' must be an array");
        s->products = hbm_xcalloc(json_array_size(prods) + 1, sizeof *s->products);
        size_t i;
        json_t *p;
        json_array_foreach(prods, i, p) {
            hbm_sig_product *pr = &s->products[s->nproducts++];
            if (!json_is_object(p) || get_string(ld, p, "name", true, &pr->name) < 0 ||
                get_string(ld, p, "versions", true, &pr->versions) < 0)
                return bad(ld, "%s", "'products' items are {\"name\", \"versions\"}");
        }
    }
    if (compile_patterns(ld, s, rt, max_ov) < 0 || get_units(ld, e, rt) < 0)
        return -1;
    if (get_notes(ld, e, "meaning", false, &s->meaning, &s->nmeaning) < 0 ||
        get_notes(ld, e, "remedies", failure, &s->remedies, &s->nremedies) < 0)
        return -1;
    if (rt->kind == EXPL_FACT && rt->nnames == 0)
        return bad(ld, "%s", "a fact's patterns need named captures");
    return 0;
}

/* Templates are checked once every entry is loaded: they may name any fact (log_<name>). */
static int check_templates(loader *ld, const hbm_catalog *cat, size_t idx)
{
    const hbm_sig *s = &cat->sigs[idx];
    known_ctx kc = {.cat = cat, .rt = &cat->rt[idx]};
    ld->sig = s;
    ld->index = idx;
    for (size_t i = 0; i < s->nmeaning; i++)
        if (check_template(ld, &kc, "meaning", s->meaning[i].text, false) < 0 ||
            check_template(ld, &kc, "meaning 'when'", s->meaning[i].when, true) < 0 ||
            check_template(ld, &kc, "meaning 'else'", s->meaning[i].otherwise, false) < 0)
            return -1;
    for (size_t i = 0; i < s->nremedies; i++)
        if (check_template(ld, &kc, "remedies", s->remedies[i].text, false) < 0 ||
            check_template(ld, &kc, "remedies 'when'", s->remedies[i].when, true) < 0 ||
            check_template(ld, &kc, "remedies 'else'", s->remedies[i].otherwise, false) < 0)
            return -1;
    return 0;
}

int hbm_explain_catalog_parse(const char *text, size_t len, const char *origin,
                              hbm_catalog **out, hbm_err *err)
{
    if (expl_pcre_load(err) < 0)
        return -1;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root)
        return hbm_err_set(err, "%s:%d:%d: %s", origin, je.line, je.column, je.text);
    hbm_catalog *cat = hbm_xcalloc(1, sizeof *cat);
    expl_needles_init(&cat->kw, false);
    expl_needles_init(&cat->code_kw, false);
    expl_needles_init(&cat->code_lit, false);
    loader ld = {.origin = origin, .err = err};
    json_t *schema = json_object_get(root, "schema");
    json_t *entries = json_object_get(root, "entries");
    json_t *servers = json_object_get(root, "servers");
    json_t *codes = json_object_get(root, "code_tables");
    if (!json_is_object(root) || !json_is_string(schema) ||
        strcmp(json_string_value(schema), CATALOG_SCHEMA) != 0) {
        hbm_err_set(err, "%s: not a signature catalogue (\"schema\": \"%s\" expected)", origin,
                    CATALOG_SCHEMA);
        goto fail;
    }
    if (!json_is_array(entries) || json_array_size(entries) == 0) {
        hbm_err_set(err, "%s: \"entries\" must be a non-empty array", origin);
        goto fail;
    }
    if (codes && (!json_is_string(codes) || json_string_length(codes) == 0)) {
        hbm_err_set(err, "%s: \"code_tables\" must be a file name", origin);
        goto fail;
    }
    if (codes)
        cat->codes_file = hbm_xstrdup(json_string_value(codes));
    if (servers) {
        if (!json_is_array(servers)) {
            hbm_err_set(err, "%s: \"servers\" must be an array of strings", origin);
            goto fail;
        }
        cat->servers = hbm_xcalloc(json_array_size(servers) + 1, sizeof *cat->servers);
        size_t i;
        json_t *sv;
        json_array_foreach(servers, i, sv) {
            if (!json_is_string(sv) || json_string_length(sv) == 0) {
                hbm_err_set(err, "%s: \"servers\"[%zu] must be a non-empty string", origin, i);
                goto fail;
            }
            cat->servers[cat->nservers++] = hbm_xstrdup(json_string_value(sv));
        }
    }
    size_t n = json_array_size(entries);
    cat->sigs = hbm_xcalloc(n, sizeof *cat->sigs);
    cat->rt = hbm_xcalloc(n, sizeof *cat->rt);
    for (size_t i = 0; i < n; i++) {
        ld.index = i;
        ld.sig = NULL;
        cat->n = i + 1;
        if (load_entry(&ld, json_array_get(entries, i), &cat->sigs[i], &cat->rt[i],
                       &cat->max_ovector) < 0)
            goto fail;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cat->sigs[j].id, cat->sigs[i].id) == 0) {
                bad(&ld, "%s", "id is used twice");
                goto fail;
            }
        for (size_t k = 0; k < cat->sigs[i].nkeywords; k++)
            expl_needles_add(&cat->kw, cat->sigs[i].keywords[k], (uint32_t)i);
    }
    for (size_t i = 0; i < n; i++)
        if (check_templates(&ld, cat, i) < 0)
            goto fail;
    json_decref(root);
    *out = cat;
    return 0;
fail:
    json_decref(root);
    hbm_explain_catalog_free(cat);
    return -1;
}

int hbm_explain_catalog_load(const char *path, hbm_catalog **out, hbm_err *err)
{
    char *text;
    size_t len;
    if (hbm_read_file(path, CATALOG_MAX_BYTES, &text, &len, err) < 0)
        return -1;
    int rc = hbm_explain_catalog_parse(text, len, path, out, err);
    free(text);
    if (rc < 0 || !(*out)->codes_file)
        return rc;
    /* The code tables sit next to the catalogue that names them (installed together). */
    const char *slash = strrchr(path, '/');
    char *codes = (*out)->codes_file[0] == '/' ? hbm_xstrdup((*out)->codes_file)
                  : slash ? hbm_xasprintf("%.*s/%s", (int)(slash - path), path, (*out)->codes_file)
                          : hbm_xstrdup((*out)->codes_file);
    rc = expl_codes_load(*out, codes, err);
    free(codes);
    if (rc < 0) {
        hbm_explain_catalog_free(*out);
        *out = NULL;
    }
    return rc;
}

void hbm_explain_catalog_free(hbm_catalog *cat)
{
    if (!cat)
        return;
    for (size_t i = 0; i < cat->n + cat->ncodes; i++)
        free_sig(&cat->sigs[i], &cat->rt[i]);
    free(cat->sigs);
    free(cat->rt);
    free_strings(cat->servers, cat->nservers);
    free(cat->codes_file);
    expl_codes_free(cat);
    expl_needles_free(&cat->kw);
    expl_needles_free(&cat->code_kw);
    expl_needles_free(&cat->code_lit);
    free(cat);
}

size_t hbm_explain_catalog_size(const hbm_catalog *cat)
{
    return cat->n;
}

const hbm_sig *hbm_explain_catalog_get(const hbm_catalog *cat, size_t i)
{
    return i < cat->n ? &cat->sigs[i] : NULL;
}

const hbm_sig *hbm_explain_catalog_find(const hbm_catalog *cat, const char *id)
{
    for (size_t i = 0; i < cat->n + cat->ncodes; i++)
        if (strcmp(cat->sigs[i].id, id) == 0)
            return &cat->sigs[i];
    return NULL;
}

size_t hbm_explain_catalog_servers(const hbm_catalog *cat, const char *const **words)
{
    *words = (const char *const *)cat->servers;
    return cat->nservers;
}
