/* The HTTP side of the exporter: libmicrohttpd with its own epoll thread (so the number of
 * connections is not capped by select's FD_SETSIZE), a connection limit overall and per
 * client address, an idle timeout and a small per-connection memory pool. Only GET and
 * HEAD of /metrics and /healthz. Basic auth never runs bcrypt on these threads: a request
 * whose credentials are not cached is suspended while auth.c's worker checks them. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "export/export_int.h"
#include "hbm/export.h"

int hbm_export_parse_listen(const char *listen, void *ss_out, unsigned *len, bool *ipv6,
                            hbm_err *err)
{
    struct sockaddr_storage *ss = ss_out;
    memset(ss, 0, sizeof *ss);
    char host[128];
    const char *port_s;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':' || (size_t)(close - listen - 1) >= sizeof host)
            return hbm_err_set(err, "--listen %s: want [IPV6]:PORT", listen);
        memcpy(host, listen + 1, (size_t)(close - listen - 1));
        host[close - listen - 1] = '\0';
        port_s = close + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof host)
            return hbm_err_set(err, "--listen %s: want HOST:PORT (e.g. 127.0.0.1:9464)", listen);
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
        port_s = colon + 1;
    }
    char *end;
    errno = 0;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || *end || errno || port < 0 || port > 65535)
        return hbm_err_set(err, "--listen %s: port must be 0..65535", listen);
    if (host[0] == '\0')
        snprintf(host, sizeof host, "0.0.0.0");
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *len = sizeof *in4;
        *ipv6 = false;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof *in6;
        *ipv6 = true;
        return 0;
    }
    return hbm_err_set(err, "--listen %s: '%s' is not a numeric IPv4 or IPv6 address", listen,
                       host);
}

#ifdef HBM_HAVE_MHD
#include <microhttpd.h>

#define DEFAULT_MAX_CONNECTIONS 2048
#define DEFAULT_TIMEOUT_S 10
#define DEFAULT_PER_CLIENT 64
#define CONNECTION_MEMORY 16384 /* request headers of a scrape fit many times over */

struct hbm_export_server {
    struct MHD_Daemon *daemon;
    hbm_exporter *ex;         /* borrowed */
    const hbm_webconfig *web; /* borrowed; NULL = no TLS, no auth */
    hbm_auth *auth;           /* NULL when no user is configured */
    int port;
};

/* A request's state: headers_seen before any check; a request_auth once its credentials
 * went to the worker (freed when the request completes). */
static int headers_seen;

typedef enum verdict { AUTH_PASS, AUTH_FAIL, AUTH_STOPPING, AUTH_WAIT } verdict;

typedef struct request_auth {
    struct MHD_Connection *c;
    _Atomic int verdict;
} request_auth;

/* The worker's answer: the request goes on where it was suspended. */
static void auth_done(void *ctx, hbm_auth_verdict v)
{
    request_auth *r = ctx;
    r->verdict = v == HBM_AUTH_ACCEPTED ? AUTH_PASS : v == HBM_AUTH_REFUSED ? AUTH_FAIL
                                                                            : AUTH_STOPPING;
    MHD_resume_connection(r->c);
}

/* The peer's address, without its port: the unit whose password checks take turns. */
static size_t client_id(struct MHD_Connection *c, const void **id)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET) {
        *id = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
        return 4;
    }
    if (sa && sa->sa_family == AF_INET6) {
        *id = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return 16;
    }
    *id = "";
    return 0;
}

/* Basic auth against the web config's users: PASS when none are configured or the
 * credentials are cached; otherwise the connection is suspended for the worker (WAIT) and
 * the next call reads its verdict. The header is taken with its length, so a NUL in it
 * is refused, not an end. */
static verdict authorize(hbm_export_server *s, struct MHD_Connection *c, void **state)
{
    if (!s->auth)
        return AUTH_PASS;
    if (*state != &headers_seen)
        return ((request_auth *)*state)->verdict;
    const char *h = NULL;
    size_t hl = 0;
    hbm_auth_creds cr;
    if (MHD_lookup_connection_value_n(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION,
                                      strlen(MHD_HTTP_HEADER_AUTHORIZATION), &h,
                                      &hl) != MHD_YES ||
        hbm_basic_auth_decode(h, hl, &cr) < 0)
        return AUTH_FAIL;
    verdict v = AUTH_PASS;
    if (!hbm_auth_cached(s->auth, &cr)) {
        request_auth *r = hbm_xcalloc(1, sizeof *r);
        r->c = c;
        r->verdict = v = AUTH_WAIT;
        *state = r;
        /* Suspended first: the worker may answer before submit returns. */
        MHD_suspend_connection(c);
        const void *id;
        size_t idl = client_id(c, &id);
        /* The queue holds a check per connection: only a stopped worker refuses one. */
        if (hbm_auth_submit(s->auth, &cr, id, idl, auth_done, r) < 0) {
            r->verdict = AUTH_STOPPING;
            MHD_resume_connection(c);
        }
    }
    explicit_bzero(&cr, sizeof cr);
    return v;
}

