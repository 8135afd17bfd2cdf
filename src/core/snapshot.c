/* Snapshot JSON (schema hbmctl.snapshot/1): writing and reading back an observation.
 * Unknown values are null. Reading is strict about types and names the offending field.
 * Each object's fields are listed once, in one table per struct that both directions walk
 * in order, so the writer and the reader cannot disagree on a name, a type or null. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hbm/redact.h"
#include "hbm/snapshot.h"
#include "hbm/verdict.h"

typedef struct rd {
    const char *name;
    hbm_err *err;
    char path[160]; /* e.g. devices[2].processes[0] */
} rd;

/* How a member is written and read. */
typedef enum fkind {
    F_I64,     /* int64_t; negative written null; null read as HBM_UNKNOWN */
    F_I64_RAW, /* int64_t written as it is; null read as HBM_UNKNOWN */
    F_U64,     /* uint64_t; null (or negative) read as 0 */
    F_INT,     /* int written as it is; null read as -1, beyond 32 bits refused */
    F_INT_OPT, /* the same, a negative int written null */
    F_INT_LAX, /* int; anything but an integer read as 0 */
    F_REAL,    /* double; NAN is null */
    F_STR,     /* char array; "" written null */
    F_STRZ,    /* char array, written even when "" */
    F_DUP,     /* owned char *; NULL is null */
    F_DUPZ,    /* owned char *, written "" when NULL and read "" when null */
    F_BOOL,    /* only true reads as true */
    F_STRS,    /* owned char ** and its size_t count: an array of strings */
    F_INTS,    /* owned int * and its size_t count: an array, non-integers skipped */
    F_NESTED,  /* a JSON object whose fields are members of the same struct */
    F_LIST,    /* a JSON array of objects: an owned array and its count */
    F_CUSTOM,  /* put and get below */
} fkind;

enum {
    F_REQUIRED = 1, /* missing or null is an error */
    F_OUT = 2,      /* written only: the reader recomputes or sets it (verdicts, source) */
};

typedef struct field field;
typedef struct list_desc list_desc;

struct field {
    const char *key;
    fkind kind;
    unsigned flags;
    size_t off, size;
    size_t count;          /* F_STRS, F_INTS: offset of the count */
    const field *sub;      /* F_NESTED: the sub-object's fields, ending in a NULL key */
    const list_desc *list; /* F_LIST */
    json_t *(*put)(const void *obj);                     /* F_CUSTOM */
    int (*get)(rd *r, const json_t *o, void *obj);       /* F_CUSTOM; NULL: read elsewhere */
};

/* An array member: elements of elem bytes, the pointer at items, the size_t count at count,
 * each element an object of fields; path names an element in messages (absolute, or NULL:
 * the key after the enclosing object's path). */
struct list_desc {
    size_t elem, items, count;
    const field *fields;
    const char *path;
};

#define MEMBER(T, m) offsetof(T, m), sizeof(((T *)0)->m)
#define FLD(T, k, kind, m) {k, kind, 0, MEMBER(T, m), 0, NULL, NULL, NULL, NULL}
#define FLDF(T, k, kind, flags, m) {k, kind, flags, MEMBER(T, m), 0, NULL, NULL, NULL, NULL}
#define ARRAY(T, k, kind, m, n) {k, kind, 0, MEMBER(T, m), offsetof(T, n), NULL, NULL, NULL, NULL}
#define NESTED(k, sub) {k, F_NESTED, 0, 0, 0, 0, sub, NULL, NULL, NULL}
#define LIST(k, desc) {k, F_LIST, 0, 0, 0, 0, NULL, &(desc), NULL, NULL}
#define CUSTOM(k, put, get) {k, F_CUSTOM, 0, 0, 0, 0, NULL, NULL, put, get}
#define END {NULL, F_CUSTOM, 0, 0, 0, 0, NULL, NULL, NULL, NULL}

#define AT(obj, f, T) ((T *)(void *)((char *)(obj) + (f)->off))
#define CAT(obj, f, T) ((const T *)(const void *)((const char *)(obj) + (f)->off))

static int bad(rd *r, const char *key, const char *what)
{
    return hbm_err_set(r->err, "%s: %s%s%s: %s", r->name, r->path, r->path[0] ? "." : "",
                       key, what);
}

static json_t *jint(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *jstr_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

/* ---- the two directions of one field kind ---- */

static json_t *put_fields(const void *obj, const field *fs);

static json_t *put_list(const void *obj, const list_desc *l)
{
    json_t *a = json_array();
    const char *items = *(char *const *)(const void *)((const char *)obj + l->items);
    size_t n = *(const size_t *)(const void *)((const char *)obj + l->count);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, put_fields(items + i * l->elem, l->fields));
    return a;
}

