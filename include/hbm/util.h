/* Small helpers shared by every module: allocation that aborts on exhaustion (real failures
 * keep real error paths; running out of memory is not one we can recover from), sizes and
 * times in one unit each (bytes, seconds), and file reading with bounds. */
#ifndef HBM_UTIL_H
#define HBM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"

#define HBM_KIB 1024LL
#define HBM_MIB (1024LL * 1024)
#define HBM_GIB (1024LL * 1024 * 1024)

/* An unknown integer fact (size, id, count). JSON renders it as null, never 0. */
#define HBM_UNKNOWN (-1LL)

void *hbm_xmalloc(size_t n);
void *hbm_xcalloc(size_t n, size_t size);
void *hbm_xrealloc(void *p, size_t n);
char *hbm_xstrdup(const char *s);
char *hbm_xstrndup(const char *s, size_t n);
char *hbm_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Grows *arr (of *cap elements of size elem) so that index n is valid. */
void hbm_grow(void **arr, size_t *cap, size_t n, size_t elem);

/* A growing string: p is always NUL-terminated once something was added (owned). */
typedef struct hbm_strbuf {
    char *p;
    size_t n, cap;
} hbm_strbuf;
void hbm_strbuf_add(hbm_strbuf *b, const char *s, size_t n);

/* "64GiB", "36.75 GiB", "512MiB", "1.5G", "4096" (bytes), "80000MB" (MB = MiB, as
 * npu-smi and nvidia-smi mean it). Returns -1 with a message on anything else. */
int hbm_parse_size(const char *s, int64_t *bytes, hbm_err *err);

/* "80%" or "0.8" -> 0.8. Values outside 0..1 are refused. */
int hbm_parse_ratio(const char *s, double *ratio, hbm_err *err);

/* "30s", "2m", "1.5h", "1d", "250ms", "10" (seconds) -> seconds. */
int hbm_parse_duration(const char *s, double *seconds, hbm_err *err);

/* Optimal string alignment distance between a and b: a swapped pair of letters counts
 * once ("devcie"); (size_t)-1 past 95 characters. For "did you mean" suggestions. */
size_t hbm_edit_distance(const char *a, const char *b);

/* Writes "36.75 GiB" style text (binary units, two decimals above KiB) into buf. */
const char *hbm_fmt_size(char *buf, size_t n, int64_t bytes);

/* The one way hbmctl opens a file it reads (docs/safety.md, "Deadlines and non-blocking
 * reads"): path under dirfd (AT_FDCWD for a plain path) opened O_RDONLY | O_NONBLOCK |
 * O_CLOEXEC | O_NOCTTY plus flags (O_NOFOLLOW where someone else could plant a link),
 * then fstat: a FIFO, socket, device or directory is refused unread (EINVAL), and so is a
 * file over max bytes (EFBIG; max 0: no bound). Returns the fd, or -1 with errno set and
 * err naming the path and what it is. */
int hbm_open_regular(int dirfd, const char *path, int flags, size_t max, hbm_err *err);
/* Reads fd to its end, NUL-terminated; fails (EFBIG) past max bytes. name is for messages.
 * *len may be NULL. */
int hbm_read_fd(int fd, const char *name, size_t max, char **out, size_t *len, hbm_err *err);
/* hbm_open_regular then hbm_read_fd: a whole (small) regular file. errno is set on failure. */
int hbm_read_file_at(int dirfd, const char *path, int flags, size_t max, char **out,
                     size_t *len, hbm_err *err);
/* hbm_read_file_at(AT_FDCWD, path, 0, ...); path "-" reads standard input (what the user
 * gave, so any kind of file), bounded by max alike. */
int hbm_read_file(const char *path, size_t max, char **out, size_t *len, hbm_err *err);

/* Writes all n bytes to fd, again after EINTR and short writes; -1 with errno on failure. */
int hbm_write_all(int fd, const char *s, size_t n);
/* Writes len bytes to a file beside path (created with mode, never through a link),
 * syncs it and renames it over path, so a reader sees the old file or the whole new one. */
int hbm_write_file_atomic(const char *path, const char *data, size_t len, int mode,
                          hbm_err *err);

/* Runs argv (PATH searched) in its own process group, stdin /dev/null, and captures its
 * stdout (at most 16 MiB) and stderr on pipes of its own. Its output ends when it exits;
 * then, or at the deadline (timeout seconds), the whole group is killed and the child
 * reaped. Past the deadline: HBM_ERR_HUNG, "ARGV0 ARGV1 did not finish within Ns (killed)"; a
 * status other than 0 is an error naming argv[0], argv[1], the status and the first line
 * of its stderr (else of its output). *out (NUL-terminated) is the caller's to free. */
int hbm_run_capture_for(char *const argv[], double timeout, char **out, size_t *len,
                        hbm_err *err);
/* hbm_run_capture_for with HBM_CHILD_TIMEOUT_DEFAULT seconds. */
#define HBM_CHILD_TIMEOUT_DEFAULT 30.0
int hbm_run_capture(char *const argv[], char **out, size_t *len, hbm_err *err);
/* Kills the process group of every child program running now (async-signal-safe: for a
 * deadline handler that is about to _exit). Also run at exit. */
void hbm_children_kill(void);

/* Monotonic and wall clocks in seconds. */
double hbm_now_mono(void);
double hbm_now_wall(void);

/* Trims ASCII white space at both ends in place; returns s. */
char *hbm_trim(char *s);

bool hbm_str_starts(const char *s, const char *prefix);

#endif
