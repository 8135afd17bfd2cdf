/* libFuzzer target: the `npu-smi info -m` reader must fail cleanly, never crash. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/npusmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_obs obs;
    hbm_err err;
    hbm_obs_init(&obs);
    for (int i = 0; i < 8; i++) {
        hbm_device *d = hbm_obs_add_device(&obs, HBM_VENDOR_ASCEND);
        d->index = i / 2;
        d->chip = i % 2;
    }
    (void)hbm_npusmi_parse_map(&obs, (const char *)data, size, "fuzz", &err);
    hbm_obs_free(&obs);
    return 0;
}
