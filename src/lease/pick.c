/* pick: N FREE devices, one interconnect domain and fewest hops first, optionally leased. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "hbm/lease.h"
#include "hbm/util.h"
#include "lease/lease_int.h"

/* Cost of a link: lower is better; unknown sorts after every known kind. */
static int link_cost(hbm_link l)
{
    return l == HBM_LINK_UNKNOWN ? 100 : (int)l;
}

static bool in_domain(hbm_link l)
{
    return l == HBM_LINK_SELF || l == HBM_LINK_NVLINK || l == HBM_LINK_HCCS;
}

typedef struct cand {
    size_t idx;       /* into obs->devs */
    int64_t uid;
    int64_t free_b;   /* HBM_UNKNOWN when unknown */
} cand;

typedef struct set_score {
    int worst;        /* worst link cost inside the set */
    long sum;         /* sum of link costs over pairs */
    long double free; /* total free memory (more is better) */
} set_score;

static set_score score_set(const hbm_obs *obs, const cand *c, const size_t *set, size_t n)
{
    set_score s = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if (c[set[i]].free_b > 0)
            s.free += c[set[i]].free_b;
        for (size_t j = i + 1; j < n; j++) {
            int k = link_cost(hbm_obs_link(obs, c[set[i]].idx, c[set[j]].idx));
            if (k > s.worst)
                s.worst = k;
            s.sum += k;
        }
    }
    return s;
}

static int cmp_ids(const cand *c, const size_t *a, const size_t *b, size_t n)
{
    /* Sets compared by their sorted ids, lowest first. */
    int64_t *ia = hbm_xcalloc(n * 2 + 1, sizeof *ia), *ib = ia + n;
    for (size_t i = 0; i < n; i++) {
        ia[i] = c[a[i]].uid;
        ib[i] = c[b[i]].uid;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && ia[j - 1] > ia[j]; j--) {
            int64_t t = ia[j]; ia[j] = ia[j - 1]; ia[j - 1] = t;
        }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && ib[j - 1] > ib[j]; j--) {
            int64_t t = ib[j]; ib[j] = ib[j - 1]; ib[j - 1] = t;
        }
    int r = 0;
    for (size_t i = 0; i < n && !r; i++)
        if (ia[i] != ib[i])
            r = ia[i] < ib[i] ? -1 : 1;
    free(ia);
    return r;
}

/* < 0 when set a is better than set b. */
static int better(const hbm_obs *obs, const cand *c, const size_t *a, const size_t *b, size_t n)
{
    set_score sa = score_set(obs, c, a, n), sb = score_set(obs, c, b, n);
    if (sa.worst != sb.worst)
        return sa.worst < sb.worst ? -1 : 1;
    if (sa.sum != sb.sum)
        return sa.sum < sb.sum ? -1 : 1;
    /* Free memory counts in whole GiB: idle chips differ by a few MiB of noise, and then
     * the lowest ids are the expected answer. */
    long long fa = (long long)(sa.free / HBM_GIB), fb = (long long)(sb.free / HBM_GIB);
    if (fa != fb)
        return fa > fb ? -1 : 1;
    return cmp_ids(c, a, b, n);
}

/* Greedy growth from every seed: add the candidate with the cheapest worst link to the
 * set so far, ties by sum of links, free memory (whole GiB), id. Keeps the best set found. This is
 * exact for the common shapes (one domain, or domains joined by one slower link class). */
