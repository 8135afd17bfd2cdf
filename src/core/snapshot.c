/* Snapshot JSON (schema hbmctl.snapshot/1): writing and reading back an observation.
 * Unknown values are null. Reading is strict about types and names the offending field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hbm/snapshot.h"
#include "hbm/verdict.h"

static json_t *jint(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *jreal(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

static json_t *jstr_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static void set(json_t *o, const char *k, json_t *v)
{
    json_object_set_new(o, k, v);
}

static json_t *proc_to_json(const hbm_dproc *p)
{
    json_t *o = json_object();
    set(o, "pid", jint(p->pid));
    set(o, "name", jstr_or_null(p->name));
    set(o, "memory_bytes", jint(p->memory_bytes));
    set(o, "container", jstr_or_null(p->container));
    set(o, "pid_in_container", jint(p->pid_in_container));
    set(o, "state", json_string(hbm_pid_state_name(p->state)));
    set(o, "state_why", jstr_or_null(p->state_why));
    return o;
}

static json_t *device_to_json(const hbm_device *d)
{
    json_t *o = json_object();
    set(o, "vendor", json_string(hbm_vendor_name(d->vendor)));
    set(o, "index", jint(d->index));
    set(o, "chip", jint(d->chip));
    set(o, "logic_id", jint(d->logic_id));
    set(o, "phy_id", jint(d->phy_id));
    set(o, "name", json_string(d->name));
    set(o, "bus_id", jstr_or_null(d->bus_id));
    set(o, "uuid", jstr_or_null(d->uuid));
    set(o, "health", jstr_or_null(d->health));
    set(o, "power_watts", jreal(d->power_watts));
    set(o, "temperature_celsius", jreal(d->temperature_celsius));
    set(o, "utilization_ratio", jreal(d->utilization_ratio));
    set(o, "memory_used_bytes", jint(d->memory_used_bytes));
    set(o, "memory_total_bytes", jint(d->memory_total_bytes));
    set(o, "memory_reserved_bytes", jint(d->memory_reserved_bytes));
    set(o, "hugepages_used", jint(d->hugepages_used));
    set(o, "hugepages_total", jint(d->hugepages_total));
    set(o, "ddr_used_bytes", jint(d->ddr_used_bytes));
    set(o, "ddr_total_bytes", jint(d->ddr_total_bytes));
    set(o, "mig", jstr_or_null(d->mig));
    set(o, "verdict", json_string(hbm_verdict_name(d->verdict)));
    set(o, "reason", json_string(d->reason));
    set(o, "processes_known", json_boolean(d->procs_known));
    set(o, "processes_truncated", json_boolean(d->procs_truncated));
    json_t *ps = json_array();
    for (size_t i = 0; i < d->nprocs; i++)
        json_array_append_new(ps, proc_to_json(&d->procs[i]));
    set(o, "processes", ps);
    return o;
}

static json_t *strs_to_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *hproc_to_json(const hbm_hproc *p)
{
    json_t *o = json_object();
    set(o, "pid", json_integer(p->pid));
    set(o, "ppid", json_integer(p->ppid));
    char st[2] = {p->state ? p->state : '?', 0};
    set(o, "state", json_string(st));
    set(o, "starttime", json_integer((json_int_t)p->starttime));
    set(o, "uid", json_integer(p->uid));
    set(o, "comm", json_string(p->comm));
    set(o, "cmdline", json_string(p->cmdline ? p->cmdline : ""));
    set(o, "cgroup", jstr_or_null(p->cgroup));
    set(o, "container_id", jstr_or_null(p->container_id));
    set(o, "runtime", jstr_or_null(p->runtime));
    set(o, "pod_uid", jstr_or_null(p->pod_uid));
    set(o, "cgroup_gone", json_boolean(p->cgroup_gone));
    json_t *ns = json_array();
    for (int i = 0; i < p->nnspid && i < 8; i++)
        json_array_append_new(ns, json_integer(p->nspid[i]));
    set(o, "nspid", ns);
    set(o, "wchan", jstr_or_null(p->wchan));
    set(o, "zombie_live_threads", json_integer(p->zombie_live_threads));
    set(o, "device_files", strs_to_json(p->dev_paths, p->ndev_paths));
    set(o, "visible_devices", jstr_or_null(p->visible_devices));
    return o;
}

static json_t *host_to_json(const hbm_host *h)
{
    json_t *o = json_object();
    set(o, "sees_host_pids", json_boolean(h->sees_host_pids));
    set(o, "sees_host_pids_why", json_string(h->sees_host_pids_why));
    set(o, "clk_tck", json_integer(h->clk_tck));
    set(o, "boot_time", h->boot_time > 0 ? json_real(h->boot_time) : json_null());
    json_t *a = json_array();
    for (size_t i = 0; i < h->nprocs; i++)
        json_array_append_new(a, hproc_to_json(&h->procs[i]));
    set(o, "holders", a);
    a = json_array();
    for (size_t i = 0; i < h->nsysv; i++) {
        const hbm_sysv_seg *s = &h->sysv[i];
        json_t *e = json_object();
        char key[24];
        snprintf(key, sizeof key, "0x%08llx", (unsigned long long)(uint32_t)s->key);
        set(e, "key", json_string(key));
        set(e, "shmid", json_integer(s->shmid));
        set(e, "perms", json_integer(s->perms));
        set(e, "size_bytes", json_integer((json_int_t)s->size));
        set(e, "cpid", json_integer(s->cpid));
        set(e, "lpid", json_integer(s->lpid));
        set(e, "nattch", json_integer((json_int_t)s->nattch));
        set(e, "uid", json_integer(s->uid));
        set(e, "cuid", json_integer(s->cuid));
        set(e, "atime", json_integer(s->atime));
        set(e, "dtime", json_integer(s->dtime));
        set(e, "ctime", json_integer(s->ctime));
        set(e, "cpid_alive", json_boolean(s->cpid_alive));
        set(e, "lpid_alive", json_boolean(s->lpid_alive));
        json_array_append_new(a, e);
    }
    set(o, "sysv_shm", a);
    a = json_array();
    for (size_t i = 0; i < h->nposix; i++) {
        const hbm_posix_shm *s = &h->posix[i];
        json_t *e = json_object();
        set(e, "path", json_string(s->path));
        set(e, "size_bytes", json_integer((json_int_t)s->size));
        set(e, "uid", json_integer(s->uid));
        set(e, "mtime", json_integer(s->mtime));
        json_t *hs = json_array();
        for (size_t j = 0; j < s->nholders; j++)
            json_array_append_new(hs, json_integer(s->holders[j]));
        set(e, "holders", hs);
        json_array_append_new(a, e);
    }
    set(o, "posix_shm", a);
    a = json_array();
    for (size_t i = 0; i < h->nhuge; i++) {
        const hbm_hugepages *p = &h->huge[i];
        json_t *e = json_object();
        set(e, "node", p->node < 0 ? json_null() : json_integer(p->node));
        set(e, "page_size_bytes", json_integer((json_int_t)p->page_size_bytes));
        set(e, "total", jint(p->total));
        set(e, "free", jint(p->free));
        set(e, "rsvd", jint(p->rsvd));
        set(e, "surp", jint(p->surp));
        json_array_append_new(a, e);
    }
    set(o, "hugepages", a);
    json_t *thp = json_object();
    set(thp, "enabled", jstr_or_null(h->thp));
    set(thp, "defrag", jstr_or_null(h->thp_defrag));
    set(o, "thp", thp);
    json_t *shm = json_object();
    set(shm, "total_bytes", jint(h->devshm_total_bytes));
    set(shm, "used_bytes", jint(h->devshm_used_bytes));
    set(o, "dev_shm", shm);
    a = json_array();
    for (size_t i = 0; i < h->nlisteners; i++) {
        const hbm_listener *l = &h->listeners[i];
        json_t *e = json_object();
        set(e, "addr", json_string(l->addr));
        set(e, "port", json_integer(l->port));
        set(e, "inode", json_integer((json_int_t)l->inode));
        set(e, "pid", l->pid < 0 ? json_null() : json_integer(l->pid));
        json_array_append_new(a, e);
    }
    set(o, "listeners", a);
    return o;
}

static void fmt_time(char *buf, size_t n, double t)
{
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *hbm_snapshot_to_json(const hbm_obs *obs)
{
    json_t *o = json_object();
    set(o, "schema", json_string(HBM_SNAPSHOT_SCHEMA));
    set(o, "backend", json_string(obs->backend));
    set(o, "backend_why", jstr_or_null(obs->backend_why));
    char ts[40];
    fmt_time(ts, sizeof ts, obs->captured_at);
    set(o, "captured_at", obs->captured_at > 0 ? json_string(ts) : json_null());
    set(o, "hostname", jstr_or_null(obs->hostname));
    set(o, "tool_version", json_string(obs->tool_version));
    set(o, "driver_version", jstr_or_null(obs->driver_version));
    set(o, "source", jstr_or_null(obs->source));
    set(o, "partial", json_boolean(obs->partial));
    set(o, "partial_why", jstr_or_null(obs->partial_why));
    json_t *devs = json_array();
    for (size_t i = 0; i < obs->ndevs; i++)
        json_array_append_new(devs, device_to_json(&obs->devs[i]));
    set(o, "devices", devs);
    if (obs->topo) {
        json_t *m = json_array();
        for (size_t i = 0; i < obs->ndevs; i++) {
            json_t *row = json_array();
            for (size_t j = 0; j < obs->ndevs; j++)
                json_array_append_new(row, json_string(hbm_link_name(hbm_obs_link(obs, i, j))));
            json_array_append_new(m, row);
        }
        set(o, "topology", m);
    } else {
        set(o, "topology", json_null());
    }
    set(o, "host", obs->has_host ? host_to_json(&obs->host) : json_null());
    return o;
}

/* ---- reading ---- */

