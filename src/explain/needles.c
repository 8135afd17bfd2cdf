/* Many literal needles found in one pass over a line (explain_int.h): the catalogue's
 * keywords, the code tables' literals and the structure reader's, each indexed by its
 * first two bytes. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "explain_int.h"
#include "hbm/util.h"

void expl_needles_init(expl_needles *ns, bool fold)
{
    memset(ns, 0, sizeof *ns);
    ns->fold = fold;
    /* by table: no locale call, no branch per byte */
    for (unsigned c = 0; c < 256; c++)
        ns->lower[c] = (uint8_t)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    ns->head = hbm_xmalloc(65536 * sizeof *ns->head);
    for (size_t i = 0; i < 65536; i++)
        ns->head[i] = -1;
}

static unsigned quad_hash(uint32_t w)
{
    return (w * 2654435761u) >> 16;
}

void expl_needles_add_as(expl_needles *ns, const char *s, uint32_t target, bool fold)
{
    size_t n = strlen(s);
    if (n < 2)
        return;
    hbm_grow((void **)&ns->v, &ns->cap, ns->n, sizeof *ns->v);
    unsigned h = (unsigned)ns->lower[(unsigned char)s[0]] << 8 | ns->lower[(unsigned char)s[1]];
    ns->used[h >> 6] |= 1ull << (h & 63);
    if (n < 4) {
        ns->short_used[h >> 6] |= 1ull << (h & 63);
    } else {
        uint32_t w = (uint32_t)h << 16 | (uint32_t)ns->lower[(unsigned char)s[2]] << 8 |
                     ns->lower[(unsigned char)s[3]];
        unsigned q = quad_hash(w);
        ns->quad[q >> 6] |= 1ull << (q & 63);
    }
    ns->v[ns->n] = (expl_needle){
        .s = s, .n = n, .next = ns->head[h], .target = target, .fold = fold};
    ns->head[h] = (int32_t)ns->n++;
}

void expl_needles_add(expl_needles *ns, const char *s, uint32_t target)
{
    expl_needles_add_as(ns, s, target, ns->fold);
}

void expl_needles_scan(const expl_needles *ns, const char *line, size_t len,
                       void (*hit)(void *ctx, uint32_t target), void *ctx)
{
    if (len < 2)
        return;
    const unsigned char *s = (const unsigned char *)line;
    const uint8_t *fold = ns->lower;
    /* w holds the folded bytes i..i+3 (zeros past the end), h the first two */
    uint32_t w = (uint32_t)fold[s[0]] << 24 | (uint32_t)fold[s[1]] << 16 |
                 (uint32_t)(len > 2 ? fold[s[2]] : 0) << 8 | (len > 3 ? fold[s[3]] : 0);
    for (size_t i = 0; i + 1 < len; i++, w = w << 8 | (i + 3 < len ? fold[s[i + 3]] : 0)) {
        unsigned h = w >> 16;
        uint64_t bit = 1ull << (h & 63);
        if (!(ns->used[h >> 6] & bit))
            continue;
        if (!(ns->short_used[h >> 6] & bit)) {
            unsigned q = quad_hash(w);
            if (i + 3 >= len || !(ns->quad[q >> 6] & (1ull << (q & 63))))
                continue;
        }
        for (int32_t k = ns->head[h]; k >= 0; k = ns->v[k].next) {
            const expl_needle *nd = &ns->v[k];
            if (nd->n > len - i)
                continue;
            /* Needles sharing their first two bytes are told apart by their last first. */
            unsigned char a = s[i + nd->n - 1], b = (unsigned char)nd->s[nd->n - 1];
            if (nd->fold ? fold[a] != fold[b] : a != b)
                continue;
            if (nd->fold ? strncasecmp(line + i, nd->s, nd->n) == 0
                         : memcmp(line + i, nd->s, nd->n) == 0)
                hit(ctx, nd->target);
        }
    }
}

void expl_needles_free(expl_needles *ns)
{
    free(ns->head);
    free(ns->v);
    memset(ns, 0, sizeof *ns);
}
