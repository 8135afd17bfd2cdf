/* config.json reading on arbitrary bytes: must fail cleanly with a message, or give the
 * numbers the KV layout divides by (layers, head size, KV heads) positive, with layer kinds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_plan_model m;
    hbm_plan_model_init(&m);
    hbm_err err = {{0}};
    if (hbm_plan_model_parse_config((const char *)data, size, "fuzz.json", &m, &err) == 0) {
        if (m.num_layers <= 0 || m.head_dim <= 0 || m.num_kv_heads <= 0 || !m.layer_kinds)
            abort();
    } else if (!err.msg[0]) {
        abort();
    }
    hbm_plan_model_free(&m);
    return 0;
}
