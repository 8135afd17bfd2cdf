/* The host scan on the live /proc, against real objects this test creates: SysV segments
 * (attached, unattached, creator dead), a zombie, a process holding a fake device file, a
 * TCP listener on 127.0.0.1, /dev/shm objects mapped, held open, and held by nobody, and
 * an interpreter whose command line names vLLM. Everything is removed in the teardown,
 * also after a failed assertion. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "hbm/host.h"
#include "hbm/procfs.h"
#include "hbm/util.h"

static pid_t kids[16];
static int nkids;
static int shmids[8];
static int nshm;
static char shmnames[4][64];
static int nshmnames;
static char tmpdir[PATH_MAX];
static char devpath[PATH_MAX + 16];

static int setup(void **state)
{
    (void)state;
    char t[PATH_MAX];
    if (th_mkdtemp(t, sizeof t, "host-live") < 0 || !realpath(t, tmpdir))
        return -1;
    snprintf(devpath, sizeof devpath, "%s/fakedev0", tmpdir);
    int fd = open(devpath, O_CREAT | O_WRONLY, 0600);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < nkids; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    nkids = 0;
    for (int i = 0; i < nshm; i++)
        shmctl(shmids[i], IPC_RMID, NULL);
    nshm = 0;
    for (int i = 0; i < nshmnames; i++)
        shm_unlink(shmnames[i]);
    nshmnames = 0;
    return th_rmtree(tmpdir);
}

/* Called in both parent and child after fork: only the parent records. */
static pid_t track(pid_t pid)
{
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (pid > 0)
        kids[nkids++] = pid;
    return pid;
}

static void scan(hbm_host *h, const int *want, size_t nwant)
{
    const char *pats[] = {NULL, NULL};
    char glob[PATH_MAX + 16];
    snprintf(glob, sizeof glob, "%s/fakedev*", tmpdir);
    pats[0] = glob;
    hbm_host_opts o = {.root = "", .dev_patterns = pats, .want_pids = want, .nwant_pids = nwant};
    hbm_err err;
    if (hbm_host_scan(h, &o, &err) < 0)
        fail_msg("live scan: %s", err.msg);
}

/* Polls (up to 30 s, generous on a loaded machine) until /proc/PID/fd/FD points at target. */
static bool wait_fd(pid_t pid, int fd, const char *target)
{
    char link[64], buf[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, fd);
    for (int i = 0; i < 3000; i++) {
        ssize_t n = readlink(link, buf, sizeof buf - 1);
        if (n > 0) {
            buf[n] = '\0';
            if (!strcmp(buf, target))
                return true;
        }
        usleep(10000);
    }
    return false;
}

static const hbm_sysv_seg *seg_by_id(const hbm_host *h, int id)
{
    for (size_t i = 0; i < h->nsysv; i++)
        if (h->sysv[i].shmid == id)
            return &h->sysv[i];
    return NULL;
}

static void test_sysv(void **state)
{
    (void)state;
    int attached = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
    int loose = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    assert_true(attached >= 0 && loose >= 0);
    shmids[nshm++] = attached;
    shmids[nshm++] = loose;

    /* a segment whose creator has exited */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t c = fork();
    if (c == 0) {
        int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        (void)!write(pfd[1], &id, sizeof id);
        _exit(0);
    }
    int orphan = -1;
    assert_int_equal(read(pfd[0], &orphan, sizeof orphan), sizeof orphan);
    close(pfd[0]);
    close(pfd[1]);
    assert_true(orphan >= 0);
    shmids[nshm++] = orphan;
    waitpid(c, NULL, 0);
    /* attached after the fork: a fork inherits attachments and its exit would become lpid */
    void *at = shmat(attached, NULL, 0);
    assert_ptr_not_equal(at, (void *)-1);

    hbm_host h;
    scan(&h, NULL, 0);
    const hbm_sysv_seg *a = seg_by_id(&h, attached), *l = seg_by_id(&h, loose),
                       *o = seg_by_id(&h, orphan);
    assert_non_null(a);
    assert_non_null(l);
    assert_non_null(o);
    assert_int_equal(a->nattch, 1);
    assert_int_equal(a->size, 8192);
    assert_int_equal(a->cpid, getpid());
    assert_int_equal(a->lpid, getpid());
    assert_true(a->cpid_alive && a->lpid_alive);
    assert_int_equal(a->perms & 0777, 0600);
    assert_int_equal(a->uid, (int)getuid());
    assert_int_equal(l->nattch, 0);
    assert_int_equal(l->cpid, getpid());
    assert_int_equal(l->lpid, 0);
    assert_true(l->cpid_alive);
    assert_false(l->lpid_alive);
    assert_int_equal(o->cpid, c);
    assert_false(o->cpid_alive);
    /* a live creator is recorded even though it holds no device */
    const hbm_hproc *me = hbm_host_find(&h, getpid());
    assert_non_null(me);
    assert_int_equal(me->state, 'R');
    assert_null(hbm_host_find(&h, c));
    hbm_host_free(&h);
    shmdt(at);
}

