/* The remediation policy on a clean plan: how long each leftover has been one, so that a
 * timer touches only what stayed a leftover for --min-age, and at most --max-actions per
 * run. "How long it has been one" needs memory between runs: a small state file of first
 * sightings, keyed by the object's identity (a reused pid or shmid is a new leftover). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/doctor_int.h"
#include "hbm/util.h"

/* More leftovers than this on one node is no state hbmctl wrote. */
#define SEEN_MAX 4096
#define SEEN_BYTES (1 << 20)

typedef struct seen {
    char **key;
    double *t;
    size_t n;
} seen;

static void seen_free(seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->key[i]);
    free(s->key);
    free(s->t);
    memset(s, 0, sizeof *s);
}

static int seen_load(const char *path, seen *s, hbm_err *err)
{
    memset(s, 0, sizeof *s);
    if (access(path, F_OK) < 0 && errno == ENOENT)
        return 0;
    char *buf;
    size_t len;
    if (hbm_read_file(path, SEEN_BYTES, &buf, &len, err) < 0)
        return -1;
    json_error_t je;
    json_t *root = json_loadb(buf, len, 0, &je);
    free(buf);
    const char *schema = json_string_value(json_object_get(root, "schema"));
    json_t *arr = json_object_get(root, "seen");
    if (!root || !schema || strcmp(schema, "hbmctl.clean-seen/1") || !json_is_array(arr)) {
        json_decref(root);
        return hbm_err_set(err, "%s: not an hbmctl.clean-seen/1 state file", path);
    }
    size_t n = json_array_size(arr) < SEEN_MAX ? json_array_size(arr) : SEEN_MAX;
    s->key = hbm_xcalloc(n + 1, sizeof *s->key);
    s->t = hbm_xcalloc(n + 1, sizeof *s->t);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        const char *k = json_string_value(json_array_get(e, 0));
        json_t *t = json_array_get(e, 1);
        if (!k || !json_is_number(t))
            continue; /* one bad record costs its own age only */
        s->key[s->n] = hbm_xstrdup(k);
        s->t[s->n++] = json_number_value(t);
    }
    json_decref(root);
    return 0;
}

static int seen_save(const char *path, const seen *s, hbm_err *err)
{
    char *dir = hbm_xstrdup(path), *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            free(dir);
            return hbm_err_set(err, "%s: %s", path, strerror(e));
        }
    }
    free(dir);
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "schema", json_string("hbmctl.clean-seen/1"));
    for (size_t i = 0; i < s->n && i < SEEN_MAX; i++)
        json_array_append_new(arr, json_pack("[sf]", s->key[i], s->t[i]));
    json_object_set_new(root, "seen", arr);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    int rc = hbm_write_file_atomic(path, text, strlen(text), 0644, err);
    free(text);
    return rc;
}

static const hbm_sysv_seg *find_seg(const hbm_obs *obs, int shmid)
{
    for (size_t i = 0; obs->has_host && i < obs->host.nsysv; i++)
        if (obs->host.sysv[i].shmid == shmid)
            return &obs->host.sysv[i];
    return NULL;
}

static const hbm_posix_shm *find_posix(const hbm_obs *obs, const char *path)
{
    for (size_t i = 0; obs->has_host && i < obs->host.nposix; i++)
        if (!strcmp(obs->host.posix[i].path, path))
            return &obs->host.posix[i];
    return NULL;
}

/* The step's identity for the state file, and its age from the object itself (NAN when
 * not known): a process's start, the segment's last detach or change, the file's mtime. */
