/* The planner's driver: reads the model, runs the memory model (memory.c) for the flags
 * given, words vLLM's own errors and asks advise.c for the changes that make it fit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

#define GIB_D 1073741824.0

/* ---- messages ---------------------------------------------------------------------------- */

/* Python's round(x, 2) printed as a float: "16.58", "16.5", "16.0" */
static void py_round2(char *buf, size_t n, double gib)
{
    snprintf(buf, n, "%.2f", round(gib * 100) / 100);
    size_t l = strlen(buf);
    while (l > 0 && buf[l - 1] == '0' && l >= 2 && buf[l - 2] != '.')
        buf[--l] = 0;
}

static void gib_text(const plan_rules *r, char *buf, size_t n, int64_t b)
{
    if (r->precheck_ceil)
        snprintf(buf, n, "%.2f", (double)b / GIB_D);
    else
        py_round2(buf, n, (double)b / GIB_D);
}

static void vllm_errors(const plan_ctx *c, const plan_flags *f, const plan_outcome *o, hbm_plan_result *res)
{
    const plan_rules *r = &c->r;
    if (o->precheck_fail) {
        char fr[32], tot[32], req[32];
        gib_text(r, fr, sizeof fr, f->free);
        gib_text(r, tot, sizeof tot, f->total);
        gib_text(r, req, sizeof req, o->requested);
        plan_add_error(res, "free_memory",
                  hbm_xasprintf("Free memory on device %s(%s/%s GiB) on startup is less than "
                                "desired GPU memory utilization (%g, %s GiB). Decrease GPU "
                                "memory utilization or reduce GPU memory used by other "
                                "processes.",
                                r->precheck_ceil ? "cuda:0 " : "", fr, tot, f->util, req));
        return; /* vLLM stops here: nothing after the pre-check runs */
    }
    if (o->oom) {
        plan_add_error(res, "weights_oom",
                  hbm_xasprintf("%s out of memory while loading the weights: %.2f GiB per "
                                "rank, %.2f GiB available. Failed to load model - not enough GPU "
                                "memory. Try lowering --gpu-memory-utilization to free memory "
                                "for weights, increasing --tensor-parallel-size, or using "
                                "--quantization.",
                                r->ascend ? "NPU" : "CUDA", (double)o->weights / GIB_D,
                                (double)(f->free >= 0 ? f->free : f->total) / GIB_D));
        return;
    }
    if (o->no_kv) {
        plan_add_error(res, "no_kv_memory",
                  hbm_xasprintf("No available memory for the cache blocks. Try increasing "
                                "`gpu_memory_utilization` when initializing the engine.%s",
                                r->ver >= 2100 ? " See https://docs.vllm.ai/en/latest/"
                                                 "configuration/conserving_memory/ for more "
                                                 "details."
                                               : ""));
        return;
    }
    if (o->mml_fail) {
        if (r->v0) {
            plan_add_error(res, "max_model_len",
                      hbm_xasprintf("The model's max seq len (%lld) is larger than the maximum "
                                    "number of tokens that can be stored in KV cache (%lld). "
                                    "Try increasing `gpu_memory_utilization` or decreasing "
                                    "`max_model_len` when initializing the engine.",
                                    (long long)f->mml,
                                    (long long)(o->num_blocks / f->pp * o->block)));
        } else {
            plan_add_error(res, "max_model_len",
                      hbm_xasprintf("To serve at least one request with the %s max seq len "
                                    "(%lld), (%.2f GiB KV cache is needed, which is larger than "
                                    "the available KV cache memory (%.2f GiB). Based on the "
                                    "available memory, the estimated maximum model length is "
                                    "%lld. Try increasing `gpu_memory_utilization`%s or "
                                    "decreasing `max_model_len` when initializing the engine.",
                                    r->typo_models ? "models's" : "model's", (long long)f->mml,
                                    (double)o->needed / GIB_D, (double)o->avail / GIB_D,
                                    (long long)o->mml_fit,
                                    r->typo_models ? "" : " (which also controls CPU memory on "
                                                          "the CPU backend)"));
        }
    }
    if (o->mamba_fail && !o->mml_fail) /* raised later, at graph capture */
        plan_add_error(res, "mamba_blocks",
                  hbm_xasprintf("max_num_seqs (%lld) exceeds available Mamba cache blocks (%lld). "
                                "Each decode sequence requires one Mamba cache block, so CUDA "
                                "graph capture cannot proceed. Please lower max_num_seqs to at "
                                "most %lld or increase gpu_memory_utilization.",
                                (long long)f->seqs, (long long)o->num_blocks,
                                (long long)o->num_blocks));
}

