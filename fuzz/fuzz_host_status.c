/* /proc/PID/status parser on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_pstatus st;
    hbm_err err;
    hbm_procfs_parse_status((const char *)data, size, &st, &err);
    return 0;
}
