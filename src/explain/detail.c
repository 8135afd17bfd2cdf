/* The detail of a generic vendor code: CANN prints "E69999: Inner Error!" and says what
 * failed on the module's next lines, which repeat the code or follow it indented:
 *
 *   RuntimeError: call aclnnQuantMatmulWeightNz failed, detail:E69999: Inner Error!
 *   E69999: [PID: 301341] 2025-07-08-19:23:04.799.485 op[QuantBatchMatmulV3], this platform
 *       only support ... [FUNC:AnalyzeAttrs][FILE:quant_batch_matmul_v3_tiling.cc][LINE:403]
 *           TraceBack (most recent call last):
 *
 * (vllm-ascend#1736). This reads one such line; the scanner decides which lines to ask. */
#include <string.h>
#include <strings.h>

#include "explain_int.h"

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool code_byte(char c)
{
    return digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* The last place code stands in line as a word of its own, or NULL. */
static const char *last_mention(const char *line, size_t len, const char *code, size_t n)
{
    const char *found = NULL;
    for (size_t i = 0; n && i + n <= len; i++)
        if (memcmp(line + i, code, n) == 0 && (i == 0 || !code_byte(line[i - 1])) &&
            (i + n == len || !code_byte(line[i + n])))
            found = line + i;
    return found;
}

/* Skips what CANN puts between a code and its message: "): ", "[PID: 301341] " and its
 * time, "2025-07-08-19:23:04.799.485 ". */
static size_t skip_decoration(const char *s, size_t p, size_t len)
{
    for (;;) {
        size_t from = p;
        while (p < len && strchr(" \t:)", s[p]))
            p++;
        if (len - p > 6 && memcmp(s + p, "[PID:", 5) == 0) {
            const char *close = memchr(s + p, ']', len - p);
            p = close ? (size_t)(close - s) + 1 : p;
        }
        size_t q = p;
        while (q < len && (digit(s[q]) || strchr("-:.", s[q])))
            q++;
        if (q - p >= 19 && (q == len || s[q] == ' ')) /* 2025-07-08-19:23:04 and more */
            p = q;
        if (p == from)
            return p;
    }
}

/* CANN's words for "see below": a line that holds nothing else names no cause. */
static bool says_nothing(const char *s, size_t n)
{
    while (n && strchr(" \t!.", s[n - 1]))
        n--;
    static const char inner[] = "inner error", traceback[] = "TraceBack (most recent call last)";
    return n == 0 || (n == sizeof inner - 1 && strncasecmp(s, inner, n) == 0) ||
           (n >= sizeof traceback - 1 && memcmp(s, traceback, sizeof traceback - 1) == 0);
}

size_t expl_detail_words(const char *line, size_t len, const char *code, size_t code_len,
                         const char *head, size_t head_len, size_t *start, bool *ends)
{
    *ends = false;
    size_t p;
    const char *at = last_mention(line, len, code, code_len);
    if (at) {
        p = (size_t)(at - line) + code_len;
    } else {
        size_t common = 0;
        while (common < len && common < head_len && line[common] == head[common])
            common++;
        while (common > 0 && line[common - 1] != ' ') /* at a word's start, not inside one */
            common--;
        p = common;
        if (p >= len || (line[p] != ' ' && line[p] != '\t')) {
            *ends = true; /* another message, not the block's indented lines */
            return 0;
        }
    }
    p = skip_decoration(line, p, len);
    size_t end = len;
    for (size_t i = p; i + 6 <= len; i++)
        if (memcmp(line + i, "[FUNC:", 6) == 0) {
            end = i;
            break;
        }
    while (end > p && (line[end - 1] == ' ' || line[end - 1] == '\t'))
        end--;
    *start = p;
    return says_nothing(line + p, end - p) ? 0 : end - p;
}
