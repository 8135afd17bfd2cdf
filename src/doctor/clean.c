/* clean: the plan (findings' actions filtered by the safety rules) and its execution, with
 * every object checked again right before it is touched, and every outcome audited. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "doctor/doctor_int.h"
#include "hbm/host.h"
#include "hbm/util.h"
#include "hbm/verdict.h"

static bool named(const hbm_clean_opts *o, int pid)
{
    for (size_t i = 0; i < o->nnamed; i++)
        if (o->named_pids[i] == pid)
            return true;
    return false;
}

static hbm_clean_step *add_step(hbm_clean_plan *p)
{
    hbm_grow((void **)&p->steps, &p->cap, p->n, sizeof *p->steps);
    hbm_clean_step *s = &p->steps[p->n++];
    memset(s, 0, sizeof *s);
    s->allowed = true;
    s->age_s = NAN;
    return s;
}

static bool planned_kill(const hbm_clean_plan *p, int pid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->steps[i].action.kind == HBM_ACT_KILL && p->steps[i].action.pid == pid)
            return true;
    return false;
}

/* A server's worker left by its dead server to its running container's init
 * (engine-orphan): the container is not its owner any more, so no --pid is needed. */
static bool left_by_server(const hbm_obs *obs, const hbm_hproc *hp)
{
    char why[256];
    return !strcmp(hp->container_state, "running") &&
           hbm_verdict_process_state(&obs->host, hp, why, sizeof why) == HBM_PID_ABANDONED;
}

/* The safety rules for signals (docs/doctor.md). */
static void judge_kill(const hbm_obs *obs, const hbm_clean_opts *o, hbm_clean_step *s)
{
    int pid = s->action.pid;
    const hbm_hproc *hp = doc_find_proc(obs, pid);
    if (pid <= 1) {
        s->allowed = false;
        snprintf(s->why, sizeof s->why, "pid %d is init: never signalled", pid);
    } else if (hbm_host_is_self_or_ancestor(pid)) {
        s->allowed = false;
        snprintf(s->why, sizeof s->why, "pid %d is hbmctl itself or one of its ancestors", pid);
    } else if (hp && hp->state == 'D') {
        /* A signal waits until the kernel call returns; sending one proves nothing. */
        s->allowed = false;
        snprintf(s->why, sizeof s->why, "pid %d is stuck in the kernel (state D%s%s): a signal "
                 "does nothing until the call returns; never signalled", pid,
                 hp->wchan[0] ? ", in " : "", hp->wchan);
    } else if (hp && hp->container_id[0] && !hbm_host_container_gone(hp) && !named(o, pid) &&
               !left_by_server(obs, hp)) {
        s->allowed = false;
        bool unknown = !strcmp(hp->container_state, "unknown");
        snprintf(s->why, sizeof s->why,
                 "pid %d runs in container %.12s, %s: name it with --pid %d", pid,
                 hp->container_id,
                 unknown ? "whose existence no readable runtime record tells"
                         : "which still exists",
                 pid);
    } else if (hp && obs->has_host) {
        char why[200];
        if (hbm_host_device_file_proof(&obs->host, hp, why, sizeof why) == 0) {
            s->allowed = false;
            snprintf(s->why, sizeof s->why, "%s: kept", why);
        }
    }
}

/* True when the comma-separated list holds word [w, w + n). */
static bool list_has(const char *list, const char *w, size_t n)
{
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == n && !memcmp(p, w, n))
            return true;
        p += l + (p[l] == ',');
    }
    return false;
}

bool hbm_clean_only_ok(const char *list, char *bad, size_t n)
{
    bad[0] = '\0';
    for (const char *p = list;;) { /* an empty word (",," or a trailing ",") is no id */
        size_t l = strcspn(p, ",");
        bool ok = false;
        for (size_t i = 0; i < hbm_doctor_nrules() && !ok; i++) {
            const hbm_doctor_rule *r = hbm_doctor_rule_at(i);
            ok = r->action != HBM_ACT_NONE && strlen(r->id) == l && !memcmp(r->id, p, l);
        }
        if (!ok) {
            snprintf(bad, n, "%.*s", (int)(l > 60 ? 60 : l), p);
            return false;
        }
        if (!p[l])
            break;
        p += l + 1;
    }
    return true;
}