/* F_STRS and F_INTS: the items of an array member. */
static json_t *put_array(const void *obj, const field *f)
{
    json_t *a = json_array();
    size_t n = *(const size_t *)(const void *)((const char *)obj + f->count);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, f->kind == F_STRS ? json_string((*CAT(obj, f, char **))[i])
                                                   : json_integer((*CAT(obj, f, int *))[i]));
    return a;
}

static json_t *put_field(const void *obj, const field *f)
{
    switch (f->kind) {
    case F_I64: return jint(*CAT(obj, f, int64_t));
    case F_I64_RAW: return json_integer(*CAT(obj, f, int64_t));
    case F_U64: return json_integer((json_int_t)*CAT(obj, f, uint64_t));
    case F_INT:
    case F_INT_LAX: return json_integer(*CAT(obj, f, int));
    case F_INT_OPT: return jint(*CAT(obj, f, int));
    case F_REAL: {
        double v = *CAT(obj, f, double);
        return isnan(v) ? json_null() : json_real(v);
    }
    case F_STR: return jstr_or_null(CAT(obj, f, char));
    case F_STRZ: return json_string(CAT(obj, f, char));
    case F_DUP: return jstr_or_null(*CAT(obj, f, char *));
    case F_DUPZ: {
        const char *s = *CAT(obj, f, char *);
        return json_string(s ? s : "");
    }
    case F_BOOL: return json_boolean(*CAT(obj, f, bool));
    case F_STRS:
    case F_INTS: return put_array(obj, f);
    case F_NESTED: return put_fields(obj, f->sub);
    case F_LIST: return put_list(obj, f->list);
    case F_CUSTOM: break;
    }
    return f->put(obj);
}

static json_t *put_fields(const void *obj, const field *fs)
{
    json_t *o = json_object();
    for (const field *f = fs; f->key; f++)
        json_object_set_new(o, f->key, put_field(obj, f));
    return o;
}

/* A present, non-null value of k, or NULL (an error when the field is required). */
static const json_t *get_value(rd *r, const json_t *o, const char *k, bool required, int *rc)
{
    json_t *v = json_object_get(o, k);
    if (v && !json_is_null(v))
        return v;
    if (required)
        *rc = bad(r, k, v ? "must not be null" : "missing");
    return NULL;
}

static int get_int(rd *r, const json_t *o, const char *k, int64_t *out, bool required)
{
    int rc = 0;
    const json_t *v = get_value(r, o, k, required, &rc);
    *out = HBM_UNKNOWN;
    if (!v)
        return rc;
    if (!json_is_integer(v))
        return bad(r, k, "must be an integer");
    if (json_integer_value(v) < 0)
        return bad(r, k, "must not be negative");
    *out = json_integer_value(v);
    return 0;
}

static int get_str(rd *r, const json_t *o, const char *k, char *buf, size_t n)
{
    int rc = 0;
    const json_t *v = get_value(r, o, k, false, &rc);
    buf[0] = '\0';
    if (!v)
        return 0;
    if (!json_is_string(v))
        return bad(r, k, "must be a string");
    snprintf(buf, n, "%s", json_string_value(v));
    return 0;
}

static int get_array(rd *r, const json_t *o, const char *k, json_t **out)
{
    json_t *v = json_object_get(o, k);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return bad(r, k, "must be an array");
    *out = v;
    return 0;
}

static int get_fields(rd *r, const json_t *o, void *obj, const field *fs);

/* Appends "key[i]" (or the list's own path) to r->path for each element. */
static int get_list(rd *r, const json_t *o, void *obj, const field *f)
{
    const list_desc *l = f->list;
    json_t *a, *e;
    if (get_array(r, o, f->key, &a) < 0)
        return -1;
    if (!a)
        return 0;
    char **items = (char **)(void *)((char *)obj + l->items);
    size_t *n = (size_t *)(void *)((char *)obj + l->count);
    *items = hbm_xcalloc(json_array_size(a) ? json_array_size(a) : 1, l->elem);
    size_t base = strlen(r->path), i;
    json_array_foreach(a, i, e) {
        if (l->path)
            snprintf(r->path, sizeof r->path, "%s[%zu]", l->path, i);
        else
            snprintf(r->path + base, sizeof r->path - base, "%s%s[%zu]", base ? "." : "",
                     f->key, i);
        if (!json_is_object(e))
            return bad(r, "", "must be an object");
        void *x = *items + (*n)++ * l->elem;
        if (get_fields(r, e, x, l->fields) < 0)
            return -1;
    }
    r->path[l->path ? 0 : base] = '\0';
    return 0;
}

