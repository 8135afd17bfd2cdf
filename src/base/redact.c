/* The one redaction rule (include/hbm/redact.h). A credential's NAME decides, and the rule
 * knows the syntax around names, not tools, so a server hbmctl has never seen is covered
 * too: a command line is scanned word by word and every word (or log line) by the same
 * scanner, which carries "the next word is a credential" across words. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hbm/redact.h"
#include "hbm/text.h"
#include "hbm/util.h"

#define LIST_N(a) (sizeof(a) / sizeof *(a))

/* A name's last part ending in one of these names a credential ("apikey", "hf-token",
 * "OPENAI_API_KEY"); "tokens" (a count, --max-num-batched-tokens) and "tokenizer" do not. */
static const char *const cred_ends[] = {
    "key",        "token",       "secret",    "password", "passwd",  "passphrase",
    "credential", "credentials", "signature", "cookie",   "cookies", "bearer",
    "auth",       "session",     "sessionid", "authorization"};
/* Parts that name a credential only whole (sig=, DB_PASS=, MYSQL_PWD=, but not PWD=). */
static const char *const cred_whole[] = {"sig", "pass", "pwd"};
/* Trailing parts that qualify the credential before them (session_id, api_key_value). */
static const char *const qualifiers[] = {"id", "value", "val", "str", "string", "b64",
                                         "base64", "hex", "raw"};
/* Known safe names: a part just before the credential word that makes it a vocabulary
 * word or a lookup key (--bos-token, --sort-key, cache_key), and last parts that only end
 * like one (hotkey, noauth). */
static const char *const safe_before[] = {
    "bos",   "eos",    "pad",   "unk",       "sep",     "cls",     "mask",    "image",
    "video", "audio",  "special", "stop",    "start",   "end",     "think",   "tool",
    "placeholder", "sort", "partition", "cache", "routing", "group", "primary", "foreign",
    "hash",  "lookup", "index", "public",    "pub",     "dedup",   "idempotency", "metric",
    "label", "max",    "min",   "num",       "total"};
static const char *const safe_last[] = {"hotkey", "monkey", "turkey", "noauth"};
/* A first part that makes the name a switch, which takes no value (--enable-auth). */
static const char *const switches[] = {"enable", "disable", "no",   "allow", "skip",
                                       "require", "with",   "without", "show", "print"};

typedef struct part {
    const char *p;
    size_t n;
} part;

static bool in_list(const char *const *list, size_t n, part x)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == x.n && strncasecmp(list[i], x.p, x.n) == 0)
            return true;
    return false;
}

static bool cred_part(part x, size_t nparts)
{
    if (in_list(safe_last, LIST_N(safe_last), x))
        return false;
    for (size_t i = 0; i < LIST_N(cred_ends); i++) {
        size_t k = strlen(cred_ends[i]);
        if (x.n >= k && strncasecmp(x.p + x.n - k, cred_ends[i], k) == 0)
            return true;
    }
    if (x.n == 3 && strncasecmp(x.p, "pwd", 3) == 0) /* PWD alone is the working directory */
        return nparts > 1;
    return in_list(cred_whole, LIST_N(cred_whole), x);
}

/* Splits name at - _ . and at a lower-to-upper case step; keeps the first part and the
 * last ones when there are more than fit. Returns the number kept. */
static size_t split_parts(const char *s, size_t n, part *v, size_t cap)
{
    size_t np = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        bool camel = i > start && i < n && isupper((unsigned char)s[i]) &&
                     islower((unsigned char)s[i - 1]);
        if (i < n && s[i] != '-' && s[i] != '_' && s[i] != '.' && !camel)
            continue;
        if (i > start) {
            if (np == cap) {
                memmove(v + 1, v + 2, (cap - 2) * sizeof *v);
                np--;
            }
            v[np++] = (part){s + start, i - start};
        }
        start = camel ? i : i + 1;
    }
    return np;
}

