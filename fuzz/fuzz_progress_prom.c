/* Prometheus text reader and the engine extraction on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/progress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_progress p;
    hbm_err err;
    if (hbm_progress_read((const char *)data, size, "fuzz", &p, &err) == 0) {
        hbm_progress track;
        hbm_progress_init(&track);
        hbm_progress_judge(&track, &p, 1000, 5);
        hbm_progress_free(&track);
    }
    return 0;
}
