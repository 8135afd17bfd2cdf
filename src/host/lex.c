/* Bounded tokenising shared by the /proc and /sys parsers. */
#include "host/lex.h"

#include <stdio.h>
#include <string.h>

void hbm_lex_init(hbm_lex *lx, const char *buf, size_t len)
{
    lx->p = buf;
    lx->end = buf + len;
    lx->line = 0;
}

bool hbm_lex_line(hbm_lex *lx, const char **s, size_t *n)
{
    if (lx->p >= lx->end)
        return false;
    const char *nl = memchr(lx->p, '\n', (size_t)(lx->end - lx->p));
    const char *stop = nl ? nl : lx->end;
    *s = lx->p;
    *n = (size_t)(stop - lx->p);
    lx->p = nl ? nl + 1 : lx->end;
    lx->line++;
    return true;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool hbm_lex_tok(const char **p, const char *end, const char **s, size_t *n)
{
    const char *q = *p;
    while (q < end && blank(*q))
        q++;
    if (q >= end) {
        *p = q;
        return false;
    }
    const char *t = q;
    while (q < end && !blank(*q))
        q++;
    *s = t;
    *n = (size_t)(q - t);
    *p = q;
    return true;
}

static int digit(char c, int base)
{
    int v;
    if (c >= '0' && c <= '9')
        v = c - '0';
    else if (c >= 'a' && c <= 'f')
        v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
        v = c - 'A' + 10;
    else
        return -1;
    return v < base ? v : -1;
}

bool hbm_lex_u64(const char *s, size_t n, int base, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = digit(s[i], base);
        if (d < 0)
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return true;
}

bool hbm_lex_i64(const char *s, size_t n, int64_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    uint64_t v;
    if (!hbm_lex_u64(s + neg, n - neg, 10, &v) || v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

bool hbm_lex_int(const char *s, size_t n, int *out)
{
    uint64_t v;
    if (!hbm_lex_u64(s, n, 10, &v) || v > (uint64_t)INT32_MAX)
        return false;
    *out = (int)v;
    return true;
}

void hbm_lex_copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (cap == 0)
        return;
    if (n > cap - 1)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

const char *hbm_lex_show(char *buf, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 40 && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    if (n > 40 && o + 4 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o < cap ? o : cap - 1] = '\0';
    return buf;
}
