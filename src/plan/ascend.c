/* vllm-ascend's per-device workers: where a device's worker sizes the KV cache differently
 * from the common NPUWorker (research/vllm-memory.md section 7). */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "plan/plan_int.h"

#define ASCEND_LAST_310P_DOUBLE_COUNT 2299 /* 0.22.x: vllm-ascend #14004, fixed by #14275 */

/* "310P3-48G" from the table, "Ascend310P3" or "310P3" from a live host */
static bool is_310p(const char *device_name)
{
    for (const char *p = device_name; p && *p; p++)
        if (!strncasecmp(p, "310P", 4))
            return true;
    return false;
}

/* NPUWorker310.determine_available_memory (vllm_ascend/_310p/worker_310p.py) divides the
 * budget by 2 "to reserve more memory for other operators workspace". Up to 0.22.x it also
 * subtracted the device-wide non-torch memory, so memory of other processes, already
 * checked against at start-up, is charged a second time (vllm-ascend #14004). The 310P
 * worker is a MemorySnapshot worker: releases before 0.15 keep the device-delta rules. */
void plan_ascend_device_rules(plan_rules *r, const char *device_name)
{
    if (!r->ascend || !r->snapshot_budget || !is_310p(device_name))
        return;
    r->kv_halved = true;
    r->others_charged = r->ver <= ASCEND_LAST_310P_DOUBLE_COUNT;
}
