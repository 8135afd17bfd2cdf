/* A watch session: samples of a snapshot that changes between them, the device filter,
 * the threshold and leak events with their facts, server engines turning stalled and
 * back, the bounded event ring and what a view has not shown yet, a failed sample. */
#include <math.h>

#include "helpers.h"
#include "hbm/snapshot.h"
#include "hbm/watch.h"

#define GIB (1024LL * 1024 * 1024)

static char snap[64];

/* Two 80 GiB devices (ids 0 and 1) using used0 and used1 bytes; written where the session
 * reads its samples. */
static void write_snapshot(int64_t used0, int64_t used1)
{
    hbm_obs obs;
    hbm_obs_init(&obs);
    snprintf(obs.backend, sizeof obs.backend, "nvml");
    for (int i = 0; i < 2; i++) {
        hbm_device *d = hbm_obs_add_device(&obs, HBM_VENDOR_NVIDIA);
        d->index = i;
        snprintf(d->name, sizeof d->name, "H100");
        d->memory_total_bytes = 80 * GIB;
        d->memory_used_bytes = i ? used1 : used0;
    }
    json_t *j = hbm_snapshot_to_json(&obs);
    assert_int_equal(json_dump_file(j, snap, 0), 0);
    json_decref(j);
    hbm_obs_free(&obs);
}

static int setup(void **state)
{
    (void)state;
    th_tmpfile(snap, sizeof snap, "watch-session", "");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(snap);
    return 0;
}

/* Samples until an event of kind appears (at most n samples); the event or NULL. */
static const hbm_watch_event *sample_until(hbm_watch_session *s, hbm_watch_event_kind kind,
                                           int n)
{
    for (int i = 0; i < n; i++) {
        size_t before = s->events_total;
        assert_int_equal(hbm_watch_session_sample(s), 0);
        for (size_t k = s->nevents - (s->events_total - before); k < s->nevents; k++)
            if (s->events[k].kind == kind)
                return &s->events[k];
    }
    return NULL;
}

static void test_threshold_and_filter(void **state)
{
    (void)state;
    hbm_leak_params p;
    hbm_leak_params_default(&p);
    p.threshold_ratio = 0.5;
    hbm_source_opts src = {.snapshot = snap};
    int64_t only[] = {0};
    hbm_watch_session s;
    hbm_watch_session_init(&s, &p, &src, only, 1, NULL);
    write_snapshot(48 * GIB, 60 * GIB); /* both above half */
    const hbm_watch_event *e = sample_until(&s, HBM_WATCH_EV_CROSS_UP, 8);
    assert_non_null(e);
    assert_int_equal(e->device, 0);
    assert_int_equal(e->pid, HBM_UNKNOWN);
    assert_int_equal(e->level_bytes, 48 * GIB);
    assert_true(e->wall > 0);
    /* device 1 is filtered out: no event of its own, none in the JSON */
    for (size_t k = 0; k < s.nevents; k++)
        assert_int_equal(s.events[k].device, 0);
    json_t *devs = hbm_watch_session_devices_json(&s);
    assert_int_equal(json_array_size(devs), 1);
    json_t *d0 = json_array_get(devs, 0);
    assert_int_equal(json_integer_value(json_object_get(d0, "device")), 0);
    assert_true(json_is_true(json_object_get(json_object_get(d0, "leak"), "above_threshold")));
    json_decref(devs);
    assert_false(s.problem_seen); /* a crossing is reported, not a problem */
    /* shown once: a view asking again gets nothing new */
    assert_true(hbm_watch_session_first_unshown(&s) < s.nevents);
    assert_int_equal(hbm_watch_session_first_unshown(&s), s.nevents);
    write_snapshot(8 * GIB, 60 * GIB);
    e = sample_until(&s, HBM_WATCH_EV_CROSS_DOWN, 8);
    assert_non_null(e);
    assert_int_equal(e->level_bytes, 8 * GIB);
    /* a failed sample keeps the last observation and says why */
    char keep[sizeof snap];
    snprintf(keep, sizeof keep, "%s", snap);
    src.snapshot = "/nonexistent/snapshot.json";
    assert_int_equal(hbm_watch_session_sample(&s), -1);
    assert_non_null(strstr(s.error, "/nonexistent/snapshot.json"));
    assert_true(s.have_obs);
    assert_int_equal(s.obs.ndevs, 2);
    src.snapshot = keep;
    assert_int_equal(hbm_watch_session_sample(&s), 0);
    assert_string_equal(s.error, "");
    hbm_watch_session_free(&s);
}

