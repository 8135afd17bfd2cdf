/* safetensors header parsing on arbitrary bytes, as a whole file: must fail with a message
 * or return sums that fit inside the file. */
#include <stdint.h>
#include <stdlib.h>

#include "hbm/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_plan_st_sum s;
    hbm_err err = {{0}};
    if (hbm_plan_safetensors_parse(data, size, size, "fuzz.safetensors", &s, &err) == 0) {
        if (s.tensor_bytes < 0 || (uint64_t)s.tensor_bytes > size || s.embed_bytes > s.tensor_bytes)
            abort();
    } else if (!err.msg[0]) {
        abort();
    }
    /* the same bytes as a prefix of a larger file */
    hbm_plan_safetensors_parse(data, size, (uint64_t)size + 4096, "fuzz.safetensors", &s, &err);
    return 0;
}
