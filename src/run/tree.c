/* Which processes belong to the supervised tree, and signalling them safely.
 *
 * A process is a member when any of these says so: it descends from hbmctl (as a subreaper
 * hbmctl adopts every orphan below it, so a double fork does not leave the tree), it is in
 * the child's process group (or session with --setsid), or it is in the tree's cgroup leaf.
 * hbmctl itself, its ancestors and PID 1 never are. Zombies are not members: they are dead,
 * and hbmctl reaps the ones that are its children.
 *
 * With a cgroup leaf the members are found without reading every process of the host, so
 * `run` costs the same on a host with 20,000 processes as on an idle one (bench/supervisor):
 * the leaf's cgroup.procs, and hbmctl's descendants through /proc/PID/task/TID/children (a
 * descendant that moved itself to another cgroup). The process-group rule adds nothing
 * there: a group holds the child's descendants unless a process of the same session joined
 * it from outside the tree with setpgid, and only the full scan, used without a leaf, looks
 * for that. */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_int.h"
#include "hbm/host.h"
#include "hbm/procfs.h"
#include "hbm/util.h"

static int read_stat(int pid, run_proc *p)
{
    hbm_pstat st;
    if (hbm_host_read_stat(NULL, pid, &st) < 0)
        return -1;
    *p = (run_proc){.pid = st.pid, .ppid = st.ppid, .pgrp = st.pgrp, .sid = st.sid,
                    .state = st.state, .start = st.starttime};
    snprintf(p->comm, sizeof p->comm, "%s", st.comm);
    return 0;
}

/* A leader shown as Z while other threads of it still run is not dead (research d2). */
static bool zombie_with_threads(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n > 1;
}

void run_tree_init(run_tree *t, const run_cgroup *cg)
{
    memset(t, 0, sizeof *t);
    t->self = (int)getpid();
    t->cg = cg;
    char link[64] = "";
    ssize_t n = readlink("/proc/self", link, sizeof link - 1);
    if (n > 0) {
        link[n] = '\0';
        t->proc_usable = atoi(link) == t->self;
    }
    if (!t->proc_usable)
        return;
    char f[96];
    snprintf(f, sizeof f, "/proc/%d/task/%d/children", t->self, t->self);
    t->has_children = access(f, R_OK) == 0; /* CONFIG_PROC_CHILDREN */
    size_t cap = 0;
    run_proc p;
    int pid = t->self;
    for (int depth = 0; depth < 4096 && read_stat(pid, &p) == 0 && p.ppid > 0; depth++) {
        hbm_grow((void **)&t->ancestors, &cap, t->nancestors, sizeof *t->ancestors);
        t->ancestors[t->nancestors++] = p.ppid;
        pid = p.ppid;
    }
}

void run_tree_free(run_tree *t)
{
    free(t->ancestors);
    free(t->seen);
    memset(t, 0, sizeof *t);
}

run_seen *run_tree_seen(run_tree *t, int pid, uint64_t start)
{
    for (size_t i = 0; i < t->nseen; i++)
        if (t->seen[i].pid == pid && t->seen[i].start == start)
            return &t->seen[i];
    hbm_grow((void **)&t->seen, &t->capseen, t->nseen, sizeof *t->seen);
    run_seen *s = &t->seen[t->nseen++];
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->start = start;
    return s;
}

bool run_tree_was_member(const run_tree *t, int pid)
{
    for (size_t i = 0; i < t->nseen; i++)
        if (t->seen[i].pid == pid)
            return true;
    return false;
}

void run_tree_note_reaped(run_tree *t, int pid)
{
    if (!run_tree_was_member(t, pid))
        run_tree_seen(t, pid, 0);
}

