/* The multimodal inputs on arbitrary bytes: --limit-mm-per-prompt and --mm-processor-kwargs
 * values fail cleanly with a message or give counts in range, and a config.json either
 * describes no tower or one whose profile run gives at least one item and a peak >= 0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void flags(const char *text)
{
    int64_t image = HBM_UNKNOWN, video = HBM_UNKNOWN, px = HBM_UNKNOWN;
    hbm_err err = {{0}};
    if (plan_mm_parse_limits(text, &image, &video, &err) == 0) {
        if (image < HBM_UNKNOWN || video < HBM_UNKNOWN)
            abort();
    } else if (!err.msg[0]) {
        abort();
    }
    hbm_err err2 = {{0}};
    if (plan_mm_parse_kwargs(text, &px, &err2) < 0 && !err2.msg[0])
        abort();
}

static void tower(const uint8_t *data, size_t size)
{
    plan_mm mm;
    if (!plan_mm_parse((const char *)data, size, &mm))
        return;
    plan_ctx c = {.mm = &mm, .r = plan_rules_for(PLAN_VERSION_NEWEST, false), .act_bytes = 2};
    plan_flags f = {.tp = 2, .pp = 1, .mml = 131072, .seqs = 256, .mnbt = 2048};
    plan_mm_profile p;
    plan_mm_profile_for(&c, &f, &p);
    if (!p.profiled || p.items < 1 || p.peak < 0 || p.budget < p.tokens_per_item)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    flags(text);
    free(text);
    tower(data, size);
    return 0;
}
