/* The literal prefilter: most lines of a server log can match no keyword and hold no
 * error word, and proving that must cost less than reading them through the cleaner and
 * the matchers. Each needle gives one anchor, its rarest four bytes (case-folded, so one
 * table serves the case-sensitive keywords and the case-insensitive error words), hashed
 * into a 32 KiB bit table; a line with no anchor, no escape sequence, no stray CR or NUL
 * and no partial container record cannot change the report. */
#include <ctype.h>
#include <string.h>

#include "explain_int.h"

/* How common a byte is in server logs, low = rare: English letter order, then digits,
 * blanks and the punctuation of log lines. Only the order matters. */
static int commonness(unsigned char c)
{
    static const char letters[] = "etaoinsrhldcumfpgwybvkxjqz";
    if (c == ' ')
        return 40;
    if (isdigit(c))
        return 30;
    const char *p = strchr(letters, c);
    if (p && c)
        return 28 - (int)(p - letters);
    if (strchr(":./-_=()[],\"'", c) && c)
        return 20;
    return 0;
}

#define HASH_BITS 18

static unsigned hash4(uint32_t w)
{
    return (unsigned)((w * 2654435761u) >> (32 - HASH_BITS));
}

void expl_prefilter_init(expl_prefilter *pf)
{
    memset(pf, 0, sizeof *pf);
    for (unsigned c = 0; c < 256; c++)
        pf->fold[c] = (uint8_t)tolower((int)c);
    /* Bytes the cleaner rewrites: escape sequences, a CR or NUL inside a line. */
    pf->special[0x1b] = pf->special['\r'] = pf->special[0] = 1;
}

void expl_prefilter_add(expl_prefilter *pf, const char *s, size_t n)
{
    if (n < 4) {
        pf->all = true; /* too short for an anchor: every line is a candidate */
        return;
    }
    size_t best = 0;
    int best_score = 1 << 30;
    for (size_t i = 0; i + 3 < n; i++) {
        int score = 0;
        for (size_t k = 0; k < 4; k++)
            score += commonness(pf->fold[(unsigned char)s[i + k]]);
        if (score < best_score) {
            best_score = score;
            best = i;
        }
    }
    uint32_t w = 0;
    for (size_t k = 0; k < 4; k++)
        w = w << 8 | pf->fold[(unsigned char)s[best + k]];
    unsigned h = hash4(w);
    pf->bits[h >> 3] |= (uint8_t)(1u << (h & 7));
}

/* CRI splits a long line into records tagged P: their text is joined before matching, so
 * a keyword cut in two is still found. */
static bool cri_partial(const char *line, size_t len)
{
    if (len < 24 || !isdigit((unsigned char)line[0]))
        return false;
    size_t head = len < 48 ? len : 48;
    return memmem(line, head, " stdout P", 9) || memmem(line, head, " stderr P", 9);
}

bool expl_prefilter_hit(const expl_prefilter *pf, const char *line, size_t len)
{
    if (pf->all)
        return true;
    const unsigned char *p = (const unsigned char *)line;
    uint32_t w = 0;
    /* A CR ending the line is the CRLF end the cleaner drops: not special. */
    size_t body = len && p[len - 1] == '\r' ? len - 1 : len;
    for (size_t i = 0; i < len; i++) {
        if (pf->special[p[i]] && i < body)
            return true;
        w = w << 8 | pf->fold[p[i]];
        unsigned h = hash4(w);
        if (i >= 3 && (pf->bits[h >> 3] & (1u << (h & 7))))
            return true;
    }
    return cri_partial(line, len);
}