static void test_zombie(void **state)
{
    (void)state;
    pid_t z = track(fork());
    if (z == 0)
        _exit(3);
    siginfo_t si;
    /* WNOWAIT: wait for the exit but leave the zombie in place */
    assert_int_equal(waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT), 0);
    int want[] = {z};
    hbm_host h;
    scan(&h, want, 1);
    const hbm_hproc *p = hbm_host_find(&h, z);
    assert_non_null(p);
    assert_int_equal(p->state, 'Z');
    assert_int_equal(p->ppid, getpid());
    assert_string_equal(p->cmdline, "");
    assert_int_equal(p->ndev_paths, 0);
    assert_true(p->starttime > 0);
    assert_true(hbm_host_pid_matches(NULL, z, p->starttime));
    hbm_host_free(&h);
}

/* The parent of a zombie is recorded although it holds nothing and nobody asked for it: a
 * real intermediate process that forks a child and never reaps it. A live child's parent is
 * not recorded, and only one level is (the zombie's grandparent is not). */
static void test_zombie_parent(void **state)
{
    (void)state;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t parent = track(fork());
    if (parent == 0) {
        close(pfd[0]);
        prctl(PR_SET_NAME, "hbm-zparent");
        pid_t z = fork();
        if (z == 0)
            _exit(0);
        (void)!write(pfd[1], &z, sizeof z);
        for (;;)
            pause(); /* never reaps: z stays a zombie */
    }
    close(pfd[1]);
    pid_t z = -1;
    assert_int_equal(read(pfd[0], &z, sizeof z), sizeof z);
    close(pfd[0]);
    pid_t live = track(fork());
    if (live == 0) {
        for (;;)
            pause();
    }
    /* the zombie appears once the child has exited: poll its state */
    bool zombie = false;
    for (int i = 0; i < 3000 && !zombie; i++) {
        uint64_t st;
        char c = 0;
        zombie = hbm_host_starttime(NULL, z, &st, &c) == 0 && c == 'Z';
        if (!zombie)
            usleep(10000);
    }
    assert_true(zombie);
    int want[] = {z, live};
    hbm_host h;
    scan(&h, want, 2);
    const hbm_hproc *zp = hbm_host_find(&h, z);
    assert_non_null(zp);
    assert_int_equal(zp->state, 'Z');
    assert_int_equal(zp->ppid, parent);
    const hbm_hproc *pp = hbm_host_find(&h, parent);
    assert_non_null(pp);
    assert_string_equal(pp->comm, "hbm-zparent");
    assert_int_equal(pp->ppid, getpid());
    assert_true(pp->state == 'S' || pp->state == 'R');
    assert_true(hbm_host_pid_matches(NULL, parent, pp->starttime));
    assert_int_equal(pp->ndev_paths, 0);
    assert_non_null(pp->cmdline);
    /* the live child's parent (this test) and the zombie's grandparent (also this test) are
     * not recorded: it holds nothing here */
    assert_non_null(hbm_host_find(&h, live));
    assert_null(hbm_host_find(&h, getpid()));
    hbm_host_free(&h);
}

static void *hold_device(void *arg)
{
    (void)arg;
    int fd = open(devpath, O_RDONLY);
    (void)fd;
    for (;;)
        pause();
    return NULL;
}

/* A leader that called pthread_exit reads as Z while a thread keeps the device open. */
static void test_zombie_leader(void **state)
{
    (void)state;
    pid_t c = track(fork());
    if (c == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, hold_device, NULL) != 0)
            _exit(1);
        pthread_exit(NULL);
    }
    char stat[64];
    snprintf(stat, sizeof stat, "/proc/%d/stat", c);
    bool zombie = false;
    for (int i = 0; i < 3000 && !zombie; i++) {
        char buf[512] = "";
        FILE *f = fopen(stat, "r");
        if (f) {
            (void)!fgets(buf, sizeof buf, f);
            fclose(f);
        }
        char *close = strrchr(buf, ')');
        zombie = close && close[1] == ' ' && close[2] == 'Z';
        if (!zombie)
            usleep(10000);
    }
    assert_true(zombie);
    hbm_host h;
    const hbm_hproc *p = NULL;
    for (int i = 0; i < 300; i++) { /* until the thread has opened the file */
        scan(&h, NULL, 0);
        p = hbm_host_find(&h, c);
        if (p && p->ndev_paths)
            break;
        hbm_host_free(&h);
        p = NULL;
        usleep(100000);
    }
    assert_non_null(p);
    assert_int_equal(p->state, 'Z');
    assert_int_equal(p->zombie_live_threads, 1);
    assert_string_equal(p->dev_paths[0], devpath);
    hbm_host_free(&h);
    hbm_hproc one;
    hbm_err err;
    assert_int_equal(hbm_host_read_proc(NULL, c, &one, &err), 0);
    assert_int_equal(one.zombie_live_threads, 1);
    hbm_hproc_free(&one);
}

