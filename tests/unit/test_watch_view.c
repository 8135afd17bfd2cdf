/* The model of watch's terminal view, without a terminal: the rows' order under each sort and
 * the device filter, the selection and how keys move it, digits typed into an id, the history
 * strip's cells, verdict tones. */
#include "helpers.h"
#include "hbm/watch.h"

#define GIB (1024LL * 1024 * 1024)

/* A session whose latest observation has NVIDIA devices with these indexes and used bytes
 * (80 GiB each); no sampling: the tests feed the series themselves. */
static void session(hbm_watch_session *s, const int *ids, const int64_t *used, size_t n)
{
    memset(s, 0, sizeof *s);
    hbm_leak_params p;
    hbm_leak_params_default(&p);
    hbm_watch_init(&s->w, &p);
    hbm_obs_init(&s->obs);
    for (size_t i = 0; i < n; i++) {
        hbm_device *d = hbm_obs_add_device(&s->obs, HBM_VENDOR_NVIDIA);
        d->index = ids[i];
        d->memory_total_bytes = 80 * GIB;
        d->memory_used_bytes = used[i];
    }
    s->have_obs = true;
}

static void session_free(hbm_watch_session *s)
{
    hbm_watch_free(&s->w);
    hbm_obs_free(&s->obs);
}

/* The user ids of the rows, in order, as a string ("0 1 2"). */
static const char *rows(hbm_watch_session *s, hbm_watch_view *v, char *buf, size_t len)
{
    size_t idx[16], n = hbm_watch_view_rows(s, v, idx, 16), pos = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < n; k++)
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%lld", k ? " " : "",
                                (long long)hbm_device_user_id(&s->obs.devs[idx[k]]));
    return buf;
}

static void test_order_and_filter(void **state)
{
    (void)state;
    int ids[] = {2, 0, 3, 1};
    int64_t used[] = {10 * GIB, 30 * GIB, 30 * GIB, 5 * GIB};
    hbm_watch_session s;
    session(&s, ids, used, 4);
    hbm_watch_view v;
    hbm_watch_view_init(&v);
    char buf[64];
    assert_string_equal(rows(&s, &v, buf, sizeof buf), "0 1 2 3");
    assert_int_equal(v.selected, 0); /* the first row, once there are rows */
    v.sort = HBM_WATCH_SORT_USED;
    /* largest first; 0 and 3 use the same and keep the observation's order */
    assert_string_equal(rows(&s, &v, buf, sizeof buf), "0 3 2 1");
    assert_int_equal(v.selected, 0); /* a selection survives a new order */
    int64_t only[] = {3, 1};
    s.only = only;
    s.nonly = 2;
    assert_string_equal(rows(&s, &v, buf, sizeof buf), "3 1");
    s.have_obs = false;
    assert_string_equal(rows(&s, &v, buf, sizeof buf), "");
    session_free(&s);
    assert_string_equal(hbm_watch_sort_name(HBM_WATCH_SORT_GROWTH), "growth");
    assert_string_equal(hbm_watch_sort_name(HBM_WATCH_SORT_N), "?");
}

static void test_growth_order(void **state)
{
    (void)state;
    int ids[] = {0, 1};
    int64_t used[] = {10 * GIB, 10 * GIB};
    hbm_watch_session s;
    session(&s, ids, used, 2);
    /* device 1 steps up 1 GiB three times after the detector learned its noise; device 0
     * stays */
    double t = 0;
    for (int i = 0; i < 40; i++)
        hbm_watch_update(&s.w, &s.obs, t++);
    for (int step = 1; step <= 3; step++) {
        s.obs.devs[1].memory_used_bytes = (10 + step) * GIB;
        for (int i = 0; i < 8; i++)
            hbm_watch_update(&s.w, &s.obs, t++);
    }
    assert_true(hbm_watch_find(&s.w, 1, HBM_UNKNOWN)->det.st.growth > 0);
    hbm_watch_view v;
    hbm_watch_view_init(&v);
    v.sort = HBM_WATCH_SORT_GROWTH;
    char buf[64];
    assert_string_equal(rows(&s, &v, buf, sizeof buf), "1 0");
    session_free(&s);
}