static int get_dup(rd *r, const json_t *o, const field *f, char **out)
{
    int rc = 0;
    const json_t *v = get_value(r, o, f->key, f->flags & F_REQUIRED, &rc);
    *out = NULL;
    if (!v)
        return rc;
    if (!json_is_string(v))
        return bad(r, f->key, "must be a string");
    *out = hbm_xstrdup(json_string_value(v));
    return 0;
}

static int get_int32(rd *r, const json_t *o, const char *k, int *out)
{
    int64_t v;
    if (get_int(r, o, k, &v, false) < 0)
        return -1;
    if (v > 0x7fffffff)
        return bad(r, k, "out of range");
    *out = v < 0 ? -1 : (int)v;
    return 0;
}

/* F_STRS (strings only) and F_INTS (integers kept, others skipped). */
static int get_array_member(rd *r, const json_t *o, void *obj, const field *f)
{
    json_t *a, *x;
    size_t j;
    if (get_array(r, o, f->key, &a) < 0)
        return -1;
    if (!a || !json_array_size(a))
        return 0;
    size_t *n = (size_t *)(void *)((char *)obj + f->count);
    if (f->kind == F_INTS) {
        int **v = AT(obj, f, int *);
        *v = hbm_xcalloc(json_array_size(a), sizeof **v);
        json_array_foreach(a, j, x) {
            if (json_is_integer(x))
                (*v)[(*n)++] = (int)json_integer_value(x);
        }
        return 0;
    }
    char ***v = AT(obj, f, char **);
    *v = hbm_xcalloc(json_array_size(a), sizeof **v);
    json_array_foreach(a, j, x) {
        if (!json_is_string(x))
            return bad(r, f->key, "must hold strings");
        (*v)[(*n)++] = hbm_xstrdup(json_string_value(x));
    }
    return 0;
}

static int get_field(rd *r, const json_t *o, void *obj, const field *f)
{
    bool req = f->flags & F_REQUIRED;
    int64_t v;
    switch (f->kind) {
    case F_I64:
    case F_I64_RAW: return get_int(r, o, f->key, AT(obj, f, int64_t), req);
    case F_U64:
        if (get_int(r, o, f->key, &v, req) < 0)
            return -1;
        *AT(obj, f, uint64_t) = v < 0 ? 0 : (uint64_t)v;
        return 0;
    case F_INT:
    case F_INT_OPT: return get_int32(r, o, f->key, AT(obj, f, int));
    case F_INT_LAX: {
        json_t *x = json_object_get(o, f->key);
        *AT(obj, f, int) = json_is_integer(x) ? (int)json_integer_value(x) : 0;
        return 0;
    }
    case F_REAL: {
        const json_t *x = get_value(r, o, f->key, false, &(int){0});
        *AT(obj, f, double) = x ? json_number_value(x) : NAN;
        return !x || json_is_number(x) ? 0 : bad(r, f->key, "must be a number");
    }
    case F_STR:
    case F_STRZ: return get_str(r, o, f->key, AT(obj, f, char), f->size);
    case F_DUP: return get_dup(r, o, f, AT(obj, f, char *));
    case F_DUPZ: {
        char **s = AT(obj, f, char *);
        int rc = get_dup(r, o, f, s);
        if (rc == 0 && !*s)
            *s = hbm_xstrdup("");
        return rc;
    }
    case F_BOOL: *AT(obj, f, bool) = json_is_true(json_object_get(o, f->key)); return 0;
    case F_STRS:
    case F_INTS: return get_array_member(r, o, obj, f);
    case F_NESTED: {
        json_t *x = json_object_get(o, f->key);
        return json_is_object(x) ? get_fields(r, x, obj, f->sub) : 0;
    }
    case F_LIST: return get_list(r, o, obj, f);
    case F_CUSTOM: break;
    }
    return f->get ? f->get(r, o, obj) : 0;
}

static int get_fields(rd *r, const json_t *o, void *obj, const field *fs)
{
    for (const field *f = fs; f->key; f++)
        if (!(f->flags & F_OUT) && get_field(r, o, obj, f) < 0)
            return -1;
    return 0;
}

/* ---- the members that are not one plain value ---- */

/* "pod": {namespace, name, uid, container} of a process in Kubernetes, or null; a pod
 * without both names is refused. */
