/* The exporter toolkit's web config (node-exporter's --web.config.file): TLS certificate and
 * key, and basic-auth users with bcrypt hashes. No YAML library is in the dependency list, so
 * this reads exactly the subset those keys need, strictly: two-level block mappings, comments,
 * plain and quoted scalars. Anything else is refused with its line and key, so a setting that
 * would be silently ignored (client certificates, cipher lists) never is. */
#include <crypt.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/libcrypt.h"
#include "hbm/export.h"

#define LINE_MAX_LEN 1024

typedef enum section { SEC_NONE, SEC_TLS, SEC_USERS } section;

typedef struct wparse {
    const char *name; /* file name for messages */
    int line;
    hbm_err *err;
} wparse;

static int fail(wparse *p, const char *key, const char *what)
{
    return hbm_err_set(p->err, "%s:%d: %s%s%s", p->name, p->line, key ? key : "",
                       key ? ": " : "", what);
}

/* A scalar: plain (trimmed), 'single' ('' for a quote) or "double" (\" and \\). */
static int scalar(wparse *p, const char *key, const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (n && (s[0] == '\'' || s[0] == '"')) {
        char q = s[0];
        size_t i = 1;
        for (; i < n; i++) {
            char c = s[i];
            if (c == q && q == '\'' && i + 1 < n && s[i + 1] == '\'')
                i++;
            else if (c == q)
                break;
            else if (c == '\\' && q == '"' && i + 1 < n && (s[i + 1] == '"' || s[i + 1] == '\\'))
                c = s[++i];
            else if (c == '\\' && q == '"')
                return fail(p, key, "only \\\" and \\\\ escapes are understood");
            if (o + 1 >= cap)
                return fail(p, key, "value too long");
            out[o++] = c;
        }
        if (i >= n)
            return fail(p, key, "unterminated quote");
        for (i++; i < n; i++)
            if (s[i] != ' ')
                return fail(p, key, "text after the closing quote");
    } else {
        if (n && strchr("[{&*!|>%@`", s[0]))
            return fail(p, key, "want a plain or quoted string");
        if (n + 1 > cap)
            return fail(p, key, "value too long");
        memcpy(out, s, n);
        o = n;
    }
    out[o] = '\0';
    return 0;
}

/* Cuts a comment (a '#' at the start or after a space, outside quotes) and trailing blanks. */
static size_t content_len(const char *s, size_t n)
{
    char q = 0;
    for (size_t i = 0; i < n; i++) {
        if (q) {
            if (s[i] == q)
                q = 0;
        } else if (s[i] == '\'' || s[i] == '"') {
            q = s[i];
        } else if (s[i] == '#' && (i == 0 || s[i - 1] == ' ')) {
            n = i;
            break;
        }
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    return n;
}

static bool is_bcrypt(const char *h)
{
    return strlen(h) == 60 && h[0] == '$' && h[1] == '2' && strchr("aby", h[2]) && h[3] == '$';
}

static int entry(wparse *p, section sec, const char *key, const char *val, size_t vl,
                 hbm_webconfig *w)
{
    char full[160];
    snprintf(full, sizeof full, "%s.%s", sec == SEC_TLS ? "tls_server_config" : "basic_auth_users",
             key);
    if (sec == SEC_TLS) {
        char *dst = !strcmp(key, "cert_file") ? w->cert_file
                    : !strcmp(key, "key_file") ? w->key_file
                                               : NULL;
        if (!dst)
            return fail(p, full, "not supported (only cert_file and key_file)");
        if (scalar(p, full, val, vl, dst, sizeof w->cert_file) < 0)
            return -1;
        return dst[0] ? 0 : fail(p, full, "empty");
    }
    if (w->nusers == HBM_WEB_USERS_MAX)
        return fail(p, full, "too many users");
    for (size_t i = 0; i < w->nusers; i++)
        if (!strcmp(w->users[i].name, key))
            return fail(p, full, "listed twice");
    hbm_web_user *u = &w->users[w->nusers];
    snprintf(u->name, sizeof u->name, "%s", key);
    if (scalar(p, full, val, vl, u->hash, sizeof u->hash) < 0)
        return -1;
    if (!is_bcrypt(u->hash))
        return fail(p, full, "not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)");
    w->nusers++;
    return 0;
}

/* One "key: value" or "key:" line, indent spaces deep. */
static int line(wparse *p, const char *s, size_t n, section *sec, hbm_webconfig *w)
{
    size_t ind = 0;
    while (ind < n && s[ind] == ' ')
        ind++;
    if (ind < n && s[ind] == '\t')
        return fail(p, NULL, "tabs are not allowed for indentation");
    const char *k = s + ind;
    const char *colon = memchr(k, ':', n - ind);
    if (!colon || (colon + 1 < s + n && colon[1] != ' '))
        return fail(p, NULL, "want 'key: value'");
    char key[64];
    if (scalar(p, NULL, k, (size_t)(colon - k), key, sizeof key) < 0)
        return -1;
    const char *v = colon + 1;
    while (v < s + n && *v == ' ')
        v++;
    size_t vl = (size_t)(s + n - v);
    if (ind == 0) {
        if (vl)
            return fail(p, key, "want a mapping below it");
        if (!strcmp(key, "tls_server_config"))
            *sec = SEC_TLS;
        else if (!strcmp(key, "basic_auth_users"))
            *sec = SEC_USERS;
        else
            return fail(p, key, "not supported (only tls_server_config and basic_auth_users)");
        return 0;
    }
    if (*sec == SEC_NONE)
        return fail(p, key, "indented without a section above it");
    if (!key[0] || !vl)
        return fail(p, key[0] ? key : NULL, "want 'key: value'");
    return entry(p, *sec, key, v, vl, w);
}

/* The setting an unknown user's password is hashed with: the costliest user's cost, so
 * that an unknown name takes the same bcrypt work as a known one. */
static void dummy_setting(hbm_webconfig *w)
{
    int cost = 0;
    const char *prefix = "$2b";
    for (size_t i = 0; i < w->nusers; i++) {
        const char *h = w->users[i].hash;
        int c = (h[4] - '0') * 10 + (h[5] - '0');
        if (c > cost) {
            cost = c;
            prefix = h[2] == 'a' ? "$2a" : h[2] == 'y' ? "$2y" : "$2b";
        }
    }
    snprintf(w->dummy, sizeof w->dummy, "%s$%02d$hbmctlunknownuserdummu", prefix, cost);
}

int hbm_webconfig_parse(const char *buf, size_t len, const char *name, hbm_webconfig *w,
                        hbm_err *err)
{
    memset(w, 0, sizeof *w);
    wparse p = {.name = name, .err = err};
    section sec = SEC_NONE;
    size_t at = 0;
    while (at < len) {
        const char *s = buf + at;
        const char *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl ? 1 : 0);
        p.line++;
        if (memchr(s, '\0', n))
            return fail(&p, NULL, "NUL byte");
        if (n > LINE_MAX_LEN)
            return fail(&p, NULL, "line too long");
        n = content_len(s, n);
        if (n == 0 || (p.line == 1 && n == 3 && !memcmp(s, "---", 3)))
            continue;
        if (line(&p, s, n, &sec, w) < 0)
            return -1;
    }
    p.line = 0;
    if (!w->cert_file[0] != !w->key_file[0])
        return hbm_err_set(err, "%s: tls_server_config.%s: missing", name,
                           w->cert_file[0] ? "key_file" : "cert_file");
    /* A file that secures nothing would start an open server that looks secured. */
    if (!w->cert_file[0] && w->nusers == 0)
        return hbm_err_set(err, "%s: enables neither TLS (tls_server_config) nor basic auth "
                                "(basic_auth_users); leave --web-config out to serve plain "
                                "HTTP without a password", name);
    dummy_setting(w);
    return 0;
}

