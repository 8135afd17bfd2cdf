/* The preflight planner (docs/planner.md): predicts what vLLM's V1 engine (and vllm-ascend)
 * does with device memory at start-up, from a model directory, a device and the serving flags alone,
 * and says in vLLM's own words whether it starts, and what to change when it does not.
 *
 * Units: bytes, 0..1 ratios; an unknown integer is HBM_UNKNOWN, an unknown ratio NAN.
 * Every *_bytes figure of a result is per device rank; tokens, blocks and concurrency are
 * for the engine, as vLLM prints them. */
#ifndef HBM_PLAN_H
#define HBM_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"
#include "hbm/util.h"

typedef enum hbm_plan_platform {
    HBM_PLAN_PLATFORM_UNKNOWN = 0,
    HBM_PLAN_PLATFORM_CUDA,   /* vLLM on NVIDIA GPUs */
    HBM_PLAN_PLATFORM_ASCEND, /* vllm-ascend on Huawei NPUs */
} hbm_plan_platform;

/* The serving engine whose start-up is planned: each has its own flags, defaults, memory
 * rules, checks and words (src/plan/<engine>.c); the model, weights and KV layout are
 * shared. */
typedef enum hbm_plan_engine {
    HBM_PLAN_ENGINE_VLLM = 0, /* vLLM, and vllm-ascend on Ascend */
    HBM_PLAN_ENGINE_SGLANG,
    HBM_PLAN_ENGINE_MINDIE,
} hbm_plan_engine;

/* "vllm", "sglang", "mindie" (static). */
const char *hbm_plan_engine_name(hbm_plan_engine e);
/* By name, case-insensitive; fails naming the engines the planner knows. */
/* The flag planning backwards chooses, in the engine's words ("--gpu-memory-utilization",
 * "--mem-fraction-static"); NULL when the engine has none. */
const char *hbm_plan_engine_util_flag(hbm_plan_engine e);
int hbm_plan_engine_parse(const char *name, hbm_plan_engine *out, hbm_err *err);

/* ---- devices ------------------------------------------------------------------------- */

/* One row of the device table: the memory the framework itself reports as total
 * (torch.cuda / torch.npu mem_get_info), which is below the marketing size. */
typedef struct hbm_plan_device {
    const char *name;     /* "910B4", "H100-80G", ... (static) */
    const char *aliases;  /* comma-separated other spellings, matched case-insensitively */
    hbm_plan_platform platform;
    int64_t total_bytes;  /* what vLLM's MemorySnapshot sees as total */
    bool large_class;     /* vLLM's batch defaults of >= 70 GiB non-A100 devices apply */
    const char *source;   /* where total_bytes comes from (static) */
} hbm_plan_device;

/* The whole table, in documentation order. */
const hbm_plan_device *hbm_plan_devices(size_t *n);
/* By name or alias, case-insensitive, ignoring '-', '_' and spaces; NULL when unknown. */
const hbm_plan_device *hbm_plan_device_find(const char *name);
/* The row for a name as a driver reports it ("NVIDIA H100 80GB HBM3", "910B3"): the
 * longest table family contained in it, then the size nearest driver_total (bytes, may be
 * HBM_UNKNOWN); NULL when no family matches. */
const hbm_plan_device *hbm_plan_device_match(const char *driver_name, int64_t driver_total);

/* One live device's memory as vLLM sees it, from what the driver reports. */
typedef struct hbm_plan_devmem {
    const hbm_plan_device *row; /* borrowed (static): the table row used, NULL when none fits */
    int64_t total_bytes;        /* the framework's total: the row's, else the driver's */
    int64_t free_bytes;         /* total_bytes - driver used, at least 0 */
    bool large_device;          /* vLLM's >= 70 GiB non-A100 batch defaults apply */
} hbm_plan_devmem;

