/* Basic auth that holds a flood. bcrypt is made to be slow (tens of ms of CPU at cost 10),
 * so the server never runs it on its event threads:
 *  - credentials verified once are remembered in a small cache keyed by an HMAC-SHA-256 of
 *    user and password under a key drawn at start (the plain password is never kept); a
 *    scrape with known-good credentials costs a digest, not a bcrypt;
 *  - anything else goes to one worker thread, so guesses use at most one core, through a
 *    queue as long as the server's connection limit (a connection has one request at a
 *    time) that serves the client served least recently first: a new client waits for the
 *    check running now, not for a flood's backlog, and a flood waits for its own checks
 *    instead of spinning on quick refusals.
 * The cache has one slot per user, which only that user's right password fills: it is
 * bounded by the config and a guesser cannot evict anything. Failures are not cached: a
 * cache of failures that a guesser fills at will would push the verified entries out (the
 * exporter toolkit's cache mixes both). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "export/export_int.h"

#define SERVED_MAX 64 /* clients remembered by when they were last served */
#define CLIENT_MAX 16 /* bytes of a client's identity kept (an IPv6 address) */

typedef struct client {
    uint8_t id[CLIENT_MAX];
    size_t len;
} client;

typedef struct job {
    hbm_auth_creds creds;
    client who;
    hbm_auth_done *done;
    void *ctx;
} job;

struct hbm_auth {
    const hbm_webconfig *web;
    uint8_t secret[32];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t cache[HBM_WEB_USERS_MAX][HBM_SHA256_LEN]; /* per user: its verified password */
    bool filled[HBM_WEB_USERS_MAX];
    job *queue; /* waiting, in arrival order */
    size_t n, cap;
    client served[SERVED_MAX]; /* clients by their last check, most recent first */
    size_t nserved;
    bool stop, joined;
    pthread_t worker;
};

static int b64(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Strict base64 (padding required as RFC 7617 sends it) into out; its length, or -1. */
static long b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            bool last = i + 4 == n;
            if (s[i + k] == '=' && last && k >= 2 && (k == 3 || s[i + 3] == '=')) {
                v[k] = 0;
                pad++;
            } else if ((v[k] = b64((unsigned char)s[i + k])) < 0 || pad) {
                return -1;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
                     (uint32_t)v[3];
        for (int k = 0; k < 3 - pad; k++) {
            if (o == cap)
                return -1;
            out[o++] = (uint8_t)(w >> (16 - 8 * k));
        }
    }
    return (long)o;
}

int hbm_basic_auth_decode(const char *header, size_t len, hbm_auth_creds *out)
{
    memset(out, 0, sizeof *out);
    static const char scheme[] = "Basic ";
    size_t sl = sizeof scheme - 1;
    if (len < sl || strncasecmp(header, scheme, sl))
        return -1;
    const char *s = header + sl;
    size_t n = len - sl;
    while (n && *s == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    uint8_t raw[sizeof out->user + sizeof out->pass + 1];
    long rl = b64_decode(s, n, raw, sizeof raw);
    const uint8_t *colon = rl > 0 ? memchr(raw, ':', (size_t)rl) : NULL;
    size_t ul = colon ? (size_t)(colon - raw) : 0, pl = colon ? (size_t)rl - ul - 1 : 0;
    bool ok = colon && ul < sizeof out->user && pl < sizeof out->pass &&
              !memchr(raw, '\0', (size_t)rl);
    if (ok) {
        memcpy(out->user, raw, ul);
        memcpy(out->pass, colon + 1, pl);
    }
    explicit_bzero(raw, sizeof raw);
    return ok ? 0 : -1;
}

/* The cache key: HMAC(secret, user NUL password); both parts hold no NUL. */
static void cache_key(const hbm_auth *a, const hbm_auth_creds *c, uint8_t key[HBM_SHA256_LEN])
{
    char msg[sizeof c->user + sizeof c->pass];
    size_t ul = strlen(c->user), pl = strlen(c->pass);
    memcpy(msg, c->user, ul + 1);
    memcpy(msg + ul + 1, c->pass, pl);
    hbm_hmac_sha256(a->secret, sizeof a->secret, msg, ul + 1 + pl, key);
    explicit_bzero(msg, sizeof msg);
}

/* True when a slot holds key; every slot is compared in full (constant time). */
static bool cache_has(hbm_auth *a, const uint8_t key[HBM_SHA256_LEN])
{
    bool found = false;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < HBM_WEB_USERS_MAX; i++) {
        uint8_t diff = 0;
        for (int k = 0; k < HBM_SHA256_LEN; k++)
            diff |= a->cache[i][k] ^ key[k];
        found |= a->filled[i] && diff == 0;
    }
    pthread_mutex_unlock(&a->mu);
    return found;
}

