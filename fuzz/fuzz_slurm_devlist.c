/* Device lists from Slurm's environment (SLURM_JOB_GPUS, the visible-device variables). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    int64_t ids[HBM_SLURM_MAX_DEVS];
    size_t n;
    hbm_err err;
    hbm_slurm_parse_devlist(s, ids, HBM_SLURM_MAX_DEVS, &n, &err);
    free(s);
    return 0;
}