typedef struct rd {
    const char *name;
    hbm_err *err;
    char path[160]; /* e.g. devices[2].processes[0] */
} rd;

static int bad(rd *r, const char *field, const char *what)
{
    return hbm_err_set(r->err, "%s: %s%s%s: %s", r->name, r->path, r->path[0] ? "." : "",
                       field, what);
}

static int get_int(rd *r, const json_t *o, const char *k, int64_t *out, bool nullable)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        if (!nullable)
            return bad(r, k, v ? "must not be null" : "missing");
        *out = HBM_UNKNOWN;
        return 0;
    }
    if (!json_is_integer(v))
        return bad(r, k, "must be an integer");
    if (json_integer_value(v) < 0)
        return bad(r, k, "must not be negative");
    *out = json_integer_value(v);
    return 0;
}

static int get_real(rd *r, const json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v))
        return bad(r, k, "must be a number");
    *out = json_number_value(v);
    return 0;
}

static int get_str(rd *r, const json_t *o, const char *k, char *buf, size_t n)
{
    json_t *v = json_object_get(o, k);
    buf[0] = '\0';
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return bad(r, k, "must be a string");
    snprintf(buf, n, "%s", json_string_value(v));
    return 0;
}

static char *get_dup(rd *r, const json_t *o, const char *k, int *rc)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        *rc = bad(r, k, "must be a string");
        return NULL;
    }
    return hbm_xstrdup(json_string_value(v));
}

