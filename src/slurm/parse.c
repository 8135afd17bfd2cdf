/* Readers of what Slurm hands hbmctl: device lists, `scontrol show node -o` lines, and the
 * two marks of job membership (environ, cgroup path). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/slurm.h"

static int parse_id(const char **p, int64_t *out, const char *s, hbm_err *err)
{
    if (!isdigit((unsigned char)**p))
        return hbm_err_set(err, "device list \"%.60s\", offset %zu: a device number expected",
                           s, (size_t)(*p - s));
    errno = 0;
    char *end;
    long long v = strtoll(*p, &end, 10);
    if (errno || v > 1000000)
        return hbm_err_set(err, "device list \"%.60s\", offset %zu: number out of range", s,
                           (size_t)(*p - s));
    *out = v;
    *p = end;
    return 0;
}

static bool have(const int64_t *ids, size_t n, int64_t v)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == v)
            return true;
    return false;
}

void hbm_slurm_format_devlist(const int64_t *ids, size_t n, char *out, size_t outn)
{
    out[0] = 0;
    for (size_t i = 0, pos = 0; i < n && pos < outn; i++)
        pos += (size_t)snprintf(out + pos, outn - pos, "%s%lld", i ? "," : "",
                                (long long)ids[i]);
}

int hbm_slurm_parse_devlist(const char *s, int64_t *ids, size_t max, size_t *n, hbm_err *err)
{
    *n = 0;
    if (strcmp(s, "NoDevFiles") == 0 || !*s)
        return 0;
    const char *p = s;
    for (;;) {
        int64_t lo, hi;
        if (parse_id(&p, &lo, s, err) < 0)
            return -1;
        hi = lo;
        if (*p == '-') {
            p++;
            if (parse_id(&p, &hi, s, err) < 0)
                return -1;
            if (hi < lo)
                return hbm_err_set(err, "device list \"%.60s\", offset %zu: range %lld-%lld "
                                   "runs backwards", s, (size_t)(p - s), (long long)lo,
                                   (long long)hi);
        }
        for (int64_t v = lo; v <= hi; v++) {
            if (have(ids, *n, v))
                continue;
            if (*n == max)
                return hbm_err_set(err, "device list \"%.60s\": more than %zu devices", s, max);
            ids[(*n)++] = v;
        }
        if (*p == 0)
            return 0;
        if (*p != ',')
            return hbm_err_set(err, "device list \"%.60s\", offset %zu: ',' or '-' expected",
                               s, (size_t)(p - s));
        p++;
    }
}

/* Copies the value of " KEY=" up to the next space (or to the end when rest is set). */
static bool field(const char *buf, size_t len, const char *key, bool rest, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl <= len; i++) {
        if ((i > 0 && buf[i - 1] != ' ') || memcmp(buf + i, key, kl) != 0)
            continue;
        size_t j = i + kl, k = 0;
        while (j < len && buf[j] != '\n' && (rest || buf[j] != ' ') && k + 1 < n)
            out[k++] = buf[j++];
        out[k] = 0;
        return true;
    }
    return false;
}

int hbm_slurm_parse_node(const char *buf, size_t len, hbm_slurm_node *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < 9 || memcmp(buf, "NodeName=", 9) != 0)
        return hbm_err_set(err, "scontrol show node, line 1: \"NodeName=\" expected");
    for (size_t i = 0; i < len; i++)
        if (buf[i] == 0)
            return hbm_err_set(err, "scontrol show node, offset %zu: a NUL byte", i);
    if (!field(buf, len, "State=", false, out->state, sizeof out->state) || !out->state[0])
        return hbm_err_set(err, "scontrol show node, line 1: no State= field");
    out->drain = strstr(out->state, "DRAIN") != NULL;
    /* Reason is the last field and may hold spaces; Slurm appends " [user@time]". */
    if (field(buf, len, "Reason=", true, out->reason, sizeof out->reason)) {
        char *tail = strrchr(out->reason, '[');
        size_t l = strlen(out->reason);
        if (tail && tail > out->reason && tail[-1] == ' ' && l && out->reason[l - 1] == ']')
            tail[-1] = 0;
        if (strcmp(out->reason, "(null)") == 0)
            out->reason[0] = 0;
    }
    return 0;
}

bool hbm_slurm_environ_has_job(const char *buf, size_t len, const char *job_id)
{
    static const char *const names[] = {"SLURM_JOB_ID=", "SLURM_JOBID="};
    size_t jl = strlen(job_id);
    for (size_t i = 0; i < len;) {
        const char *e = buf + i;
        size_t el = strnlen(e, len - i);
        for (size_t k = 0; k < 2; k++) {
            size_t nl = strlen(names[k]);
            if (el == nl + jl && memcmp(e, names[k], nl) == 0 && memcmp(e + nl, job_id, jl) == 0)
                return true;
        }
        i += el + 1;
    }
    return false;
}

