/* /proc/net/tcp and tcp6 parsers on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int v6 = 0; v6 < 2; v6++) {
        hbm_listener *ls = NULL;
        size_t n = 0;
        hbm_err err;
        hbm_procfs_parse_net_tcp((const char *)data, size, v6, &ls, &n, &err);
        free(ls);
    }
    return 0;
}
