/* The host scan: one pass over <root>/proc/[0-9]* that reads every fd link once and reads
 * a process's other files only when it matters (holds a device file, a listening socket or
 * a /dev/shm object, was asked for, created a SysV segment, or is an inference server).
 * The pass costs about what a bare readlink loop over /proc/PID/fd costs (bench/scan). */
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
#include "hbm/util.h"
#include "host/hostint.h"
#include "host/lex.h"
#include "hbm/text.h"

/* A listening socket's inode, for finding its owner among the fd links. */
typedef struct inode_ix {
    uint64_t inode;
    size_t idx;
} inode_ix;

typedef struct scan_ctx {
    const char *root;
    int procfd;
    const hbm_hpat *pats;
    size_t npats;
    int *want; /* owned; sorted pids to record whatever they hold */
    size_t nwant;
    inode_ix *lix; /* owned; listeners sorted by inode */
    size_t nlix;
    hbm_host *h;          /* borrowed; listeners and posix objects get their owners here */
    uint64_t *posix_ino;  /* owned; inode of h->posix[i], 0 unknown */
    size_t *posix_cap;    /* owned; capacity of h->posix[i].holders */
    char cg2[PATH_MAX];   /* root-prefixed cgroup2 mount, "" unknown */
} scan_ctx;

/* What one process's fds and maps showed. */
typedef struct hits {
    hbm_hproc proc; /* dev_paths only, until the process turns out to matter */
    bool any;       /* it holds a device file or a listening socket: read it in full */
} hits;

