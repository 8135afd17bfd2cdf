/* Pieces shared by the planner's source files (not part of the public API). */
#ifndef HBM_PLAN_INT_H
#define HBM_PLAN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/plan.h"

/* Bytes of one element of a dtype name ("bfloat16", "fp8", ...); 0 when unknown. */
int plan_dtype_bytes(const char *name);
/* Bytes of one KV element for --kv-cache-dtype name: the model's when auto, unset or unknown. */
int plan_kv_dtype_bytes(const char *name, int model_bytes);

/* Sums the safetensors headers of a model directory: the files named by
 * model.safetensors.index.json when present, else every *.safetensors. *files = 0 when the
 * directory holds none. */
int plan_weights_in_dir(const char *dir, hbm_plan_st_sum *sum, int *files, hbm_err *err);

/* vLLM version as major*10000 + minor*100 + patch; -1 when unparsable. */
int plan_version_parse(const char *s);
#define PLAN_VERSION_NEWEST 2900 /* 0.29.0: the newest release the rules know */
/* The releases the rules know: vLLM 0.6.0 (V0's profile-run budget, research/vllm-memory.md)
 * and vllm-ascend 0.7.0 (its first releases) up to any patch release of the newest minor. */
#define PLAN_VERSION_OLDEST_CUDA 600
#define PLAN_VERSION_OLDEST_ASCEND 700

/* The releases one engine's rules know: `oldest` to `newest` (major*10000 + minor*100 +
 * patch); by_patch: patch releases change the rules (SGLang's defaults do), so a later patch
 * is newer; else any patch of the newest minor is known. */
typedef struct plan_release {
    const char *flag;   /* "--vllm-version" */
    const char *engine; /* "vLLM", "SGLang": in messages */
    int oldest, newest;
    bool by_patch;
} plan_release;
/* The rules' release for the engine release `given` (NULL: the newest) in *ver. A release
 * newer than the rules is planned with the newest rules and *newer says so: most start-ups
 * run a release newer than the last one whose code was read, and refusing them plans
 * nothing. An unparsable release, or one older than rel->oldest, is an error. */
int plan_release_rules(const char *given, const plan_release *rel, int *ver, bool *newer,
                       hbm_err *err);
/* Records the rules used in res (vllm_version, rules_version, engine_version, rules_newer)
 * and, for a newer release, a note that says so. */
void plan_release_record(hbm_plan_result *res, const char *engine, const char *given, int ver,
                         bool newer);

/* ---- the memory model (memory.c), used by plan.c (prediction) and advise.c (changes) ---- */

/* What changed in vLLM (and vllm-ascend) between releases, for one version. */
typedef struct plan_rules {
    int ver;
    bool ascend;
    bool v0;              /* V0 engine (before 0.8): no chunked prefill by default */
    double default_util;
    bool precheck;        /* free >= total x util at start-up */
    bool precheck_ceil;   /* math.ceil and "%.2f" GiB with the device name */
    bool snapshot_budget; /* memory of other processes is not charged to the budget */
    bool graph_in_budget; /* CUDA graph estimate subtracted from the budget */
    bool collective_in_budget; /* NCCL/HCCL buffers created after the snapshot */
    int sampler_bytes;    /* bytes per (request x vocab entry) of the dummy sampler run */
    int tokens_rule;      /* 0 blocks x bs, 1 blocks // groups x bs, 2 concurrency x len */
    bool typo_models;     /* "models's" in the max_model_len message (before 0.22) */
    bool mamba_graph_check; /* max_num_seqs <= blocks for hybrids with full graphs (0.19+) */
    bool kv_halved;       /* vllm-ascend's 310P worker keeps half the budget for workspaces */
    bool others_charged;  /* other processes' memory taken from the budget after the check */
    bool nz_embed_copy;   /* 310P: each unquantized vocabulary table also kept in FRACTAL_NZ */
    bool mrv2;            /* Model Runner V2 runs this model (plan_mrv2_rules) */
    bool sampler_sharded; /* the dummy sampler's rows are split over the TP ranks (0.29) */
    bool serve_tier_160;  /* the server batches 16384 tokens from 160 GiB of memory (0.28) */
} plan_rules;