/* A config or a PEM: small files, read whole into an owned, NUL-terminated string. */
static char *slurp(const char *path, size_t *len, hbm_err *err)
{
    char *b = NULL;
    return hbm_read_file(path, 64 << 10, &b, len, err) < 0 ? NULL : b;
}

/* cert_file and key_file are relative to the config's folder, as the exporter toolkit has it. */
static char *read_beside(const char *config, const char *file, const char *key, hbm_err *err)
{
    char path[1200], dir[1024];
    snprintf(dir, sizeof dir, "%s", config);
    snprintf(path, sizeof path, "%s%s%s", file[0] == '/' ? "" : dirname(dir),
             file[0] == '/' ? "" : "/", file);
    size_t n;
    char *b = slurp(path, &n, err);
    if (!b) {
        hbm_err_prefix(err, "%s: tls_server_config.%s", config, key);
        return NULL;
    }
    if (!strstr(b, "-----BEGIN ")) {
        free(b);
        hbm_err_set(err, "%s: tls_server_config.%s: %s is not PEM", config, key, path);
        return NULL;
    }
    return b;
}

int hbm_webconfig_load(const char *path, hbm_webconfig *w, hbm_err *err)
{
    size_t n;
    char *buf = slurp(path, &n, err);
    if (!buf) {
        memset(w, 0, sizeof *w);
        return -1;
    }
    int rc = hbm_webconfig_parse(buf, n, path, w, err);
    free(buf);
    /* at start-up rather than at the first scrape: a missing libcrypt is a setup error */
    if (rc == 0 && w->nusers && hbm_export_crypt_load(err) < 0)
        return -1;
    if (rc < 0 || !w->cert_file[0])
        return rc;
    if (!(w->cert_pem = read_beside(path, w->cert_file, "cert_file", err)) ||
        !(w->key_pem = read_beside(path, w->key_file, "key_file", err))) {
        hbm_webconfig_free(w);
        return -1;
    }
    return 0;
}

void hbm_webconfig_free(hbm_webconfig *w)
{
    free(w->cert_pem);
    free(w->key_pem);
    w->cert_pem = w->key_pem = NULL;
}

int hbm_webconfig_check(const hbm_webconfig *w, const char *user, const char *password)
{
    /* Every name is compared in full and the hash is chosen without an early exit: which
     * user exists must not show in the answer's timing. */
    char name[sizeof w->users[0].name] = {0};
    size_t ul = strlen(user);
    bool fits = ul < sizeof name;
    memcpy(name, user, fits ? ul : 0);
    const char *hash = w->dummy;
    int who = -1;
    for (size_t i = 0; i < w->nusers; i++) {
        unsigned char diff = 0;
        for (size_t k = 0; k < sizeof name; k++)
            diff |= (unsigned char)(name[k] ^ w->users[i].name[k]);
        bool match = fits && diff == 0;
        hash = match ? w->users[i].hash : hash;
        who = match ? (int)i : who;
    }
    struct crypt_data *cd = hbm_xcalloc(1, sizeof *cd);
    const char *h = crypt_r(password, hash, cd);
    size_t hl = strlen(hash);
    bool ok = h && strlen(h) == hl;
    /* Constant time: how much of a guess matched must not show in the answer's timing. */
    unsigned char diff = 0;
    for (size_t k = 0; ok && k < hl; k++)
        diff |= (unsigned char)(h[k] ^ hash[k]);
    explicit_bzero(cd, sizeof *cd);
    free(cd);
    return ok && diff == 0 ? who : -1;
}
