/* The safety rules with real processes and real segments: a recycled pid (start time
 * mismatch) is never signalled, PID 1, ancestors and processes of running containers are
 * kept, the last checks before removing shared memory, and the audit log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "hbm/doctor.h"
#include "hbm/host.h"
#include "hbm/util.h"

static pid_t sleeper(void)
{
    pid_t c = fork();
    if (c == 0) {
        alarm(120);
        for (;;)
            pause();
    }
    /* Wait until the child runs its own image state (its stat is readable). */
    uint64_t st;
    while (hbm_host_starttime(NULL, c, &st, NULL) < 0)
        usleep(1000);
    return c;
}

static bool alive(pid_t p)
{
    char st = 0;
    uint64_t t;
    return hbm_host_starttime(NULL, p, &t, &st) == 0 && st != 'Z';
}

static void test_kill_checked(void **state)
{
    (void)state;
    pid_t c = sleeper();
    uint64_t start;
    assert_int_equal(hbm_host_starttime(NULL, c, &start, NULL), 0);
    hbm_kill_outcome o;
    hbm_err err = {{0}};
    /* The pid now names a process with another start time: a recycled pid. */
    assert_int_equal(hbm_host_kill_checked(c, start + 1, SIGKILL, &o, NULL, &err), 0);
    assert_int_equal(o, HBM_KILL_MISMATCH);
    usleep(50000);
    assert_true(alive(c));
    bool raced = true;
    assert_int_equal(hbm_host_kill_checked(c, start, SIGTERM, &o, &raced, &err), 0);
    assert_int_equal(o, HBM_KILL_SENT);
    assert_int_equal(hbm_host_wait_exit(c, start, 10), 1); /* a zombie counts as exited */
    waitpid(c, NULL, 0);
    assert_int_equal(hbm_host_kill_checked(c, start, SIGTERM, &o, NULL, &err), 0);
    assert_true(o == HBM_KILL_GONE || o == HBM_KILL_MISMATCH);
    assert_int_equal(hbm_host_kill_checked(1, 1, SIGTERM, &o, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "refusing"));
}

static void test_ancestors(void **state)
{
    (void)state;
    assert_true(hbm_host_is_self_or_ancestor(getpid()));
    assert_true(hbm_host_is_self_or_ancestor(getppid()));
    assert_true(hbm_host_is_self_or_ancestor(1));
    pid_t c = sleeper();
    assert_false(hbm_host_is_self_or_ancestor(c));
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
}

static hbm_finding *kill_finding(hbm_findings *f, int pid, uint64_t start)
{
    f->items = hbm_xrealloc(f->items, (f->n + 1) * sizeof *f->items);
    hbm_finding *x = &f->items[f->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->id, sizeof x->id, "orphan-holder");
    x->device = 0;
    x->action.kind = HBM_ACT_KILL;
    x->action.pid = pid;
    x->action.starttime = start;
    return x;
}

