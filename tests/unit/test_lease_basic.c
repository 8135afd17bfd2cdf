/* Leases on real files with real processes, and pick's choice on built observations and on
 * topology read from npu-smi samples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "hbm/lease.h"
#include "hbm/npusmi.h"
#include "hbm/util.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return th_mkdtemp(dir, sizeof dir, "lease-test");
}

static int teardown(void **state)
{
    (void)state;
    return th_rmtree(dir);
}

static void test_acquire_query_release(void **state)
{
    (void)state;
    hbm_err err = {{0}};
    int fd = -1, fd2 = -1;
    hbm_lease_info h;
    assert_int_equal(hbm_lease_acquire(dir, "web", 3, &fd, &h, &err), 0);
    assert_true(fd >= 0);
    /* A second open file description conflicts even in the same process. */
    assert_int_equal(hbm_lease_acquire(dir, "other", 3, &fd2, &h, &err), 1);
    assert_int_equal(fd2, -1);
    assert_string_equal(h.name, "web");
    assert_int_equal(h.pid, getpid());
    assert_int_equal(hbm_lease_query(dir, 3, &h, &err), 1);
    assert_int_equal(hbm_lease_query(dir, 4, &h, &err), 0);
    hbm_lease_info *ls;
    size_t n;
    assert_int_equal(hbm_lease_list(dir, &ls, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_true(ls[0].held);
    assert_int_equal(ls[0].device, 3);
    free(ls);
    hbm_lease_release(fd);
    assert_int_equal(hbm_lease_query(dir, 3, &h, &err), 0);
    assert_int_equal(hbm_lease_acquire(dir, "other", 3, &fd2, &h, &err), 0);
    hbm_lease_release(fd2);
}

static void test_bad_names(void **state)
{
    (void)state;
    hbm_err err = {{0}};
    int fd;
    assert_int_equal(hbm_lease_acquire(dir, "a/b", 0, &fd, NULL, &err), -1);
    assert_int_equal(hbm_lease_acquire(dir, "", 0, &fd, NULL, &err), -1);
    assert_int_equal(hbm_lease_acquire(dir, "ok", -1, &fd, NULL, &err), -1);
    assert_int_equal(hbm_lease_acquire("/proc/no/such/dir", "ok", 0, &fd, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "cannot create"));
}

/* A holder killed with SIGKILL leaves no lease behind. */
static void test_sigkill_frees(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        int fd;
        if (hbm_lease_acquire(dir, "child", 7, &fd, NULL, NULL) != 0)
            _exit(1);
        if (write(p[1], "k", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char ch;
    assert_int_equal(read(p[0], &ch, 1), 1);
    hbm_err err = {{0}};
    hbm_lease_info h;
    int fd;
    assert_int_equal(hbm_lease_acquire(dir, "me", 7, &fd, &h, &err), 1);
    assert_int_equal(h.pid, c);
    assert_true(h.starttime > 0);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    assert_int_equal(hbm_lease_query(dir, 7, &h, &err), 0);
    assert_int_equal(hbm_lease_acquire(dir, "me", 7, &fd, &h, &err), 0);
    hbm_lease_release(fd);
    close(p[0]);
    close(p[1]);
}

/* The holder process keeps the locks after the taker closes its fds, names itself, and
 * exits when the guarded process exits. */
static void test_holder(void **state)
{
    (void)state;
    hbm_err err = {{0}};
    pid_t guard = fork();
    if (guard == 0) {
        pause();
        _exit(0);
    }
    int fds[2];
    int64_t devs[2] = {0, 1};
    assert_int_equal(hbm_lease_acquire(dir, "job", 0, &fds[0], NULL, &err), 0);
    assert_int_equal(hbm_lease_acquire(dir, "job", 1, &fds[1], NULL, &err), 0);
    pid_t holder;
    assert_int_equal(hbm_lease_spawn_holder("job", fds, devs, 2, guard, &holder, &err), 0);
    hbm_lease_release(fds[0]);
    hbm_lease_release(fds[1]);
    hbm_lease_info h;
    assert_int_equal(hbm_lease_query(dir, 1, &h, &err), 1);
    assert_int_equal(h.pid, holder);
    assert_int_equal(h.hold_pid, guard);
    kill(guard, SIGKILL);
    waitpid(guard, NULL, 0);
    int st;
    assert_int_equal(waitpid(holder, &st, 0), holder); /* exits once the guard is gone */
    assert_int_equal(hbm_lease_query(dir, 0, &h, &err), 0);
    assert_int_equal(hbm_lease_query(dir, 1, &h, &err), 0);
}

/* 8 free 910B3 chips in two HCCS domains (0-3, 4-7) joined through SYS. */
static void make_obs(hbm_obs *obs)
{
    hbm_obs_init(obs);
    for (int i = 0; i < 8; i++) {
        hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
        d->index = i;
        d->chip = 0;
        d->logic_id = i;
        snprintf(d->name, sizeof d->name, "910B3");
        d->memory_total_bytes = 64 * HBM_GIB;
        d->memory_used_bytes = 3 * HBM_GIB + i * HBM_MIB;
        d->verdict = HBM_VERDICT_FREE;
    }
    hbm_link m[64];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            m[i * 8 + j] = i == j ? HBM_LINK_SELF : i / 4 == j / 4 ? HBM_LINK_HCCS : HBM_LINK_SYS;
    hbm_obs_set_topo(obs, m, 8);
}

static const char *why_of(const hbm_pick_result *r, int64_t dev)
{
    for (size_t i = 0; i < r->nrefused; i++)
        if (r->refused[i].device == dev)
            return r->refused[i].why;
    return "";
}

static void test_pick_domains(void **state)
{
    (void)state;
    hbm_obs obs;
    make_obs(&obs);
    obs.devs[1].verdict = HBM_VERDICT_BUSY;
    snprintf(obs.devs[1].reason, sizeof obs.devs[1].reason, "1 process listed");
    hbm_pick_result r;
    hbm_err err = {{0}};
    hbm_pick_opts o = {.n = 3, .min_free_bytes = HBM_UNKNOWN};
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 0);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.devices[0], 0);
    assert_int_equal(r.devices[1], 2);
    assert_int_equal(r.devices[2], 3);
    assert_string_equal(r.env_name, "ASCEND_RT_VISIBLE_DEVICES");
    assert_string_equal(r.env_value, "0,2,3");
    assert_string_equal(r.placement, "one HCCS domain");
    assert_non_null(strstr(why_of(&r, 1), "BUSY"));
    assert_int_equal(r.nrefused, 5);
    assert_int_equal(r.nusable, 7);
    hbm_pick_result_free(&r);

    /* Four: only the second domain still has four free. */
    o.n = 4;
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 0);
    assert_string_equal(r.env_value, "4,5,6,7");
    hbm_pick_result_free(&r);

    /* Six: no domain holds six; the set crosses SYS and says so. */
    o.n = 6;
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 0);
    assert_non_null(strstr(r.placement, "SYS"));
    hbm_pick_result_free(&r);

    o.n = 8;
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 1);
    assert_int_equal(r.n, 0);
    assert_non_null(strstr(why_of(&r, 0), "only 7 usable"));
    assert_int_equal(r.nusable, 7);
    hbm_pick_result_free(&r);

    o.n = 1;
    o.min_free_bytes = 70 * HBM_GIB;
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 1);
    assert_non_null(strstr(why_of(&r, 5), "less than --min-free"));
    assert_int_equal(r.nusable, 0);
    hbm_pick_result_free(&r);

    /* Without a logic id an Ascend chip cannot be named in ASCEND_RT_VISIBLE_DEVICES. */
    obs.devs[0].logic_id = HBM_UNKNOWN;
    o.min_free_bytes = HBM_UNKNOWN;
    o.n = 7;
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 1);
    bool said = false;
    for (size_t i = 0; i < r.nrefused; i++)
        said |= strstr(r.refused[i].why, "no logic id") != NULL;
    assert_true(said);
    assert_int_equal(r.nusable, 6);
    hbm_pick_result_free(&r);

    /* With no logic id anywhere (npu-smi text without `info -m`), a busy chip is refused
     * for its verdict; only the usable ones for the missing id. Each names its card. */
    for (size_t i = 0; i < obs.ndevs; i++)
        obs.devs[i].logic_id = HBM_UNKNOWN;
    o.n = 2;
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 1);
    assert_int_equal(r.nrefused, 8);
    for (size_t i = 0; i < r.nrefused; i++) {
        char head[48];
        snprintf(head, sizeof head, "npu %zu chip 0: ", i);
        assert_int_equal(r.refused[i].device, HBM_UNKNOWN);
        assert_memory_equal(r.refused[i].why, head, strlen(head));
        const char *rest = r.refused[i].why + strlen(head);
        if (i == 1)
            assert_memory_equal(rest, "BUSY: 1 process listed", 22);
        else
            assert_memory_equal(rest, "no logic id known", 17);
    }
    hbm_pick_result_free(&r);
    hbm_obs_free(&obs);
}

