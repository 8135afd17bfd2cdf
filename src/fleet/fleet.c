/* The fleet view built from instant queries: nodes are scrape targets (instance), devices
 * and processes their hbmctl series, findings their hbmctl_findings series. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/fleet.h"
#include "hbm/util.h"

static const struct {
    const char *fmt; /* %s: the selector's matchers, twice for the first */
    int uses;
} queries[HBM_FQ_COUNT] = {
    /* A target that never answered has no hbmctl series of its own: its job's do. */
    [HBM_FQ_UP] = {"up{%s} and on(job) group by (job) "
                   "(last_over_time(hbmctl_exporter_info{%s}[1h]))", 2},
    [HBM_FQ_SOURCE] = {"last_over_time(hbmctl_source_info{%s}[1h])", 1},
    [HBM_FQ_VERDICT] = {"hbmctl_device_verdict{%s} == 1", 1},
    [HBM_FQ_USED] = {"hbmctl_device_memory_used_bytes{%s}", 1},
    [HBM_FQ_TOTAL] = {"hbmctl_device_memory_total_bytes{%s}", 1},
    [HBM_FQ_DEV_LEAK] = {"hbmctl_device_memory_leak{%s}", 1},
    [HBM_FQ_PROC_MEM] = {"hbmctl_process_memory_bytes{%s}", 1},
    [HBM_FQ_PROC_LEAK] = {"hbmctl_process_memory_leak{%s}", 1},
    [HBM_FQ_FINDINGS] = {"hbmctl_findings{%s}", 1},
    [HBM_FQ_REMEDY] = {"hbmctl_last_remediation_timestamp_seconds{%s}", 1},
};

