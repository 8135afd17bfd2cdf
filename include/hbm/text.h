/* Bytes from outside (process names, argv, labels, file contents, child output) made safe
 * for a terminal: which characters must not reach one raw, and their visible escapes. The
 * CLI's output filter (src/cli/out.c) and the exporter's label values use it
 * (docs/safety.md, "Redaction and escaping"). */
#ifndef HBM_TEXT_H
#define HBM_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* The character at s, with n > 0 bytes left: returns its length and sets *cp to its code
 * point, or to -1 for a byte that starts no valid UTF-8 (length 1: overlong forms,
 * surrogates and stray continuation bytes included). Returns 0 when s holds only the valid
 * start of a character cut by the end (more bytes would tell). */
size_t hbm_text_next(const char *s, size_t n, long *cp);

/* Whether a terminal must not get cp raw: a C0 control other than tab and newline, DEL,
 * a C1 control (U+0080-U+009F), a bidirectional override or isolate, a line or paragraph
 * separator, or a stray byte (-1). */
bool hbm_text_unsafe(long cp);

/* Writes the visible escape of an unsafe character to out (room for 8 bytes and a NUL):
 * "\x1b" for a control below U+0080 and for a stray byte (its value in byte), "\u009b" for
 * a code point above. Returns its length. */
size_t hbm_text_escape(char *out, long cp, unsigned char byte);

/* Formats into a fixed buffer of n > 4 bytes; text that does not fit is cut at a character
 * boundary and ends with "...", so a reader sees that something is missing (a plain
 * snprintf would cut silently, mid-character). Returns true when it cut. */
bool hbm_text_fitf(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool hbm_text_vfitf(char *dst, size_t n, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
