/* Parsers for system-wide /proc and /sys files: mountinfo, sysvipc/shm, meminfo,
 * hugepage counters, THP modes, net/tcp. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/procfs.h"
#include "hbm/util.h"
#include "host/lex.h"

/* mountinfo escapes blanks, '\n' and '\\' in paths as \ooo. */
static void unescape(char *dst, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
            s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            dst[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            dst[o++] = s[i];
        }
    }
    if (cap)
        dst[o] = '\0';
}

/* The first cgroup2 mount, mounted from the hierarchy's root when whole_only; its root
 * field (field 4) into root when root is not NULL. */
static int cgroup2_mount(const char *buf, size_t len, bool whole_only, char *mnt, size_t n,
                         char *root, size_t nroot, hbm_err *err)
{
    hbm_lex lx;
    hbm_lex_init(&lx, buf, len);
    const char *s;
    size_t sl;
    char show[200];
    while (hbm_lex_line(&lx, &s, &sl)) {
        const char *p = s, *end = s + sl, *tok, *mp = NULL, *rt = NULL;
        size_t tl, mpl = 0, rtl = 0;
        int k = 0;
        bool sep = false;
        while (hbm_lex_tok(&p, end, &tok, &tl)) {
            if (k == 3) {
                rt = tok;
                rtl = tl;
            }
            if (k == 4) {
                mp = tok;
                mpl = tl;
            }
            if (k >= 6 && tl == 1 && tok[0] == '-') {
                sep = true;
                break;
            }
            k++;
        }
        if (k == 0 && !sep)
            continue;
        if (!sep || !hbm_lex_tok(&p, end, &tok, &tl))
            return hbm_err_set(err, "line %d: '%s' lacks the ' - FSTYPE' part", lx.line,
                               hbm_lex_show(show, sizeof show, s, sl));
        bool whole = rtl == 1 && rt[0] == '/';
        if (tl == 7 && !memcmp(tok, "cgroup2", 7) && mp && (whole || !whole_only)) {
            unescape(mnt, n, mp, mpl);
            if (root)
                unescape(root, nroot, rt, rtl);
            return 1;
        }
    }
    return 0;
}

int hbm_procfs_cgroup2_mount(const char *buf, size_t len, char *mnt, size_t n, hbm_err *err)
{
    /* A mount of a subtree (root field not "/") does not map /proc/PID/cgroup paths. */
    return cgroup2_mount(buf, len, true, mnt, n, NULL, 0, err);
}

int hbm_procfs_cgroup2_mount_root(const char *buf, size_t len, char *mnt, size_t n, char *root,
                                  size_t nroot, hbm_err *err)
{
    return cgroup2_mount(buf, len, false, mnt, n, root, nroot, err);
}

static const char *const sysv_cols[] = {"key",  "shmid", "perms", "size", "cpid",
                                        "lpid", "nattch", "uid",  "gid",  "cuid",
                                        "cgid", "atime", "dtime", "ctime"};

