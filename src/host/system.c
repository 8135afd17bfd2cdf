/* System-wide host facts: SysV segments, hugepages, THP, TCP listeners, /dev/shm, WSL2. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "hbm/procfs.h"
#include "hbm/util.h"
#include "host/hostint.h"

/* Reads "<root><path>" whole; NULL when absent or unreadable (a missing fact, not an
 * error: containers and old kernels lack some of these files). */
static char *slurp_path(const char *root, const char *path, size_t max, size_t *len)
{
    int fd = hbm_hio_open(root, "/", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return NULL;
    char *s = hbm_hio_slurp(fd, path + 1, max, len);
    close(fd);
    return s;
}

static bool pid_exists(int procfd, int pid)
{
    char name[16];
    if (pid <= 0)
        return false; /* 0: the pid lives in a namespace this view cannot map */
    snprintf(name, sizeof name, "%d", pid);
    return faccessat(procfd, name, F_OK, 0) == 0;
}

int hbm_host_read_sysv(const char *root, int procfd, hbm_host *h, hbm_err *err)
{
    size_t len;
    char *s = slurp_path(root, "/proc/sysvipc/shm", 1 << 26, &len);
    if (!s)
        return 0;
    int rc = hbm_procfs_parse_sysv_shm(s, len, &h->sysv, &h->nsysv, err);
    free(s);
    if (rc < 0)
        return hbm_err_prefix(err, "%s/proc/sysvipc/shm", root);
    for (size_t i = 0; i < h->nsysv; i++) {
        h->sysv[i].cpid_alive = pid_exists(procfd, h->sysv[i].cpid);
        h->sysv[i].lpid_alive = pid_exists(procfd, h->sysv[i].lpid);
    }
    return 0;
}

static int read_count(int dirfd, const char *name, int64_t *out, const char *where, hbm_err *err)
{
    char buf[64];
    *out = HBM_UNKNOWN;
    ssize_t n = hbm_hio_read(dirfd, name, buf, sizeof buf);
    if (n < 0)
        return 0;
    if (hbm_procfs_parse_count(buf, (size_t)n, out, err) < 0)
        return hbm_err_prefix(err, "%s/%s", where, name);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Appends the hugepage pools of one NUMA node, smallest page size first. */
static int read_node_huge(const char *root, int node, hbm_host *h, size_t *cap, hbm_err *err)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/hugepages", node);
    int dfd = hbm_hio_open(root, path, O_RDONLY | O_DIRECTORY);
    if (dfd < 0)
        return 0;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    uint64_t sizes[16];
    size_t ns = 0;
    struct dirent *e;
    while ((e = readdir(d)) && ns < 16) {
        uint64_t kb;
        char *end;
        if (strncmp(e->d_name, "hugepages-", 10) != 0)
            continue;
        kb = strtoull(e->d_name + 10, &end, 10);
        if (kb > 0 && !strcmp(end, "kB"))
            sizes[ns++] = kb;
    }
    qsort(sizes, ns, sizeof sizes[0], cmp_u64);
    int rc = 0;
    for (size_t i = 0; i < ns && rc == 0; i++) {
        char sub[64], where[256];
        snprintf(sub, sizeof sub, "hugepages-%llukB", (unsigned long long)sizes[i]);
        snprintf(where, sizeof where, "%s%s/%s", root, path, sub);
        int sfd = openat(dirfd(d), sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0)
            continue;
        hbm_hugepages hp = {.node = node, .page_size_bytes = sizes[i] * 1024,
                            .rsvd = HBM_UNKNOWN}; /* no per-node reserve counter */
        rc = read_count(sfd, "nr_hugepages", &hp.total, where, err);
        if (rc == 0)
            rc = read_count(sfd, "free_hugepages", &hp.free, where, err);
        if (rc == 0)
            rc = read_count(sfd, "surplus_hugepages", &hp.surp, where, err);
        close(sfd);
        if (rc == 0) {
            hbm_grow((void **)&h->huge, cap, h->nhuge, sizeof *h->huge);
            h->huge[h->nhuge++] = hp;
        }
    }
    closedir(d);
    return rc;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int hbm_host_read_huge(const char *root, hbm_host *h, hbm_err *err)
{
    size_t cap = 0, len;
    char *s = slurp_path(root, "/proc/meminfo", 1 << 20, &len);
    if (s) {
        hbm_hugepages sys;
        int rc = hbm_procfs_parse_meminfo_huge(s, len, &sys, err);
        free(s);
        if (rc < 0)
            return hbm_err_prefix(err, "%s/proc/meminfo", root);
        hbm_grow((void **)&h->huge, &cap, h->nhuge, sizeof *h->huge);
        h->huge[h->nhuge++] = sys;
    }
    int dfd = hbm_hio_open(root, "/sys/devices/system/node", O_RDONLY | O_DIRECTORY);
    if (dfd < 0)
        return 0;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    int *nodes = NULL;
    size_t nn = 0, ncap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "node", 4) != 0 || e->d_name[4] < '0' || e->d_name[4] > '9')
            continue;
        long v = strtol(e->d_name + 4, &end, 10);
        if (*end || v > 1 << 20)
            continue;
        hbm_grow((void **)&nodes, &ncap, nn, sizeof *nodes);
        nodes[nn++] = (int)v;
    }
    closedir(d);
    qsort(nodes, nn, sizeof *nodes, cmp_int);
    int rc = 0;
    for (size_t i = 0; i < nn && rc == 0; i++)
        rc = read_node_huge(root, nodes[i], h, &cap, err);
    free(nodes);
    return rc;
}

