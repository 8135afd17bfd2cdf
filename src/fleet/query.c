/* Prometheus's HTTP API: instant queries (/api/v1/query) through the project's HTTP client,
 * and their JSON answers, read in one pass without a JSON tree: an answer for thousands of
 * nodes is tens of MB, and a tree of it costs several times that. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/fleet.h"
#include "hbm/http.h"
#include "hbm/util.h"

#define MAX_ANSWER (256u << 20) /* 5,000 nodes x 8 devices answer about 12 MB a query */
#define MAX_DEPTH 64            /* nesting of the values skipped (warnings, stats ...) */

void hbm_fleet_prom_vec_free(hbm_fleet_prom_vec *v)
{
    free(v->s);
    v->s = NULL;
    v->n = 0;
}

const char *hbm_fleet_prom_label(const hbm_fleet_prom_sample *s, const char *name)
{
    for (const char *k = s->labels; k && *k;) {
        const char *a = k, *b = name;
        while (*a && *a == *b)
            a++, b++;
        const char *v = a + strlen(a) + 1; /* past the name, wherever it differed */
        if (!*a && !*b)
            return v;
        k = v + strlen(v) + 1;
    }
    return "";
}

/* The reader: strings are decoded at w, which never passes r (a decoded string and its NUL
 * are shorter than the quoted text read), so the answer's buffer holds them. */
typedef struct jp {
    char *b;
    size_t n, r, w;
    int line;
    size_t line_at; /* offset of the current line's first byte */
    const char *what;
    hbm_err *err;
    const char *const *keep; /* the label names kept; NULL all */
} jp;

static int syntax(jp *p, const char *why)
{
    return hbm_err_set(p->err, "%s: answer line %d, column %zu: %s", p->what, p->line,
                       p->r - p->line_at + 1, why);
}

static int shape(jp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int shape(jp *p, const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return hbm_err_set(p->err, "%s: answer: %s", p->what, m);
}

static int peek(jp *p)
{
    while (p->r < p->n) {
        char c = p->b[p->r];
        if (c == '\n') {
            p->line++;
            p->line_at = p->r + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return (unsigned char)c;
        }
        p->r++;
    }
    return -1;
}

static int expect(jp *p, char c)
{
    if (peek(p) != (unsigned char)c) {
        char why[32];
        snprintf(why, sizeof why, "want '%c'", c);
        return syntax(p, why);
    }
    p->r++;
    return 0;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static long hex4(jp *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = p->r < p->n ? hexval((unsigned char)p->b[p->r]) : -1;
        if (h < 0)
            return -1;
        v = v * 16 + h;
        p->r++;
    }
    return v;
}

static void put_utf8(jp *p, long c)
{
    char *o = p->b + p->w;
    if (c < 0x80) {
        o[0] = (char)c;
        p->w += 1;
    } else if (c < 0x800) {
        o[0] = (char)(0xC0 | c >> 6);
        o[1] = (char)(0x80 | (c & 0x3F));
        p->w += 2;
    } else if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12);
        o[1] = (char)(0x80 | (c >> 6 & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        p->w += 3;
    } else {
        o[0] = (char)(0xF0 | c >> 18);
        o[1] = (char)(0x80 | (c >> 12 & 0x3F));
        o[2] = (char)(0x80 | (c >> 6 & 0x3F));
        o[3] = (char)(0x80 | (c & 0x3F));
        p->w += 4;
    }
}

/* \uHHHH (a surrogate pair too) after the backslash and 'u'; NUL is refused: it would cut a
 * label short. */
static int unicode_escape(jp *p)
{
    long c = hex4(p);
    if (c >= 0xD800 && c <= 0xDBFF) {
        long lo = -1;
        if (p->r + 1 < p->n && p->b[p->r] == '\\' && p->b[p->r + 1] == 'u') {
            p->r += 2;
            lo = hex4(p);
        }
        if (lo < 0xDC00 || lo > 0xDFFF)
            return syntax(p, "a lone UTF-16 surrogate");
        c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
    } else if (c >= 0xDC00 && c <= 0xDFFF) {
        return syntax(p, "a lone UTF-16 surrogate");
    }
    if (c <= 0)
        return syntax(p, c < 0 ? "bad \\u escape" : "a NUL in a string");
    put_utf8(p, c);
    return 0;
}

/* Length of the valid UTF-8 sequence at s (lead byte >= 0x80), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
    size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (!len || len > left || s[0] > 0xF4)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) ||
        (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] > 0x8F))
        return 0; /* overlong, surrogate or past U+10FFFF */
    return len;
}

