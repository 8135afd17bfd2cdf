/* Snapshot round trips: an observation written, read back and written again gives the same
 * bytes, so no field (device, process, topology, host fact, null) is lost or changed by the
 * reader. Observations: every npu-smi capture in the fixtures and examples, with topology
 * and logic ids where captured, joined with the host trees of the fixtures and with this
 * machine's own host facts; and the snapshot files of the examples and the fuzz corpus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <cmocka.h>

#include "hbm/npusmi.h"
#include "hbm/snapshot.h"
#include "hbm/verdict.h"

#define SRC HBM_SOURCE_DIR "/"
#define NPUSMI SRC "tests/fixtures/npu-smi/"
#define DOCTOR SRC "tests/fixtures/doctor/"

/* As `hbmctl snapshot` writes it. */
static char *dump(const hbm_obs *obs)
{
    json_t *j = hbm_snapshot_to_json(obs);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(j);
    assert_non_null(text);
    return text;
}

/* Fails with the first line where two writes differ. */
static void same_text(const char *what, const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return;
    int line = 1;
    size_t i = 0, start = 0;
    for (; a[i] && a[i] == b[i]; i++)
        if (a[i] == '\n') {
            line++;
            start = i + 1;
        }
    fail_msg("%s: the second write differs at line %d:\n  first:  %.120s\n  second: %.120s", what,
             line, a + start, b + start);
}

/* Write, read (named as the observation's source, as a replay names it), write again. Also
 * checks the read-back observation's counts, since equal text of two empty reads proves
 * nothing. */
static void round_trip(const hbm_obs *obs, const char *what)
{
    char *first = dump(obs);
    hbm_obs back;
    hbm_err err = {{0}};
    if (hbm_snapshot_parse(&back, first, strlen(first), obs->source, &err) < 0)
        fail_msg("%s: reading the first write: %s", what, err.msg);
    assert_int_equal(back.ndevs, obs->ndevs);
    assert_int_equal(back.has_host, obs->has_host);
    if (obs->has_host) {
        assert_int_equal(back.host.nprocs, obs->host.nprocs);
        assert_int_equal(back.host.nsysv, obs->host.nsysv);
        assert_int_equal(back.host.nposix, obs->host.nposix);
        assert_int_equal(back.host.nlisteners, obs->host.nlisteners);
        assert_int_equal(back.host.nhuge, obs->host.nhuge);
    }
    for (size_t i = 0; i < obs->ndevs; i++) {
        assert_int_equal(back.devs[i].nprocs, obs->devs[i].nprocs);
        assert_int_equal(back.devs[i].verdict, obs->devs[i].verdict);
        assert_string_equal(back.devs[i].reason, obs->devs[i].reason);
    }
    char *second = dump(&back);
    same_text(what, first, second);
    free(first);
    free(second);
    hbm_obs_free(&back);
}

static char *slurp(const char *path, size_t *len)
{
    char *text = NULL;
    hbm_err err = {{0}};
    if (hbm_read_file(path, 1 << 22, &text, len, &err) < 0)
        fail_msg("%s", err.msg);
    return text;
}

typedef int (*npusmi_reader)(hbm_obs *, const char *, size_t, const char *, hbm_err *);

static void add_text(hbm_obs *obs, npusmi_reader read, const char *path)
{
    size_t len;
    char *text = slurp(path, &len);
    hbm_err err = {{0}};
    if (read(obs, text, len, path, &err) < 0)
        fail_msg("%s", err.msg);
    free(text);
}

/* An observation from an `npu-smi info` capture, as the npu-smi text source makes it. */
static void from_npusmi(hbm_obs *obs, const char *path)
{
    hbm_obs_init(obs);
    add_text(obs, hbm_npusmi_parse_info, path);
    snprintf(obs->backend, sizeof obs->backend, "npu-smi");
    snprintf(obs->source, sizeof obs->source, "%s", path);
    snprintf(obs->hostname, sizeof obs->hostname, "fixture-host");
    obs->captured_at = 1764000000.0;
}

/* Host facts scanned under root (NULL: this machine), recording the pids the devices list. */
static void join_host(hbm_obs *obs, const char *root, const int *extra, size_t nextra)
{
    int want[64];
    size_t n = 0;
    for (size_t i = 0; i < obs->ndevs; i++)
        for (size_t j = 0; j < obs->devs[i].nprocs && n < 48; j++)
            want[n++] = (int)obs->devs[i].procs[j].pid;
    for (size_t i = 0; i < nextra && n < 64; i++)
        want[n++] = extra[i];
    hbm_host_opts o = {.root = root, .want_pids = want, .nwant_pids = n};
    hbm_err err = {{0}};
    if (hbm_host_scan(&obs->host, &o, &err) < 0)
        fail_msg("scan of %s: %s", root ? root : "this host", err.msg);
    obs->has_host = true;
}