static void test_pick_leases(void **state)
{
    (void)state;
    hbm_obs obs;
    make_obs(&obs);
    hbm_pick_result a, b, c;
    hbm_err err = {{0}};
    hbm_pick_opts o = {.n = 4, .min_free_bytes = HBM_UNKNOWN, .lease_name = "a", .lease_dir = dir};
    assert_int_equal(hbm_pick(&obs, &o, &a, &err), 0);
    assert_string_equal(a.env_value, "0,1,2,3");
    for (size_t i = 0; i < a.n; i++)
        assert_true(a.lease_fds[i] >= 0);
    o.lease_name = "b";
    assert_int_equal(hbm_pick(&obs, &o, &b, &err), 0);
    assert_string_equal(b.env_value, "4,5,6,7");
    o.lease_name = "c";
    o.n = 1;
    assert_int_equal(hbm_pick(&obs, &o, &c, &err), 1);
    assert_non_null(strstr(why_of(&c, 2), "leased as 'a'"));
    assert_int_equal(c.nusable, 0);
    hbm_pick_result_free(&c);
    hbm_pick_result_free(&a); /* drops a's leases */
    assert_int_equal(hbm_pick(&obs, &o, &c, &err), 0);
    assert_int_equal(c.devices[0], 0);
    hbm_pick_result_free(&c);
    hbm_pick_result_free(&b);
    hbm_obs_free(&obs);
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

/* The shared directory: made 1777 with files 0666 whatever the umask; a symbolic or hard
 * link where a lease file belongs is refused (hbmctl would write its lease into the target);
 * the mode of a directory that exists is left alone. */
static void test_shared_dir(void **state)
{
    (void)state;
    hbm_obs obs;
    make_obs(&obs);
    char sub[300], path[400], other[400];
    snprintf(sub, sizeof sub, "%s/a/leases", dir);
    mode_t old = umask(077);
    hbm_pick_result r;
    hbm_err err = {{0}};
    hbm_pick_opts o = {.n = 1, .min_free_bytes = HBM_UNKNOWN, .lease_name = "m", .lease_dir = sub};
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 0);
    umask(old);
    assert_int_equal(mode_of(sub), 01777);
    snprintf(path, sizeof path, "%s/a", dir);
    assert_int_equal(mode_of(path), 0755 & ~077u);
    for (int i = 0; i < 8; i++) { /* the directory's owner makes every device's file */
        snprintf(path, sizeof path, "%s/device-%d.lease", sub, i);
        assert_int_equal(mode_of(path), 0666);
    }
    snprintf(path, sizeof path, "%s/.pick", sub);
    assert_int_equal(mode_of(path), 0666);
    hbm_pick_result_free(&r);

    /* device 0's file replaced by a symbolic link, then by a hard link */
    snprintf(path, sizeof path, "%s/device-0.lease", sub);
    snprintf(other, sizeof other, "%s/victim", dir);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fputs("keep me\n", f);
    fclose(f);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink(other, path), 0);
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "symbolic link"));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(link(other, path), 0);
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "one link"));
    size_t n;
    char *text = NULL;
    assert_int_equal(hbm_read_file(other, 1 << 10, &text, &n, &err), 0);
    assert_string_equal(text, "keep me\n");
    free(text);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 0);
    hbm_pick_result_free(&r);

    /* an administrator's mode stays */
    assert_int_equal(chmod(sub, 0750), 0);
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 0);
    assert_int_equal(mode_of(sub), 0750);
    hbm_pick_result_free(&r);
    hbm_obs_free(&obs);
}

