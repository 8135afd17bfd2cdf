/* Kubernetes pod of a process, from the node alone: the kubelet's container runtime keeps
 * the pod's names beside each container (containerd's task bundle, CRI-O's container
 * config, cri-dockerd's docker labels), and the kubelet's pod log directory names the pod
 * after the container is gone. Never the API server: hbmctl must work on a cut-off node. */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbm/procfs.h"
#include "hbm/util.h"
#include "host/hostint.h"

/* Kubernetes names are DNS labels or subdomains: anything else did not come from it. */
static bool k8s_name_ok(const char *s, size_t n, size_t max)
{
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return false;
    }
    return true;
}

static bool uid_ok(const char *s, size_t n)
{
    if (n == 0 || n > 39)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'f') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* An image reference (registry/name:tag@sha256:digest): its grammar's characters only. */
static bool image_ok(const char *s, size_t n, size_t max)
{
    return n > 0 && n <= max &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:/@+") == n;
}

enum take_kind { TAKE_NAME, TAKE_UID, TAKE_IMAGE };

static bool take(const json_t *o, const char *key, char *dst, size_t cap, enum take_kind kind)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v)
        return false;
    size_t n = strlen(v);
    bool ok = kind == TAKE_UID     ? uid_ok(v, n)
              : kind == TAKE_IMAGE ? image_ok(v, n, cap - 1)
                                   : k8s_name_ok(v, n, cap - 1);
    if (!ok)
        return false;
    memcpy(dst, v, n + 1);
    return true;
}

/* The key families of the three runtimes: containerd's CRI plugin, then the dockershim
 * names that CRI-O and cri-dockerd kept (the image under CRI-O's own key; cri-dockerd's is in
 * Docker's record, read for every Docker container). */
static const struct {
    const char *ns, *name, *uid, *container, *image;
} families[] = {
    {"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
     "io.kubernetes.cri.sandbox-uid", "io.kubernetes.cri.container-name",
     "io.kubernetes.cri.image-name"},
    {"io.kubernetes.pod.namespace", "io.kubernetes.pod.name", "io.kubernetes.pod.uid",
     "io.kubernetes.container.name", "io.kubernetes.cri-o.ImageName"},
};

int hbm_procfs_parse_pod_config(const char *buf, size_t len, hbm_pod *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return hbm_err_set(err, "line %d, column %d: %s", je.line, je.column, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return hbm_err_set(err, "line 1: not a JSON object");
    }
    const json_t *ann = json_object_get(root, "annotations");
    if (!json_is_object(ann))
        ann = json_object_get(json_object_get(root, "Config"), "Labels");
    for (size_t f = 0; json_is_object(ann) && f < sizeof families / sizeof families[0]; f++) {
        hbm_pod p;
        memset(&p, 0, sizeof p);
        if (!take(ann, families[f].ns, p.ns, sizeof p.ns, TAKE_NAME) ||
            !take(ann, families[f].name, p.name, sizeof p.name, TAKE_NAME))
            continue;
        take(ann, families[f].uid, p.uid, sizeof p.uid, TAKE_UID);
        take(ann, families[f].container, p.container, sizeof p.container, TAKE_NAME);
        take(ann, families[f].image, p.image, sizeof p.image, TAKE_IMAGE);
        *out = p;
        break;
    }
    json_decref(root);
    return 0;
}

int hbm_procfs_parse_pod_logdir(const char *name, size_t len, hbm_pod *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    /* Neither a namespace nor a pod name may hold '_', so the two separators are exact. */
    const char *a = memchr(name, '_', len);
    const char *b = a ? memchr(a + 1, '_', (size_t)(name + len - a - 1)) : NULL;
    if (!b || !k8s_name_ok(name, (size_t)(a - name), sizeof out->ns - 1) ||
        !k8s_name_ok(a + 1, (size_t)(b - a - 1), sizeof out->name - 1) ||
        !uid_ok(b + 1, (size_t)(name + len - b - 1))) {
        memset(out, 0, sizeof *out);
        return hbm_err_set(err, "'%.*s' is not <namespace>_<pod>_<uid>",
                           (int)(len > 200 ? 200 : len), name);
    }
    memcpy(out->ns, name, (size_t)(a - name));
    memcpy(out->name, a + 1, (size_t)(b - a - 1));
    memcpy(out->uid, b + 1, (size_t)(name + len - b - 1));
    return 0;
}

/* Runtime state of one container id, in the order a node most likely runs them, below the
 * runtime's state root (none: an absolute path). */
static const struct {
    int root; /* an hbm_runtime_root, or -1 */
    const char *dir, *file;
} config_paths[] = {
    {-1, "/run/containerd/io.containerd.runtime.v2.task/k8s.io/", "/config.json"},
    {HBM_RT_STORAGE_RUN, "/overlay-containers/", "/userdata/config.json"},
    {HBM_RT_STORAGE, "/overlay-containers/", "/userdata/config.json"},
    {HBM_RT_DOCKER, "/containers/", "/config.v2.json"},
};

