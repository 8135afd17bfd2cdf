#include "hbm/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void *oom(size_t n)
{
    fprintf(stderr, "hbmctl: out of memory allocating %zu bytes\n", n);
    abort();
}

void *hbm_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *hbm_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *hbm_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *hbm_xstrdup(const char *s)
{
    return hbm_xstrndup(s, strlen(s));
}

char *hbm_xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = hbm_xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *hbm_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *p = hbm_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void hbm_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return;
    size_t ncap = *cap ? *cap * 2 : 8;
    while (ncap <= n)
        ncap *= 2;
    *arr = hbm_xrealloc(*arr, ncap * elem);
    memset((char *)*arr + *cap * elem, 0, (ncap - *cap) * elem);
    *cap = ncap;
}

int hbm_parse_size(const char *s, int64_t *bytes, hbm_err *err)
{
    if (!s || !*s)
        return hbm_err_set(err, "empty size");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return hbm_err_set(err, "'%s' is not a size (examples: 64GiB, 512MiB, 36.75 GiB)", s);
    while (*end == ' ')
        end++;
    static const struct {
        const char *unit;
        double mult;
    } units[] = {
        {"", 1},           {"b", 1},           {"k", HBM_KIB},    {"kb", HBM_KIB},
        {"kib", HBM_KIB},  {"m", HBM_MIB},     {"mb", HBM_MIB},   {"mib", HBM_MIB},
        {"g", HBM_GIB},    {"gb", HBM_GIB},    {"gib", HBM_GIB},  {"t", HBM_GIB * 1024.0},
        {"tb", HBM_GIB * 1024.0}, {"tib", HBM_GIB * 1024.0},
    };
    char unit[8];
    size_t n = strlen(end);
    if (n >= sizeof unit)
        return hbm_err_set(err, "'%s': unknown size unit", s);
    for (size_t i = 0; i <= n; i++)
        unit[i] = (char)tolower((unsigned char)end[i]);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].unit) == 0) {
            double b = v * units[i].mult;
            if (b > 9.2e18)
                return hbm_err_set(err, "'%s': size too large", s);
            *bytes = (int64_t)llround(b);
            return 0;
        }
    }
    return hbm_err_set(err, "'%s': unknown size unit '%s' (use B, KiB, MiB, GiB, TiB)", s, end);
}

int hbm_parse_ratio(const char *s, double *ratio, hbm_err *err)
{
    if (!s || !*s)
        return hbm_err_set(err, "empty ratio");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v))
        return hbm_err_set(err, "'%s' is not a ratio (examples: 80%%, 0.8)", s);
    if (*end == '%') {
        v /= 100.0;
        end++;
    }
    if (*end)
        return hbm_err_set(err, "'%s' is not a ratio (examples: 80%%, 0.8)", s);
    if (v < 0 || v > 1)
        return hbm_err_set(err, "'%s' is outside 0..100%%", s);
    *ratio = v;
    return 0;
}

int hbm_parse_duration(const char *s, double *seconds, hbm_err *err)
{
    if (!s || !*s)
        return hbm_err_set(err, "empty duration");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return hbm_err_set(err, "'%s' is not a duration (examples: 30s, 2m, 1h, 250ms)", s);
    double mult;
    if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
        mult = 1;
    else if (strcmp(end, "ms") == 0)
        mult = 0.001;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        mult = 60;
    else if (strcmp(end, "h") == 0)
        mult = 3600;
    else if (strcmp(end, "d") == 0)
        mult = 86400;
    else
        return hbm_err_set(err, "'%s': unknown duration unit '%s' (ms, s, m, h, d)", s, end);
    *seconds = v * mult;
    return 0;
}

const char *hbm_fmt_size(char *buf, size_t n, int64_t bytes)
{
    if (bytes < 0) {
        snprintf(buf, n, "-");
        return buf;
    }
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%lld B", (long long)bytes);
    else
        snprintf(buf, n, "%.2f %s", v, unit[u]);
    return buf;
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISDIR(m)  ? "a directory"
                         : "a special file";
}

