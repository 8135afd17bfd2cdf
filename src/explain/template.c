/* The small expression and template language of the catalogue: arithmetic and
 * comparisons over captured numbers, so an entry can say "36.75 GiB = 0.85 x total" or
 * "about 50 GiB is held outside this process" from what the line itself reports.
 * An unknown number (a capture the matching pattern does not have) makes the result NAN,
 * and a template with a NAN in it is not rendered rather than printed with a wrong value. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/explain.h"
#include "hbm/util.h"

typedef struct parser {
    const char *s;
    size_t pos;
    hbm_explain_lookup lookup;
    void *ctx;
    hbm_err *err;
    int failed;
} parser;

static double fail(parser *p, const char *what)
{
    if (!p->failed)
        hbm_err_set(p->err, "%s at offset %zu of \"%s\"", what, p->pos, p->s);
    p->failed = 1;
    return NAN;
}

static void skip_ws(parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
        p->pos++;
}

static bool accept(parser *p, const char *tok)
{
    skip_ws(p);
    size_t n = strlen(tok);
    if (strncmp(p->s + p->pos, tok, n) != 0)
        return false;
    /* "<" must not eat the first half of "<=" and so on. */
    if (n == 1 && strchr("<>=!", tok[0]) && p->s[p->pos + 1] == '=')
        return false;
    p->pos += n;
    return true;
}

static double parse_or(parser *p);

static double constant(const char *name, bool *found)
{
    static const struct {
        const char *name;
        double v;
    } k[] = {{"KiB", (double)HBM_KIB}, {"MiB", (double)HBM_MIB}, {"GiB", (double)HBM_GIB},
             {"TiB", (double)HBM_GIB * 1024.0}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(k[i].name, name) == 0) {
            *found = true;
            return k[i].v;
        }
    *found = false;
    return NAN;
}

static double call(parser *p, const char *fn)
{
    double a[2];
    int n = 0;
    skip_ws(p);
    if (!accept(p, ")")) {
        do {
            double v = parse_or(p);
            if (n < 2)
                a[n] = v;
            n++;
        } while (accept(p, ","));
        if (!accept(p, ")"))
            return fail(p, "expected ')'");
    }
    int want = (strcmp(fn, "min") == 0 || strcmp(fn, "max") == 0) ? 2 : 1;
    if (n != want)
        return fail(p, "wrong number of arguments");
    /* The one function an unknown value does not make unknown: a condition can then say
     * what to do when the log does not show a number. */
    if (strcmp(fn, "known") == 0)
        return !isnan(a[0]);
    if (isnan(a[0]) || (want == 2 && isnan(a[1])))
        return NAN;
    if (strcmp(fn, "min") == 0)
        return a[0] < a[1] ? a[0] : a[1];
    if (strcmp(fn, "max") == 0)
        return a[0] > a[1] ? a[0] : a[1];
    if (strcmp(fn, "abs") == 0)
        return fabs(a[0]);
    if (strcmp(fn, "floor") == 0)
        return floor(a[0]);
    if (strcmp(fn, "ceil") == 0)
        return ceil(a[0]);
    if (strcmp(fn, "round") == 0)
        return round(a[0]);
    return fail(p, "unknown function");
}

static double primary(parser *p)
{
    skip_ws(p);
    const char *at = p->s + p->pos;
    if (accept(p, "(")) {
        double v = parse_or(p);
        if (!accept(p, ")"))
            return fail(p, "expected ')'");
        return v;
    }
    if (isdigit((unsigned char)*at) || (*at == '.' && isdigit((unsigned char)at[1]))) {
        char *end;
        double v = strtod(at, &end);
        p->pos += (size_t)(end - at);
        return v;
    }
    if (isalpha((unsigned char)*at) || *at == '_') {
        size_t n = 0;
        while (isalnum((unsigned char)at[n]) || at[n] == '_')
            n++;
        char name[64];
        if (n >= sizeof name)
            return fail(p, "name too long");
        memcpy(name, at, n);
        name[n] = '\0';
        p->pos += n;
        if (accept(p, "("))
            return call(p, name);
        bool found;
        double v = constant(name, &found);
        if (found)
            return v;
        const char *text = NULL;
        if (!p->lookup(p->ctx, name, &v, &text)) {
            p->pos -= n;
            return fail(p, "unknown name");
        }
        return v;
    }
    return fail(p, *at ? "unexpected character" : "unexpected end");
}

static double unary(parser *p)
{
    if (accept(p, "-"))
        return -unary(p);
    if (accept(p, "!")) {
        double v = unary(p);
        return isnan(v) ? NAN : (v == 0.0);
    }
    return primary(p);
}

static double parse_mul(parser *p)
{
    double v = unary(p);
    for (;;) {
        if (accept(p, "*"))
            v *= unary(p);
        else if (accept(p, "/")) {
            double d = unary(p);
            v = d == 0.0 ? NAN : v / d;
        } else
            return v;
    }
}

static double parse_add(parser *p)
{
    double v = parse_mul(p);
    for (;;) {
        if (accept(p, "+"))
            v += parse_mul(p);
        else if (accept(p, "-"))
            v -= parse_mul(p);
        else
            return v;
    }
}

static double parse_cmp(parser *p)
{
    double a = parse_add(p);
    static const char *ops[] = {"<=", ">=", "==", "!=", "<", ">"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (!accept(p, ops[i]))
            continue;
        double b = parse_add(p);
        if (isnan(a) || isnan(b))
            return NAN;
        switch (i) {
        case 0: return a <= b;
        case 1: return a >= b;
        case 2: return a == b;
        case 3: return a != b;
        case 4: return a < b;
        default: return a > b;
        }
    }
    return a;
}

