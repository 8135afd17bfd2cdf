/* Parsers for per-process /proc files: stat, status, cgroup, fd links, environ, maps. */
#include <stdlib.h>
#include <string.h>

#include "hbm/procfs.h"
#include "hbm/util.h"
#include "host/lex.h"

int hbm_procfs_parse_stat(const char *buf, size_t len, hbm_pstat *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    const char *end = buf + len;
    const char *open = memchr(buf, '(', len);
    if (!open)
        return hbm_err_set(err, "field 2 (comm): no '('");
    /* comm may contain ')' and spaces: it ends at the last ')' of the line. */
    const char *close = NULL;
    for (const char *q = end; q > open + 1;) {
        q--;
        if (*q == ')') {
            close = q;
            break;
        }
    }
    if (!close)
        return hbm_err_set(err, "field 2 (comm): no closing ')'");
    char show[200];
    const char *s = buf;
    size_t n = (size_t)(open - buf);
    while (n > 0 && s[n - 1] == ' ')
        n--;
    if (!hbm_lex_int(s, n, &out->pid))
        return hbm_err_set(err, "field 1 (pid): '%s' is not a pid", hbm_lex_show(show, sizeof show, s, n));
    hbm_lex_copy(out->comm, sizeof out->comm, open + 1, (size_t)(close - open - 1));

    const char *p = close + 1;
    const char *tok;
    size_t tl;
    for (int field = 3; field <= 22; field++) {
        if (!hbm_lex_tok(&p, end, &tok, &tl))
            return hbm_err_set(err, "field %d missing (the line has %d fields)", field, field - 1);
        if (field == 3) {
            if (tl != 1)
                return hbm_err_set(err, "field 3 (state): '%s' is not one letter",
                                   hbm_lex_show(show, sizeof show, tok, tl));
            out->state = tok[0];
        } else if (field == 4) {
            if (!hbm_lex_int(tok, tl, &out->ppid))
                return hbm_err_set(err, "field 4 (ppid): '%s' is not a pid",
                                   hbm_lex_show(show, sizeof show, tok, tl));
        } else if (field == 5 || field == 6) {
            if (!hbm_lex_int(tok, tl, field == 5 ? &out->pgrp : &out->sid))
                return hbm_err_set(err, "field %d (%s): '%s' is not a number", field,
                                   field == 5 ? "pgrp" : "session",
                                   hbm_lex_show(show, sizeof show, tok, tl));
        } else if (field == 22) {
            if (!hbm_lex_u64(tok, tl, 10, &out->starttime))
                return hbm_err_set(err, "field 22 (starttime): '%s' is not a number",
                                   hbm_lex_show(show, sizeof show, tok, tl));
        }
    }
    return 0;
}

/* Parses the blank-separated integers of a status value into v (at most cap). */
static int status_ints(const char *s, size_t n, int *v, int cap, int *count)
{
    const char *p = s, *end = s + n, *tok;
    size_t tl;
    int k = 0;
    while (hbm_lex_tok(&p, end, &tok, &tl)) {
        int x;
        if (!hbm_lex_int(tok, tl, &x))
            return -1;
        if (k < cap)
            v[k] = x;
        k++;
    }
    *count = k < cap ? k : cap;
    return k > 0 ? 0 : -1;
}

int hbm_procfs_parse_status(const char *buf, size_t len, hbm_pstatus *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    out->pid = out->ppid = out->uid = -1;
    hbm_lex lx;
    hbm_lex_init(&lx, buf, len);
    const char *s;
    size_t n;
    char show[200];
    while (hbm_lex_line(&lx, &s, &n)) {
        const char *colon = memchr(s, ':', n);
        if (!colon)
            continue;
        size_t kl = (size_t)(colon - s);
        const char *v = colon + 1;
        size_t vl = n - kl - 1;
        while (vl > 0 && (*v == '\t' || *v == ' ')) {
            v++;
            vl--;
        }
        int vals[8], cnt = 0;
        if (kl == 4 && !memcmp(s, "Name", 4)) {
            hbm_lex_copy(out->name, sizeof out->name, v, vl);
        } else if ((kl == 3 && !memcmp(s, "Pid", 3)) || (kl == 4 && !memcmp(s, "PPid", 4))) {
            if (status_ints(v, vl, vals, 1, &cnt) < 0 || cnt != 1)
                return hbm_err_set(err, "line %d (%.*s): '%s' is not a pid", lx.line, (int)kl, s,
                                   hbm_lex_show(show, sizeof show, v, vl));
            *(kl == 3 ? &out->pid : &out->ppid) = vals[0];
        } else if (kl == 3 && !memcmp(s, "Uid", 3)) {
            if (status_ints(v, vl, vals, 4, &cnt) < 0)
                return hbm_err_set(err, "line %d (Uid): '%s' is not a list of uids", lx.line,
                                   hbm_lex_show(show, sizeof show, v, vl));
            out->uid = vals[0];
        } else if (kl == 5 && !memcmp(s, "NSpid", 5)) {
            if (status_ints(v, vl, out->nspid, 8, &out->nnspid) < 0)
                return hbm_err_set(err, "line %d (NSpid): '%s' is not a list of pids", lx.line,
                                   hbm_lex_show(show, sizeof show, v, vl));
        }
    }
    if (out->pid < 0)
        return hbm_err_set(err, "no Pid line");
    return 0;
}