static json_t *pod_to_json(const hbm_pod *p)
{
    if (!p->name[0])
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "namespace", json_string(p->ns));
    json_object_set_new(o, "name", json_string(p->name));
    json_object_set_new(o, "uid", jstr_or_null(p->uid));
    json_object_set_new(o, "container", jstr_or_null(p->container));
    return o;
}

static int get_pod(rd *r, const json_t *o, hbm_pod *out)
{
    memset(out, 0, sizeof *out);
    json_t *v = json_object_get(o, "pod");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return bad(r, "pod", "must be an object or null");
    size_t base = strlen(r->path);
    snprintf(r->path + base, sizeof r->path - base, "%spod", base ? "." : "");
    int rc = get_str(r, v, "namespace", out->ns, sizeof out->ns) < 0 ||
                     get_str(r, v, "name", out->name, sizeof out->name) < 0 ||
                     get_str(r, v, "uid", out->uid, sizeof out->uid) < 0 ||
                     get_str(r, v, "container", out->container, sizeof out->container) < 0
                 ? -1
                 : 0;
    r->path[base] = '\0';
    if (rc == 0 && (!out->ns[0] || !out->name[0]))
        rc = bad(r, "pod", "needs namespace and name");
    if (rc < 0)
        memset(out, 0, sizeof *out);
    return rc;
}

static json_t *put_dproc_pod(const void *obj)
{
    return pod_to_json(&((const hbm_dproc *)obj)->pod);
}

static int get_dproc_pod(rd *r, const json_t *o, void *obj)
{
    return get_pod(r, o, &((hbm_dproc *)obj)->pod);
}

static json_t *put_hproc_pod(const void *obj)
{
    return pod_to_json(&((const hbm_hproc *)obj)->pod);
}

static int get_hproc_pod(rd *r, const json_t *o, void *obj)
{
    return get_pod(r, o, &((hbm_hproc *)obj)->pod);
}

static json_t *put_pid_state(const void *obj)
{
    return json_string(hbm_pid_state_name(((const hbm_dproc *)obj)->state));
}

static int get_pid_state(rd *r, const json_t *o, void *obj)
{
    char s[16];
    if (get_str(r, o, "state", s, sizeof s) < 0)
        return -1;
    hbm_dproc *p = obj;
    p->state = HBM_PID_UNCHECKED;
    for (int st = HBM_PID_UNCHECKED; st <= HBM_PID_ABANDONED; st++)
        if (strcmp(hbm_pid_state_name((hbm_pid_state)st), s) == 0)
            p->state = (hbm_pid_state)st;
    return 0;
}

static json_t *put_vendor(const void *obj)
{
    return json_string(hbm_vendor_name(((const hbm_device *)obj)->vendor));
}

static json_t *put_verdict(const void *obj)
{
    return json_string(hbm_verdict_name(((const hbm_device *)obj)->verdict));
}

static json_t *put_proc_state(const void *obj)
{
    const hbm_hproc *p = obj;
    char st[2] = {p->state ? p->state : '?', 0};
    return json_string(st);
}

static int get_proc_state(rd *r, const json_t *o, void *obj)
{
    char st[4];
    if (get_str(r, o, "state", st, sizeof st) < 0)
        return -1;
    ((hbm_hproc *)obj)->state = st[0];
    return 0;
}

static json_t *put_nspid(const void *obj)
{
    const hbm_hproc *p = obj;
    json_t *a = json_array();
    for (int i = 0; i < p->nnspid && i < 8; i++)
        json_array_append_new(a, json_integer(p->nspid[i]));
    return a;
}

static int get_nspid(rd *r, const json_t *o, void *obj)
{
    hbm_hproc *p = obj;
    json_t *a, *x;
    size_t j;
    if (get_array(r, o, "nspid", &a) < 0)
        return -1;
    json_array_foreach(a, j, x) {
        if (j < 8 && json_is_integer(x))
            p->nspid[p->nnspid++] = (int)json_integer_value(x);
    }
    return 0;
}

static json_t *put_sysv_key(const void *obj)
{
    char key[24];
    snprintf(key, sizeof key, "0x%08llx",
             (unsigned long long)(uint32_t)((const hbm_sysv_seg *)obj)->key);
    return json_string(key);
}

static int get_sysv_key(rd *r, const json_t *o, void *obj)
{
    char key[24];
    if (get_str(r, o, "key", key, sizeof key) < 0)
        return -1;
    ((hbm_sysv_seg *)obj)->key = (int64_t)(int32_t)strtoul(key, NULL, 16);
    return 0;
}

static json_t *put_clk_tck(const void *obj)
{
    return json_integer(((const hbm_host *)obj)->clk_tck);
}