static double parse_and(parser *p)
{
    double v = parse_cmp(p);
    while (accept(p, "&&")) {
        double b = parse_cmp(p);
        if (v == 0.0 || b == 0.0)
            v = 0.0;
        else
            v = (isnan(v) || isnan(b)) ? NAN : 1.0;
    }
    return v;
}

static double parse_or(parser *p)
{
    double v = parse_and(p);
    while (accept(p, "||")) {
        double b = parse_and(p);
        if ((!isnan(v) && v != 0.0) || (!isnan(b) && b != 0.0))
            v = 1.0;
        else
            v = (isnan(v) || isnan(b)) ? NAN : 0.0;
    }
    return v;
}

int hbm_explain_eval(const char *expr, hbm_explain_lookup lookup, void *ctx, double *out,
                     hbm_err *err)
{
    parser p = {.s = expr, .lookup = lookup, .ctx = ctx, .err = err};
    double v = parse_or(&p);
    skip_ws(&p);
    if (!p.failed && p.s[p.pos])
        fail(&p, "unexpected text");
    if (p.failed)
        return -1;
    *out = v;
    return 0;
}


/* Plain numbers print without noise: integers as integers, others with two decimals
 * and trailing zeros dropped ("0.85", "16.58", "4096"). */
static void fmt_number(char *buf, size_t n, double v)
{
    if (fabs(v - round(v)) < 1e-9 && fabs(v) < 1e15) {
        snprintf(buf, n, "%.0f", v);
        return;
    }
    snprintf(buf, n, "%.2f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *e = buf + strlen(buf) - 1;
        while (e > dot && *e == '0')
            *e-- = '\0';
        if (e == dot)
            *e = '\0';
    }
}

static int format_value(hbm_strbuf *b, const char *expr, const char *fmt, hbm_explain_lookup lookup,
                        void *ctx, bool *unknown, hbm_err *err)
{
    char out[128];
    if (strcmp(fmt, "text") == 0) {
        double v;
        const char *text = NULL;
        char name[64];
        size_t n = strlen(expr);
        while (n && expr[n - 1] == ' ')
            n--;
        while (*expr == ' ')
            expr++, n--;
        if (n == 0 || n >= sizeof name)
            return hbm_err_set(err, "{%s:text} needs one capture name", expr);
        memcpy(name, expr, n);
        name[n] = '\0';
        if (!lookup(ctx, name, &v, &text))
            return hbm_err_set(err, "unknown name '%s'", name);
        if (!text) {
            *unknown = true;
            return 0;
        }
        hbm_strbuf_add(b, text, strlen(text));
        return 0;
    }
    double v;
    if (hbm_explain_eval(expr, lookup, ctx, &v, err) < 0)
        return -1;
    if (isnan(v) || isinf(v)) {
        *unknown = true;
        return 0;
    }
    if (fmt[0] == '\0')
        fmt_number(out, sizeof out, v);
    else if (strcmp(fmt, "size") == 0) {
        char mag[96];
        hbm_fmt_size(mag, sizeof mag, (int64_t)llround(fabs(v)));
        snprintf(out, sizeof out, "%s%s", v < 0 ? "-" : "", mag);
    }
    else if (strcmp(fmt, "pct") == 0)
        snprintf(out, sizeof out, "%.0f%%", v * 100.0);
    else if (strcmp(fmt, "int") == 0)
        snprintf(out, sizeof out, "%.0f", floor(v));
    else if (fmt[0] == '.' && fmt[1] >= '0' && fmt[1] <= '9' && fmt[2] == '\0')
        snprintf(out, sizeof out, "%.*f", fmt[1] - '0', v);
    else
        return hbm_err_set(err, "unknown format ':%s' (size, pct, int, text, .N)", fmt);
    hbm_strbuf_add(b, out, strlen(out));
    return 0;
}

char *hbm_explain_render(const char *tmpl, hbm_explain_lookup lookup, void *ctx,
                         bool *unknown, hbm_err *err)
{
    hbm_strbuf b = {0};
    *unknown = false;
    hbm_strbuf_add(&b, "", 0);
    const char *s = tmpl;
    while (*s) {
        const char *open = strchr(s, '{');
        if (!open) {
            hbm_strbuf_add(&b, s, strlen(s));
            break;
        }
        hbm_strbuf_add(&b, s, (size_t)(open - s));
        const char *close = strchr(open, '}');
        if (!close) {
            free(b.p);
            hbm_err_set(err, "'{' without '}' in \"%s\"", tmpl);
            return NULL;
        }
        char inner[256];
        size_t n = (size_t)(close - open - 1);
        if (n == 0 || n >= sizeof inner) {
            free(b.p);
            hbm_err_set(err, "empty or too long {...} in \"%s\"", tmpl);
            return NULL;
        }
        memcpy(inner, open + 1, n);
        inner[n] = '\0';
        char *colon = strchr(inner, ':');
        const char *fmt = "";
        if (colon) {
            *colon = '\0';
            fmt = colon + 1;
        }
        if (format_value(&b, inner, fmt, lookup, ctx, unknown, err) < 0) {
            free(b.p);
            hbm_err_prefix(err, "in \"%s\"", tmpl);
            return NULL;
        }
        s = close + 1;
    }
    if (*unknown) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