bool hbm_redact_secret_name(const char *name, size_t len)
{
    while (len && *name == '-') {
        name++;
        len--;
    }
    const char *eq = memchr(name, '=', len);
    if (eq)
        len = (size_t)(eq - name);
    part v[16];
    size_t np = split_parts(name, len, v, LIST_N(v));
    if (!np || (np > 1 && in_list(switches, LIST_N(switches), v[0])))
        return false;
    size_t last = np - 1;
    while (last > 0 && in_list(qualifiers, LIST_N(qualifiers), v[last]))
        last--;
    if (!cred_part(v[last], np))
        return false;
    return last == 0 || !in_list(safe_before, LIST_N(safe_before), v[last - 1]);
}

/* The scanner over one segment: a word of a command line, or a whole free text. */
typedef struct rd {
    hbm_strbuf *o;
    const char *s;
    size_t n;
    bool pending; /* a credential option or "Bearer" came last: its value is next */
    bool at_end;  /* the segment ends the buffer */
    bool cut;     /* and the buffer was cut at a length limit */
} rd;

enum { V_WORD, V_FIELD, V_REST }; /* a value ends at a space, a delimiter, the segment end */

static void put(rd *r, const char *p, size_t n)
{
    hbm_strbuf_add(r->o, p, n);
}

