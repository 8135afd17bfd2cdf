/* One process's facts from /proc/PID, and the small lookups built on them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbm/procfs.h"
#include "hbm/redact.h"
#include "hbm/util.h"
#include "host/hostint.h"
#include "host/lex.h"

/* /dev/asdrv_svm is the Ascend 950 package's name for devmm_svm. */
const char *const hbm_host_default_dev_patterns[] = {
    "/dev/davinci*", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/svm*",
    "/dev/asdrv_svm", "/dev/nvidia*",  NULL,
};

const char *hbm_host_env_root(void)
{
    const char *r = getenv("HBMCTL_ROOT");
    return r ? r : "";
}

const char *const *hbm_host_patterns_from_env(void)
{
    static char *store;
    static const char **arr;
    static bool done;
    if (done)
        return arr;
    done = true;
    const char *v = getenv("HBMCTL_DEVICE_PATTERNS");
    if (!v || !*v)
        return NULL;
    store = hbm_xstrdup(v);
    size_t n = 1;
    for (const char *q = v; *q; q++)
        n += *q == ':';
    arr = hbm_xcalloc(n + 1, sizeof *arr);
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(store, ":", &save); t; t = strtok_r(NULL, ":", &save))
        arr[k++] = t;
    if (k == 0) {
        free(arr);
        free(store);
        arr = NULL;
        store = NULL;
    }
    return arr;
}

void hbm_hproc_add_dev(hbm_hproc *p, const char *path, size_t len)
{
    for (size_t i = 0; i < p->ndev_paths; i++)
        if (strlen(p->dev_paths[i]) == len && !memcmp(p->dev_paths[i], path, len))
            return;
    p->dev_paths = hbm_xrealloc(p->dev_paths, (p->ndev_paths + 1) * sizeof *p->dev_paths);
    p->dev_paths[p->ndev_paths++] = hbm_xstrndup(path, len);
}

void hbm_hproc_free(hbm_hproc *p)
{
    if (!p)
        return;
    free(p->cmdline);
    free(p->cgroup);
    for (size_t i = 0; i < p->ndev_paths; i++)
        free(p->dev_paths[i]);
    free(p->dev_paths);
    free(p->visible_devices);
    memset(p, 0, sizeof *p);
}

int hbm_hproc_live_thread(int pidfd, int pid, int *nlive)
{
    char buf[1024];
    hbm_pstat st;
    if (nlive)
        *nlive = 0;
    ssize_t n = hbm_hio_read(pidfd, "stat", buf, sizeof buf);
    if (n <= 0 || hbm_procfs_parse_stat(buf, (size_t)n, &st, NULL) < 0 || st.state != 'Z')
        return -1;
    int tdir = openat(pidfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tdir < 0)
        return -1;
    DIR *d = fdopendir(tdir);
    if (!d) {
        close(tdir);
        return -1;
    }
    int found = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int tid;
        char rel[64];
        if (!hbm_lex_int(e->d_name, strlen(e->d_name), &tid) || tid == pid)
            continue;
        snprintf(rel, sizeof rel, "%d/stat", tid);
        n = hbm_hio_read(tdir, rel, buf, sizeof buf);
        if (n <= 0 || hbm_procfs_parse_stat(buf, (size_t)n, &st, NULL) < 0 || st.state == 'Z' ||
            st.state == 'X')
            continue;
        if (nlive)
            (*nlive)++;
        if (found < 0)
            found = openat(tdir, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!nlive && found >= 0)
            break;
    }
    closedir(d);
    return found;
}

/* True when "<cg2><path>" is missing: the cgroup was removed under its last member. */
static bool cgroup_dir_gone(const char *cg2, const char *path)
{
    if (!cg2[0] || !path || !strcmp(path, "/"))
        return false;
    char full[PATH_MAX];
    if ((size_t)snprintf(full, sizeof full, "%s%s", cg2, path) >= sizeof full)
        return false;
    struct stat st;
    return stat(full, &st) < 0 && errno == ENOENT;
}