/* Effective flags for one evaluation. */
typedef struct plan_flags {
    int64_t tp, pp, mml, seqs, mnbt, block, kvmem, total, free;
    int64_t blocks_override; /* --num-gpu-blocks-override, HBM_UNKNOWN when not given */
    double util;
    int kvb;      /* KV bytes per element */
    bool eager;
    bool block_given;
    bool chunked;
} plan_flags;

/* ---- multimodal models (multimodal.c) ---- */

/* The vision towers the planner sizes, by how their blocks hold memory. */
typedef enum plan_vit {
    PLAN_VIT_NONE = 0,
    PLAN_VIT_QWEN2,   /* Qwen2-VL: rotary attention, GELU MLP, images and videos */
    PLAN_VIT_QWEN25,  /* Qwen2.5-VL: rotary attention, SwiGLU MLP with a fused residual norm */
    PLAN_VIT_QWEN3,   /* Qwen3-VL: rotary attention, GELU MLP, patch 16 */
    PLAN_VIT_SIGLIP,  /* SigLIP (Gemma 3): fixed square image, no rotary */
} plan_vit;

/* A vision tower from config.json / preprocessor_config.json and the multimodal flags. */
typedef struct plan_mm {
    plan_vit vit;
    int64_t depth, hidden, intermediate, patch, merge, temporal, channels;
    int64_t heads;            /* attention heads (the rotary towers' head width) */
    int64_t image_size;       /* SigLIP: the square input every image is resized to */
    int64_t tokens_per_image; /* SigLIP: mm_tokens_per_image */
    int64_t max_pixels;       /* Qwen: the image processor's (or --mm-processor-kwargs') */
    int64_t out_hidden;       /* the language model's width the encoder writes */
    int64_t params;           /* vision tower + projector parameters */
    int64_t limit_image, limit_video; /* --limit-mm-per-prompt; -1 = not given */
    bool data_parallel;       /* --mm-encoder-tp-mode data: the tower replicated */
    bool skip_profiling;      /* --skip-mm-profiling */
} plan_mm;

/* vLLM's profile run of the encoder for one set of flags. */
typedef struct plan_mm_profile {
    bool profiled, tower_loaded;
    const char *modality;       /* static */
    int64_t tokens_per_item, items, budget;
    int64_t peak;               /* the encoder's torch peak per rank */
    int64_t outputs;            /* its outputs, held in the encoder cache through the LM run */
    int64_t weights_delta;      /* tower bytes per rank against the checkpoint's TP split */
    int64_t cost;               /* what the profiling adds to the run's peak */
} plan_mm_profile;

/* One evaluation of the model: budget, layout and checks. */
typedef struct plan_outcome {
    bool fits, precheck_fail, no_kv, mml_fail, oom;
    bool mamba_fail; /* hybrid with full CUDA graphs: more sequences than state blocks */
    int64_t requested, weights, act, nt, graph, graph_out, avail;
    int64_t sampler; /* the dummy sampler's peak (in act when it is the larger) */
    int64_t per_token, block, num_blocks, tokens, mml_fit, needed, groups;
    double conc;
    plan_mm_profile mm; /* multimodal models only */
} plan_outcome;

