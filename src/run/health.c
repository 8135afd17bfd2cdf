/* --health-url: one HTTP GET with a hard time bound, through libcurl when the build has it,
 * else a minimal plain-HTTP client (the static binary: http:// only). */
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

/* Without libcurl (the static binary): a plain HTTP/1.0 GET, enough for a server's
 * /health on loopback or the pod network. https needs libcurl. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hbm/util.h"

static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        int ms = (int)((deadline - hbm_now_mono()) * 1000);
        if (ms <= 0)
            return -1;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, ms);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

int run_health_get(const char *url, double timeout_s, hbm_err *err)
{
    if (strncmp(url, "http://", 7) != 0)
        return hbm_err_set(err, "%s: only http:// without libcurl (see hbmctl --version)", url);
    const char *h = url + 7;
    const char *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    char host[256], port[16] = "80";
    if (hl == 0 || hl >= sizeof host)
        return hbm_err_set(err, "%s: bad host", url);
    memcpy(host, h, hl);
    host[hl] = '\0';
    char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
    if (colon) {
        if (host[0] == '[')
            colon++;
        snprintf(port, sizeof port, "%s", colon + 1);
        *colon = '\0';
    }
    char *name = host;
    if (name[0] == '[') {
        name++;
        char *rb = strchr(name, ']');
        if (rb)
            *rb = '\0';
    }
    if (strcmp(name, "localhost") == 0)
        name = "127.0.0.1"; /* no resolver needed for the common case */
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gr = getaddrinfo(name, port, &hints, &ai);
    if (gr != 0)
        return hbm_err_set(err, "%s: %s", url, gai_strerror(gr));
    double deadline = hbm_now_mono() + (timeout_s > 0.1 ? timeout_s : 0.1);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return hbm_err_set(err, "%s: socket: %s", url, strerror(errno));
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rc < 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        return hbm_err_set(err, "%s: %s", url, strerror(e));
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (wait_fd(fd, POLLOUT, deadline) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
        close(fd);
        return hbm_err_set(err, "%s: %s", url, soerr ? strerror(soerr) : "connect timed out");
    }
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: hbmctl-run/" HBM_VERSION
                     "\r\nConnection: close\r\n\r\n", slash ? slash : "/", host);
    if (n < 0 || (size_t)n >= sizeof req || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        close(fd);
        return hbm_err_set(err, "%s: cannot send the request", url);
    }
    char resp[64];
    size_t got = 0;
    while (got < sizeof resp - 1 && !memchr(resp, '\n', got)) {
        if (wait_fd(fd, POLLIN, deadline) < 0)
            break;
        ssize_t r = recv(fd, resp + got, sizeof resp - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    resp[got] = '\0';
    int status = 0;
    if (sscanf(resp, "HTTP/%*d.%*d %d", &status) != 1)
        return hbm_err_set(err, "%s: %s", url, got ? "not an HTTP answer" : "no answer in time");
    if (status < 200 || status > 299)
        return hbm_err_set(err, "%s: HTTP %d", url, status);
    return 0;
}

#endif