static void add_proc(hbm_obs *obs, int pid, const char *container, bool gone)
{
    hbm_host *h = &obs->host;
    h->procs = hbm_xrealloc(h->procs, (h->nprocs + 1) * sizeof *h->procs);
    hbm_hproc *p = &h->procs[h->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    snprintf(p->comm, sizeof p->comm, "worker");
    snprintf(p->container_id, sizeof p->container_id, "%s", container);
    p->cgroup_gone = gone;
}

static void test_plan_rules(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    obs.has_host = true;
    obs.host.sees_host_pids = true;
    add_proc(&obs, 1, "", false);
    add_proc(&obs, getppid(), "", false);
    add_proc(&obs, 999001, "4f1c2a9be07d3c55a1e8b6f2d90c7a41e3b5f68d2c1a0e9f7b6c5d4e3f2a1b0c", false);
    add_proc(&obs, 999002, "aa1c2a9be07d3c55a1e8b6f2d90c7a41e3b5f68d2c1a0e9f7b6c5d4e3f2a1b0c", true);
    hbm_findings f = {0};
    kill_finding(&f, 1, 1);
    kill_finding(&f, getppid(), 1);
    kill_finding(&f, 999001, 1);
    kill_finding(&f, 999002, 1);
    kill_finding(&f, 999002, 1); /* the same process on a second chip */
    hbm_clean_opts o = {.grace_s = 1};
    hbm_clean_plan plan;
    hbm_clean_plan_make(&obs, &f, &o, &plan);
    assert_int_equal(plan.n, 4);
    assert_false(plan.steps[0].allowed);
    assert_non_null(strstr(plan.steps[0].why, "init"));
    assert_false(plan.steps[1].allowed);
    assert_non_null(strstr(plan.steps[1].why, "ancestors"));
    assert_false(plan.steps[2].allowed);
    assert_non_null(strstr(plan.steps[2].why, "which still exists: name it with --pid 999001"));
    assert_true(plan.steps[3].allowed); /* its container is gone */
    hbm_clean_plan_free(&plan);

    /* Named by pid: the running container's process is allowed, PID 1 still is not. */
    int named[] = {999001, 1};
    o.named_pids = named;
    o.nnamed = 2;
    hbm_clean_plan_make(&obs, &f, &o, &plan);
    assert_true(plan.steps[2].allowed);
    assert_false(plan.steps[0].allowed);
    hbm_clean_plan_free(&plan);
    free(f.items);
    hbm_obs_free(&obs);
}

/* A pid recycled between the observation and the action is not signalled, and the audit
 * log says so. */
static void test_apply_recycled(void **state)
{
    (void)state;
    char d[PATH_MAX];
    assert_int_equal(th_mkdtemp(d, sizeof d, "doc-test"), 0);
    char audit[400];
    th_path(audit, sizeof audit, d, "sub/audit.jsonl");
    pid_t c = sleeper();
    uint64_t start;
    assert_int_equal(hbm_host_starttime(NULL, c, &start, NULL), 0);
    hbm_obs obs;
    hbm_obs_init(&obs);
    obs.has_host = true;
    add_proc(&obs, c, "", false);
    hbm_findings f = {0};
    kill_finding(&f, c, start - 1);
    hbm_clean_opts o = {.grace_s = 1, .audit_path = audit, .command = "test"};
    hbm_clean_plan plan;
    hbm_clean_plan_make(&obs, &f, &o, &plan);
    assert_true(plan.steps[0].allowed);
    hbm_err err = {{0}};
    assert_int_equal(hbm_clean_apply(&plan, &o, &err), 1);
    assert_false(plan.steps[0].done);
    assert_non_null(strstr(plan.steps[0].result, "not signalled"));
    assert_true(alive(c));
    char *text;
    size_t len;
    assert_int_equal(hbm_read_file(audit, 1 << 20, &text, &len, &err), 0);
    /* Two records, one per line: the start and the step, kept. */
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    json_error_t je;
    json_t *second = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, &je);
    assert_non_null(second);
    assert_string_equal(json_string_value(json_object_get(second, "outcome")), "kept");
    assert_int_equal(json_integer_value(json_object_get(second, "pid")), c);
    assert_non_null(json_object_get(second, "time"));
    json_decref(second);
    free(text);

    /* The right identity: SIGTERM ends it. */
    f.items[0].action.starttime = start;
    hbm_clean_plan_free(&plan);
    hbm_clean_plan_make(&obs, &f, &o, &plan);
    assert_int_equal(hbm_clean_apply(&plan, &o, &err), 0);
    assert_true(plan.steps[0].done);
    waitpid(c, NULL, 0);
    hbm_clean_plan_free(&plan);
    free(f.items);
    hbm_obs_free(&obs);

    /* An audit log that cannot be written stops everything before any action. */
    hbm_clean_opts bad = {.grace_s = 1, .audit_path = "/proc/hbm-no/audit.jsonl"};
    hbm_clean_plan empty = {0};
    assert_int_equal(hbm_clean_apply(&empty, &bad, &err), -1);
    assert_non_null(strstr(err.msg, "audit"));
    assert_int_equal(th_rmtree(d), 0);
}

/* A SysV segment whose creator has exited and that nobody attached: its id (key in *key). */
static int dead_segment(int64_t *key)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t c = fork();
    if (c == 0) {
        int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        _exit(write(p[1], &id, sizeof id) == sizeof id ? 0 : 1);
    }
    int id;
    assert_int_equal(read(p[0], &id, sizeof id), (ssize_t)sizeof id);
    waitpid(c, NULL, 0);
    close(p[0]);
    close(p[1]);
    struct shmid_ds ds;
    assert_int_equal(shmctl(id, IPC_STAT, &ds), 0);
    *key = (int64_t)(uint32_t)ds.shm_perm.__key;
    return id;
}

static void test_sysv_recheck(void **state)
{
    (void)state;
    char why[300];
    /* Creator dead, never attached: stale. */
    int64_t key;
    int dead = dead_segment(&key);
    assert_int_equal(hbm_host_sysv_stale_now(dead, key, why, sizeof why), 1);
    /* Attached now (by us): kept. */
    void *a = shmat(dead, NULL, 0);
    assert_ptr_not_equal(a, (void *)-1);
    assert_int_equal(hbm_host_sysv_stale_now(dead, key, why, sizeof why), 0);
    assert_non_null(strstr(why, "attached"));
    shmdt(a);
    /* Detached again, but the last user (us) is alive: kept. */
    assert_int_equal(hbm_host_sysv_stale_now(dead, key, why, sizeof why), 0);
    assert_non_null(strstr(why, "last user"));
    shmctl(dead, IPC_RMID, NULL);
    assert_int_equal(hbm_host_sysv_stale_now(dead, key, why, sizeof why), 0);
    assert_non_null(strstr(why, "already gone"));
    /* Creator alive (like the CANN log daemon): kept. */
    int mine = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    struct shmid_ds ds;
    assert_int_equal(shmctl(mine, IPC_STAT, &ds), 0);
    assert_int_equal(hbm_host_sysv_stale_now(mine, (int64_t)(uint32_t)ds.shm_perm.__key, why,
                                               sizeof why), 0);
    assert_non_null(strstr(why, "creator"));
    shmctl(mine, IPC_RMID, NULL);
}

