/* libFuzzer target: the `npu-smi info -t topo` reader must fail cleanly, never crash, on
 * every device layout it can be matched against (logic ids, card ids, two chips a card). */
#include <stddef.h>
#include <stdint.h>

#include "hbm/npusmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_obs obs;
    hbm_err err;
    hbm_obs_init(&obs);
    int layout = size ? data[0] % 3 : 0;
    for (int i = 0; i < 8; i++) {
        hbm_device *d = hbm_obs_add_device(&obs, HBM_VENDOR_ASCEND);
        d->index = layout == 2 ? i / 2 : i;
        d->chip = layout == 2 ? i % 2 : 0;
        d->logic_id = layout == 0 ? i : HBM_UNKNOWN;
    }
    if (hbm_npusmi_parse_topo(&obs, (const char *)data, size, "fuzz", &err) == 0)
        for (size_t i = 0; i < obs.ndevs; i++)
            for (size_t j = 0; j < obs.ndevs; j++)
                (void)hbm_obs_link(&obs, i, j);
    hbm_obs_free(&obs);
    return 0;
}
