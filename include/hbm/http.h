/* One HTTP GET with a hard time bound, for health checks (run --health-url, probe --url).
 * libcurl does the HTTP; it is loaded on first use, so commands that never make a request
 * (the exporter, the supervisor without --health-url) do not map it and its TLS stack. */
#ifndef HBM_HTTP_H
#define HBM_HTTP_H

#include "hbm/err.h"

typedef enum hbm_http_outcome {
    HBM_HTTP_ANSWERED = 0, /* an HTTP answer came; see the status code */
    HBM_HTTP_BAD_URL,      /* malformed URL or unsupported scheme: a usage problem */
    HBM_HTTP_TIMEOUT,      /* no answer within the time bound */
    HBM_HTTP_FAILED,       /* connection refused, reset, DNS, TLS ... */
    HBM_HTTP_UNAVAILABLE,  /* libcurl cannot be loaded (or this build has none) */
} hbm_http_outcome;

typedef struct hbm_http_result {
    hbm_http_outcome outcome;
    long status;    /* HTTP status when answered, else 0 */
    double seconds; /* time the request took */
} hbm_http_result;

/* GETs url (http or https), discarding the body, within timeout_s seconds. Returns 0 when an
 * answer came (whatever its status), -1 otherwise with res->outcome and a message in err.
 * Proxies are bypassed for loopback: a health endpoint is local. */
int hbm_http_get(const char *url, double timeout_s, const char *user_agent,
                 hbm_http_result *res, hbm_err *err);

/* A GET that keeps the body, with the credentials of a secured server. Credentials are
 * never part of a message. */
typedef struct hbm_http_opts {
    double timeout_s;
    const char *user_agent;   /* NULL: libcurl's */
    const char *bearer_token; /* Authorization: Bearer; NULL none */
    const char *username;     /* basic auth with password; NULL none */
    const char *password;
    const char *ca_file;      /* PEM bundle to verify the server; NULL: the system's */
    size_t max_body;          /* a longer body fails the request */
} hbm_http_opts;

/* Like hbm_http_get; *body (owned, NUL-terminated) and *len get the answer's body whatever
 * its status. On -1 *body is NULL. */
int hbm_http_fetch(const char *url, const hbm_http_opts *o, hbm_http_result *res, char **body,
                   size_t *len, hbm_err *err);

#endif