/* ---- the run ------------------------------------------------------------------------------- */

/* What `vllm serve` is given in the flag lines: vLLM loads a model directory or a hub name,
 * never a config file. A config.json stands for its directory; a config under another name
 * is outside any model directory, so its _name_or_path (said in a note), else a MODEL for
 * the user to fill in. Owned string. */
static char *served_model(const hbm_plan_input *in, const hbm_plan_model *m,
                          hbm_plan_result *res)
{
    const char *s = in->served_model ? in->served_model : in->model_path;
    struct stat st;
    if (stat(s, &st) < 0 || !S_ISREG(st.st_mode))
        return hbm_xstrdup(s);
    const char *slash = strrchr(s, '/');
    if (!strcmp(slash ? slash + 1 : s, "config.json")) {
        if (!slash)
            return hbm_xstrdup(".");
        return slash == s ? hbm_xstrdup("/") : hbm_xasprintf("%.*s", (int)(slash - s), s);
    }
    if (m->name_or_path[0]) {
        plan_add_note(res, hbm_xasprintf("%s is not a model directory's config.json: the flag lines "
                                    "serve its _name_or_path, %s", s, m->name_or_path));
        return hbm_xstrdup(m->name_or_path);
    }
    plan_add_note(res, hbm_xasprintf("%s is not a model directory's config.json and names no "
                                "_name_or_path: put the model directory or hub name in place "
                                "of MODEL in the flag lines", s));
    return hbm_xstrdup("MODEL");
}

/* The model as the rules see it: byte widths and the layers of each kind. */
static plan_ctx model_ctx(const hbm_plan_input *in, hbm_plan_model *m, int ver, bool ascend,
                          hbm_plan_result *res)
{
    plan_ctx c = {.m = m, .r = plan_rules_for(ver, ascend)};
    plan_ascend_device_rules(&c.r, in->device_name);
    plan_mrv2_rules(&c.r, m);
    /* Marlin: 0.10's MXFP4 choice on every CUDA card without triton_kernels; Triton's
     * swizzled layout is not modelled */
    c.mxfp4_marlin = !ascend;
    c.act_bytes = m->dtype_bytes == 4 ? 2 : m->dtype_bytes;
    c.w_scale = 1.0;
    if (m->dtype_bytes == 4 && !m->weights_estimated)
        c.w_scale = 0.5; /* vLLM loads float32 checkpoints in 16-bit */
    if (in->dtype && plan_dtype_bytes(in->dtype) >= 2)
        c.act_bytes = plan_dtype_bytes(in->dtype);
    if (in->quantization && !strncasecmp(in->quantization, "fp8", 3) && !m->quant_method[0] &&
        m->dtype_bytes >= 2) {
        c.w_scale *= 1.0 / c.act_bytes; /* online fp8: linear weights at one byte */
        plan_add_note(res, hbm_xstrdup("--quantization fp8 on a 16-bit checkpoint: weights counted "
                                  "at one byte each (embeddings included, a slight underestimate)"));
    }
    for (int64_t i = 0; i < m->num_layers; i++) {
        switch (m->layer_kinds[i]) {
        case HBM_PLAN_LAYER_FULL: c.n_full++; break;
        case HBM_PLAN_LAYER_SLIDING: c.n_slide++; break;
        case HBM_PLAN_LAYER_LINEAR: c.n_lin++; break;
        case HBM_PLAN_LAYER_SHARED: break;
        }
    }
    c.lora = plan_lora_for(in, m, ver, c.act_bytes);
    plan_lora_rules(&c.r, &c.lora);
    /* after the rules LoRA changes: a release that sends LoRA to V0 keeps V0's sampler */
    if (in->vllm.sampler != HBM_PLAN_SAMPLER_DEFAULT) {
        if (c.r.v0 || ascend)
            plan_add_note(res, hbm_xstrdup("--sampler is about vLLM V1 on CUDA: V0 and "
                                           "vllm-ascend have their own sampler; ignored"));
        else if (c.r.mrv2)
            /* its dummy sampler skips top-k/top-p, whichever implementation is chosen */
            plan_add_note(res, hbm_xstrdup("--sampler names the top-k/top-p implementation; "
                                           "Model Runner V2's profile skips top-k/top-p, so "
                                           "it changes nothing here; ignored"));
        else {
            bool fi = in->vllm.sampler == HBM_PLAN_SAMPLER_FLASHINFER;
            c.r.sampler_bytes = fi ? PLAN_SAMPLER_FLASHINFER_BYTES : PLAN_SAMPLER_TORCH_BYTES;
            plan_add_note(res, hbm_xasprintf("top-k/top-p sampler: %s (%d bytes per row and "
                                             "vocabulary entry in the profile run)",
                                             fi ? "FlashInfer's" : "torch's",
                                             c.r.sampler_bytes));
        }
    }
    if (c.r.nz_embed_copy && !m->quant_method[0])
        plan_add_note(res, hbm_xstrdup("310P: weights count each vocabulary table twice, the "
                                       "loaded one and vllm-ascend's FRACTAL_NZ copy for the "
                                       "lm_head"));
    if (c.n_lin > 0 && m->linear_num_v_heads <= 0)
        plan_add_note(res, hbm_xstrdup("linear-attention layers without linear_* sizes in the "
                                  "config: their per-request state is not counted"));
    return c;
}