static int escape(jp *p)
{
    if (++p->r >= p->n)
        return syntax(p, "unterminated string");
    char c = p->b[p->r++];
    const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
    const char *at = strchr(from, c);
    if (c == 'u')
        return unicode_escape(p);
    if (!c || !at)
        return syntax(p, "bad escape");
    p->b[p->w++] = to[at - from];
    return 0;
}

/* The string at r, decoded at w and NUL-terminated; *out points at it. */
static int string(jp *p, char **out)
{
    if (peek(p) != '"')
        return syntax(p, "want a string");
    p->r++;
    *out = p->b + p->w;
    for (;;) {
        if (p->r >= p->n)
            return syntax(p, "unterminated string");
        unsigned char c = (unsigned char)p->b[p->r];
        if (c == '"')
            break;
        if (c < 0x20)
            return syntax(p, "a control character in a string");
        if (c == '\\') {
            if (escape(p) < 0)
                return -1;
        } else if (c < 0x80) {
            /* a run of plain ASCII moved at once: most label text is */
            size_t e = p->r + 1;
            while (e < p->n && (unsigned char)p->b[e] >= 0x20 && (unsigned char)p->b[e] < 0x80 &&
                   p->b[e] != '"' && p->b[e] != '\\')
                e++;
            if (p->w != p->r)
                memmove(p->b + p->w, p->b + p->r, e - p->r);
            p->w += e - p->r;
            p->r = e;
        } else {
            size_t len = utf8_len((const unsigned char *)p->b + p->r, p->n - p->r);
            if (!len)
                return syntax(p, "invalid UTF-8");
            memmove(p->b + p->w, p->b + p->r, len);
            p->w += len;
            p->r += len;
        }
    }
    p->r++;
    p->b[p->w++] = '\0';
    return 0;
}

/* A string passed over: only its end is found (its text is never used). */
static int skip_string(jp *p)
{
    for (size_t at = p->r + 1;;) {
        const char *q = memchr(p->b + at, '"', p->n - at);
        if (!q)
            return syntax(p, "unterminated string");
        size_t end = (size_t)(q - p->b), bs = 0;
        while (end - bs > p->r + 1 && p->b[end - bs - 1] == '\\')
            bs++;
        if (bs % 2 == 0) {
            p->r = end + 1;
            return 0;
        }
        at = end + 1;
    }
}

static bool kept(const jp *p, const char *name)
{
    if (!p->keep)
        return true;
    for (const char *const *k = p->keep; *k; k++)
        if (!strcmp(*k, name))
            return true;
    return false;
}

/* A JSON number at r (its text is checked, its value taken when out is set). */
static int number(jp *p, double *out)
{
    peek(p);
    size_t s = p->r, i = s;
    if (i < p->n && p->b[i] == '-')
        i++;
    size_t digits = i;
    while (i < p->n && p->b[i] >= '0' && p->b[i] <= '9')
        i++;
    if (i == digits || (p->b[digits] == '0' && i - digits > 1))
        return syntax(p, "want a number");
    if (i < p->n && p->b[i] == '.') {
        size_t f = ++i;
        while (i < p->n && p->b[i] >= '0' && p->b[i] <= '9')
            i++;
        if (i == f)
            return syntax(p, "want a number");
    }
    if (i < p->n && (p->b[i] == 'e' || p->b[i] == 'E')) {
        i += i + 1 < p->n && (p->b[i + 1] == '+' || p->b[i + 1] == '-') ? 2 : 1;
        size_t e = i;
        while (i < p->n && p->b[i] >= '0' && p->b[i] <= '9')
            i++;
        if (i == e)
            return syntax(p, "want a number");
    }
    char text[64];
    snprintf(text, sizeof text, "%.*s", (int)(i - s < 63 ? i - s : 63), p->b + s);
    if (out)
        *out = strtod(text, NULL);
    p->r = i;
    return 0;
}

/* A member's name and its ':'; the name is decoded at w, which is given back: it is valid
 * until the next string is decoded. */
static int member(jp *p, char **k)
{
    size_t w = p->w;
    if (string(p, k) < 0 || expect(p, ':') < 0)
        return -1;
    p->w = w;
    return 0;
}

static int skip(jp *p, int depth);

/* The members of an object or the elements of an array after its opening bracket. */
static int skip_items(jp *p, char close, int depth)
{
    if (peek(p) == close) {
        p->r++;
        return 0;
    }
    for (;;) {
        char *key;
        if (close == '}' && member(p, &key) < 0)
            return -1;
        if (skip(p, depth + 1) < 0)
            return -1;
        int c = peek(p);
        p->r++;
        if (c == close)
            return 0;
        if (c != ',')
            return syntax(p, close == '}' ? "want ',' or '}'" : "want ',' or ']'");
    }
}

