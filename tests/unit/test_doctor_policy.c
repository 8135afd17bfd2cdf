/* The remediation policy on a clean plan: ages from the first-sightings state file (a new
 * identity starts over, a leftover no longer seen is forgotten), the objects' own ages where
 * the file cannot be kept, --min-age's waiting and --max-actions' deferral, oldest first;
 * neither limit: nothing touched; --policy's defaults; a plan counted by what becomes of each
 * step, and clean --json's answer. */
#include "helpers.h"

#include <math.h>

#include "hbm/doctor.h"
#include "hbm/obs.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    return th_mkdtemp(dir, sizeof dir, "policy");
}

static int teardown(void **state)
{
    (void)state;
    return th_rmtree(dir);
}

/* A plan of n kills, pid 100 + i started i * 10 s after boot; all allowed. */
static void plan_of(hbm_clean_plan *p, size_t n)
{
    p->steps = calloc(n, sizeof *p->steps);
    p->n = p->cap = n;
    for (size_t i = 0; i < n; i++) {
        hbm_clean_step *s = &p->steps[i];
        s->allowed = true;
        s->age_s = NAN;
        s->action.kind = HBM_ACT_KILL;
        s->action.pid = 100 + (int)i;
        s->action.starttime = (uint64_t)i * 1000; /* clock ticks at 100 Hz */
        snprintf(s->finding_id, sizeof s->finding_id, "orphan-holder");
    }
}

static void obs_of(hbm_obs *obs)
{
    hbm_obs_init(obs);
    obs->has_host = true;
    obs->host.boot_time = 1000;
    obs->host.clk_tck = 100;
}

static void test_first_seen(void **state)
{
    (void)state;
    char path[128];
    th_path(path, sizeof path, dir, "run/seen.json");
    hbm_obs obs;
    obs_of(&obs);
    hbm_clean_opts o = {.state_path = path, .min_age_s = 60, .max_actions = 0};
    hbm_clean_plan p;
    plan_of(&p, 2);
    hbm_err err = {{0}};
    assert_int_equal(hbm_clean_policy(&obs, &p, &o, 5000, &err), 0);
    for (size_t i = 0; i < 2; i++) {
        assert_true(p.steps[i].waiting);
        assert_false(p.steps[i].allowed);
        assert_true(p.steps[i].age_s == 0);
        assert_string_equal(p.steps[i].age_basis, "first seen");
    }
    hbm_clean_plan_free(&p);

    /* 100 s on: both seen for 100 s; pid 101 now has another start time: a new leftover. */
    plan_of(&p, 2);
    p.steps[1].action.starttime = 7777;
    assert_int_equal(hbm_clean_policy(&obs, &p, &o, 5100, &err), 0);
    assert_true(p.steps[0].allowed);
    assert_true(p.steps[0].age_s == 100);
    assert_true(p.steps[1].waiting);
    assert_true(p.steps[1].age_s == 0);
    hbm_clean_plan_free(&p);

    /* pid 100 no longer a leftover: forgotten, so it starts over when it is one again. */
    plan_of(&p, 1);
    p.steps[0].action.pid = 555;
    assert_int_equal(hbm_clean_policy(&obs, &p, &o, 5200, &err), 0);
    hbm_clean_plan_free(&p);
    plan_of(&p, 1);
    assert_int_equal(hbm_clean_policy(&obs, &p, &o, 5300, &err), 0);
    assert_true(p.steps[0].age_s == 0);
    hbm_clean_plan_free(&p);
}

static void test_no_state_file(void **state)
{
    (void)state;
    char path[128];
    th_write_text(dir, "file", "x");
    th_path(path, sizeof path, dir, "file/seen.json"); /* under a regular file: never kept */
    hbm_obs obs;
    obs_of(&obs);
    hbm_clean_opts o = {.state_path = path, .min_age_s = 3995, .max_actions = 0};
    hbm_clean_plan p;
    plan_of(&p, 2);
    hbm_err err = {{0}};
    assert_int_equal(hbm_clean_policy(&obs, &p, &o, 5000, &err), -1);
    assert_non_null(strstr(err.msg, "seen.json"));
    /* the process's own age: started at 1000 + 0 s and 1000 + 10 s */
    assert_string_equal(p.steps[0].age_basis, "process start");
    assert_true(p.steps[0].age_s == 4000);
    assert_true(p.steps[0].allowed);
    assert_true(p.steps[1].age_s == 3990);
    assert_true(p.steps[1].waiting);
    hbm_clean_plan_free(&p);

    /* A file that is not one hbmctl wrote: refused with its name, the same fallback. */
    th_write_text(dir, "bad.json", "{\"schema\": \"other\"}");
    th_path(path, sizeof path, dir, "bad.json");
    plan_of(&p, 1);
    assert_int_equal(hbm_clean_policy(&obs, &p, &o, 5000, &err), -1);
    assert_non_null(strstr(err.msg, "hbmctl.clean-seen/1"));
    assert_string_equal(p.steps[0].age_basis, "process start");
    hbm_clean_plan_free(&p);
}

