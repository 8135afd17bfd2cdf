/* /proc/PID/cgroup parser (and the container-id reader) on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_cgroup_info ci;
    hbm_err err;
    if (hbm_procfs_parse_cgroup((const char *)data, size, &ci, &err) == 0)
        hbm_cgroup_info_free(&ci);
    hbm_cgroup_info one;
    memset(&one, 0, sizeof one);
    hbm_procfs_container_of((const char *)data, size, &one);
    return 0;
}
