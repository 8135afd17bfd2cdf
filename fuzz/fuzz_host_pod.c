/* Container runtime configs (OCI config.json, docker config.v2.json) and /var/log/pods
 * directory names on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_pod p;
    hbm_err err;
    hbm_procfs_parse_pod_config((const char *)data, size, &p, &err);
    hbm_procfs_parse_pod_logdir((const char *)data, size, &p, &err);
    return 0;
}
