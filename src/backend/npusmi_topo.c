/* Readers for `npu-smi info -t topo` (the link matrix) and `npu-smi info -m` (card id,
 * chip id, logic id, chip name). Both are header-driven: the header says which columns
 * exist, and a row that does not fit it is an error naming its line. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/npusmi.h"
#include "hbm/util.h"

#define MAX_TOKENS 256

typedef struct line_iter {
    const char *p, *end;
    int lineno;
} line_iter;

/* Next line into buf (without the newline, truncated to n-1); false at the end. */
static bool next_line(line_iter *it, char *buf, size_t n)
{
    if (it->p >= it->end)
        return false;
    const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
    size_t len = nl ? (size_t)(nl - it->p) : (size_t)(it->end - it->p);
    size_t copy = len < n - 1 ? len : n - 1;
    memcpy(buf, it->p, copy);
    buf[copy] = '\0';
    for (size_t i = 0; i < copy; i++)
        if (buf[i] == '\r' || buf[i] == '\t' || buf[i] == '\0')
            buf[i] = ' ';
    it->p = nl ? nl + 1 : it->end;
    it->lineno++;
    return true;
}

/* Splits on blanks in place; returns the count (at most max). */
static size_t split(char *s, char **tok, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
        tok[n++] = t;
    return n;
}

/* "NPU12" -> 12; -1 when the word is not NPU<digits>. */
static long npu_label(const char *w)
{
    if (strncmp(w, "NPU", 3) != 0 || !isdigit((unsigned char)w[3]))
        return -1;
    char *end;
    long v = strtol(w + 3, &end, 10);
    return *end == '\0' && v >= 0 && v < 1000000 ? v : -1;
}

static bool parse_long(const char *w, long *v)
{
    if (!*w)
        return false;
    char *end;
    long x = strtol(w, &end, 10);
    if (*end || x < 0 || x > 100000000)
        return false;
    *v = x;
    return true;
}

/* A topology label names a device by logic id when the observation has them, else by
 * physical id, else by card id of a one-chip card, else by position. */
static long label_to_dev(const hbm_obs *obs, long label, size_t pos, size_t nlabels)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        if (obs->devs[i].logic_id == label)
            return (long)i;
    for (size_t i = 0; i < obs->ndevs; i++)
        if (obs->devs[i].phy_id == label)
            return (long)i;
    long found = -1;
    size_t count = 0;
    for (size_t i = 0; i < obs->ndevs; i++)
        if (obs->devs[i].index == label) {
            found = (long)i;
            count++;
        }
    if (count == 1)
        return found;
    if (nlabels == obs->ndevs && pos < obs->ndevs)
        return (long)pos;
    return -1;
}

