/* The tree's own cgroup v2 leaf: the whole tree is known (cgroup.procs), ends at once
 * (cgroup.kill, Linux >= 5.14) and its emptiness is one file (cgroup.events). The leaf sits
 * under hbmctl's own cgroup on the cgroup2 mount found in /proc/self/mountinfo: a hybrid
 * host mounts it at /sys/fs/cgroup/unified, a unified one at /sys/fs/cgroup. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbm/procfs.h"
#include "hbm/util.h"
#include "run_int.h"

int run_mountinfo_cgroup2(const char *text, char *mnt, size_t nmnt, char *root, size_t nroot)
{
    /* A line the parser cannot read means no usable cgroup2 here: the fallback tracking is
     * used instead, as when none is mounted. */
    return hbm_procfs_cgroup2_mount_root(text, strlen(text), mnt, nmnt, root, nroot, NULL) == 1;
}

int run_cgroup_dir(const char *mnt, const char *root, const char *path, char *out, size_t n)
{
    /* the "0::" path is relative to the cgroup namespace root; a mount of a sub-tree
     * (root other than "/") shows only what lies below that root */
    const char *rel = path;
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0) {
        if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
            return -1;
        rel = path + rl;
    }
    while (*rel == '/')
        rel++;
    int w = snprintf(out, n, "%s%s%s", mnt, *rel ? "/" : "", rel);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

static int read_small(const char *path, char **out)
{
    return hbm_read_file(path, 1 << 20, out, NULL, NULL);
}

int run_cgroup_create(run_cgroup *cg, hbm_err *err)
{
    memset(cg, 0, sizeof *cg);
    cg->procs_fd = -1;
    char *mi = NULL, *own = NULL;
    if (read_small("/proc/self/mountinfo", &mi) < 0)
        return hbm_err_set(err, "cannot read /proc/self/mountinfo");
    char mnt[2048], root[2048];
    int found = run_mountinfo_cgroup2(mi, mnt, sizeof mnt, root, sizeof root);
    free(mi);
    if (found != 1)
        return hbm_err_set(err, "no cgroup2 file system is mounted");
    if (read_small("/proc/self/cgroup", &own) < 0)
        return hbm_err_set(err, "cannot read /proc/self/cgroup");
    char *path = NULL;
    for (char *l = own; l && *l;) {
        char *eol = strchr(l, '\n');
        if (eol)
            *eol = '\0';
        if (strncmp(l, "0::", 3) == 0) {
            path = l + 3;
            break;
        }
        l = eol ? eol + 1 : NULL;
    }
    if (!path) {
        free(own);
        return hbm_err_set(err, "hbmctl is in no cgroup v2 (no 0:: line in /proc/self/cgroup)");
    }
    char parent[2048];
    int r = run_cgroup_dir(mnt, root, path, parent, sizeof parent);
    free(own);
    if (r < 0)
        return hbm_err_set(err, "hbmctl's cgroup is outside the cgroup2 mount at %s", mnt);
    /* never share a leaf: another hbmctl with the same pid (PID 1 of another namespace)
     * may have made one here, and its tree is not ours to stop */
    int made = -1;
    for (int k = 0; k < 100 && made < 0; k++) {
        int w = k == 0 ? snprintf(cg->dir, sizeof cg->dir, "%s/hbmctl-run.%d", parent, (int)getpid())
                       : snprintf(cg->dir, sizeof cg->dir, "%s/hbmctl-run.%d.%d", parent,
                                  (int)getpid(), k);
        if (w < 0 || (size_t)w >= sizeof cg->dir)
            return hbm_err_set(err, "cgroup path too long");
        made = mkdir(cg->dir, 0755);
        if (made < 0 && errno != EEXIST)
            return hbm_err_set(err, "cannot create %s: %s", cg->dir, strerror(errno));
    }
    if (made < 0)
        return hbm_err_set(err, "cannot create a leaf under %s: every name is taken", parent);
    char f[4200];
    snprintf(f, sizeof f, "%s/cgroup.procs", cg->dir);
    cg->procs_fd = open(f, O_WRONLY | O_CLOEXEC);
    if (cg->procs_fd < 0) {
        int e = errno;
        rmdir(cg->dir);
        return hbm_err_set(err, "cannot open %s: %s", f, strerror(e));
    }
    snprintf(f, sizeof f, "%s/cgroup.kill", cg->dir);
    cg->has_kill = access(f, W_OK) == 0;
    cg->active = true;
    return 0;
}

int run_cgroup_pids(const run_cgroup *cg, int **pids, size_t *n)
{
    *pids = NULL;
    *n = 0;
    if (!cg || !cg->active)
        return 0;
    char f[4200], *text = NULL;
    snprintf(f, sizeof f, "%s/cgroup.procs", cg->dir);
    if (read_small(f, &text) < 0)
        return -1;
    size_t cap = 0;
    for (char *p = text; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v > 0) {
            hbm_grow((void **)pids, &cap, *n, sizeof **pids);
            (*pids)[(*n)++] = (int)v;
        }
        p = end;
        while (*p == '\n' || *p == ' ')
            p++;
    }
    free(text);
    return 0;
}

int run_cgroup_kill(const run_cgroup *cg)
{
    if (!cg || !cg->active || !cg->has_kill)
        return -1;
    char f[4200];
    snprintf(f, sizeof f, "%s/cgroup.kill", cg->dir);
    int fd = open(f, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, "1", 1);
    close(fd);
    return w == 1 ? 0 : -1;
}

void run_cgroup_remove(run_cgroup *cg)
{
    if (!cg->active)
        return;
    if (cg->procs_fd >= 0)
        close(cg->procs_fd);
    cg->procs_fd = -1;
    rmdir(cg->dir);
    cg->active = false;
}
