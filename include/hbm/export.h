/* Prometheus exposition (text format 0.0.4) of an observation, and the HTTP exporter that
 * serves it (docs/metrics.md lists every metric).
 *
 * The writer escapes label values and help text as the format requires; an unknown fact
 * (HBM_UNKNOWN, NAN) is left out, never written as 0. When an observation fails the
 * device metrics are left out and hbmctl_up is 0, so a failed query never looks like an
 * idle device. */
#ifndef HBM_EXPORT_H
#define HBM_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/doctor.h"
#include "hbm/err.h"
#include "hbm/lease.h"
#include "hbm/obs.h"
#include "hbm/observe.h"
#include "hbm/progress.h"
#include "hbm/watch.h"

/* A growing text buffer; data is owned (free with hbm_export_buf_free), NUL-terminated. */
typedef struct hbm_export_buf {
    char *data;
    size_t len, cap;
} hbm_export_buf;

void hbm_export_buf_append(hbm_export_buf *b, const char *s, size_t n);
void hbm_export_buf_printf(hbm_export_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hbm_export_buf_free(hbm_export_buf *b);

/* ---- exposition writer ---------------------------------------------------------------- */

typedef struct hbm_export_label {
    const char *name;  /* borrowed; [a-zA-Z_][a-zA-Z0-9_]* */
    const char *value; /* borrowed; any bytes, escaped on output */
} hbm_export_label;

/* "# HELP name help\n# TYPE name type\n"; type "gauge" or "counter". */
void hbm_export_family(hbm_export_buf *b, const char *name, const char *type, const char *help);
/* One sample line; a non-finite value writes nothing. */
void hbm_export_sample(hbm_export_buf *b, const char *name, const hbm_export_label *labels,
                       size_t nlabels, double value);
/* Same for an integer; HBM_UNKNOWN (any negative) writes nothing. */
void hbm_export_sample_i64(hbm_export_buf *b, const char *name, const hbm_export_label *labels,
                           size_t nlabels, int64_t value);
/* Escapes a label value: backslash, double quote and newline. */
void hbm_export_escape_label(hbm_export_buf *b, const char *value);

/* ---- the metrics of one observation ----------------------------------------------------- */

typedef struct hbm_export_input {
    const hbm_obs *obs;            /* borrowed; NULL when the observation failed */
    const char *obs_error;         /* borrowed; why it failed (NULL when it did not) */
    const hbm_watch *watch;        /* borrowed; leak state per series, NULL = none */
    const hbm_findings *findings;  /* borrowed; NULL = not derived */
    const hbm_lease_info *leases;  /* borrowed; NULL with nleases 0 when not read */
    size_t nleases;
    bool leases_known;             /* the lease directory was read */
    bool threshold_set;            /* a leak threshold is configured (above_threshold) */
} hbm_export_input;

/* Appends every device, process, verdict, leak, finding, host and lease metric. */
void hbm_export_render(const hbm_export_input *in, hbm_export_buf *out);

/* Appends the progress of inference servers (hbmctl_server_*), labelled url, model, engine. */
void hbm_export_render_servers(const hbm_progress_servers *set, hbm_export_buf *out);

/* ---- the exporter: cached observation + self metrics ----------------------------------- */

typedef struct hbm_exporter_opts {
    hbm_source_opts src;     /* borrowed strings; where observations come from */
    double min_interval;     /* seconds an observation is reused; <= 0 means 1 */
    const char *lease_dir;   /* borrowed; NULL = hbm_lease_dir(NULL) */
    hbm_leak_params leak;    /* leak detector parameters (threshold included) */
    hbm_progress_servers *servers; /* borrowed; sampled with each observation; NULL = none */
    const char *audit_path;  /* borrowed; counted into hbmctl_remediations_total; NULL =
                                hbm_audit_path(NULL) */
    const char *clean_state; /* borrowed; the policy's state file, whose mtime is its last
                                run; NULL = HBM_CLEAN_STATE_DEFAULT */
} hbm_exporter_opts;

typedef struct hbm_exporter hbm_exporter; /* opaque; thread-safe */

hbm_exporter *hbm_exporter_new(const hbm_exporter_opts *opts);
void hbm_exporter_free(hbm_exporter *ex);

/* The /metrics body: the cached exposition (observed again when older than min_interval)
 * followed by the exporter's own metrics; while an observation under way has run past the
 * vendor timeout, a failure's exposition instead (hbmctl_up 0, no device values,
 * hbmctl_exporter_observation_stale 1). Returns a malloc'd string (caller frees). */
char *hbm_exporter_metrics(hbm_exporter *ex, size_t *len);

/* The /healthz answer without observing: true when the last observation succeeded (or
 * none was made yet) and the one under way, if any, has not run past the vendor timeout
 * (stale); why says so in one line. */
bool hbm_exporter_healthy(hbm_exporter *ex, char *why, size_t n);

/* ---- web config (the Prometheus exporter toolkit's --web.config.file format) ------------ */

#define HBM_WEB_USERS_MAX 32

typedef struct hbm_web_user {
    char name[64];
    char hash[128]; /* bcrypt: $2a$, $2b$ or $2y$ */
} hbm_web_user;

typedef struct hbm_webconfig {
    char cert_file[512]; /* tls_server_config.cert_file, relative to the config's folder */
    char key_file[512];
    hbm_web_user users[HBM_WEB_USERS_MAX]; /* basic_auth_users */
    size_t nusers;
    char dummy[48]; /* bcrypt setting an unknown user's password is checked against (room for
                       any int a cost field may hold) */
    char *cert_pem; /* owned: the files' contents, read by hbm_webconfig_load */
    char *key_pem;
} hbm_webconfig;

/* Parses the YAML subset of a web config: the mappings tls_server_config (cert_file,
 * key_file) and basic_auth_users (user: bcrypt hash), comments, plain or quoted scalars.
 * name is the file's name for messages; anything else is refused naming line and key, and
 * so is a file that enables neither TLS nor a user. */
int hbm_webconfig_parse(const char *buf, size_t len, const char *name, hbm_webconfig *out,
                        hbm_err *err);
/* Reads and parses path, then the certificate and key it names. */
int hbm_webconfig_load(const char *path, hbm_webconfig *out, hbm_err *err);
void hbm_webconfig_free(hbm_webconfig *w);
/* The index of user in w->users when password matches its bcrypt hash (libcrypt), else -1.
 * An unknown user costs the same bcrypt work (against a dummy setting of the costliest
 * user's cost); names and hashes are compared in constant time. */
int hbm_webconfig_check(const hbm_webconfig *w, const char *user, const char *password);

/* ---- HTTP server (libmicrohttpd, epoll) ------------------------------------------------- */

typedef struct hbm_export_server_opts {
    const char *listen;       /* borrowed; "127.0.0.1:9464", "[::1]:9464", ":9464" (any IPv4) */
    unsigned max_connections; /* connection limit; 0 = 2048 (lowered to fit RLIMIT_NOFILE) */
    unsigned timeout_s;       /* idle connection timeout; 0 = 10 */
    unsigned per_client;      /* connections from one client address; 0 = 64 */
    const hbm_webconfig *web; /* borrowed; TLS and basic auth, NULL = plain HTTP */
} hbm_export_server_opts;

typedef struct hbm_export_server hbm_export_server; /* opaque */

/* Parses "HOST:PORT" into a socket address (numeric hosts only). */
int hbm_export_parse_listen(const char *listen, void *sockaddr_storage, unsigned *len,
                            bool *ipv6, hbm_err *err);

/* Starts serving /metrics and /healthz on its own epoll thread; ex is borrowed and must
 * outlive the server. */
int hbm_export_server_start(hbm_exporter *ex, const hbm_export_server_opts *opts,
                            hbm_export_server **out, hbm_err *err);
/* The port actually bound (useful with port 0). */
int hbm_export_server_port(const hbm_export_server *s);
void hbm_export_server_stop(hbm_export_server *s);

#endif