static int cmp_inode_ix(const void *a, const void *b)
{
    uint64_t x = ((const inode_ix *)a)->inode, y = ((const inode_ix *)b)->inode;
    return x < y ? -1 : x > y;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_proc(const void *a, const void *b)
{
    return cmp_int(&((const hbm_hproc *)a)->pid, &((const hbm_hproc *)b)->pid);
}

static void add_holder(scan_ctx *c, size_t i, int pid)
{
    hbm_posix_shm *o = &c->h->posix[i];
    if (o->nholders && o->holders[o->nholders - 1] == pid)
        return; /* pids arrive in scan order: a repeat is always the last one */
    hbm_grow((void **)&o->holders, &c->posix_cap[i], o->nholders, sizeof *o->holders);
    o->holders[o->nholders++] = pid;
}

/* Index of the /dev/shm object named by path (a "/dev/shm/NAME" string), or -1. */
static long posix_find(const scan_ctx *c, const char *path, size_t len)
{
    size_t lo = 0, hi = c->h->nposix;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *p = c->h->posix[mid].path;
        size_t pl = strlen(p);
        int r = memcmp(p, path, pl < len ? pl : len);
        if (r == 0)
            r = (pl > len) - (pl < len);
        if (r == 0)
            return (long)mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

struct maps_arg {
    scan_ctx *c;
    int pid;
};

static void maps_hit(const char *path, size_t plen, uint64_t inode, void *arg)
{
    struct maps_arg *m = arg;
    long i = posix_find(m->c, path, plen);
    /* Same name and inode: a container's own /dev/shm may hold another file of that name. */
    if (i >= 0 && (m->c->posix_ino[i] == 0 || m->c->posix_ino[i] == inode)) {
        add_holder(m->c, (size_t)i, m->pid); /* the object's holder list is all a check needs */
    }
}

/* A device path as it reads, or from a later "/dev/" on: a driver container shows its
 * nodes as e.g. /run/nvidia/driver/dev/nvidia0. */
static bool dev_match(const scan_ctx *c, const char *path, size_t len)
{
    if (hbm_hpat_match(c->pats, c->npats, path, len))
        return true;
    for (const char *q = path + 1; (q = memmem(q, len - (size_t)(q - path), "/dev/", 5)); q++)
        if (hbm_hpat_match(c->pats, c->npats, q, len - (size_t)(q - path)))
            return true;
    return false;
}

/* One fd link of a process: a device file, a /dev/shm object or a listening socket. */
static void fd_link(scan_ctx *c, int ffd, const char *name, int pid, hits *hit)
{
    char buf[PATH_MAX];
    bool real;
    ssize_t n = hbm_hio_link(ffd, name, buf, sizeof buf, &real);
    if (n <= 0)
        return;
    if (buf[0] == '/') {
        if (dev_match(c, buf, (size_t)n)) {
            hbm_hproc_add_dev(&hit->proc, buf, (size_t)n);
            hit->any = true;
        }
        if (c->h && c->h->nposix && n > 9 && !memcmp(buf, "/dev/shm/", 9)) {
            long i = posix_find(c, buf, (size_t)n);
            struct stat st;
            if (i >= 0 && real && c->posix_ino[i] && fstatat(ffd, name, &st, 0) == 0 &&
                st.st_ino != c->posix_ino[i])
                i = -1; /* another mount's file of the same name */
            if (i >= 0)
                add_holder(c, (size_t)i, pid);
        }
    } else if (c->nlix && buf[0] == 's') {
        hbm_fdlink fl;
        if (hbm_procfs_parse_fdlink(buf, (size_t)n, &fl, NULL) == 0 && fl.kind == HBM_FD_SOCKET) {
            inode_ix key = {.inode = fl.inode};
            inode_ix *m = bsearch(&key, c->lix, c->nlix, sizeof key, cmp_inode_ix);
            if (m) {
                if (c->h->listeners[m->idx].pid < 0)
                    c->h->listeners[m->idx].pid = pid;
                hit->any = true;
            }
        }
    }
}

/* Returns the number of fds listed. at names the process's directory relative to dirfd:
 * "" when dirfd is /proc/PID itself, "PID/" when it is /proc. The directory is read with
 * getdents64 itself: through fdopendir every process cost an fstat, two fcntl calls and a
 * 32 KiB buffer more, a fifth of the scan's system calls on an idle host (bench/scan). */
static size_t walk_fds(scan_ctx *c, int dirfd, const char *at, int pid, hits *hit)
{
    char name[32];
    snprintf(name, sizeof name, "%sfd", at);
    int ffd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ffd < 0)
        return 0;
    hit->proc.fds_read = true;
    _Alignas(struct dirent64) char dbuf[8192];
    size_t count = 0;
    ssize_t got;
    while ((got = getdents64(ffd, dbuf, sizeof dbuf)) > 0) {
        for (ssize_t off = 0; off < got;) {
            const struct dirent64 *e = (const struct dirent64 *)(dbuf + off);
            off += e->d_reclen;
            if (e->d_name[0] == '.')
                continue;
            count++;
            fd_link(c, ffd, e->d_name, pid, hit);
        }
    }
    close(ffd);
    return count;
}

/* fd links, then mappings of /dev/shm objects (a mapping keeps no fd). dirfd and at name
 * /proc/PID (see walk_fds) or, for a zombie leader, one of its live threads'
 * /proc/PID/task/TID. */
static size_t inspect(scan_ctx *c, int dirfd, const char *at, int pid, hits *hit)
{
    size_t nfd = walk_fds(c, dirfd, at, pid, hit);
    if (c->h->nposix) {
        size_t len;
        char name[32];
        snprintf(name, sizeof name, "%smaps", at);
        char *maps = hbm_hio_slurp(dirfd, name, 1 << 28, &len);
        if (maps) {
            struct maps_arg ma = {c, pid};
            hbm_procfs_parse_maps(maps, len, "/dev/shm/", maps_hit, &ma, NULL);
            free(maps);
        }
    }
    return nfd;
}

/* Inference servers are recorded even when they hold nothing yet. The executable's name is
 * checked first (one readlink), so only interpreters and known servers cost a cmdline read. */
static bool is_server(int dirfd, const char *at)
{
    static const char *const exe_words[] = {"python", "vllm", "mindie", "sglang",
                                            "text-generation"};
    static const char *const cmd_words[] = {"vllm", "mindie", "sglang", "text-generation"};
    char exe[PATH_MAX], name[32];
    bool real;
    snprintf(name, sizeof name, "%sexe", at);
    ssize_t n = hbm_hio_link(dirfd, name, exe, sizeof exe, &real);
    if (n <= 0)
        return false; /* kernel thread, zombie or no permission */
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    bool python = strstr(base, "python") != NULL, known = python;
    for (size_t i = 1; i < sizeof exe_words / sizeof exe_words[0] && !known; i++)
        known = strstr(base, exe_words[i]) != NULL;
    if (!known)
        return false;
    char cmd[8192];
    snprintf(name, sizeof name, "%scmdline", at);
    n = hbm_hio_read(dirfd, name, cmd, sizeof cmd);
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i < n; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    for (size_t i = 0; i < sizeof cmd_words / sizeof cmd_words[0]; i++)
        if (strstr(cmd, cmd_words[i]))
            return true;
    return strstr(cmd, "serve") && (python || strstr(cmd, "python"));
}

static bool wanted(const scan_ctx *c, int pid)
{
    return c->nwant && bsearch(&pid, c->want, c->nwant, sizeof pid, cmp_int);
}

/* Reads one process fully and appends it; a process that exited meanwhile is skipped. */
static int record(scan_ctx *c, int pidfd, int pid, hits *hit, size_t *cap, hbm_err *err)
{
    hbm_hproc p;
    int rc = hbm_hproc_read_at(pidfd, pid, c->root, c->cg2, &p, err);
    if (rc != 0) {
        hbm_hproc_free(&hit->proc);
        return rc < 0 ? -1 : 0;
    }
    p.dev_paths = hit->proc.dev_paths;
    p.ndev_paths = hit->proc.ndev_paths;
    p.fds_read = hit->proc.fds_read;
    hbm_grow((void **)&c->h->procs, cap, c->h->nprocs, sizeof *c->h->procs);
    c->h->procs[c->h->nprocs++] = p;
    return 0;
}

/* A zombie is freed only when its parent reaps it, and a process stuck in D state is often
 * waited for by its parent: the remedy names that parent, so it is recorded too (one level;
 * a parent already recorded for what it holds is not read twice). Parents that exited in
 * the meantime are skipped like any vanished process. */
static int record_parents(scan_ctx *c, size_t *cap, hbm_err *err)
{
    size_t n = c->h->nprocs;
    int *ppids = hbm_xcalloc(n ? n : 1, sizeof *ppids);
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        const hbm_hproc *p = &c->h->procs[i];
        if ((p->state == 'Z' || p->state == 'D') && p->ppid > 0)
            ppids[np++] = p->ppid;
    }
    qsort(ppids, np, sizeof *ppids, cmp_int);
    int rc = 0;
    for (size_t i = 0; i < np && rc == 0; i++) {
        int pp = ppids[i];
        if (i > 0 && ppids[i - 1] == pp)
            continue;
        bool have = false;
        for (size_t k = 0; k < c->h->nprocs && !have; k++)
            have = c->h->procs[k].pid == pp;
        if (have)
            continue;
        char rel[16];
        snprintf(rel, sizeof rel, "%d", pp);
        int pidfd = openat(c->procfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pidfd < 0)
            continue;
        hits hit = {0};
        rc = record(c, pidfd, pp, &hit, cap, err);
        close(pidfd);
    }
    free(ppids);
    return rc;
}

