/* The memory model of vLLM's start-up, per device rank (docs/planner.md has it on one page):
 *   pre-check   free >= total x util                       (CUDA >= 0.9.1, Ascend >= 0.15)
 *   budget      total x util - weights - peak activation - non-torch [- graphs, >= 0.21]
 *   KV layout   page per layer type, blocks, tokens, concurrency as vLLM prints them
 *   checks      no memory for blocks; one request of max_model_len must fit */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan/plan_int.h"

#define GIB_D 1073741824.0
/* Marlin's MoE kernel wants n % 256 and k % 128 (mxfp4.py create_weights): the intermediate
 * size per rank is rounded up to 128 and the hidden size to 256 */
#define MXFP4_MARLIN_INTER_ALIGN 128
#define MXFP4_MARLIN_HIDDEN_ALIGN 256

plan_rules plan_rules_for(int ver, bool ascend)
{
    plan_rules r = {.ver = ver, .ascend = ascend};
    r.v0 = ver < 800;
    r.default_util = (!ascend && ver >= 2100) ? 0.92 : 0.9;
    r.precheck = ascend ? ver >= 1500 : ver >= 901;
    r.precheck_ceil = !ascend && ver >= 1400;
    r.snapshot_budget = r.v0 || (ascend ? ver >= 1500 : ver >= 901);
    r.graph_in_budget = !ascend && ver >= 2100;
    /* NCCL moved before the snapshot with #25359 (0.11); HCCL is still after it */
    r.collective_in_budget = ascend || ver < 1100;
    /* FlashInfer's sampler where CUDA builds used it when installed (up to 0.10.1), the
     * torch one after (0.10.2 turned VLLM_USE_FLASHINFER_SAMPLER off by default) */
    r.sampler_bytes = (r.v0 || (!ascend && ver < 1002)) ? PLAN_SAMPLER_FLASHINFER_BYTES
                                                         : PLAN_SAMPLER_TORCH_BYTES;
    r.tokens_rule = ver >= 2100 ? 2 : ver >= 901 ? 1 : 0;
    r.typo_models = ver < 2200;
    r.mamba_graph_check = !ascend && ver >= 1900;
    /* #51726 raised the server's batch on the largest cards (first in 0.28.0) */
    r.serve_tier_160 = !ascend && ver >= 2800;
    return r;
}

