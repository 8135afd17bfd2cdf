/* /proc/meminfo hugepage fields, sysfs counters and THP mode files on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_hugepages hp;
    hbm_err err;
    int64_t v;
    char mode[16];
    hbm_procfs_parse_meminfo_huge((const char *)data, size, &hp, &err);
    hbm_procfs_parse_count((const char *)data, size, &v, &err);
    hbm_procfs_parse_thp((const char *)data, size, mode, sizeof mode, &err);
    return 0;
}