/* The serving flags with vLLM's defaults filled in where none was given. */
static plan_flags serving_flags(const hbm_plan_input *in, const plan_ctx *c, bool ascend,
                                hbm_plan_result *res)
{
    const hbm_plan_model *m = c->m;
    plan_flags f = {0};
    f.total = in->mem_total_bytes;
    f.free = in->mem_free_bytes;
    f.tp = in->tensor_parallel_size > 0 ? in->tensor_parallel_size : 1;
    f.pp = in->pipeline_parallel_size > 0 ? in->pipeline_parallel_size : 1;
    f.util = isnan(in->gpu_memory_utilization) ? c->r.default_util : in->gpu_memory_utilization;
    if (in->max_model_len > 0)
        f.mml = in->max_model_len;
    else if (m->max_position_embeddings > 0)
        f.mml = m->max_position_embeddings;
    else {
        f.mml = 2048;
        plan_add_note(res, hbm_xstrdup("config has no max_position_embeddings: max-model-len "
                                  "taken as 2048 (vLLM's fallback)"));
    }
    bool large = in->large_device && !ascend && !c->r.v0;
    f.seqs = in->max_num_seqs > 0 ? in->max_num_seqs : large ? 1024 : 256;
    /* get_batch_defaults: the Python LLM class batches more than the server (V1) */
    bool huge = large && c->r.serve_tier_160 && f.total >= 160 * HBM_GIB;
    int64_t dflt_tokens = in->vllm.llm_class && !c->r.v0 ? (large ? 16384 : 8192)
                          : huge                         ? 16384
                          : large                        ? 8192
                                                         : 2048;
    bool chunked = in->vllm.enable_chunked_prefill != 0;
    if (c->r.v0 && in->vllm.enable_chunked_prefill < 0)
        chunked = f.mml > 32768; /* V0 turned it on for long contexts only */
    if (in->max_num_batched_tokens > 0)
        f.mnbt = in->max_num_batched_tokens;
    else
        f.mnbt = chunked ? dflt_tokens : (f.mml > dflt_tokens ? f.mml : dflt_tokens);
    if (!chunked && f.mnbt < f.mml)
        f.mnbt = f.mml;
    f.chunked = chunked;
    if (f.seqs * f.mml < f.mnbt && in->max_num_batched_tokens <= 0)
        f.mnbt = f.seqs * f.mml;
    f.block_given = in->block_size > 0;
    f.block = f.block_given ? in->block_size : ascend ? 128 : 16;
    f.kvb = plan_kv_dtype_bytes(in->kv_cache_dtype, c->act_bytes);
    f.eager = in->enforce_eager == 1;
    f.kvmem = in->kv_cache_memory_bytes;
    f.blocks_override = in->num_gpu_blocks_override;
    if (m->num_heads % f.tp)
        plan_add_note(res, hbm_xasprintf("%lld attention heads are not divisible by TP %lld: vLLM "
                                    "refuses this", (long long)m->num_heads, (long long)f.tp));
    return f;
}

