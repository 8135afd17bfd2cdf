/* --health-url: one HTTP GET with a hard time bound, through libcurl. */
#include <string.h>

#include "run_int.h"

#ifdef HBM_HAVE_CURL
#include <curl/curl.h>

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

int run_health_get(const char *url, double timeout_s, hbm_err *err)
{
    static bool inited;
    if (!inited) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return hbm_err_set(err, "libcurl failed to initialise");
        inited = true;
    }
    CURL *c = curl_easy_init();
    if (!c)
        return hbm_err_set(err, "libcurl failed to initialise");
    long ms = (long)(timeout_s * 1000);
    if (ms < 100)
        ms = 100;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM: hbmctl owns its signals */
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "hbmctl-run/" HBM_VERSION);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK)
        return hbm_err_set(err, "%s: %s", url, curl_easy_strerror(rc));
    if (status < 200 || status > 299)
        return hbm_err_set(err, "%s: HTTP %ld", url, status);
    return 0;
}

#else

/* The static build has no libcurl; HTTP is left to a library, not written here. */
int run_health_get(const char *url, double timeout_s, hbm_err *err)
{
    (void)timeout_s;
    return hbm_err_set(err, "%s: this build has no libcurl, so --health-url is left out "
                            "(see hbmctl --version)", url);
}

#endif
