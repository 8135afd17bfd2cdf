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

/* Appends one zeroed element to an array of *n elements of size sz; returns it. */
static void *append(void *arr, size_t *n, size_t sz)
{
    void **a = arr;
    *a = hbm_xrealloc(*a, (*n + 1) * sz);
    void *e = (char *)*a + *n * sz;
    memset(e, 0, sz);
    (*n)++;
    return e;
}

static hbm_fleet_node *node_of(hbm_fleet *f, const hbm_fleet_prom_sample *s, bool add)
{
    const char *inst = hbm_fleet_prom_label(s, "instance");
    for (size_t i = 0; i < f->nnodes; i++)
        if (!strcmp(f->nodes[i].instance, inst))
            return &f->nodes[i];
    if (!add)
        return NULL;
    hbm_fleet_node *nd = append(&f->nodes, &f->nnodes, sizeof *f->nodes);
    snprintf(nd->instance, sizeof nd->instance, "%s", inst);
    snprintf(nd->job, sizeof nd->job, "%s", hbm_fleet_prom_label(s, "job"));
    return nd;
}

static hbm_fleet_dev *dev_of(hbm_fleet_node *nd, const hbm_fleet_prom_sample *s)
{
    const char *idx = hbm_fleet_prom_label(s, "device");
    for (size_t i = 0; i < nd->ndevs; i++)
        if (!strcmp(nd->devs[i].index, idx))
            return &nd->devs[i];
    hbm_fleet_dev *d = append(&nd->devs, &nd->ndevs, sizeof *nd->devs);
    snprintf(d->index, sizeof d->index, "%s", idx);
    d->memory_used_bytes = d->memory_total_bytes = HBM_UNKNOWN;
    d->leak = -1;
    return d;
}

static int64_t bytes_of(double v)
{
    return isfinite(v) && v >= 0 ? (int64_t)v : HBM_UNKNOWN;
}

/* The holder's pod: exported_* when Prometheus renamed the exporter's labels (honor_labels
 * off and the target has its own), else the plain labels unless they are the target's. */
static void pod_of(const hbm_fleet_prom_sample *s, const hbm_fleet_prom_sample *up, hbm_fleet_proc *p)
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
        if (up && pod[0] && !strcmp(pod, hbm_fleet_prom_label(up, "pod")))
            return; /* the exporter's own pod, as the target labels name it */
    }
    if (!pod[0] || !ns[0])
        return;
    snprintf(p->ns, sizeof p->ns, "%s", ns);
    snprintf(p->pod, sizeof p->pod, "%s", pod);
    snprintf(p->container, sizeof p->container, "%s", ctr);
}

static hbm_fleet_proc *proc_of(hbm_fleet_dev *d, const hbm_fleet_prom_sample *s)
{
    int64_t pid = strtoll(hbm_fleet_prom_label(s, "pid"), NULL, 10);
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid)
            return &d->procs[i];
    hbm_fleet_proc *p = append(&d->procs, &d->nprocs, sizeof *d->procs);
    p->pid = pid;
    p->memory_bytes = HBM_UNKNOWN;
    p->leak = -1;
    snprintf(p->name, sizeof p->name, "%s", hbm_fleet_prom_label(s, "name"));
    return p;
}

static const hbm_fleet_prom_sample *up_of(const hbm_fleet_prom_vec *up, const char *instance)
{
    for (size_t i = 0; i < up->n; i++)
        if (!strcmp(hbm_fleet_prom_label(&up->s[i], "instance"), instance))
            return &up->s[i];
    return NULL;
}

/* Device series of one query into their nodes (known nodes only: the up query decides). */
static void devices(hbm_fleet *f, const hbm_fleet_prom_vec *v, int q)
{
    for (size_t i = 0; i < v->n; i++) {
        const hbm_fleet_prom_sample *s = &v->s[i];
        hbm_fleet_node *nd = node_of(f, s, false);
        if (!nd || nd->stale)
            continue;
        hbm_fleet_dev *d = dev_of(nd, s);
        if (q == HBM_FQ_VERDICT) {
            snprintf(d->verdict, sizeof d->verdict, "%s", hbm_fleet_prom_label(s, "verdict"));
            snprintf(d->name, sizeof d->name, "%s", hbm_fleet_prom_label(s, "name"));
        } else if (q == HBM_FQ_USED) {
            d->memory_used_bytes = bytes_of(s->value);
        } else if (q == HBM_FQ_TOTAL) {
            d->memory_total_bytes = bytes_of(s->value);
        } else if (q == HBM_FQ_DEV_LEAK) {
            d->leak = s->value > 0;
        }
    }
}