/* The figures of the outcome and what they rest on, into the result. */
static void fill_figures(const hbm_plan_input *in, const plan_flags *f, const plan_outcome *o,
                         hbm_plan_result *res)
{
    res->fits = o->fits;
    res->weights_bytes = o->weights;
    res->activation_bytes = o->act;
    res->sampler_bytes = o->sampler;
    res->sampler_rows = f->seqs < f->mnbt ? f->seqs : f->mnbt;
    res->non_torch_bytes = o->nt;
    res->graph_bytes = o->graph;
    res->graph_outside_bytes = o->graph_out;
    res->kv_cache_bytes = o->avail;
    res->kv_bytes_per_token = o->per_token;
    res->block_size = o->block;
    res->num_blocks = o->avail > 0 ? o->num_blocks : 0;
    res->kv_cache_tokens = o->avail > 0 ? o->tokens : 0;
    res->max_concurrency = o->avail > 0 ? o->conc : 0;
    res->max_model_len_fit = o->mml_fit;
    res->total_bytes = f->total;
    res->free_bytes = f->free;
    res->requested_bytes = o->requested;
    res->gpu_memory_utilization = f->util;
    res->tensor_parallel_size = f->tp;
    res->pipeline_parallel_size = f->pp;
    res->max_model_len = f->mml;
    res->max_num_seqs = f->seqs;
    res->max_num_batched_tokens = f->mnbt;
    res->kv_dtype_bytes = f->kvb;
    snprintf(res->kv_cache_dtype, sizeof res->kv_cache_dtype, "%s",
             in->kv_cache_dtype ? in->kv_cache_dtype : "auto");
    plan_fill_device(in, res);
}

/* What the LoRA slots rest on (owned string). */
static char *lora_note(const plan_ctx *c, const hbm_plan_result *res)
{
    const plan_lora *l = &c->lora;
    char vocab[160] = "";
    if (l->extra_vocab > 0)
        snprintf(vocab, sizeof vocab, ", %lld extra vocabulary rows", (long long)l->extra_vocab);
    else if (l->vocab_flag_gone)
        snprintf(vocab, sizeof vocab, "; --lora-extra-vocab-size ignored: gone from 0.12");
    return hbm_xasprintf("LoRA: %lld slot%s of rank %lld (%.2f GiB per rank, %.1f MiB per "
                         "adapter%s%s) in the layers vLLM adapts by default (all linear "
                         "layers%s%s); target modules and --enable-lora-bias not read; CUDA "
                         "graphs captured as without LoRA%s",
                         (long long)l->slots, l->slots == 1 ? "" : "s", (long long)l->rank,
                         (double)res->lora.slot_bytes / GIB_D,
                         (double)res->lora.adapter_bytes / 1048576.0,
                         l->fully_sharded ? ", fully sharded" : "", vocab,
                         l->embeddings ? ", embedding and lm_head" : "",
                         c->m->num_experts > 0 && !l->experts
                             ? "; routed experts not before 0.11.1"
                             : "",
                         plan_lora_engine_text(c));
}