/* What a speculative-decoding drafter adds to the start-up (spec.c). */
typedef struct plan_draft {
    int64_t weights;     /* bytes on one rank at draft TP 1 */
    int64_t tp;          /* draft_tensor_parallel_size; 0: the target's */
    int64_t layers;      /* attention layers in the same KV cache */
    int64_t kv_heads;    /* per layer (0: an MLA latent, not split by TP) */
    int64_t kv_width;    /* K + V elements per head and token */
    int64_t mamba_spec_blocks; /* extra state blocks per request of each Mamba group */
} plan_draft;
/* LoRA as vLLM builds it for one release and model (lora.c). */
typedef struct plan_lora {
    bool on;
    int64_t slots, rank;  /* --max-loras, --max-lora-rank */
    int dtype_bytes;      /* --lora-dtype, else the model's */
    bool fully_sharded;
    int64_t extra_vocab;  /* embedding / lm_head rows added for adapters (before 0.12) */
    bool vocab_flag_gone; /* --lora-extra-vocab-size given to a release without it */
    bool embeddings;      /* the architecture adapts embed_tokens and lm_head */
    bool experts;         /* routed experts carry slots (FusedMoE LoRA, 0.11.1+) */
    bool v0_engine;       /* 0.8.0-0.8.2 sent LoRA to V0 (unless VLLM_USE_V1=1) */
    bool uncharged;       /* before 0.8 the slots were built outside V0's weight measure */
} plan_lora;

/* What stays fixed while flags vary: the model and the version rules. */
typedef struct plan_ctx {
    const hbm_plan_model *m;
    const plan_mm *mm;  /* NULL for a text model */
    plan_rules r;
    int act_bytes;     /* activation / model dtype bytes at run time */
    double w_scale;    /* run-time weight bytes per checkpoint byte (online fp8, fp32->16) */
    int64_t n_full, n_slide, n_lin; /* layers of each kind in the model */
    plan_draft draft;  /* speculative decoding (spec.c); all zero without it */
    plan_lora lora;
    /* vLLM's MXFP4 experts are laid out for Marlin, padded per rank (memory.c); other
     * engines leave it false */
    bool mxfp4_marlin;
} plan_ctx;

/* The caller's input and the model name for flag lines (both borrowed). */
typedef struct plan_view {
    const hbm_plan_input *in;
    const char *model;
} plan_view;

/* Speculative decoding (spec.c): the drafter of in's flags into c->draft and res->spec;
 * fails on a speculative flag vLLM would refuse (removed flags, a bad JSON). */
int plan_spec_apply(const hbm_plan_input *in, plan_ctx *c, const plan_flags *f,
                    hbm_plan_result *res, hbm_err *err);
/* The draft's KV bytes per token on one rank, and its weights on one rank. */
int64_t plan_draft_kv_per_token(const plan_ctx *c, const plan_flags *f);
int64_t plan_draft_weights(const plan_ctx *c, const plan_flags *f);

/* Bytes per row and vocabulary entry of the profile run's dummy sampler: FlashInfer's
 * sort-free top-k/top-p, and the torch sort-based one (logits bf16 + fp32, sorted values +
 * int64 indices, softmax, cumsum, scatter, probabilities and the exponential draw). */
#define PLAN_SAMPLER_FLASHINFER_BYTES 10
#define PLAN_SAMPLER_TORCH_BYTES 38
/* Model Runner V2's dummy sampler (vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run,
 * sample/sampler.py): the bf16 logits and their fp32 copy; its profile skips top-k/top-p
 * (sample/states.py starts every slot at top_k = vocabulary, top_p = 1.0) and the Gumbel
 * draw is one Triton kernel */
#define PLAN_SAMPLER_MRV2_BYTES 6

/* The rules of one release (plan_version_parse) on CUDA or Ascend. */
plan_rules plan_rules_for(int ver, bool ascend);
/* Whether vLLM's default runner for model m on these rules is Model Runner V2, and what
 * that changes: its dummy sampler, graphs outside the budget before 0.29, the sampler
 * sharded over TP from 0.29. */
void plan_mrv2_rules(plan_rules *r, const hbm_plan_model *m);

static inline int64_t plan_round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

/* Layers with routed experts (those after first_k_dense_replace); 0 for a dense model. */
int64_t plan_moe_layers(const hbm_plan_model *m);

/* The module kind (HBM_PLAN_QSKIP_*) a quantisation config's module name or pattern
 * names; 0 for embeddings, lm_head and what it does not know. */
unsigned plan_quant_skip_of(const char *module);
/* Bytes of the routed experts under vLLM's MXFP4 layout, for experts of the given
 * intermediate and hidden sizes over the given number of MoE layers. */