static void test_selection(void **state)
{
    (void)state;
    int ids[] = {0, 1, 2, 12};
    int64_t used[] = {GIB, GIB, GIB, GIB};
    hbm_watch_session s;
    session(&s, ids, used, 4);
    hbm_watch_view v;
    hbm_watch_view_init(&v);
    hbm_watch_view_move(&v, &s, 1); /* nothing selected: from the first row */
    assert_int_equal(v.selected, 1);
    hbm_watch_view_move(&v, &s, 10); /* held at the last row */
    assert_int_equal(v.selected, 12);
    hbm_watch_view_move(&v, &s, -2);
    assert_int_equal(v.selected, 1);
    hbm_watch_view_move(&v, &s, -10);
    assert_int_equal(v.selected, 0);
    /* "1" then "2" within 1.5 s: device 12, device 1 on the way */
    hbm_watch_view_digit(&v, &s, '1', 100.0);
    assert_int_equal(v.selected, 1);
    hbm_watch_view_digit(&v, &s, '2', 101.0);
    assert_int_equal(v.selected, 12);
    /* "2" after a pause: a new id */
    hbm_watch_view_digit(&v, &s, '2', 103.0);
    assert_int_equal(v.selected, 2);
    /* "2" then "1" quickly: no device 21, so the typing starts again at "1" */
    hbm_watch_view_digit(&v, &s, '1', 103.5);
    assert_int_equal(v.selected, 1);
    assert_string_equal(v.digits, "1");
    /* a digit no device has leaves the selection */
    hbm_watch_view_digit(&v, &s, '7', 110.0);
    assert_int_equal(v.selected, 1);
    session_free(&s);
    hbm_watch_session none = {0};
    hbm_watch_view_move(&v, &none, 1);
    hbm_watch_view_digit(&v, &none, '0', 120.0);
    assert_int_equal(v.selected, 1);
}

static void test_strip(void **state)
{
    (void)state;
    int ids[] = {0};
    int64_t used[] = {0};
    hbm_watch_session s;
    session(&s, ids, used, 1);
    int64_t samples[] = {0, 10 * GIB, 30 * GIB, 40 * GIB, 80 * GIB};
    for (int i = 0; i < 5; i++) {
        s.obs.devs[0].memory_used_bytes = samples[i];
        hbm_watch_update(&s.w, &s.obs, i);
    }
    const hbm_watch_series *ser = hbm_watch_find(&s.w, 0, HBM_UNKNOWN);
    int cells[7];
    /* eighths of the total, rounded, at least one for a sample; newest on the right; no
     * history on the left */
    hbm_watch_strip(ser, 80 * GIB, cells, 7);
    int want[] = {-1, -1, 1, 1, 3, 4, 8};
    assert_memory_equal(cells, want, sizeof want);
    /* total unknown: scaled to the largest sample */
    hbm_watch_strip(ser, HBM_UNKNOWN, cells, 3);
    int want_max[] = {3, 4, 8};
    assert_memory_equal(cells, want_max, sizeof want_max);
    /* twice the memory as total: half the height */
    hbm_watch_strip(ser, 160 * GIB, cells, 1);
    assert_int_equal(cells[0], 4);
    hbm_watch_strip(NULL, 80 * GIB, cells, 2);
    assert_int_equal(cells[0], -1);
    assert_int_equal(cells[1], -1);
    session_free(&s);
    assert_int_equal(hbm_watch_strip_cells(HBM_WATCH_STRIP_MIN - 1), 0);
    assert_int_equal(hbm_watch_strip_cells(64), 64);
}

static void test_tones(void **state)
{
    (void)state;
    assert_int_equal(hbm_watch_verdict_tone(HBM_VERDICT_FREE), HBM_WATCH_TONE_FREE);
    assert_int_equal(hbm_watch_verdict_tone(HBM_VERDICT_BUSY), HBM_WATCH_TONE_BUSY);
    assert_int_equal(hbm_watch_verdict_tone(HBM_VERDICT_UNACCOUNTED), HBM_WATCH_TONE_ODD);
    assert_int_equal(hbm_watch_verdict_tone(HBM_VERDICT_ORPHANED), HBM_WATCH_TONE_BAD);
    assert_int_equal(hbm_watch_verdict_tone(HBM_VERDICT_UNHEALTHY), HBM_WATCH_TONE_BAD);
    assert_int_equal(hbm_watch_verdict_tone(HBM_VERDICT_NONE), HBM_WATCH_TONE_PLAIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_filter), cmocka_unit_test(test_growth_order),
        cmocka_unit_test(test_selection),        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_tones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