static void test_leak(void **state)
{
    (void)state;
    hbm_leak_params p;
    hbm_leak_params_default(&p);
    hbm_source_opts src = {.snapshot = snap};
    hbm_watch_session s;
    hbm_watch_session_init(&s, &p, &src, NULL, 0, NULL);
    /* 10 GiB long enough to learn its noise, then three 1 GiB steps that stay: a leak on
     * device 0, none on device 1 */
    write_snapshot(10 * GIB, 5 * GIB);
    assert_null(sample_until(&s, HBM_WATCH_EV_LEAK, 40));
    assert_false(s.problem_seen);
    const hbm_watch_event *e = NULL;
    for (int step = 1; step <= 3 && !e; step++) {
        write_snapshot((10 + step) * GIB, 5 * GIB);
        e = sample_until(&s, HBM_WATCH_EV_LEAK, 6);
    }
    assert_non_null(e);
    assert_int_equal(e->device, 0);
    assert_int_equal(e->steps, 3);
    assert_int_equal(e->growth_bytes, 3 * GIB);
    assert_true(s.problem_seen);
    hbm_watch_session_free(&s);
}

/* Servers whose one engine is stalled or not, as a sample of theirs would leave them. */
static void engine_state(hbm_progress_servers *set, hbm_progress_state st)
{
    hbm_progress_server *v = &set->s[0];
    v->up = true;
    if (!v->track.n) {
        v->track.e = calloc(1, sizeof *v->track.e);
        v->track.n = v->track.cap = 1;
        snprintf(v->track.e[0].kind, sizeof v->track.e[0].kind, "vllm");
        v->track.e[0].running = 3;
        v->track.e[0].waiting = 12;
        v->track.e[0].tokens = 75;
        v->track.e[0].tokens_per_s = v->track.e[0].since_token_s = NAN;
        v->track.e[0].stalled_for_s = 95;
    }
    v->track.e[0].state = st;
    v->track.e[0].judged = true;
}

static void test_server_events_and_ring(void **state)
{
    (void)state;
    hbm_leak_params p;
    hbm_leak_params_default(&p);
    hbm_progress_servers set;
    hbm_progress_servers_init(&set, 60, 2);
    hbm_progress_servers_add(&set, "http://user:secret@127.0.0.1:9/metrics");
    hbm_watch_session s;
    hbm_watch_session_init(&s, &p, NULL, NULL, 0, &set);
    engine_state(&set, HBM_PROGRESS_PROGRESSING);
    hbm_watch_session_server_events(&s);
    assert_int_equal(s.nevents, 0); /* progressing from the start: nothing changed */
    engine_state(&set, HBM_PROGRESS_STALLED);
    hbm_watch_session_server_events(&s);
    assert_int_equal(s.nevents, 1);
    assert_int_equal(s.events[0].kind, HBM_WATCH_EV_STALL);
    assert_null(strstr(s.events[0].url, "secret")); /* the URL as shown, no credentials */
    assert_non_null(strstr(s.events[0].url, "127.0.0.1:9/metrics"));
    assert_non_null(strstr(s.events[0].line, "stalled"));
    assert_true(s.problem_seen);
    hbm_watch_session_server_events(&s); /* still stalled: no new event */
    assert_int_equal(s.nevents, 1);
    /* ten turns more: the ring keeps the newest eight, all unshown */
    for (int i = 0; i < 10; i++) {
        engine_state(&set, i % 2 ? HBM_PROGRESS_STALLED : HBM_PROGRESS_PROGRESSING);
        hbm_watch_session_server_events(&s);
    }
    assert_int_equal(s.events_total, 11);
    assert_int_equal(s.nevents, HBM_WATCH_EVENTS);
    for (size_t k = 0; k < HBM_WATCH_EVENTS; k++) /* oldest first, the turns in order */
        assert_int_equal(s.events[k].kind,
                         k % 2 ? HBM_WATCH_EV_STALL : HBM_WATCH_EV_STALL_END);
    assert_int_equal(hbm_watch_session_first_unshown(&s), 0);
    json_t *servers = hbm_watch_session_servers_json(&s);
    json_t *sv = json_array_get(servers, 0);
    assert_true(json_is_true(json_object_get(sv, "up")));
    assert_int_equal(json_array_size(json_object_get(sv, "engines")), 1);
    json_decref(servers);
    hbm_watch_session_free(&s);
    hbm_progress_servers_free(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_threshold_and_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leak, setup, teardown),
        cmocka_unit_test(test_server_events_and_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