double plan_mxfp4_expert_bytes(const hbm_plan_model *m, double inter, double hidden,
                               double layers);

/* The weight bytes one rank holds: its TP x PP share, embeddings split by TP, and the
 * projections TP cannot split replicated. */
int64_t plan_weights_per_rank(const plan_ctx *c, const plan_flags *f);

/* What vllm-ascend's worker for the named device changes in those rules (ascend.c);
 * device_name may be NULL (a size given without a device). */
void plan_ascend_device_rules(plan_rules *r, const char *device_name);
/* The bytes those rules add to one rank's weights (0 on other devices). */
int64_t plan_ascend_weights_extra(const plan_ctx *c, const plan_flags *f);

/* Runs the model for one set of flags. */
void plan_evaluate(const plan_ctx *c, const plan_flags *f, plan_outcome *o);

/* The serving flags as a whole `vllm serve` line (owned string). */
char *plan_flag_line(const plan_view *v, const plan_flags *f, const char *kv_dtype);

/* For a plan that does not start: the changes that make it fit, best first, each
 * verified by plan_evaluate, appended to res->recs. */
void plan_advise(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                 const plan_view *v, hbm_plan_result *res);

/* The vision tower of the model at path (its config.json, preprocessor_config.json beside
 * it) with the multimodal flags of in; mm->vit = PLAN_VIT_NONE for a text model. Fails on a
 * bad flag value, naming the flag. */
int plan_mm_load(const char *model_path, const hbm_plan_input *in, plan_mm *mm, hbm_err *err);
/* The vision tower of config.json text (the preprocessor's defaults, no flags); false
 * with mm zeroed when it describes none the planner sizes. */
bool plan_mm_parse(const char *text, size_t len, plan_mm *mm);
/* --limit-mm-per-prompt: '{"image": 2, "video": 0}', '{"image": {"count": 1, ...}}' or
 * image=2,video=0; a modality not named stays -1. */
int plan_mm_parse_limits(const char *text, int64_t *image, int64_t *video, hbm_err *err);
/* The multimodal flags (canonical spelling, with a .KEY of --limit-mm-per-prompt), and one
 * of them with its value (NULL for --[no-]skip-mm-profiling) into in; fails on a bad value,
 * naming the flag. */
bool plan_mm_flag(const char *flag);
int plan_mm_arg(hbm_plan_input *in, const char *flag, const char *value, hbm_err *err);
/* One --limit-mm-per-prompt VALUE (key NULL) or --limit-mm-per-prompt.KEY VALUE into in. */
int plan_mm_limit_arg(hbm_plan_input *in, const char *key, const char *value, hbm_err *err);
/* The limits given, as the flag that sets them (owned string, with a leading space). */
char *plan_mm_limits_flag(const hbm_plan_input *in);
/* --mm-processor-kwargs: max_pixels (or size.longest_edge) when given, else unchanged. */
int plan_mm_parse_kwargs(const char *text, int64_t *max_pixels, hbm_err *err);
/* The encoder's profile run for the flags, and the torch peak of the whole run given the
 * language model's own (text_act). */
void plan_mm_profile_for(const plan_ctx *c, const plan_flags *f, plan_mm_profile *p);
int64_t plan_mm_activation(plan_mm_profile *p, int64_t text_act);
/* The outcome's multimodal figures into res->multimodal, and the notes they call for:
 * what profiling the largest item costs and the flag that turns it off (a checkpoint
 * served for text only profiles it all the same), or what the flags turned off. */
void plan_mm_result(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                    hbm_plan_result *res);
void plan_mm_notes(const plan_ctx *c, const plan_outcome *o, hbm_plan_result *res);
/* ---- LoRA (lora.c) ---- */

/* The LoRA configuration vLLM builds for in's flags, model m and release ver; act_bytes is
 * the model's run-time dtype width (lora_dtype auto). */
