/* Scratch files for the unit tests: a temporary directory, files written under it (parent
 * directories made), a one-file scratch, and removal of a tree. A write that fails fails
 * the test where it is called; mkdtemp and rmtree return 0 or -1 so that cmocka setup and
 * teardown functions can return them. */
#ifndef HBM_TEST_HELPERS_H
#define HBM_TEST_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* dir/rel into out; a path that does not fit fails the test. */
static inline void th_path(char *out, size_t size, const char *dir, const char *rel)
{
    int n = snprintf(out, size, "%s/%s", dir, rel);
    if (n < 0 || (size_t)n >= size)
        fail_msg("path too long: %s/%s", dir, rel);
}

/* Makes a fresh directory /tmp/hbm-TAG.XXXXXX and writes its name into dir. */
static inline int th_mkdtemp(char *dir, size_t size, const char *tag)
{
    int n = snprintf(dir, size, "/tmp/hbm-%s.XXXXXX", tag);
    if (n < 0 || (size_t)n >= size)
        return -1;
    return mkdtemp(dir) ? 0 : -1;
}

/* Writes len bytes to dir/rel, making the directories on the way. */
static inline void th_write(const char *dir, const char *rel, const void *data, size_t len)
{
    char path[PATH_MAX];
    th_path(path, sizeof path, dir, rel);
    for (char *q = path + strlen(dir) + 1; *q; q++)
        if (*q == '/') {
            *q = '\0';
            if (mkdir(path, 0755) < 0 && errno != EEXIST)
                fail_msg("mkdir %s: %s", path, strerror(errno));
            *q = '/';
        }
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("open %s: %s", path, strerror(errno));
    size_t put = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || put != len)
        fail_msg("write %s: %s", path, strerror(errno));
}

static inline void th_write_text(const char *dir, const char *rel, const char *text)
{
    th_write(dir, rel, text, strlen(text));
}

/* A scratch file /tmp/hbm-TAG-XXXXXX holding text; its name goes into path. */
static inline void th_tmpfile(char *path, size_t size, const char *tag, const char *text)
{
    int n = snprintf(path, size, "/tmp/hbm-%s-XXXXXX", tag);
    if (n < 0 || (size_t)n >= size)
        fail_msg("path too long for %s", tag);
    int fd = mkstemp(path);
    if (fd < 0)
        fail_msg("mkstemp %s: %s", path, strerror(errno));
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    close(fd);
    if (w != (ssize_t)len)
        fail_msg("write %s: %s", path, strerror(errno));
}

static inline int th_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes dir and everything under it; symbolic links are removed, never followed. */
static inline int th_rmtree(const char *dir)
{
    return nftw(dir, th_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
