/* libFuzzer target: the snapshot reader must fail cleanly, never crash. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_obs obs;
    hbm_err err;
    if (hbm_snapshot_parse(&obs, (const char *)data, size, "fuzz", &err) == 0) {
        json_t *j = hbm_snapshot_to_json(&obs);
        json_decref(j);
        hbm_obs_free(&obs);
    }
    return 0;
}