static bool is_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* A pod uid is 36 characters of hex and separators; systemd slices spell '-' as '_'. */
static bool take_pod_uid(const char *s, size_t n, hbm_cgroup_info *out)
{
    if (n != 36)
        return false;
    char uid[40];
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '_')
            c = '-';
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        if (!hex && c != '-')
            return false;
        uid[i] = c;
    }
    uid[n] = '\0';
    memcpy(out->pod_uid, uid, n + 1);
    return true;
}

/* "<prefix>-<64hex>" with an optional ".scope" suffix: the systemd and podman forms. */
static const struct {
    const char *prefix;
    const char *runtime;
} scope_forms[] = {
    {"docker-", "docker"},       {"cri-containerd-", "containerd"}, {"crio-conmon-", "cri-o"},
    {"crio-", "cri-o"},          {"libpod-conmon-", "podman"},     {"libpod-", "podman"},
    {"nerdctl-", "containerd"},
};

bool hbm_procfs_container_of(const char *path, size_t len, hbm_cgroup_info *out)
{
    const char *end = path + len;
    const char *comp = path;
    const char *prev = NULL;
    size_t prevl = 0;
    bool kube = false, found = false;
    while (comp < end) {
        while (comp < end && *comp == '/')
            comp++;
        const char *slash = memchr(comp, '/', (size_t)(end - comp));
        const char *stop = slash ? slash : end;
        size_t cl = (size_t)(stop - comp);
        if (cl == 0)
            break;
        if (cl >= 8 && !memcmp(comp, "kubepods", 8)) {
            kube = true;
            /* kubepods-burstable-pod<uid>.slice / kubepods-pod<uid>.slice */
            const char *pod = NULL;
            for (size_t i = 8; i + 3 < cl; i++)
                if (!memcmp(comp + i, "-pod", 4))
                    pod = comp + i + 4;
            if (pod && cl > 6 && !memcmp(stop - 6, ".slice", 6))
                take_pod_uid(pod, (size_t)(stop - 6 - pod), out);
        } else if (kube && cl > 3 && !memcmp(comp, "pod", 3)) {
            take_pod_uid(comp + 3, cl - 3, out); /* cgroupfs: /kubepods/burstable/pod<uid> */
        }
        size_t body = cl;
        if (body > 6 && !memcmp(comp + body - 6, ".scope", 6))
            body -= 6;
        for (size_t k = 0; k < sizeof scope_forms / sizeof scope_forms[0]; k++) {
            size_t pl = strlen(scope_forms[k].prefix);
            if (body == pl + 64 && !memcmp(comp, scope_forms[k].prefix, pl) &&
                is_hex64(comp + pl, 64)) {
                hbm_lex_copy(out->container_id, sizeof out->container_id, comp + pl, 64);
                hbm_lex_copy(out->runtime, sizeof out->runtime, scope_forms[k].runtime,
                             strlen(scope_forms[k].runtime));
                found = true;
                break;
            }
        }
        /* podman's cgroupfs pods: /libpod_parent/<pod id>/libpod-<id>; the pod is no
         * container, and taking its id would call every member gone */
        bool pod_dir = prev && prevl == 13 && !memcmp(prev, "libpod_parent", 13);
        if (!found && !pod_dir && is_hex64(comp, cl)) {
            /* cgroupfs forms: /docker/<id>, /kubepods/<qos>/pod<uid>/<id>, /libpod_parent/... */
            const char *rt = "";
            if (prev && prevl == 6 && !memcmp(prev, "docker", 6))
                rt = "docker";
            else if (kube)
                rt = "kubepods";
            hbm_lex_copy(out->container_id, sizeof out->container_id, comp, 64);
            hbm_lex_copy(out->runtime, sizeof out->runtime, rt, strlen(rt));
            found = true;
        }
        if (found)
            break;
        prev = comp;
        prevl = cl;
        comp = stop;
    }
    if (found && kube && !strcmp(out->runtime, ""))
        memcpy(out->runtime, "kubepods", 9);
    return found;
}

void hbm_cgroup_info_free(hbm_cgroup_info *c)
{
    free(c->line);
    free(c->v2_path);
    free(c->freezer_path);
    c->line = c->v2_path = c->freezer_path = NULL;
}

/* True when the comma-separated list names controller c. */
static bool has_controller(const char *list, size_t n, const char *c)
{
    size_t cl = strlen(c);
    for (const char *p = list, *end = list + n; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if ((size_t)(stop - p) == cl && !memcmp(p, c, cl))
            return true;
        p = stop + 1;
    }
    return false;
}