static int scan_procs(scan_ctx *c, hbm_err *err)
{
    DIR *d = fdopendir(dup(c->procfd));
    if (!d)
        return hbm_err_set(err, "%s/proc: %s", c->root, strerror(errno));
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        int pid;
        if (!hbm_lex_int(e->d_name, strlen(e->d_name), &pid))
            continue;
        /* Read by paths under /proc: most processes matter not, and opening each one's
         * directory cost an open and a close more apiece (bench/scan). It is opened for
         * one read in full, and for one without fds (a zombie leader's live threads). A pid
         * reused between the two would need the pid space to wrap in that instant. */
        char at[24];
        snprintf(at, sizeof at, "%d/", pid);
        hits hit = {0};
        int pidfd = -1;
        if (inspect(c, c->procfd, at, pid, &hit) == 0) {
            /* No fds: a kernel thread, or a zombie leader whose threads live on and hold
             * the files (vLLM engines seen as Z while still owning a device). */
            pidfd = openat(c->procfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            int tfd = pidfd >= 0 ? hbm_hproc_live_thread(pidfd, pid, NULL) : -1;
            if (tfd >= 0) {
                inspect(c, tfd, "", pid, &hit);
                close(tfd);
            }
        }
        if (hit.any || wanted(c, pid) || is_server(c->procfd, at)) {
            if (pidfd < 0)
                pidfd = openat(c->procfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (pidfd >= 0)
                rc = record(c, pidfd, pid, &hit, &cap, err);
            else
                hbm_hproc_free(&hit.proc); /* exited meanwhile */
        }
        if (pidfd >= 0)
            close(pidfd);
    }
    closedir(d);
    if (rc == 0)
        rc = record_parents(c, &cap, err);
    if (rc == 0 && c->h->nprocs)
        qsort(c->h->procs, c->h->nprocs, sizeof *c->h->procs, cmp_proc);
    return rc;
}

/* Whether hbmctl sees the host's pids (drivers report host pids, docs/verdicts.md). The initial PID
 * namespace is the only one where kernel threads are visible, so kthreadd at pid 2 (ppid
 * 0) says "host"; a nested NSpid for hbmctl itself says "not" even on a host /proc. */
static void detect_pidns(const char *root, int procfd, hbm_host *h)
{
    char buf[8192];
    ssize_t n = hbm_hio_read(procfd, "self/status", buf, sizeof buf);
    hbm_pstatus self;
    if (n > 0 && hbm_procfs_parse_status(buf, (size_t)n, &self, NULL) == 0 && self.nnspid > 1) {
        h->sees_host_pids = false;
        snprintf(h->sees_host_pids_why, sizeof h->sees_host_pids_why,
                 "hbmctl is pid %d in a nested PID namespace (NSpid has %d levels, pid %d "
                 "outermost): driver pids may be outside its view",
                 self.nspid[self.nnspid - 1], self.nnspid, self.nspid[0]);
        return;
    }
    hbm_pstat st;
    n = hbm_hio_read(procfd, "2/stat", buf, sizeof buf);
    if (n > 0 && hbm_procfs_parse_stat(buf, (size_t)n, &st, NULL) == 0 && st.ppid == 0 &&
        !strcmp(st.comm, "kthreadd")) {
        h->sees_host_pids = true;
        snprintf(h->sees_host_pids_why, sizeof h->sees_host_pids_why,
                 "kernel threads are visible (kthreadd is pid 2 in %s/proc): the host's PID "
                 "namespace", root);
        return;
    }
    char init[32] = "?";
    n = hbm_hio_read(procfd, "1/stat", buf, sizeof buf);
    if (n > 0 && hbm_procfs_parse_stat(buf, (size_t)n, &st, NULL) == 0)
        snprintf(init, sizeof init, "%s", st.comm);
    char ctr[120] = "";
    size_t len;
    char *cg = hbm_hio_slurp(procfd, "1/cgroup", 1 << 16, &len);
    hbm_cgroup_info ci;
    if (cg && hbm_procfs_parse_cgroup(cg, len, &ci, NULL) == 0) {
        if (ci.container_id[0])
            snprintf(ctr, sizeof ctr, ", in %s container %.12s", ci.runtime[0] ? ci.runtime : "a",
                     ci.container_id);
        hbm_cgroup_info_free(&ci);
    }
    free(cg);
    h->sees_host_pids = false;
    hbm_text_fitf(h->sees_host_pids_why, sizeof h->sees_host_pids_why,
                  "no kernel threads visible (pid 1 is %s%s): a container's PID namespace, driver "
                  "pids are host pids it may not see", init, ctr);
}

static double read_btime(int procfd)
{
    size_t len;
    char *s = hbm_hio_slurp(procfd, "stat", 1 << 22, &len);
    double bt = 0;
    if (!s)
        return 0;
    hbm_lex lx;
    hbm_lex_init(&lx, s, len);
    const char *l;
    size_t n;
    while (hbm_lex_line(&lx, &l, &n)) {
        uint64_t v;
        if (n > 6 && !memcmp(l, "btime ", 6) && hbm_lex_u64(l + 6, n - 6, 10, &v)) {
            bt = (double)v;
            break;
        }
    }
    free(s);
    return bt;
}

/* Pids to record whatever they hold: asked for, and creators of SysV segments. */
static void build_want(scan_ctx *c, const hbm_host_opts *o)
{
    size_t n = o->nwant_pids + c->h->nsysv;
    c->want = hbm_xcalloc(n ? n : 1, sizeof *c->want);
    for (size_t i = 0; i < o->nwant_pids; i++)
        c->want[c->nwant++] = o->want_pids[i];
    for (size_t i = 0; i < c->h->nsysv; i++)
        if (c->h->sysv[i].cpid_alive)
            c->want[c->nwant++] = c->h->sysv[i].cpid;
    if (c->nwant)
        qsort(c->want, c->nwant, sizeof *c->want, cmp_int);
}

static void build_indexes(scan_ctx *c)
{
    hbm_host *h = c->h;
    c->lix = hbm_xcalloc(h->nlisteners ? h->nlisteners : 1, sizeof *c->lix);
    for (size_t i = 0; i < h->nlisteners; i++)
        if (h->listeners[i].inode) /* 0: a socket being torn down, owned by nobody */
            c->lix[c->nlix++] = (inode_ix){h->listeners[i].inode, i};
    qsort(c->lix, c->nlix, sizeof *c->lix, cmp_inode_ix);
    c->posix_ino = hbm_xcalloc(h->nposix ? h->nposix : 1, sizeof *c->posix_ino);
    c->posix_cap = hbm_xcalloc(h->nposix ? h->nposix : 1, sizeof *c->posix_cap);
    int dfd = hbm_hio_open(c->root, "/dev/shm", O_RDONLY | O_DIRECTORY);
    for (size_t i = 0; dfd >= 0 && i < h->nposix; i++) {
        struct stat st;
        if (fstatat(dfd, h->posix[i].path + 9, &st, AT_SYMLINK_NOFOLLOW) == 0)
            c->posix_ino[i] = (uint64_t)st.st_ino;
    }
    if (dfd >= 0)
        close(dfd);
}

static void ctx_free(scan_ctx *c)
{
    free(c->want);
    free(c->lix);
    free(c->posix_ino);
    free(c->posix_cap);
    if (c->procfd >= 0)
        close(c->procfd);
}

static const char *const *pick_patterns(const hbm_host_opts *o)
{
    if (o && o->dev_patterns)
        return o->dev_patterns;
    const char *const *env = hbm_host_patterns_from_env();
    return env ? env : hbm_host_default_dev_patterns;
}

/* A server in its own network namespace (--network none, a bridge) listens where the
 * host's /proc/net/tcp does not show: its namespace's listeners come from its own
 * /proc/PID/net/tcp{,6}, with the owner left unknown (-1), since which process of that
 * namespace holds the socket is not checked. Bounded: one read per file per process told
 * --port whose namespace is not hbmctl's. */
static void foreign_netns_listeners(scan_ctx *c)
{
    char self[64], ns[64], rel[64];
    bool real;
    if (hbm_hio_link(c->procfd, "self/ns/net", self, sizeof self, &real) < 0)
        return;
    hbm_host *h = c->h;
    char seen[16][64]; /* namespaces already read: a server and its workers share one */
    size_t nseen = 0;
    for (size_t i = 0; i < h->nprocs; i++) {
        const hbm_hproc *p = &h->procs[i];
        snprintf(rel, sizeof rel, "%d/ns/net", p->pid);
        if (!p->cmdline || !strstr(p->cmdline, "--port") ||
            hbm_hio_link(c->procfd, rel, ns, sizeof ns, &real) < 0 || !strcmp(ns, self))
            continue;
        bool again = false;
        for (size_t k = 0; k < nseen && !again; k++)
            again = !strcmp(seen[k], ns);
        if (again || nseen == sizeof seen / sizeof seen[0])
            continue;
        memcpy(seen[nseen++], ns, sizeof ns);
        for (int v6 = 0; v6 < 2; v6++) {
            size_t len, start = h->nlisteners;
            snprintf(rel, sizeof rel, "%d/net/tcp%s", p->pid, v6 ? "6" : "");
            char *t = hbm_hio_slurp(c->procfd, rel, 1 << 22, &len);
            if (t && hbm_procfs_parse_net_tcp(t, len, v6, &h->listeners, &h->nlisteners,
                                              NULL) < 0)
                h->nlisteners = start; /* unreadable: no claim either way */
            for (size_t k = start; k < h->nlisteners; k++)
                h->listeners[k].pid = -1;
            free(t);
        }
    }
}

int hbm_host_scan(hbm_host *h, const hbm_host_opts *opts, hbm_err *err)
{
    static const hbm_host_opts none = {0};
    const hbm_host_opts *o = opts ? opts : &none;
    memset(h, 0, sizeof *h);
    h->devshm_total_bytes = h->devshm_used_bytes = HBM_UNKNOWN;
    scan_ctx c = {.root = o->root ? o->root : "", .h = h};
    c.procfd = hbm_hio_open(c.root, "/proc", O_RDONLY | O_DIRECTORY);
    if (c.procfd < 0)
        return hbm_err_set(err, "%s/proc: %s", c.root, strerror(errno));
    long tck = sysconf(_SC_CLK_TCK);
    h->clk_tck = tck > 0 ? tck : 100;
    h->boot_time = read_btime(c.procfd);
    detect_pidns(c.root, c.procfd, h);
    if (hbm_host_cgroup2_mount(c.root, c.cg2, sizeof c.cg2, NULL) < 0)
        c.cg2[0] = '\0';

    size_t npats;
    hbm_hpat *pats = hbm_hpat_compile(pick_patterns(o), &npats);
    c.pats = pats;
    c.npats = npats;
    int rc = hbm_host_read_sysv(c.root, c.procfd, h, err);
    if (rc == 0)
        rc = hbm_host_read_listeners(c.root, h, err);
    if (rc == 0)
        rc = hbm_host_read_huge(c.root, h, err);
    if (rc == 0)
        rc = hbm_host_read_thp(c.root, h, err);
    if (rc == 0) {
        hbm_host_read_devshm(c.root, h);
        hbm_host_read_wsl(c.root, h);
        build_want(&c, o);
        build_indexes(&c);
        rc = scan_procs(&c, err);
        if (rc == 0)
            foreign_netns_listeners(&c);
    }
    free(pats);
    ctx_free(&c);
    if (rc < 0)
        hbm_host_free(h);
    return rc;
}

int hbm_host_read_proc(const char *root, int pid, hbm_hproc *out, hbm_err *err)
{
    root = root ? root : "";
    memset(out, 0, sizeof *out);
    char rel[64];
    snprintf(rel, sizeof rel, "/proc/%d", pid);
    int pidfd = pid > 0 ? hbm_hio_open(root, rel, O_RDONLY | O_DIRECTORY) : -1;
    if (pidfd < 0)
        return hbm_err_set(err, "pid %d: no such process (ESRCH) in %s/proc", pid, root);
    scan_ctx c = {.root = root, .procfd = -1};
    if (hbm_host_cgroup2_mount(root, c.cg2, sizeof c.cg2, NULL) < 0)
        c.cg2[0] = '\0';
    size_t npats;
    hbm_hpat *pats = hbm_hpat_compile(pick_patterns(NULL), &npats);
    c.pats = pats;
    c.npats = npats;
    hits hit = {0};
    if (walk_fds(&c, pidfd, "", pid, &hit) == 0) {
        int tfd = hbm_hproc_live_thread(pidfd, pid, NULL);
        if (tfd >= 0) {
            walk_fds(&c, tfd, "", pid, &hit);
            close(tfd);
        }
    }
    free(pats);
    int rc = hbm_hproc_read_at(pidfd, pid, root, c.cg2, out, err);
    close(pidfd);
    if (rc != 0) {
        hbm_hproc_free(&hit.proc);
        if (rc > 0)
            return hbm_err_set(err, "pid %d: no such process (ESRCH) in %s/proc", pid, root);
        return -1;
    }
    out->dev_paths = hit.proc.dev_paths;
    out->ndev_paths = hit.proc.ndev_paths;
    return 0;
}

const hbm_hproc *hbm_host_find(const hbm_host *h, int pid)
{
    hbm_hproc key = {.pid = pid};
    return h->nprocs ? bsearch(&key, h->procs, h->nprocs, sizeof key, cmp_proc) : NULL;
}

void hbm_host_free(hbm_host *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->nprocs; i++)
        hbm_hproc_free(&h->procs[i]);
    free(h->procs);
    free(h->sysv);
    for (size_t i = 0; i < h->nposix; i++) {
        free(h->posix[i].path);
        free(h->posix[i].holders);
    }
    free(h->posix);
    free(h->huge);
    free(h->listeners);
    memset(h, 0, sizeof *h);
}
