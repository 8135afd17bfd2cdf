#include "hbm/http.h"

#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
    const char *path = getenv("HBMCTL_CURL_LIB");
    if (!path || !*path)
        path = "libcurl.so.4";
    /* Never unloaded: libcurl's TLS backends keep global state for the process lifetime. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(curl.why, sizeof curl.why, "cannot load %s (install libcurl4): %s", path,
                 dlerror());
        return false;
    }
#define SYM(field, name)                                                                     \
    do {                                                                                     \
        *(void **)&curl.field = dlsym(h, name);                                              \
        if (!curl.field) {                                                                   \
            snprintf(curl.why, sizeof curl.why, "%s lacks %s", path, name);                  \
            return false;                                                                    \
        }                                                                                    \
    } while (0)
    SYM(global_init, "curl_global_init");
    SYM(easy_init, "curl_easy_init");
    SYM(easy_setopt, "curl_easy_setopt");
    SYM(easy_perform, "curl_easy_perform");
    SYM(easy_getinfo, "curl_easy_getinfo");
    SYM(easy_cleanup, "curl_easy_cleanup");
    SYM(easy_strerror, "curl_easy_strerror");
#undef SYM
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(curl.why, sizeof curl.why, "libcurl failed to initialise");
        return false;
    }
    curl.ok = true;
    return true;
}

typedef struct body_buf {
    hbm_http_body *out; /* NULL: the body is discarded */
    size_t max;
    bool over;
} body_buf;

static size_t take(char *p, size_t size, size_t n, void *ctx)
{
    body_buf *b = ctx;
    size_t len = size * n;
    if (!b->out)
        return len;
    if (b->out->len + len > b->max) {
        b->over = true;
        return 0; /* makes libcurl stop with a write error */
    }
    b->out->data = hbm_xrealloc(b->out->data, b->out->len + len + 1);
    memcpy(b->out->data + b->out->len, p, len);
    b->out->len += len;
    b->out->data[b->out->len] = '\0';
    return len;
}

int hbm_http_get(const char *url, double timeout_s, const char *user_agent,
                 hbm_http_result *res, hbm_err *err)
{
    return hbm_http_fetch(url, timeout_s, user_agent, 0, NULL, res, err);
}

int hbm_http_fetch(const char *url, double timeout_s, const char *user_agent, size_t max_body,
                   hbm_http_body *body, hbm_http_result *res, hbm_err *err)
{
    memset(res, 0, sizeof *res);
    body_buf bb = {.out = body, .max = max_body};
    if (body)
        *body = (hbm_http_body){0};
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
    curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
    curl.easy_setopt(c, CURLOPT_WRITEDATA, &bb);
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
    switch (rc) {
    case CURLE_OK:
        res->outcome = HBM_HTTP_ANSWERED;
        res->status = status;
        return 0;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        res->outcome = HBM_HTTP_BAD_URL;
        return hbm_err_set(err, "%s: %s", url, why);
    case CURLE_WRITE_ERROR:
        if (bb.over) {
            res->outcome = HBM_HTTP_FAILED;
            return hbm_err_set(err, "%s: answer longer than %zu bytes", url, max_body);
        }
        res->outcome = HBM_HTTP_FAILED;
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

int hbm_http_get(const char *url, double timeout_s, const char *user_agent,
                 hbm_http_result *res, hbm_err *err)
{
    return hbm_http_fetch(url, timeout_s, user_agent, 0, NULL, res, err);
}

int hbm_http_fetch(const char *url, double timeout_s, const char *user_agent, size_t max_body,
                   hbm_http_body *body, hbm_http_result *res, hbm_err *err)
{
    (void)timeout_s;
    (void)user_agent;
    (void)max_body;
    if (body)
        *body = (hbm_http_body){0};
    memset(res, 0, sizeof *res);
    res->outcome = HBM_HTTP_UNAVAILABLE;
    return hbm_err_set(err, "%s: this build has no libcurl, so HTTP checks are left out "
                            "(see hbmctl --version)", url);
}

#endif