int hbm_npusmi_parse_topo(hbm_obs *obs, const char *text, size_t len, const char *name,
                          hbm_err *err)
{
    line_iter it = {text, text + len, 0};
    char *buf = hbm_xmalloc(4096);
    char *tok[MAX_TOKENS];
    long *labels = NULL;
    size_t nlabels = 0;
    hbm_link *links = NULL; /* nlabels x nlabels, by label position */
    bool *seen = NULL;
    size_t rows = 0;
    int rc = 0;
    while (next_line(&it, buf, 4096)) {
        size_t n = split(buf, tok, MAX_TOKENS);
        if (n == 0)
            continue;
        if (strcmp(tok[0], "Legend:") == 0)
            break;
        if (!labels) {
            /* Header: NPU labels, then optionally "CPU Affinity". */
            size_t k = 0;
            while (k < n && npu_label(tok[k]) >= 0)
                k++;
            if (k == 0 || (k < n && strcmp(tok[k], "CPU") != 0))
                continue; /* text before the matrix */
            nlabels = k;
            labels = hbm_xcalloc(nlabels, sizeof *labels);
            for (size_t j = 0; j < k; j++) {
                labels[j] = npu_label(tok[j]);
                for (size_t m = 0; m < j; m++)
                    if (labels[m] == labels[j]) {
                        rc = hbm_err_set(err, "%s:%d: NPU%ld appears twice in the header", name,
                                         it.lineno, labels[j]);
                        goto out;
                    }
            }
            links = hbm_xcalloc(nlabels * nlabels, sizeof *links);
            seen = hbm_xcalloc(nlabels, sizeof *seen);
            continue;
        }
        long row = npu_label(tok[0]);
        if (row < 0) {
            rc = hbm_err_set(err, "%s:%d: expected a row starting with NPU<n>, found '%s'", name,
                             it.lineno, tok[0]);
            goto out;
        }
        size_t r = nlabels;
        for (size_t j = 0; j < nlabels; j++)
            if (labels[j] == row)
                r = j;
        if (r == nlabels || seen[r]) {
            rc = hbm_err_set(err, "%s:%d: row NPU%ld %s", name, it.lineno, row,
                             r == nlabels ? "is not in the header" : "appears twice");
            goto out;
        }
        if (n < nlabels + 1) {
            rc = hbm_err_set(err, "%s:%d: row NPU%ld has %zu links for %zu columns", name,
                             it.lineno, row, n - 1, nlabels);
            goto out;
        }
        seen[r] = true;
        rows++;
        for (size_t j = 0; j < nlabels; j++) {
            const char *w = tok[1 + j];
            hbm_link l = strcmp(w, "X") == 0 ? HBM_LINK_SELF : hbm_link_parse(w);
            links[r * nlabels + j] = l;
        }
    }
    if (!labels) {
        rc = hbm_err_set(err, "%s: no topology matrix (no NPU<n> header line)", name);
        goto out;
    }
    if (rows == 0) {
        rc = hbm_err_set(err, "%s:%d: the topology matrix has a header but no rows", name,
                         it.lineno);
        goto out;
    }
    if (obs->ndevs > 0) {
        hbm_link *m = hbm_xcalloc(obs->ndevs * obs->ndevs, sizeof *m);
        for (size_t i = 0; i < obs->ndevs; i++)
            m[i * obs->ndevs + i] = HBM_LINK_SELF;
        for (size_t a = 0; a < nlabels; a++) {
            if (!seen[a])
                continue;
            long da = label_to_dev(obs, labels[a], a, nlabels);
            if (da < 0)
                continue;
            for (size_t b = 0; b < nlabels; b++) {
                long db = label_to_dev(obs, labels[b], b, nlabels);
                if (db < 0 || db == da)
                    continue;
                m[(size_t)da * obs->ndevs + (size_t)db] = links[a * nlabels + b];
            }
        }
        hbm_obs_set_topo(obs, m, obs->ndevs);
        free(m);
    }
out:
    free(buf);
    free(labels);
    free(links);
    free(seen);
    return rc;
}

/* Header columns are separated by two or more blanks ("NPU ID", "Chip Logic ID"). */
static size_t header_columns(const char *line, char cols[][32], size_t max)
{
    size_t n = 0;
    const char *p = line;
    while (*p && n < max) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *s = p;
        while (*p && !(p[0] == ' ' && (p[1] == ' ' || p[1] == '\0')))
            p++;
        size_t l = (size_t)(p - s);
        if (l >= 32)
            l = 31;
        memcpy(cols[n], s, l);
        cols[n][l] = '\0';
        n++;
    }
    return n;
}

enum { COL_OTHER, COL_NPU, COL_CHIP, COL_LOGIC, COL_PHY, COL_NAME };

static int column_kind(const char *c)
{
    if (strcmp(c, "NPU ID") == 0)
        return COL_NPU;
    if (strcmp(c, "Chip ID") == 0)
        return COL_CHIP;
    if (strstr(c, "Logic"))
        return COL_LOGIC;
    if (strstr(c, "Phy"))
        return COL_PHY;
    if (strcmp(c, "Chip Name") == 0 || strcmp(c, "Name") == 0)
        return COL_NAME;
    return COL_OTHER;
}

