/* `scontrol show job -d` output (the job's GRES IDX on this node) and the hostlist matcher
 * on arbitrary bytes; the job-id check on them as one string. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t ids[HBM_SLURM_MAX_DEVS];
    size_t n;
    hbm_err err;
    hbm_slurm_parse_job_gres((const char *)data, size, "n01", ids, HBM_SLURM_MAX_DEVS, &n,
                             &err);
    hbm_slurm_hostlist_has((const char *)data, size, "gpu07");
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    hbm_slurm_job_id_valid(s);
    free(s);
    return 0;
}