/* Any value, checked and passed over. */
static int skip(jp *p, int depth)
{
    if (depth > MAX_DEPTH)
        return syntax(p, "nested too deep");
    int c = peek(p);
    if (c == '{' || c == '[') {
        p->r++;
        return skip_items(p, c == '{' ? '}' : ']', depth);
    }
    if (c == '"')
        return skip_string(p);
    if (c == '-' || (c >= '0' && c <= '9'))
        return number(p, NULL);
    for (const char *const *lit = (const char *const[]){"true", "false", "null", NULL}; *lit;
         lit++) {
        size_t l = strlen(*lit);
        if (p->n - p->r >= l && !memcmp(p->b + p->r, *lit, l)) {
            p->r += l;
            return 0;
        }
    }
    return syntax(p, c < 0 ? "unexpected end" : "want a value");
}

/* After an item of an object or array: 1 when another follows, 0 at the closing bracket. */
static int next(jp *p, char close)
{
    int c = peek(p);
    p->r++;
    if (c == ',')
        return 1;
    if (c == close)
        return 0;
    return syntax(p, close == '}' ? "want ',' or '}'" : "want ',' or ']'");
}

/* Opens an object or array; 1 when it has items, 0 when empty. */
static int enter(jp *p, char c)
{
    if (expect(p, c) < 0)
        return -1;
    if (peek(p) == (c == '{' ? '}' : ']')) {
        p->r++;
        return 0;
    }
    return 1;
}

/* "metric": {"name": "value", ...} written at w as name\0value\0...\0. */
static int labels(jp *p, size_t i, const char **out)
{
    if (peek(p) != '{')
        return shape(p, "data.result[%zu].metric: want an object", i);
    *out = p->b + p->w;
    int more = enter(p, '{');
    while (more > 0) {
        char *k, *v;
        if (string(p, &k) < 0 || expect(p, ':') < 0)
            return -1;
        if (!*k)
            return shape(p, "data.result[%zu].metric: an empty label name", i);
        if (peek(p) != '"')
            return shape(p, "data.result[%zu].metric.%.64s: not a string", i, k);
        if (!kept(p, k)) {
            p->w = k - p->b; /* neither the name nor the value is needed */
            if (skip_string(p) < 0)
                return -1;
        } else if (string(p, &v) < 0) {
            return -1;
        }
        more = next(p, '}');
    }
    if (more < 0)
        return -1;
    p->b[p->w++] = '\0'; /* w < r: the '{' read was never written */
    return 0;
}

/* "value": [unix_time, "number"], the number as Prometheus writes it (NaN, +Inf too). */
static int value(jp *p, size_t i, double *out)
{
    size_t w = p->w;
    char *s, *end;
    if (peek(p) != '[' || enter(p, '[') <= 0 || peek(p) == '"' || number(p, NULL) < 0 ||
        next(p, ']') != 1 || peek(p) != '"' || string(p, &s) < 0 || next(p, ']') != 0)
        return shape(p, "data.result[%zu]: want metric and value [time, \"number\"]", i);
    *out = strtod(s, &end);
    p->w = w;
    if (!*s || *end)
        return shape(p, "data.result[%zu]: want metric and value [time, \"number\"]", i);
    return 0;
}

static int sample(jp *p, hbm_fleet_prom_vec *out, size_t *cap)
{
    size_t i = out->n;
    if (peek(p) != '{')
        return shape(p, "data.result[%zu]: want metric and value [time, \"number\"]", i);
    if (out->n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        out->s = hbm_xrealloc(out->s, *cap * sizeof *out->s);
    }
    hbm_fleet_prom_sample *s = &out->s[out->n];
    s->labels = NULL;
    bool has_value = false;
    int more = enter(p, '{');
    while (more > 0) {
        char *k;
        if (member(p, &k) < 0)
            return -1;
        bool is_value = !strcmp(k, "value");
        int rc = !strcmp(k, "metric") ? labels(p, i, &s->labels)
                 : is_value           ? value(p, i, &s->value)
                                      : skip(p, 0);
        if (rc < 0)
            return -1;
        has_value |= is_value;
        more = next(p, '}');
    }
    if (more < 0)
        return -1;
    if (!s->labels || !has_value)
        return shape(p, "data.result[%zu]: want metric and value [time, \"number\"]", i);
    out->n++;
    return 0;
}

typedef struct answer {
    char *status, *error, *type;
    bool has_result;
} answer;