static char *slurp(const char *rel, size_t *len)
{
    char *text;
    hbm_err err = {{0}};
    char path[512];
    snprintf(path, sizeof path, "tests/fixtures/doctor/npu-smi/%s", rel);
    if (hbm_read_file(path, 1 << 20, &text, len, &err) < 0)
        fail_msg("%s", err.msg);
    return text;
}

static void test_topo_samples(void **state)
{
    (void)state;
    static const char *const files[] = {"topo-01-910B1-8card-HCCS-legend.txt",
                                        "topo-02-910B3-8card-HCCS-legend-NA.txt",
                                        "topo-03-vendordoc-Ascend950-8npu-SYS-legend.txt"};
    static const hbm_link expect[] = {HBM_LINK_HCCS, HBM_LINK_HCCS, HBM_LINK_SYS};
    for (size_t f = 0; f < 3; f++) {
        hbm_obs obs;
        make_obs(&obs);
        hbm_obs_set_topo(&obs, NULL, 0);
        size_t len;
        char *t = slurp(files[f], &len);
        hbm_err err = {{0}};
        if (hbm_npusmi_parse_topo(&obs, t, len, files[f], &err) < 0)
            fail_msg("%s", err.msg);
        assert_int_equal(hbm_obs_link(&obs, 0, 7), expect[f]);
        assert_int_equal(hbm_obs_link(&obs, 3, 2), expect[f]);
        assert_int_equal(hbm_obs_link(&obs, 5, 5), HBM_LINK_SELF);
        free(t);
        hbm_obs_free(&obs);
    }
}

