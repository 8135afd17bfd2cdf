/* /proc/sysvipc/shm parser on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_sysv_seg *segs = NULL;
    size_t n = 0;
    hbm_err err;
    hbm_procfs_parse_sysv_shm((const char *)data, size, &segs, &n, &err);
    free(segs);
    return 0;
}