/* What `plan --device auto` and `run --preflight` both plan with. torch.cuda.mem_get_info
 * (cudaMemGetInfo; torch.npu.mem_get_info on Ascend), which vLLM's MemorySnapshot reads,
 * reports a total below the driver tool's (NVML / DCMI) by what the driver keeps for itself
 * (79.18 GiB against NVML's 81559 MiB on an H100), while the memory processes use is the
 * same in both. So: the table's total for a device the name matches whose size agrees
 * with the driver's (90-100.5% of it: a chip sold with several memory sizes must not take
 * another size's row), else the driver's own total; free = that total - driver used.
 * Under WSL2 (wsl2: the host fact) CUDA's total is the whole card less about 10 MiB, the
 * driver's own (23.99 GiB for a 24 GB RTX 4090 where the native driver gives 23.64), so the
 * driver's total is taken. Fails when the driver gives no total or no used figure. */
int hbm_plan_device_memory(const char *driver_name, hbm_plan_platform platform, bool wsl2,
                           int64_t driver_total, int64_t driver_used, hbm_plan_devmem *out,
                           hbm_err *err);

/* ---- model reading ------------------------------------------------------------------- */

/* How a layer keeps its cache. */
typedef enum hbm_plan_layer_kind {
    HBM_PLAN_LAYER_FULL = 0, /* full attention: KV grows with the context */
    HBM_PLAN_LAYER_SLIDING,  /* sliding window: at most window + batch tokens */
    HBM_PLAN_LAYER_LINEAR,   /* linear attention / Mamba / GDN: constant state per request */
    HBM_PLAN_LAYER_SHARED,   /* reuses another layer's KV: no cache of its own */
} hbm_plan_layer_kind;

/* Modules a checkpoint's quantisation leaves at the model dtype (hbm_plan_model.quant_skip). */
#define HBM_PLAN_QSKIP_ATTN 1u
#define HBM_PLAN_QSKIP_MLP 2u     /* the dense layers' MLP */
#define HBM_PLAN_QSKIP_EXPERTS 4u /* the routed experts */
#define HBM_PLAN_QSKIP_SHARED 8u
#define HBM_PLAN_QSKIP_ROUTER 16u

/* Architecture facts read from config.json (text_config when nested), plus the weight
 * bytes measured from safetensors headers. Ownership: owns layer_kinds. */
typedef struct hbm_plan_model {
    char path[1024];        /* the config.json read */
    char architecture[96];  /* architectures[0], "" when absent */
    char model_type[64];
    int64_t hidden_size;
    int64_t intermediate_size;     /* dense MLP */
    int64_t num_layers;
    int64_t num_heads;
    int64_t num_kv_heads;
    int64_t head_dim;              /* as vLLM computes it (MLA: kv_lora_rank + rope dim) */
    int64_t v_head_dim;            /* when V differs from K (0 = same as head_dim) */
    int64_t vocab_size;
    int64_t max_position_embeddings;
    bool tie_word_embeddings;
    int dtype_bytes;               /* torch_dtype / dtype: 2 bf16/fp16, 4 fp32 */
    char dtype[16];
    /* MoE */
    int64_t num_experts;
    int64_t experts_per_token;
    int64_t moe_intermediate_size;
    int64_t shared_expert_intermediate_size;
    int64_t num_shared_experts;
    int64_t first_dense_layers;    /* DeepSeek first_k_dense_replace */
    /* MLA */
    bool mla;
    int64_t kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, q_lora_rank;
    /* sliding window / hybrid */
    int64_t sliding_window;        /* tokens, HBM_UNKNOWN when none */
    hbm_plan_layer_kind *layer_kinds; /* owned, num_layers entries */
    int64_t linear_state_bytes;    /* per linear layer per request, per TP=1 (see plan.c) */
    int64_t linear_num_k_heads, linear_num_v_heads, linear_k_head_dim, linear_v_head_dim,
        linear_conv_kernel;
    /* quantisation named by the config (quantization_config.quant_method), "" none */
    char quant_method[32];
    unsigned quant_skip;           /* HBM_PLAN_QSKIP_*: modules the quantisation leaves out */
    double quant_weight_bytes;     /* bytes per quantised weight with its scales as the
                                      config spells them (compressed-tensors), 0 = the
                                      method's usual width */
    int64_t expert_params;         /* routed experts' weights, all layers (architecture) */
    /* weights */
    int64_t weights_bytes;         /* checkpoint tensor bytes, HBM_UNKNOWN when none read */
    int64_t weights_tensors;
    int64_t embed_bytes;           /* embedding + lm_head bytes (vocab-parallel) */
    int weights_files;
    bool weights_estimated;        /* true: from the architecture, no safetensors found */
    int64_t params_estimated;      /* parameter count from the architecture */
    bool generic;                  /* a model_type the rules were not checked against:
                                      planned as a generic decoder from its numbers */
    char **unread_keys;            /* owned: config keys no rule consulted (those that
                                      size nothing left out), in the config's order */
    size_t nunread_keys;
    char name_or_path[256];        /* the config's _name_or_path, "" when absent */
    bool model_dir;                /* path is a directory or a file named config.json in
                                      one; weights are looked for only then */
} hbm_plan_model;

