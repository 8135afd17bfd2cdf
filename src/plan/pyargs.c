/* vLLM's "non-default args: {...}" log line (the repr of a Python dict) read back as the
 * command-line words that produced it, so a log alone says how the server was launched. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

#define PYARGS_DEPTH 32 /* nesting a launch's values never reach */

typedef struct pyreader {
    const char *s;
    size_t len, pos;
    hbm_err *err;
} pyreader;

/* A growing string. */
typedef struct pybuf {
    char *s;
    size_t len, cap;
} pybuf;

static void buf_putn(pybuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = hbm_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void buf_putc(pybuf *b, char c)
{
    buf_putn(b, &c, 1);
}

static int fail(pyreader *r, const char *what)
{
    return hbm_err_set(r->err, "non-default args, column %zu: %s", r->pos + 1, what);
}

static void skip_space(pyreader *r)
{
    while (r->pos < r->len && isspace((unsigned char)r->s[r->pos]))
        r->pos++;
}

static int peek(pyreader *r)
{
    skip_space(r);
    return r->pos < r->len ? (unsigned char)r->s[r->pos] : -1;
}

/* A quoted string's contents into out (raw: unescaped; json: as a JSON string). */
static int read_string(pyreader *r, pybuf *out, bool json)
{
    char q = r->s[r->pos++];
    if (json)
        buf_putc(out, '"');
    while (r->pos < r->len && r->s[r->pos] != q) {
        char c = r->s[r->pos++];
        if (c == '\\') {
            if (r->pos >= r->len)
                break;
            c = r->s[r->pos++];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        if (json && (c == '"' || c == '\\'))
            buf_putc(out, '\\');
        if (json && c == '\n')
            buf_putn(out, "\\n", 2);
        else if (json && (unsigned char)c < 0x20)
            buf_putc(out, ' ');
        else
            buf_putc(out, c);
    }
    if (r->pos >= r->len)
        return fail(r, "a string is not closed");
    r->pos++;
    if (json)
        buf_putc(out, '"');
    return 0;
}

/* What a bare word stands for: True, False, None, a number, or a repr such as
 * KVTransferConfig(...) kept as text. */
typedef enum { BARE_TRUE, BARE_FALSE, BARE_NONE, BARE_NUMBER, BARE_TEXT } bare_kind;

static int read_bare(pyreader *r, pybuf *out, bare_kind *kind)
{
    size_t start = r->pos;
    int depth = 0;
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c == '(' || c == '<')
            depth++;
        else if ((c == ')' || c == '>') && depth > 0)
            depth--;
        else if (depth == 0 && (c == ',' || c == '}' || c == ']' || c == ':' ||
                                isspace((unsigned char)c)))
            break;
        r->pos++;
    }
    size_t n = r->pos - start;
    if (n == 0)
        return fail(r, "a value is missing");
    const char *w = r->s + start;
    char *end;
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(n < 63 ? n : 63), w);
    strtod(num, &end);
    if (n == 4 && !memcmp(w, "True", 4))
        *kind = BARE_TRUE;
    else if (n == 5 && !memcmp(w, "False", 5))
        *kind = BARE_FALSE;
    else if (n == 4 && !memcmp(w, "None", 4))
        *kind = BARE_NONE;
    else
        *kind = n < 63 && end != num && *end == 0 ? BARE_NUMBER : BARE_TEXT;
    buf_putn(out, w, n);
    return 0;
}

static int read_json_value(pyreader *r, pybuf *out, int depth);

/* A list, tuple or dict as JSON text. */
static int read_container(pyreader *r, pybuf *out, int depth)
{
    char open = r->s[r->pos++];
    char close = open == '{' ? '}' : open == '[' ? ']' : ')';
    buf_putc(out, open == '{' ? '{' : '[');
    for (int n = 0;; n++) {
        int c = peek(r);
        if (c == close) {
            r->pos++;
            buf_putc(out, open == '{' ? '}' : ']');
            return 0;
        }
        if (n > 0) {
            if (c != ',')
                return fail(r, "a comma or a closing bracket is missing");
            r->pos++;
            if (peek(r) == close)
                continue;
            buf_putc(out, ',');
        }
        if (read_json_value(r, out, depth + 1) < 0)
            return -1;
        if (open == '{') {
            if (peek(r) != ':')
                return fail(r, "a key has no ':'");
            r->pos++;
            buf_putc(out, ':');
            if (read_json_value(r, out, depth + 1) < 0)
                return -1;
        }
    }
}