static void test_topo_errors(void **state)
{
    (void)state;
    hbm_obs obs;
    make_obs(&obs);
    hbm_err err = {{0}};
    const char *short_row = "      NPU0  NPU1  CPU Affinity\nNPU0  X  HCCS  0-23\nNPU1  HCCS\n";
    assert_int_equal(hbm_npusmi_parse_topo(&obs, short_row, strlen(short_row), "t", &err), -1);
    assert_string_equal(err.msg, "t:3: row NPU1 has 1 links for 2 columns");
    const char *none = "npu-smi: command failed\n";
    assert_int_equal(hbm_npusmi_parse_topo(&obs, none, strlen(none), "t", &err), -1);
    const char *stray = "NPU0 NPU1\nNPU0 X SYS\nNPU7 SYS X\n";
    assert_int_equal(hbm_npusmi_parse_topo(&obs, stray, strlen(stray), "t", &err), -1);
    assert_non_null(strstr(err.msg, "t:3: row NPU7 is not in the header"));
    hbm_obs_free(&obs);
}

static void test_map_samples(void **state)
{
    (void)state;
    hbm_obs obs;
    make_obs(&obs);
    for (size_t i = 0; i < obs.ndevs; i++) {
        obs.devs[i].logic_id = HBM_UNKNOWN;
        obs.devs[i].name[0] = '\0';
    }
    size_t len;
    char *t = slurp("map-constructed-910B3-8card.txt", &len);
    hbm_err err = {{0}};
    if (hbm_npusmi_parse_map(&obs, t, len, "map", &err) < 0)
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < obs.ndevs; i++) {
        assert_int_equal(obs.devs[i].logic_id, (int64_t)i);
        assert_string_equal(obs.devs[i].name, "910B3");
    }
    free(t);
    hbm_obs_free(&obs);

    /* Two chips per card, a physical id column, and MCU rows without logic ids. */
    hbm_obs_init(&obs);
    for (int card = 0; card < 2; card++)
        for (int chip = 0; chip < 2; chip++) {
            hbm_device *d = hbm_obs_add_device(&obs, HBM_VENDOR_ASCEND);
            d->index = card;
            d->chip = chip;
        }
    t = slurp("map-constructed-A3-phy.txt", &len);
    if (hbm_npusmi_parse_map(&obs, t, len, "map", &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(obs.devs[3].logic_id, 3);
    assert_int_equal(obs.devs[3].phy_id, 11);
    assert_int_equal(hbm_device_user_id(&obs.devs[2]), 2);
    free(t);
    const char *bad = "NPU ID  Chip ID  Chip Logic ID  Chip Name\n0  x  0  Ascend 910B3\n";
    assert_int_equal(hbm_npusmi_parse_map(&obs, bad, strlen(bad), "m", &err), -1);
    assert_string_equal(err.msg, "m:2: 'x' is not a number for 'Chip ID'");
    const char *nohdr = "0 0 0 Ascend\n";
    assert_int_equal(hbm_npusmi_parse_map(&obs, nohdr, strlen(nohdr), "m", &err), -1);
    hbm_obs_free(&obs);
}

/* pick --json: the chosen devices and their variable, every refusal with its device (null
 * when it has no id), the placement; the lease only when one was taken. */
static void test_pick_json(void **state)
{
    (void)state;
    hbm_obs obs;
    make_obs(&obs);
    obs.devs[1].verdict = HBM_VERDICT_BUSY;
    hbm_pick_result r;
    hbm_err err = {{0}};
    hbm_pick_opts o = {.n = 2, .min_free_bytes = HBM_UNKNOWN};
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 0);
    r.refused[0].device = HBM_UNKNOWN;
    json_t *j = hbm_pick_result_json(&r, "web", 4000, 3999, "/run/hbmctl");
    json_t *devs = json_object_get(j, "devices");
    assert_int_equal(json_array_size(devs), 2);
    assert_int_equal(json_integer_value(json_array_get(devs, 0)), r.devices[0]);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "env"),
                                                          "ASCEND_RT_VISIBLE_DEVICES")),
                        r.env_value);
    json_t *ref = json_object_get(j, "refused");
    assert_int_equal(json_array_size(ref), r.nrefused);
    assert_true(json_is_null(json_object_get(json_array_get(ref, 0), "device")));
    assert_string_equal(json_string_value(json_object_get(j, "placement")), r.placement);
    json_t *lease = json_object_get(j, "lease");
    assert_string_equal(json_string_value(json_object_get(lease, "name")), "web");
    assert_int_equal(json_integer_value(json_object_get(lease, "holder_pid")), 4000);
    assert_int_equal(json_integer_value(json_object_get(lease, "hold_pid")), 3999);
    assert_string_equal(json_string_value(json_object_get(lease, "dir")), "/run/hbmctl");
    json_decref(j);
    j = hbm_pick_result_json(&r, NULL, 0, 0, "/run/hbmctl");
    assert_null(json_object_get(j, "lease"));
    json_decref(j);
    hbm_pick_result_free(&r);
    o.n = 8; /* too many: nothing chosen, no variable, no placement, no lease */
    assert_int_equal(hbm_pick(&obs, &o, &r, &err), 1);
    j = hbm_pick_result_json(&r, "web", 0, 3999, "/run/hbmctl");
    assert_int_equal(json_array_size(json_object_get(j, "devices")), 0);
    assert_int_equal(json_object_size(json_object_get(j, "env")), 0);
    assert_true(json_is_null(json_object_get(j, "placement")));
    assert_null(json_object_get(j, "lease"));
    json_decref(j);
    hbm_pick_result_free(&r);
    hbm_obs_free(&obs);
}