static void identity(const hbm_obs *obs, const hbm_clean_step *s, double now, char *key,
                     size_t n, double *own, const char **basis)
{
    const hbm_action *a = &s->action;
    *own = NAN;
    *basis = NULL;
    if (a->kind == HBM_ACT_KILL) {
        snprintf(key, n, "pid:%d:%llu", a->pid, (unsigned long long)a->starttime);
        if (obs->has_host && obs->host.boot_time > 0 && obs->host.clk_tck > 0) {
            *own = now - (obs->host.boot_time + (double)a->starttime / obs->host.clk_tck);
            *basis = "process start";
        }
    } else if (a->kind == HBM_ACT_SYSV_RMID) {
        const hbm_sysv_seg *g = find_seg(obs, a->shmid);
        int64_t ct = g ? g->ctime : 0, since = g && g->dtime > ct ? g->dtime : ct;
        snprintf(key, n, "sysv:%d:%lld:%lld", a->shmid, (long long)a->key, (long long)ct);
        if (since > 0) {
            *own = now - (double)since;
            *basis = since == ct ? "segment ctime" : "segment dtime";
        }
    } else {
        struct stat st;
        unsigned long long ino = lstat(a->path, &st) == 0 ? (unsigned long long)st.st_ino : 0;
        snprintf(key, n, "posix:%s:%llu", a->path, ino);
        const hbm_posix_shm *p = find_posix(obs, a->path);
        if (p && p->mtime > 0) {
            *own = now - (double)p->mtime;
            *basis = "file mtime";
        }
    }
}

/* Ages from the state file (first sighting; a new leftover is first seen now) or, where it
 * cannot be kept, from the objects; the file keeps only what is a leftover now. */
static int ages(const hbm_obs *obs, hbm_clean_plan *plan, const char *path, double now,
                hbm_err *err)
{
    seen old, cur = {0};
    int rc = seen_load(path, &old, err);
    cur.key = hbm_xcalloc(plan->n + 1, sizeof *cur.key);
    cur.t = hbm_xcalloc(plan->n + 1, sizeof *cur.t);
    for (size_t i = 0; i < plan->n; i++) {
        hbm_clean_step *s = &plan->steps[i];
        char key[512];
        double own;
        const char *basis;
        identity(obs, s, now, key, sizeof key, &own, &basis);
        s->age_s = own;
        s->age_basis = basis;
        double first = now;
        for (size_t k = 0; rc == 0 && k < old.n; k++)
            if (!strcmp(old.key[k], key) && old.t[k] <= now)
                first = old.t[k];
        cur.key[cur.n] = hbm_xstrdup(key);
        cur.t[cur.n++] = first;
        if (rc == 0) {
            s->age_s = now - first;
            s->age_basis = "first seen";
        }
    }
    if (rc == 0 && seen_save(path, &cur, err) < 0) {
        rc = -1;
        for (size_t i = 0; i < plan->n; i++) { /* not kept: the next run cannot tell */
            char key[512];
            identity(obs, &plan->steps[i], now, key, sizeof key, &plan->steps[i].age_s,
                     &plan->steps[i].age_basis);
        }
    }
    seen_free(&old);
    seen_free(&cur);
    return rc;
}

int hbm_clean_policy(const hbm_obs *obs, hbm_clean_plan *plan, const hbm_clean_opts *o,
                     double now, hbm_err *err)
{
    if (o->min_age_s < 0 && o->max_actions <= 0)
        return 0; /* no limit asked: no ages needed, no state file touched */
    const char *path = o->state_path && *o->state_path ? o->state_path : HBM_CLEAN_STATE_DEFAULT;
    int rc = ages(obs, plan, path, now, err);
    for (size_t i = 0; i < plan->n; i++) {
        hbm_clean_step *s = &plan->steps[i];
        if (!s->allowed || o->min_age_s <= 0 || s->age_s >= o->min_age_s)
            continue;
        s->allowed = false;
        s->waiting = true;
        if (isnan(s->age_s))
            snprintf(s->why, sizeof s->why, "its age is not known (no state file, no start "
                     "time): waits, --min-age %.0fs", o->min_age_s);
        else
            snprintf(s->why, sizeof s->why, "a leftover for %.0fs (%s), under --min-age %.0fs: "
                     "waits", s->age_s, s->age_basis, o->min_age_s);
    }
    if (o->max_actions <= 0)
        return rc;
    /* Oldest first: what waited longest is done, the youngest are deferred. */
    bool *taken = hbm_xcalloc(plan->n + 1, sizeof *taken);
    for (long k = 0;; k++) {
        hbm_clean_step *best = NULL;
        size_t at = 0;
        for (size_t i = 0; i < plan->n; i++) {
            hbm_clean_step *s = &plan->steps[i];
            if (s->allowed && !taken[i] &&
                (!best || (isnan(best->age_s) && !isnan(s->age_s)) || s->age_s > best->age_s)) {
                best = s;
                at = i;
            }
        }
        if (!best)
            break;
        taken[at] = true;
        if (k < o->max_actions)
            continue;
        best->allowed = false;
        best->deferred = true;
        snprintf(best->why, sizeof best->why, "deferred: --max-actions %ld reached this run; "
                 "the next run takes it", o->max_actions);
    }
    free(taken);
    return rc;
}

