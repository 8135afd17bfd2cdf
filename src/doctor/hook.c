/* The OCI poststop hook's work (include/hbm/hook.h, docs/hook.md): the runtime's state, the
 * bundle's devices, the leftovers that held them and the proof that each was the
 * container's; the kill itself is clean's (hbm_clean_plan_make, hbm_clean_apply). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "doctor/doctor_int.h"
#include "hbm/hook.h"
#include "hbm/host.h"
#include "hbm/util.h"

#define STATE_MAX (1u << 20)
#define CONFIG_MAX (4u << 20)

static int read_all(int fd, double timeout_s, char **out, size_t *len, hbm_err *err)
{
    size_t cap = 4096, n = 0;
    char *buf = hbm_xmalloc(cap);
    double until = hbm_now_mono() + timeout_s;
    for (;;) {
        double left = until - hbm_now_mono();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(buf);
            return r == 0 ? hbm_err_set(err, "no end of the state on stdin within %.1fs",
                                        timeout_s)
                          : hbm_err_set(err, "stdin: %s", strerror(errno));
        }
        if (n + 4096 > cap)
            buf = hbm_xrealloc(buf, cap *= 2);
        ssize_t k = read(fd, buf + n, cap - n - 1);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k < 0) {
            free(buf);
            return hbm_err_set(err, "stdin: %s", strerror(errno));
        }
        if (k == 0)
            break;
        n += (size_t)k;
        if (n > STATE_MAX) {
            free(buf);
            return hbm_err_set(err, "the state on stdin is over %u bytes", STATE_MAX);
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int hbm_hook_read_state(int fd, double timeout_s, hbm_hook_state *st, hbm_err *err)
{
    memset(st, 0, sizeof *st);
    char *buf = NULL;
    size_t len = 0;
    if (read_all(fd, timeout_s, &buf, &len, err) < 0)
        return -1;
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    free(buf);
    if (!json_is_object(j)) {
        json_decref(j);
        return hbm_err_set(err, "the state on stdin is no JSON object (line %d: %s)", je.line,
                           j ? "not an object" : je.text);
    }
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *bundle = json_string_value(json_object_get(j, "bundle"));
    json_t *pid = json_object_get(j, "pid");
    int rc = 0;
    if (!id || !*id || strlen(id) >= sizeof st->id || strpbrk(id, "/\n") || id[0] == '.')
        rc = hbm_err_set(err, "the state has no usable \"id\"");
    else if (!bundle || bundle[0] != '/' || strlen(bundle) >= sizeof st->bundle)
        rc = hbm_err_set(err, "the state has no absolute \"bundle\"");
    else {
        snprintf(st->id, sizeof st->id, "%s", id);
        snprintf(st->bundle, sizeof st->bundle, "%s", bundle);
        st->pid = json_is_integer(pid) && json_integer_value(pid) > 0 &&
                  json_integer_value(pid) < (1 << 22) ? (int)json_integer_value(pid) : 0;
    }
    json_decref(j);
    return rc;
}

static bool accelerator_path(const char *path)
{
    const char *const *pat = hbm_host_patterns_from_env();
    for (pat = pat ? pat : hbm_host_default_dev_patterns; *pat; pat++)
        if (fnmatch(*pat, path, 0) == 0)
            return true;
    return false;
}

static void add_device(hbm_hook_container *c, json_t *d)
{
    const char *path = json_string_value(json_object_get(d, "path"));
    const char *type = json_string_value(json_object_get(d, "type"));
    json_t *maj = json_object_get(d, "major"), *min = json_object_get(d, "minor");
    if (!path || strlen(path) >= sizeof c->devs->path || !accelerator_path(path) || !type ||
        (strcmp(type, "c") && strcmp(type, "b")) || !json_is_integer(maj) ||
        !json_is_integer(min))
        return;
    c->devs = hbm_xrealloc(c->devs, (c->ndevs + 1) * sizeof *c->devs);
    hbm_hook_device *x = &c->devs[c->ndevs++];
    snprintf(x->path, sizeof x->path, "%s", path);
    x->type = type[0];
    x->major = json_integer_value(maj);
    x->minor = json_integer_value(min);
}

int hbm_hook_container_read(const hbm_hook_state *st, hbm_hook_container *c, hbm_err *err)
{
    memset(c, 0, sizeof *c);
    c->state = *st;
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", st->bundle);
    char *buf;
    size_t len;
    if (hbm_read_file(path, CONFIG_MAX, &buf, &len, err) < 0)
        return -1;
    struct stat sb;
    if (stat(path, &sb) == 0)
        c->since = (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec / 1e9;
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    free(buf);
    if (!j)
        return hbm_err_set(err, "%s:%d: %s", path, je.line, je.text);
    const char *root = json_string_value(json_object_get(json_object_get(j, "root"), "path"));
    char rp[4400];
    struct stat rs;
    if (root && *root) {
        snprintf(rp, sizeof rp, "%s%s%s", root[0] == '/' ? "" : st->bundle,
                 root[0] == '/' ? "" : "/", root);
        if (stat(rp, &rs) == 0 && S_ISDIR(rs.st_mode)) {
            c->root_dev = rs.st_dev;
            c->root_ino = rs.st_ino;
        }
    }
    json_t *devs = json_object_get(json_object_get(j, "linux"), "devices");
    for (size_t i = 0; i < json_array_size(devs); i++)
        add_device(c, json_array_get(devs, i));
    json_decref(j);
    return 0;
}

void hbm_hook_container_free(hbm_hook_container *c)
{
    free(c->devs);
    memset(c, 0, sizeof *c);
}

int hbm_hook_observe(hbm_obs *obs, hbm_err *err)
{
    hbm_obs_init(obs);
    snprintf(obs->backend, sizeof obs->backend, "none");
    snprintf(obs->backend_why, sizeof obs->backend_why,
             "the hook reads the host only: a container stop never waits on a driver");
    obs->captured_at = (double)time(NULL);
    hbm_host_opts ho = {0};
    if (hbm_host_scan(&obs->host, &ho, err) < 0)
        return -1;
    obs->has_host = true;
    return 0;
}

/* The container's device pid holds open, by the path the container saw and the device
 * number: another file of that name is no device of this container. */