void hbm_clean_plan_make(const hbm_obs *obs, const hbm_findings *f, const hbm_clean_opts *o,
                         hbm_clean_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    for (size_t i = 0; i < f->n; i++) {
        const hbm_finding *x = &f->items[i];
        if (x->action.kind == HBM_ACT_NONE ||
            (o->only && !list_has(o->only, x->id, strlen(x->id))))
            continue;
        if (x->action.kind == HBM_ACT_KILL && planned_kill(plan, x->action.pid))
            continue; /* one process listed on several chips */
        hbm_clean_step *s = add_step(plan);
        s->action = x->action;
        snprintf(s->finding_id, sizeof s->finding_id, "%s", x->id);
        s->device = x->device;
        if (s->action.kind == HBM_ACT_KILL)
            judge_kill(obs, o, s);
    }
    for (size_t i = 0; i < o->nnamed; i++) {
        int pid = o->named_pids[i];
        if (planned_kill(plan, pid))
            continue;
        hbm_clean_step *s = add_step(plan);
        snprintf(s->finding_id, sizeof s->finding_id, "named-pid");
        s->device = HBM_UNKNOWN;
        s->action.kind = HBM_ACT_KILL;
        s->action.pid = pid;
        const hbm_hproc *hp = doc_find_proc(obs, pid);
        bool holds = false;
        for (size_t d = 0; d < obs->ndevs && !holds; d++)
            for (size_t k = 0; k < obs->devs[d].nprocs; k++)
                if (obs->devs[d].procs[k].pid == pid) {
                    holds = true;
                    s->device = hbm_device_user_id(&obs->devs[d]);
                    break;
                }
        if (hp && hp->ndev_paths > 0)
            holds = true;
        snprintf(s->action.text, sizeof s->action.text,
                 "SIGTERM pid %d (%s), SIGKILL after the grace period", pid, hp ? hp->comm : "?");
        if (!hp || !holds) {
            s->allowed = false;
            snprintf(s->why, sizeof s->why,
                     "pid %d %s", pid, hp ? "holds no accelerator device in this observation"
                                          : "is not a process hbmctl observed");
            continue;
        }
        s->action.starttime = hp->starttime;
        judge_kill(obs, o, s);
    }
}

void hbm_clean_plan_free(hbm_clean_plan *plan)
{
    free(plan->steps);
    memset(plan, 0, sizeof *plan);
}

static bool fd_holds(int pid, dev_t dev, ino_t ino, bool *unreadable)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == EACCES)
            *unreadable = true;
        return false;
    }
    bool hit = false;
    struct dirent *e;
    while (!hit && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        struct stat st;
        char p[384];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
            hit = true;
    }
    closedir(d);
    return hit;
}

static bool maps_hold(int pid, dev_t dev, ino_t ino, bool *unreadable)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == EACCES)
            *unreadable = true;
        return false;
    }
    char line[4096];
    bool hit = false;
    while (!hit && fgets(line, sizeof line, f)) {
        unsigned maj, min;
        unsigned long long inode;
        if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &inode) == 3 && inode == ino &&
            makedev(maj, min) == dev)
            hit = true;
    }
    fclose(f);
    return hit;
}

int hbm_doctor_shm_unheld_now(const char *path, char *why, size_t n)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        snprintf(why, n, "%s: %s", path, strerror(errno));
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, n, "%s is not a regular file", path);
        return 0;
    }
    DIR *d = opendir("/proc");
    if (!d) {
        snprintf(why, n, "cannot read /proc: %s", strerror(errno));
        return 0;
    }
    int holder = 0, unread = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        bool unreadable = false;
        if (fd_holds((int)pid, st.st_dev, st.st_ino, &unreadable) ||
            maps_hold((int)pid, st.st_dev, st.st_ino, &unreadable)) {
            holder = (int)pid;
            break;
        }
        if (unreadable && !unread)
            unread = (int)pid;
    }
    closedir(d);
    if (holder) {
        snprintf(why, n, "%s is held or mapped by pid %d now", path, holder);
        return 0;
    }
    if (unread) {
        snprintf(why, n, "cannot inspect pid %d's open files and mappings (permission denied), "
                 "so it may use %s: kept", unread, path);
        return 0;
    }
    snprintf(why, n, "%s: no process maps it or holds it open", path);
    return 1;
}