static const char *const CAPTURES[] = {
    NPUSMI "01-910B3-8card-npusmi25.2-1proc.txt",
    NPUSMI "02-910B3-8card-npusmi25.0rc1-8proc-emptyname.txt",
    NPUSMI "03-910_93-A3-8npu16chip-npusmi25.3rc1-multiproc.txt",
    NPUSMI "04-Ascend910-1stgen-name910B-8card-npusmi24.1-noproctable.txt",
    NPUSMI "05-310-1card-npusmi23.0-noproc.txt",
    NPUSMI "07-Ascend910-1stgen-910ProB-1visible-npusmi23.0rc1-noproc.txt",
    NPUSMI "08-910B4-1card-npusmi24.1rc1-noproc-container.txt",
    NPUSMI "09-910B4-1card-npusmi26.0rc1-widelayout-pidincontainer-FRAGMENT.txt",
    NPUSMI "11-310P3-1chip-npusmi22.0.0-drv22.0.2-noproctable.txt",
    NPUSMI "12-310P3-2npu-npusmi25.5.1-host-noproctable.txt",
    NPUSMI "13-310P3-hami-softslice-incontainer-npusmi25.5.1-npuid32768.txt",
    NPUSMI "14-310P3-300IDuo-1card2chip-npusmi24.1rc2-npuid1792-noproc.txt",
    NPUSMI "16-310B1-1chip-npusmi23.0rc3-busid-NA-hugepages.txt",
    SRC "examples/310P3-after-docker-rm.npu-smi.txt",
    SRC "examples/8x910B4-half-busy.npu-smi.txt",
};

/* Each capture alone: devices, processes and unknowns, no host. */
static void test_npusmi_captures(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof CAPTURES / sizeof CAPTURES[0]; i++) {
        hbm_obs obs;
        from_npusmi(&obs, CAPTURES[i]);
        assert_true(obs.ndevs > 0);
        hbm_verdict_apply(&obs);
        round_trip(&obs, CAPTURES[i]);
        hbm_obs_free(&obs);
    }
}

/* An eight-card 910B3 capture with its logic-id map and HCCS topology. */
static void test_npusmi_map_and_topology(void **state)
{
    (void)state;
    hbm_obs obs;
    from_npusmi(&obs, CAPTURES[0]);
    add_text(&obs, hbm_npusmi_parse_map, DOCTOR "npu-smi/map-constructed-910B3-8card.txt");
    add_text(&obs, hbm_npusmi_parse_topo, DOCTOR "npu-smi/topo-02-910B3-8card-HCCS-legend-NA.txt");
    assert_non_null(obs.topo);
    assert_int_not_equal(obs.devs[3].logic_id, HBM_UNKNOWN);
    hbm_verdict_apply(&obs);
    round_trip(&obs, "910B3 with map and topology");
    hbm_obs_free(&obs);
}

/* Captures joined with the host trees of the fixtures: processes with containers and
 * cgroups, zombies, SysV and POSIX segments, listeners, hugepages, THP. */
static void test_fixture_hosts(void **state)
{
    (void)state;
    static const char *const roots[] = {
        SRC "tests/fixtures/host/containers",
        SRC "tests/fixtures/host/system",
        SRC "tests/fixtures/host/container-view",
        DOCTOR "root-broken",
    };
    static const int pids[] = {1009, 1022, 4242, 1, 2};
    for (size_t r = 0; r < sizeof roots / sizeof roots[0]; r++)
        for (size_t c = 0; c < 2; c++) {
            hbm_obs obs;
            from_npusmi(&obs, c ? CAPTURES[13] : CAPTURES[2]);
            join_host(&obs, roots[r], pids, sizeof pids / sizeof pids[0]);
            assert_true(obs.host.nprocs > 0);
            hbm_verdict_apply(&obs);
            round_trip(&obs, roots[r]);
            hbm_obs_free(&obs);
        }
}

/* This machine's own host facts, with a child of this test listed as a device's process,
 * a zombie, and a SysV segment this test holds. */
static void test_this_host(void **state)
{
    (void)state;
    pid_t sleeper = fork();
    assert_true(sleeper >= 0);
    if (sleeper == 0) {
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    pid_t zombie = fork();
    assert_true(zombie >= 0);
    if (zombie == 0)
        _exit(0);
    int shmid = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    assert_true(shmid >= 0);
    void *at = shmat(shmid, NULL, 0);
    assert_ptr_not_equal(at, (void *)-1);
    usleep(100 * 1000); /* the zombie has exited by now */

    hbm_obs obs;
    from_npusmi(&obs, CAPTURES[0]);
    hbm_dproc *p = hbm_device_add_proc(&obs.devs[0]);
    p->pid = sleeper;
    p->memory_bytes = 30 * HBM_GIB;
    hbm_dproc *z = hbm_device_add_proc(&obs.devs[1]);
    z->pid = zombie;
    z->memory_bytes = 512 * HBM_MIB;
    const int extra[] = {(int)getpid()};
    join_host(&obs, NULL, extra, 1);
    assert_non_null(hbm_host_find(&obs.host, (int)sleeper));
    assert_true(obs.host.nsysv > 0);
    hbm_verdict_apply(&obs);
    round_trip(&obs, "this host");
    hbm_obs_free(&obs);

    shmdt(at);
    shmctl(shmid, IPC_RMID, NULL);
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
    waitpid(zombie, NULL, 0);
}

/* Snapshot files read, then written twice. */
static void test_snapshot_files(void **state)
{
    (void)state;
    static const char *const files[] = {
        SRC "examples/310P3-after-docker-rm.snapshot.json",
        SRC "fuzz/corpus/core_snapshot/no-host.json",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        size_t len;
        char *text = slurp(files[i], &len);
        hbm_obs obs;
        hbm_err err = {{0}};
        if (hbm_snapshot_parse(&obs, text, len, files[i], &err) < 0)
            fail_msg("%s", err.msg);
        round_trip(&obs, files[i]);
        hbm_obs_free(&obs);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npusmi_captures),
        cmocka_unit_test(test_npusmi_map_and_topology),
        cmocka_unit_test(test_fixture_hosts),
        cmocka_unit_test(test_this_host),
        cmocka_unit_test(test_snapshot_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
