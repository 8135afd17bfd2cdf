/* Reading /proc and /sys relative to directory fds, without stdio. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbm/util.h"
#include "host/hostint.h"

DIR *hbm_hio_opendir(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    return d;
}

ssize_t hbm_hio_read(int dirfd, const char *name, char *buf, size_t cap)
{
    int fd = hbm_open_regular(dirfd, name, 0, 0, NULL);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

char *hbm_hio_slurp(int dirfd, const char *name, size_t max, size_t *len)
{
    char *buf = NULL;
    return hbm_read_file_at(dirfd, name, 0, max, &buf, len, NULL) == 0 ? buf : NULL;
}

int hbm_hio_open(const char *root, const char *path, int flags)
{
    char full[PATH_MAX];
    if ((size_t)snprintf(full, sizeof full, "%s%s", root, path) >= sizeof full) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(full, flags | O_CLOEXEC);
}

ssize_t hbm_hio_link(int dirfd, const char *name, char *buf, size_t cap, bool *real_link)
{
    ssize_t n = readlinkat(dirfd, name, buf, cap - 1);
    *real_link = n >= 0;
    if (n >= 0) {
        buf[n] = '\0';
        return n;
    }
    if (errno != EINVAL)
        return -1;
    /* Not a symlink: a fixture tree that keeps the target as file text. */
    n = hbm_hio_read(dirfd, name, buf, cap);
    if (n < 0)
        return -1;
    char *nl = memchr(buf, '\n', (size_t)n);
    if (nl) {
        *nl = '\0';
        n = nl - buf;
    }
    return n;
}

hbm_hpat *hbm_hpat_compile(const char *const *globs, size_t *n)
{
    size_t k = 0;
    while (globs[k])
        k++;
    hbm_hpat *p = hbm_xcalloc(k ? k : 1, sizeof *p);
    for (size_t i = 0; i < k; i++) {
        p[i].glob = globs[i];
        p[i].lit = strcspn(globs[i], "*?[\\");
    }
    *n = k;
    return p;
}

bool hbm_hpat_match(const hbm_hpat *p, size_t n, const char *path, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (len < p[i].lit || memcmp(path, p[i].glob, p[i].lit))
            continue;
        if (p[i].glob[p[i].lit] == '\0' ? len == p[i].lit : fnmatch(p[i].glob, path, 0) == 0)
            return true;
    }
    return false;
}