/* leases --json: held leases, or every one with all; what a free lease file cannot say is
 * null. */
static void test_list_json(void **state)
{
    (void)state;
    hbm_lease_info ls[2] = {
        {.device = 3, .name = "web", .pid = 4000, .hold_pid = 3999, .since = 1.7e9,
         .held = true},
        {.device = 5, .name = "old", .pid = 4100, .hold_pid = 4099, .since = 1.6e9},
    };
    json_t *j = hbm_lease_list_json("/run/hbmctl", ls, 2, false);
    assert_string_equal(json_string_value(json_object_get(j, "dir")), "/run/hbmctl");
    json_t *a = json_object_get(j, "leases");
    assert_int_equal(json_array_size(a), 1);
    json_t *l = json_array_get(a, 0);
    assert_int_equal(json_integer_value(json_object_get(l, "device")), 3);
    assert_string_equal(json_string_value(json_object_get(l, "name")), "web");
    assert_int_equal(json_integer_value(json_object_get(l, "pid")), 4000);
    assert_int_equal(json_integer_value(json_object_get(l, "hold_pid")), 3999);
    assert_true(json_real_value(json_object_get(l, "since")) == 1.7e9);
    assert_true(json_is_true(json_object_get(l, "held")));
    json_decref(j);
    j = hbm_lease_list_json("/run/hbmctl", ls, 2, true);
    a = json_object_get(j, "leases");
    assert_int_equal(json_array_size(a), 2);
    l = json_array_get(a, 1);
    assert_true(json_is_null(json_object_get(l, "pid")));
    assert_true(json_is_null(json_object_get(l, "hold_pid")));
    assert_true(json_is_null(json_object_get(l, "since")));
    assert_true(json_is_false(json_object_get(l, "held")));
    json_decref(j);
}