static int read_mode(const char *root, const char *path, char *out, size_t n, hbm_err *err)
{
    size_t len;
    char *s = slurp_path(root, path, 4096, &len);
    out[0] = '\0';
    if (!s)
        return 0;
    int rc = hbm_procfs_parse_thp(s, len, out, n, err);
    free(s);
    if (rc < 0)
        return hbm_err_prefix(err, "%s%s", root, path);
    return 0;
}

int hbm_host_read_thp(const char *root, hbm_host *h, hbm_err *err)
{
    if (read_mode(root, "/sys/kernel/mm/transparent_hugepage/enabled", h->thp, sizeof h->thp,
                  err) < 0)
        return -1;
    return read_mode(root, "/sys/kernel/mm/transparent_hugepage/defrag", h->thp_defrag,
                     sizeof h->thp_defrag, err);
}

/* The same LISTEN sockets as /proc/net/tcp{,6}, from the kernel's socket-diagnostics
 * netlink: it filters by state in the kernel, where reading /proc/net/tcp walks every
 * connection of a busy server. -1 when unavailable (then the files are read). */
static int listeners_netlink(hbm_host *h)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t cap = h->nlisteners, start = h->nlisteners;
    static const int families[] = {AF_INET, AF_INET6};
    long buf[8192 / sizeof(long)]; /* aligned for the netlink headers */
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        struct {
            struct nlmsghdr nlh;
            struct inet_diag_req_v2 r;
        } req = {
            .nlh = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                    .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = (unsigned)k + 1},
            .r = {.sdiag_family = (unsigned char)families[k], .sdiag_protocol = IPPROTO_TCP,
                  .idiag_states = 1u << 10 /* TCP_LISTEN */},
        };
        if (send(fd, &req, sizeof req, 0) != (ssize_t)sizeof req) {
            rc = -1;
            break;
        }
        for (bool done = false; !done && rc == 0;) {
            ssize_t got = recv(fd, buf, sizeof buf, 0);
            if (got <= 0) {
                rc = -1;
                break;
            }
            size_t total = (size_t)got;
            const struct nlmsghdr *m;
            for (size_t off = 0; off + sizeof *m <= total; off += NLMSG_ALIGN(m->nlmsg_len)) {
                m = (const struct nlmsghdr *)((const char *)buf + off);
                if (m->nlmsg_len < sizeof *m || m->nlmsg_len > total - off) {
                    rc = -1;
                    break;
                }
                if (m->nlmsg_type == NLMSG_DONE) {
                    done = true;
                    break;
                }
                if (m->nlmsg_type == NLMSG_ERROR ||
                    m->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
                    rc = -1;
                    break;
                }
                const struct inet_diag_msg *d = NLMSG_DATA(m);
                if (d->idiag_state != 10)
                    continue;
                hbm_listener l = {.pid = -1, .inode = d->idiag_inode,
                                  .port = ntohs(d->id.idiag_sport)};
                if (!inet_ntop(d->idiag_family, d->id.idiag_src, l.addr, sizeof l.addr))
                    continue;
                hbm_grow((void **)&h->listeners, &cap, h->nlisteners, sizeof *h->listeners);
                h->listeners[h->nlisteners++] = l;
            }
        }
    }
    close(fd);
    if (rc < 0)
        h->nlisteners = start; /* the files will say it all again */
    return rc;
}