static int data(jp *p, answer *a, hbm_fleet_prom_vec *out)
{
    if (peek(p) != '{')
        return skip(p, 0);
    size_t cap = 0;
    int more = enter(p, '{');
    while (more > 0) {
        char *k;
        if (member(p, &k) < 0)
            return -1;
        int rc;
        if (!strcmp(k, "resultType") && peek(p) == '"') {
            rc = string(p, &a->type);
        } else if (!strcmp(k, "result") && peek(p) == '[' &&
                   (!a->type || !strcmp(a->type, "vector"))) {
            /* Prometheus writes resultType first; a scalar's [t, "v"] is not read as samples */
            a->has_result = true;
            rc = more = enter(p, '[');
            while (more > 0 && (rc = sample(p, out, &cap)) == 0)
                more = rc = next(p, ']');
        } else {
            rc = skip(p, 0);
        }
        if (rc < 0)
            return -1;
        more = next(p, '}');
    }
    return more;
}

static int root(jp *p, answer *a, hbm_fleet_prom_vec *out)
{
    if (peek(p) != '{')
        return syntax(p, "want a JSON object");
    int more = enter(p, '{');
    while (more > 0) {
        char *k;
        if (member(p, &k) < 0)
            return -1;
        int rc;
        if (!strcmp(k, "status") && peek(p) == '"')
            rc = string(p, &a->status);
        else if (!strcmp(k, "error") && peek(p) == '"')
            rc = string(p, &a->error);
        else if (!strcmp(k, "data"))
            rc = data(p, a, out);
        else
            rc = skip(p, 0);
        if (rc < 0)
            return -1;
        more = next(p, '}');
    }
    if (more < 0)
        return -1;
    if (peek(p) >= 0)
        return syntax(p, "text after the answer");
    return 0;
}

int hbm_fleet_prom_parse(char *buf, size_t len, const char *what, const char *const *keep,
                         hbm_fleet_prom_vec *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    jp p = {.b = buf, .n = len, .line = 1, .what = what, .err = err, .keep = keep};
    answer a = {0};
    int rc = root(&p, &a, out);
    if (rc == 0 && a.status && !strcmp(a.status, "error"))
        rc = hbm_err_set(err, "%s: Prometheus says: %.300s", what, a.error ? a.error : "error");
    else if (rc == 0 && (!a.status || strcmp(a.status, "success")))
        rc = hbm_err_set(err, "%s: answer: status must be \"success\" or \"error\"", what);
    else if (rc == 0 && (!a.type || strcmp(a.type, "vector") || !a.has_result))
        rc = hbm_err_set(err, "%s: answer: data must be a vector with a result array", what);
    if (rc < 0)
        hbm_fleet_prom_vec_free(out);
    return rc;
}

static void urlencode(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-_.~", c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

int hbm_fleet_prom_query(const hbm_fleet_opts *o, const char *base, const char *promql,
                         const char *const *keep, double at, double deadline,
                         hbm_fleet_prom_vec *out, char **body, hbm_err *err)
{
    char enc[4096], url[6144], what[2304];
    memset(out, 0, sizeof *out);
    *body = NULL;
    double total = o->timeout_s > 0 ? o->timeout_s : 10, left = deadline - hbm_now_mono();
    if (left < 0.001)
        return hbm_err_set(err, "%s: no answer within --timeout %gs (all queries together)",
                           base, total);
    urlencode(promql, enc, sizeof enc);
    snprintf(url, sizeof url, "%s/api/v1/query?query=%s&time=%.3f", base, enc, at);
    hbm_http_opts ho = {.timeout_s = left,
                        .user_agent = "hbmctl-fleet/" HBM_VERSION,
                        .bearer_token = o->bearer_token,
                        .username = o->username,
                        .password = o->password,
                        .ca_file = o->ca_file,
                        .max_body = MAX_ANSWER};
    hbm_http_result res;
    size_t len;
    hbm_err herr;
    if (hbm_http_fetch(url, &ho, &res, body, &len, &herr) < 0) {
        if (res.outcome == HBM_HTTP_TIMEOUT)
            return hbm_err_set(err, "%s: no answer within --timeout %gs (all queries "
                                    "together)", base, total);
        /* The client's message starts with the whole URL; the server's name is enough. */
        const char *why = strstr(herr.msg, ": ") ? strstr(herr.msg, ": ") + 2 : herr.msg;
        return hbm_err_set(err, "%s: %s", base, why);
    }
    int rc;
    snprintf(what, sizeof what, "%s, query %.2000s", base, promql);
    if (res.status == 401 || res.status == 403)
        rc = hbm_err_set(err, "%s: HTTP %ld: check --bearer-token-file or --user and "
                              "--password-file", base, res.status);
    else if (res.status != 200 && (res.status < 400 || res.status > 422))
        rc = hbm_err_set(err, "%s: HTTP %ld", what, res.status);
    else
        rc = hbm_fleet_prom_parse(*body, len, what, keep, out, err);
    if (rc < 0) {
        free(*body);
        *body = NULL;
    }
    return rc;
}