json_t *hbm_clean_steps_json(const hbm_clean_plan *p)
{
    json_t *a = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const hbm_clean_step *s = &p->steps[i];
        json_t *o = json_object();
        json_object_set_new(o, "finding", json_string(s->finding_id));
        json_object_set_new(o, "device", s->device < 0 ? json_null() : json_integer(s->device));
        json_object_set_new(o, "action", json_string(hbm_action_kind_name(s->action.kind)));
        json_object_set_new(o, "text", json_string(s->action.text));
        json_object_set_new(o, "allowed", json_boolean(s->allowed));
        json_object_set_new(o, "why", s->allowed ? json_null() : json_string(s->why));
        json_object_set_new(o, "done", json_boolean(s->done));
        json_object_set_new(o, "result", s->result[0] ? json_string(s->result) : json_null());
        json_object_set_new(o, "age_seconds", isnan(s->age_s) ? json_null()
                                                              : json_real(s->age_s));
        json_object_set_new(o, "age_basis", s->age_basis ? json_string(s->age_basis)
                                                         : json_null());
        json_object_set_new(o, "waiting", json_boolean(s->waiting));
        json_object_set_new(o, "deferred", json_boolean(s->deferred));
        json_array_append_new(a, o);
    }
    return a;
}

void hbm_clean_opts_policy(hbm_clean_opts *o)
{
    if (!o->only)
        o->only = HBM_CLEAN_POLICY_ONLY;
    if (o->min_age_s < 0)
        o->min_age_s = HBM_CLEAN_POLICY_MIN_AGE;
    if (o->max_actions < 0)
        o->max_actions = HBM_CLEAN_POLICY_MAX_ACTIONS;
}

hbm_clean_counts hbm_clean_plan_counts(const hbm_clean_plan *p)
{
    hbm_clean_counts c = {0};
    for (size_t i = 0; i < p->n; i++) {
        const hbm_clean_step *s = &p->steps[i];
        c.allowed += s->allowed;
        c.waiting += s->waiting;
        c.deferred += s->deferred;
    }
    c.kept = p->n - c.allowed - c.waiting - c.deferred;
    return c;
}

json_t *hbm_clean_json(const hbm_obs *obs, const hbm_clean_plan *plan, bool dry_run,
                       json_t *released, const char *audit)
{
    json_t *j = json_object();
    json_object_set_new(j, "dry_run", json_boolean(dry_run));
    /* backend "none" says the device checks were skipped */
    json_object_set_new(j, "backend", json_string(obs->backend));
    json_object_set_new(j, "backend_why",
                        obs->backend_why[0] ? json_string(obs->backend_why) : json_null());
    json_object_set_new(j, "steps", hbm_clean_steps_json(plan));
    if (audit) {
        json_object_set_new(j, "released", released ? released : json_null());
        json_object_set_new(j, "audit_log", json_string(audit));
    }
    return j;
}