static bool get_bool(const json_t *o, const char *k)
{
    return json_is_true(json_object_get(o, k));
}

static int get_array(rd *r, const json_t *o, const char *k, json_t **out)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        *out = NULL;
        return 0;
    }
    if (!json_is_array(v))
        return bad(r, k, "must be an array");
    *out = v;
    return 0;
}

static hbm_pid_state parse_pid_state(const char *s)
{
    for (int st = HBM_PID_UNCHECKED; st <= HBM_PID_ABANDONED; st++)
        if (strcmp(hbm_pid_state_name((hbm_pid_state)st), s) == 0)
            return (hbm_pid_state)st;
    return HBM_PID_UNCHECKED;
}

static int read_device(rd *r, const json_t *o, hbm_obs *obs)
{
    if (!json_is_object(o))
        return bad(r, "", "must be an object");
    char vendor[16];
    if (get_str(r, o, "vendor", vendor, sizeof vendor) < 0)
        return -1;
    hbm_vendor v = strcmp(vendor, "ascend") == 0   ? HBM_VENDOR_ASCEND
                   : strcmp(vendor, "nvidia") == 0 ? HBM_VENDOR_NVIDIA
                                                   : HBM_VENDOR_UNKNOWN;
    if (v == HBM_VENDOR_UNKNOWN)
        return bad(r, "vendor", "must be \"ascend\" or \"nvidia\"");
    hbm_device *d = hbm_obs_add_device(obs, v);
    char health[32];
    if (get_int(r, o, "index", &d->index, false) < 0 ||
        get_int(r, o, "chip", &d->chip, true) < 0 ||
        get_int(r, o, "logic_id", &d->logic_id, true) < 0 ||
        get_int(r, o, "phy_id", &d->phy_id, true) < 0 ||
        get_str(r, o, "name", d->name, sizeof d->name) < 0 ||
        get_str(r, o, "bus_id", d->bus_id, sizeof d->bus_id) < 0 ||
        get_str(r, o, "uuid", d->uuid, sizeof d->uuid) < 0 ||
        get_str(r, o, "health", health, sizeof health) < 0 ||
        get_real(r, o, "power_watts", &d->power_watts) < 0 ||
        get_real(r, o, "temperature_celsius", &d->temperature_celsius) < 0 ||
        get_real(r, o, "utilization_ratio", &d->utilization_ratio) < 0 ||
        get_int(r, o, "memory_used_bytes", &d->memory_used_bytes, true) < 0 ||
        get_int(r, o, "memory_total_bytes", &d->memory_total_bytes, true) < 0 ||
        get_int(r, o, "memory_reserved_bytes", &d->memory_reserved_bytes, true) < 0 ||
        get_int(r, o, "hugepages_used", &d->hugepages_used, true) < 0 ||
        get_int(r, o, "hugepages_total", &d->hugepages_total, true) < 0 ||
        get_int(r, o, "ddr_used_bytes", &d->ddr_used_bytes, true) < 0 ||
        get_int(r, o, "ddr_total_bytes", &d->ddr_total_bytes, true) < 0 ||
        get_str(r, o, "mig", d->mig, sizeof d->mig) < 0)
        return -1;
    if (!isnan(d->utilization_ratio) && (d->utilization_ratio < 0 || d->utilization_ratio > 1))
        return bad(r, "utilization_ratio", "must be within 0..1");
    snprintf(d->health, sizeof d->health, "%s", health);
    d->healthy = !health[0] || strcasecmp(health, "OK") == 0 || strcasecmp(health, "Healthy") == 0;
    d->procs_known = get_bool(o, "processes_known");
    d->procs_truncated = get_bool(o, "processes_truncated");
    json_t *ps;
    if (get_array(r, o, "processes", &ps) < 0)
        return -1;
    size_t base = strlen(r->path), i;
    json_t *p;
    json_array_foreach(ps, i, p) {
        snprintf(r->path + base, sizeof r->path - base, ".processes[%zu]", i);
        if (!json_is_object(p))
            return bad(r, "", "must be an object");
        hbm_dproc *dp = hbm_device_add_proc(d);
        char state[16];
        if (get_int(r, p, "pid", &dp->pid, false) < 0 ||
            get_str(r, p, "name", dp->name, sizeof dp->name) < 0 ||
            get_int(r, p, "memory_bytes", &dp->memory_bytes, true) < 0 ||
            get_str(r, p, "container", dp->container, sizeof dp->container) < 0 ||
            get_int(r, p, "pid_in_container", &dp->pid_in_container, true) < 0 ||
            get_str(r, p, "state", state, sizeof state) < 0 ||
            get_str(r, p, "state_why", dp->state_why, sizeof dp->state_why) < 0)
            return -1;
        dp->state = parse_pid_state(state);
    }
    r->path[base] = '\0';
    /* A device whose process list was known but empty stays known. */
    if (json_is_true(json_object_get(o, "processes_known")))
        d->procs_known = true;
    return 0;
}

