/* Basic auth as the exporter checks it: the digest against the FIPS 180 and RFC 4231
 * vectors, the header decoded to a length (a NUL or a byte bcrypt would not read is
 * refused), the cache (only a verified password enters it), the same bcrypt work for an
 * unknown user as for the costliest known one, and the worker's queue: bounded, the client
 * served least recently first, answered "stopped" once stopped. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "export/export_int.h"

/* bcrypt of "right" at cost 6, of "other" at cost 9 */
#define FAST "$2b$06$V8.7mwhNKQVLqX/TyGnYJ.pEoV4MRx4TYKGHTaiDiB6anPYiZ12sq"
#define SLOW "$2b$09$x7LwuU1E0Z0KsBGqgLsYdu7aPjjxZdRtewsz.F.xKGHSrHcrNVjci"

static void hex(const uint8_t *d, char out[2 * HBM_SHA256_LEN + 1])
{
    for (int i = 0; i < HBM_SHA256_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void sha_is(const void *msg, size_t n, size_t reps, const char *want)
{
    hbm_sha256 s;
    uint8_t d[HBM_SHA256_LEN];
    char h[2 * HBM_SHA256_LEN + 1];
    hbm_sha256_init(&s);
    for (size_t i = 0; i < reps; i++)
        hbm_sha256_update(&s, msg, n);
    hbm_sha256_final(&s, d);
    hex(d, h);
    assert_string_equal(h, want);
}

static void hmac_is(const void *key, size_t kl, const char *msg, const char *want)
{
    uint8_t d[HBM_SHA256_LEN];
    char h[2 * HBM_SHA256_LEN + 1];
    hbm_hmac_sha256(key, kl, msg, strlen(msg), d);
    hex(d, h);
    assert_string_equal(h, want);
}

static void test_digest(void **state)
{
    (void)state;
    sha_is("", 0, 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha_is("abc", 3, 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha_is("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, 1,
           "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* a million 'a' in pieces that straddle the 64-byte blocks */
    sha_is("aaaaaaaaaaaaaaaaaaaaaaaaa", 25, 40000,
           "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    uint8_t k20[20], k131[131];
    memset(k20, 0x0b, sizeof k20);
    memset(k131, 0xaa, sizeof k131);
    hmac_is(k20, sizeof k20, "Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac_is("Jefe", 4, "what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    hmac_is(k131, sizeof k131, "Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* "Basic " and the base64 of n raw bytes */
static char *basic(const char *raw, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = calloc(1, 8 + 4 * (n + 2) / 3 + 4);
    strcpy(out, "Basic ");
    char *o = out + 6;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)(uint8_t)raw[i] << 16;
        if (i + 1 < n)
            w |= (uint32_t)(uint8_t)raw[i + 1] << 8;
        if (i + 2 < n)
            w |= (uint8_t)raw[i + 2];
        *o++ = a[w >> 18];
        *o++ = a[(w >> 12) & 63];
        *o++ = i + 1 < n ? a[(w >> 6) & 63] : '=';
        *o++ = i + 2 < n ? a[w & 63] : '=';
    }
    return out;
}

static int decode_raw(const char *raw, size_t n, hbm_auth_creds *c)
{
    char *h = basic(raw, n);
    int rc = hbm_basic_auth_decode(h, strlen(h), c);
    free(h);
    return rc;
}

static void test_decode(void **state)
{
    (void)state;
    hbm_auth_creds c;
    assert_int_equal(decode_raw("prom:pa:ss", 10, &c), 0);
    assert_string_equal(c.user, "prom");
    assert_string_equal(c.pass, "pa:ss");
    assert_int_equal(decode_raw("prom:", 5, &c), 0);
    assert_string_equal(c.pass, "");
    const char *ok = "bASIC  cHJvbTpwYXNz "; /* scheme in any case, blanks around */
    assert_int_equal(hbm_basic_auth_decode(ok, strlen(ok), &c), 0);
    assert_string_equal(c.pass, "pass");
    /* bytes libcrypt would never read: after a NUL, past bcrypt's 72 */
    assert_int_equal(decode_raw("prom:right\0junk", 15, &c), -1);
    assert_int_equal(decode_raw("pr\0om:right", 11, &c), -1);
    char long_pass[6 + HBM_AUTH_PASS_MAX + 2];
    memcpy(long_pass, "prom:", 5);
    memset(long_pass + 5, 'x', HBM_AUTH_PASS_MAX + 1);
    assert_int_equal(decode_raw(long_pass, 5 + HBM_AUTH_PASS_MAX, &c), 0);
    assert_int_equal(decode_raw(long_pass, 5 + HBM_AUTH_PASS_MAX + 1, &c), -1);
    assert_string_equal(c.pass, ""); /* nothing kept from a refusal */
    char long_user[80];
    memset(long_user, 'u', sizeof long_user);
    long_user[sizeof c.user - 1] = ':';
    assert_int_equal(decode_raw(long_user, sizeof c.user, &c), 0);
    long_user[sizeof c.user - 1] = 'u';
    long_user[sizeof c.user] = ':';
    assert_int_equal(decode_raw(long_user, sizeof c.user + 1, &c), -1);
    /* a NUL inside the header itself: counted by its length, then refused */
    const char nul_hdr[] = "Basic cHJvbTpwYXNz\0AAAA";
    assert_int_equal(hbm_basic_auth_decode(nul_hdr, sizeof nul_hdr - 1, &c), -1);
    const char *bad[] = {"Bearer cHJvbTpwYXNz", "Basic cHJvbXBhc3M=", "Basic cHJvbTpwYXN",
                         "Basic cHJvbTpwYX=z", "Basic cHJv=TpwYXNz", "Basic ", "Basic",
                         "Basic cHJvbTpwYX*z", "Basic cHJvbTpwYXN=\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (hbm_basic_auth_decode(bad[i], strlen(bad[i]), &c) == 0)
            fail_msg("'%s' decoded", bad[i]);
}

static void webconfig(hbm_webconfig *w)
{
    const char *t = "basic_auth_users:\n  fast: " FAST "\n  slow: " SLOW "\n";
    hbm_err err;
    assert_int_equal(hbm_webconfig_parse(t, strlen(t), "web.yml", w, &err), 0);
}

/* The two users' config in w, and an auth on it whose queue holds cap checks. */
static hbm_auth *new_auth(hbm_webconfig *w, size_t cap)
{
    webconfig(w);
    hbm_auth *a = hbm_auth_new(w, cap);
    assert_non_null(a);
    return a;
}

static hbm_auth_creds creds(const char *user, const char *pass)
{
    hbm_auth_creds c = {0};
    snprintf(c.user, sizeof c.user, "%s", user);
    snprintf(c.pass, sizeof c.pass, "%s", pass);
    return c;
}

static void test_cache(void **state)
{
    (void)state;
    hbm_webconfig w;
    hbm_auth *a = new_auth(&w, 8);
    hbm_auth_creds right = creds("fast", "right"), wrong = creds("fast", "wrong");
    hbm_auth_creds swapped = creds("slow", "right"), nobody = creds("nobody", "right");
    assert_false(hbm_auth_cached(a, &right));
    assert_false(hbm_auth_verify(a, &wrong));
    assert_false(hbm_auth_verify(a, &nobody));
    assert_false(hbm_auth_verify(a, &swapped));
    assert_false(hbm_auth_cached(a, &wrong)); /* failures never enter */
    assert_false(hbm_auth_cached(a, &nobody));
    assert_true(hbm_auth_verify(a, &right));
    assert_true(hbm_auth_cached(a, &right));
    assert_false(hbm_auth_cached(a, &swapped)); /* the key is user and password together */
    assert_false(hbm_auth_cached(a, &wrong));
    hbm_auth_creds other = creds("slow", "other");
    assert_true(hbm_auth_verify(a, &other));
    assert_true(hbm_auth_cached(a, &other));
    assert_true(hbm_auth_cached(a, &right)); /* one slot per user: nothing pushed out */
    hbm_auth_free(a);
    /* a new process (a new key) remembers nothing */
    a = hbm_auth_new(&w, 8);
    assert_false(hbm_auth_cached(a, &right));
    hbm_auth_free(a);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median seconds of a failed check for each user, in alternating runs. */
#define RUNS 7
static void medians(hbm_auth *a, const char *const *users, size_t n, double *out)
{
    double t[4][RUNS];
    for (int r = 0; r < RUNS; r++)
        for (size_t u = 0; u < n; u++) {
            hbm_auth_creds c = creds(users[u], "not the password");
            double t0 = now();
            assert_false(hbm_auth_verify(a, &c));
            t[u][r] = now() - t0;
        }
    for (size_t u = 0; u < n; u++) {
        qsort(t[u], RUNS, sizeof t[u][0], by_value);
        out[u] = t[u][RUNS / 2];
    }
}

static void test_same_work(void **state)
{
    (void)state;
    hbm_webconfig w;
    hbm_auth *a = new_auth(&w, 8);
    const char *users[] = {"slow", "nobody", "fast", "slowx"};
    double m[4];
    medians(a, users, 4, m);
    /* an unknown name costs what the costliest user costs (cost 9, 8x cost 6) */
    double r_unknown = m[1] / m[0], r_near = m[3] / m[0], r_fast = m[1] / m[2];
    printf("median s: slow %.4f, nobody %.4f, fast %.4f, slowx %.4f\n", m[0], m[1], m[2],
           m[3]);
    if (r_unknown < 0.5 || r_unknown > 2 || r_near < 0.5 || r_near > 2)
        fail_msg("unknown users take %.2fx, %.2fx a known user's time", r_unknown, r_near);
    if (r_fast < 2)
        fail_msg("an unknown user takes only %.2fx a cost-6 user's time", r_fast);
    hbm_auth_free(a);
}

/* The worker: done callbacks counted and their order written down; the first one blocks
 * until released. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered, done, ok, stopped;
    bool open;
    char order[16];
} gate;

typedef struct tagged {
    gate *g;
    char tag;
} tagged;

static void gated(void *ctx, hbm_auth_verdict v)
{
    tagged *t = ctx;
    gate *g = t->g;
    pthread_mutex_lock(&g->mu);
    if ((size_t)g->entered < sizeof g->order - 1) /* the stop test answers many */
        g->order[g->entered] = t->tag;
    g->entered++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    g->done++;
    g->ok += v == HBM_AUTH_ACCEPTED;
    g->stopped += v == HBM_AUTH_STOPPED;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void wait_for(gate *g, int *field, int n)
{
    pthread_mutex_lock(&g->mu);
    while (*field < n)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void release(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void *stopper(void *a)
{
    hbm_auth_stop(a);
    return NULL;
}

static void test_worker_queue(void **state)
{
    (void)state;
    hbm_webconfig w;
    hbm_auth *a = new_auth(&w, 5);
    gate g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    tagged ta = {&g, 'a'}, tb = {&g, 'b'}, tc = {&g, 'c'};
    hbm_auth_creds right = creds("fast", "right"), wrong = creds("fast", "wrong");
    const uint8_t ip_a[4] = {10, 0, 0, 1}, ip_b[4] = {10, 0, 0, 2}, ip_c[4] = {10, 0, 0, 3};
    assert_int_equal(hbm_auth_submit(a, &wrong, ip_a, 4, gated, &ta), 0);
    wait_for(&g, &g.entered, 1); /* the worker is held inside the first answer */
    for (int i = 0; i < 4; i++)
        assert_int_equal(hbm_auth_submit(a, &wrong, ip_a, 4, gated, &ta), 0);
    assert_int_equal(hbm_auth_submit(a, &wrong, ip_c, 4, gated, &tc), 0);
    assert_int_equal(hbm_auth_submit(a, &right, ip_b, 4, gated, &tb), -1); /* 5 waiting */
    release(&g);
    wait_for(&g, &g.done, 6);
    /* after A, C (not served lately) before A's backlog */
    assert_string_equal(g.order, "acaaaa");
    memset(g.order, 0, sizeof g.order);
    g.entered = g.done = 0;
    g.open = false;
    /* A, B and C each served once lately (A least recently): A, then B, C in turn */
    assert_int_equal(hbm_auth_submit(a, &wrong, ip_a, 4, gated, &ta), 0);
    wait_for(&g, &g.entered, 1);
    assert_int_equal(hbm_auth_submit(a, &wrong, ip_c, 4, gated, &tc), 0);
    assert_int_equal(hbm_auth_submit(a, &wrong, ip_c, 4, gated, &tc), 0);
    assert_int_equal(hbm_auth_submit(a, &right, ip_b, 4, gated, &tb), 0);
    assert_int_equal(hbm_auth_submit(a, &wrong, ip_a, 4, gated, &ta), 0);
    release(&g);
    wait_for(&g, &g.done, 5);
    assert_string_equal(g.order, "abcac");
    assert_int_equal(g.ok, 1);
    assert_true(hbm_auth_cached(a, &right));
    hbm_auth_free(a);
}

/* Stopped with checks waiting: they are answered "stopped", not checked. */
static void test_worker_stop(void **state)
{
    (void)state;
    hbm_webconfig w;
    hbm_auth *a = new_auth(&w, 1024);
    gate g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    tagged ta = {&g, 'a'}, tb = {&g, 'b'};
    hbm_auth_creds right = creds("fast", "right"), wrong = creds("fast", "wrong");
    const uint8_t ip_a[4] = {10, 0, 0, 1}, ip_b[4] = {10, 0, 0, 2};
    assert_int_equal(hbm_auth_submit(a, &wrong, ip_a, 4, gated, &ta), 0);
    wait_for(&g, &g.entered, 1);
    assert_int_equal(hbm_auth_submit(a, &right, ip_b, 4, gated, &tb), 0);
    pthread_t t;
    pthread_create(&t, NULL, stopper, a);
    /* the stopper marks the worker stopped, then waits for it: a submit that fails with
     * the queue far from full says the mark is there (each one that passed waits too) */
    int passed = 0;
    while (hbm_auth_submit(a, &right, ip_b, 4, gated, &tb) == 0) {
        passed++;
        /* a pause, not a yield: on a loaded host the stopper may wait long for a core, and
         * the queue must not fill first (that refusal would not be the stop's) */
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    assert_true(passed < 1000);
    release(&g);
    pthread_join(t, NULL);
    assert_int_equal(g.done, 2 + passed);
    assert_int_equal(g.stopped, 1 + passed);
    assert_int_equal(g.ok, 0);
    assert_false(hbm_auth_cached(a, &right));
    hbm_auth_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest),      cmocka_unit_test(test_decode),
        cmocka_unit_test(test_cache),       cmocka_unit_test(test_same_work),
        cmocka_unit_test(test_worker_queue), cmocka_unit_test(test_worker_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
