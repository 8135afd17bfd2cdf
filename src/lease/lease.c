/* flock(2) leases, one file per device. The lock is the truth; the file's JSON content
 * only describes the holder. Files are never unlinked, so every taker locks the same inode. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hbm/host.h"
#include "hbm/lease.h"
#include "hbm/util.h"
#include "lease/lease_int.h"

const char *hbm_lease_dir(const char *override)
{
    if (override && *override)
        return override;
    const char *env = getenv("HBMCTL_LEASE_DIR");
    if (env && *env)
        return env;
    return HBM_LEASE_DEFAULT_DIR;
}

static void lease_path(char *buf, size_t n, const char *dir, int64_t device)
{
    snprintf(buf, n, "%s/device-%lld.lease", dir, (long long)device);
}

static void parse_content(int fd, hbm_lease_info *info)
{
    char buf[1024];
    ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
    if (r <= 0)
        return;
    buf[r] = '\0';
    json_error_t jerr;
    json_t *j = json_loads(buf, JSON_DISABLE_EOF_CHECK, &jerr);
    if (!json_is_object(j)) {
        json_decref(j);
        return;
    }
    const char *name = json_string_value(json_object_get(j, "name"));
    if (name)
        snprintf(info->name, sizeof info->name, "%s", name);
    json_t *v;
    if (json_is_integer(v = json_object_get(j, "pid")))
        info->pid = (int)json_integer_value(v);
    if (json_is_integer(v = json_object_get(j, "starttime")))
        info->starttime = (uint64_t)json_integer_value(v);
    if (json_is_integer(v = json_object_get(j, "hold_pid")))
        info->hold_pid = (int)json_integer_value(v);
    if (json_is_number(v = json_object_get(j, "since")))
        info->since = json_number_value(v);
    json_decref(j);
}

static void info_init(hbm_lease_info *info, int64_t device, const char *path)
{
    memset(info, 0, sizeof *info);
    info->device = device;
    snprintf(info->path, sizeof info->path, "%s", path);
}

int hbm_lease_set_holder(int fd, const char *name, int64_t device, int pid, int hold_pid,
                         hbm_err *err)
{
    uint64_t st = 0;
    if (hbm_host_starttime(NULL, pid, &st, NULL) < 0)
        st = 0;
    json_t *j = json_pack("{s:s, s:I, s:i, s:I, s:i, s:f}", "name", name, "device",
                          (json_int_t)device, "pid", pid, "starttime", (json_int_t)st,
                          "hold_pid", hold_pid, "since", hbm_now_wall());
    char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    size_t len = strlen(text);
    int rc = 0;
    if (ftruncate(fd, 0) < 0 || pwrite(fd, text, len, 0) != (ssize_t)len ||
        pwrite(fd, "\n", 1, (off_t)len) != 1)
        rc = hbm_err_set(err, "cannot write lease file: %s", strerror(errno));
    free(text);
    return rc;
}

/* A probe that takes LOCK_SH for an instant can make a taker's LOCK_EX|LOCK_NB fail, so a
 * taker retries a few times over ~60 ms before calling the lease held. */
static int lock_exclusive(int fd)
{
    unsigned delay_us = 2000;
    for (int attempt = 0; attempt < 6; attempt++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        usleep(delay_us);
        delay_us *= 2;
    }
    errno = EWOULDBLOCK;
    return -1;
}

