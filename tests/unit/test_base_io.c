/* The one reader (hbm_open_regular, hbm_read_file_at) and child programs under a deadline
 * (hbm_run_capture_for), against real FIFOs, sockets, devices, links and processes. */
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "helpers.h"
#include "hbm/util.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    return th_mkdtemp(dir, sizeof dir, "baseio");
}

static int teardown(void **state)
{
    (void)state;
    return th_rmtree(dir);
}

/* Reading path must fail at once with EINVAL and a message naming it and its kind. */
static void refused(const char *path, const char *kind)
{
    char *buf = NULL;
    hbm_err err = {{0}};
    double t0 = hbm_now_mono();
    assert_int_equal(hbm_read_file(path, 1 << 20, &buf, NULL, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_true(hbm_now_mono() - t0 < 1.0);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, kind));
    assert_non_null(strstr(err.msg, "refused unread"));
    assert_null(buf);
}

static void test_not_regular_files(void **state)
{
    (void)state;
    char p[PATH_MAX];
    th_path(p, sizeof p, dir, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    refused(p, "a FIFO"); /* a blocking open would wait here for a writer */
    refused("/dev/zero", "a character device");
    refused("/dev/null", "a character device");
    refused(dir, "a directory");
    th_path(p, sizeof p, dir, "sock");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    assert_true(snprintf(a.sun_path, sizeof a.sun_path, "%s", p) < (int)sizeof a.sun_path);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    char *buf;
    hbm_err err = {{0}};
    /* a socket cannot even be opened: refused all the same, naming it */
    assert_int_equal(hbm_read_file(p, 100, &buf, NULL, &err), -1);
    assert_non_null(strstr(err.msg, p));
    close(s);
}

static void test_bounds_and_links(void **state)
{
    (void)state;
    char p[PATH_MAX], l[PATH_MAX], *buf;
    size_t len;
    hbm_err err = {{0}};
    th_write_text(dir, "f.txt", "0123456789");
    th_path(p, sizeof p, dir, "f.txt");
    assert_int_equal(hbm_read_file(p, 10, &buf, &len, &err), 0);
    assert_int_equal(len, 10);
    assert_string_equal(buf, "0123456789");
    free(buf);
    assert_int_equal(hbm_read_file(p, 9, &buf, &len, &err), -1);
    assert_int_equal(errno, EFBIG);
    assert_non_null(strstr(err.msg, "larger than 9 bytes"));
    /* A link is followed by default, refused with O_NOFOLLOW (shared directories). */
    th_path(l, sizeof l, dir, "link");
    assert_int_equal(symlink(p, l), 0);
    assert_int_equal(hbm_read_file_at(AT_FDCWD, l, 0, 100, &buf, &len, &err), 0);
    free(buf);
    assert_int_equal(hbm_read_file_at(AT_FDCWD, l, O_NOFOLLOW, 100, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "a symbolic link, refused unread"));
    /* /proc files say size 0: the bound holds while reading. */
    assert_int_equal(hbm_read_file("/proc/self/status", 16, &buf, &len, &err), -1);
    assert_int_equal(errno, EFBIG);
    assert_int_equal(hbm_read_file("/proc/self/status", 1 << 20, &buf, &len, &err), 0);
    free(buf);
}

static void test_written_file_never_through_a_planted_name(void **state)
{
    (void)state;
    char p[PATH_MAX], tmp[PATH_MAX + 32];
    hbm_err err = {{0}};
    th_path(p, sizeof p, dir, "state.json");
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", p, (int)getpid());
    assert_int_equal(mkfifo(tmp, 0600), 0); /* ours: removed once, then written */
    assert_int_equal(hbm_write_file_atomic(p, "{}", 2, 0600, &err), 0);
    char *buf;
    assert_int_equal(hbm_read_file(p, 100, &buf, NULL, &err), 0);
    assert_string_equal(buf, "{}");
    free(buf);
}

static void test_child_deadline_kills_the_group(void **state)
{
    (void)state;
    char pidfile[PATH_MAX], script[PATH_MAX * 2];
    th_path(pidfile, sizeof pidfile, dir, "gc.pid");
    /* The child starts a grandchild that keeps stdout open, then hangs. */
    snprintf(script, sizeof script, "sleep 600 & echo $! >%s; echo partial; sleep 600",
             pidfile);
    char *argv[] = {"sh", "-c", script, NULL};
    char *out = NULL;
    size_t len;
    hbm_err err = {{0}};
    double t0 = hbm_now_mono();
    assert_int_equal(hbm_run_capture_for(argv, 0.3, &out, &len, &err), HBM_ERR_HUNG);
    double took = hbm_now_mono() - t0;
    assert_true(took >= 0.29 && took < 3.0);
    assert_null(out);
    assert_non_null(strstr(err.msg, "did not finish within 0.3s (killed)"));
    char *pid_text;
    assert_int_equal(hbm_read_file(pidfile, 64, &pid_text, NULL, &err), 0);
    pid_t gc = (pid_t)atoi(pid_text);
    free(pid_text);
    /* The grandchild went with the group (reparented, it may linger a moment as a zombie). */
    bool gone = false;
    for (int i = 0; i < 100 && !gone; i++) {
        char stat[64], *st;
        snprintf(stat, sizeof stat, "/proc/%d/stat", (int)gc);
        gone = hbm_read_file(stat, 4096, &st, NULL, NULL) < 0;
        if (!gone) {
            gone = strstr(st, ") Z ") != NULL;
            free(st);
        }
        if (!gone)
            usleep(20000);
    }
    assert_true(gone);
}

static void test_child_exit_ends_output(void **state)
{
    (void)state;
    /* It answers and exits; the grandchild holding the pipe does not delay the answer. */
    char *argv[] = {"sh", "-c", "sleep 600 & echo answer; echo note >&2", NULL};
    char *out = NULL;
    size_t len;
    hbm_err err = {{0}};
    double t0 = hbm_now_mono();
    assert_int_equal(hbm_run_capture_for(argv, 20, &out, &len, &err), 0);
    assert_true(hbm_now_mono() - t0 < 10);
    assert_string_equal(out, "answer\n");
    free(out);
    /* A failure quotes the child's stderr, which no longer reaches ours. */
    char *bad[] = {"sh", "-c", "echo 'it broke' >&2; exit 3", NULL};
    assert_int_equal(hbm_run_capture_for(bad, 20, &out, &len, &err), -1);
    assert_non_null(strstr(err.msg, "exited with status 3: it broke"));
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_not_regular_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounds_and_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_file_never_through_a_planted_name, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_child_deadline_kills_the_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_child_exit_ends_output, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
