/* vllm-ascend's per-device workers: where a device's worker sizes the KV cache differently
 * from the common NPUWorker (research/vllm-memory.md section 7), and what its layers add to
 * the weights. */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "plan/plan_int.h"

#define ASCEND_LAST_310P_DOUBLE_COUNT 2299 /* 0.22.x: vllm-ascend #14004, fixed by #14275 */
#define ASCEND_FIRST_310P_NZ_COPY 2200     /* the earliest release line read with the copy */
#define VOCAB_PADDING 64                   /* vLLM's DEFAULT_VOCAB_PADDING_SIZE */
#define NZ_FRACTAL 16                      /* FRACTAL_NZ tiles of 16 x 16 16-bit elements */

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
 * worker is a MemorySnapshot worker: releases before 0.15 keep the device-delta rules.
 * From the 0.22 line the vocabulary tables are held twice (plan_ascend_weights_extra). */
void plan_ascend_device_rules(plan_rules *r, const char *device_name)
{
    if (!r->ascend || !r->snapshot_budget || !is_310p(device_name))
        return;
    r->kv_halved = true;
    r->others_charged = r->ver <= ASCEND_LAST_310P_DOUBLE_COUNT;
    r->nz_embed_copy = r->ver >= ASCEND_FIRST_310P_NZ_COPY;
}

/* AscendUnquantizedEmbeddingMethod310 (vllm_ascend/_310p/ops/vocab_parallel_embedding.py),
 * the method of every VocabParallelEmbedding and ParallelLMHead built without a quant
 * config, keeps the loaded ND weight for the embedding lookup and adds weight_nz, a new
 * tensor from npu_format_cast to FRACTAL_NZ, for the lm_head matmul: each vocabulary table
 * is held twice, the copy padded to 16 x 16 tiles. A tied lm_head is the embedding module
 * itself (one table); an untied model has two, and the embedding's copy is made though
 * only the lm_head's is read. With PP the first and last stages hold one table each. */
int64_t plan_ascend_weights_extra(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    if (!c->r.nz_embed_copy || m->quant_method[0] || m->vocab_size <= 0 || f->tp < 1)
        return 0;
    int64_t tables = f->pp > 1 || m->tie_word_embeddings ? 1 : 2;
    int64_t rows = plan_round_up(plan_round_up(m->vocab_size, VOCAB_PADDING) / f->tp, NZ_FRACTAL);
    return tables * rows * plan_round_up(m->hidden_size, NZ_FRACTAL) * c->act_bytes;
}