static bool vanished(int e)
{
    return e == ENOENT || e == ESRCH;
}

int hbm_hproc_read_at(int pidfd, int pid, const char *root, const char *cg2, hbm_hproc *out,
                      hbm_err *err)
{
    memset(out, 0, sizeof *out);
    char buf[8192];
    ssize_t n = hbm_hio_read(pidfd, "stat", buf, sizeof buf);
    if (n <= 0)
        return 1; /* exited between the directory listing and now */
    hbm_pstat st;
    if (hbm_procfs_parse_stat(buf, (size_t)n, &st, err) < 0)
        return hbm_err_prefix(err, "%s/proc/%d/stat", root, pid);
    out->pid = pid;
    out->ppid = st.ppid;
    out->state = st.state;
    out->starttime = st.starttime;
    char *comm = hbm_redact_text(st.comm, strlen(st.comm)); /* prctl can name it anything */
    snprintf(out->comm, sizeof out->comm, "%s", comm);
    free(comm);
    out->uid = -1;
    if (st.state == 'Z') {
        int tfd = hbm_hproc_live_thread(pidfd, pid, &out->zombie_live_threads);
        if (tfd >= 0)
            close(tfd);
    }

    n = hbm_hio_read(pidfd, "status", buf, sizeof buf);
    if (n > 0) {
        hbm_pstatus ss;
        if (hbm_procfs_parse_status(buf, (size_t)n, &ss, err) < 0)
            return hbm_err_prefix(err, "%s/proc/%d/status", root, pid);
        out->uid = ss.uid;
        out->nnspid = ss.nnspid;
        memcpy(out->nspid, ss.nspid, sizeof out->nspid);
    } else if (n < 0 && vanished(errno)) {
        return 1;
    }

    size_t len;
    char *cmd = hbm_hio_slurp(pidfd, "cmdline", 1 << 16, &len);
    int cut = 0;
    if (!cmd && errno == EFBIG) {
        cut = HBM_REDACT_CUT;
        cmd = hbm_xmalloc(1 << 16);
        n = hbm_hio_read(pidfd, "cmdline", cmd, 1 << 16);
        len = n > 0 ? (size_t)n : 0;
        cmd[len] = '\0';
    }
    if (cmd) {
        while (len > 0 && (cmd[len - 1] == '\0' || cmd[len - 1] == ' '))
            len--;
        /* Redacted here, where it is read: no view, export or log can show a credential. */
        out->cmdline = hbm_redact_words(cmd, len, '\0', cut);
        free(cmd);
        for (char *c = out->cmdline; *c; c++)
            if (*c == '\n')
                *c = ' ';
    } else {
        out->cmdline = hbm_xstrdup("");
    }

    char *cg = hbm_hio_slurp(pidfd, "cgroup", 1 << 16, &len);
    if (cg) {
        hbm_cgroup_info ci;
        int rc = hbm_procfs_parse_cgroup(cg, len, &ci, err);
        free(cg);
        if (rc < 0) {
            hbm_hproc_free(out);
            return hbm_err_prefix(err, "%s/proc/%d/cgroup", root, pid);
        }
        out->cgroup = ci.line ? ci.line : hbm_xstrdup("");
        ci.line = NULL;
        snprintf(out->container_id, sizeof out->container_id, "%s", ci.container_id);
        snprintf(out->runtime, sizeof out->runtime, "%s", ci.runtime);
        snprintf(out->pod_uid, sizeof out->pod_uid, "%s", ci.pod_uid);
        out->cgroup_gone = ci.deleted || cgroup_dir_gone(cg2, ci.v2_path);
        hbm_host_container_state(root, cg2, &ci, out);
        hbm_host_container_parent(root, out);
        hbm_cgroup_info_free(&ci);
        if (out->pod_uid[0] || out->container_id[0])
            hbm_host_pod_lookup(root, out->container_id, out->pod_uid, &out->pod);
        if (!out->pod.name[0])
            hbm_host_libpod_pod(root, out->container_id, out->container_name, &out->pod);
        if (!out->container_image[0] && out->pod.image[0]) /* containerd's and CRI-O's */
            memcpy(out->container_image, out->pod.image, sizeof out->pod.image);
    }

    char *env = hbm_hio_slurp(pidfd, "environ", 1 << 20, &len);
    if (env) {
        out->visible_devices = hbm_procfs_environ_visible(env, len);
        free(env);
    }

    n = hbm_hio_read(pidfd, "wchan", buf, sizeof out->wchan);
    if (n > 0) {
        char *w = hbm_trim(buf);
        if (strcmp(w, "0") != 0)
            snprintf(out->wchan, sizeof out->wchan, "%s", w);
    }
    return 0;
}

