/* LoRA in vLLM's start-up (docs/planner.md, "vLLM, LoRA"). With --enable-lora the LoRA model
 * manager replaces every adaptable layer when the model is built and each replacement
 * allocates its stacked slots on the device (create_lora_weights in vllm/lora/layers), so
 * they are in "Model loading took":
 *   lora_a  [max_loras, rank, input]   per slice
 *   lora_b  [max_loras, output, rank]  per slice
 * in lora_dtype. Column-parallel layers (qkv_proj: q, k, v slices; gate_up_proj: 2 slices)
 * keep the whole input and 1/TP of the output in lora_b; row-parallel ones (o_proj,
 * down_proj) 1/TP of the input in lora_a and the whole output in lora_b. --fully-sharded-loras
 * also splits the column layers' lora_a rank and the row layers' lora_b output by TP.
 * Replicated layers keep everything. Routed experts carry slots per local expert from
 * 0.11.1 (FusedMoE LoRA, #21229). Architectures that name embed_tokens and lm_head as
 * embedding modules (Llama's family) also adapt the embedding (lora_a over the vocabulary)
 * and the logits processor (lora_b over the vocabulary); before 0.12 (#28382, #28545) those
 * layers grew by --lora-extra-vocab-size rows (default 256), padded to 256, with one
 * embeddings tensor per slot. The profile run activates max_loras dummy adapters (built on
 * the CPU and copied into the slots); its only device extra is punica's float32 shrink buffer
 * [slices, tokens, rank] per layer call, and the sampler over the extra vocabulary.
 * Engine and budget by release: before 0.8 V0 built the slots after measuring the weights,
 * so the budget left them out (#14450, fixed by #14469 in 0.8.0); 0.8.0-0.8.2 ran LoRA on V0
 * unless VLLM_USE_V1=1 was set (V1 took it by default from 0.8.3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan/plan_int.h"

#define LORA_VOCAB_PADDING 256 /* lora_vocab_padding_size before 0.12 */
#define LORA_DEFAULT_EXTRA_VOCAB 256
#define VER_EXPERT_LORA 1101   /* FusedMoE LoRA */
#define VER_NO_EXTRA_VOCAB 1200
#define VER_SLOTS_MEASURED 800 /* #14469: the slots inside V0's weight measure */
#define VER_V1_LORA 803        /* V1 by default for LoRA */

/* The architectures whose embedding_modules name embed_tokens and lm_head (Llama's
 * family: Qwen2/Qwen3, DeepSeek and the MoE models leave it empty). */
static bool adapts_embeddings(const hbm_plan_model *m)
{
    static const char *const archs[] = {"LlamaForCausalLM", "MistralForCausalLM",
                                        "Phi3ForCausalLM", "GraniteForCausalLM", NULL};
    for (int i = 0; archs[i]; i++)
        if (!strcmp(m->architecture, archs[i]))
            return true;
    return false;
}

plan_lora plan_lora_for(const hbm_plan_input *in, const hbm_plan_model *m, int ver,
                        int act_bytes)
{
    plan_lora l = {0};
    l.on = in->vllm.enable_lora == 1;
    if (!l.on)
        return l;
    l.slots = in->vllm.max_loras > 0 ? in->vllm.max_loras : 1;
    l.rank = in->vllm.max_lora_rank > 0 ? in->vllm.max_lora_rank : 16;
    int b = in->vllm.lora_dtype && strcasecmp(in->vllm.lora_dtype, "auto") ? plan_dtype_bytes(in->vllm.lora_dtype)
                                                                : 0;
    l.dtype_bytes = b >= 2 ? b : act_bytes;
    l.fully_sharded = in->vllm.fully_sharded_loras == 1;
    l.embeddings = adapts_embeddings(m);
    if (l.embeddings && ver < VER_NO_EXTRA_VOCAB)
        l.extra_vocab = in->vllm.lora_extra_vocab_size >= 0 ? in->vllm.lora_extra_vocab_size
                                                      : LORA_DEFAULT_EXTRA_VOCAB;
    l.vocab_flag_gone = in->vllm.lora_extra_vocab_size >= 0 && ver >= VER_NO_EXTRA_VOCAB;
    l.experts = ver >= VER_EXPERT_LORA;
    l.v0_engine = ver >= 800 && ver < VER_V1_LORA;
    l.uncharged = ver < VER_SLOTS_MEASURED;
    return l;
}