static void choose(const hbm_obs *obs, const cand *c, size_t nc, size_t n, size_t *best)
{
    size_t *set = hbm_xcalloc(n, sizeof *set);
    size_t *alt = hbm_xcalloc(n, sizeof *alt);
    bool *used = hbm_xcalloc(nc, sizeof *used);
    bool have = false;
    for (size_t seed = 0; seed < nc; seed++) {
        memset(used, 0, nc * sizeof *used);
        set[0] = seed;
        used[seed] = true;
        for (size_t k = 1; k < n; k++) {
            size_t pick = nc;
            for (size_t j = 0; j < nc; j++) {
                if (used[j])
                    continue;
                if (pick == nc) {
                    pick = j;
                    continue;
                }
                set[k] = j;
                memcpy(alt, set, (k + 1) * sizeof *set);
                alt[k] = pick;
                if (better(obs, c, set, alt, k + 1) < 0)
                    pick = j;
            }
            set[k] = pick;
            used[pick] = true;
        }
        if (!have || better(obs, c, set, best, n) < 0) {
            memcpy(best, set, n * sizeof *set);
            have = true;
        }
    }
    free(set);
    free(alt);
    free(used);
}

static void refuse(hbm_pick_result *res, size_t *cap, int64_t uid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void refuse(hbm_pick_result *res, size_t *cap, int64_t uid, const char *fmt, ...)
{
    hbm_grow((void **)&res->refused, cap, res->nrefused, sizeof *res->refused);
    hbm_pick_refusal *r = &res->refused[res->nrefused++];
    r->device = uid;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
}

static bool listed(const hbm_pick_opts *o, int64_t uid)
{
    if (!o->only)
        return true;
    for (size_t i = 0; i < o->nonly; i++)
        if (o->only[i] == uid)
            return true;
    return false;
}

static void describe_holder(char *buf, size_t n, const hbm_lease_info *h)
{
    char when[32] = "";
    if (h->since > 0) {
        time_t t = (time_t)h->since;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, ", since %H:%M:%SZ", &tm);
    }
    snprintf(buf, n, "leased as '%s' by pid %d%s", h->name[0] ? h->name : "?", h->pid, when);
}

static hbm_vendor main_vendor(const hbm_obs *obs)
{
    size_t counts[3] = {0, 0, 0};
    for (size_t i = 0; i < obs->ndevs; i++)
        if ((unsigned)obs->devs[i].vendor < 3)
            counts[obs->devs[i].vendor]++;
    return counts[HBM_VENDOR_NVIDIA] > counts[HBM_VENDOR_ASCEND] ? HBM_VENDOR_NVIDIA
           : counts[HBM_VENDOR_ASCEND] ? HBM_VENDOR_ASCEND
                                       : HBM_VENDOR_UNKNOWN;
}

static void placement_text(const hbm_obs *obs, const cand *c, const size_t *set, size_t n,
                           char *buf, size_t len)
{
    if (n == 1) {
        snprintf(buf, len, "one device");
        return;
    }
    hbm_link worst = HBM_LINK_SELF;
    bool unknown = false;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            hbm_link l = hbm_obs_link(obs, c[set[i]].idx, c[set[j]].idx);
            if (l == HBM_LINK_UNKNOWN)
                unknown = true;
            else if (link_cost(l) > link_cost(worst))
                worst = l;
        }
    if (unknown)
        snprintf(buf, len, "interconnect topology unknown: chose by free memory and id");
    else if (in_domain(worst))
        snprintf(buf, len, "one %s domain", hbm_link_name(worst));
    else
        snprintf(buf, len, "no single domain holds %zu free devices; slowest link %s", n,
                 hbm_link_name(worst));
}

/* The pick turn: an exclusive flock on DIR/.pick, waited for up to 30 s. */
static int take_turn(const char *dir, hbm_err *err)
{
    if (lease_dir_prepare(dir, err) < 0)
        return -1;
    char path[512];
    snprintf(path, sizeof path, "%s/.pick", dir);
    int fd = lease_file_open(dir, ".pick", err);
    if (fd < 0)
        return -1;
    double deadline = hbm_now_mono() + 30;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || hbm_now_mono() > deadline) {
            int e = errno;
            close(fd);
            return hbm_err_set(err, "cannot lock %s: %s", path,
                               e == EWOULDBLOCK ? "another pick held it for 30 s" : strerror(e));
        }
        usleep(2000);
    }
    return fd;
}