bool hbm_slurm_cgroup_has_job(const char *buf, size_t len, const char *job_id)
{
    /* Slurm's cgroup plugins: .../slurm/uid_U/job_N/step_S (v1) and
     * .../slurmstepd.scope/job_N/step_S (v2). */
    char mark[48];
    int ml = snprintf(mark, sizeof mark, "/job_%s", job_id);
    if (ml <= 0 || (size_t)ml >= sizeof mark)
        return false;
    for (size_t i = 0; i + (size_t)ml <= len; i++) {
        if (memcmp(buf + i, mark, (size_t)ml) != 0)
            continue;
        char next = i + (size_t)ml < len ? buf[i + (size_t)ml] : '\n';
        if (next == '/' || next == '\n' || next == 0)
            return true;
    }
    return false;
}

bool hbm_slurm_job_id_valid(const char *id)
{
    /* 123, 123_4 (array task), 123+1 (het component): what Slurm prints for one job. */
    size_t i = 0, digits = 0;
    while (isdigit((unsigned char)id[i]) && digits < 16)
        i++, digits++;
    if (!digits)
        return false;
    if (id[i] == '_' || id[i] == '+') {
        size_t j = ++i;
        while (isdigit((unsigned char)id[i]) && i - j < 10)
            i++;
        if (i == j)
            return false;
    }
    return id[i] == 0;
}

/* One bracket-free host name, or prefix[ranges]suffix, against name. */
static bool host_item_has(const char *it, size_t il, const char *name)
{
    const char *lb = memchr(it, '[', il);
    size_t nl = strlen(name);
    if (!lb)
        return il == nl && memcmp(it, name, nl) == 0;
    const char *rb = memchr(lb, ']', il - (size_t)(lb - it));
    if (!rb)
        return false;
    size_t pl = (size_t)(lb - it), sl = il - (size_t)(rb + 1 - it);
    if (nl <= pl + sl || memcmp(name, it, pl) != 0 || memcmp(name + nl - sl, rb + 1, sl) != 0)
        return false;
    const char *num = name + pl;
    size_t numl = nl - pl - sl;
    for (size_t i = 0; i < numl; i++)
        if (!isdigit((unsigned char)num[i]) || numl > 9)
            return false;
    long v = strtol(num, NULL, 10);
    for (const char *p = lb + 1; p < rb;) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p)
            return false;
        /* n[01-10] pads every number to the width of the first one. */
        bool padded = *p == '0' && end - p > 1;
        size_t width = (size_t)(end - p);
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        if (v >= lo && v <= hi && (!padded || numl == width))
            return true;
        p = *end == ',' ? end + 1 : rb;
    }
    return false;
}

/* The next item of a list split at commas outside open/close brackets, from *pos; false at
 * the end. *depth is left non-zero when the brackets do not match. */
static bool next_item(const char *s, size_t len, char open, char close, size_t *pos,
                      const char **item, size_t *il, int *depth)
{
    for (size_t i = *pos; i <= len; i++) {
        char c = i < len ? s[i] : ',';
        *depth += c == open ? 1 : c == close ? -1 : 0;
        if (c != ',' || (*depth > 0 && i < len))
            continue;
        *item = s + *pos;
        *il = i - *pos;
        *pos = i + 1;
        return true;
    }
    return false;
}

bool hbm_slurm_hostlist_has(const char *list, size_t len, const char *name)
{
    size_t pos = 0, il;
    const char *it;
    int depth = 0;
    while (next_item(list, len, '[', ']', &pos, &it, &il, &depth))
        if (il && host_item_has(it, il, name))
            return true;
    return false;
}

/* The device indexes of one GRES item, "gpu:2(IDX:0-1)" or "gpu:a100:1(IDX:3)", added to
 * ids when it names a gpu or npu gres. */
static int gres_item(const char *it, size_t il, int64_t *ids, size_t max, size_t *n,
                     hbm_err *err)
{
    size_t name = 0;
    while (name < il && it[name] != ':' && it[name] != '(')
        name++;
    int shown = (int)(il < 60 ? il : 60);
    bool ours = (name == 3 && (memcmp(it, "gpu", 3) == 0 || memcmp(it, "npu", 3) == 0));
    const char *idx = NULL;
    for (size_t i = 0; i + 5 <= il; i++)
        if (memcmp(it + i, "(IDX:", 5) == 0)
            idx = it + i + 5;
    if (!ours || !idx)
        return 0;
    size_t l = (size_t)(it + il - idx);
    const char *close = memchr(idx, ')', l);
    if (!close)
        return hbm_err_set(err, "GRES \"%.*s\": no ')' after IDX", shown, it);
    char list[256];
    size_t ll = (size_t)(close - idx);
    if (ll >= sizeof list)
        return hbm_err_set(err, "GRES \"%.*s\": IDX list too long", shown, it);
    memcpy(list, idx, ll);
    list[ll] = 0;
    if (strcmp(list, "N/A") == 0)
        return 0;
    int64_t more[HBM_SLURM_MAX_DEVS];
    size_t nm;
    if (hbm_slurm_parse_devlist(list, more, HBM_SLURM_MAX_DEVS, &nm, err) < 0)
        return hbm_err_prefix(err, "GRES IDX");
    for (size_t i = 0; i < nm; i++) {
        if (have(ids, *n, more[i]))
            continue;
        if (*n == max)
            return hbm_err_set(err, "GRES \"%.*s\": more than %zu devices", shown, it, max);
        ids[(*n)++] = more[i];
    }
    return 0;
}

