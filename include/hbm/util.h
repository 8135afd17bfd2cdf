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

/* Reads a whole (small) file, NUL-terminated; fails past max bytes. *len may be NULL.
 * path "-" reads standard input. */
int hbm_read_file(const char *path, size_t max, char **out, size_t *len, hbm_err *err);

/* Writes all n bytes to fd, again after EINTR and short writes; -1 with errno on failure. */
int hbm_write_all(int fd, const char *s, size_t n);
/* Writes len bytes to a file beside path (created with mode, never through a link),
 * syncs it and renames it over path, so a reader sees the old file or the whole new one. */
int hbm_write_file_atomic(const char *path, const char *data, size_t len, int mode,
                          hbm_err *err);

/* Runs argv (PATH searched) and captures its stdout, at most 16 MiB; stderr passes through.
 * A status other than 0 is an error naming argv[0], argv[1], the status and the first
 * output. *out (NUL-terminated) is the caller's to free. */
int hbm_run_capture(char *const argv[], char **out, size_t *len, hbm_err *err);

/* Monotonic and wall clocks in seconds. */
double hbm_now_mono(void);
double hbm_now_wall(void);

/* Trims ASCII white space at both ends in place; returns s. */
char *hbm_trim(char *s);

bool hbm_str_starts(const char *s, const char *prefix);

#endif