static void test_device_holder(void **state)
{
    (void)state;
    pid_t c = track(fork());
    if (c == 0) {
        char *envp[] = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=3", NULL};
        execle("/bin/sh", "sh", "-c", "exec 3<\"$0\"; exec sleep 600", devpath, (char *)NULL,
               envp);
        _exit(127);
    }
    assert_true(wait_fd(c, 3, devpath));
    /* sleep must have replaced sh, so the environment is the one execle gave */
    for (int i = 0; i < 3000; i++) {
        char comm[32] = "", path[64];
        snprintf(path, sizeof path, "/proc/%d/comm", c);
        FILE *f = fopen(path, "r");
        if (f) {
            (void)!fgets(comm, sizeof comm, f);
            fclose(f);
        }
        if (!strcmp(comm, "sleep\n"))
            break;
        usleep(10000);
    }
    hbm_host h;
    scan(&h, NULL, 0);
    const hbm_hproc *p = hbm_host_find(&h, c);
    assert_non_null(p);
    assert_int_equal(p->ndev_paths, 1);
    assert_string_equal(p->dev_paths[0], devpath);
    assert_string_equal(p->comm, "sleep");
    assert_string_equal(p->cmdline, "sleep 600");
    assert_int_equal(p->ppid, getpid());
    assert_int_equal(p->uid, (int)getuid());
    assert_true(p->state == 'S' || p->state == 'R');
    assert_string_equal(p->visible_devices, "3");
    assert_true(p->nnspid >= 1);
    assert_int_equal(p->nspid[p->nnspid - 1], c);
    uint64_t start = p->starttime;
    /* the test itself holds no fake device */
    const hbm_hproc *me = hbm_host_find(&h, getpid());
    assert_true(!me || me->ndev_paths == 0);
    hbm_host_free(&h);

    assert_true(hbm_host_pid_matches(NULL, c, start));
    assert_false(hbm_host_pid_matches(NULL, c, start + 1));
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    nkids--;
    assert_false(hbm_host_pid_matches(NULL, c, start));
    hbm_hproc gone;
    hbm_err err;
    assert_int_equal(hbm_host_read_proc(NULL, c, &gone, &err), -1);
}

static void test_listener(void **state)
{
    (void)state;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t c = track(fork());
    if (c == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        int port = -1;
        if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 4) == 0 &&
            getsockname(s, (struct sockaddr *)&a, &al) == 0)
            port = ntohs(a.sin_port);
        (void)!write(pfd[1], &port, sizeof port);
        pause();
        _exit(0);
    }
    int port = -1;
    assert_int_equal(read(pfd[0], &port, sizeof port), sizeof port);
    close(pfd[0]);
    close(pfd[1]);
    assert_true(port > 0);
    hbm_host h;
    scan(&h, NULL, 0);
    const hbm_listener *l = NULL;
    for (size_t i = 0; i < h.nlisteners; i++)
        if (h.listeners[i].port == port && !strcmp(h.listeners[i].addr, "127.0.0.1"))
            l = &h.listeners[i];
    assert_non_null(l);
    assert_int_equal(l->pid, c);
    assert_true(l->inode > 0);
    /* the live scan may ask the kernel over netlink; /proc/net/tcp must say the same */
    char *text;
    size_t len;
    hbm_err err;
    assert_int_equal(hbm_read_file("/proc/net/tcp", 1 << 26, &text, &len, &err), 0);
    hbm_listener *fl = NULL;
    size_t nfl = 0;
    assert_int_equal(hbm_procfs_parse_net_tcp(text, len, false, &fl, &nfl, &err), 0);
    free(text);
    bool same = false;
    for (size_t i = 0; i < nfl; i++)
        same |= fl[i].port == port && fl[i].inode == l->inode && !strcmp(fl[i].addr, l->addr);
    free(fl);
    assert_true(same);
    assert_non_null(hbm_host_find(&h, c)); /* a listener's owner is recorded */
    hbm_host_free(&h);
}