static int cmp_uid(const void *a, const void *b, void *ctx)
{
    const int64_t *u = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return u[x] < u[y] ? -1 : u[x] > u[y];
}

/* What one pick works with, passed to its steps. */
typedef struct pick_ctx {
    const hbm_obs *obs;
    const hbm_pick_opts *opts;
    const char *dir;      /* the lease directory */
    hbm_pick_result *res;
    size_t rcap;          /* room in res->refused */
} pick_ctx;

/* Device i against what the observation says and the options ask: 1 and *out filled when it
 * is a candidate, 0 when refused (with the reason recorded), -1 when a lease cannot be read. */
static int screen(pick_ctx *x, size_t i, cand *out, hbm_err *err)
{
    const hbm_pick_opts *opts = x->opts;
    hbm_pick_result *res = x->res;
    const hbm_device *d = &x->obs->devs[i];
    int64_t uid = hbm_device_user_id(d);
    char sz[32], sz2[32], who[64] = "";
    /* A chip without a user id has no device number to print: name it by card and
     * chip. Its verdict comes first; the missing id only matters when it is usable. */
    if (uid < 0)
        snprintf(who, sizeof who, "npu %lld chip %lld: ", (long long)d->index,
                 (long long)d->chip);
    if (uid >= 0 && !listed(opts, uid)) {
        refuse(res, &x->rcap, uid, "not in the requested device list");
        return 0;
    }
    if (d->vendor != res->vendor) {
        refuse(res, &x->rcap, uid, "%s%s device; picking %s devices", who,
               hbm_vendor_name(d->vendor), hbm_vendor_name(res->vendor));
        return 0;
    }
    if (d->verdict != HBM_VERDICT_FREE) {
        refuse(res, &x->rcap, uid, "%s%s: %s", who, hbm_verdict_name(d->verdict),
               d->reason[0] ? d->reason : "not free");
        return 0;
    }
    int64_t free_b = HBM_UNKNOWN;
    if (d->memory_total_bytes >= 0 && d->memory_used_bytes >= 0)
        free_b = d->memory_total_bytes - d->memory_used_bytes;
    if (opts->min_free_bytes >= 0 && free_b < 0) {
        refuse(res, &x->rcap, uid, "%sfree memory unknown, --min-free %s asked", who,
               hbm_fmt_size(sz, sizeof sz, opts->min_free_bytes));
        return 0;
    }
    if (opts->min_free_bytes >= 0 && free_b < opts->min_free_bytes) {
        refuse(res, &x->rcap, uid, "%s%s free, less than --min-free %s", who,
               hbm_fmt_size(sz, sizeof sz, free_b),
               hbm_fmt_size(sz2, sizeof sz2, opts->min_free_bytes));
        return 0;
    }
    if (uid < 0) {
        refuse(res, &x->rcap, uid,
               "%sno logic id known (read `npu-smi info -m` or use DCMI)", who);
        return 0;
    }
    if (opts->lease_name) {
        hbm_lease_info h;
        int q = hbm_lease_query(x->dir, uid, &h, err);
        if (q < 0)
            return -1;
        if (q == 1) {
            char why[200];
            describe_holder(why, sizeof why, &h);
            refuse(res, &x->rcap, uid, "%s", why);
            return 0;
        }
    }
    *out = (cand){.idx = i, .uid = uid, .free_b = free_b};
    return 1;
}

/* Leases the chosen set avail[best[0..n)] into fds: 0 when all were taken, 1 when a racing
 * taker got one first (marked in lost, the others given back), -1 on an error. */