static int read_int_field(rd *r, const json_t *o, const char *k, int *out)
{
    int64_t v;
    if (get_int(r, o, k, &v, true) < 0)
        return -1;
    if (v > 0x7fffffff)
        return bad(r, k, "out of range");
    *out = v < 0 ? -1 : (int)v;
    return 0;
}

static int cmp_hproc_pid(const void *a, const void *b)
{
    int x = ((const hbm_hproc *)a)->pid, y = ((const hbm_hproc *)b)->pid;
    return (x > y) - (x < y);
}

static int read_host(rd *r, const json_t *o, hbm_host *h)
{
    if (!json_is_object(o))
        return bad(r, "host", "must be an object or null");
    int rc = 0;
    h->sees_host_pids = get_bool(o, "sees_host_pids");
    int64_t tck;
    if (get_str(r, o, "sees_host_pids_why", h->sees_host_pids_why,
                sizeof h->sees_host_pids_why) < 0 ||
        get_int(r, o, "clk_tck", &tck, true) < 0 || get_real(r, o, "boot_time", &h->boot_time) < 0)
        return -1;
    h->clk_tck = tck > 0 ? (long)tck : 100;
    if (isnan(h->boot_time))
        h->boot_time = 0;
    json_t *a, *e;
    size_t i;
    if (get_array(r, o, "holders", &a) < 0)
        return -1;
    if (a) {
        h->procs = hbm_xcalloc(json_array_size(a), sizeof *h->procs);
        json_array_foreach(a, i, e) {
            snprintf(r->path, sizeof r->path, "host.holders[%zu]", i);
            if (!json_is_object(e))
                return bad(r, "", "must be an object");
            hbm_hproc *p = &h->procs[h->nprocs++];
            int64_t st;
            char state[4];
            if (read_int_field(r, e, "pid", &p->pid) < 0 ||
                read_int_field(r, e, "ppid", &p->ppid) < 0 ||
                get_int(r, e, "starttime", &st, true) < 0 ||
                read_int_field(r, e, "uid", &p->uid) < 0 ||
                get_str(r, e, "state", state, sizeof state) < 0 ||
                get_str(r, e, "comm", p->comm, sizeof p->comm) < 0 ||
                get_str(r, e, "container_id", p->container_id, sizeof p->container_id) < 0 ||
                get_str(r, e, "runtime", p->runtime, sizeof p->runtime) < 0 ||
                get_str(r, e, "pod_uid", p->pod_uid, sizeof p->pod_uid) < 0 ||
                get_str(r, e, "wchan", p->wchan, sizeof p->wchan) < 0)
                return -1;
            p->starttime = st < 0 ? 0 : (uint64_t)st;
            p->state = state[0];
            p->cgroup_gone = get_bool(e, "cgroup_gone");
            json_t *zt = json_object_get(e, "zombie_live_threads");
            p->zombie_live_threads = json_is_integer(zt) ? (int)json_integer_value(zt) : 0;
            p->cmdline = get_dup(r, e, "cmdline", &rc);
            p->cgroup = get_dup(r, e, "cgroup", &rc);
            p->visible_devices = get_dup(r, e, "visible_devices", &rc);
            if (rc < 0)
                return -1;
            if (!p->cmdline)
                p->cmdline = hbm_xstrdup("");
            json_t *ns, *x;
            size_t j;
            if (get_array(r, e, "nspid", &ns) < 0)
                return -1;
            json_array_foreach(ns, j, x) {
                if (j < 8 && json_is_integer(x))
                    p->nspid[p->nnspid++] = (int)json_integer_value(x);
            }
            json_t *files;
            if (get_array(r, e, "device_files", &files) < 0)
                return -1;
            if (files && json_array_size(files)) {
                p->dev_paths = hbm_xcalloc(json_array_size(files), sizeof *p->dev_paths);
                json_array_foreach(files, j, x) {
                    if (!json_is_string(x))
                        return bad(r, "device_files", "must hold strings");
                    p->dev_paths[p->ndev_paths++] = hbm_xstrdup(json_string_value(x));
                }
            }
        }
    }
    /* hbm_host_find searches by pid: a hand-written snapshot may list holders in any order. */
    if (h->nprocs > 1)
        qsort(h->procs, h->nprocs, sizeof *h->procs, cmp_hproc_pid);
    if (get_array(r, o, "sysv_shm", &a) < 0)
        return -1;
    if (a) {
        h->sysv = hbm_xcalloc(json_array_size(a), sizeof *h->sysv);
        json_array_foreach(a, i, e) {
            snprintf(r->path, sizeof r->path, "host.sysv_shm[%zu]", i);
            if (!json_is_object(e))
                return bad(r, "", "must be an object");
            hbm_sysv_seg *s = &h->sysv[h->nsysv++];
            char key[24];
            int64_t size, nattch;
            if (get_str(r, e, "key", key, sizeof key) < 0 ||
                read_int_field(r, e, "shmid", &s->shmid) < 0 ||
                read_int_field(r, e, "perms", &s->perms) < 0 ||
                get_int(r, e, "size_bytes", &size, false) < 0 ||
                read_int_field(r, e, "cpid", &s->cpid) < 0 ||
                read_int_field(r, e, "lpid", &s->lpid) < 0 ||
                get_int(r, e, "nattch", &nattch, false) < 0 ||
                read_int_field(r, e, "uid", &s->uid) < 0 ||
                read_int_field(r, e, "cuid", &s->cuid) < 0 ||
                get_int(r, e, "atime", &s->atime, true) < 0 ||
                get_int(r, e, "dtime", &s->dtime, true) < 0 ||
                get_int(r, e, "ctime", &s->ctime, true) < 0)
                return -1;
            s->key = (int64_t)(int32_t)strtoul(key, NULL, 16);
            s->size = (uint64_t)size;
            s->nattch = (uint64_t)nattch;
            s->cpid_alive = get_bool(e, "cpid_alive");
            s->lpid_alive = get_bool(e, "lpid_alive");
        }
    }
    if (get_array(r, o, "posix_shm", &a) < 0)
        return -1;
    if (a) {
        h->posix = hbm_xcalloc(json_array_size(a), sizeof *h->posix);
        json_array_foreach(a, i, e) {
            snprintf(r->path, sizeof r->path, "host.posix_shm[%zu]", i);
            if (!json_is_object(e))
                return bad(r, "", "must be an object");
            hbm_posix_shm *s = &h->posix[h->nposix++];
            int64_t size;
            s->path = get_dup(r, e, "path", &rc);
            if (rc < 0 || !s->path)
                return rc < 0 ? -1 : bad(r, "path", "missing");
            if (get_int(r, e, "size_bytes", &size, true) < 0 ||
                read_int_field(r, e, "uid", &s->uid) < 0 ||
                get_int(r, e, "mtime", &s->mtime, true) < 0)
                return -1;
            s->size = size < 0 ? 0 : (uint64_t)size;
            json_t *hs, *x;
            size_t j;
            if (get_array(r, e, "holders", &hs) < 0)
                return -1;
            if (hs && json_array_size(hs)) {
                s->holders = hbm_xcalloc(json_array_size(hs), sizeof *s->holders);
                json_array_foreach(hs, j, x) {
                    if (json_is_integer(x))
                        s->holders[s->nholders++] = (int)json_integer_value(x);
                }
            }
        }
    }
    if (get_array(r, o, "hugepages", &a) < 0)
        return -1;
    if (a) {
        h->huge = hbm_xcalloc(json_array_size(a), sizeof *h->huge);
        json_array_foreach(a, i, e) {
            snprintf(r->path, sizeof r->path, "host.hugepages[%zu]", i);
            if (!json_is_object(e))
                return bad(r, "", "must be an object");
            hbm_hugepages *p = &h->huge[h->nhuge++];
            int64_t ps;
            if (read_int_field(r, e, "node", &p->node) < 0 ||
                get_int(r, e, "page_size_bytes", &ps, true) < 0 ||
                get_int(r, e, "total", &p->total, true) < 0 ||
                get_int(r, e, "free", &p->free, true) < 0 ||
                get_int(r, e, "rsvd", &p->rsvd, true) < 0 ||
                get_int(r, e, "surp", &p->surp, true) < 0)
                return -1;
            p->page_size_bytes = ps < 0 ? 0 : (uint64_t)ps;
        }
    }
    r->path[0] = '\0';
    json_t *thp = json_object_get(o, "thp");
    if (json_is_object(thp) &&
        (get_str(r, thp, "enabled", h->thp, sizeof h->thp) < 0 ||
         get_str(r, thp, "defrag", h->thp_defrag, sizeof h->thp_defrag) < 0))
        return -1;
    json_t *shm = json_object_get(o, "dev_shm");
    h->devshm_total_bytes = h->devshm_used_bytes = HBM_UNKNOWN;
    if (json_is_object(shm) &&
        (get_int(r, shm, "total_bytes", &h->devshm_total_bytes, true) < 0 ||
         get_int(r, shm, "used_bytes", &h->devshm_used_bytes, true) < 0))
        return -1;
    if (get_array(r, o, "listeners", &a) < 0)
        return -1;
    if (a) {
        h->listeners = hbm_xcalloc(json_array_size(a), sizeof *h->listeners);
        json_array_foreach(a, i, e) {
            snprintf(r->path, sizeof r->path, "host.listeners[%zu]", i);
            if (!json_is_object(e))
                return bad(r, "", "must be an object");
            hbm_listener *l = &h->listeners[h->nlisteners++];
            int64_t inode;
            if (get_str(r, e, "addr", l->addr, sizeof l->addr) < 0 ||
                read_int_field(r, e, "port", &l->port) < 0 ||
                get_int(r, e, "inode", &inode, true) < 0 ||
                read_int_field(r, e, "pid", &l->pid) < 0)
                return -1;
            l->inode = inode < 0 ? 0 : (uint64_t)inode;
        }
    }
    r->path[0] = '\0';
    return 0;
}