static void test_max_actions(void **state)
{
    (void)state;
    char path[128];
    th_path(path, sizeof path, dir, "none/seen.json");
    th_write_text(dir, "none", "x"); /* ages from the processes: pid 100 oldest */
    hbm_obs obs;
    obs_of(&obs);
    hbm_clean_opts o = {.state_path = path, .min_age_s = -1, .max_actions = 2};
    hbm_clean_plan p;
    plan_of(&p, 4);
    p.steps[0].action.starttime = 3000; /* now the youngest */
    hbm_err err = {{0}};
    hbm_clean_policy(&obs, &p, &o, 5000, &err);
    assert_true(p.steps[0].deferred);
    assert_true(p.steps[1].allowed);
    assert_true(p.steps[2].allowed);
    assert_true(p.steps[3].deferred);
    assert_false(p.steps[3].allowed);
    assert_non_null(strstr(p.steps[3].why, "--max-actions 2"));
    hbm_clean_plan_free(&p);
}

static void test_no_limit(void **state)
{
    (void)state;
    char path[128];
    th_path(path, sizeof path, dir, "seen.json");
    hbm_obs obs;
    obs_of(&obs);
    hbm_clean_opts o = {.state_path = path, .min_age_s = -1, .max_actions = 0};
    hbm_clean_plan p;
    plan_of(&p, 2);
    hbm_err err = {{0}};
    assert_int_equal(hbm_clean_policy(&obs, &p, &o, 5000, &err), 0);
    assert_true(p.steps[0].allowed && p.steps[1].allowed);
    assert_true(isnan(p.steps[0].age_s));
    assert_int_equal(access(path, F_OK), -1); /* no state file written */
    hbm_clean_plan_free(&p);
}

static void test_policy_defaults(void **state)
{
    (void)state;
    hbm_clean_opts o = {.min_age_s = -1, .max_actions = -1};
    hbm_clean_opts_policy(&o);
    assert_string_equal(o.only, HBM_CLEAN_POLICY_ONLY);
    assert_true(o.min_age_s == HBM_CLEAN_POLICY_MIN_AGE);
    assert_int_equal(o.max_actions, HBM_CLEAN_POLICY_MAX_ACTIONS);
    /* what the command line gave stays */
    hbm_clean_opts given = {.only = "orphan-holder", .min_age_s = 0, .max_actions = 1};
    hbm_clean_opts_policy(&given);
    assert_string_equal(given.only, "orphan-holder");
    assert_true(given.min_age_s == 0);
    assert_int_equal(given.max_actions, 1);
}

static void test_counts_and_json(void **state)
{
    (void)state;
    hbm_clean_plan p;
    plan_of(&p, 5);
    p.steps[1].allowed = false; /* a safety rule */
    p.steps[2].allowed = false;
    p.steps[2].waiting = true;
    p.steps[3].allowed = false;
    p.steps[3].deferred = true;
    hbm_clean_counts n = hbm_clean_plan_counts(&p);
    assert_int_equal(n.allowed, 2);
    assert_int_equal(n.kept, 1);
    assert_int_equal(n.waiting, 1);
    assert_int_equal(n.deferred, 1);
    hbm_obs obs;
    obs_of(&obs);
    snprintf(obs.backend, sizeof obs.backend, "none");
    snprintf(obs.backend_why, sizeof obs.backend_why, "no driver library");
    json_t *j = hbm_clean_json(&obs, &p, true, NULL, NULL);
    assert_true(json_is_true(json_object_get(j, "dry_run")));
    assert_string_equal(json_string_value(json_object_get(j, "backend")), "none");
    assert_string_equal(json_string_value(json_object_get(j, "backend_why")),
                        "no driver library");
    assert_int_equal(json_array_size(json_object_get(j, "steps")), 5);
    assert_null(json_object_get(j, "released")); /* no apply: no such fields */
    assert_null(json_object_get(j, "audit_log"));
    json_decref(j);
    obs.backend_why[0] = '\0';
    j = hbm_clean_json(&obs, &p, false, NULL, "/var/log/audit.jsonl");
    assert_true(json_is_null(json_object_get(j, "backend_why")));
    assert_true(json_is_null(json_object_get(j, "released")));
    assert_string_equal(json_string_value(json_object_get(j, "audit_log")),
                        "/var/log/audit.jsonl");
    json_decref(j);
    hbm_clean_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_seen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_state_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_actions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_limit, setup, teardown),
        cmocka_unit_test(test_policy_defaults),
        cmocka_unit_test(test_counts_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