int hbm_host_read_listeners(const char *root, hbm_host *h, hbm_err *err)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    if (!root[0] && listeners_netlink(h) == 0)
        return 0;
    for (int v6 = 0; v6 < 2; v6++) {
        size_t len;
        char *s = slurp_path(root, files[v6], 1 << 26, &len);
        if (!s)
            continue;
        int rc = hbm_procfs_parse_net_tcp(s, len, v6, &h->listeners, &h->nlisteners, err);
        free(s);
        if (rc < 0)
            return hbm_err_prefix(err, "%s%s", root, files[v6]);
    }
    return 0;
}

static int cmp_posix(const void *a, const void *b)
{
    return strcmp(((const hbm_posix_shm *)a)->path, ((const hbm_posix_shm *)b)->path);
}

/* Objects a container runtime creates in /dev/shm and keeps across its runs with no process
 * mapping them (podman's lock table is mapped only while a podman command runs). Each
 * belongs to the runtime only while the runtime's state for the object's owner exists:
 * /run is a tmpfs, so that state means the runtime has run since boot and its containers
 * rely on the locks. A per-user object (rootless podman's own table) is named after its
 * owner's uid, with its state under /run/user/<uid>/; a system one is root's. */
static const struct {
    const char *name, *runtime, *state; /* per_user: name and state get the uid appended */
    bool per_user;
} runtime_shm[] = {
    {"libpod_lock", "podman", "/run/libpod", false},
    {"libpod_rootless_lock_", "podman", "/libpod", true},
};

static void judge_owner(const char *root, const char *name, hbm_posix_shm *o)
{
    for (size_t i = 0; i < sizeof runtime_shm / sizeof runtime_shm[0]; i++) {
        char want[64], state[96];
        if (runtime_shm[i].per_user) {
            snprintf(want, sizeof want, "%s%d", runtime_shm[i].name, o->uid);
            snprintf(state, sizeof state, "/run/user/%d%s", o->uid, runtime_shm[i].state);
        } else {
            snprintf(want, sizeof want, "%s", o->uid == 0 ? runtime_shm[i].name : "");
            snprintf(state, sizeof state, "%s", runtime_shm[i].state);
        }
        if (!want[0] || strcmp(name, want) != 0)
            continue;
        int fd = hbm_hio_open(root, state, O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            close(fd);
            snprintf(o->owner, sizeof o->owner, "%s", runtime_shm[i].runtime);
            return;
        }
    }
}

/* Whether the directory open as fd is a mount point: a device other than its parent's. */
static bool is_mount_point(const char *root, const char *parent, int fd)
{
    struct stat self, up;
    int pfd = hbm_hio_open(root, parent, O_RDONLY | O_DIRECTORY);
    if (pfd < 0)
        return false;
    bool mounted = fstat(fd, &self) == 0 && fstat(pfd, &up) == 0 && self.st_dev != up.st_dev;
    close(pfd);
    return mounted;
}

void hbm_host_read_wsl(const char *root, hbm_host *h)
{
    size_t len;
    char *s = slurp_path(root, "/proc/sys/kernel/osrelease", 256, &len);
    h->wsl2 = s && (strcasestr(s, "microsoft") || strstr(s, "WSL2"));
    free(s);
    int fd = hbm_hio_open(root, "/dev/dxg", O_PATH);
    if (fd >= 0) {
        h->wsl2 = true;
        close(fd);
    }
}

void hbm_host_read_devshm(const char *root, hbm_host *h)
{
    h->devshm_total_bytes = h->devshm_used_bytes = HBM_UNKNOWN;
    int dfd = hbm_hio_open(root, "/dev/shm", O_RDONLY | O_DIRECTORY);
    if (dfd < 0)
        return;
    /* The space figures describe the filesystem mounted at /dev/shm; a plain directory (a
     * fixture root, a chroot without its mounts) would report the filesystem around it. */
    struct statvfs vs;
    if (is_mount_point(root, "/dev", dfd) && fstatvfs(dfd, &vs) == 0) {
        h->devshm_total_bytes = (int64_t)(vs.f_blocks * vs.f_frsize);
        h->devshm_used_bytes = (int64_t)((vs.f_blocks - vs.f_bfree) * vs.f_frsize);
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode))
            continue;
        hbm_grow((void **)&h->posix, &cap, h->nposix, sizeof *h->posix);
        hbm_posix_shm *o = &h->posix[h->nposix++];
        o->path = hbm_xasprintf("/dev/shm/%s", e->d_name);
        o->size = (uint64_t)st.st_size;
        o->uid = (int)st.st_uid;
        o->mtime = (int64_t)st.st_mtime;
        judge_owner(root, e->d_name, o);
    }
    closedir(d);
    if (h->nposix) /* qsort(NULL, 0) is undefined behaviour */
        qsort(h->posix, h->nposix, sizeof *h->posix, cmp_posix);
}