plan_lora plan_lora_for(const hbm_plan_input *in, const hbm_plan_model *m, int ver,
                        int act_bytes);
/* The engine rules LoRA changes: V0 for the releases that sent LoRA back to it. */
void plan_lora_rules(plan_rules *r, const plan_lora *l);
/* Device bytes per rank of the adapter slots (and extra vocabulary) at TP tp, PP pp. */
int64_t plan_lora_slot_bytes(const plan_ctx *c, int64_t tp, int64_t pp);
/* The part of them the KV budget is charged with (none where vLLM did not measure them). */
int64_t plan_lora_budget_bytes(const plan_ctx *c, int64_t tp, int64_t pp);
/* What the release does with the slots' engine and budget, as a note's tail ("" when
 * nothing differs); static. */
const char *plan_lora_engine_text(const plan_ctx *c);
/* What the forward of the profile run with dummy adapters adds per rank. */
int64_t plan_lora_forward_bytes(const plan_ctx *c, const plan_flags *f);
/* Vocabulary rows added to the logits the sampler sees. */
int64_t plan_lora_added_vocab(const plan_ctx *c);
/* The LoRA flags as a flag line's tail (" --enable-lora --max-loras 4 ..."); owned, "" off. */
char *plan_lora_flag_text(const hbm_plan_input *in);
/* The result's lora object for TP tp, PP pp and the flags f. */
void plan_lora_fill(const plan_ctx *c, const plan_flags *f, hbm_plan_lora *out);

/* ---- engines (engine.c dispatches; one file of rules each) ---- */

/* What one engine brings: its flag table and its own reading of a command line and of the
 * start-up. run is given a zeroed result with its model initialised. */
typedef struct plan_engine {
    hbm_plan_engine id;
    const char *name;           /* "vllm" */
    const hbm_plan_flag *flags; /* its table, in documentation order, ending with a NULL name */
    int (*args)(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err);
    int (*run)(const hbm_plan_input *in, hbm_plan_result *r, hbm_err *err);
    /* what planning backwards chooses, in the engine's words: the share of memory it may
     * take (gpu_memory_utilization in the input; NULL: none, so --serve is refused) and
     * the tokens of one request (max_model_len) */
    const char *util_flag, *len_flag;
    bool no_pipeline; /* the engine has no pipeline parallelism: --serve keeps PP 1 */
} plan_engine;

extern const plan_engine plan_engine_vllm;
extern const plan_engine plan_engine_sglang; /* sglang.c */
extern const plan_engine plan_engine_mindie; /* mindie.c */

/* vLLM's flag table (flags.c) and its reading of a command line (args.c). */
extern const hbm_plan_flag plan_vllm_flags[];
int plan_vllm_args(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err);
/* A flag as typed, up to any '=', with '_' read as '-' ("--max_model_len=8" ->
 * "--max-model-len"), as vLLM reads flag names. */
void plan_flag_canon(const char *in, char *out, size_t n);
/* hbm_plan_flag_find and hbm_plan_flag_suggest over one engine's table: an engine's own
 * reader calls these, so the flag code never needs the engine list (engine.c) above it. */
const hbm_plan_flag *plan_flag_find(const hbm_plan_flag *table, const char *arg, bool *attached);
const char *plan_flag_suggest(const hbm_plan_flag *table, const char *arg,
                              const char *const *extra);

/* What every engine's result carries alike: a note, a failing check (both texts owned by
 * res after the call), and the device facts of in (platform, name, live ids, the
 * visible-device variable). */
void plan_add_note(hbm_plan_result *res, char *text);
/* The notes on what the model's figures rest on: weights estimated, a generic decoder. */
void plan_model_notes(const hbm_plan_model *m, hbm_plan_result *res);
void plan_add_error(hbm_plan_result *res, const char *kind, char *msg);
void plan_fill_device(const hbm_plan_input *in, hbm_plan_result *res);

/* The engine's entry; NULL when the planner does not know it. */
const plan_engine *plan_engine_of(hbm_plan_engine id);

#endif