static json_t *step_record(const hbm_clean_step *s, const hbm_clean_opts *o,
                           const char *outcome)
{
    json_t *r = json_object();
    json_object_set_new(r, "event", json_string("clean"));
    json_object_set_new(r, "command", json_string(o->command ? o->command : "hbmctl clean"));
    json_object_set_new(r, "finding", json_string(s->finding_id));
    json_object_set_new(r, "action", json_string(hbm_action_kind_name(s->action.kind)));
    json_object_set_new(r, "device", s->device < 0 ? json_null() : json_integer(s->device));
    if (s->action.kind == HBM_ACT_KILL) {
        json_object_set_new(r, "pid", json_integer(s->action.pid));
        json_object_set_new(r, "starttime", json_integer((json_int_t)s->action.starttime));
    } else if (s->action.kind == HBM_ACT_SYSV_RMID) {
        char key[16];
        snprintf(key, sizeof key, "0x%08llx", (unsigned long long)(s->action.key & 0xffffffffLL));
        json_object_set_new(r, "shmid", json_integer(s->action.shmid));
        json_object_set_new(r, "key", json_string(key));
    } else {
        json_object_set_new(r, "path", json_string(s->action.path));
    }
    json_object_set_new(r, "outcome", json_string(outcome));
    json_object_set_new(r, "detail", json_string(s->result));
    return r;
}

static void term_phase(hbm_clean_step *s, bool *signalled)
{
    hbm_kill_outcome o;
    bool raced = false;
    hbm_err e = {{0}};
    *signalled = false;
    if (hbm_host_kill_checked(s->action.pid, s->action.starttime, SIGTERM, &o, &raced, &e) < 0) {
        s->failed = true;
        snprintf(s->result, sizeof s->result, "%.280s", e.msg);
        return;
    }
    if (o == HBM_KILL_GONE) {
        s->done = true;
        snprintf(s->result, sizeof s->result, "pid %d had already exited", s->action.pid);
    } else if (o == HBM_KILL_MISMATCH) {
        s->failed = true;
        snprintf(s->result, sizeof s->result,
                 "not signalled: pid %d now belongs to another process (start time differs)",
                 s->action.pid);
    } else {
        *signalled = true;
        snprintf(s->result, sizeof s->result, "SIGTERM sent to pid %d%s", s->action.pid,
                 raced ? " (kernel without pidfd: re-checked right before kill(), a small "
                         "pid-reuse window remains)" : "");
    }
}

static void kill_phase(hbm_clean_step *s)
{
    if (hbm_host_wait_exit(s->action.pid, s->action.starttime, 0) == 1) {
        s->done = true;
        size_t l = strlen(s->result);
        snprintf(s->result + l, sizeof s->result - l, "; it exited");
        return;
    }
    hbm_kill_outcome o;
    bool raced = false;
    hbm_err e = {{0}};
    size_t l = strlen(s->result);
    if (hbm_host_kill_checked(s->action.pid, s->action.starttime, SIGKILL, &o, &raced, &e) < 0) {
        s->failed = true;
        snprintf(s->result + l, sizeof s->result - l, "; SIGKILL failed: %.200s", e.msg);
        return;
    }
    if (o != HBM_KILL_SENT) {
        s->done = true;
        snprintf(s->result + l, sizeof s->result - l, "; it exited");
        return;
    }
    if (hbm_host_wait_exit(s->action.pid, s->action.starttime, 5.0) == 1) {
        s->done = true;
        snprintf(s->result + l, sizeof s->result - l, "; no exit after the grace period: "
                 "SIGKILL sent, it exited");
    } else {
        s->failed = true;
        char st = '?';
        uint64_t t;
        hbm_host_starttime(NULL, s->action.pid, &t, &st);
        snprintf(s->result + l, sizeof s->result - l,
                 "; SIGKILL sent but it is still there (state %c: stuck in the kernel)", st);
    }
}

