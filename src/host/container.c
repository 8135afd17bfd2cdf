/* Container state from the runtimes' own records (docs/host-facts.md): a cgroup directory
 * outlives its container while any task is in it (v1 hierarchies keep /docker/<id> after
 * `docker rm -f`), so only the runtime can say the container is gone. Every read is bounded:
 * directory opens and one small freezer file per process. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbm/procfs.h"
#include "hbm/redact.h"
#include "host/hostint.h"

/* Which runtime's records a path belongs to. */
enum { RT_DOCKER = 1, RT_CONTAINERD = 2, RT_STORAGE = 4 /* CRI-O and podman share it */ };

/* Each runtime's state root: where the operator moved it, named in hbmctl's environment,
 * else in the runtime's own configuration (dockerd's daemon.json "data-root", or "graph"
 * before Docker 17.05; containers-storage's storage.conf graphroot and runroot), else its
 * default. A wrong default is not harmless: a record store that exists but is not the
 * daemon's own would call every running container gone. */
static const struct {
    const char *env, *conf, *key, *old_key, *def;
} roots[] = {
    [HBM_RT_DOCKER] = {"HBMCTL_DOCKER_ROOT", "/etc/docker/daemon.json", "data-root", "graph",
                       "/var/lib/docker"},
    [HBM_RT_STORAGE] = {"HBMCTL_STORAGE_ROOT", "/etc/containers/storage.conf", "graphroot", NULL,
                        "/var/lib/containers/storage"},
    [HBM_RT_STORAGE_RUN] = {"HBMCTL_STORAGE_RUNROOT", "/etc/containers/storage.conf", "runroot",
                            NULL, "/run/containers/storage"},
};

/* `key = "value"` at the start of a line of a TOML file (storage.conf's [storage] keys are
 * named nowhere else), into out. */
static bool toml_string(const char *text, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        l += strspn(l, " \t");
        if (strncmp(l, key, kl))
            continue;
        const char *v = l + kl + strspn(l + kl, " \t");
        if (*v != '=')
            continue;
        v += 1 + strspn(v + 1, " \t");
        const char *e = *v == '"' ? strchr(v + 1, '"') : NULL;
        if (!e || memchr(v, '\n', (size_t)(e - v)))
            return false;
        snprintf(out, n, "%.*s", (int)(e - v - 1), v + 1);
        return true;
    }
    return false;
}

void hbm_host_runtime_root(const char *root, hbm_runtime_root which, char *out, size_t n)
{
    const char *v = getenv(roots[which].env);
    if (v && v[0] == '/') {
        snprintf(out, n, "%s", v);
        return;
    }
    char path[4200];
    size_t len;
    snprintf(path, sizeof path, "%s%s", root, roots[which].conf);
    char *buf = hbm_hio_slurp(AT_FDCWD, path, 1 << 20, &len);
    out[0] = '\0';
    if (buf && which == HBM_RT_DOCKER) {
        json_t *j = json_loadb(buf, len, 0, NULL);
        const char *d = json_string_value(json_object_get(j, roots[which].key));
        if (!d)
            d = json_string_value(json_object_get(j, roots[which].old_key));
        if (d)
            snprintf(out, n, "%s", d);
        json_decref(j);
    } else if (buf) {
        toml_string(buf, roots[which].key, out, n);
    }
    free(buf);
    if (out[0] != '/')
        snprintf(out, n, "%s", roots[which].def);
}

/* Where each runtime keeps one directory per container it knows (stopped ones included for
 * Docker and containers/storage; running tasks for containerd, in any namespace), below
 * its state root (none: an absolute path). */
static const struct {
    int rt;
    int root; /* an hbm_runtime_root, or -1 */
    const char *dir;
    bool per_namespace;
} stores[] = {
    {RT_DOCKER, HBM_RT_DOCKER, "/containers", false},
    {RT_CONTAINERD, -1, "/run/containerd/io.containerd.runtime.v2.task", true},
    {RT_STORAGE, HBM_RT_STORAGE, "/overlay-containers", false},
    {RT_STORAGE, HBM_RT_STORAGE_RUN, "/overlay-containers", false},
};

static bool dir_has(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* True when store dfd knows id; for containerd, below any namespace directory. */
static bool store_knows(int dfd, bool per_namespace, const char *id)
{
    if (!per_namespace)
        return dir_has(dfd, id);
    DIR *d = hbm_hio_opendir(dfd, ".");
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    char rel[600];
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(rel, sizeof rel, "%.255s/%s", e->d_name, id);
        found = dir_has(dfd, rel);
    }
    closedir(d);
    return found;
}

/* The runtimes whose records must be readable before a missing id means "gone": the one
 * the cgroup names (a Kubernetes cgroupfs path may be containerd's or CRI-O's). */
static int needed_for(const char *runtime)
{
    if (!strcmp(runtime, "docker"))
        return RT_DOCKER;
    if (!strcmp(runtime, "containerd"))
        return RT_CONTAINERD;
    if (!strcmp(runtime, "cri-o") || !strcmp(runtime, "podman"))
        return RT_STORAGE;
    if (!strcmp(runtime, "kubepods"))
        return RT_CONTAINERD | RT_STORAGE;
    return RT_DOCKER | RT_CONTAINERD | RT_STORAGE;
}