static int lease_set(pick_ctx *x, const cand *c, size_t nc, bool *lost, const cand *avail,
                     const size_t *best, int *fds, hbm_err *err)
{
    size_t n = x->opts->n, got = 0;
    bool raced = false;
    for (size_t k = 0; k < n; k++) {
        hbm_lease_info h;
        int a = lease_file_ensure(x->dir, avail[best[k]].uid, err);
        if (a == 0)
            a = hbm_lease_acquire(x->dir, x->opts->lease_name, avail[best[k]].uid, &fds[k],
                                  &h, err);
        if (a < 0) {
            for (size_t m = 0; m < got; m++)
                hbm_lease_release(fds[m]);
            return -1;
        }
        if (a == 1) {
            char why[200];
            describe_holder(why, sizeof why, &h);
            refuse(x->res, &x->rcap, avail[best[k]].uid, "%s", why);
            for (size_t m = 0; m < nc; m++)
                if (c[m].idx == avail[best[k]].idx)
                    lost[m] = true;
            raced = true;
            fds[k] = -1;
            continue;
        }
        got = k + 1;
    }
    if (!raced)
        return 0;
    for (size_t k = 0; k < n; k++)
        hbm_lease_release(fds[k]);
    return 1;
}

/* The result of a pick that found its set: devices in id order with their leases, the
 * variable's value, and the free devices left out. */
static void fill_result(pick_ctx *x, const cand *avail, size_t na, const size_t *best,
                        const int *fds)
{
    hbm_pick_result *res = x->res;
    placement_text(x->obs, avail, best, x->opts->n, res->placement, sizeof res->placement);
    res->n = x->opts->n;
    res->devices = hbm_xcalloc(res->n, sizeof *res->devices);
    res->dev_index = hbm_xcalloc(res->n, sizeof *res->dev_index);
    res->lease_fds = hbm_xcalloc(res->n, sizeof *res->lease_fds);
    size_t *order = hbm_xcalloc(res->n, sizeof *order);
    int64_t *uids = hbm_xcalloc(na, sizeof *uids);
    for (size_t k = 0; k < na; k++)
        uids[k] = avail[k].uid;
    memcpy(order, best, res->n * sizeof *order);
    qsort_r(order, res->n, sizeof *order, cmp_uid, uids);
    size_t pos = 0;
    for (size_t k = 0; k < res->n; k++) {
        size_t bk = 0;
        while (best[bk] != order[k])
            bk++;
        res->devices[k] = avail[order[k]].uid;
        res->dev_index[k] = avail[order[k]].idx;
        res->lease_fds[k] = x->opts->lease_name ? fds[bk] : -1;
        pos += (size_t)snprintf(res->env_value + pos, sizeof res->env_value - pos, "%s%lld",
                                k ? "," : "", (long long)res->devices[k]);
        if (pos >= sizeof res->env_value)
            pos = sizeof res->env_value - 1;
    }
    free(order);
    free(uids);
    for (size_t k = 0; k < na; k++) {
        bool chosen = false;
        for (size_t m = 0; m < res->n; m++)
            chosen |= best[m] == k;
        if (!chosen)
            refuse(res, &x->rcap, avail[k].uid, "free, not needed (%s chosen)",
                   res->placement);
    }
}

/* Chooses among the candidates c, leasing when asked, until a set is had (0), too few are
 * left (1) or a lease fails (-1). */
static int choose_and_lease(pick_ctx *x, const cand *c, size_t nc, hbm_err *err)
{
    size_t n = x->opts->n, na = 0;
    bool *lost = hbm_xcalloc(nc ? nc : 1, sizeof *lost);
    size_t *best = hbm_xcalloc(n, sizeof *best);
    int *fds = hbm_xcalloc(n, sizeof *fds);
    cand *avail = hbm_xcalloc(nc ? nc : 1, sizeof *avail);
    int rc;
    do {
        na = 0;
        for (size_t k = 0; k < nc; k++)
            if (!lost[k])
                avail[na++] = c[k];
        if (na < n) {
            rc = 1;
            break;
        }
        choose(x->obs, avail, na, n, best);
        rc = x->opts->lease_name ? lease_set(x, c, nc, lost, avail, best, fds, err) : 0;
    } while (rc == 1);
    x->res->nusable = na;

    if (rc == 0)
        fill_result(x, avail, na, best, fds); /* best indexes the last avail */
    else if (rc == 1)
        for (size_t k = 0; k < na; k++)
            refuse(x->res, &x->rcap, avail[k].uid,
                   "free, but only %zu usable device%s for %zu wanted", na,
                   na == 1 ? "" : "s", n);
    free(avail);
    free(best);
    free(fds);
    free(lost);
    return rc;
}

