/* What a prolog, epilog or health check is given and answers: the modes' names both ways,
 * the job and node from Slurm's environment (the older SLURM_JOBID, the short host name when
 * slurmd names no node, empty variables as unset), the result as `slurm --json` writes it. */
#include "helpers.h"

#include <stdlib.h>
#include <unistd.h>

#include "hbm/slurm.h"

static void test_modes(void **state)
{
    (void)state;
    hbm_slurm_mode m = HBM_SLURM_PROLOG;
    assert_true(hbm_slurm_mode_parse("healthcheck", &m));
    assert_int_equal(m, HBM_SLURM_HEALTHCHECK);
    assert_true(hbm_slurm_mode_parse("epilog", &m));
    assert_int_equal(m, HBM_SLURM_EPILOG);
    assert_false(hbm_slurm_mode_parse("Prolog", &m));
    assert_int_equal(m, HBM_SLURM_EPILOG);
    assert_string_equal(hbm_slurm_mode_name(HBM_SLURM_PROLOG), "prolog");
    assert_string_equal(hbm_slurm_mode_name((hbm_slurm_mode)7), "?");
}

static void test_env(void **state)
{
    (void)state;
    char host[256];
    hbm_slurm_env e = {0};
    unsetenv("SLURM_JOB_ID");
    setenv("SLURM_JOBID", "42", 1);
    setenv("SLURMD_NODENAME", "gpu-7", 1);
    setenv("SLURM_JOB_GPUS", "0,1", 1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    hbm_slurm_env_read(&e, host, sizeof host);
    assert_string_equal(e.job_id, "42");
    assert_string_equal(e.node, "gpu-7");
    assert_string_equal(e.job_gpus, "0,1");
    assert_null(e.cuda_visible);
    assert_null(e.ascend_visible);
    setenv("SLURM_JOB_ID", "43", 1);
    unsetenv("SLURMD_NODENAME");
    hbm_slurm_env_read(&e, host, sizeof host);
    assert_string_equal(e.job_id, "43");
    char full[256];
    assert_int_equal(gethostname(full, sizeof full), 0);
    full[strcspn(full, ".")] = '\0';
    assert_ptr_equal(e.node, host);
    assert_string_equal(e.node, full);
}

static void test_result_json(void **state)
{
    (void)state;
    hbm_slurm_opts o = {.mode = HBM_SLURM_EPILOG, .env = {.node = "gpu-7", .job_id = "42"}};
    hbm_slurm_kill k = {.pid = 4242, .comm = "python", .why = "in job 42's cgroup",
                        .done = true, .result = "ended by SIGTERM"};
    hbm_slurm_result r = {.devs = {0, 3}, .ndevs = 2, .devs_from = "SLURM_JOB_GPUS",
                          .kills = &k, .nkills = 1, .shm_removed = 2, .drained = true,
                          .kept_state = "DOWN", .kept_why = "state DOWN is not hbmctl's"};
    json_t *j = hbm_slurm_result_json(&o, &r);
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(s,
        "{\"mode\":\"epilog\",\"node\":\"gpu-7\",\"job\":\"42\",\"devices\":[0,3],"
        "\"devices_from\":\"SLURM_JOB_GPUS\",\"problem\":null,\"ended\":[{\"pid\":4242,"
        "\"name\":\"python\",\"why\":\"in job 42's cgroup\",\"done\":true,"
        "\"result\":\"ended by SIGTERM\"}],\"shm_removed\":2,\"refused_job\":false,"
        "\"drained\":true,\"resumed\":false,\"kept_reason\":null,"
        "\"kept\":{\"state\":\"DOWN\",\"why\":\"state DOWN is not hbmctl's\"}}");
    free(s);
    json_decref(j);
    o.env.job_id = NULL; /* a health check has no job */
    snprintf(r.problem, sizeof r.problem, "hbmctl: GPU 0 held outside every job");
    r.kept_state[0] = '\0';
    j = hbm_slurm_result_json(&o, &r);
    assert_true(json_is_null(json_object_get(j, "job")));
    assert_true(json_is_null(json_object_get(j, "kept")));
    assert_string_equal(json_string_value(json_object_get(j, "problem")), r.problem);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_result_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
