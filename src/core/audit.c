/* The audit log: one JSON object per line, appended with a single write(2) on an O_APPEND
 * descriptor so concurrent writers never interleave within a record. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hbm/audit.h"
#include "hbm/redact.h"
#include "hbm/util.h"

const char *hbm_audit_path(const char *override)
{
    if (override && *override)
        return override;
    const char *env = getenv("HBMCTL_AUDIT_LOG");
    if (env && *env)
        return env;
    return HBM_AUDIT_DEFAULT_PATH;
}

static int make_parent(const char *path, hbm_err *err)
{
    char *dir = hbm_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) {
        free(dir);
        return 0;
    }
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    int rc = 0;
    if (mkdir(dir, 0750) < 0 && errno != EEXIST)
        rc = hbm_err_set(err, "cannot create the audit log directory %s: %s", dir, strerror(errno));
    free(dir);
    return rc;
}

/* Every string of a record through the redaction rule: a record names processes, paths and
 * reasons that came from outside, and the log outlives the command. */
static void redact_strings(json_t *v)
{
    const char *key;
    json_t *x;
    size_t i;
    if (json_is_string(v)) {
        char *r = hbm_redact_text(json_string_value(v), json_string_length(v));
        json_string_set(v, r); /* UTF-8 stays valid: only whole ASCII-delimited runs change */
        free(r);
    } else if (json_is_object(v)) {
        json_object_foreach(v, key, x)
            redact_strings(x);
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
            redact_strings(x);
    }
}

int hbm_audit_append(const char *path, json_t *record, hbm_err *err)
{
    if (make_parent(path, err) < 0)
        return -1;
    /* O_NONBLOCK: a FIFO in its place fails (no reader) or is refused below, never waits. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW,
                  0640);
    if (fd < 0)
        return hbm_err_set(err, "cannot open audit log %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return hbm_err_set(err, "audit log %s is not a regular file: refused", path);
    }
    json_t *rec = json_object();
    double now = hbm_now_wall();
    time_t t = (time_t)now;
    struct tm tm;
    gmtime_r(&t, &tm);
    char when[32], host[128] = "";
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    gethostname(host, sizeof host - 1);
    json_object_set_new(rec, "time", json_string(when));
    json_object_set_new(rec, "unix_time", json_real(now));
    json_object_set_new(rec, "host", json_string(host));
    json_object_set_new(rec, "uid", json_integer(getuid()));
    json_object_set_new(rec, "hbmctl_pid", json_integer(getpid()));
    json_object_update(rec, record);
    redact_strings(rec);
    char *line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rec);
    size_t len = strlen(line);
    line[len] = '\n'; /* replaces the terminator: the record is written as one line */
    ssize_t w = write(fd, line, len + 1);
    int e = errno;
    free(line);
    int rc = 0;
    if (w != (ssize_t)(len + 1))
        rc = hbm_err_set(err, "cannot write audit log %s: %s", path,
                         w < 0 ? strerror(e) : "short write");
    if (close(fd) < 0 && rc == 0)
        rc = hbm_err_set(err, "cannot write audit log %s: %s", path, strerror(errno));
    return rc;
}

char *hbm_audit_command(int argc, char *const *argv)
{
    /* NUL-separated words, the form the command-line redaction reads from /proc */
    size_t len = sizeof "hbmctl";
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *buf = hbm_xmalloc(len), *p = buf;
    memcpy(p, "hbmctl", sizeof "hbmctl");
    p += sizeof "hbmctl";
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]) + 1;
        memcpy(p, argv[i], n);
        p += n;
    }
    char *out = hbm_redact_words(buf, len - 1, '\0', 0);
    free(buf);
    return out;
}
