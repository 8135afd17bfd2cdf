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