static void processes(hbm_fleet *f, const hbm_fleet_prom_vec *v, const hbm_fleet_prom_vec *up, int q)
{
    for (size_t i = 0; i < v->n; i++) {
        const hbm_fleet_prom_sample *s = &v->s[i];
        hbm_fleet_node *nd = node_of(f, s, false);
        if (!nd || nd->stale)
            continue;
        hbm_fleet_proc *p = proc_of(dev_of(nd, s), s);
        if (q == HBM_FQ_PROC_MEM) {
            p->memory_bytes = bytes_of(s->value);
            pod_of(s, up_of(up, nd->instance), p);
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
        snprintf(x->id, sizeof x->id, "%s", hbm_fleet_prom_label(s, "id"));
        snprintf(x->severity, sizeof x->severity, "%s", hbm_fleet_prom_label(s, "severity"));
        snprintf(x->device, sizeof x->device, "%s", hbm_fleet_prom_label(s, "device"));
        x->count = (int64_t)s->value;
    }
    for (size_t i = 0; i < f->nnodes; i++)
        if (f->nodes[i].nfindings > 1)
            qsort(f->nodes[i].findings, f->nodes[i].nfindings, sizeof *f->nodes[i].findings,
                  cmp_finding);
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

void hbm_fleet_build(hbm_fleet *f, const hbm_fleet_prom_vec *ans)
{
    const hbm_fleet_prom_vec *up = &ans[HBM_FQ_UP];
    for (size_t i = 0; i < up->n; i++)
        node_of(f, &up->s[i], true)->stale = !(up->s[i].value == 1);
    const hbm_fleet_prom_vec *src = &ans[HBM_FQ_SOURCE];
    for (size_t i = 0; i < src->n; i++) {
        hbm_fleet_node *nd = node_of(f, &src->s[i], false);
        if (nd)
            snprintf(nd->hostname, sizeof nd->hostname, "%s",
                     hbm_fleet_prom_label(&src->s[i], "hostname"));
    }
    devices(f, &ans[HBM_FQ_VERDICT], HBM_FQ_VERDICT);
    devices(f, &ans[HBM_FQ_USED], HBM_FQ_USED);
    devices(f, &ans[HBM_FQ_TOTAL], HBM_FQ_TOTAL);
    devices(f, &ans[HBM_FQ_DEV_LEAK], HBM_FQ_DEV_LEAK);
    processes(f, &ans[HBM_FQ_PROC_MEM], up, HBM_FQ_PROC_MEM);
    processes(f, &ans[HBM_FQ_PROC_LEAK], up, HBM_FQ_PROC_LEAK);
    findings(f, &ans[HBM_FQ_FINDINGS]);
    for (size_t i = 0; i < f->nnodes; i++)
        if (f->nodes[i].ndevs > 1)
            qsort(f->nodes[i].devs, f->nodes[i].ndevs, sizeof *f->nodes[i].devs, cmp_dev);
    if (f->nnodes > 1)
        qsort(f->nodes, f->nnodes, sizeof *f->nodes, cmp_node);
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

json_t *hbm_fleet_json(const hbm_fleet *f)
{
    json_t *root = json_object(), *nodes = json_array();
    json_object_set_new(root, "prometheus", json_string(f->prometheus));
    json_object_set_new(root, "at", json_real(f->at));
    for (size_t i = 0; i < f->nnodes; i++) {
        const hbm_fleet_node *n = &f->nodes[i];
        json_t *no = json_object(), *ds = json_array(), *fs = json_array();
        json_object_set_new(no, "instance", json_string(n->instance));
        json_object_set_new(no, "job", jstr(n->job));
        json_object_set_new(no, "hostname", jstr(n->hostname));
        json_object_set_new(no, "stale", json_boolean(n->stale));
        for (size_t k = 0; k < n->ndevs; k++)
            json_array_append_new(ds, dev_json(&n->devs[k]));
        for (size_t k = 0; k < n->nfindings; k++) {
            const hbm_fleet_finding *x = &n->findings[k];
            json_array_append_new(fs, json_pack("{s:s, s:s, s:o, s:I}", "id", x->id,
                                                "severity", x->severity, "device",
                                                jstr(x->device), "count",
                                                (json_int_t)x->count));
        }
        json_object_set_new(no, "devices", ds);
        json_object_set_new(no, "findings", fs);
        json_array_append_new(nodes, no);
    }
    json_object_set_new(root, "nodes", nodes);
    return root;
}

int hbm_fleet_fetch(const hbm_fleet_opts *o, hbm_fleet *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    const char *u = o->url;
    const char *scheme = strstr(u, "://");
    if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
        return hbm_err_set(err, "--prometheus %s: want http://HOST:PORT or https://...", u);
    const char *slash = strchr(scheme + 3, '/');
    const char *at = strchr(scheme + 3, '@');
    if (at && (!slash || at < slash))
        return hbm_err_set(err, "--prometheus: credentials do not belong in the URL (they "
                                "would show in process lists): use --user and "
                                "--password-file, or --bearer-token-file");
    snprintf(out->prometheus, sizeof out->prometheus, "%s", u);
    size_t l = strlen(out->prometheus);
    while (l && out->prometheus[l - 1] == '/')
        out->prometheus[--l] = '\0';
    out->at = floor(hbm_now_wall() * 1000) / 1000;
    hbm_fleet_prom_vec ans[HBM_FQ_COUNT] = {{0}};
    int rc = 0;
    for (int q = 0; q < HBM_FQ_COUNT && rc == 0; q++) {
        char promql[2048];
        hbm_fleet_query(q, o->selector ? o->selector : "", promql, sizeof promql);
        rc = hbm_fleet_prom_query(o, out->prometheus, promql, out->at, &ans[q], err);
    }
    if (rc == 0)
        hbm_fleet_build(out, ans);
    for (int q = 0; q < HBM_FQ_COUNT; q++)
        hbm_fleet_prom_vec_free(&ans[q]);
    return rc;
}
