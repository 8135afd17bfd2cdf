/* Redaction of credentials in command lines and environments (include/hbm/redact.h). The
 * rule works on names and URL syntax, not on known tools, so a server hbmctl has never seen
 * is covered too. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "hbm/redact.h"
#include "hbm/util.h"

/* A name part that ends in one of these names a credential ("apikey", "hf-token",
 * "OPENAI_API_KEY"); "tokens" (a count, --max-num-batched-tokens) does not. */
static const char *const secret_ends[] = {"key", "token", "secret", "password", "passwd",
                                         "credential", "credentials"};

static bool secret_part(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof secret_ends / sizeof *secret_ends; i++) {
        size_t k = strlen(secret_ends[i]);
        if (n >= k && strncasecmp(s + n - k, secret_ends[i], k) == 0)
            return true;
    }
    return false;
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
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && name[i] != '-' && name[i] != '_' && name[i] != '.')
            continue;
        if (i > start && secret_part(name + start, i - start))
            return true;
        start = i + 1;
    }
    return false;
}


/* An environment-style NAME=value word: NAME is [A-Za-z_][A-Za-z0-9_]*. */
static size_t env_name_len(const char *w, size_t n)
{
    if (!n || !(isalpha((unsigned char)w[0]) || w[0] == '_'))
        return 0;
    size_t i = 1;
    while (i < n && (isalnum((unsigned char)w[i]) || w[i] == '_'))
        i++;
    return i < n && w[i] == '=' ? i : 0;
}

/* Copies w with the userinfo of every URL ("scheme://user:pass@host") replaced. */
static void put_urls(hbm_strbuf *o, const char *w, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *sep = memmem(w + i, n - i, "://", 3);
        if (!sep) {
            hbm_strbuf_add(o, w + i, n - i);
            return;
        }
        size_t auth = (size_t)(sep - w) + 3, end = auth, at = 0;
        while (end < n && !strchr("/?# ", w[end])) {
            if (w[end] == '@')
                at = end;
            end++;
        }
        if (at > auth) {
            hbm_strbuf_add(o, w + i, auth - i);
            hbm_strbuf_add(o, HBM_REDACTED, strlen(HBM_REDACTED));
            i = at;
        } else {
            hbm_strbuf_add(o, w + i, auth - i);
            i = auth;
        }
    }
}

/* One word; *next says the previous word was a credential option whose value is this one. */
static void put_word(hbm_strbuf *o, const char *w, size_t n, bool *next)
{
    bool was_next = *next;
    *next = false;
    if (was_next && !(n > 1 && w[0] == '-')) {
        hbm_strbuf_add(o, HBM_REDACTED, strlen(HBM_REDACTED));
        return;
    }
    size_t prefix = 0;
    if (n > 1 && w[0] == '-') {
        const char *eq = memchr(w, '=', n);
        if (hbm_redact_secret_name(w, n)) {
            if (!eq) {
                *next = true;
                hbm_strbuf_add(o, w, n);
                return;
            }
            hbm_strbuf_add(o, w, (size_t)(eq - w) + 1);
            hbm_strbuf_add(o, HBM_REDACTED, strlen(HBM_REDACTED));
            return;
        }
        if (eq) /* --env=HF_TOKEN=V: the value is itself a NAME=value word */
            prefix = (size_t)(eq - w) + 1;
    }
    size_t en = env_name_len(w + prefix, n - prefix);
    if (en && hbm_redact_secret_name(w + prefix, en)) {
        hbm_strbuf_add(o, w, prefix + en + 1);
        hbm_strbuf_add(o, HBM_REDACTED, strlen(HBM_REDACTED));
        return;
    }
    put_urls(o, w, n);
}

char *hbm_redact_words(const char *buf, size_t len, char sep)
{
    hbm_strbuf o = {hbm_xmalloc(len + 1), 0, len + 1};
    o.p[0] = '\0';
    bool next = false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && buf[i] != sep)
            continue;
        if (start)
            hbm_strbuf_add(&o, " ", 1);
        put_word(&o, buf + start, i - start, &next);
        start = i + 1;
    }
    return o.p;
}
