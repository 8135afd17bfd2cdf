/* /proc/PID/mountinfo cgroup2 lookup on arbitrary bytes, with a small output buffer too. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char big[4096], small[8];
    hbm_err err;
    hbm_procfs_cgroup2_mount((const char *)data, size, big, sizeof big, &err);
    hbm_procfs_cgroup2_mount((const char *)data, size, small, sizeof small, &err);
    char root[8];
    hbm_procfs_cgroup2_mount_root((const char *)data, size, big, sizeof big, root, sizeof root,
                                  &err);
    return 0;
}
