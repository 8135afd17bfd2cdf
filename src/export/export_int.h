/* Inside the export module: the digest behind the credential cache, and basic auth as the
 * HTTP server uses it (decoding, the cache, the one bcrypt worker). */
#ifndef HBM_EXPORT_INT_H
#define HBM_EXPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/export.h"

#define HBM_SHA256_LEN 32

typedef struct hbm_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
} hbm_sha256;

void hbm_sha256_init(hbm_sha256 *s);
void hbm_sha256_update(hbm_sha256 *s, const void *data, size_t n);
void hbm_sha256_final(hbm_sha256 *s, uint8_t out[HBM_SHA256_LEN]);
void hbm_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                     uint8_t out[HBM_SHA256_LEN]);

/* bcrypt reads at most 72 bytes of a password: a longer one is refused, never cut. */
#define HBM_AUTH_PASS_MAX 72

/* One request's credentials, decoded from its Authorization header. */
typedef struct hbm_auth_creds {
    char user[sizeof((hbm_web_user *)0)->name];
    char pass[HBM_AUTH_PASS_MAX + 1];
} hbm_auth_creds;

/* Decodes an Authorization header value, "Basic " and base64 of "user:password", to a
 * length first: -1 (and nothing kept) when it is not that, when either part holds a NUL
 * byte (libcrypt would stop there and check a prefix), or is longer than its buffer. */
int hbm_basic_auth_decode(const char *header, size_t len, hbm_auth_creds *out);

typedef struct hbm_auth hbm_auth; /* opaque; thread-safe */

/* The users of w (borrowed; it must outlive the result), a cache of verified credentials
 * and one worker thread for bcrypt whose queue holds capacity checks (the server's
 * connection limit: one request per connection at a time). NULL when the worker or its
 * random key cannot be had (errno says why). */
hbm_auth *hbm_auth_new(const hbm_webconfig *w, size_t capacity);
/* Stops the worker: a job still queued is answered HBM_AUTH_STOPPED without bcrypt; later
 * submits fail. Then hbm_auth_free (which also stops). NULL is ignored. */
void hbm_auth_stop(hbm_auth *a);
void hbm_auth_free(hbm_auth *a);

/* True when these credentials were verified before (no bcrypt). */
bool hbm_auth_cached(hbm_auth *a, const hbm_auth_creds *c);

typedef enum hbm_auth_verdict {
    HBM_AUTH_REFUSED,
    HBM_AUTH_ACCEPTED,
    HBM_AUTH_STOPPED, /* not checked: the worker was stopped first */
} hbm_auth_verdict;

typedef void hbm_auth_done(void *ctx, hbm_auth_verdict v);
/* Queues a bcrypt check; done(ctx, verdict) runs later on the worker thread (the
 * credentials are copied). id (bytes naming the peer, e.g. its address): the peer served
 * least recently goes first. -1 when the queue is full or the worker stopped: done never
 * runs. */
int hbm_auth_submit(hbm_auth *a, const hbm_auth_creds *c, const void *id, size_t idlen,
                    hbm_auth_done *done, void *ctx);

/* Checks now on the calling thread (the worker's job; also the tests'): the same bcrypt
 * work for an unknown user as for a known one; a success enters the cache. */
bool hbm_auth_verify(hbm_auth *a, const hbm_auth_creds *c);

/* Remediations counted from the audit log every --apply appends to (docs/remediation.md):
 * read incrementally by offset, a bounded chunk per scrape, never waiting on the file. */
#define HBM_REMEDY_KINDS 8

typedef struct hbm_remedy_count {
    char action[24], result[16];
    uint64_t n;
} hbm_remedy_count;

typedef struct hbm_remedy_log {
    uint64_t dev, ino;    /* the file read so far: another one (rotation) starts at 0 */
    uint64_t off;         /* bytes consumed: up to the last whole line */
    hbm_remedy_count c[HBM_REMEDY_KINDS * 4];
    size_t nc;
    uint64_t other;       /* records with an action and outcome beyond the table */
    double last_action;   /* unix time of the last counted record; 0 none */
    double last_run;      /* unix time of the last clean or epilog run that acted; 0 none */
    bool readable;        /* the last read succeeded (a missing file is readable: empty) */
    bool synced;          /* the whole log was read once: the counts are served from then */
    double policy_run;    /* mtime of the policy's state file: its last run, dry or not; 0 */
} hbm_remedy_log;

/* Consumes what was appended to path since the last call (at most max bytes), and notes
 * when the policy last ran from its state file's mtime (state: NULL = the default). */
void hbm_remedy_log_read(hbm_remedy_log *l, const char *path, size_t max, const char *state);
void hbm_remedy_log_render(const hbm_remedy_log *l, hbm_export_buf *b);

#endif