void hbm_plan_model_init(hbm_plan_model *m);
void hbm_plan_model_free(hbm_plan_model *m);

/* Reads a model directory (config.json + *.safetensors / model.safetensors.index.json) or a
 * config file. Weights are measured from the safetensors headers only, next to a file only
 * when it is named config.json (a model directory's); without any, they are estimated from
 * the architecture and weights_estimated is set. */
int hbm_plan_model_load(const char *path, hbm_plan_model *m, hbm_err *err);

/* Architecture facts from config.json text (name is used in messages). */
int hbm_plan_model_parse_config(const char *text, size_t len, const char *name,
                                hbm_plan_model *m, hbm_err *err);

/* One safetensors header summed up. */
typedef struct hbm_plan_st_sum {
    int64_t tensor_bytes;  /* sum of data_offsets spans (exact on-disk tensor bytes) */
    int64_t tensors;
    int64_t embed_bytes;   /* tensors named like embeddings / lm_head */
    int64_t header_len;    /* the 8-byte little-endian length */
} hbm_plan_st_sum;

/* Parses a safetensors prefix: buf holds the first len bytes of a file of file_size bytes
 * (len may be the whole file). Checks the header length against the file and a sanity
 * bound, the JSON, every dtype x shape against its data_offsets. name is for messages. */
int hbm_plan_safetensors_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                               const char *name, hbm_plan_st_sum *sum, hbm_err *err);
/* Reads only the header of one file (never the tensor data). */
int hbm_plan_safetensors_file(const char *path, hbm_plan_st_sum *sum, hbm_err *err);

/* ---- the plan -------------------------------------------------------------------------- */

/* A process holding device memory, to name in the advice (from a live observation). */
typedef struct hbm_plan_holder {
    int64_t pid;
    char name[64];
    int64_t memory_bytes;
} hbm_plan_holder;

/* The top-k/top-p sampler vLLM V1's profile run warms up on CUDA. */
typedef enum hbm_plan_sampler {
    HBM_PLAN_SAMPLER_DEFAULT = 0, /* the release's: FlashInfer's up to 0.10.1, torch's after */
    HBM_PLAN_SAMPLER_FLASHINFER,  /* "Using FlashInfer for top-p & top-k sampling" */
    HBM_PLAN_SAMPLER_TORCH,       /* "FlashInfer is not available. Falling back to ..." */
} hbm_plan_sampler;

/* vLLM's (and vllm-ascend's) own options: the features whose start-up memory only its rules
 * model. Unset = HBM_UNKNOWN / -1 / NULL. */
typedef struct hbm_plan_vllm_opts {
    hbm_plan_sampler sampler;    /* not a vLLM flag: whether FlashInfer is installed and used */
    bool llm_class;              /* launched as Python's vllm.LLM(...), not vllm serve: vLLM's
                                    UsageContext.LLM_CLASS batch defaults apply */
    int enable_chunked_prefill;  /* -1 unset (on in V1), 0, 1 */
    /* multimodal flags (src/plan/multimodal.c): --limit-mm-per-prompt's image and video
     * counts (HBM_UNKNOWN = not given), --mm-processor-kwargs (JSON, borrowed),
     * --mm-encoder-tp-mode (weights | data, borrowed), --skip-mm-profiling */
    int64_t mm_limit_image, mm_limit_video;
    const char *mm_processor_kwargs;
    const char *mm_encoder_tp_mode;
    bool skip_mm_profiling;
    /* speculative decoding (docs/planner.md): --speculative-config JSON (0.8.0+), or V0's
     * --speculative-model / --num-speculative-tokens (up to 0.8.2); all borrowed, unset =
     * NULL / HBM_UNKNOWN */
    const char *speculative_config;
    const char *speculative_model;
    int64_t num_speculative_tokens;
    /* LoRA (docs/planner.md, vLLM, LoRA): --enable-lora (-1 unset, 0, 1), --max-loras,
     * --max-lora-rank, --max-cpu-loras, --lora-extra-vocab-size (HBM_UNKNOWN unset),
     * --lora-dtype (borrowed, NULL = auto), --fully-sharded-loras (-1 unset, 0, 1) */
    int enable_lora;
    int64_t max_loras, max_lora_rank, max_cpu_loras, lora_extra_vocab_size;
    const char *lora_dtype;
    int fully_sharded_loras;
} hbm_plan_vllm_opts;

