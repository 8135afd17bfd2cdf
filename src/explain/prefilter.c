/* The literal prefilter: most lines of a server log can match no keyword and hold no
 * error word, and proving that must cost less than reading them through the cleaner and
 * the matchers. One pass over a whole buffer reads the text as the cleaner would leave it
 * (escape sequences dropped, CR and NUL as blanks) and rolls a hash of its last four bytes,
 * case-folded, over a 32 KiB bit table of every needle's last four bytes; a set bit is
 * checked against the needles ending there, so only a line that really holds a needle
 * (or a CRI partial record, which must be joined) stops the pass. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "explain_int.h"
#include "hbm/util.h"

#define HASH_BITS 18
#define HEAD_MASK (EXPL_PREFILTER_HEADS - 1)

static unsigned hash4(uint32_t w)
{
    return (unsigned)((w * 2654435761u) >> (32 - HASH_BITS));
}

void expl_prefilter_init(expl_prefilter *pf)
{
    memset(pf, 0, sizeof *pf);
    for (unsigned c = 0; c < 256; c++)
        pf->fold[c] = (uint8_t)tolower((int)c);
    for (size_t i = 0; i < EXPL_PREFILTER_HEADS; i++)
        pf->head[i] = -1;
    /* CRI partial records are joined with the next ones: such a line takes the full path. */
    expl_prefilter_add(pf, "stdout P", 8, false);
    expl_prefilter_add(pf, "stderr P", 8, false);
}

void expl_prefilter_add(expl_prefilter *pf, const char *s, size_t n, bool fold)
{
    if (n < 4) {
        pf->all = true; /* too short for an anchor: every line is a candidate */
        return;
    }
    uint32_t w = 0;
    for (size_t k = n - 4; k < n; k++)
        w = w << 8 | pf->fold[(unsigned char)s[k]];
    unsigned h = hash4(w);
    pf->bits[h >> 3] |= (uint8_t)(1u << (h & 7));
    hbm_grow((void **)&pf->v, &pf->cap, pf->n, sizeof *pf->v);
    pf->v[pf->n] = (expl_anchor){.s = s, .n = n, .hash = h, .fold = fold,
                                 .next = pf->head[h & HEAD_MASK]};
    pf->head[h & HEAD_MASK] = (int32_t)pf->n++;
}

void expl_prefilter_free(expl_prefilter *pf)
{
    free(pf->v);
    memset(pf, 0, sizeof *pf);
}

/* Whether a needle hashed to h ends at p[i]. The text is as the cleaner leaves it from
 * p[clean_from] on; a needle reaching before that (over an escape sequence, a CR or a NUL,
 * which the cleaner changes) is a candidate unread: those lines are rare. */
static bool ends_here(const expl_prefilter *pf, unsigned h, const unsigned char *p, size_t i,
                      size_t clean_from, size_t before)
{
    for (int32_t a = pf->head[h & HEAD_MASK]; a >= 0; a = pf->v[a].next) {
        const expl_anchor *an = &pf->v[a];
        if (an->hash != h || an->n > i + 1 || i + 1 - an->n >= before)
            continue;
        size_t at = i + 1 - an->n;
        if (at < clean_from)
            return true;
        const unsigned char *t = p + at, *d = (const unsigned char *)an->s;
        if (an->fold ? strncasecmp((const char *)t, (const char *)d, an->n) == 0
                     : memcmp(t, d, an->n) == 0)
            return true;
    }
    return false;
}

/* Index of the last byte of the escape sequence starting at p[i], as the cleaner reads it
 * (CSI, OSC, or two bytes), never past the line's newline. */
static size_t escape_end(const unsigned char *p, size_t n, size_t i)
{
    if (i + 1 >= n || p[i + 1] == '\n')
        return i;
    size_t r = i + 2;
    if (p[i + 1] == '[') {
        while (r < n && p[r] != '\n' && (p[r] < 0x40 || p[r] > 0x7e))
            r++;
    } else if (p[i + 1] == ']') {
        while (r < n && p[r] != '\n' && p[r] != '\a' &&
               !(p[r] == 0x1b && r + 1 < n && p[r + 1] == '\\'))
            r++;
        if (r < n && p[r] == 0x1b)
            r++;
    } else {
        return i + 1;
    }
    return r < n && p[r] != '\n' ? r : r - 1;
}

/* ESC, CR and NUL: the bytes the cleaner changes */
static bool cleaned_away(unsigned char c)
{
    return c <= 0x1b && ((1u << c) & (1u << 0x1b | 1u << '\r' | 1u));
}

size_t expl_prefilter_next(const expl_prefilter *pf, const char *buf, size_t n)
{
    if (pf->all)
        return 0;
    const unsigned char *p = (const unsigned char *)buf;
    uint32_t w = 0;
    size_t clean_from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (cleaned_away(c)) {
            if (c == 0x1b) {
                i = escape_end(p, n, i);
                clean_from = i + 1;
                continue;
            }
            c = ' ';
            clean_from = i + 1;
        }
        w = w << 8 | pf->fold[c];
        unsigned h = hash4(w);
        if ((pf->bits[h >> 3] & (1u << (h & 7))) && ends_here(pf, h, p, i, clean_from, SIZE_MAX))
            return i;
    }
    return n;
}

bool expl_prefilter_spans(const expl_prefilter *pf, const char *buf, size_t n, size_t cut)
{
    if (pf->all)
        return true;
    const unsigned char *p = (const unsigned char *)buf;
    uint32_t w = 0;
    for (size_t i = cut >= 3 ? cut - 3 : 0; i < n; i++) {
        w = w << 8 | pf->fold[p[i]];
        unsigned h = hash4(w);
        if (i >= cut && (pf->bits[h >> 3] & (1u << (h & 7))) && ends_here(pf, h, p, i, 0, cut))
            return true;
    }
    return false;
}
