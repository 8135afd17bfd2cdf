/* fd link targets, and the maps and environ readers that meet the same kind of text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hbm/procfs.h"

static void count(const char *path, size_t plen, uint64_t inode, void *arg)
{
    (void)path;
    (void)inode;
    *(size_t *)arg += plen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_fdlink fl;
    hbm_err err;
    size_t total = 0;
    hbm_procfs_parse_fdlink((const char *)data, size, &fl, &err);
    hbm_procfs_parse_maps((const char *)data, size, "/dev/shm/", count, &total, &err);
    free(hbm_procfs_environ_visible((const char *)data, size));
    return 0;
}