int hbm_host_read_stat(const char *root, int pid, hbm_pstat *out)
{
    if (pid <= 0)
        return -1;
    char rel[64], buf[4096];
    snprintf(rel, sizeof rel, "/proc/%d", pid);
    int fd = hbm_hio_open(root ? root : "", rel, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    ssize_t n = hbm_hio_read(fd, "stat", buf, sizeof buf);
    close(fd);
    if (n <= 0 || hbm_procfs_parse_stat(buf, (size_t)n, out, NULL) < 0 || out->pid != pid)
        return -1;
    return 0;
}

int hbm_host_starttime(const char *root, int pid, uint64_t *starttime, char *state)
{
    hbm_pstat st;
    if (hbm_host_read_stat(root, pid, &st) < 0)
        return -1;
    *starttime = st.starttime;
    if (state)
        *state = st.state;
    return 0;
}

bool hbm_host_pid_matches(const char *root, int pid, uint64_t starttime)
{
    uint64_t now;
    return hbm_host_starttime(root, pid, &now, NULL) == 0 && now == starttime;
}

int hbm_host_cgroup2_mount(const char *root, char *out, size_t n, hbm_err *err)
{
    root = root ? root : "";
    int fd = hbm_hio_open(root, "/proc/self", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return hbm_err_set(err, "%s/proc/self: %s", root, strerror(errno));
    size_t len;
    char *mi = hbm_hio_slurp(fd, "mountinfo", 1 << 24, &len);
    int e = errno;
    close(fd);
    if (!mi)
        return hbm_err_set(err, "%s/proc/self/mountinfo: %s", root, strerror(e));
    char mnt[PATH_MAX];
    int rc = hbm_procfs_cgroup2_mount(mi, len, mnt, sizeof mnt, err);
    free(mi);
    if (rc < 0)
        return hbm_err_prefix(err, "%s/proc/self/mountinfo", root);
    if (rc == 0)
        return hbm_err_set(err, "%s/proc/self/mountinfo: no cgroup2 file system mounted", root);
    if ((size_t)snprintf(out, n, "%s%s", root, mnt) >= n)
        return hbm_err_set(err, "cgroup2 mount point %s%s: longer than %zu bytes", root, mnt, n);
    return 0;
}

int hbm_host_device_file_proof(const hbm_host *h, const hbm_hproc *hp, char *why, size_t n)
{
    if (hp->ndev_paths > 0) {
        snprintf(why, n, "it holds %s open", hp->dev_paths[0]);
        return 1;
    }
    const hbm_hproc *shown = NULL;
    for (size_t i = 0; h && i < h->nprocs && !shown; i++)
        if (h->procs[i].ndev_paths > 0)
            shown = &h->procs[i];
    if (!hp->fds_read || !shown) {
        snprintf(why, n, "%s", !hp->fds_read ? "its open files cannot be read"
                                             : "no process here shows an accelerator device "
                                               "file open");
        return -1;
    }
    snprintf(why, n, "pid %d holds no accelerator device file, while pid %d holds %s: the "
             "driver's pid names another process", hp->pid, shown->pid, shown->dev_paths[0]);
    return 0;
}