static int get_clk_tck(rd *r, const json_t *o, void *obj)
{
    int64_t tck;
    if (get_int(r, o, "clk_tck", &tck, false) < 0)
        return -1;
    ((hbm_host *)obj)->clk_tck = tck > 0 ? (long)tck : 100;
    return 0;
}

static json_t *put_boot_time(const void *obj)
{
    double t = ((const hbm_host *)obj)->boot_time;
    return t > 0 ? json_real(t) : json_null();
}

static int get_boot_time(rd *r, const json_t *o, void *obj)
{
    json_t *v = json_object_get(o, "boot_time");
    if (v && !json_is_null(v) && !json_is_number(v))
        return bad(r, "boot_time", "must be a number");
    ((hbm_host *)obj)->boot_time = json_is_number(v) ? json_number_value(v) : 0;
    return 0;
}

/* ---- the tables, in the order the fields are written ---- */

static const field proc_fields[] = {
    FLDF(hbm_dproc, "pid", F_I64, F_REQUIRED, pid),
    FLD(hbm_dproc, "name", F_STR, name),
    FLD(hbm_dproc, "memory_bytes", F_I64, memory_bytes),
    FLD(hbm_dproc, "container", F_STR, container),
    FLD(hbm_dproc, "container_name", F_STR, container_name),
    FLD(hbm_dproc, "container_image", F_STR, container_image),
    CUSTOM("pod", put_dproc_pod, get_dproc_pod),
    FLD(hbm_dproc, "pid_in_container", F_I64, pid_in_container),
    CUSTOM("state", put_pid_state, get_pid_state),
    FLD(hbm_dproc, "state_why", F_STR, state_why),
    END,
};

static const list_desc device_procs = {sizeof(hbm_dproc), offsetof(hbm_device, procs),
                                       offsetof(hbm_device, nprocs), proc_fields, NULL};

static const field device_fields[] = {
    CUSTOM("vendor", put_vendor, NULL), /* read first: it chooses the device's defaults */
    FLDF(hbm_device, "index", F_I64, F_REQUIRED, index),
    FLD(hbm_device, "chip", F_I64, chip),
    FLD(hbm_device, "logic_id", F_I64, logic_id),
    FLD(hbm_device, "phy_id", F_I64, phy_id),
    FLD(hbm_device, "name", F_STRZ, name),
    FLD(hbm_device, "bus_id", F_STR, bus_id),
    FLD(hbm_device, "uuid", F_STR, uuid),
    FLD(hbm_device, "health", F_STR, health),
    FLD(hbm_device, "power_watts", F_REAL, power_watts),
    FLD(hbm_device, "temperature_celsius", F_REAL, temperature_celsius),
    FLD(hbm_device, "utilization_ratio", F_REAL, utilization_ratio),
    FLD(hbm_device, "memory_used_bytes", F_I64, memory_used_bytes),
    FLD(hbm_device, "memory_total_bytes", F_I64, memory_total_bytes),
    FLD(hbm_device, "memory_reserved_bytes", F_I64, memory_reserved_bytes),
    FLD(hbm_device, "hugepages_used", F_I64, hugepages_used),
    FLD(hbm_device, "hugepages_total", F_I64, hugepages_total),
    FLD(hbm_device, "ddr_used_bytes", F_I64, ddr_used_bytes),
    FLD(hbm_device, "ddr_total_bytes", F_I64, ddr_total_bytes),
    FLD(hbm_device, "mig", F_STR, mig),
    CUSTOM("verdict", put_verdict, NULL), /* verdicts are judged again on reading */
    FLDF(hbm_device, "reason", F_STRZ, F_OUT, reason),
    FLDF(hbm_device, "baseline_bytes", F_I64, F_OUT, baseline_bytes),
    FLDF(hbm_device, "unaccounted_bytes", F_I64, F_OUT, unaccounted_bytes),
    FLD(hbm_device, "processes_known", F_BOOL, procs_known),
    FLD(hbm_device, "processes_truncated", F_BOOL, procs_truncated),
    LIST("processes", device_procs),
    END,
};