bool hbm_auth_cached(hbm_auth *a, const hbm_auth_creds *c)
{
    uint8_t key[HBM_SHA256_LEN];
    cache_key(a, c, key);
    bool found = cache_has(a, key);
    explicit_bzero(key, sizeof key);
    return found;
}

bool hbm_auth_verify(hbm_auth *a, const hbm_auth_creds *c)
{
    int who = hbm_webconfig_check(a->web, c->user, c->pass);
    if (who < 0)
        return false;
    uint8_t key[HBM_SHA256_LEN];
    cache_key(a, c, key);
    pthread_mutex_lock(&a->mu);
    memcpy(a->cache[who], key, sizeof key);
    a->filled[who] = true;
    pthread_mutex_unlock(&a->mu);
    explicit_bzero(key, sizeof key);
    return true;
}

static bool same(const client *x, const client *y)
{
    return x->len == y->len && !memcmp(x->id, y->id, x->len);
}

/* How long ago who was served, in clients: SERVED_MAX when not lately. */
static size_t served_ago(const hbm_auth *a, const client *who)
{
    for (size_t k = 0; k < a->nserved; k++)
        if (same(&a->served[k], who))
            return k;
    return SERVED_MAX;
}

/* Takes the oldest job of the client served least recently; who goes first in served. */
static job take(hbm_auth *a)
{
    size_t best = 0, best_ago = 0;
    for (size_t i = 0; i < a->n; i++) {
        size_t ago = served_ago(a, &a->queue[i].who);
        if (i == 0 || ago > best_ago) {
            best = i;
            best_ago = ago;
        }
    }
    job j = a->queue[best];
    memmove(a->queue + best, a->queue + best + 1, (a->n - best - 1) * sizeof a->queue[0]);
    explicit_bzero(&a->queue[--a->n], sizeof a->queue[0]);
    size_t k = best_ago; /* where who sits in served; past its end when not there */
    if (k >= a->nserved)
        k = a->nserved < SERVED_MAX ? a->nserved++ : SERVED_MAX - 1;
    memmove(a->served + 1, a->served, k * sizeof a->served[0]);
    a->served[0] = j.who;
    return j;
}

static void *worker(void *arg)
{
    hbm_auth *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->n && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        if (!a->n)
            break;
        job j = take(a);
        bool stop = a->stop;
        pthread_mutex_unlock(&a->mu);
        hbm_auth_verdict v = stop                           ? HBM_AUTH_STOPPED
                             : hbm_auth_verify(a, &j.creds) ? HBM_AUTH_ACCEPTED
                                                            : HBM_AUTH_REFUSED;
        explicit_bzero(&j.creds, sizeof j.creds);
        j.done(j.ctx, v);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

int hbm_auth_submit(hbm_auth *a, const hbm_auth_creds *c, const void *id, size_t idlen,
                    hbm_auth_done *done, void *ctx)
{
    client who = {.len = idlen < CLIENT_MAX ? idlen : CLIENT_MAX};
    memcpy(who.id, id, who.len);
    pthread_mutex_lock(&a->mu);
    bool room = !a->stop && a->n < a->cap;
    if (room) {
        a->queue[a->n++] = (job){.creds = *c, .who = who, .done = done, .ctx = ctx};
        pthread_cond_signal(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return room ? 0 : -1;
}

hbm_auth *hbm_auth_new(const hbm_webconfig *w, size_t capacity)
{
    hbm_auth *a = hbm_xcalloc(1, sizeof *a);
    a->web = w;
    a->cap = capacity ? capacity : 1;
    /* The key only has to be unknown outside this process. */
    if (getrandom(a->secret, sizeof a->secret, 0) != (ssize_t)sizeof a->secret) {
        free(a);
        return NULL;
    }
    a->queue = hbm_xcalloc(a->cap, sizeof a->queue[0]);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    int e = pthread_create(&a->worker, NULL, worker, a);
    if (e != 0) {
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
        free(a->queue);
        explicit_bzero(a, sizeof *a);
        free(a);
        errno = e; /* for the caller's message, as getrandom leaves it */
        return NULL;
    }
    return a;
}

void hbm_auth_stop(hbm_auth *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    bool joined = a->joined;
    a->stop = a->joined = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (!joined)
        pthread_join(a->worker, NULL);
}

void hbm_auth_free(hbm_auth *a)
{
    if (!a)
        return;
    hbm_auth_stop(a);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a->queue);
    explicit_bzero(a, sizeof *a);
    free(a);
}