int hbm_pick(const hbm_obs *obs, const hbm_pick_opts *opts, hbm_pick_result *res,
             hbm_err *err)
{
    memset(res, 0, sizeof *res);
    if (opts->n < 1)
        return hbm_err_set(err, "pick needs at least one device");
    res->vendor = main_vendor(obs);
    snprintf(res->env_name, sizeof res->env_name, "%s", hbm_vendor_visible_env(res->vendor));
    pick_ctx x = {.obs = obs, .opts = opts, .res = res,
                  .dir = opts->lease_dir ? opts->lease_dir : hbm_lease_dir(NULL)};
    cand *c = hbm_xcalloc(obs->ndevs ? obs->ndevs : 1, sizeof *c);
    size_t nc = 0;
    int rc = 0;

    /* Picks that lease take turns (a short directory-wide lock), so two picks never split
     * a set between them; takers that bypass pick are still handled by the retry below. */
    int turn = -1;
    if (opts->lease_name && (turn = take_turn(x.dir, err)) < 0) {
        rc = -1;
        goto out;
    }
    /* The directory's owner (root for the default one) makes every device's file, so files
     * belong to it and fs.protected_regular never locks one user out of another's file. */
    if (turn >= 0 && lease_dir_owned(x.dir))
        for (size_t i = 0; i < obs->ndevs; i++) {
            int64_t uid = hbm_device_user_id(&obs->devs[i]);
            if (uid >= 0)
                lease_file_ensure(x.dir, uid, NULL);
        }
    /* Devices refused for what the observation says are refused once; devices lost to a
     * racing taker are added as they happen, and the choice is made again. */
    for (size_t i = 0; i < obs->ndevs; i++) {
        int s = screen(&x, i, &c[nc], err);
        if (s < 0) {
            rc = -1;
            goto out;
        }
        nc += (size_t)s;
    }
    rc = choose_and_lease(&x, c, nc, err);
out:
    if (turn >= 0)
        close(turn);
    free(c);
    return rc;
}

void hbm_pick_result_free(hbm_pick_result *res)
{
    if (res->lease_fds)
        for (size_t i = 0; i < res->n; i++)
            hbm_lease_release(res->lease_fds[i]);
    free(res->devices);
    free(res->dev_index);
    free(res->lease_fds);
    free(res->refused);
    memset(res, 0, sizeof *res);
}

json_t *hbm_pick_result_json(const hbm_pick_result *r, const char *lease, int holder,
                             int hold_pid, const char *dir)
{
    json_t *j = json_object();
    json_t *devs = json_array();
    for (size_t i = 0; i < r->n; i++)
        json_array_append_new(devs, json_integer(r->devices[i]));
    json_object_set_new(j, "devices", devs);
    json_t *env = json_object();
    if (r->n)
        json_object_set_new(env, r->env_name, json_string(r->env_value));
    json_object_set_new(j, "env", env);
    json_t *ref = json_array();
    for (size_t i = 0; i < r->nrefused; i++)
        json_array_append_new(ref, json_pack("{s:o, s:s}", "device",
                                             r->refused[i].device < 0
                                                 ? json_null()
                                                 : json_integer(r->refused[i].device),
                                             "why", r->refused[i].why));
    json_object_set_new(j, "refused", ref);
    json_object_set_new(j, "placement", r->n ? json_string(r->placement) : json_null());
    if (lease && r->n)
        json_object_set_new(j, "lease", json_pack("{s:s, s:i, s:i, s:s}", "name", lease,
                                                  "holder_pid", holder, "hold_pid", hold_pid,
                                                  "dir", dir));
    return j;
}