int hbm_procfs_parse_sysv_shm(const char *buf, size_t len, hbm_sysv_seg **segs, size_t *n,
                              hbm_err *err)
{
    hbm_lex lx;
    hbm_lex_init(&lx, buf, len);
    const char *s;
    size_t sl, cap = *n;
    char show[200];
    while (hbm_lex_line(&lx, &s, &sl)) {
        const char *p = s, *end = s + sl, *tok;
        size_t tl;
        int64_t v[14];
        int k = 0;
        if (!hbm_lex_tok(&p, end, &tok, &tl))
            continue;
        if (tl == 3 && !memcmp(tok, "key", 3))
            continue; /* header */
        do {
            bool ok;
            if (k == 2) { /* perms are printed in octal */
                uint64_t u;
                ok = hbm_lex_u64(tok, tl, 8, &u) && u <= 07777;
                v[k] = (int64_t)u;
            } else {
                ok = hbm_lex_i64(tok, tl, &v[k]);
            }
            if (!ok)
                return hbm_err_set(err, "line %d: field %d (%s) '%s' is not a number", lx.line,
                                   k + 1, sysv_cols[k], hbm_lex_show(show, sizeof show, tok, tl));
            k++;
        } while (k < 14 && hbm_lex_tok(&p, end, &tok, &tl));
        if (k < 14)
            return hbm_err_set(err, "line %d: %d fields, expected at least 14 (key .. ctime)",
                               lx.line, k);
        for (int i = 1; i < 14; i++) /* only the key is signed */
            if (v[i] < 0)
                return hbm_err_set(err, "line %d: field %d (%s) is negative", lx.line, i + 1,
                                   sysv_cols[i]);
        if (v[1] > INT32_MAX || v[4] > INT32_MAX || v[5] > INT32_MAX || v[7] > INT32_MAX ||
            v[9] > INT32_MAX)
            return hbm_err_set(err, "line %d: an id or pid is out of range", lx.line);
        hbm_grow((void **)segs, &cap, *n, sizeof **segs);
        hbm_sysv_seg *g = &(*segs)[(*n)++];
        memset(g, 0, sizeof *g);
        g->key = v[0];
        g->shmid = (int)v[1];
        g->perms = (int)v[2];
        g->size = (uint64_t)v[3];
        g->cpid = (int)v[4];
        g->lpid = (int)v[5];
        g->nattch = (uint64_t)v[6];
        g->uid = (int)v[7];
        g->cuid = (int)v[9];
        g->atime = v[11];
        g->dtime = v[12];
        g->ctime = v[13];
    }
    return 0;
}

int hbm_procfs_parse_meminfo_huge(const char *buf, size_t len, hbm_hugepages *out, hbm_err *err)
{
    static const char *const keys[] = {"HugePages_Total", "HugePages_Free", "HugePages_Rsvd",
                                       "HugePages_Surp", "Hugepagesize"};
    int64_t *dst[] = {&out->total, &out->free, &out->rsvd, &out->surp, NULL};
    out->node = -1;
    out->total = out->free = out->rsvd = out->surp = HBM_UNKNOWN;
    out->page_size_bytes = 0;
    hbm_lex lx;
    hbm_lex_init(&lx, buf, len);
    const char *s;
    size_t sl;
    char show[200];
    while (hbm_lex_line(&lx, &s, &sl)) {
        const char *colon = memchr(s, ':', sl);
        if (!colon)
            continue;
        size_t kl = (size_t)(colon - s);
        for (size_t k = 0; k < 5; k++) {
            if (kl != strlen(keys[k]) || memcmp(s, keys[k], kl))
                continue;
            const char *p = colon + 1, *end = s + sl, *tok, *unit;
            size_t tl, ul;
            uint64_t v;
            if (!hbm_lex_tok(&p, end, &tok, &tl) || !hbm_lex_u64(tok, tl, 10, &v) ||
                v > (uint64_t)INT64_MAX / 1024)
                return hbm_err_set(err, "line %d (%s): '%s' is not a count", lx.line, keys[k],
                                   hbm_lex_show(show, sizeof show, s, sl));
            bool has_unit = hbm_lex_tok(&p, end, &unit, &ul);
            if (dst[k]) {
                *dst[k] = (int64_t)v;
            } else {
                if (!has_unit || ul != 2 || memcmp(unit, "kB", 2))
                    return hbm_err_set(err, "line %d (Hugepagesize): expected a size in kB",
                                       lx.line);
                out->page_size_bytes = v * 1024;
            }
        }
    }
    return 0;
}

int hbm_procfs_parse_count(const char *buf, size_t len, int64_t *out, hbm_err *err)
{
    const char *p = buf, *end = buf + len, *tok, *extra;
    size_t tl, el;
    char show[200];
    if (!hbm_lex_tok(&p, end, &tok, &tl))
        return hbm_err_set(err, "empty, expected a number");
    if (!hbm_lex_i64(tok, tl, out) || hbm_lex_tok(&p, end, &extra, &el))
        return hbm_err_set(err, "'%s' is not one number",
                           hbm_lex_show(show, sizeof show, buf, len));
    return 0;
}

