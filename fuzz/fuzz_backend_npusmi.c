/* libFuzzer target: the `npu-smi info` text reader must fail cleanly, never crash. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/npusmi.h"
#include "hbm/verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_obs obs;
    hbm_err err;
    hbm_obs_init(&obs);
    if (hbm_npusmi_parse_info(&obs, (const char *)data, size, "fuzz", &err) == 0)
        hbm_verdict_apply(&obs);
    hbm_obs_free(&obs);
    return 0;
}
