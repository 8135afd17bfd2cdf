#include "hbm/http.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/libload.h"
#include "hbm/util.h"

#ifndef HBM_STATIC_BUILD
#include <curl/curl.h>

/* The few libcurl entry points used, resolved once from the library Debian installs. */
static struct {
    bool tried, ok;
    char why[256];
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
} curl;

static bool load_curl(void)
{
    if (curl.tried)
        return curl.ok;
    curl.tried = true;
    const hbm_dl_sym syms[] = {
        {"curl_global_init", (void **)&curl.global_init},
        {"curl_easy_init", (void **)&curl.easy_init},
        {"curl_easy_setopt", (void **)&curl.easy_setopt},
        {"curl_easy_perform", (void **)&curl.easy_perform},
        {"curl_easy_getinfo", (void **)&curl.easy_getinfo},
        {"curl_easy_cleanup", (void **)&curl.easy_cleanup},
        {"curl_easy_strerror", (void **)&curl.easy_strerror},
    };
    /* Never unloaded: libcurl's TLS backends keep global state for the process lifetime. */
    if (!hbm_dl_load("HBMCTL_CURL_LIB", "libcurl.so.4", "libcurl4", syms,
                     sizeof syms / sizeof *syms, curl.why, sizeof curl.why))
        return false;
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(curl.why, sizeof curl.why, "libcurl failed to initialise");
        return false;
    }
    curl.ok = true;
    return true;
}

/* The body collected so far, up to max bytes; with max 0 it is dropped. */
typedef struct sink {
    char *data;
    size_t len, max;
    bool too_long;
} sink;

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
    sink *s = ctx;
    size_t add = size * n;
    if (s->max == 0)
        return add;
    if (s->len + add > s->max) {
        s->too_long = true;
        return 0; /* aborts the transfer */
    }
    s->data = realloc(s->data, s->len + add + 1);
    if (!s->data)
        abort();
    memcpy(s->data + s->len, p, add);
    s->len += add;
    s->data[s->len] = '\0';
    return add;
}

static void set_auth(CURL *c, const hbm_http_opts *o)
{
    if (o->bearer_token) {
        curl.easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl.easy_setopt(c, CURLOPT_XOAUTH2_BEARER, o->bearer_token);
    } else if (o->username) {
        curl.easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl.easy_setopt(c, CURLOPT_USERNAME, o->username);
        curl.easy_setopt(c, CURLOPT_PASSWORD, o->password ? o->password : "");
    }
    if (o->ca_file)
        curl.easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
}

int hbm_http_fetch(const char *url, const hbm_http_opts *o, hbm_http_result *res, char **body,
                   size_t *len, hbm_err *err)
{
    double timeout_s = o->timeout_s;
    const char *user_agent = o->user_agent;
    sink sk = {.max = body ? o->max_body : 0};
    if (body)
        *body = NULL;
    memset(res, 0, sizeof *res);
    if (!load_curl()) {
        res->outcome = HBM_HTTP_UNAVAILABLE;
        return hbm_err_set(err, "%s: %s", url, curl.why);
    }
    CURL *c = curl.easy_init();
    if (!c) {
        res->outcome = HBM_HTTP_UNAVAILABLE;
        return hbm_err_set(err, "%s: libcurl failed to initialise", url);
    }
    char cerr[CURL_ERROR_SIZE] = "";
    long ms = (long)ceil(timeout_s * 1000);
    if (ms < 1)
        ms = 1;
    curl.easy_setopt(c, CURLOPT_URL, url);
    curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM: callers own their signals */
    curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl.easy_setopt(c, CURLOPT_WRITEDATA, &sk);
    set_auth(c, o);
    curl.easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl.easy_setopt(c, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
    curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (user_agent)
        curl.easy_setopt(c, CURLOPT_USERAGENT, user_agent);
    double t0 = hbm_now_mono();
    CURLcode rc = curl.easy_perform(c);
    res->seconds = hbm_now_mono() - t0;
    long status = 0;
    if (rc == CURLE_OK)
        curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl.easy_cleanup(c);
    const char *why = cerr[0] ? cerr : curl.easy_strerror(rc);
    if (rc == CURLE_OK && body) {
        *body = sk.data ? sk.data : hbm_xstrdup("");
        *len = sk.len;
    } else {
        free(sk.data);
    }
    switch (rc) {
    case CURLE_OK:
        res->outcome = HBM_HTTP_ANSWERED;
        res->status = status;
        return 0;
    case CURLE_WRITE_ERROR:
        res->outcome = HBM_HTTP_FAILED;
        return hbm_err_set(err, "%s: answer longer than %zu bytes", url, o->max_body);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        res->outcome = HBM_HTTP_BAD_URL;
        return hbm_err_set(err, "%s: %s", url, why);
    case CURLE_OPERATION_TIMEDOUT:
        res->outcome = HBM_HTTP_TIMEOUT;
        return hbm_err_set(err, "%s: no answer within %.3gs", url, timeout_s);
    default:
        res->outcome = HBM_HTTP_FAILED;
        return hbm_err_set(err, "%s: %s", url, why);
    }
}

#else

int hbm_http_fetch(const char *url, const hbm_http_opts *o, hbm_http_result *res, char **body,
                   size_t *len, hbm_err *err)
{
    (void)o;
    (void)len;
    if (body)
        *body = NULL;
    memset(res, 0, sizeof *res);
    res->outcome = HBM_HTTP_UNAVAILABLE;
    return hbm_err_set(err, "%s: this build has no libcurl, so HTTP requests are left out "
                            "(see hbmctl --version)", url);
}

#endif

int hbm_http_get(const char *url, double timeout_s, const char *user_agent,
                 hbm_http_result *res, hbm_err *err)
{
    hbm_http_opts o = {.timeout_s = timeout_s, .user_agent = user_agent};
    return hbm_http_fetch(url, &o, res, NULL, NULL, err);
}