static bool from_runtime(const char *root, const char *cid, const char *pod_uid, hbm_pod *out)
{
    for (size_t i = 0; i < sizeof config_paths / sizeof config_paths[0]; i++) {
        char full[8400], rt[4096] = "";
        if (config_paths[i].root >= 0)
            hbm_host_runtime_root(root, config_paths[i].root, rt, sizeof rt);
        snprintf(full, sizeof full, "%s%s%s%s%s", root, rt, config_paths[i].dir, cid,
                 config_paths[i].file);
        char *buf = NULL;
        size_t n = 0;
        /* An OCI config is tens of KiB; a larger file is not one. The runtime's state
         * directory is not ours: a FIFO or device there is refused unread. */
        if (hbm_read_file_at(AT_FDCWD, full, 0, 1 << 22, &buf, &n, NULL) < 0)
            continue;
        hbm_pod p;
        bool ok = n > 0 && hbm_procfs_parse_pod_config(buf, (size_t)n, &p, NULL) == 0 &&
                  p.name[0] && (!pod_uid[0] || !p.uid[0] || !strcmp(p.uid, pod_uid));
        free(buf);
        if (ok) {
            if (!p.uid[0])
                snprintf(p.uid, sizeof p.uid, "%s", pod_uid);
            *out = p;
            return true;
        }
    }
    return false;
}

/* The one container directory of a pod's log directory; "" when there are several (which
 * one ran the process the logs do not say) or none. */
static void only_container(DIR *d, hbm_pod *p)
{
    int n = 0;
    struct dirent *e;
    char one[sizeof p->container] = "";
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        size_t l = strlen(e->d_name);
        if (!k8s_name_ok(e->d_name, l, sizeof one - 1))
            continue;
        n++;
        memcpy(one, e->d_name, l + 1);
    }
    if (n == 1)
        memcpy(p->container, one, sizeof one);
}

static bool from_pod_logs(const char *root, const char *pod_uid, hbm_pod *out)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/var/log/pods", root);
    DIR *d = hbm_hio_opendir(AT_FDCWD, dir);
    if (!d)
        return false;
    struct dirent *e;
    bool found = false;
    size_t ul = strlen(pod_uid);
    while (!found && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        hbm_pod p;
        if (l <= ul + 1 || e->d_name[l - ul - 1] != '_' || strcmp(e->d_name + l - ul, pod_uid) ||
            hbm_procfs_parse_pod_logdir(e->d_name, l, &p, NULL) < 0)
            continue;
        DIR *c = hbm_hio_opendir(dirfd(d), e->d_name);
        if (c) {
            only_container(c, &p);
            closedir(c);
        }
        *out = p;
        found = true;
    }
    closedir(d);
    return found;
}

/* HOSTNAME=H in an OCI config's process environment, else NULL. */
static const char *env_hostname(const json_t *cfg)
{
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(json_object_get(cfg, "process"), "env"), i, v)
    {
        const char *e = json_string_value(v);
        if (e && !strncmp(e, "HOSTNAME=", 9))
            return e + 9;
    }
    return NULL;
}

void hbm_host_libpod_pod(const char *root, const char *container_id, const char *name,
                         hbm_pod *out)
{
    bool cid_ok = strlen(container_id) == 64 && strspn(container_id, "0123456789abcdef") == 64;
    if (!cid_ok || !name[0])
        return;
    char full[8400], rt[4096];
    hbm_host_runtime_root(root, HBM_RT_STORAGE, rt, sizeof rt);
    snprintf(full, sizeof full, "%s%s/overlay-containers/%s/userdata/config.json", root, rt,
             container_id);
    char *buf = NULL;
    size_t n = 0;
    if (hbm_read_file_at(AT_FDCWD, full, 0, 1 << 22, &buf, &n, NULL) < 0)
        return;
    json_t *cfg = json_loadb(buf, n, 0, NULL);
    free(buf);
    const json_t *ann = json_object_get(cfg, "annotations");
    const char *mgr = json_string_value(json_object_get(ann, "io.container.manager"));
    const char *pod = env_hostname(cfg);
    size_t pl = pod ? strlen(pod) : 0;
    /* A pod member (its sandbox is the pod's infra container) named <pod>-<container>. */
    if (mgr && !strcmp(mgr, "libpod") &&
        json_is_string(json_object_get(ann, "io.kubernetes.cri-o.SandboxID")) &&
        k8s_name_ok(pod, pl, sizeof out->name - 1) && !strncmp(name, pod, pl) &&
        name[pl] == '-' && k8s_name_ok(name + pl + 1, strlen(name + pl + 1),
                                      sizeof out->container - 1)) {
        memset(out, 0, sizeof *out);
        memcpy(out->name, pod, pl + 1);
        snprintf(out->container, sizeof out->container, "%s", name + pl + 1);
    }
    json_decref(cfg);
}

void hbm_host_pod_lookup(const char *root, const char *container_id, const char *pod_uid,
                         hbm_pod *out)
{
    memset(out, 0, sizeof *out);
    root = root ? root : "";
    container_id = container_id ? container_id : "";
    pod_uid = pod_uid ? pod_uid : "";
    /* A container id is 64 hex digits: nothing else goes into a path. */
    bool cid_ok = strlen(container_id) == 64 && strspn(container_id, "0123456789abcdef") == 64;
    if (cid_ok && from_runtime(root, container_id, pod_uid, out))
        return;
    if (pod_uid[0] && uid_ok(pod_uid, strlen(pod_uid)))
        from_pod_logs(root, pod_uid, out);
}