int hbm_procfs_parse_cgroup(const char *buf, size_t len, hbm_cgroup_info *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    hbm_lex lx;
    hbm_lex_init(&lx, buf, len);
    const char *s, *first = NULL, *v2 = NULL;
    size_t n, firstl = 0, v2l = 0;
    char show[200];
    while (hbm_lex_line(&lx, &s, &n)) {
        if (n == 0)
            continue;
        const char *c1 = memchr(s, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(s + n - c1 - 1)) : NULL;
        int id;
        if (!c2 || !hbm_lex_int(s, (size_t)(c1 - s), &id)) {
            hbm_cgroup_info_free(out);
            return hbm_err_set(err, "line %d: '%s' is not ID:CONTROLLERS:PATH", lx.line,
                               hbm_lex_show(show, sizeof show, s, n));
        }
        const char *path = c2 + 1;
        size_t pl = (size_t)(s + n - path);
        if (id == 0 && c2 == c1 + 1) {
            v2 = s;
            v2l = n;
            if (pl >= 10 && !memcmp(path + pl - 10, " (deleted)", 10)) {
                out->deleted = true;
                pl -= 10;
            }
            free(out->v2_path);
            out->v2_path = hbm_xstrndup(path, pl);
        }
        if (id != 0 && !out->freezer_path && has_controller(c1 + 1, (size_t)(c2 - c1 - 1),
                                                            "freezer"))
            out->freezer_path = hbm_xstrndup(path, pl);
        if (!first) {
            first = s;
            firstl = n;
        }
        if (!out->line && hbm_procfs_container_of(path, pl, out))
            out->line = hbm_xstrndup(s, n);
    }
    if (!out->line && (v2 || first))
        out->line = v2 ? hbm_xstrndup(v2, v2l) : hbm_xstrndup(first, firstl);
    return 0;
}

int hbm_procfs_parse_fdlink(const char *buf, size_t len, hbm_fdlink *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    char show[200];
    if (len == 0)
        return hbm_err_set(err, "empty link target");
    if (buf[0] == '/') {
        out->kind = HBM_FD_PATH;
        out->path_len = len;
        if (len > 10 && !memcmp(buf + len - 10, " (deleted)", 10)) {
            out->deleted = true;
            out->path_len = len - 10;
        }
        return 0;
    }
    const char *pre = NULL;
    if (len > 8 && !memcmp(buf, "socket:[", 8)) {
        out->kind = HBM_FD_SOCKET;
        pre = buf + 8;
    } else if (len > 6 && !memcmp(buf, "pipe:[", 6)) {
        out->kind = HBM_FD_PIPE;
        pre = buf + 6;
    }
    if (!pre) {
        out->kind = HBM_FD_ANON;
        return 0;
    }
    size_t il = (size_t)(buf + len - pre);
    if (il < 2 || pre[il - 1] != ']' || !hbm_lex_u64(pre, il - 1, 10, &out->inode))
        return hbm_err_set(err, "link target '%s': inode is not a number",
                           hbm_lex_show(show, sizeof show, buf, len));
    return 0;
}

char *hbm_procfs_environ_visible(const char *buf, size_t len)
{
    static const char *const names[] = {"ASCEND_RT_VISIBLE_DEVICES=", "CUDA_VISIBLE_DEVICES="};
    for (size_t k = 0; k < 2; k++) {
        size_t nl = strlen(names[k]);
        const char *p = buf, *end = buf + len;
        while (p < end) {
            const char *z = memchr(p, '\0', (size_t)(end - p));
            const char *stop = z ? z : end;
            if ((size_t)(stop - p) >= nl && !memcmp(p, names[k], nl))
                return hbm_xstrndup(p + nl, (size_t)(stop - p) - nl);
            p = stop + 1;
        }
    }
    return NULL;
}

int hbm_procfs_parse_maps(const char *buf, size_t len, const char *prefix, hbm_maps_fn fn,
                          void *arg, hbm_err *err)
{
    hbm_lex lx;
    hbm_lex_init(&lx, buf, len);
    const char *s;
    size_t n, pre = strlen(prefix);
    char show[200];
    while (hbm_lex_line(&lx, &s, &n)) {
        const char *p = s, *end = s + n, *tok = NULL;
        size_t tl = 0;
        uint64_t inode = 0;
        int k;
        for (k = 0; k < 5 && hbm_lex_tok(&p, end, &tok, &tl); k++)
            if (k == 4 && !hbm_lex_u64(tok, tl, 10, &inode))
                return hbm_err_set(err, "line %d: inode '%s' is not a number", lx.line,
                                   hbm_lex_show(show, sizeof show, tok, tl));
        if (k == 0)
            continue;
        if (k < 5)
            return hbm_err_set(err, "line %d: '%s' has fewer than 5 fields", lx.line,
                               hbm_lex_show(show, sizeof show, s, n));
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        size_t pl = (size_t)(end - p);
        if (pl > 10 && !memcmp(end - 10, " (deleted)", 10))
            pl -= 10;
        if (pl > pre && !memcmp(p, prefix, pre))
            fn(p, pl, inode, arg);
    }
    return 0;
}
