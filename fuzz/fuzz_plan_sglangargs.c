/* SGLang's command line on arbitrary bytes (one word per line): the reader must accept it or
 * fail with a message, and what it accepts must be in range. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *argv[MAX_WORDS];
    int argc = 0;
    for (char *w = text; argc < MAX_WORDS && w < text + size;) {
        char *nl = strchr(w, '\n');
        if (nl)
            *nl = 0;
        argv[argc++] = w;
        if (!nl)
            break;
        w = nl + 1;
    }
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.engine = HBM_PLAN_ENGINE_SGLANG;
    hbm_err err = {{0}};
    if (hbm_plan_args_from_argv(&in, argc, argv, &err) == 0) {
        double u = in.gpu_memory_utilization;
        if (in.tensor_parallel_size == 0 || in.block_size == 0 || in.nunmodelled > 16 ||
            in.max_num_batched_tokens < -1 || (!isnan(u) && !(u > 0 && u < 1)))
            abort();
    } else if (!err.msg[0]) {
        abort();
    }
    free(text);
    return 0;
}