void plan_lora_rules(plan_rules *r, const plan_lora *l)
{
    if (!l->on || r->ascend || !l->v0_engine)
        return;
    /* V0's worker: the snapshot-based profile of the releases before 0.8 */
    r->v0 = true;
    r->snapshot_budget = true;
}

/* Elements of one slot's lora_a + lora_b. Column: whole input, out_rank = this rank's output. */
static double column(const plan_lora *l, int64_t tp, double in, double out_rank)
{
    double ra = l->fully_sharded ? (double)(l->rank / tp) : (double)l->rank;
    return ra * in + out_rank * (double)l->rank;
}

/* Row: in_rank = this rank's input, the whole output. */
static double row(const plan_lora *l, int64_t tp, double in_rank, double out)
{
    return (double)l->rank * in_rank + (l->fully_sharded ? out / (double)tp : out) * (double)l->rank;
}

static double replicated(const plan_lora *l, double in, double out)
{
    return (double)l->rank * (in + out);
}

/* One decoder layer's attention projections, one slot. */
static double attention(const plan_lora *l, const hbm_plan_model *m, int64_t tp)
{
    double H = (double)m->hidden_size, t = (double)tp, heads = (double)m->num_heads;
    if (m->mla) {
        double qk = (double)(m->qk_nope_head_dim + m->qk_rope_head_dim);
        double v = (double)(m->v_head_dim > 0 ? m->v_head_dim : m->qk_nope_head_dim);
        double q = m->q_lora_rank > 0
                       ? replicated(l, H, (double)m->q_lora_rank) +
                             column(l, tp, (double)m->q_lora_rank, heads / t * qk)
                       : column(l, tp, H, heads / t * qk);
        return q + replicated(l, H, (double)(m->kv_lora_rank + m->qk_rope_head_dim)) +
               column(l, tp, (double)m->kv_lora_rank, heads / t * ((double)m->qk_nope_head_dim + v)) +
               row(l, tp, heads * v / t, H);
    }
    double hd = (double)m->head_dim;
    /* KV heads fewer than TP are replicated: one head per rank */
    double kv_rank = (double)(m->num_kv_heads >= tp ? m->num_kv_heads / tp : 1) * hd;
    return column(l, tp, H, heads / t * hd) + 2 * column(l, tp, H, kv_rank) +
           row(l, tp, heads * hd / t, H);
}

/* A gated MLP (gate_up_proj in 2 slices, down_proj) of intermediate size inter, one slot. */
static double mlp(const plan_lora *l, const hbm_plan_model *m, int64_t tp, double inter)
{
    double H = (double)m->hidden_size;
    return 2 * column(l, tp, H, inter / (double)tp) + row(l, tp, inter / (double)tp, H);
}

/* A MoE layer, one slot: router, shared experts, and the routed experts when the release
 * adapts them (w13 a and b per slice and local expert, w2 a and b). */
static double moe(const plan_lora *l, const hbm_plan_model *m, int64_t tp)
{
    double H = (double)m->hidden_size, t = (double)tp, E = (double)m->num_experts;
    double shared = m->shared_expert_intermediate_size > 0
                        ? (double)m->shared_expert_intermediate_size
                        : (double)(m->num_shared_experts * m->moe_intermediate_size);
    double n = replicated(l, H, E) + (shared > 0 ? mlp(l, m, tp, shared) : 0);
    if (l->experts) {
        double inter = (double)m->moe_intermediate_size / t;
        double r = (double)l->rank, ra = l->fully_sharded ? (double)(l->rank / tp) : r;
        double w13 = 2 * (ra * H + inter * r);
        double w2 = r * inter + (l->fully_sharded ? H / t : H) * r;
        n += E * (w13 + w2);
    }
    return n;
}

/* The embedding's and logits processor's slots, and the extra rows of their own weights
 * (vocab-parallel), one slot's share apart: elements per rank for all slots. */
static double embeddings(const plan_lora *l, const hbm_plan_model *m, int64_t tp)
{
    if (!l->embeddings)
        return 0;
    double H = (double)m->hidden_size, V = (double)m->vocab_size, X = (double)l->extra_vocab;
    double r = (double)l->rank, S = (double)l->slots;
    double padded = X > 0 ? ceil((V + X) / LORA_VOCAB_PADDING) * LORA_VOCAB_PADDING : V;
    double embed = S * ((V + X) * r + H * r + X * H);
    double logits = S * (r * H + padded * r + X * H);
    double rows = X * H * (m->tie_word_embeddings ? 1 : 2) / (double)tp;
    return embed + logits + rows;
}