int hbm_open_regular(int dirfd, const char *path, int flags, size_t max, hbm_err *err)
{
    /* O_NONBLOCK: opening a FIFO with no writer (or a device) returns at once instead of
     * waiting, so the type can be refused before anything is read. */
    int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | flags);
    if (fd < 0) {
        int e = errno;
        /* O_NOFOLLOW on a link fails with ELOOP: say what it is rather than "too many
         * levels of symbolic links". */
        if (e == ELOOP && (flags & O_NOFOLLOW))
            hbm_err_set(err, "%s: a symbolic link, refused unread", path);
        else
            hbm_err_set(err, "%s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) < 0) {
        e = errno;
        hbm_err_set(err, "%s: %s", path, strerror(e));
    } else if (!S_ISREG(st.st_mode)) {
        e = EINVAL;
        hbm_err_set(err, "%s: %s, not a regular file: refused unread", path,
                    file_kind(st.st_mode));
    } else if (max && (uint64_t)st.st_size > max) {
        e = EFBIG;
        hbm_err_set(err, "%s: larger than %zu bytes", path, max);
    }
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int hbm_read_fd(int fd, const char *name, size_t max, char **out, size_t *len, hbm_err *err)
{
    size_t cap = 4096, n = 0;
    char *buf = hbm_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max) {
                free(buf);
                hbm_err_set(err, "%s: larger than %zu bytes", name, max);
                errno = EFBIG;
                return -1;
            }
            cap *= 2;
            buf = hbm_xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            hbm_err_set(err, "%s: %s", name, strerror(e));
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > max) {
        free(buf);
        hbm_err_set(err, "%s: larger than %zu bytes", name, max);
        errno = EFBIG;
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int hbm_read_file_at(int dirfd, const char *path, int flags, size_t max, char **out,
                     size_t *len, hbm_err *err)
{
    int fd = hbm_open_regular(dirfd, path, flags, max, err);
    if (fd < 0)
        return -1;
    int rc = hbm_read_fd(fd, path, max, out, len, err);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int hbm_read_file(const char *path, size_t max, char **out, size_t *len, hbm_err *err)
{
    /* Standard input is what the user handed over (a pipe, a terminal): read, but bounded. */
    if (strcmp(path, "-") == 0)
        return hbm_read_fd(STDIN_FILENO, "<stdin>", max, out, len, err);
    return hbm_read_file_at(AT_FDCWD, path, 0, max, out, len, err);
}

int hbm_write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int hbm_write_file_atomic(const char *path, const char *data, size_t len, int mode,
                          hbm_err *err)
{
    char *tmp = hbm_xasprintf("%s.%d.tmp", path, (int)getpid());
    /* O_EXCL: in a shared directory the name can be taken in advance (a FIFO would block
     * a plain open, a planted file would become the result); a leftover of our own from
     * a crashed run is removed once (the sticky bit stops us removing anyone else's). */
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW;
    int fd = open(tmp, flags, mode);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, flags, mode);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return hbm_err_set(err, "%s: %s", path, strerror(e));
    }
    int rc = hbm_write_all(fd, data, len);
    if (rc == 0)
        rc = fsync(fd);
    int e = errno;
    if (close(fd) < 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = -1;
        e = errno;
    }
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc < 0 ? hbm_err_set(err, "%s: %s", path, strerror(e)) : 0;
}

double hbm_now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double hbm_now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

char *hbm_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

bool hbm_str_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Optimal string alignment distance: a swapped pair of letters counts once ("devcie"). */
size_t hbm_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 95 || lb > 95)
        return (size_t)-1;
    size_t d[96][96];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t c = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + c < v)
                v = d[i - 1][j - 1] + c;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

void hbm_strbuf_add(hbm_strbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = hbm_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}