static int64_t cdiv(int64_t a, int64_t b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

/* Releases that made Model Runner V2 the default (release notes): Qwen3 dense models from
 * 0.22 (#39337), Llama and Mistral from 0.23 (#43458), every dense (non-MoE) model from 0.25
 * (#44443), every model from 0.29. Its profile_cudagraph_memory() returned 0 until 0.29
 * (vllm#49224), so graphs were captured outside the budget; 0.29 profiles them and shards
 * the sampler's rows over the TP ranks (#50465). vllm-ascend keeps its own runner. */
#define MRV2_QWEN3 2200
#define MRV2_LLAMA 2300
#define MRV2_DENSE 2500
#define MRV2_ALL 2900

void plan_mrv2_rules(plan_rules *r, const hbm_plan_model *m)
{
    if (r->ascend || r->ver < MRV2_QWEN3)
        return;
    const char *a = m->architecture;
    bool dense = m->num_experts == 0;
    bool llama = !strcmp(a, "LlamaForCausalLM") || !strcmp(a, "MistralForCausalLM");
    r->mrv2 = r->ver >= MRV2_ALL || (dense && r->ver >= MRV2_DENSE) ||
              (dense && llama && r->ver >= MRV2_LLAMA) ||
              (dense && !strcmp(a, "Qwen3ForCausalLM"));
    if (!r->mrv2)
        return;
    r->sampler_bytes = PLAN_SAMPLER_MRV2_BYTES;
    r->graph_in_budget = r->ver >= MRV2_ALL;
    r->sampler_sharded = r->ver >= MRV2_ALL;
}

int64_t plan_weights_per_rank(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    double total = (double)m->weights_bytes * c->w_scale;
    double emb = m->embed_bytes > 0 ? (double)m->embed_bytes * c->w_scale : 0;
    if (emb > total)
        emb = total;
    double w = (total - emb) / (double)(f->tp * f->pp) + emb / (double)f->tp / (f->pp > 1 ? 2 : 1);
    /* projections that TP cannot split are replicated on every rank */
    double H = (double)m->hidden_size, L = (double)m->num_layers / (double)f->pp;
    if (!m->mla && m->num_kv_heads < f->tp)
        w += L * 2 * H * (double)m->head_dim * c->act_bytes *
             (1.0 - (double)m->num_kv_heads / (double)f->tp);
    if (m->mla)
        w += L * H * (double)(m->kv_lora_rank + m->qk_rope_head_dim) * c->act_bytes *
             (1.0 - 1.0 / (double)f->tp);
    if (c->mxfp4_marlin && m->expert_params > 0 && !strcasecmp(m->quant_method, "mxfp4")) {
        /* the checkpoint's experts give way to each rank's padded ones */
        double moe_layers = (double)plan_moe_layers(m);
        double inter = (double)plan_round_up(cdiv(m->moe_intermediate_size, f->tp),
                                             MXFP4_MARLIN_INTER_ALIGN);
        double hidden = (double)plan_round_up(m->hidden_size, MXFP4_MARLIN_HIDDEN_ALIGN);
        w += plan_mxfp4_expert_bytes(m, inter, hidden, moe_layers / (double)f->pp) -
             plan_mxfp4_expert_bytes(m, (double)m->moe_intermediate_size, H, moe_layers) /
                 (double)(f->tp * f->pp);
    }
    /* LoRA slots are allocated while the model is built (lora.c) */
    w += (double)plan_lora_budget_bytes(c, f->tp, f->pp);
    w += (double)plan_ascend_weights_extra(c, f);
    return (int64_t)w + plan_draft_weights(c, f);
}

/* Torch peak of the profile run: the forward over max_num_batched_tokens (the largest MLP
 * or fused-MoE workspace per token, with the residual stream) or the dummy sampler over
 * min(seqs, tokens) rows of the full vocabulary while the forward's hidden states are
 * still held, whichever is larger. */
static int64_t sampler_peak(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    int64_t rows = f->seqs < f->mnbt ? f->seqs : f->mnbt;
    if (c->r.sampler_sharded)
        rows = cdiv(rows, f->tp); /* each rank samples the requests it owns */
    double R = (double)rows;
    double V = (double)(m->vocab_size > 0 ? m->vocab_size : 0) + (double)plan_lora_added_vocab(c);
    return (int64_t)(R * V * c->r.sampler_bytes +
                     (double)f->mnbt * (double)m->hidden_size * c->act_bytes);
}

/* Routed-expert workspace of one MoE layer (fused_moe.py fused_experts_impl, 0.8-0.10): the
 * tokens go through in chunks of VLLM_FUSED_MOE_CHUNK_SIZE (32768 as envs.py reads it); per
 * chunk row and routed expert, cache13 holds max(N, K), GEMM1's output and then GEMM2's in the
 * same memory (N = w13's 2 x moe_intermediate / TP rows, K = hidden), and cache2 the
 * activation's N / 2, live with cache1. */
#define FUSED_MOE_CHUNK_TOKENS 32768
static double fused_moe_workspace(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    double rows = (double)(f->mnbt < FUSED_MOE_CHUNK_TOKENS ? f->mnbt : FUSED_MOE_CHUNK_TOKENS);
    double n = 2 * (double)m->moe_intermediate_size / (double)f->tp, k = (double)m->hidden_size;
    return rows * (double)m->experts_per_token * ((n > k ? n : k) + n / 2) * c->act_bytes;
}

/* A MoE layer's peak: the residual stream (input, residual, output) with the larger of the
 * shared experts' dense MLP (gate_up + activation, freed before the routed experts run) and
 * the routed-expert workspace. */
static double moe_layer_peak(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    double T = (double)f->mnbt, H = (double)m->hidden_size;
    double shared = m->shared_expert_intermediate_size > 0
                        ? (double)m->shared_expert_intermediate_size
                        : (double)(m->num_shared_experts * m->moe_intermediate_size);
    double shared_mlp = T * 3 * shared / (double)f->tp * c->act_bytes;
    double routed = fused_moe_workspace(c, f);
    return T * 3 * H * c->act_bytes + (shared_mlp > routed ? shared_mlp : routed);
}

/* vLLM's llama.py MLP (Llama, Mistral) rebinds one name, `x`, to gate_up and then to the
 * activation, so gate_up is freed before down_proj runs (#10339; taken from 0.6.4, whose
 * start-ups in vllm#10517 peak that way); Qwen2MLP (Qwen2, Qwen3, the Qwen VL text models)
 * and others such as Gemma's keep it as `gate_up` until they return. */
static bool mlp_frees_gate_up(const plan_ctx *c)
{
    const char *a = c->m->architecture;
    return c->r.ver >= 604 &&
           (strcmp(a, "LlamaForCausalLM") == 0 || strcmp(a, "MistralForCausalLM") == 0);
}

/* A dense layer's peak. Compiled (V1 with torch.compile): the residual stream and the MLP's
 * gate_up and activation. Eager (V0's profile run, or --enforce-eager) frees a tensor only
 * when its last Python name goes: the model loop still holds the layer's input, with the
 * residual and the normed attention output (the MLP's input, fused_add_rms_norm writes in
 * place), while the MLP holds gate_up [T, 2I/TP] and the activation [T, I/TP] and down_proj
 * writes its output [T, H]; on CUDA from 0.6.5 (#10121) the all-reduce at TP > 1 is out of
 * place (pynccl allocates its output) and that [T, H] is live with the rest. */
static double dense_layer_peak(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    double T = (double)f->mnbt, H = (double)m->hidden_size;
    double I = (double)m->intermediate_size / (double)f->tp;
    if (!c->r.v0 && !f->eager)
        return T * (3 * I + 3 * H) * c->act_bytes;
    double reduced = (!c->r.ascend && f->tp > 1 && c->r.ver >= 605) ? H : 0;
    double down = I + H + reduced;
    double mlp = mlp_frees_gate_up(c) ? (3 * I > down ? 3 * I : down) : 2 * I + down;
    return T * (3 * H + mlp) * c->act_bytes;
}

static int64_t activation(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    double fwd = 0;
    if (m->intermediate_size > 0 && (m->num_experts == 0 || m->first_dense_layers > 0))
        fwd = dense_layer_peak(c, f);
    if (m->num_experts > 0) {
        double moe = moe_layer_peak(c, f);
        if (moe > fwd)
            fwd = moe;
    }
    fwd += (double)plan_lora_forward_bytes(c, f);
    double sampler = (double)sampler_peak(c, f);
    return (int64_t)(fwd > sampler ? fwd : sampler);
}

/* Memory outside torch's allocator that the profiler charges: 0.13-0.15 GiB in V1 logs,
 * which count only what grew since the start-up snapshot. V0 measured from before the
 * model was built, and the device-wide rules (CUDA V1 before 0.9.1, vllm-ascend before
 * 0.15) charge the whole device's used memory less torch's, so this process's CUDA
 * context, library handles and workspaces are in it too (0.34-0.43 GiB in V0 logs). */
static int64_t non_torch(const plan_ctx *c, const plan_flags *f)
{
    bool whole_context = c->r.v0 || !c->r.snapshot_budget;
    int64_t nt = (int64_t)((whole_context ? 0.35 : 0.15) * GIB_D);
    if (c->r.collective_in_budget && f->tp * f->pp > 1)
        nt += (int64_t)(0.25 * GIB_D);
    return nt;
}

/* CUDA graph pool: a fixed part plus a share per captured layer (0.50-0.65 GiB measured
 * for a 28-layer 7B at TP 1-2). */
static int64_t graph_estimate(const plan_ctx *c, const plan_flags *f)
{
    if (f->eager)
        return 0;
    return (int64_t)(0.35 * GIB_D) + cdiv(c->m->num_layers, f->pp) * 6 * HBM_MIB;
}

/* KV layout for an available budget: fills per_token, block, num_blocks, tokens, conc. */
typedef struct layout {
    int64_t page;        /* bytes per block and layer */
    int64_t gs;          /* layers per group (tensors in the pool) */
    int64_t g_full, g_slide, g_lin;
    int64_t block;
    int64_t per_token;
} layout;

static layout kv_layout(const plan_ctx *c, const plan_flags *f)
{
    const hbm_plan_model *m = c->m;
    layout l = {0};
    int64_t heads = m->mla ? 1 : (m->num_kv_heads / f->tp > 1 ? m->num_kv_heads / f->tp : 1);
    int64_t vd = m->mla ? 0 : (m->v_head_dim > 0 ? m->v_head_dim : m->head_dim);
    int64_t tok = heads * (m->head_dim + vd) * f->kvb; /* one token, one layer */
    int64_t nf = cdiv(c->n_full, f->pp), ns = cdiv(c->n_slide, f->pp), nl = cdiv(c->n_lin, f->pp);
    /* a drafter's attention layers join the full-attention pool (as many layers of the
     * target's page as its bytes fill: exact when its layers are shaped like the target's) */
    nf += cdiv(plan_draft_kv_per_token(c, f), tok);
    l.block = f->block;
    if (nl > 0 && nf > 0 && m->linear_num_v_heads > 0) {
        /* Mamba-style state per layer and request; attention blocks grow to cover it */
        int64_t kdim = m->linear_num_k_heads * m->linear_k_head_dim;
        int64_t vdim = m->linear_num_v_heads * m->linear_v_head_dim;
        int64_t conv = (2 * kdim + vdim) / f->tp * (m->linear_conv_kernel - 1);
        int64_t temporal = m->linear_num_v_heads / f->tp * m->linear_k_head_dim * m->linear_v_head_dim;
        int64_t state = (conv + temporal) * c->act_bytes;
        int64_t align = f->block > 16 ? f->block : 16;
        int64_t b = align * cdiv(state, align * tok);
        if (b > l.block)
            l.block = b;
    }
    l.page = l.block * tok;
    l.per_token = tok * (nf + ns);
    int64_t kinds[3] = {nf, ns, nl};
    int64_t mn = 0, mx = 0, types = 0;
    for (int i = 0; i < 3; i++)
        if (kinds[i] > 0) {
            types++;
            mn = mn == 0 || kinds[i] < mn ? kinds[i] : mn;
            mx = kinds[i] > mx ? kinds[i] : mx;
        }
    if (types <= 1)
        l.gs = mx;
    else
        l.gs = (double)mx < 1.5 * (double)mn ? mx : mn;
    if (l.gs <= 0)
        l.gs = 1;
    l.g_full = cdiv(nf, l.gs);
    l.g_slide = cdiv(ns, l.gs);
    l.g_lin = cdiv(nl, l.gs);
    return l;
}

/* Blocks one request of length len needs across all groups. */
static int64_t blocks_per_request(const plan_ctx *c, const plan_flags *f, const layout *l, int64_t len)
{
    /* full attention needs no block for speculative tokens; a Mamba group one per token */
    int64_t n = l->g_full * cdiv(len, l->block) + l->g_lin * (1 + c->draft.mamba_spec_blocks);
    if (l->g_slide) {
        int64_t w = c->m->sliding_window - 1 + f->mnbt;
        n += l->g_slide * (cdiv(w < len ? w : len, l->block) + 1);
    }
    return n;
}

static bool layout_has_kv(const layout *l)
{
    return l->g_full + l->g_slide + l->g_lin > 0 && l->page > 0;
}

/* Longest request that fits the budget (binary search, as vLLM's estimate). */
static int64_t longest_fit(const plan_ctx *c, const plan_flags *f, const layout *l, int64_t avail)
{
    int64_t lo = 0, hi = f->mml > 0 ? f->mml : 1;
    if (c->m->max_position_embeddings > hi)
        hi = c->m->max_position_embeddings;
    if (hi > (1LL << 40))
        hi = 1LL << 40;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if ((double)blocks_per_request(c, f, l, mid) * (double)l->page * (double)l->gs <=
            (double)avail)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void plan_evaluate(const plan_ctx *c, const plan_flags *f, plan_outcome *o)
{
    memset(o, 0, sizeof *o);
    const plan_rules *r = &c->r;
    double want = (double)f->total * f->util;
    o->requested = r->precheck_ceil ? (int64_t)ceil(want) : (int64_t)want;
    o->weights = plan_weights_per_rank(c, f);
    o->act = activation(c, f);
    o->sampler = sampler_peak(c, f);
    if (c->mm) {
        plan_mm_profile_for(c, f, &o->mm);
        o->weights += o->mm.weights_delta;
        o->act = plan_mm_activation(&o->mm, o->act);
    }
    o->nt = non_torch(c, f);
    int64_t g = graph_estimate(c, f);
    if (r->graph_in_budget)
        o->graph = g;
    else
        o->graph_out = g;
    int64_t others = f->free >= 0 && f->free < f->total ? f->total - f->free : 0;
    if (r->precheck && f->free >= 0 && f->free < o->requested)
        o->precheck_fail = true;
    /* the weights alone must fit what is free when loading starts */
    if (o->weights > (f->free >= 0 ? f->free : f->total))
        o->oom = true;
    if (f->kvmem >= 0)
        o->avail = f->kvmem;
    else if (r->snapshot_budget) {
        o->avail = o->requested - o->weights - o->act - o->nt - o->graph -
                   (r->others_charged ? others : 0);
        if (r->kv_halved)
            o->avail /= 2;
    } else
        o->avail = (int64_t)want - o->weights - o->act - o->nt - others;
    layout l = kv_layout(c, f);
    o->per_token = l.per_token;
    o->block = l.block;
    o->groups = l.g_full + l.g_slide + l.g_lin;
    o->mml_fit = HBM_UNKNOWN;
    if (o->avail <= 0 || !layout_has_kv(&l)) {
        o->no_kv = o->avail <= 0;
        o->fits = !o->no_kv && !o->precheck_fail && !o->oom;
        return;
    }
    o->num_blocks = o->avail / l.page / l.gs;
    /* vLLM counts the budget's blocks, then allocates the override's instead
     * (kv_cache_utils.py get_num_blocks -> may_override_num_blocks) */
    if (f->blocks_override > 0)
        o->num_blocks = f->blocks_override;
    int64_t per_req = blocks_per_request(c, f, &l, f->mml);
    double needed = (double)per_req * (double)l.page * (double)l.gs;
    o->needed = needed > 9e18 ? INT64_MAX : (int64_t)needed;
    if (r->v0 || r->tokens_rule == 0) {
        o->tokens = o->num_blocks * l.block;
        o->conc = (double)o->tokens / (double)f->mml;
    } else {
        o->conc = per_req > 0 ? (double)o->num_blocks / (double)per_req : 0;
        o->tokens = r->tokens_rule == 1 ? o->num_blocks / (o->groups ? o->groups : 1) * l.block
                                        : (int64_t)(o->conc * (double)f->mml);
    }
    o->mml_fit = longest_fit(c, f, &l, r->v0 ? o->num_blocks * l.page * l.gs : o->avail);
    if (r->v0)
        o->mml_fail = f->mml > o->num_blocks / f->pp * l.block;
    else
        o->mml_fail = o->needed > o->avail;
    if (o->num_blocks == 0)
        o->no_kv = true;
    /* each decode sequence of a hybrid needs one state block to capture full graphs */
    o->mamba_fail = r->mamba_graph_check && !f->eager && l.g_lin > 0 && f->seqs > o->num_blocks;
    o->fits = !o->precheck_fail && !o->no_kv && !o->mml_fail && !o->oom && !o->mamba_fail;
}