static void request_done(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)c;
    (void)why;
    if (*state && *state != &headers_seen)
        free(*state);
    *state = NULL;
}

static enum MHD_Result unauthorized(struct MHD_Connection *c)
{
    static const char msg[] = "401 Unauthorized\n";
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_basic_auth_fail_response(c, "hbmctl", r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                             char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *msg)
{
    return reply(c, status, "text/plain; charset=utf-8", hbm_xstrdup(msg), strlen(msg));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    hbm_export_server *s = cls;
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
               strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    /* First call per request: headers only. Other methods are refused before any body is
     * read; a body sent with a GET is read and dropped. */
    if (*state == NULL) {
        *state = &headers_seen;
        if (!get)
            return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    switch (authorize(s, c, state)) {
    case AUTH_WAIT:
        return MHD_YES;
    case AUTH_FAIL:
        return unauthorized(c);
    case AUTH_STOPPING:
        return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the exporter is stopping\n");
    case AUTH_PASS:
        break;
    }
    if (strcmp(url, "/metrics") == 0) {
        size_t len;
        char *body = hbm_exporter_metrics(s->ex, &len);
        return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
    }
    if (strcmp(url, "/healthz") == 0) {
        char why[1100];
        bool ok = hbm_exporter_healthy(s->ex, why, sizeof why - 1);
        strcat(why, "\n");
        return text(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, why);
    }
    if (strcmp(url, "/") == 0)
        return text(c, MHD_HTTP_OK, "hbmctl exporter: /metrics /healthz\n");
    return text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics or /healthz\n");
}

/* libmicrohttpd's own messages would go to stderr from a library; they are dropped. */
static void quiet_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    (void)fmt;
    (void)ap;
}

/* Each connection is one descriptor: keep the limit under what the process may open. */
static unsigned fit_to_rlimit(unsigned want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return want;
    rlim_t spare = rl.rlim_cur > 64 ? rl.rlim_cur - 64 : 1;
    return (rlim_t)want > spare ? (unsigned)spare : want;
}

int hbm_export_server_start(hbm_exporter *ex, const hbm_export_server_opts *opts,
                            hbm_export_server **out, hbm_err *err)
{
    struct sockaddr_storage ss;
    unsigned sslen;
    bool v6;
    const char *listen = opts->listen ? opts->listen : "127.0.0.1:9464";
    if (hbm_export_parse_listen(listen, &ss, &sslen, &v6, err) < 0)
        return -1;
    unsigned maxc = fit_to_rlimit(opts->max_connections ? opts->max_connections
                                                        : DEFAULT_MAX_CONNECTIONS);
    unsigned timeout = opts->timeout_s ? opts->timeout_s : DEFAULT_TIMEOUT_S;
    unsigned per_client = opts->per_client ? opts->per_client : DEFAULT_PER_CLIENT;
    const hbm_webconfig *web = opts->web;
    bool tls = web && web->cert_pem;
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return hbm_err_set(err, "this libmicrohttpd was built without TLS");
    hbm_export_server *s = hbm_xcalloc(1, sizeof *s);
    s->ex = ex;
    s->web = web;
    if (web && web->nusers && !(s->auth = hbm_auth_new(web, maxc))) {
        free(s);
        return hbm_err_set(err, "cannot start the password checks: %s", strerror(errno));
    }
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0) |
                     (s->auth ? MHD_ALLOW_SUSPEND_RESUME : 0);
    /* Two epoll threads: while one waits for the driver, the other serves the previous
     * exposition. */
    if (v6)
        flags |= MHD_USE_IPv6;
    errno = 0;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_LIMIT, maxc, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_client,
        MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024U, MHD_OPTION_THREAD_POOL_SIZE, 2U,
        MHD_OPTION_EXTERNAL_LOGGER, quiet_log, NULL,
        /* With TLS off the certificate options end the list early. */
        tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, tls ? web->cert_pem : NULL,
        MHD_OPTION_HTTPS_MEM_KEY, tls ? web->key_pem : NULL, MHD_OPTION_END);
    if (!s->daemon) {
        int e = errno;
        hbm_auth_free(s->auth);
        free(s);
        return hbm_err_set(err, "cannot listen on %s: %s", listen,
                           e ? strerror(e) : "libmicrohttpd refused to start");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? (int)info->port : -1;
    *out = s;
    return 0;
}

int hbm_export_server_port(const hbm_export_server *s)
{
    return s->port;
}

void hbm_export_server_stop(hbm_export_server *s)
{
    if (!s)
        return;
    /* Checks still queued are answered (their connections resumed) before the daemon
     * goes; a request arriving meanwhile finds the worker stopped and gets 503. */
    hbm_auth_stop(s->auth);
    MHD_stop_daemon(s->daemon);
    hbm_auth_free(s->auth);
    free(s);
}
#endif