static void put_red(rd *r)
{
    put(r, HBM_REDACTED, strlen(HBM_REDACTED));
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_name_ch(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/* c is one of set; a NUL byte (in a log line) is in none. */
static bool in_set(char c, const char *set)
{
    return c && strchr(set, c);
}

static bool same_word(const char *p, size_t n, const char *w)
{
    return strlen(w) == n && strncasecmp(p, w, n) == 0;
}

/* Values that hide nothing and that a reader needs to see (api_key=None, 'hf_token': True). */
static bool keep_literal(const char *p, size_t n)
{
    static const char *const keep[] = {"None", "null", "True", "False", "true", "false",
                                       HBM_REDACTED};
    for (size_t i = 0; i < LIST_N(keep); i++)
        if (strlen(keep[i]) == n && memcmp(p, keep[i], n) == 0)
            return true;
    return n == 0;
}

static bool auth_scheme(const char *p, size_t n)
{
    static const char *const schemes[] = {"bearer", "basic", "digest", "negotiate",
                                          "token",  "ntlm",  "apikey"};
    for (size_t i = 0; i < LIST_N(schemes); i++)
        if (same_word(p, n, schemes[i]))
            return true;
    return false;
}

/* "--port" or "--port=1": the next option, not a value (a value such as -X is one). */
static bool long_option(const char *p, size_t n)
{
    if (n < 3 || p[0] != '-' || p[1] != '-' || !islower((unsigned char)p[2]))
        return false;
    for (size_t i = 3; i < n && p[i] != '='; i++)
        if (!islower((unsigned char)p[i]) && !isdigit((unsigned char)p[i]) && p[i] != '-' &&
            p[i] != '_')
            return false;
    return true;
}

/* The next option at i (quoted in an argv list or not) rather than a value. */
static bool option_at(const rd *r, size_t i)
{
    if (i < r->n && (r->s[i] == '"' || r->s[i] == '\''))
        i++;
    size_t e = i;
    while (e < r->n && !is_space(r->s[e]) && !in_set(r->s[e], "'\","))
        e++;
    return long_option(r->s + i, e - i);
}

/* After the quote at i: the index past its match (a backslash escapes), or the end. */
static size_t quoted_end(const char *s, size_t n, size_t i)
{
    for (size_t k = i + 1; k < n; k++) {
        if (s[k] == '\\')
            k++;
        else if (s[k] == s[i])
            return k + 1;
    }
    return n;
}

static size_t put_quoted(rd *r, size_t i)
{
    size_t e = quoted_end(r->s, r->n, i);
    put(r, r->s + i, 1);
    put_red(r);
    if (e - 1 > i && r->s[e - 1] == r->s[i])
        put(r, r->s + i, 1);
    return e;
}

/* A list, dict or tuple value: its shape stays (a reader such as plan's can still parse
 * it), every string and scalar in it goes. */
static size_t put_nested(rd *r, size_t i)
{
    size_t depth = 0, k = i;
    while (k < r->n) {
        char c = r->s[k];
        if (c == '\'' || c == '"') {
            k = put_quoted(r, k);
            continue;
        }
        if (in_set(c, "[{("))
            depth++;
        if (in_set(c, "[{()]},: \t")) {
            put(r, &c, 1);
            k++;
            if (in_set(c, ")]}") && --depth == 0)
                return k;
            continue;
        }
        size_t e = k;
        while (e < r->n && !in_set(r->s[e], "[{()]},: \t'\""))
            e++;
        if (keep_literal(r->s + k, e - k))
            put(r, r->s + k, e - k);
        else
            put_red(r);
        k = e;
    }
    return k;
}

static size_t value_end(const rd *r, size_t i, int mode)
{
    if (mode == V_REST)
        return r->n;
    while (i < r->n && !is_space(r->s[i]) && (mode == V_WORD || !in_set(r->s[i], "&,;)}]'\"")))
        i++;
    return i;
}

/* The credential at i, ending per mode; returns the index after it. */
static size_t put_value(rd *r, size_t i, int mode)
{
    if (i >= r->n)
        return i;
    char c = r->s[i];
    if (c == '\'' || c == '"')
        return put_quoted(r, i);
    if (c == '[' || c == '{' || c == '(')
        return put_nested(r, i);
    size_t e = value_end(r, i, mode == V_REST ? V_WORD : mode);
    if (auth_scheme(r->s + i, e - i) && e < r->n && is_space(r->s[e])) {
        size_t v = e; /* "Bearer X": the scheme stays, the credential goes */
        while (v < r->n && is_space(r->s[v]))
            v++;
        put(r, r->s + i, v - i);
        return put_value(r, v, mode == V_REST ? V_REST : V_WORD);
    }
    e = value_end(r, i, mode);
    if (keep_literal(r->s + i, e - i))
        put(r, r->s + i, e - i);
    else
        put_red(r);
    return e;
}

/* "user:pa/ss": an authority whose text after ':' is no port may hide a '/' in a password. */
static bool colon_secret(const char *a, size_t n)
{
    const char *colon = memchr(a, ':', n);
    if (!colon || a[0] == '[')
        return false;
    for (const char *p = colon + 1; p < a + n; p++)
        if (!isdigit((unsigned char)*p))
            return true;
    return false;
}

/* At a (after "://"): hides the URL's user info; returns where scanning goes on. */
static size_t put_url(rd *r, size_t a)
{
    const char *s = r->s;
    size_t e = a, p = a, at = 0;
    while (e < r->n && !is_space(s[e]) && s[e] != '"' && s[e] != '\'')
        e++;
    while (p < e && !in_set(s[p], "/?#"))
        p++;
    for (size_t k = a; k < p; k++)
        if (s[k] == '@')
            at = k + 1;
    if (!at && colon_secret(s + a, p - a)) {
        size_t k = p;
        while (k < e && s[k] != '@' && s[k] != '?' && s[k] != '#')
            k++;
        while (k < e && s[k] == '@') { /* the last '@' before the host's path */
            at = k + 1;
            for (k = at; k < e && !in_set(s[k], "/?#@"); k++)
                ;
        }
    }
    put(r, "://", 3);
    if (at) {
        put_red(r);
        return at - 1;
    }
    /* the buffer ends inside what may be user info: no '@' came, nothing of it is shown */
    if (r->at_end && e == r->n && (r->cut || (p == e && colon_secret(s + a, e - a)))) {
        put_red(r);
        return e;
    }
    return a;
}

/* The name starting at i, and its value when it names a credential; returns the index
 * after both. word: the segment is one whole word of a command line. */
static size_t put_name(rd *r, size_t i, bool word)
{
    const char *s = r->s;
    size_t j = i;
    while (j < r->n && is_name_ch(s[j]))
        j++;
    bool secret = hbm_redact_secret_name(s + i, j - i);
    bool ends_word = j == r->n ? word : is_space(s[j]);
    if (!secret) {
        put(r, s + i, j - i);
        return j;
    }
    size_t k = j;
    if (i > 0 && (s[i - 1] == '"' || s[i - 1] == '\'') && k < r->n && s[k] == s[i - 1])
        for (k++; k < r->n && s[k] == ' '; k++) /* a quoted key: "api_key" : */
            ;
    bool url = k + 2 < r->n && s[k + 1] == '/' && s[k + 2] == '/';
    if (k < r->n && (s[k] == '=' || (s[k] == ':' && !url))) {
        size_t v = k + 1;
        while (v < r->n && s[v] == ' ')
            v++;
        put(r, s + i, v - i);
        return put_value(r, v, word && i == 0 && s[k] == '=' ? V_REST : V_FIELD);
    }
    put(r, s + i, j - i);
    if ((s[i] == '-' || same_word(s + i, j - i, "bearer")) && ends_word) {
        r->pending = true;
    } else if (s[i] == '-' && k > j && k < r->n && s[k] == ',') { /* ["--api-key", "V"] */
        put(r, s + j, k + 1 - j);
        r->pending = true;
        return k + 1;
    }
    return j;
}

static void scan(rd *r, bool word)
{
    const char *s = r->s;
    size_t i = 0;
    if (r->pending && word) {
        r->pending = false;
        if (r->n && !option_at(r, 0)) { /* the whole word is the value */
            put_value(r, 0, V_REST);
            return;
        }
    }
    while (i < r->n) {
        if (r->pending) {
            size_t j = i;
            while (j < r->n && is_space(s[j]))
                j++;
            put(r, s + i, j - i);
            if ((i = j) == r->n)
                break; /* the value is the next word */
            r->pending = false;
            if (!option_at(r, i)) {
                i = put_value(r, i, V_WORD);
                continue;
            }
        }
        if (s[i] == ':' && i + 2 < r->n && s[i + 1] == '/' && s[i + 2] == '/') {
            i = put_url(r, i + 3);
        } else if (is_name_ch(s[i]) && (i == 0 || !is_name_ch(s[i - 1]))) {
            i = put_name(r, i, word);
        } else {
            put(r, s + i, 1);
            i++;
        }
    }
}

/* The result as valid UTF-8, a byte that is none written "\xff": JSON (jansson) takes only
 * UTF-8, and a process name or argument must not vanish from a snapshot for one byte. */
static char *valid_utf8(hbm_strbuf *o)
{
    size_t i = 0, len;
    long cp;
    while (i < o->n && (len = hbm_text_next(o->p + i, o->n - i, &cp)) && cp >= 0)
        i += len;
    if (i == o->n)
        return o->p;
    hbm_strbuf v = {hbm_xmalloc(o->n + 16), 0, o->n + 16};
    hbm_strbuf_add(&v, o->p, i);
    while (i < o->n) {
        len = hbm_text_next(o->p + i, o->n - i, &cp);
        if (len && cp >= 0) {
            hbm_strbuf_add(&v, o->p + i, len);
            i += len;
            continue;
        }
        char esc[12];
        hbm_strbuf_add(&v, esc, hbm_text_escape(esc, -1, (unsigned char)o->p[i]));
        i++;
    }
    free(o->p);
    return v.p;
}

char *hbm_redact_words(const char *buf, size_t len, char sep, int flags)
{
    hbm_strbuf o = {hbm_xmalloc(len + 1), 0, len + 1};
    o.p[0] = '\0';
    rd r = {.o = &o, .cut = (flags & HBM_REDACT_CUT) != 0};
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && buf[i] != sep)
            continue;
        if (start)
            hbm_strbuf_add(&o, " ", 1);
        r.s = buf + start;
        r.n = i - start;
        r.at_end = i == len;
        scan(&r, true);
        start = i + 1;
    }
    return valid_utf8(&o);
}

char *hbm_redact_text(const char *s, size_t len)
{
    hbm_strbuf o = {hbm_xmalloc(len + 1), 0, len + 1};
    o.p[0] = '\0';
    rd r = {.o = &o, .s = s, .n = len, .at_end = true};
    scan(&r, false);
    return valid_utf8(&o);
}