static const field hproc_fields[] = {
    FLD(hbm_hproc, "pid", F_INT, pid),
    FLD(hbm_hproc, "ppid", F_INT, ppid),
    CUSTOM("state", put_proc_state, get_proc_state),
    FLD(hbm_hproc, "starttime", F_U64, starttime),
    FLD(hbm_hproc, "uid", F_INT, uid),
    FLD(hbm_hproc, "comm", F_STRZ, comm),
    FLD(hbm_hproc, "cmdline", F_DUPZ, cmdline),
    FLD(hbm_hproc, "cgroup", F_DUP, cgroup),
    FLD(hbm_hproc, "container_id", F_STR, container_id),
    FLD(hbm_hproc, "runtime", F_STR, runtime),
    FLD(hbm_hproc, "pod_uid", F_STR, pod_uid),
    CUSTOM("pod", put_hproc_pod, get_hproc_pod),
    FLD(hbm_hproc, "cgroup_gone", F_BOOL, cgroup_gone),
    FLD(hbm_hproc, "container_state", F_STR, container_state),
    FLD(hbm_hproc, "container_name", F_STR, container_name),
    FLD(hbm_hproc, "container_image", F_STR, container_image),
    FLD(hbm_hproc, "parent_container_init", F_BOOL, parent_container_init),
    FLD(hbm_hproc, "parent_comm", F_STR, parent_comm),
    CUSTOM("nspid", put_nspid, get_nspid),
    FLD(hbm_hproc, "wchan", F_STR, wchan),
    FLD(hbm_hproc, "zombie_live_threads", F_INT_LAX, zombie_live_threads),
    ARRAY(hbm_hproc, "device_files", F_STRS, dev_paths, ndev_paths),
    FLD(hbm_hproc, "fds_read", F_BOOL, fds_read),
    FLD(hbm_hproc, "visible_devices", F_DUP, visible_devices),
    END,
};

static const field sysv_fields[] = {
    CUSTOM("key", put_sysv_key, get_sysv_key),
    FLD(hbm_sysv_seg, "shmid", F_INT, shmid),
    FLD(hbm_sysv_seg, "perms", F_INT, perms),
    FLDF(hbm_sysv_seg, "size_bytes", F_U64, F_REQUIRED, size),
    FLD(hbm_sysv_seg, "cpid", F_INT, cpid),
    FLD(hbm_sysv_seg, "lpid", F_INT, lpid),
    FLDF(hbm_sysv_seg, "nattch", F_U64, F_REQUIRED, nattch),
    FLD(hbm_sysv_seg, "uid", F_INT, uid),
    FLD(hbm_sysv_seg, "cuid", F_INT, cuid),
    FLD(hbm_sysv_seg, "atime", F_I64_RAW, atime),
    FLD(hbm_sysv_seg, "dtime", F_I64_RAW, dtime),
    FLD(hbm_sysv_seg, "ctime", F_I64_RAW, ctime),
    FLD(hbm_sysv_seg, "cpid_alive", F_BOOL, cpid_alive),
    FLD(hbm_sysv_seg, "lpid_alive", F_BOOL, lpid_alive),
    END,
};

static const field posix_fields[] = {
    FLDF(hbm_posix_shm, "path", F_DUPZ, F_REQUIRED, path),
    FLD(hbm_posix_shm, "size_bytes", F_U64, size),
    FLD(hbm_posix_shm, "uid", F_INT, uid),
    FLD(hbm_posix_shm, "mtime", F_I64_RAW, mtime),
    ARRAY(hbm_posix_shm, "holders", F_INTS, holders, nholders),
    FLD(hbm_posix_shm, "owner", F_STR, owner),
    END,
};

static const field huge_fields[] = {
    FLD(hbm_hugepages, "node", F_INT_OPT, node),
    FLD(hbm_hugepages, "page_size_bytes", F_U64, page_size_bytes),
    FLD(hbm_hugepages, "total", F_I64, total),
    FLD(hbm_hugepages, "free", F_I64, free),
    FLD(hbm_hugepages, "rsvd", F_I64, rsvd),
    FLD(hbm_hugepages, "surp", F_I64, surp),
    END,
};

static const field listener_fields[] = {
    FLD(hbm_listener, "addr", F_STRZ, addr),
    FLD(hbm_listener, "port", F_INT, port),
    FLD(hbm_listener, "inode", F_U64, inode),
    FLD(hbm_listener, "pid", F_INT_OPT, pid),
    END,
};

static const field thp_fields[] = {
    FLD(hbm_host, "enabled", F_STR, thp),
    FLD(hbm_host, "defrag", F_STR, thp_defrag),
    END,
};

static const field devshm_fields[] = {
    FLD(hbm_host, "total_bytes", F_I64, devshm_total_bytes),
    FLD(hbm_host, "used_bytes", F_I64, devshm_used_bytes),
    END,
};

#define HOST_LIST(T, items, count, fields, path)                                           \
    {sizeof(T), offsetof(hbm_host, items), offsetof(hbm_host, count), fields, path}
static const list_desc host_procs = HOST_LIST(hbm_hproc, procs, nprocs, hproc_fields,
                                              "host.holders");
