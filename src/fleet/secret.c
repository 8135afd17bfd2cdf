/* Secrets for a secured Prometheus, read from files; and URLs as messages may show them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbm/fleet.h"
#include "hbm/util.h"

#define MAX_SECRET (64u << 10) /* a service account token is about 1 KiB */

/* The file's bytes, from a regular file only: a FIFO or a device would block or never end. */
static int slurp(const char *path, char *buf, size_t cap, size_t *n, hbm_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return hbm_err_set(err, "%s: %s", path, strerror(errno));
    struct stat st;
    int rc = 0;
    *n = 0;
    if (fstat(fd, &st) < 0)
        rc = hbm_err_set(err, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = hbm_err_set(err, "%s: not a regular file", path);
    else if ((size_t)st.st_size >= cap)
        rc = hbm_err_set(err, "%s: larger than %zu bytes", path, cap - 1);
    while (rc == 0) {
        ssize_t r = read(fd, buf + *n, cap - 1 - *n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = hbm_err_set(err, "%s: %s", path, strerror(errno));
        else if (r == 0)
            break;
        else if ((*n += (size_t)r) == cap - 1)
            rc = hbm_err_set(err, "%s: larger than %zu bytes", path, cap - 2);
    }
    close(fd);
    return rc;
}

int hbm_fleet_read_secret(const char *path, bool token, char **out, hbm_err *err)
{
    *out = NULL;
    char *buf = hbm_xmalloc(MAX_SECRET + 1);
    size_t n = 0;
    if (slurp(path, buf, MAX_SECRET + 1, &n, err) < 0) {
        free(buf);
        return -1;
    }
    /* One line ending is how editors and `echo` save a file; anything else is the secret's. */
    if (n && buf[n - 1] == '\n')
        n--;
    if (n && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    int rc = n ? 0 : hbm_err_set(err, "%s: empty", path);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x20 || c == 0x7f)
            rc = hbm_err_set(err, "%s: a control byte (0x%02x) at byte %zu: refused, it "
                                  "would reach the HTTP request", path, c, i + 1);
        else if (token && c == ' ')
            rc = hbm_err_set(err, "%s: a space at byte %zu: a bearer token has none", path,
                             i + 1);
    }
    if (rc < 0) {
        explicit_bzero(buf, MAX_SECRET + 1);
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

void hbm_fleet_redact_url(const char *url, char *buf, size_t n)
{
    /* A query string may carry a token (?token=...): it is never shown. */
    size_t keep = strcspn(url, "?#");
    const char *scheme = strstr(url, "://");
    const char *host = scheme && (size_t)(scheme - url) < keep ? scheme + 3 : url;
    const char *at = NULL;
    for (const char *c = host; c < url + keep; c++)
        if (*c == '@')
            at = c; /* the last one: userinfo may hold '@' and '/' when not encoded */
    if (at)
        snprintf(buf, n, "%.*s***%.*s", (int)(host - url), url, (int)(url + keep - at), at);
    else
        snprintf(buf, n, "%.*s", (int)keep, url);
    if (url[keep] && strlen(buf) + 4 < n)
        strcat(buf, "?***");
}

void hbm_fleet_secret_free(char *secret)
{
    if (secret)
        explicit_bzero(secret, strlen(secret));
    free(secret);
}

bool hbm_fleet_user_ok(const char *user)
{
    for (const char *c = user; *c; c++)
        if (*c == ':' || (unsigned char)*c < 0x20 || *c == 0x7f)
            return false;
    return true;
}