/* SGLang's memory flags with no common counterpart (HBM_UNKNOWN when not given). */
typedef struct hbm_plan_sglang_opts {
    int64_t max_total_tokens;   /* --max-total-tokens: a cap on the KV pool */
    int64_t cuda_graph_max_bs;  /* --cuda-graph-max-bs, or the largest --cuda-graph-bs */
} hbm_plan_sglang_opts;

/* MindIE's config.json keys with no common counterpart. */
typedef struct hbm_plan_mindie_opts {
    /* src/plan/mindie.c; 0 = unset, a value MindIE refuses for each */
    int64_t npu_mem_size_gib;       /* npuMemSize: GiB of KV cache per card, -1 automatic */
    int64_t max_input_len;          /* maxInputTokenLen */
    int64_t max_prefill_batch_size; /* maxPrefillBatchSize */
    int64_t max_iter_times;         /* maxIterTimes */
    char config_model_path[1024];   /* modelWeightPath of a MindIE config.json read */
} hbm_plan_mindie_opts;

/* What to plan: the engine, the model, the device and the serving settings every engine has
 * (in vLLM's names, which the other engines' readers map theirs to), then one struct of
 * options per engine, read only by that engine's rules. */
typedef struct hbm_plan_input {
    hbm_plan_engine engine;   /* default vLLM */
    const char *model_path;   /* borrowed: model directory or config.json */
    /* device: total as the framework sees it; free at start-up (HBM_UNKNOWN = all free) */
    hbm_plan_platform platform;
    const char *device_name;  /* borrowed: table name or live name, for messages */
    int64_t mem_total_bytes;
    int64_t mem_free_bytes;
    bool large_device;        /* vLLM's >= 70 GiB non-A100 batch defaults apply */
    const hbm_plan_holder *holders; /* borrowed: who holds the memory that is not free */
    size_t nholders;
    bool live;                /* the device facts come from a live observation */

    /* serving flags, vLLM's names; unset = HBM_UNKNOWN / NAN / NULL (vLLM's default) */
    int64_t tensor_parallel_size;
    int64_t pipeline_parallel_size;
    double gpu_memory_utilization;
    int64_t max_model_len;
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    const char *kv_cache_dtype;  /* borrowed: auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16 ... */
    int64_t block_size;
    const char *quantization;    /* borrowed */
    const char *dtype;           /* borrowed: --dtype */
    int enforce_eager;           /* -1 unset, 0, 1 */
    int64_t kv_cache_memory_bytes;
    int64_t num_gpu_blocks_override; /* blocks vLLM allocates in place of the budget's */
    const char *engine_version;  /* borrowed: the engine's release ("0.11.0"; vllm-ascend's on
                                    Ascend); NULL = newest rules; a newer one is
                                    planned with the newest rules, an older one refused */
    const char *served_model;    /* borrowed: model argument as given, for the flag line */
    /* flags given that change device memory but are not modelled (static table names);
     * filled by hbm_plan_args_from_argv, named in a note of the result */
    const char *unmodelled[16];
    size_t nunmodelled;
    /* with a live device: the ids used (logic ids on Ascend, indices on NVIDIA; borrowed)
     * and the visible-device variable that chose them ("CUDA_VISIBLE_DEVICES=2,3", borrowed;
     * NULL when unset) */
    const int64_t *device_ids;
    size_t ndevice_ids;
    const char *visible_devices;
    /* planning backwards (hbm_plan_serve): serve this many concurrent requests of
     * max_model_len tokens; HBM_UNKNOWN when not asked */
    int64_t serve_requests;
    /* the live input was a fragment (a cut npu-smi paste): why, named in a note (borrowed;
     * NULL when whole) */
    const char *live_partial;
    bool wsl2;                /* the live host is WSL2: the device's total is the driver's */
    hbm_plan_vllm_opts vllm;
    hbm_plan_sglang_opts sglang;
    hbm_plan_mindie_opts mindie;
} hbm_plan_input;