static const list_desc host_sysv = HOST_LIST(hbm_sysv_seg, sysv, nsysv, sysv_fields,
                                             "host.sysv_shm");
static const list_desc host_posix = HOST_LIST(hbm_posix_shm, posix, nposix, posix_fields,
                                              "host.posix_shm");
static const list_desc host_huge = HOST_LIST(hbm_hugepages, huge, nhuge, huge_fields,
                                             "host.hugepages");
static const list_desc host_listeners = HOST_LIST(hbm_listener, listeners, nlisteners,
                                                  listener_fields, "host.listeners");

static const field host_fields[] = {
    FLD(hbm_host, "sees_host_pids", F_BOOL, sees_host_pids),
    FLD(hbm_host, "sees_host_pids_why", F_STRZ, sees_host_pids_why),
    FLD(hbm_host, "wsl2", F_BOOL, wsl2),
    CUSTOM("clk_tck", put_clk_tck, get_clk_tck),
    CUSTOM("boot_time", put_boot_time, get_boot_time),
    LIST("holders", host_procs),
    LIST("sysv_shm", host_sysv),
    LIST("posix_shm", host_posix),
    LIST("hugepages", host_huge),
    NESTED("thp", thp_fields),
    NESTED("dev_shm", devshm_fields),
    LIST("listeners", host_listeners),
    END,
};

static int get_device(rd *r, const json_t *o, hbm_obs *obs)
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
    if (get_fields(r, o, d, device_fields) < 0)
        return -1;
    if (!isnan(d->utilization_ratio) && (d->utilization_ratio < 0 || d->utilization_ratio > 1))
        return bad(r, "utilization_ratio", "must be within 0..1");
    d->healthy = !d->health[0] || strcasecmp(d->health, "OK") == 0 ||
                 strcasecmp(d->health, "Healthy") == 0;
    /* A device with processes listed knows its processes, whatever the flag says. */
    if (d->nprocs)
        d->procs_known = true;
    return 0;
}

static json_t *put_devices(const void *obj)
{
    const hbm_obs *obs = obj;
    json_t *a = json_array();
    for (size_t i = 0; i < obs->ndevs; i++)
        json_array_append_new(a, put_fields(&obs->devs[i], device_fields));
    return a;
}

static int get_devices(rd *r, const json_t *o, void *obj)
{
    json_t *a, *d;
    if (get_array(r, o, "devices", &a) < 0)
        return -1;
    if (!a)
        return bad(r, "devices", "missing");
    size_t i;
    json_array_foreach(a, i, d) {
        snprintf(r->path, sizeof r->path, "devices[%zu]", i);
        if (get_device(r, d, obj) < 0)
            return -1;
    }
    r->path[0] = '\0';
    return 0;
}

static json_t *put_topology(const void *obj)
{
    const hbm_obs *obs = obj;
    if (!obs->topo)
        return json_null();
    json_t *m = json_array();
    for (size_t i = 0; i < obs->ndevs; i++) {
        json_t *row = json_array();
        for (size_t j = 0; j < obs->ndevs; j++)
            json_array_append_new(row, json_string(hbm_link_name(hbm_obs_link(obs, i, j))));
        json_array_append_new(m, row);
    }
    return m;
}