/* True when some process's mappings cannot be read (a sandbox's init): then nothing may be
 * called unheld. */
static bool uninspectable(void)
{
    FILE *f = popen("for d in /proc/[0-9]*; do [ -e $d/maps ] && ! head -c1 $d/maps >/dev/null "
                    "2>&1 && echo x && break; done", "r");
    char buf[8] = "";
    bool r = f && fgets(buf, sizeof buf, f) != NULL;
    if (f)
        pclose(f);
    return r;
}

static void test_shm_recheck(void **state)
{
    (void)state;
    char d[PATH_MAX];
    assert_int_equal(th_mkdtemp(d, sizeof d, "doc-test"), 0);
    char path[400], why[400];
    th_path(path, sizeof path, d, "obj");
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    assert_ptr_not_equal(m, MAP_FAILED);
    close(fd);
    assert_int_equal(hbm_doctor_shm_unheld_now(path, why, sizeof why), 0);
    assert_non_null(strstr(why, "mapped by pid") ? why : strstr(why, "cannot inspect"));
    munmap(m, 4096);
    fd = open(path, O_RDONLY);
    assert_int_equal(hbm_doctor_shm_unheld_now(path, why, sizeof why), 0);
    close(fd);
    int r = hbm_doctor_shm_unheld_now(path, why, sizeof why);
    if (uninspectable())
        assert_int_equal(r, 0);
    else
        assert_int_equal(r, 1);
    assert_int_equal(hbm_doctor_shm_unheld_now("/nonexistent/x", why, sizeof why), 0);
    assert_int_equal(th_rmtree(d), 0);
}

static hbm_clean_step *step(hbm_clean_plan *p, hbm_action_kind kind)
{
    p->steps = hbm_xrealloc(p->steps, (p->n + 1) * sizeof *p->steps);
    hbm_clean_step *s = &p->steps[p->n++];
    memset(s, 0, sizeof *s);
    s->allowed = true;
    s->device = HBM_UNKNOWN;
    s->action.kind = kind;
    snprintf(s->finding_id, sizeof s->finding_id, "stale");
    return s;
}

/* apply removes a segment whose creator died and nobody attaches, keeps one that a live
 * process attaches, and unlinks a file only when no process holds it. */
static void test_apply_shared_memory(void **state)
{
    (void)state;
    char d[PATH_MAX];
    assert_int_equal(th_mkdtemp(d, sizeof d, "doc-test"), 0);
    char audit[400], held[400], loose[400];
    th_path(audit, sizeof audit, d, "audit.jsonl");
    th_path(held, sizeof held, d, "held");
    th_path(loose, sizeof loose, d, "loose");
    int64_t k1, k2;
    int stale = dead_segment(&k1), busy = dead_segment(&k2);
    void *a = shmat(busy, NULL, 0);
    assert_ptr_not_equal(a, (void *)-1);
    int hfd = open(held, O_RDWR | O_CREAT, 0600);
    int lfd = open(loose, O_RDWR | O_CREAT, 0600);
    assert_true(hfd >= 0 && lfd >= 0);
    close(lfd);
    hbm_clean_plan plan = {0};
    hbm_clean_step *s = step(&plan, HBM_ACT_SYSV_RMID);
    s->action.shmid = stale;
    s->action.key = k1;
    s = step(&plan, HBM_ACT_SYSV_RMID);
    s->action.shmid = busy;
    s->action.key = k2;
    assert_true(snprintf(step(&plan, HBM_ACT_SHM_UNLINK)->action.path, 256, "%s", held) < 256);
    assert_true(snprintf(step(&plan, HBM_ACT_SHM_UNLINK)->action.path, 256, "%s", loose) < 256);
    hbm_clean_opts o = {.audit_path = audit};
    hbm_err err = {{0}};
    int kept = hbm_clean_apply(&plan, &o, &err);
    struct shmid_ds ds;
    assert_true(plan.steps[0].done);
    assert_int_equal(shmctl(stale, IPC_STAT, &ds), -1); /* removed */
    assert_false(plan.steps[1].done);
    assert_non_null(strstr(plan.steps[1].result, "attached"));
    assert_int_equal(shmctl(busy, IPC_STAT, &ds), 0);
    assert_false(plan.steps[2].done);
    assert_int_equal(access(held, F_OK), 0);
    if (uninspectable()) {
        assert_false(plan.steps[3].done);
        assert_int_equal(kept, 3);
    } else {
        assert_true(plan.steps[3].done);
        assert_int_equal(access(loose, F_OK), -1);
        assert_int_equal(kept, 2);
    }
    shmdt(a);
    shmctl(busy, IPC_RMID, NULL);
    close(hfd);
    free(plan.steps);
    assert_int_equal(th_rmtree(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_checked),
        cmocka_unit_test(test_ancestors),
        cmocka_unit_test(test_plan_rules),
        cmocka_unit_test(test_apply_recycled),
        cmocka_unit_test(test_sysv_recheck),
        cmocka_unit_test(test_shm_recheck),
        cmocka_unit_test(test_apply_shared_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
