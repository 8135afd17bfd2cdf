/* Many literal needles found in one pass over a line (explain_int.h): the catalogue's
 * keywords, the code tables' literals and the structure reader's, each indexed by its
 * first two bytes. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "explain_int.h"
#include "hbm/util.h"

/* ASCII folding without a locale call per byte. */
static unsigned char fold_byte(unsigned char c, bool fold)
{
    return fold && c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

void expl_needles_init(expl_needles *ns, bool fold)
{
    memset(ns, 0, sizeof *ns);
    ns->fold = fold;
    ns->head = hbm_xmalloc(65536 * sizeof *ns->head);
    for (size_t i = 0; i < 65536; i++)
        ns->head[i] = -1;
}

void expl_needles_add(expl_needles *ns, const char *s, uint32_t target)
{
    size_t n = strlen(s);
    if (n < 2)
        return;
    hbm_grow((void **)&ns->v, &ns->cap, ns->n, sizeof *ns->v);
    unsigned h = (unsigned)fold_byte((unsigned char)s[0], ns->fold) << 8 |
                 fold_byte((unsigned char)s[1], ns->fold);
    ns->v[ns->n] = (expl_needle){.s = s, .n = n, .next = ns->head[h], .target = target};
    ns->head[h] = (int32_t)ns->n++;
}

void expl_needles_scan(const expl_needles *ns, const char *line, size_t len,
                       void (*hit)(void *ctx, uint32_t target), void *ctx)
{
    const unsigned char *s = (const unsigned char *)line;
    for (size_t i = 0; i + 1 < len; i++) {
        unsigned h = (unsigned)fold_byte(s[i], ns->fold) << 8 | fold_byte(s[i + 1], ns->fold);
        for (int32_t k = ns->head[h]; k >= 0; k = ns->v[k].next) {
            const expl_needle *nd = &ns->v[k];
            /* Needles sharing their first two bytes are told apart by their last first. */
            if (nd->n > len - i ||
                fold_byte(s[i + nd->n - 1], ns->fold) != fold_byte((unsigned char)nd->s[nd->n - 1], ns->fold))
                continue;
            if (ns->fold ? strncasecmp(line + i, nd->s, nd->n) == 0
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