int hbm_clean_apply(hbm_clean_plan *plan, const hbm_clean_opts *o, hbm_err *err)
{
    const char *audit = hbm_audit_path(o->audit_path);
    json_t *start = json_pack("{s:s, s:s, s:I}", "event", "clean-start", "command",
                              o->command ? o->command : "hbmctl clean", "steps",
                              (json_int_t)plan->n);
    int rc = hbm_audit_append(audit, start, err);
    json_decref(start);
    if (rc < 0)
        return -1;
    double grace = o->grace_s > 0 ? o->grace_s : 10.0;
    int bad = 0;

    /* Signals first, to every orphan at once, so the grace periods run in parallel. */
    bool *sig = hbm_xcalloc(plan->n ? plan->n : 1, sizeof *sig);
    for (size_t i = 0; i < plan->n; i++)
        if (plan->steps[i].allowed && plan->steps[i].action.kind == HBM_ACT_KILL)
            term_phase(&plan->steps[i], &sig[i]);
    double deadline = hbm_now_mono() + grace;
    for (size_t i = 0; i < plan->n; i++) {
        if (!sig[i])
            continue;
        double left = deadline - hbm_now_mono();
        hbm_host_wait_exit(plan->steps[i].action.pid, plan->steps[i].action.starttime,
                             left > 0 ? left : 0);
        kill_phase(&plan->steps[i]);
    }
    free(sig);

    for (size_t i = 0; i < plan->n; i++) {
        hbm_clean_step *s = &plan->steps[i];
        if (!s->allowed)
            continue;
        if (s->action.kind == HBM_ACT_SYSV_RMID) {
            if (hbm_host_sysv_stale_now(s->action.shmid, s->action.key, s->result,
                                          sizeof s->result) == 1) {
                if (shmctl(s->action.shmid, IPC_RMID, NULL) == 0) {
                    s->done = true;
                    size_t l = strlen(s->result);
                    snprintf(s->result + l, sizeof s->result - l, ": removed");
                } else {
                    s->failed = true;
                    snprintf(s->result, sizeof s->result, "IPC_RMID on id %d: %s",
                             s->action.shmid, strerror(errno));
                }
            } else {
                s->failed = true; /* kept: the re-check found it in use or gone */
            }
        } else if (s->action.kind == HBM_ACT_SHM_UNLINK) {
            if (hbm_doctor_shm_unheld_now(s->action.path, s->result, sizeof s->result) == 1) {
                if (unlink(s->action.path) == 0) {
                    s->done = true;
                    size_t l = strlen(s->result);
                    snprintf(s->result + l, sizeof s->result - l, ": removed");
                } else {
                    s->failed = true;
                    snprintf(s->result, sizeof s->result, "unlink %s: %s", s->action.path,
                             strerror(errno));
                }
            } else {
                s->failed = true;
            }
        }
    }

    for (size_t i = 0; i < plan->n; i++) {
        hbm_clean_step *s = &plan->steps[i];
        if (!s->allowed)
            continue;
        if (!s->done)
            bad++;
        json_t *r = step_record(s, o, s->done ? "done" : "kept");
        hbm_err e2 = {{0}};
        if (hbm_audit_append(audit, r, &e2) < 0 && rc == 0) {
            rc = -1;
            if (err)
                *err = e2;
        }
        json_decref(r);
    }
    return rc < 0 ? -1 : bad;
}

bool hbm_clean_settled(const hbm_obs *before, const hbm_obs *after, const hbm_clean_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++) {
        const hbm_clean_step *s = &plan->steps[i];
        if (!s->done || s->action.kind != HBM_ACT_KILL)
            continue;
        for (size_t d = 0; d < before->ndevs; d++) {
            const hbm_device *b = &before->devs[d];
            bool listed = false;
            for (size_t k = 0; k < b->nprocs; k++)
                listed |= b->procs[k].pid == s->action.pid;
            if (!listed)
                continue;
            for (size_t e = 0; e < after->ndevs; e++) {
                const hbm_device *a = &after->devs[e];
                if (a->vendor == b->vendor && a->index == b->index && a->chip == b->chip &&
                    a->memory_used_bytes >= b->memory_used_bytes)
                    return false;
            }
        }
    }
    return true;
}

json_t *hbm_clean_released(const hbm_obs *before, const hbm_obs *after)
{
    json_t *a = json_array();
    for (size_t i = 0; i < before->ndevs; i++) {
        const hbm_device *d = &before->devs[i];
        int64_t uid = hbm_device_user_id(d);
        const hbm_device *e = NULL;
        for (size_t j = 0; j < after->ndevs; j++)
            if (after->devs[j].index == d->index && after->devs[j].chip == d->chip &&
                after->devs[j].vendor == d->vendor)
                e = &after->devs[j];
        int64_t b = d->memory_used_bytes, n = e ? e->memory_used_bytes : HBM_UNKNOWN;
        bool known = b >= 0 && n >= 0;
        json_array_append_new(a, json_pack("{s:o, s:o, s:o, s:o}", "device",
                                           uid < 0 ? json_null() : json_integer(uid),
                                           "before_bytes", b < 0 ? json_null() : json_integer(b),
                                           "after_bytes", n < 0 ? json_null() : json_integer(n),
                                           "released_bytes",
                                           known ? json_integer(b - n) : json_null()));
    }
    return a;
}
