/* The observation model's lookups: a process among the devices' listings by pid (status shows
 * the host's device-file holders that no listing has). */
#include "helpers.h"

#include "hbm/obs.h"

static void test_find_proc(void **state)
{
    (void)state;
    hbm_obs obs;
    hbm_obs_init(&obs);
    assert_null(hbm_obs_find_proc(&obs, 7));
    for (int i = 0; i < 2; i++) {
        hbm_device *d = hbm_obs_add_device(&obs, HBM_VENDOR_ASCEND);
        d->index = i;
        hbm_device_add_proc(d)->pid = 100 + i;
    }
    const hbm_dproc *p = hbm_obs_find_proc(&obs, 101);
    assert_ptr_equal(p, &obs.devs[1].procs[0]);
    assert_null(hbm_obs_find_proc(&obs, 102));
    hbm_obs_free(&obs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_proc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