static int read_topology(rd *r, const json_t *m, hbm_obs *obs)
{
    if (!m || json_is_null(m))
        return 0;
    size_t n = obs->ndevs;
    if (!json_is_array(m) || json_array_size(m) != n)
        return bad(r, "topology", "must be a square matrix, one row per device");
    hbm_link *links = hbm_xcalloc(n > 0 ? n * n : 1, sizeof *links);
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(m, i);
        if (!json_is_array(row) || json_array_size(row) != n) {
            free(links);
            return bad(r, "topology", "must be a square matrix, one row per device");
        }
        for (size_t j = 0; j < n; j++) {
            json_t *c = json_array_get(row, j);
            links[i * n + j] = json_is_string(c) ? hbm_link_parse(json_string_value(c))
                                                 : HBM_LINK_UNKNOWN;
        }
    }
    hbm_obs_set_topo(obs, links, n);
    free(links);
    return 0;
}

static int snapshot_from_json(hbm_obs *obs, const json_t *root, const char *name,
                              hbm_err *err)
{
    rd r = {.name = name, .err = err};
    hbm_obs_init(obs);
    if (!json_is_object(root))
        return hbm_err_set(err, "%s: a snapshot is a JSON object", name);
    const char *schema = json_string_value(json_object_get(root, "schema"));
    if (!schema || strcmp(schema, HBM_SNAPSHOT_SCHEMA) != 0)
        return hbm_err_set(err, "%s: schema is %s%s%s, expected \"%s\"", name,
                           schema ? "\"" : "", schema ? schema : "missing", schema ? "\"" : "",
                           HBM_SNAPSHOT_SCHEMA);
    char backend[32], when[40];
    if (get_str(&r, root, "backend", backend, sizeof backend) < 0 ||
        get_str(&r, root, "captured_at", when, sizeof when) < 0 ||
        get_str(&r, root, "hostname", obs->hostname, sizeof obs->hostname) < 0 ||
        get_str(&r, root, "driver_version", obs->driver_version, sizeof obs->driver_version) < 0 ||
        get_str(&r, root, "partial_why", obs->partial_why, sizeof obs->partial_why) < 0 ||
        get_str(&r, root, "backend_why", obs->backend_why, sizeof obs->backend_why) < 0)
        goto fail;
    /* The observation's own source is kept so replays say where the devices came from. */
    snprintf(obs->backend, sizeof obs->backend, "%s", backend[0] ? backend : "snapshot");
    snprintf(obs->source, sizeof obs->source, "%s", name);
    if (when[0]) {
        struct tm tm = {0};
        const char *end = strptime(when, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!end) {
            bad(&r, "captured_at", "must be an RFC 3339 UTC time");
            goto fail;
        }
        obs->captured_at = (double)timegm(&tm);
    }
    obs->partial = get_bool(root, "partial");
    json_t *devs;
    if (get_array(&r, root, "devices", &devs) < 0)
        goto fail;
    if (!devs) {
        bad(&r, "devices", "missing");
        goto fail;
    }
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d) {
        snprintf(r.path, sizeof r.path, "devices[%zu]", i);
        if (read_device(&r, d, obs) < 0)
            goto fail;
    }
    r.path[0] = '\0';
    if (read_topology(&r, json_object_get(root, "topology"), obs) < 0)
        goto fail;
    json_t *host = json_object_get(root, "host");
    if (host && !json_is_null(host)) {
        obs->has_host = true;
        if (read_host(&r, host, &obs->host) < 0)
            goto fail;
    }
    hbm_verdict_apply(obs);
    return 0;
fail:
    hbm_obs_free(obs);
    return -1;
}

int hbm_snapshot_parse(hbm_obs *obs, const char *text, size_t len, const char *name,
                       hbm_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        hbm_obs_init(obs);
        return hbm_err_set(err, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    }
    int rc = snapshot_from_json(obs, root, name, err);
    json_decref(root);
    return rc;
}