/* A lease file is a claim anyone can write: its holder is believed only when that process
 * has the file open. This process holds "web"; the file then names our parent, which does
 * not have it open. */
static void test_claim_check(void **state)
{
    (void)state;
    int fd;
    hbm_lease_info h, bad;
    hbm_err err = {{0}};
    assert_int_equal(hbm_lease_acquire(dir, "web", 3, &fd, &h, &err), 0);
    assert_int_equal(hbm_lease_claim_check(dir, "web", &bad, &err), 0);
    assert_int_equal(hbm_lease_claim_check(dir, "other", &bad, &err), 0);
    assert_int_equal(hbm_lease_set_holder(fd, "web", 3, getppid(), 0, &err), 0);
    assert_int_equal(hbm_lease_claim_check(dir, "web", &bad, &err), 1);
    assert_int_equal(bad.pid, getppid());
    assert_int_equal(bad.device, 3);
    hbm_lease_release(fd);
    assert_int_equal(hbm_lease_claim_check(dir, "web", &bad, &err), 0); /* no longer held */
    char file[300];
    snprintf(file, sizeof file, "%s/file", dir);
    th_write_text(dir, "file", "x");
    assert_int_equal(hbm_lease_claim_check(file, "web", &bad, &err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_acquire_query_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigkill_frees, setup, teardown),
        cmocka_unit_test_setup_teardown(test_holder, setup, teardown),
        cmocka_unit_test(test_pick_domains),
        cmocka_unit_test(test_pick_json),
        cmocka_unit_test(test_list_json),
        cmocka_unit_test_setup_teardown(test_claim_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pick_leases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_dir, setup, teardown),
        cmocka_unit_test(test_topo_samples),
        cmocka_unit_test(test_topo_errors),
        cmocka_unit_test(test_map_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