static int read_json_value(pyreader *r, pybuf *out, int depth)
{
    if (depth > PYARGS_DEPTH)
        return fail(r, "values nest too deep");
    int c = peek(r);
    if (c < 0)
        return fail(r, "the text ends inside a value");
    if (c == '\'' || c == '"')
        return read_string(r, out, true);
    if (c == '{' || c == '[' || c == '(')
        return read_container(r, out, depth);
    pybuf word = {0};
    bare_kind kind;
    int rc = read_bare(r, &word, &kind);
    if (rc == 0) {
        if (kind == BARE_TRUE || kind == BARE_FALSE || kind == BARE_NONE)
            buf_putn(out, kind == BARE_TRUE ? "true" : kind == BARE_FALSE ? "false" : "null",
                     kind == BARE_FALSE ? 5 : 4);
        else if (kind == BARE_NUMBER)
            buf_putn(out, word.s, word.len);
        else {
            buf_putc(out, '"');
            for (size_t i = 0; i < word.len; i++) {
                if (word.s[i] == '"' || word.s[i] == '\\')
                    buf_putc(out, '\\');
                buf_putc(out, word.s[i]);
            }
            buf_putc(out, '"');
        }
    }
    free(word.s);
    return rc;
}

typedef struct pyargv {
    char **v;
    int n;
} pyargv;

static void argv_push(pyargv *a, char *word)
{
    a->v = hbm_xrealloc(a->v, sizeof *a->v * (size_t)(a->n + 2));
    a->v[a->n++] = word;
    a->v[a->n] = NULL;
}

/* "max_num_seqs" -> "--max-num-seqs" ("--no-..." when the value is False). */
static char *flag_of(const char *key, bool negated)
{
    char *f = hbm_xasprintf("--%s%s", negated ? "no-" : "", key);
    for (char *p = f + 2; *p; p++)
        if (*p == '_')
            *p = '-';
    return f;
}

/* One `'key': value` entry, appended as words. */
static int read_entry(pyreader *r, pyargv *a)
{
    if (peek(r) != '\'' && peek(r) != '"')
        return fail(r, "a key is not a quoted name");
    pybuf key = {0}, val = {0};
    int rc = read_string(r, &key, false);
    if (rc == 0 && peek(r) != ':')
        rc = fail(r, "a key has no ':'");
    if (rc == 0) {
        r->pos++;
        int c = peek(r);
        bare_kind kind = BARE_TEXT;
        if (c == '\'' || c == '"')
            rc = read_string(r, &val, false);
        else if (c == '{' || c == '[' || c == '(')
            rc = read_container(r, &val, 1);
        else
            rc = read_bare(r, &val, &kind);
        /* model_tag repeats the positional model that 'model' also names */
        bool keep = rc == 0 && key.s && strcmp(key.s, "model_tag") != 0 && kind != BARE_NONE;
        if (keep) {
            argv_push(a, flag_of(key.s, kind == BARE_FALSE));
            if (kind != BARE_TRUE && kind != BARE_FALSE)
                argv_push(a, val.s ? val.s : hbm_xstrdup("")), val.s = NULL;
        }
    }
    free(key.s);
    free(val.s);
    return rc;
}

int hbm_plan_argv_from_pydict(const char *text, size_t len, char ***argv, int *argc,
                              hbm_err *err)
{
    pyreader r = {.s = text, .len = len, .err = err};
    pyargv a = {0};
    *argv = NULL;
    *argc = 0;
    int rc = 0;
    if (peek(&r) != '{')
        rc = fail(&r, "not a dict (it starts with '{')");
    else
        r.pos++;
    for (int n = 0; rc == 0; n++) {
        int c = peek(&r);
        if (c == '}') {
            r.pos++;
            break;
        }
        if (n > 0) {
            if (c != ',') {
                rc = fail(&r, "a comma or '}' is missing");
                break;
            }
            r.pos++;
            if (peek(&r) == '}')
                continue;
        }
        rc = read_entry(&r, &a);
    }
    if (rc == 0 && peek(&r) >= 0)
        rc = fail(&r, "text follows the closing '}'");
    if (rc < 0) {
        hbm_plan_argv_free(a.v, a.n);
        return -1;
    }
    if (!a.v)
        a.v = hbm_xmalloc(sizeof *a.v), a.v[0] = NULL;
    *argv = a.v;
    *argc = a.n;
    return 0;
}

void hbm_plan_argv_free(char **argv, int argc)
{
    for (int i = 0; argv && i < argc; i++)
        free(argv[i]);
    free(argv);
}