static const hbm_posix_shm *posix_by_name(const hbm_host *h, const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    for (size_t i = 0; i < h->nposix; i++)
        if (!strcmp(h->posix[i].path, path))
            return &h->posix[i];
    return NULL;
}

static bool holds(const hbm_posix_shm *o, pid_t pid)
{
    for (size_t i = 0; i < o->nholders; i++)
        if (o->holders[i] == pid)
            return true;
    return false;
}

static const char *shm_make(const char *what)
{
    char *name = shmnames[nshmnames++];
    snprintf(name, 64, "/hbm-host-live-%d-%s", (int)getpid(), what);
    int fd = shm_open(name, O_CREAT | O_RDWR | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 65536), 0);
    close(fd);
    return name;
}

static void test_devshm(void **state)
{
    (void)state;
    const char *mapped = shm_make("mapped"), *open_only = shm_make("open"),
               *nobody = shm_make("nobody");
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t m = track(fork());
    if (m == 0) { /* maps the object, keeps no fd */
        int fd = shm_open(mapped, O_RDWR, 0);
        void *p = fd >= 0 ? mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
        if (fd >= 0)
            close(fd);
        char ok = p && p != MAP_FAILED;
        (void)!write(pfd[1], &ok, 1);
        pause();
        _exit(0);
    }
    pid_t o = track(fork());
    if (o == 0) { /* holds an fd, maps nothing */
        int fd = shm_open(open_only, O_RDONLY, 0);
        char ok = fd >= 0;
        (void)!write(pfd[1], &ok, 1);
        pause();
        _exit(0);
    }
    char ok1 = 0, ok2 = 0;
    assert_int_equal(read(pfd[0], &ok1, 1), 1);
    assert_int_equal(read(pfd[0], &ok2, 1), 1);
    close(pfd[0]);
    close(pfd[1]);
    assert_true(ok1 && ok2);

    hbm_host h;
    scan(&h, NULL, 0);
    const hbm_posix_shm *pm = posix_by_name(&h, mapped), *po = posix_by_name(&h, open_only),
                        *pn = posix_by_name(&h, nobody);
    assert_non_null(pm);
    assert_non_null(po);
    assert_non_null(pn);
    assert_int_equal(pm->size, 65536);
    assert_int_equal(pm->uid, (int)getuid());
    assert_true(holds(pm, m));
    assert_false(holds(pm, o));
    assert_true(holds(po, o));
    assert_false(holds(po, m));
    assert_int_equal(pn->nholders, 0);
    /* a holder's pid on the object is all a check needs: the process is not read in full */
    assert_null(hbm_host_find(&h, m));
    assert_null(hbm_host_find(&h, o));
    assert_true(h.devshm_total_bytes > 0);
    assert_in_range(h.devshm_used_bytes, 0, h.devshm_total_bytes);
    hbm_host_free(&h);
}

static void test_server_and_pidns(void **state)
{
    (void)state;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    pid_t c = track(fork());
    if (c == 0) {
        execl("/usr/bin/python3", "python3", "-c", "import time; time.sleep(600)",
              "--served-model-name=vllm-test", (char *)NULL);
        _exit(127);
    }
    hbm_host h;
    const hbm_hproc *p = NULL;
    for (int i = 0; i < 300 && !p; i++) { /* until python has replaced the fork */
        scan(&h, NULL, 0);
        p = hbm_host_find(&h, c);
        if (!p) {
            hbm_host_free(&h);
            usleep(100000);
        }
    }
    assert_non_null(p);
    assert_non_null(strstr(p->cmdline, "vllm-test"));
    assert_int_equal(p->ndev_paths, 0);

    /* sees_host_pids against an independent check: hbmctl's PID namespace is the one of
     * the kernel threads (pid 2) exactly when it is the host's */
    char a[64] = "", b[64] = "";
    bool same = readlink("/proc/self/ns/pid", a, sizeof a - 1) > 0 &&
                readlink("/proc/2/ns/pid", b, sizeof b - 1) > 0 && !strcmp(a, b);
    assert_int_equal(h.sees_host_pids, same);
    assert_true(strlen(h.sees_host_pids_why) > 10);
    assert_true(h.clk_tck > 0);
    assert_true(h.boot_time > 1e9);
    hbm_host_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sysv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zombie, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zombie_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zombie_leader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listener, setup, teardown),
        cmocka_unit_test_setup_teardown(test_devshm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_and_pidns, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