/* Paused: freezer v1 "FROZEN", or v2 cgroup.freeze 1 / cgroup.events "frozen 1". */
static bool frozen(const char *root, const char *cg2, const hbm_cgroup_info *ci)
{
    char path[4096], buf[256];
    if (ci->freezer_path) {
        snprintf(path, sizeof path, "%s/sys/fs/cgroup/freezer%s/freezer.state", root,
                 ci->freezer_path);
        if (hbm_hio_read(AT_FDCWD, path, buf, sizeof buf) > 0 && !strncmp(buf, "FROZEN", 6))
            return true;
    }
    if (!cg2[0] || !ci->v2_path)
        return false;
    snprintf(path, sizeof path, "%s%s/cgroup.freeze", cg2, ci->v2_path);
    if (hbm_hio_read(AT_FDCWD, path, buf, sizeof buf) > 0 && buf[0] == '1')
        return true;
    snprintf(path, sizeof path, "%s%s/cgroup.events", cg2, ci->v2_path);
    return hbm_hio_read(AT_FDCWD, path, buf, sizeof buf) > 0 &&
           (!strncmp(buf, "frozen 1", 8) || strstr(buf, "\nfrozen 1"));
}

static void set_names(hbm_hproc *out, const char *name, const char *image)
{
    if (name)
        snprintf(out->container_name, sizeof out->container_name, "%s", name);
    if (image)
        snprintf(out->container_image, sizeof out->container_image, "%s", image);
}

/* Docker's name ("Name": "/vllm", without the '/') and image ("Config.Image") of a
 * container it knows, from its config.v2.json (tens of KiB; a larger file is not one). */
static void docker_names(int dfd, const char *id, hbm_hproc *out)
{
    char rel[128];
    size_t len;
    snprintf(rel, sizeof rel, "%s/config.v2.json", id);
    char *buf = hbm_hio_slurp(dfd, rel, 1 << 22, &len);
    json_t *j = buf ? json_loadb(buf, len, 0, NULL) : NULL;
    free(buf);
    const char *name = json_string_value(json_object_get(j, "Name"));
    set_names(out, name && name[0] == '/' ? name + 1 : name,
              json_string_value(json_object_get(json_object_get(j, "Config"), "Image")));
    json_decref(j);
}

/* containers-storage's list of its containers (containers.json, beside their directories;
 * CRI-O's and podman's): the first of "names" and the "image-name" of the JSON text in
 * "metadata". A few hundred bytes per container: 16 MiB is tens of thousands. */
static void storage_names(int dfd, const char *id, hbm_hproc *out)
{
    size_t len, i;
    char *buf = hbm_hio_slurp(dfd, "containers.json", 1 << 24, &len);
    json_t *j = buf ? json_loadb(buf, len, 0, NULL) : NULL, *c;
    free(buf);
    json_array_foreach(j, i, c)
    {
        const char *cid = json_string_value(json_object_get(c, "id"));
        if (!cid || strcmp(cid, id))
            continue;
        const char *meta = json_string_value(json_object_get(c, "metadata"));
        json_t *m = meta ? json_loads(meta, 0, NULL) : NULL;
        set_names(out, json_string_value(json_array_get(json_object_get(c, "names"), 0)),
                  json_string_value(json_object_get(m, "image-name")));
        json_decref(m);
        break;
    }
    json_decref(j);
}

void hbm_host_container_state(const char *root, const char *cg2, const hbm_cgroup_info *ci,
                              hbm_hproc *out)
{
    char *state = out->container_state;
    size_t n = sizeof out->container_state;
    state[0] = '\0';
    if (!ci->container_id[0])
        return;
    int readable = 0;
    bool known = false;
    for (size_t i = 0; i < sizeof stores / sizeof stores[0] && !known; i++) {
        char dir[4200], rt[4096] = "";
        if (stores[i].root >= 0)
            hbm_host_runtime_root(root, stores[i].root, rt, sizeof rt);
        snprintf(dir, sizeof dir, "%s%s", rt, stores[i].dir);
        int dfd = hbm_hio_open(root, dir, O_RDONLY | O_DIRECTORY);
        if (dfd < 0)
            continue;
        readable |= stores[i].rt;
        known = store_knows(dfd, stores[i].per_namespace, ci->container_id);
        if (known && stores[i].rt == RT_DOCKER)
            docker_names(dfd, ci->container_id, out);
        else if (known && stores[i].rt == RT_STORAGE)
            storage_names(dfd, ci->container_id, out);
        close(dfd);
    }
    /* A frozen cgroup is a kernel fact: paused even where no runtime record is readable. */
    const char *s = "unknown";
    if (frozen(root, cg2, ci))
        s = "paused";
    else if (known)
        s = "running";
    else if (readable & needed_for(ci->runtime))
        s = "gone";
    snprintf(state, n, "%s", s);
}

void hbm_host_container_parent(const char *root, hbm_hproc *out)
{
    out->parent_container_init = false;
    out->parent_comm[0] = '\0';
    if (!out->container_id[0] || out->ppid <= 1)
        return;
    char path[4200], buf[4096];
    snprintf(path, sizeof path, "%s/proc/%d/status", root, out->ppid);
    ssize_t n = hbm_hio_read(AT_FDCWD, path, buf, sizeof buf);
    hbm_pstatus ss;
    if (n <= 0 || hbm_procfs_parse_status(buf, (size_t)n, &ss, NULL) < 0)
        return;
    /* NSpid lists the pid from the host's namespace inwards: PID 1 of the innermost one,
     * seen from an outer one (not hbmctl's own init seen from inside). */
    out->parent_container_init = ss.nnspid > 1 && ss.nspid[ss.nnspid - 1] == 1;
    char *comm = hbm_redact_text(ss.name, strlen(ss.name));
    snprintf(out->parent_comm, sizeof out->parent_comm, "%s", comm);
    free(comm);
}

bool hbm_host_container_gone(const hbm_hproc *p)
{
    if (!strcmp(p->container_state, "gone"))
        return true;
    bool known = !strcmp(p->container_state, "running") || !strcmp(p->container_state, "paused");
    return !known && p->cgroup_gone;
}