/* The assumptions the figures rest on, after the verdict and its advice. */
static void closing_notes(const hbm_plan_input *in, const plan_ctx *c, const plan_flags *f,
                          const plan_outcome *o, bool ascend, hbm_plan_result *res)
{
    const hbm_plan_model *m = c->m;
    if (in->live_partial)
        plan_add_note(res, hbm_xasprintf("partial input: %s", in->live_partial));
    if (in->live && in->wsl2)
        plan_add_note(res, hbm_xstrdup("WSL2: CUDA there reports the card's whole memory less "
                                       "about 10 MiB as its total, so the driver's total is "
                                       "planned with, not the native one of the device table"));
    plan_model_notes(m, res);
    if (c->r.mrv2)
        plan_add_note(res, hbm_xasprintf(
            "Model Runner V2 (vLLM's default for this model in %s): its profile samples %lld "
            "rows of the vocabulary%s without top-k/top-p; CUDA graphs %s",
            res->vllm_version, (long long)res->sampler_rows,
            c->r.sampler_sharded ? " per rank (the batch is sharded over TP)" : "",
            c->r.graph_in_budget ? "are profiled into the budget"
                                 : "are captured after the budget (its graph profile "
                                   "returned 0 before 0.29)"));
    /* torch.compile runs inside V1's profile run when its cache misses: the same card and
     * flags printed 1.28 GiB of peak activation compiling and 0.44 GiB loading the cached
     * graph (docs/planner.md, "Compiling in the profile run"); measured on CUDA only */
    if (!ascend && !c->r.v0 && !f->eager)
        plan_add_note(res, hbm_xstrdup("the figures assume vLLM loads the compiled model from its "
                                       "compile cache (a restart with the same model and flags); "
                                       "a start whose profile run compiles it has left up to 1.9 "
                                       "GiB less for the KV cache"));
    if (c->r.precheck && f->free < 0)
        plan_add_note(res, hbm_xstrdup("free memory unknown: the start-up check assumes the "
                                  "device is otherwise empty"));
    if (!c->r.snapshot_budget && f->free >= 0 && f->free < f->total)
        plan_add_note(res, hbm_xasprintf("these rules (%s %s) charge memory held by other "
                                    "processes (%.2f GiB) to the KV budget instead of refusing "
                                    "to start", ascend ? "vllm-ascend" : "vLLM",
                                    res->vllm_version, (double)(f->total - f->free) / GIB_D));
    if (c->r.kv_halved)
        plan_add_note(res, hbm_xasprintf("vllm-ascend's 310P worker keeps half of the budget for "
                                    "operator workspaces%s",
                                    c->r.others_charged && f->free >= 0 && f->free < f->total
                                        ? ", and up to 0.22 charges memory held by other "
                                          "processes to it again after the start-up check"
                                        : ""));
    if (f->blocks_override > 0 && o->avail > 0)
        plan_add_note(res, hbm_xasprintf("--num-gpu-blocks-override: vLLM allocates %lld blocks "
                                    "in place of what the %.2f GiB budget holds; tokens and "
                                    "concurrency are the override's",
                                    (long long)f->blocks_override, (double)o->avail / GIB_D));
    if (o->graph_out > 0)
        plan_add_note(res, hbm_xasprintf("graph capture takes about %.2f GiB after the KV cache is "
                                    "allocated, outside the budget: keep that much free above "
                                    "the utilisation", (double)o->graph_out / GIB_D));
    if (in->nunmodelled) {
        char *list = hbm_xstrdup(in->unmodelled[0]);
        for (size_t k = 1; k < in->nunmodelled; k++) {
            char *t = hbm_xasprintf("%s, %s", list, in->unmodelled[k]);
            free(list);
            list = t;
        }
        plan_add_note(res, hbm_xasprintf("%s %s device memory in ways the planner does not model: "
                                    "the figures assume vLLM's default%s", list,
                                    in->nunmodelled > 1 ? "change" : "changes",
                                    in->nunmodelled > 1 ? "s" : ""));
        free(list);
    }
    if (ascend && m->num_experts > 0 && c->r.ver >= 1300 && c->r.ver < 1500)
        plan_add_note(res, hbm_xstrdup("vllm-ascend 0.13-0.14 with MoE: the profile run samples "
                                       "(#4993) on top of device memory these rules do not size "
                                       "(HCCL communicators, the device context): the KV cache may "
                                       "come out lower than planned (docs/planner.md)"));
    if (c->lora.on)
        plan_add_note(res, lora_note(c, res));
    if (m->mla && !ascend && !f->block_given)
        plan_add_note(res, hbm_xstrdup("MLA on Hopper/Blackwell: vLLM may raise the block size to "
                                  "64/128 for FlashMLA/CUTLASS MLA (tokens stay the same to a "
                                  "block)"));
}