/* The GRES= value of one detail line, items split at commas outside parentheses. */
static int gres_value(const char *v, size_t vl, int64_t *ids, size_t max, size_t *n,
                      hbm_err *err)
{
    size_t pos = 0, il;
    const char *it;
    int depth = 0;
    while (next_item(v, vl, '(', ')', &pos, &it, &il, &depth))
        if (gres_item(it, il, ids, max, n, err) < 0)
            return -1;
    if (depth != 0)
        return hbm_err_set(err, "GRES \"%.*s\": parentheses do not match",
                           (int)(vl < 60 ? vl : 60), v);
    return 0;
}

/* The value of " KEY=" within one line: its start and length up to the next space. */
static const char *line_field(const char *line, size_t ll, const char *key, size_t *vl)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl <= ll; i++) {
        if ((i > 0 && line[i - 1] != ' ') || memcmp(line + i, key, kl) != 0)
            continue;
        size_t j = i + kl;
        while (j < ll && line[j] != ' ')
            j++;
        *vl = j - i - kl;
        return line + i + kl;
    }
    return NULL;
}

int hbm_slurm_parse_job_gres(const char *buf, size_t len, const char *node, int64_t *ids,
                             size_t max, size_t *n, hbm_err *err)
{
    *n = 0;
    if (len < 6 || memcmp(buf, "JobId=", 6) != 0)
        return hbm_err_set(err, "scontrol show job, line 1: \"JobId=\" expected");
    size_t lineno = 0;
    bool named = false, has_devices = false;
    for (size_t i = 0; i < len;) {
        const char *line = buf + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - line) : len - i;
        i += ll + 1;
        lineno++;
        if (memchr(line, 0, ll))
            return hbm_err_set(err, "scontrol show job, line %zu: a NUL byte", lineno);
        /* "JOB_GRES=gpu:2": the job has devices, whatever the detail lines say. */
        size_t jl;
        const char *jg = line_field(line, ll, "JOB_GRES=", &jl);
        has_devices |= jg && (memmem(jg, jl, "gpu", 3) || memmem(jg, jl, "npu", 3));
        /* The -d detail lines: "Nodes=n1 CPU_IDs=0-1 Mem=0 GRES=gpu:2(IDX:0-1)". */
        size_t nodesl, gresl;
        const char *nodes = line_field(line, ll, "Nodes=", &nodesl);
        const char *gres = line_field(line, ll, "GRES=", &gresl);
        if (!nodes || !hbm_slurm_hostlist_has(nodes, nodesl, node))
            continue;
        named = true;
        if (gres && gres_value(gres, gresl, ids, max, n, err) < 0)
            return hbm_err_prefix(err, "scontrol show job, line %zu", lineno);
    }
    /* No detail line for this node: its share of the job is unknown, not empty. */
    if (!named)
        return hbm_err_set(err, "scontrol show job -d: no \"Nodes=\" line names node %.60s",
                           node);
    /* A completing job keeps JOB_GRES but its detail lines lose the IDX (Slurm 22.05). */
    if (*n == 0 && has_devices)
        return hbm_err_set(err, "scontrol show job -d: the job has devices (JOB_GRES) but no "
                           "IDX names them any more");
    return 0;
}

static bool word_in(const char *w, size_t wl, const char *const *set)
{
    for (size_t i = 0; set[i]; i++)
        if (strlen(set[i]) == wl && memcmp(set[i], w, wl) == 0)
            return true;
    return false;
}

bool hbm_slurm_node_changeable(const hbm_slurm_node *n, char *why, size_t whyn)
{
    /* The base states a job can run in, and the flags that say nothing an administrator
     * set: anything else (DOWN, FAIL, MAINT, REBOOT_*, RESERVED, POWER*, NOT_RESPONDING,
     * a word this list does not know) is someone else's. */
    static const char *const bases[] = {"IDLE", "MIXED", "ALLOCATED", "ALLOC", NULL};
    static const char *const flags[] = {"COMPLETING", "DRAIN", "PLANNED", "CLOUD",
                                        "DYNAMIC_NORM", NULL};
    const char *s = n->state;
    for (size_t i = 0; s[0]; i++) {
        size_t wl = strcspn(s, "+");
        if (!word_in(s, wl, i == 0 ? bases : flags)) {
            snprintf(why, whyn, "state %s (%.*s is not hbmctl's to change)", n->state,
                     (int)wl, s);
            return false;
        }
        s += wl + (s[wl] == '+');
    }
    if (n->drain && !hbm_str_starts(n->reason, HBM_SLURM_REASON_PREFIX)) {
        snprintf(why, whyn, "state %s, drained for another reason (%.200s)", n->state,
                 n->reason[0] ? n->reason : "none given");
        return false;
    }
    why[0] = 0;
    return true;
}