static bool is_protected(const run_tree *t, int pid)
{
    if (pid == t->self || pid == 1)
        return true;
    for (size_t i = 0; i < t->nancestors; i++)
        if (t->ancestors[i] == pid)
            return true;
    return false;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_proc(const void *a, const void *b)
{
    const run_proc *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Appends p to the members unless it is protected or dead, and records it as seen. */
static void keep_member(run_tree *t, const run_proc *p, run_proc **out, size_t *n, size_t *cap)
{
    if (is_protected(t, p->pid) || p->state == 'X')
        return;
    if (p->state == 'Z' && !zombie_with_threads(p->pid))
        return;
    hbm_grow((void **)out, cap, *n, sizeof **out);
    (*out)[(*n)++] = *p;
    run_seen *s = run_tree_seen(t, p->pid, p->start);
    memcpy(s->comm, p->comm, sizeof s->comm);
}

static void push_pid(int **v, size_t *n, size_t *cap, int pid)
{
    hbm_grow((void **)v, cap, *n, sizeof **v);
    (*v)[(*n)++] = pid;
}

/* Appends the children of every thread of pid (a process that vanished has none). */
static void add_children(int pid, int **v, size_t *n, size_t *cap)
{
    char path[sizeof "/proc//task//children" + 12 + NAME_MAX]; /* a pid, a directory entry */
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char *text = NULL;
        snprintf(path, sizeof path, "/proc/%d/task/%s/children", pid, e->d_name);
        if (hbm_read_file(path, 1 << 22, &text, NULL, NULL) < 0)
            continue;
        for (char *q = text, *end; *q; q = end) {
            long c = strtol(q, &end, 10);
            if (end == q)
                break;
            if (c > 0)
                push_pid(v, n, cap, (int)c);
        }
        free(text);
    }
    closedir(d);
}

/* Members from the leaf and the descendants alone; cgp is sorted. */
static void members_known(run_tree *t, const int *cgp, size_t ncg, run_proc **out, size_t *n)
{
    int *v = NULL;
    size_t nv = 0, capv = 0;
    push_pid(&v, &nv, &capv, t->self);
    /* breadth first; the bound stops a loop that pid reuse during the walk could make */
    for (size_t i = 0; i < nv && nv < ((size_t)1 << 22); i++)
        add_children(v[i], &v, &nv, &capv);
    for (size_t i = 0; i < ncg; i++)
        push_pid(&v, &nv, &capv, cgp[i]);
    if (nv > 1)
        qsort(v, nv, sizeof *v, cmp_int);
    size_t cap = 0;
    for (size_t i = 0; i < nv; i++) {
        run_proc p;
        if ((i > 0 && v[i] == v[i - 1]) || read_stat(v[i], &p) < 0)
            continue; /* a repeat, or vanished: normal */
        keep_member(t, &p, out, n, &cap);
    }
    free(v);
}

int run_tree_members(run_tree *t, run_proc **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int *cgp = NULL;
    size_t ncg = 0;
    run_cgroup_pids(t->cg, &cgp, &ncg);
    if (ncg > 1)
        qsort(cgp, ncg, sizeof *cgp, cmp_int);
    size_t cap = 0;

    if (!t->proc_usable) {
        /* /proc belongs to another PID namespace: only the cgroup can name members */
        for (size_t i = 0; i < ncg; i++) {
            if (is_protected(t, cgp[i]))
                continue;
            hbm_grow((void **)out, &cap, *n, sizeof **out);
            run_proc *p = &(*out)[(*n)++];
            memset(p, 0, sizeof *p);
            p->pid = cgp[i];
            p->state = '?';
        }
        free(cgp);
        return 0;
    }
    if (t->cg && t->cg->active && t->has_children) {
        members_known(t, cgp, ncg, out, n);
        free(cgp);
        return 0;
    }

    DIR *d = opendir("/proc");
    if (!d) {
        free(cgp);
        return -1;
    }
    run_proc *all = NULL;
    size_t nall = 0, capall = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        run_proc p;
        if (read_stat(atoi(e->d_name), &p) < 0)
            continue; /* vanished: normal */
        hbm_grow((void **)&all, &capall, nall, sizeof *all);
        all[nall++] = p;
    }
    closedir(d);

    bool *desc = hbm_xcalloc(nall ? nall : 1, sizeof *desc);
    /* descendants of hbmctl: walk each parent chain (pid-sorted, so bsearch) until it
     * reaches hbmctl, a known answer, or the top; 0 unknown, 1 yes, 2 no */
    if (nall > 1)
        qsort(all, nall, sizeof *all, cmp_proc);
    unsigned char *memo = hbm_xcalloc(nall ? nall : 1, 1);
    size_t *chain = hbm_xcalloc(nall ? nall : 1, sizeof *chain);
    for (size_t i = 0; i < nall; i++) {
        size_t nc = 0, cur = i;
        unsigned char ans = 2;
        for (;;) {
            if (memo[cur]) {
                ans = memo[cur];
                break;
            }
            chain[nc++] = cur;
            if (all[cur].ppid == t->self) {
                ans = 1;
                break;
            }
            run_proc key = {.pid = all[cur].ppid};
            run_proc *par = all[cur].ppid > 0 && nc < nall
                                ? bsearch(&key, all, nall, sizeof *all, cmp_proc) : NULL;
            if (!par || par->pid == t->self)
                break;
            cur = (size_t)(par - all);
        }
        for (size_t k = 0; k < nc; k++)
            memo[chain[k]] = ans;
    }
    for (size_t i = 0; i < nall; i++)
        desc[i] = memo[i] == 1;
    free(memo);
    free(chain);
    for (size_t i = 0; i < nall; i++) {
        const run_proc *p = &all[i];
        bool m = desc[i];
        if (t->child_pgid > 0 && (p->pgrp == t->child_pgid || (t->by_session && p->sid == t->child_pgid)))
            m = true;
        if (ncg && bsearch(&p->pid, cgp, ncg, sizeof *cgp, cmp_int))
            m = true;
        if (m)
            keep_member(t, p, out, n, &cap);
    }
    free(desc);
    free(all);
    free(cgp);
    return 0;
}

int run_signal_proc(const run_proc *p, int sig)
{
    if (p->start == 0) {
        /* no identity to check (foreign /proc): the pid came from our own cgroup */
        return kill(p->pid, sig) == 0 ? 0 : 1;
    }
    hbm_kill_outcome out;
    if (hbm_host_kill_checked(p->pid, p->start, sig, &out, NULL, NULL) < 0)
        return 1;
    return out == HBM_KILL_SENT ? 0 : 1;
}

size_t run_tree_scan(run_tree *t, int gen, run_proc **m)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nseen; i++)
        if (t->seen[i].stop_gen == gen)
            t->seen[i].alive_now = false;
    if (run_tree_members(t, m, &n) < 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        run_seen *e = run_tree_seen(t, (*m)[i].pid, (*m)[i].start);
        if (e->stop_gen != gen) {
            e->stop_gen = gen;
            e->last_sig = 0;
        }
        e->alive_now = true;
    }
    return n;
}