int hbm_npusmi_parse_map(hbm_obs *obs, const char *text, size_t len, const char *name,
                         hbm_err *err)
{
    line_iter it = {text, text + len, 0};
    char *buf = hbm_xmalloc(4096);
    char *tok[MAX_TOKENS];
    char cols[16][32];
    int kinds[16];
    size_t ncols = 0, rows = 0;
    int rc = 0;
    while (next_line(&it, buf, 4096)) {
        if (!ncols) {
            if (!strstr(buf, "NPU ID") || !strstr(buf, "Chip ID"))
                continue;
            ncols = header_columns(buf, cols, 16);
            bool logic = false, npu = false, chip = false;
            for (size_t i = 0; i < ncols; i++) {
                kinds[i] = column_kind(cols[i]);
                logic |= kinds[i] == COL_LOGIC;
                npu |= kinds[i] == COL_NPU;
                chip |= kinds[i] == COL_CHIP;
            }
            if (!logic || !npu || !chip) {
                rc = hbm_err_set(err, "%s:%d: mapping header without NPU ID, Chip ID and Chip "
                                 "Logic ID columns", name, it.lineno);
                goto out;
            }
            continue;
        }
        size_t n = split(buf, tok, MAX_TOKENS);
        if (n == 0)
            continue;
        long npu = -1, chip = -1, logic = -1, phy = -1;
        char chip_name[64] = "";
        size_t t = 0;
        for (size_t c = 0; c < ncols; c++) {
            if (kinds[c] == COL_NAME && c == ncols - 1) {
                size_t pos = 0;
                for (; t < n; t++)
                    pos += (size_t)snprintf(chip_name + pos,
                                            pos < sizeof chip_name ? sizeof chip_name - pos : 0,
                                            "%s%s", pos ? " " : "", tok[t]);
                break;
            }
            if (t >= n) {
                rc = hbm_err_set(err, "%s:%d: row has no value for '%s'", name, it.lineno,
                                 cols[c]);
                goto out;
            }
            const char *w = tok[t++];
            long v = -1;
            bool num = parse_long(w, &v);
            bool dash = strcmp(w, "-") == 0 || strcmp(w, "NA") == 0;
            if (kinds[c] == COL_NAME) {
                snprintf(chip_name, sizeof chip_name, "%s", w);
                continue;
            }
            if (kinds[c] == COL_OTHER)
                continue;
            if (!num && !(dash && (kinds[c] == COL_LOGIC || kinds[c] == COL_PHY))) {
                rc = hbm_err_set(err, "%s:%d: '%s' is not a number for '%s'", name, it.lineno, w,
                                 cols[c]);
                goto out;
            }
            if (kinds[c] == COL_NPU)
                npu = v;
            else if (kinds[c] == COL_CHIP)
                chip = v;
            else if (kinds[c] == COL_LOGIC)
                logic = num ? v : -1;
            else if (kinds[c] == COL_PHY)
                phy = num ? v : -1;
        }
        rows++;
        if (logic < 0)
            continue; /* an MCU or other chip that computes nothing: no logic id */
        for (size_t i = 0; i < obs->ndevs; i++) {
            hbm_device *d = &obs->devs[i];
            if (d->index != npu || d->chip != chip)
                continue;
            d->logic_id = logic;
            if (phy >= 0)
                d->phy_id = phy;
            if (!d->name[0] && chip_name[0]) {
                const char *nm = strncmp(chip_name, "Ascend ", 7) == 0 ? chip_name + 7 : chip_name;
                snprintf(d->name, sizeof d->name, "%s", nm);
            }
        }
    }
    if (!ncols)
        rc = hbm_err_set(err, "%s: no 'NPU ID  Chip ID  Chip Logic ID' header", name);
    else if (!rows)
        rc = hbm_err_set(err, "%s:%d: the mapping has a header but no rows", name, it.lineno);
out:
    free(buf);
    return rc;
}