/* Read after the devices: one row per device. */
static int get_topology(rd *r, const json_t *o, void *obj)
{
    hbm_obs *obs = obj;
    const json_t *m = json_object_get(o, "topology");
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

static int cmp_hproc_pid(const void *a, const void *b)
{
    int x = ((const hbm_hproc *)a)->pid, y = ((const hbm_hproc *)b)->pid;
    return (x > y) - (x < y);
}

static json_t *put_host(const void *obj)
{
    const hbm_obs *obs = obj;
    return obs->has_host ? put_fields(&obs->host, host_fields) : json_null();
}

static int get_host(rd *r, const json_t *o, void *obj)
{
    hbm_obs *obs = obj;
    const json_t *v = json_object_get(o, "host");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return bad(r, "host", "must be an object or null");
    obs->has_host = true;
    hbm_host *h = &obs->host;
    h->devshm_total_bytes = h->devshm_used_bytes = HBM_UNKNOWN;
    if (get_fields(r, v, h, host_fields) < 0)
        return -1;
    /* A snapshot written by an older hbmctl may still carry credentials. */
    for (size_t i = 0; i < h->nprocs; i++) {
        char *raw = h->procs[i].cmdline;
        h->procs[i].cmdline = hbm_redact_words(raw ? raw : "", raw ? strlen(raw) : 0, ' ', 0);
        free(raw);
        char *comm = hbm_redact_text(h->procs[i].comm, strlen(h->procs[i].comm));
        snprintf(h->procs[i].comm, sizeof h->procs[i].comm, "%s", comm);
        free(comm);
    }
    /* hbm_host_find searches by pid: a hand-written snapshot may list holders in any order. */
    if (h->nprocs > 1)
        qsort(h->procs, h->nprocs, sizeof *h->procs, cmp_hproc_pid);
    return 0;
}

static json_t *put_schema(const void *obj)
{
    (void)obj;
    return json_string(HBM_SNAPSHOT_SCHEMA);
}

static json_t *put_captured_at(const void *obj)
{
    double t = ((const hbm_obs *)obj)->captured_at;
    if (t <= 0)
        return json_null();
    char ts[40];
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(ts);
}

static int get_captured_at(rd *r, const json_t *o, void *obj)
{
    char when[40];
    if (get_str(r, o, "captured_at", when, sizeof when) < 0)
        return -1;
    if (!when[0])
        return 0;
    struct tm tm = {0};
    if (!strptime(when, "%Y-%m-%dT%H:%M:%S", &tm))
        return bad(r, "captured_at", "must be an RFC 3339 UTC time");
    ((hbm_obs *)obj)->captured_at = (double)timegm(&tm);
    return 0;
}

static const field server_engine_fields[] = {
    FLD(hbm_server_engine, "kind", F_STRZ, kind),
    FLD(hbm_server_engine, "model", F_STR, model),
    FLD(hbm_server_engine, "engine", F_STR, engine),
    FLD(hbm_server_engine, "state", F_STRZ, state),
    FLD(hbm_server_engine, "why", F_STR, why),
    FLD(hbm_server_engine, "line", F_STRZ, line),
    FLD(hbm_server_engine, "running", F_REAL, running),
    FLD(hbm_server_engine, "waiting", F_REAL, waiting),
    FLD(hbm_server_engine, "tokens_before", F_REAL, tokens_before),
    FLD(hbm_server_engine, "tokens_after", F_REAL, tokens_after),
    FLD(hbm_server_engine, "seconds_without_token", F_REAL, stalled_for_s),
    END,
};

static const list_desc server_engines = {sizeof(hbm_server_engine),
                                         offsetof(hbm_server, engines),
                                         offsetof(hbm_server, nengines), server_engine_fields,
                                         NULL};

static const field server_fields[] = {
    FLD(hbm_server, "pid", F_INT, pid),
    FLD(hbm_server, "comm", F_STRZ, comm),
    FLD(hbm_server, "url", F_STRZ, url),
    FLD(hbm_server, "up", F_BOOL, up),
    FLD(hbm_server, "error", F_STR, error),
    LIST("engines", server_engines),
    END,
};

static const list_desc obs_servers = {sizeof(hbm_server), offsetof(hbm_obs, servers),
                                      offsetof(hbm_obs, nservers), server_fields, "servers"};

static const field obs_fields[] = {
    CUSTOM("schema", put_schema, NULL), /* checked before anything else */
    FLD(hbm_obs, "backend", F_STRZ, backend),
    FLD(hbm_obs, "backend_why", F_STR, backend_why),
    CUSTOM("captured_at", put_captured_at, get_captured_at),
    FLD(hbm_obs, "hostname", F_STR, hostname),
    FLDF(hbm_obs, "tool_version", F_STRZ, F_OUT, tool_version), /* the reader's own */
    FLD(hbm_obs, "driver_version", F_STR, driver_version),
    FLDF(hbm_obs, "source", F_STR, F_OUT, source), /* a replay names the file it read */
    FLD(hbm_obs, "partial", F_BOOL, partial),
    FLD(hbm_obs, "partial_why", F_STR, partial_why),
    CUSTOM("devices", put_devices, get_devices),
    CUSTOM("topology", put_topology, get_topology),
    CUSTOM("host", put_host, get_host),
    FLD(hbm_obs, "servers_interval_seconds", F_REAL, servers_interval_s),
    LIST("servers", obs_servers),
    END,
};

json_t *hbm_snapshot_to_json(const hbm_obs *obs)
{
    return put_fields(obs, obs_fields);
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
    if (get_fields(&r, root, obs, obs_fields) < 0) {
        hbm_obs_free(obs);
        return -1;
    }
    /* The observation's own source is kept so replays say where the devices came from. */
    if (!obs->backend[0])
        snprintf(obs->backend, sizeof obs->backend, "snapshot");
    snprintf(obs->source, sizeof obs->source, "%s", name);
    hbm_verdict_apply(obs);
    return 0;
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
