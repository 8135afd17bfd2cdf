/* MindIE config.json reading on arbitrary bytes: must fail cleanly with a message, or leave
 * every key it read within MindIE's range (npuMemSize -1 or positive, the rest positive). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    hbm_err err = {{0}};
    if (hbm_plan_mindie_config_parse((const char *)data, size, "fuzz.json", &in, &err) == 0) {
        if (in.mindie.npu_mem_size_gib < -1 || in.mindie.max_input_len < 0 || in.mindie.max_iter_times < 0 ||
            in.mindie.max_prefill_batch_size < 0 || in.max_model_len == 0 || in.block_size == 0 ||
            in.tensor_parallel_size == 0 || in.max_num_seqs == 0 ||
            in.max_num_batched_tokens == 0)
            abort();
        if (in.model_path && in.model_path != in.mindie.config_model_path)
            abort();
    } else if (!err.msg[0]) {
        abort();
    }
    return 0;
}