/* Every field unset. */
void hbm_plan_input_init(hbm_plan_input *in);

/* Fills the serving flags of in->engine (and model_path, when unset) from its command line.
 * For vLLM: a command line such as
 * `vllm serve MODEL --tensor-parallel-size 2 ...` or `python -m
 * vllm.entrypoints.openai.api_server --model MODEL ...`; accepts --flag=value and
 * underscore spellings. Other flags are skipped (with their value when the flag table says
 * they take one; unknown ones alone), and those that change memory unmodelled are listed in
 * in->unmodelled. Strings are borrowed from argv. Fails on a memory flag with a bad value,
 * naming it. For SGLang: `python -m sglang.launch_server --model-path M ...` (or "serve M
 * ..."), its own flag names; a flag it does not know is an error naming the nearest one. */
int hbm_plan_args_from_argv(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err);

/* vLLM's "non-default args: {...}" log line (the repr of a Python dict) as the command-line
 * words that produced it: 'max_num_seqs': 1024 gives "--max-num-seqs" "1024", True the flag
 * alone, False "--no-..."; None and model_tag are dropped; strings lose their quotes; lists and
 * dicts become JSON text. *argv (NULL-terminated, *argc words) is owned: hbm_plan_argv_free.
 * Fails on text that is not such a dict, naming the column. */
int hbm_plan_argv_from_pydict(const char *text, size_t len, char ***argv, int *argc,
                              hbm_err *err);
void hbm_plan_argv_free(char **argv, int argc);

/* One start-up check that fails, in vLLM's words. */
typedef struct hbm_plan_error {
    char kind[32];  /* free_memory, no_kv_memory, max_model_len, weights_oom */
    char *message;  /* owned */
} hbm_plan_error;

/* One change that makes it fit (best first: docs/planner.md, Advice). */
typedef struct hbm_plan_rec {
    char kind[32];   /* free_memory, tensor_parallel_size, max_model_len, max_num_seqs,
                        max_num_batched_tokens, gpu_memory_utilization, kv_cache_dtype */
    char *change;    /* owned: what to do, with the exact value */
    char *cost;      /* owned: what it costs (context, concurrency, devices) */
    char *flags;     /* owned: the flags to change, e.g. "--max-model-len 23456" */
    char *launch_line; /* owned: the engine's own launch line with the change applied */
} hbm_plan_rec;

/* The cheapest launch for a serving target (hbm_plan_serve), or the closest when none
 * serves it. */
typedef struct hbm_plan_launch {
    bool asked;            /* a target was given: the rest is meaningful */
    bool serves;           /* the launch, planned forward, serves the target */
    int64_t requests, max_model_len; /* the target */
    int64_t tensor_parallel_size, pipeline_parallel_size;
    double gpu_memory_utilization;
    double max_concurrency; /* of the launch, planned forward */
    /* the proof that nothing cheaper serves: the most concurrency any layout with fewer
     * devices reaches (NAN with one device), and the launch's at 0.01 less (NAN at 0.01) */
    double fewer_devices_concurrency;
    double lower_util_concurrency;
    char **flags;          /* owned: the engine's flags, one word each, ready to pass */
    size_t nflags;
} hbm_plan_launch;

