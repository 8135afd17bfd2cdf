/* Bounded tokenising of /proc and /sys text: buffers are (pointer, length), never assumed
 * to be NUL-terminated, so the parsers can be fuzzed on raw bytes. Internal to src/host. */
#ifndef HBM_HOST_LEX_H
#define HBM_HOST_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A cursor over [p, end). */
typedef struct hbm_lex {
    const char *p, *end;
    int line; /* 1-based number of the line last returned by hbm_lex_line */
} hbm_lex;

void hbm_lex_init(hbm_lex *lx, const char *buf, size_t len);
/* Next line without its '\n'; false at the end. */
bool hbm_lex_line(hbm_lex *lx, const char **s, size_t *n);
/* Next blank-separated token of [*p, end); false when none is left. */
bool hbm_lex_tok(const char **p, const char *end, const char **s, size_t *n);
/* Whole-token numbers: no sign, no blanks, no overflow. */
bool hbm_lex_u64(const char *s, size_t n, int base, uint64_t *out);
bool hbm_lex_i64(const char *s, size_t n, int64_t *out); /* optional leading '-' */
bool hbm_lex_int(const char *s, size_t n, int *out);     /* non-negative, fits in int */
/* Copies at most cap-1 bytes and terminates. */
void hbm_lex_copy(char *dst, size_t cap, const char *s, size_t n);
/* The printable form of a token for error messages (at most 40 bytes, escaped). */
const char *hbm_lex_show(char *buf, size_t cap, const char *s, size_t n);

#endif
