/* Terminal-safe text (include/hbm/text.h). */
#include <stdio.h>
#include <string.h>

#include "hbm/text.h"

size_t hbm_text_next(const char *s, size_t n, long *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = u[0] < 0x80 ? 1 : u[0] >= 0xc2 && u[0] <= 0xdf ? 2
               : u[0] >= 0xe0 && u[0] <= 0xef ? 3 : u[0] >= 0xf0 && u[0] <= 0xf4 ? 4 : 0;
    *cp = len ? (long)(u[0] & (0xff >> (len + (len > 1)))) : -1;
    if (len <= 1)
        return 1;
    for (size_t k = 1; k < len; k++) {
        if (k == n)
            return 0;
        /* the second byte also rules out overlong forms, surrogates and > U+10FFFF */
        unsigned lo = 0x80, hi = 0xbf;
        if (k == 1 && u[0] == 0xe0)
            lo = 0xa0;
        else if (k == 1 && u[0] == 0xed)
            hi = 0x9f;
        else if (k == 1 && u[0] == 0xf0)
            lo = 0x90;
        else if (k == 1 && u[0] == 0xf4)
            hi = 0x8f;
        if (u[k] < lo || u[k] > hi) {
            *cp = -1;
            return 1;
        }
        *cp = (*cp << 6) | (u[k] & 0x3f);
    }
    return len;
}

bool hbm_text_unsafe(long cp)
{
    return cp < 0 || (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7f && cp <= 0x9f) ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
           cp == 0x200e || cp == 0x200f || cp == 0x061c || cp == 0x2028 || cp == 0x2029;
}

size_t hbm_text_escape(char *out, long cp, unsigned char byte)
{
    if (cp < 0)
        return (size_t)snprintf(out, 9, "\\x%02x", byte);
    if (cp < 0x80)
        return (size_t)snprintf(out, 9, "\\x%02lx", cp);
    return (size_t)snprintf(out, 9, "\\u%04lx", cp);
}

bool hbm_text_vfitf(char *dst, size_t n, const char *fmt, va_list ap)
{
    int len = vsnprintf(dst, n, fmt, ap);
    if (len < 0 || (size_t)len < n)
        return false;
    /* back to the start of a character, leaving room for the marker */
    size_t end = n - 4;
    while (end > 0 && ((unsigned char)dst[end] & 0xc0) == 0x80)
        end--;
    memcpy(dst + end, "...", 4);
    return true;
}

bool hbm_text_fitf(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool cut = hbm_text_vfitf(dst, n, fmt, ap);
    va_end(ap);
    return cut;
}
