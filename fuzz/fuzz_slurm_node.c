/* `scontrol show node -o` output (and whether hbmctl may change that node), and the
 * job-membership matchers of environ and cgroup text, on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "hbm/slurm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_slurm_node node;
    hbm_err err;
    char why[320];
    if (hbm_slurm_parse_node((const char *)data, size, &node, &err) == 0)
        hbm_slurm_node_changeable(&node, why, sizeof why);
    hbm_slurm_environ_has_job((const char *)data, size, "42");
    hbm_slurm_cgroup_has_job((const char *)data, size, "42");
    return 0;
}
