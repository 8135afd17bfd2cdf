/* --speculative-config reading on arbitrary bytes: must fail cleanly with a message naming
 * the flag, or give a method vLLM knows (or none, for the target's MTP layers) with the
 * counts positive or unset. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_plan_spec_config sc;
    hbm_err err = {{0}};
    if (hbm_plan_spec_parse((const char *)data, size, &sc, &err) == 0) {
        if (sc.num_speculative_tokens == 0 || sc.draft_tensor_parallel_size == 0 ||
            memchr(sc.method, 0, sizeof sc.method) == NULL ||
            memchr(sc.model, 0, sizeof sc.model) == NULL)
            abort();
    } else if (!strstr(err.msg, "--speculative-config")) {
        abort();
    }
    return 0;
}