static const hbm_hook_device *holds_device(int pid, const hbm_hook_container *c)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    const hbm_hook_device *hit = NULL;
    struct dirent *e;
    while (!hit && (e = readdir(d))) {
        char p[384], target[300];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(p, target, sizeof target - 1);
        struct stat sb;
        if (n <= 0 || stat(p, &sb) < 0)
            continue;
        target[n] = '\0';
        for (size_t i = 0; i < c->ndevs && !hit; i++) {
            const hbm_hook_device *x = &c->devs[i];
            bool kind = x->type == 'c' ? S_ISCHR(sb.st_mode) : S_ISBLK(sb.st_mode);
            if (kind && !strcmp(target, x->path) && major(sb.st_rdev) == x->major &&
                minor(sb.st_rdev) == x->minor)
                hit = x;
        }
    }
    closedir(d);
    return hit;
}

static bool same_file(const char *path, dev_t dev, ino_t ino)
{
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_dev == dev && sb.st_ino == ino;
}

/* Whether a process outside every container's cgroup is this container's: its root
 * directory is the container's root file system (mounted until the runtime's clean-up, after
 * the hook), it is not in the hook's mount namespace (the host's: a host process that
 * chrooted there is not the container's), and it started after the config was written. */
static bool escaped_proof(const hbm_obs *obs, const hbm_hook_container *c, const hbm_hproc *hp,
                          char *why, size_t n)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/root", hp->pid);
    struct stat self;
    char ns[64];
    snprintf(ns, sizeof ns, "/proc/%d/ns/mnt", hp->pid);
    if (!c->root_ino || !same_file(p, c->root_dev, c->root_ino)) {
        snprintf(why, n, "in no container's cgroup and its root is not this container's root "
                 "file system%s: kept", c->root_ino ? "" : " (not mounted now)");
        return false;
    }
    if (stat("/proc/self/ns/mnt", &self) < 0 || same_file(ns, self.st_dev, self.st_ino)) {
        snprintf(why, n, "in the host's mount namespace (or it cannot be read): kept");
        return false;
    }
    double tck = obs->host.clk_tck > 0 ? (double)obs->host.clk_tck : 100.0;
    double started = obs->host.boot_time + (double)hp->starttime / tck;
    /* btime has whole seconds: one second of slack. */
    if (obs->host.boot_time <= 0 || c->since <= 0 || started < c->since - 1.0) {
        snprintf(why, n, "it started before the container's config.json was written: kept");
        return false;
    }
    snprintf(why, n, "left the container's cgroups; its root is the container's root file "
             "system and it started after the container was created");
    return true;
}