void hbm_fleet_query(int q, const char *sel, char *buf, size_t n)
{
    /* The formats are the fixed table above. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    if (queries[q].uses == 2)
        snprintf(buf, n, queries[q].fmt, sel, sel);
    else
        snprintf(buf, n, queries[q].fmt, sel);
#pragma GCC diagnostic pop
}

const char *const *hbm_fleet_labels(int q)
{
    static const char *const up[] = {"instance", "job", "pod", NULL};
    static const char *const source[] = {"instance", "hostname", NULL};
    static const char *const verdict[] = {"instance", "device", "verdict", "name", NULL};
    static const char *const dev[] = {"instance", "device", NULL};
    static const char *const proc[] = {"instance", "device", "pid", "name", "namespace", "pod",
                                       "container", "exported_namespace", "exported_pod",
                                       "exported_container", NULL};
    static const char *const finding[] = {"instance", "id", "severity", "device", NULL};
    static const char *const node[] = {"instance", NULL};
    switch (q) {
    case HBM_FQ_REMEDY:
        return node;
    case HBM_FQ_UP:
        return up;
    case HBM_FQ_SOURCE:
        return source;
    case HBM_FQ_VERDICT:
        return verdict;
    case HBM_FQ_PROC_MEM:
    case HBM_FQ_PROC_LEAK:
        return proc;
    case HBM_FQ_FINDINGS:
        return finding;
    default:
        return dev;
    }
}

/* Appends one zeroed element to an array of *n elements of size sz, its capacity the next
 * power of two (so n appends cost linear time); returns it. */
static void *append(void *arr, size_t *n, size_t sz)
{
    void **a = arr;
    size_t k = *n;
    if ((k & (k - 1)) == 0) /* full at 0, 1, 2, 4, 8 ... */
        *a = hbm_xrealloc(*a, (k ? k * 2 : 1) * sz);
    void *e = (char *)*a + k * sz;
    memset(e, 0, sz);
    (*n)++;
    return e;
}

/* A label into a fixed field: cut, if it must be, before a UTF-8 sequence rather than
 * inside one, so the field stays valid UTF-8 (JSON strings must be). */
static void put(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);
    if (len >= n) {
        len = n - 1;
        while (len && ((unsigned char)src[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* The index: open addressing over (node, device, process) keys, each slot holding the key's
 * hash and what it names (node + 1, device, process; node 0 = empty slot). One table per
 * level, so a lookup costs the same at 5 nodes as at 50,000. */
typedef struct slot {
    uint64_t h;
    uint32_t node, dev, proc;
} slot;

typedef struct table {
    slot *s;
    size_t cap, n;
} table;

struct hbm_fleet_index {
    table nodes, devs, procs;
};

static uint64_t hash(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static uint64_t hash_int(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
    return h ^ h >> 29;
}

/* The slot a hash starts at: its bits mixed (MurmurHash3's finaliser), as FNV's low bits,
 * which the table uses, vary little between keys that differ in their last bytes. */
static size_t home(uint64_t h, size_t cap)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h & (cap - 1);
}

static void grow(table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    slot *s = hbm_xcalloc(cap, sizeof *s);
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->s[i].node)
            continue;
        size_t k = home(t->s[i].h, cap);
        while (s[k].node)
            k = (k + 1) & (cap - 1);
        s[k] = t->s[i];
    }
    free(t->s);
    t->s = s;
    t->cap = cap;
}

/* The slot holding key (eq says whether a slot does), or the empty slot where it goes. */
typedef bool slot_eq(const hbm_fleet *f, const slot *s, const slot *key, const void *extra);

static slot *find(hbm_fleet *f, table *t, const slot *key, slot_eq *eq, const void *extra)
{
    if (2 * (t->n + 1) > t->cap)
        grow(t);
    size_t k = home(key->h, t->cap);
    f->lookups++;
    while (f->probes++, t->s[k].node && !(t->s[k].h == key->h && eq(f, &t->s[k], key, extra)))
        k = (k + 1) & (t->cap - 1);
    return &t->s[k];
}

static bool node_eq(const hbm_fleet *f, const slot *s, const slot *key, const void *inst)
{
    (void)key;
    return !strcmp(f->nodes[s->node - 1].instance, inst);
}

static bool dev_eq(const hbm_fleet *f, const slot *s, const slot *key, const void *idx)
{
    return s->node == key->node && !strcmp(f->nodes[s->node - 1].devs[s->dev].index, idx);
}

static bool proc_eq(const hbm_fleet *f, const slot *s, const slot *key, const void *pid)
{
    return s->node == key->node && s->dev == key->dev &&
           f->nodes[s->node - 1].devs[s->dev].procs[s->proc].pid == *(const int64_t *)pid;
}

static struct hbm_fleet_index *index_of(hbm_fleet *f)
{
    if (!f->index)
        f->index = hbm_xcalloc(1, sizeof *f->index);
    return f->index;
}

/* The node of a sample's instance label, added when add is set; NULL when unknown. */
static hbm_fleet_node *node_of(hbm_fleet *f, const hbm_fleet_prom_sample *s, bool add)
{
    char inst[sizeof f->nodes->instance]; /* as stored: cut to the field's size */
    put(inst, sizeof inst, hbm_fleet_prom_label(s, "instance"));
    slot key = {.h = hash(0xcbf29ce484222325ULL, inst)};
    table *t = &index_of(f)->nodes;
    slot *at = find(f, t, &key, node_eq, inst);
    if (at->node)
        return &f->nodes[at->node - 1];
    if (!add)
        return NULL;
    hbm_fleet_node *nd = append(&f->nodes, &f->nnodes, sizeof *f->nodes);
    put(nd->instance, sizeof nd->instance, inst);
    put(nd->job, sizeof nd->job, hbm_fleet_prom_label(s, "job"));
    *at = key;
    at->node = (uint32_t)f->nnodes;
    t->n++;
    return nd;
}

static hbm_fleet_dev *dev_of(hbm_fleet *f, hbm_fleet_node *nd, const hbm_fleet_prom_sample *s,
                             uint32_t *dev_at)
{
    char idx[sizeof nd->devs->index];
    put(idx, sizeof idx, hbm_fleet_prom_label(s, "device"));
    uint32_t node = (uint32_t)(nd - f->nodes) + 1;
    slot key = {.h = hash(hash_int(0xcbf29ce484222325ULL, node), idx), .node = node};
    table *t = &index_of(f)->devs;
    slot *at = find(f, t, &key, dev_eq, idx);
    if (!at->node) {
        hbm_fleet_dev *d = append(&nd->devs, &nd->ndevs, sizeof *nd->devs);
        put(d->index, sizeof d->index, idx);
        d->memory_used_bytes = d->memory_total_bytes = HBM_UNKNOWN;
        d->leak = -1;
        *at = key;
        at->dev = (uint32_t)nd->ndevs - 1;
        t->n++;
    }
    if (dev_at)
        *dev_at = at->dev;
    return &nd->devs[at->dev];
}

static int64_t bytes_of(double v)
{
    return isfinite(v) && v >= 0 ? (int64_t)v : HBM_UNKNOWN;
}

/* The holder's pod: exported_* when Prometheus renamed the exporter's labels (honor_labels
 * off and the target has its own), else the plain labels unless they are the target's. */
static void pod_of(const hbm_fleet_prom_sample *s, const hbm_fleet_node *nd, hbm_fleet_proc *p)
{
    const char *ns, *pod, *ctr;
    if (hbm_fleet_prom_label(s, "exported_pod")[0]) {
        ns = hbm_fleet_prom_label(s, "exported_namespace");
        pod = hbm_fleet_prom_label(s, "exported_pod");
        ctr = hbm_fleet_prom_label(s, "exported_container");
    } else {
        ns = hbm_fleet_prom_label(s, "namespace");
        pod = hbm_fleet_prom_label(s, "pod");
        ctr = hbm_fleet_prom_label(s, "container");
        char cut[sizeof nd->target_pod];
        put(cut, sizeof cut, pod);
        if (pod[0] && !strcmp(cut, nd->target_pod))
            return; /* the exporter's own pod, as the target labels name it */
    }
    if (!pod[0] || !ns[0])
        return;
    put(p->ns, sizeof p->ns, ns);
    put(p->pod, sizeof p->pod, pod);
    put(p->container, sizeof p->container, ctr);
}

static hbm_fleet_proc *proc_of(hbm_fleet *f, hbm_fleet_node *nd, const hbm_fleet_prom_sample *s)
{
    uint32_t dev;
    hbm_fleet_dev *d = dev_of(f, nd, s, &dev);
    int64_t pid = strtoll(hbm_fleet_prom_label(s, "pid"), NULL, 10);
    uint32_t node = (uint32_t)(nd - f->nodes) + 1;
    slot key = {.h = hash_int(hash_int(hash_int(0, node), dev), (uint64_t)pid), .node = node,
                .dev = dev};
    table *t = &index_of(f)->procs;
    slot *at = find(f, t, &key, proc_eq, &pid);
    if (at->node)
        return &d->procs[at->proc];
    hbm_fleet_proc *p = append(&d->procs, &d->nprocs, sizeof *d->procs);
    p->pid = pid;
    p->memory_bytes = HBM_UNKNOWN;
    p->leak = -1;
    put(p->name, sizeof p->name, hbm_fleet_prom_label(s, "name"));
    *at = key;
    at->proc = (uint32_t)d->nprocs - 1;
    t->n++;
    return p;
}

/* Device series of one query into their nodes (known nodes only: the up query decides). */
static void devices(hbm_fleet *f, const hbm_fleet_prom_vec *v, int q)
{
    for (size_t i = 0; i < v->n; i++) {
        const hbm_fleet_prom_sample *s = &v->s[i];
        hbm_fleet_node *nd = node_of(f, s, false);
        if (!nd || nd->stale)
            continue;
        hbm_fleet_dev *d = dev_of(f, nd, s, NULL);
        if (q == HBM_FQ_VERDICT) {
            put(d->verdict, sizeof d->verdict, hbm_fleet_prom_label(s, "verdict"));
            put(d->name, sizeof d->name, hbm_fleet_prom_label(s, "name"));
        } else if (q == HBM_FQ_USED) {
            d->memory_used_bytes = bytes_of(s->value);
        } else if (q == HBM_FQ_TOTAL) {
            d->memory_total_bytes = bytes_of(s->value);
        } else if (q == HBM_FQ_DEV_LEAK) {
            d->leak = s->value > 0;
        }
    }
}

static void processes(hbm_fleet *f, const hbm_fleet_prom_vec *v, int q)
{
    for (size_t i = 0; i < v->n; i++) {
        const hbm_fleet_prom_sample *s = &v->s[i];
        hbm_fleet_node *nd = node_of(f, s, false);
        if (!nd || nd->stale)
            continue;
        hbm_fleet_proc *p = proc_of(f, nd, s);
        if (q == HBM_FQ_PROC_MEM) {
            p->memory_bytes = bytes_of(s->value);
            pod_of(s, nd, p);
        } else {
            p->leak = s->value > 0;
        }
    }
}

static int sev_rank(const char *s)
{
    return !strcmp(s, "critical") ? 2 : !strcmp(s, "warning") ? 1 : 0;
}

static int cmp_finding(const void *a, const void *b)
{
    const hbm_fleet_finding *x = a, *y = b;
    int d = sev_rank(y->severity) - sev_rank(x->severity);
    return d ? d : strcmp(x->id, y->id);
}

static void findings(hbm_fleet *f, const hbm_fleet_prom_vec *v)
{
    for (size_t i = 0; i < v->n; i++) {
        const hbm_fleet_prom_sample *s = &v->s[i];
        hbm_fleet_node *nd = node_of(f, s, false);
        if (!nd || nd->stale || !(s->value > 0))
            continue;
        hbm_fleet_finding *x = append(&nd->findings, &nd->nfindings, sizeof *nd->findings);
        put(x->id, sizeof x->id, hbm_fleet_prom_label(s, "id"));
        put(x->severity, sizeof x->severity, hbm_fleet_prom_label(s, "severity"));
        put(x->device, sizeof x->device, hbm_fleet_prom_label(s, "device"));
        x->count = (int64_t)s->value;
    }
}

static int verdict_rank(const char *v)
{
    return !strcmp(v, "UNHEALTHY")     ? 5
           : !strcmp(v, "ORPHANED")    ? 4
           : !strcmp(v, "UNACCOUNTED") ? 2
           : !strcmp(v, "BUSY")        ? 1
                                       : 0;
}

int hbm_fleet_node_rank(const hbm_fleet_node *n)
{
    int r = n->stale ? 3 : 0;
    for (size_t i = 0; i < n->ndevs; i++)
        if (verdict_rank(n->devs[i].verdict) > r)
            r = verdict_rank(n->devs[i].verdict);
    return r;
}

static int cmp_node(const void *a, const void *b)
{
    const hbm_fleet_node *x = a, *y = b;
    int d = hbm_fleet_node_rank(y) - hbm_fleet_node_rank(x);
    return d ? d : strcmp(x->instance, y->instance);
}

static int cmp_dev(const void *a, const void *b)
{
    const hbm_fleet_dev *x = a, *y = b;
    long long i = strtoll(x->index, NULL, 10), j = strtoll(y->index, NULL, 10);
    return i != j ? (i > j) - (i < j) : strcmp(x->index, y->index);
}

void hbm_fleet_add(hbm_fleet *f, int q, const hbm_fleet_prom_vec *v)
{
    if (q == HBM_FQ_UP) {
        for (size_t i = 0; i < v->n; i++) {
            hbm_fleet_node *nd = node_of(f, &v->s[i], true);
            nd->stale = !(v->s[i].value == 1);
            put(nd->target_pod, sizeof nd->target_pod, hbm_fleet_prom_label(&v->s[i], "pod"));
        }
    } else if (q == HBM_FQ_SOURCE) {
        for (size_t i = 0; i < v->n; i++) {
            hbm_fleet_node *nd = node_of(f, &v->s[i], false);
            if (nd)
                put(nd->hostname, sizeof nd->hostname, hbm_fleet_prom_label(&v->s[i], "hostname"));
        }
    } else if (q == HBM_FQ_PROC_MEM || q == HBM_FQ_PROC_LEAK) {
        processes(f, v, q);
    } else if (q == HBM_FQ_FINDINGS) {
        findings(f, v);
    } else if (q == HBM_FQ_REMEDY) {
        for (size_t i = 0; i < v->n; i++) {
            hbm_fleet_node *nd = node_of(f, &v->s[i], false);
            if (nd && isfinite(v->s[i].value) && v->s[i].value > nd->last_remediation)
                nd->last_remediation = v->s[i].value;
        }
    } else if (q > HBM_FQ_SOURCE && q < HBM_FQ_COUNT) {
        devices(f, v, q);
    }
}

static bool host_eq(const hbm_fleet *f, const slot *s, const slot *key, const void *name)
{
    (void)key;
    return !strcmp(f->nodes[s->node - 1].hostname, name);
}

/* Marks the nodes whose hostname another node has too (they are shown by instance). */
static void shared_hostnames(hbm_fleet *f)
{
    table t = {0};
    for (size_t i = 0; i < f->nnodes; i++) {
        hbm_fleet_node *nd = &f->nodes[i];
        if (!nd->hostname[0])
            continue;
        slot key = {.h = hash(0xcbf29ce484222325ULL, nd->hostname), .node = (uint32_t)i + 1};
        slot *at = find(f, &t, &key, host_eq, nd->hostname);
        if (at->node) {
            nd->hostname_shared = f->nodes[at->node - 1].hostname_shared = true;
        } else {
            *at = key;
            t.n++;
        }
    }
    free(t.s);
}

static void index_free(hbm_fleet *f)
{
    if (!f->index)
        return;
    free(f->index->nodes.s);
    free(f->index->devs.s);
    free(f->index->procs.s);
    free(f->index);
    f->index = NULL;
}

void hbm_fleet_finish(hbm_fleet *f)
{
    index_free(f); /* its positions do not survive the sorting */
    for (size_t i = 0; i < f->nnodes; i++) {
        hbm_fleet_node *n = &f->nodes[i];
        if (n->ndevs > 1)
            qsort(n->devs, n->ndevs, sizeof *n->devs, cmp_dev);
        if (n->nfindings > 1)
            qsort(n->findings, n->nfindings, sizeof *n->findings, cmp_finding);
    }
    if (f->nnodes > 1)
        qsort(f->nodes, f->nnodes, sizeof *f->nodes, cmp_node);
    shared_hostnames(f);
}

void hbm_fleet_build(hbm_fleet *f, const hbm_fleet_prom_vec *ans)
{
    for (int q = 0; q < HBM_FQ_COUNT; q++)
        hbm_fleet_add(f, q, &ans[q]);
    hbm_fleet_finish(f);
}

bool hbm_fleet_dirty(const hbm_fleet *f)
{
    for (size_t i = 0; i < f->nnodes; i++) {
        const hbm_fleet_node *n = &f->nodes[i];
        int r = hbm_fleet_node_rank(n);
        if (r >= 2)
            return true;
        for (size_t k = 0; k < n->nfindings; k++)
            if (!strcmp(n->findings[k].severity, "critical"))
                return true;
    }
    return false;
}

void hbm_fleet_free(hbm_fleet *f)
{
    for (size_t i = 0; i < f->nnodes; i++) {
        hbm_fleet_node *n = &f->nodes[i];
        for (size_t k = 0; k < n->ndevs; k++)
            free(n->devs[k].procs);
        free(n->devs);
        free(n->findings);
    }
    free(f->nodes);
    f->nodes = NULL;
    f->nnodes = 0;
    index_free(f);
}

static json_t *jbytes(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

static json_t *jtri(int v)
{
    return v < 0 ? json_null() : json_boolean(v);
}

static json_t *jstr(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

static json_t *dev_json(const hbm_fleet_dev *d)
{
    json_t *o = json_object(), *ps = json_array();
    json_object_set_new(o, "index", json_string(d->index));
    json_object_set_new(o, "name", jstr(d->name));
    json_object_set_new(o, "verdict", jstr(d->verdict));
    json_object_set_new(o, "memory_used_bytes", jbytes(d->memory_used_bytes));
    json_object_set_new(o, "memory_total_bytes", jbytes(d->memory_total_bytes));
    json_object_set_new(o, "leak", jtri(d->leak));
    for (size_t k = 0; k < d->nprocs; k++) {
        const hbm_fleet_proc *p = &d->procs[k];
        json_t *po = json_object(), *pod = json_null();
        json_object_set_new(po, "pid", json_integer(p->pid));
        json_object_set_new(po, "name", jstr(p->name));
        json_object_set_new(po, "memory_bytes", jbytes(p->memory_bytes));
        if (p->pod[0])
            pod = json_pack("{s:s, s:s, s:o}", "namespace", p->ns, "name", p->pod,
                            "container", jstr(p->container));
        json_object_set_new(po, "pod", pod);
        json_object_set_new(po, "leak", jtri(p->leak));
        json_array_append_new(ps, po);
    }
    json_object_set_new(o, "processes", ps);
    return o;
}

json_t *hbm_fleet_node_json(const hbm_fleet_node *n)
{
    json_t *no = json_object(), *ds = json_array(), *fs = json_array();
    json_object_set_new(no, "instance", json_string(n->instance));
    json_object_set_new(no, "job", jstr(n->job));
    json_object_set_new(no, "hostname", jstr(n->hostname));
    json_object_set_new(no, "stale", json_boolean(n->stale));
    for (size_t k = 0; k < n->ndevs; k++)
        json_array_append_new(ds, dev_json(&n->devs[k]));
    for (size_t k = 0; k < n->nfindings; k++) {
        const hbm_fleet_finding *x = &n->findings[k];
        json_array_append_new(fs, json_pack("{s:s, s:s, s:o, s:I}", "id", x->id, "severity",
                                            x->severity, "device", jstr(x->device), "count",
                                            (json_int_t)x->count));
    }
    json_object_set_new(no, "devices", ds);
    json_object_set_new(no, "findings", fs);
    json_object_set_new(no, "last_remediation", n->last_remediation > 0
                                                    ? json_integer((json_int_t)n->last_remediation)
                                                    : json_null());
    return no;
}

/* The base URL checked and stored in f->prometheus (trailing slashes cut). */
static int base_url(const char *u, hbm_fleet *f, hbm_err *err)
{
    char shown[512];
    hbm_fleet_redact_url(u, shown, sizeof shown);
    if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
        return hbm_err_set(err, "--prometheus %s: want http://HOST:PORT or https://...", shown);
    /* Any '@': userinfo may hold '/' unencoded, so the authority's end is no sure guide. */
    if (strchr(u, '@'))
        return hbm_err_set(err, "--prometheus %s: credentials do not belong in the URL (they "
                                "would show in process lists): use --user and "
                                "--password-file, or --bearer-token-file", shown);
    if (strpbrk(u, "?#"))
        return hbm_err_set(err, "--prometheus %s: a query or fragment cannot come before "
                                "/api/v1/query: give the server's base URL", shown);
    for (const char *c = u; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            return hbm_err_set(err, "--prometheus: a space or control character in the URL");
    if (strlen(u) >= sizeof f->prometheus)
        return hbm_err_set(err, "--prometheus: URL longer than %zu bytes",
                           sizeof f->prometheus - 1);
    put(f->prometheus, sizeof f->prometheus, u);
    size_t l = strlen(f->prometheus);
    while (l && f->prometheus[l - 1] == '/')
        f->prometheus[--l] = '\0';
    return 0;
}

int hbm_fleet_fetch(const hbm_fleet_opts *o, hbm_fleet *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    if (base_url(o->url, out, err) < 0)
        return -1;
    double deadline = hbm_now_mono() + (o->timeout_s > 0 ? o->timeout_s : 10);
    out->at = floor(hbm_now_wall() * 1000) / 1000;
    const char *sel = o->selector ? o->selector : "";
    /* One answer at a time: parsed in its own buffer, folded into the view, freed. */
    for (int q = 0; q < HBM_FQ_COUNT; q++) {
        char promql[2048], *body;
        hbm_fleet_prom_vec v;
        hbm_fleet_query(q, sel, promql, sizeof promql);
        if (hbm_fleet_prom_query(o, out->prometheus, promql, hbm_fleet_labels(q), out->at,
                                 deadline, &v, &body, err) < 0) {
            hbm_fleet_free(out);
            return -1;
        }
        hbm_fleet_add(out, q, &v);
        hbm_fleet_prom_vec_free(&v);
        free(body);
        if (q == HBM_FQ_UP && out->nnodes == 0) {
            hbm_fleet_free(out);
            /* An empty fleet is a wrong URL or selector, never a clean one. */
            return hbm_err_set(err, "%s: no hbmctl exporter matches%s%s%s (no target of a job "
                                    "with hbmctl_exporter_info in the last hour)",
                               out->prometheus, sel[0] ? " --selector '" : "", sel,
                               sel[0] ? "'" : "");
        }
    }
    hbm_fleet_finish(out);
    return 0;
}

const char *hbm_fleet_node_name(const hbm_fleet_node *n)
{
    return n->hostname[0] && !n->hostname_shared ? n->hostname : n->instance;
}

size_t hbm_fleet_stale(const hbm_fleet *f)
{
    size_t stale = 0;
    for (size_t i = 0; i < f->nnodes; i++)
        stale += f->nodes[i].stale;
    return stale;
}