/* The vision encoder of a multimodal checkpoint and vLLM's profile run of it. */
typedef struct hbm_plan_multimodal {
    bool present;                 /* the config has a vision tower the planner sizes */
    bool profiled;                /* the profile run encodes dummy items */
    char modality[8];             /* the one profiled: "image", "video" ("" when none) */
    int64_t items;                /* dummy items encoded at once */
    int64_t tokens_per_item;      /* the largest item of that modality, in LLM tokens */
    int64_t encoder_cache_tokens; /* vLLM's encoder cache budget */
    int64_t encoder_weights_bytes;    /* the vision tower and projector, per rank */
    int64_t encoder_activation_bytes; /* the encoder's peak on the dummy items, per rank */
    bool tower_loaded;            /* false: every limit is 0 and vLLM skips the tower */
} hbm_plan_multimodal;
/* What a --speculative-config says, as far as device memory goes. */
typedef struct hbm_plan_spec_config {
    char method[32];               /* vLLM's name: eagle, eagle3, mtp, ngram, draft_model ... */
    char model[512];               /* the draft's directory or hub name, "" when none */
    int64_t num_speculative_tokens; /* HBM_UNKNOWN when not given */
    int64_t draft_tensor_parallel_size; /* HBM_UNKNOWN: the target's */
} hbm_plan_spec_config;

/* Parses a --speculative-config value (JSON text of len bytes). Fails naming the flag and
 * what is wrong: not a JSON object, a key of the wrong type, a method vLLM does not know,
 * a method that needs a model without one. A method left out is inferred as vLLM does
 * (the draft's name says eagle / eagle3, "[ngram]", else draft_model). */
int hbm_plan_spec_parse(const char *text, size_t len, hbm_plan_spec_config *out,
                        hbm_err *err);

/* Speculative decoding in a plan (docs/planner.md, "vLLM, speculative decoding"). */
typedef struct hbm_plan_spec {
    bool on;
    char method[32];
    bool modelled;                 /* false: the draft is not a local directory */
    int64_t draft_weights_bytes;   /* per rank; 0 for n-gram, HBM_UNKNOWN when unmodelled */
    int64_t draft_kv_bytes_per_token; /* per rank, in the same KV cache as the target's */
    int64_t draft_layers;          /* attention layers the draft adds to the KV cache */
    int64_t num_speculative_tokens;
} hbm_plan_spec;
/* The LoRA adapter slots vLLM preallocates on every rank when the model is built (part of
 * weights_bytes) and what the profile run with dummy adapters adds (part of
 * activation_bytes). */
typedef struct hbm_plan_lora {
    bool enabled;
    int64_t max_loras, max_lora_rank;
    int dtype_bytes;
    bool fully_sharded;
    int64_t extra_vocab;       /* rows added to the embedding and lm_head (0 from 0.12) */
    int64_t slot_bytes;        /* per rank, all max_loras slots and the extra vocabulary */
    int64_t adapter_bytes;     /* per rank, one slot */
    int64_t activation_bytes;  /* per rank, the punica shrink buffers of the profile run */
} hbm_plan_lora;

typedef struct hbm_plan_result {
    hbm_plan_engine engine;
    bool fits;
    hbm_plan_error *errors; /* owned */
    size_t nerrors;

    int64_t weights_bytes;
    int64_t activation_bytes;
    /* the dummy sampler over sampler_rows requests (logits of the whole vocabulary, the
     * sampler's own buffers, the hidden states it keeps): part of activation_bytes when it
     * is the larger, and run again after the KV cache is allocated */
    int64_t sampler_bytes;
    int64_t sampler_rows;
    int64_t non_torch_bytes;
    int64_t graph_bytes;      /* charged to the budget (0 with --enforce-eager) */
    int64_t graph_outside_bytes; /* captured after the budget (older versions): not charged */
    int64_t kv_cache_bytes;
    int64_t kv_bytes_per_token; /* all KV layers of one rank */
    int64_t block_size;
    int64_t num_blocks;
    int64_t kv_cache_tokens;
    double max_concurrency;
    int64_t max_model_len_fit; /* longest context one request can have (HBM_UNKNOWN if none) */

    hbm_plan_rec *recs;       /* owned */
    size_t nrecs;
    char *launch_line;        /* owned: the engine's own launch line (vllm serve, SGLang's
                               * launch_server, MindIE's config settings) */

    /* what the prediction rests on */
    int64_t total_bytes, free_bytes, requested_bytes;
    double gpu_memory_utilization;
    int64_t tensor_parallel_size, pipeline_parallel_size, max_model_len, max_num_seqs,
        max_num_batched_tokens;
    int kv_dtype_bytes;
    char kv_cache_dtype[16];
    char vllm_version[16];    /* rules used */
    char rules_version[16];   /* rules used, by that name for every engine */
    char engine_version[24];  /* the release given (--vllm-version, --engine-version); "" */
    bool rules_newer;         /* it is newer than the rules: planned with the newest */
    bool model_runner_v2;     /* vLLM's Model Runner V2 runs the model (its profile rules) */
    hbm_plan_platform platform;
    char device_name[64];
    bool live;
    hbm_plan_model model;     /* owned */
    char **notes;             /* owned: assumptions and estimates, one line each */
    size_t nnotes;
    int64_t *device_ids;      /* owned: live devices planned for (see hbm_plan_input) */
    size_t ndevice_ids;
    char visible_devices[160]; /* the variable that chose them, "" when unset */
    hbm_plan_launch launch;   /* hbm_plan_serve only */
    hbm_plan_multimodal multimodal; /* present = false for text models */
    hbm_plan_spec spec;       /* speculative decoding; spec.on false when none */
    hbm_plan_lora lora;
} hbm_plan_result;