int hbm_lease_acquire(const char *dir, const char *name, int64_t device, int *fd,
                      hbm_lease_info *holder, hbm_err *err)
{
    *fd = -1;
    if (!name || !*name || strlen(name) >= HBM_LEASE_NAME_MAX || strchr(name, '/'))
        return hbm_err_set(err, "lease name must be 1-%d characters without '/'",
                           HBM_LEASE_NAME_MAX - 1);
    if (device < 0)
        return hbm_err_set(err, "device has no id to lease");
    if (lease_dir_prepare(dir, err) < 0)
        return -1;
    char path[512], base[64];
    lease_path(path, sizeof path, dir, device);
    snprintf(base, sizeof base, "device-%lld.lease", (long long)device);
    int f = lease_file_open(dir, base, err);
    if (f < 0)
        return -1;
    if (lock_exclusive(f) < 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            if (holder) {
                info_init(holder, device, path);
                holder->held = true;
                parse_content(f, holder);
            }
            close(f);
            return 1;
        }
        close(f);
        return hbm_err_set(err, "cannot lock %s: %s", path, strerror(e));
    }
    if (hbm_lease_set_holder(f, name, device, getpid(), 0, err) < 0) {
        close(f);
        return -1;
    }
    *fd = f;
    return 0;
}

void hbm_lease_release(int fd)
{
    if (fd >= 0)
        close(fd);
}

static int query_path(const char *path, int64_t device, hbm_lease_info *info, hbm_err *err)
{
    info_init(info, device, path);
    /* The directory is shared: whatever another user left there (a FIFO would block an
     * open for reading until someone writes) is refused unread. */
    hbm_err why;
    int f = hbm_open_regular(AT_FDCWD, path, O_NOFOLLOW, 0, &why);
    if (f < 0) {
        if (errno == ENOENT)
            return 0;
        return hbm_err_set(err, "lease file %s (not a file hbmctl made: remove it)", why.msg);
    }
    parse_content(f, info);
    int held = 0;
    if (flock(f, LOCK_SH | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK) {
            int e = errno;
            close(f);
            return hbm_err_set(err, "cannot probe %s: %s", path, strerror(e));
        }
        held = 1;
    }
    close(f); /* drops the shared probe lock, if taken */
    info->held = held;
    return held;
}

int hbm_lease_query(const char *dir, int64_t device, hbm_lease_info *info, hbm_err *err)
{
    char path[512];
    lease_path(path, sizeof path, dir, device);
    return query_path(path, device, info, err);
}

int hbm_lease_list(const char *dir, hbm_lease_info **out, size_t *n, hbm_err *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        return hbm_err_set(err, "cannot read lease directory %s: %s", dir, strerror(errno));
    }
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long long dev;
        char tail[16];
        if (sscanf(e->d_name, "device-%lld.%15s", &dev, tail) != 2 || strcmp(tail, "lease"))
            continue;
        hbm_grow((void **)out, &cap, *n, sizeof **out);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (query_path(path, dev, &(*out)[*n], err) < 0) {
            closedir(d);
            free(*out);
            *out = NULL;
            *n = 0;
            return -1;
        }
        (*n)++;
    }
    closedir(d);
    /* Stable order for listings: by device id. */
    for (size_t i = 1; i < *n; i++)
        for (size_t j = i; j > 0 && (*out)[j - 1].device > (*out)[j].device; j--) {
            hbm_lease_info t = (*out)[j];
            (*out)[j] = (*out)[j - 1];
            (*out)[j - 1] = t;
        }
    return 0;
}

json_t *hbm_lease_list_json(const char *dir, const hbm_lease_info *ls, size_t n, bool all)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!ls[i].held && !all)
            continue;
        json_array_append_new(
            a, json_pack("{s:I, s:s, s:o, s:o, s:o, s:b}", "device", (json_int_t)ls[i].device,
                         "name", ls[i].name,
                         "pid", ls[i].held && ls[i].pid ? json_integer(ls[i].pid) : json_null(),
                         "hold_pid", ls[i].held && ls[i].hold_pid ? json_integer(ls[i].hold_pid)
                                                                 : json_null(),
                         "since", ls[i].held && ls[i].since > 0 ? json_real(ls[i].since)
                                                                : json_null(),
                         "held", ls[i].held));
    }
    json_t *j = json_object();
    json_object_set_new(j, "dir", json_string(dir));
    json_object_set_new(j, "leases", a);
    return j;
}