static void judge(const hbm_obs *obs, const hbm_hook_container *c, const hbm_hproc *hp,
                  hbm_hook_target *t)
{
    size_t n = sizeof t->why;
    if (hp->state == 'D') {
        snprintf(t->why, n, "stuck in the kernel (state D%s%s): no signal ends it, left for a "
                 "person", hp->wchan[0] ? ", in " : "", hp->wchan);
    } else if (hp->container_id[0] && !strcmp(hp->container_id, c->state.id)) {
        t->proven = true;
        snprintf(t->why, n, "its cgroup names the container");
    } else if (hp->container_id[0]) {
        snprintf(t->why, n, "its cgroup names container %.12s%s, not this one: kept",
                 hp->container_id, hbm_host_container_gone(hp) ? " (gone)" : "");
    } else {
        t->proven = escaped_proof(obs, c, hp, t->why, n);
    }
}

void hbm_hook_plan_make(const hbm_obs *obs, const hbm_hook_container *c,
                        const hbm_clean_opts *o, hbm_hook_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    int *named = hbm_xcalloc(obs->host.nprocs + 1, sizeof *named);
    size_t nnamed = 0;
    for (size_t i = 0; i < obs->host.nprocs; i++) {
        const hbm_hproc *hp = &obs->host.procs[i];
        if (hp->state == 'Z' || hp->ndev_paths == 0)
            continue;
        const hbm_hook_device *dev = holds_device(hp->pid, c);
        if (!dev)
            continue;
        plan->targets = hbm_xrealloc(plan->targets, (plan->n + 1) * sizeof *plan->targets);
        hbm_hook_target *t = &plan->targets[plan->n++];
        memset(t, 0, sizeof *t);
        t->pid = hp->pid;
        t->starttime = hp->starttime;
        snprintf(t->comm, sizeof t->comm, "%s", hp->comm);
        snprintf(t->device, sizeof t->device, "%s", dev->path);
        judge(obs, c, hp, t);
        if (t->proven)
            named[nnamed++] = hp->pid;
    }
    hbm_clean_opts co = *o;
    co.named_pids = named;
    co.nnamed = nnamed;
    co.only = NULL;
    hbm_findings none = {0};
    hbm_clean_plan_make(obs, &none, &co, &plan->clean);
    for (size_t i = 0; i < plan->clean.n; i++)
        snprintf(plan->clean.steps[i].finding_id, sizeof plan->clean.steps[i].finding_id,
                 "container-outlived");
    free(named);
}

void hbm_hook_plan_free(hbm_hook_plan *plan)
{
    free(plan->targets);
    hbm_clean_plan_free(&plan->clean);
    memset(plan, 0, sizeof *plan);
}

int hbm_hook_apply(hbm_hook_plan *plan, const hbm_hook_container *c, const hbm_clean_opts *o,
                   hbm_err *err)
{
    const char *audit = hbm_audit_path(o->audit_path);
    for (size_t i = 0; i < plan->n; i++) {
        const hbm_hook_target *t = &plan->targets[i];
        if (t->proven)
            continue;
        json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s, s:s}", "event",
                              "hook", "command", o->command ? o->command : "hbmctl hook",
                              "container", c->state.id, "action", "kill", "pid", t->pid,
                              "starttime", (json_int_t)t->starttime, "comm", t->comm,
                              "device", t->device, "outcome", "kept", "detail", t->why);
        int rc = hbm_audit_append(audit, r, err);
        json_decref(r);
        if (rc < 0)
            return -1;
    }
    if (plan->clean.n == 0)
        return 0;
    hbm_clean_opts co = *o;
    co.named_pids = NULL;
    co.nnamed = 0;
    return hbm_clean_apply(&plan->clean, &co, err);
}

const hbm_clean_step *hbm_hook_step_of(const hbm_hook_plan *plan, int pid)
{
    for (size_t k = 0; k < plan->clean.n; k++)
        if (plan->clean.steps[k].action.pid == pid)
            return &plan->clean.steps[k];
    return NULL;
}

void hbm_hook_audit_error(const hbm_clean_opts *o, const char *container, const char *detail)
{
    json_t *r = json_pack("{s:s, s:s, s:s, s:s}", "event", "hook-error", "command", o->command,
                          "container", container, "detail", detail);
    hbm_audit_append(hbm_audit_path(o->audit_path), r, NULL);
    json_decref(r);
}
