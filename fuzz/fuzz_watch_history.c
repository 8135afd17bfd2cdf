/* The memory history file of probe --npd leak on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_history h;
    hbm_err err;
    if (hbm_history_parse((const char *)data, size, &h, &err) == 0) {
        for (size_t i = 0; i < h.n; i++)
            hbm_history_judge(&h.devs[i], NULL);
        hbm_history_free(&h);
    }
    return 0;
}
