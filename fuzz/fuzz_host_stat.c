/* /proc/PID/stat parser on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_pstat st;
    hbm_err err;
    hbm_procfs_parse_stat((const char *)data, size, &st, &err);
    return 0;
}