int64_t plan_lora_slot_bytes(const plan_ctx *c, int64_t tp, int64_t pp)
{
    const plan_lora *l = &c->lora;
    const hbm_plan_model *m = c->m;
    if (!l->on || tp < 1 || pp < 1)
        return 0;
    double attn = attention(l, m, tp), layers = 0;
    for (int64_t i = 0; i < m->num_layers; i++) {
        bool dense = m->num_experts == 0 || i < m->first_dense_layers;
        layers += attn + (dense ? mlp(l, m, tp, (double)m->intermediate_size) : moe(l, m, tp));
    }
    double per_rank = layers * (double)l->slots / (double)pp +
                      embeddings(l, m, tp) / (pp > 1 ? 2.0 : 1.0);
    return (int64_t)(per_rank * l->dtype_bytes);
}

int64_t plan_lora_budget_bytes(const plan_ctx *c, int64_t tp, int64_t pp)
{
    if (c->lora.uncharged && !c->r.ascend)
        return 0;
    return plan_lora_slot_bytes(c, tp, pp);
}

const char *plan_lora_engine_text(const plan_ctx *c)
{
    const plan_lora *l = &c->lora;
    if (!l->on || c->r.ascend)
        return "";
    if (l->uncharged)
        return "; before 0.8 vLLM builds the slots after measuring the weights, so they are "
               "not taken from the KV budget (vLLM #14450): keep that much free";
    if (l->v0_engine)
        return "; 0.8.0-0.8.2 run LoRA on the V0 engine unless VLLM_USE_V1=1 is set: planned as "
               "V0";
    return "";
}

int64_t plan_lora_forward_bytes(const plan_ctx *c, const plan_flags *f)
{
    const plan_lora *l = &c->lora;
    if (!l->on)
        return 0;
    double ra = l->fully_sharded ? (double)(l->rank / f->tp) : (double)l->rank;
    /* qkv_proj's three slices are the widest shrink; the embedding's lora_a rows sit beside */
    double shrink = 3 * (double)f->mnbt * ra * 4;
    double embed = l->embeddings ? (double)f->mnbt * (double)l->rank * l->dtype_bytes : 0;
    return (int64_t)(shrink + embed);
}

int64_t plan_lora_added_vocab(const plan_ctx *c)
{
    return c->lora.on ? c->lora.extra_vocab : 0;
}

char *plan_lora_flag_text(const hbm_plan_input *in)
{
    if (in->vllm.enable_lora != 1)
        return hbm_xstrdup("");
    char loras[48] = "", rank[48] = "", cpu[48] = "", vocab[64] = "", dtype[64] = "";
    if (in->vllm.max_loras > 0)
        snprintf(loras, sizeof loras, " --max-loras %lld", (long long)in->vllm.max_loras);
    if (in->vllm.max_lora_rank > 0)
        snprintf(rank, sizeof rank, " --max-lora-rank %lld", (long long)in->vllm.max_lora_rank);
    if (in->vllm.max_cpu_loras > 0)
        snprintf(cpu, sizeof cpu, " --max-cpu-loras %lld", (long long)in->vllm.max_cpu_loras);
    if (in->vllm.lora_extra_vocab_size >= 0)
        snprintf(vocab, sizeof vocab, " --lora-extra-vocab-size %lld",
                 (long long)in->vllm.lora_extra_vocab_size);
    if (in->vllm.lora_dtype)
        snprintf(dtype, sizeof dtype, " --lora-dtype %.40s", in->vllm.lora_dtype);
    return hbm_xasprintf(" --enable-lora%s%s%s%s%s%s", loras, rank, cpu, vocab, dtype,
                         in->vllm.fully_sharded_loras == 1 ? " --fully-sharded-loras" : "");
}

void plan_lora_fill(const plan_ctx *c, const plan_flags *f, hbm_plan_lora *out)
{
    const plan_lora *l = &c->lora;
    memset(out, 0, sizeof *out);
    if (!l->on)
        return;
    out->enabled = true;
    out->max_loras = l->slots;
    out->max_lora_rank = l->rank;
    out->dtype_bytes = l->dtype_bytes;
    out->fully_sharded = l->fully_sharded;
    out->extra_vocab = l->extra_vocab;
    out->slot_bytes = plan_lora_slot_bytes(c, f->tp, f->pp);
    plan_ctx one = *c;
    one.lora.slots = 1;
    one.lora.extra_vocab = 0; /* the extra rows are the model's, not a slot's */
    out->adapter_bytes = plan_lora_slot_bytes(&one, f->tp, f->pp);
    out->activation_bytes = plan_lora_forward_bytes(c, f);
}
