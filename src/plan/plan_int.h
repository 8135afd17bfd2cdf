/* Pieces shared by the planner's source files (not part of the public API). */
#ifndef HBM_PLAN_INT_H
#define HBM_PLAN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hbm/plan.h"

/* Bytes of one element of a dtype name ("bfloat16", "fp8", ...); 0 when unknown. */
int plan_dtype_bytes(const char *name);

/* Sums the safetensors headers of a model directory: the files named by
 * model.safetensors.index.json when present, else every *.safetensors. *files = 0 when the
 * directory holds none. */
int plan_weights_in_dir(const char *dir, hbm_plan_st_sum *sum, int *files, hbm_err *err);

/* vLLM version as major*10000 + minor*100 + patch; -1 when unparsable. */
int plan_version_parse(const char *s);
#define PLAN_VERSION_NEWEST 2300 /* 0.23.0: the newest release the rules know */
/* The releases the rules know: vLLM 0.6.0 (V0's profile-run budget, research/vllm-memory.md)
 * and vllm-ascend 0.7.0 (its first releases) up to any patch release of the newest minor. */
#define PLAN_VERSION_OLDEST_CUDA 600
#define PLAN_VERSION_OLDEST_ASCEND 700
#define PLAN_VERSION_LAST (PLAN_VERSION_NEWEST + 99)

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
} plan_rules;

/* Effective flags for one evaluation. */
typedef struct plan_flags {
    int64_t tp, pp, mml, seqs, mnbt, block, kvmem, total, free;
    double util;
    int kvb;      /* KV bytes per element */
    bool eager;
    bool block_given;
    bool chunked;
} plan_flags;

/* One evaluation of the model: budget, layout and checks. */
typedef struct plan_outcome {
    bool fits, precheck_fail, no_kv, mml_fail, oom;
    bool mamba_fail; /* hybrid with full CUDA graphs: more sequences than state blocks */
    int64_t requested, weights, act, nt, graph, graph_out, avail;
    int64_t sampler; /* the dummy sampler's peak (in act when it is the larger) */
    int64_t per_token, block, num_blocks, tokens, mml_fit, needed, groups;
    double conc;
} plan_outcome;

/* What stays fixed while flags vary: the model and the version rules. */
typedef struct plan_ctx {
    const hbm_plan_model *m;
    plan_rules r;
    int act_bytes;     /* activation / model dtype bytes at run time */
    double w_scale;    /* run-time weight bytes per checkpoint byte (online fp8, fp32->16) */
    int64_t n_full, n_slide, n_lin; /* layers of each kind in the model */
} plan_ctx;

/* The caller's input and the model name for flag lines (both borrowed). */
typedef struct plan_view {
    const hbm_plan_input *in;
    const char *model;
} plan_view;

/* The rules of one release (plan_version_parse) on CUDA or Ascend. */
plan_rules plan_rules_for(int ver, bool ascend);

/* What vllm-ascend's worker for the named device changes in those rules (ascend.c);
 * device_name may be NULL (a size given without a device). */
void plan_ascend_device_rules(plan_rules *r, const char *device_name);

/* Runs the model for one set of flags. */
void plan_evaluate(const plan_ctx *c, const plan_flags *f, plan_outcome *o);

/* The serving flags as a whole `vllm serve` line (owned string). */
char *plan_flag_line(const plan_view *v, const plan_flags *f, const char *kv_dtype);

/* For a plan that does not start: the changes that make it fit, best first, each
 * verified by plan_evaluate, appended to res->recs. */
void plan_advise(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                 const plan_view *v, hbm_plan_result *res);

/* ---- engines (engine.c dispatches; one file of rules each) ---- */

/* What one engine brings: its flag table and its own reading of a command line and of the
 * start-up. run is given a zeroed result with its model initialised. */
typedef struct plan_engine {
    hbm_plan_engine id;
    const char *name;           /* "vllm" */
    const hbm_plan_flag *flags; /* its table, in documentation order, ending with a NULL name */
    int (*args)(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err);
    int (*run)(const hbm_plan_input *in, hbm_plan_result *r, hbm_err *err);
} plan_engine;

extern const plan_engine plan_engine_vllm;

/* vLLM's flag table (flags.c) and its reading of a command line (args.c). */
extern const hbm_plan_flag plan_vllm_flags[];
int plan_vllm_args(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err);

/* The engine's entry; NULL when the planner does not know it. */
const plan_engine *plan_engine_of(hbm_plan_engine id);

#endif