static int vllm_run(const hbm_plan_input *in, hbm_plan_result *res, hbm_err *err)
{
    if (!in->model_path)
        return hbm_err_set(err, "no model: give a model directory or config.json");
    if (in->mem_total_bytes <= 0)
        return hbm_err_set(err, "device memory unknown: give --device NAME, --device auto or "
                                "--mem SIZE");
    if (hbm_plan_model_load(in->model_path, &res->model, err) < 0)
        return -1;
    hbm_plan_model *m = &res->model;
    bool ascend = in->platform == HBM_PLAN_PLATFORM_ASCEND;
    int ver;
    bool newer;
    const plan_release rel = {"--vllm-version", ascend ? "vllm-ascend" : "vLLM",
                              ascend ? PLAN_VERSION_OLDEST_ASCEND : PLAN_VERSION_OLDEST_CUDA,
                              PLAN_VERSION_NEWEST, false};
    if (plan_release_rules(in->engine_version, &rel, &ver, &newer, err) < 0)
        return -1;
    plan_release_record(res, rel.engine, in->engine_version, ver, newer);
    plan_mm mm;
    if (plan_mm_load(in->model_path, in, &mm, err) < 0)
        return -1;
    if (mm.vit != PLAN_VIT_NONE && m->weights_estimated) {
        /* the tower is in the checkpoint: an estimate from the text config lacks it */
        m->weights_bytes += mm.params * m->dtype_bytes;
        m->params_estimated += mm.params;
    }
    plan_ctx c = model_ctx(in, m, ver, ascend, res);
    c.mm = mm.vit != PLAN_VIT_NONE ? &mm : NULL;
    plan_flags f = serving_flags(in, &c, ascend, res);
    if (plan_spec_apply(in, &c, &f, res, err) < 0)
        return -1;
    plan_outcome o;
    plan_evaluate(&c, &f, &o);
    fill_figures(in, &f, &o, res);
    res->model_runner_v2 = c.r.mrv2;
    if (c.r.sampler_sharded)
        res->sampler_rows = (res->sampler_rows + f.tp - 1) / f.tp;
    if (c.mm)
        plan_mm_result(&c, &f, &o, res);
    plan_lora_fill(&c, &f, &res->lora);

    char *served = served_model(in, m, res);
    plan_view v = {in, served};
    res->launch_line = plan_flag_line(&v, &f, in->kv_cache_dtype);
    vllm_errors(&c, &f, &o, res);
    if (!o.fits)
        plan_advise(&c, &f, &o, &v, res);
    closing_notes(in, &c, &f, &o, ascend, res);
    if (c.mm)
        plan_mm_notes(&c, &o, res);
    free(served);
    return 0;
}

const plan_engine plan_engine_vllm = {
    .id = HBM_PLAN_ENGINE_VLLM,
    .name = "vllm",
    .flags = plan_vllm_flags,
    .args = plan_vllm_args,
    .run = vllm_run,
    .util_flag = "--gpu-memory-utilization",
    .len_flag = "--max-model-len",
};

void hbm_plan_result_free(hbm_plan_result *r)
{
    for (size_t i = 0; i < r->nerrors; i++)
        free(r->errors[i].message);
    free(r->errors);
    for (size_t i = 0; i < r->nrecs; i++) {
        free(r->recs[i].change);
        free(r->recs[i].cost);
        free(r->recs[i].flags);
        free(r->recs[i].launch_line);
    }
    free(r->recs);
    free(r->launch_line);
    for (size_t i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    free(r->notes);
    free(r->device_ids);
    for (size_t i = 0; i < r->launch.nflags; i++)
        free(r->launch.flags[i]);
    free(r->launch.flags);
    hbm_plan_model_free(&r->model);
    memset(r, 0, sizeof *r);
}