int hbm_procfs_parse_thp(const char *buf, size_t len, char *out, size_t n, hbm_err *err)
{
    const char *open = memchr(buf, '[', len);
    const char *close = open ? memchr(open, ']', (size_t)(buf + len - open)) : NULL;
    char show[200];
    if (!close || close == open + 1)
        return hbm_err_set(err, "'%s' has no [selected] mode",
                           hbm_lex_show(show, sizeof show, buf, len));
    for (const char *q = open + 1; q < close; q++)
        if (*q == ' ' || *q == '[')
            return hbm_err_set(err, "'%s': malformed [selected] mode",
                               hbm_lex_show(show, sizeof show, buf, len));
    hbm_lex_copy(out, n, open + 1, (size_t)(close - open - 1));
    return 0;
}

/* "0100007F:1F90" (v4) or 32 hex digits (v6): the kernel prints each 32-bit word of the
 * address as it lies in memory, so the words go back into memory unchanged. */
static bool tcp_addr(const char *s, size_t n, bool v6, char *addr, size_t cap, int *port)
{
    size_t hl = v6 ? 32 : 8;
    uint64_t w, pt;
    if (n != hl + 5 || s[hl] != ':' || !hbm_lex_u64(s + hl + 1, 4, 16, &pt))
        return false;
    unsigned char raw[16];
    for (size_t i = 0; i < hl / 8; i++) {
        if (!hbm_lex_u64(s + i * 8, 8, 16, &w))
            return false;
        uint32_t w32 = (uint32_t)w;
        memcpy(raw + i * 4, &w32, 4);
    }
    if (!inet_ntop(v6 ? AF_INET6 : AF_INET, raw, addr, (socklen_t)cap))
        return false;
    *port = (int)pt;
    return true;
}

int hbm_procfs_parse_net_tcp(const char *buf, size_t len, bool v6, hbm_listener **ls, size_t *n,
                             hbm_err *err)
{
    hbm_lex lx;
    hbm_lex_init(&lx, buf, len);
    const char *s;
    size_t sl, cap = *n;
    char show[200];
    while (hbm_lex_line(&lx, &s, &sl)) {
        const char *p = s, *end = s + sl, *tok[10];
        size_t tl[10];
        int k = 0;
        while (k < 10 && hbm_lex_tok(&p, end, &tok[k], &tl[k]))
            k++;
        if (k == 0 || (tl[0] == 2 && !memcmp(tok[0], "sl", 2)))
            continue;
        if (k < 10)
            return hbm_err_set(err, "line %d: %d fields, expected at least 10 (sl .. inode)",
                               lx.line, k);
        uint64_t st, inode;
        if (!hbm_lex_u64(tok[3], tl[3], 16, &st))
            return hbm_err_set(err, "line %d: field 4 (st) '%s' is not hex", lx.line,
                               hbm_lex_show(show, sizeof show, tok[3], tl[3]));
        if (!hbm_lex_u64(tok[9], tl[9], 10, &inode))
            return hbm_err_set(err, "line %d: field 10 (inode) '%s' is not a number", lx.line,
                               hbm_lex_show(show, sizeof show, tok[9], tl[9]));
        hbm_listener l = {.pid = -1, .inode = inode};
        if (!tcp_addr(tok[1], tl[1], v6, l.addr, sizeof l.addr, &l.port))
            return hbm_err_set(err, "line %d: field 2 (local_address) '%s' is not %s", lx.line,
                               hbm_lex_show(show, sizeof show, tok[1], tl[1]),
                               v6 ? "HEX32:PORT" : "HEX8:PORT");
        if (st != 0x0A)
            continue;
        hbm_grow((void **)ls, &cap, *n, sizeof **ls);
        (*ls)[(*n)++] = l;
    }
    return 0;
}