void hbm_plan_result_free(hbm_plan_result *r);

/* Runs the whole prediction. Returns -1 only when it cannot look (unreadable model, bad
 * flag value, no device memory known); "does not fit" is a result with fits = false. */
int hbm_plan_run(const hbm_plan_input *in, hbm_plan_result *r, hbm_err *err);

/* The layouts planning backwards tries (TP up to two 8-device nodes). */
#define HBM_PLAN_SERVE_MAX_TP 16
#define HBM_PLAN_SERVE_MAX_PP 8

/* Planning backwards: the cheapest launch that serves in->serve_requests concurrent requests
 * of in->max_model_len tokens on in's device (fewest devices, TP before PP, then the lowest
 * utilisation), with the other flags as given. r is the forward plan of that launch (or of
 * the closest, r->launch.serves false) with r->launch filled. */
int hbm_plan_serve(const hbm_plan_input *in, hbm_plan_result *r, hbm_err *err);

/* Reads a MindIE config.json (BackendConfig: npuDeviceIds, ModelDeployConfig: maxSeqLen,
 * maxInputTokenLen, ModelConfig[0]: npuMemSize, worldSize, modelWeightPath, ScheduleConfig:
 * cacheBlockSize, maxPrefillTokens, maxPrefillBatchSize, maxBatchSize, maxIterTimes) into
 * the fields of in still unset, so flags given win. name is for messages; fails naming the
 * key that is missing, mistyped or out of MindIE's range. */
int hbm_plan_mindie_config_parse(const char *text, size_t len, const char *name,
                                 hbm_plan_input *in, hbm_err *err);

/* `plan` JSON (docs/planner.md) (new reference). */
json_t *hbm_plan_result_to_json(const hbm_plan_result *r);

/* ---- the engine flags the planner knows ---------------------------------------------------- */

typedef enum hbm_plan_flag_use {
    HBM_PLAN_FLAG_MODELLED = 1, /* read into hbm_plan_input */
    HBM_PLAN_FLAG_IGNORED,      /* does not change device memory: accepted and skipped */
    HBM_PLAN_FLAG_UNMODELLED,   /* changes device memory, not modelled: vLLM's default assumed */
} hbm_plan_flag_use;

typedef struct hbm_plan_flag {
    const char *name;       /* "--max-model-len" (static) */
    bool value;             /* takes a value (next word or =VALUE) */
    hbm_plan_flag_use use;
} hbm_plan_flag;

/* The engine's whole table, in documentation order. */
const hbm_plan_flag *hbm_plan_flags(hbm_plan_engine e, size_t *n);
/* The entry for an argument as typed ("--max_model_len=8", "-O3", "--no-enable-prefix-caching",
 * "--compilation-config.cudagraph_mode"); NULL when unknown. *attached (may be NULL) says the
 * value is in the argument itself. */
const hbm_plan_flag *hbm_plan_flag_find(hbm_plan_engine e, const char *arg, bool *attached);
/* The known name nearest to an unknown argument, from the table and extra (NULL-terminated,
 * may be NULL): a few edits away, or the one name it abbreviates; NULL when none is close. */
const char *hbm_plan_flag_suggest(hbm_plan_engine e, const char *arg,
                                  const char *const *extra);

#endif
