/* SGLang's start-up (`python -m sglang.launch_server`), per device rank, as its model runner
 * sizes the KV pool (docs/planner.md, SGLang):
 *   total     free memory once the CUDA context and the collectives exist (min over ranks)
 *   rest      free after the weights - total x (1 - mem_fraction_static)
 *   tokens    rest / cell size, capped by --max-total-tokens, down to a whole page
 * mem_fraction_static defaults to a share of the card that depends on the release: by TP
 * size, then by the card's memory and TP, then by the chunked-prefill size and the CUDA
 * graph batch. The model (layers, heads, weights per rank) is the shared one. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

#define GIB_D 1073741824.0
#define MIB_D 1048576.0

/* The releases the rules know: 0.2.0 to 0.5.6; newer ones get the newest rules. */
#define SGL_OLDEST 200
#define SGL_NEWEST 506
/* mem_fraction_static's default: by TP (before 0.4.7), by the card and TP (#7054), from the
 * chunked-prefill size and CUDA graph batch (#10975, 0.5.4) */
#define SGL_RESERVE_BY_CARD 407
#define SGL_RESERVE_BY_WORK 504

/* Memory the process holds before the weights, measured by SGLang's own "Load weight begin.
 * avail mem" against the card: the CUDA context (0.27-0.5 GiB across the L4, H20 and H200
 * logs of docs/planner.md), and NCCL's communicators when TP x PP > 1 (0.13 GiB on PCIe
 * cards; NVLink systems with custom all-reduce show up to 2 GiB, not modelled). */
#define SGL_CONTEXT_BYTES ((int64_t)(0.35 * GIB_D))
#define SGL_COLLECTIVE_BYTES ((int64_t)(0.13 * GIB_D))
/* What loading adds to the tensors' bytes: each weight matrix of a layer (qkv, o, gate-up,
 * down, the norms' small pool) leaves on average half of a 2 MiB allocation granule unused
 * (SGLang's "Load weight end. mem usage" is 0.15-0.31 GiB above the checkpoint's share in the
 * Llama-3.1-8B, Qwen2-7B and Qwen2.5-32B logs of docs/planner.md). */
#define SGL_LOAD_SLACK_PER_LAYER (5 * HBM_MIB)

#define M HBM_PLAN_FLAG_MODELLED
#define I HBM_PLAN_FLAG_IGNORED
#define U HBM_PLAN_FLAG_UNMODELLED

/* SGLang's server arguments (python/sglang/srt/server_args.py): read ones first. */
static const hbm_plan_flag sglang_flags[] = {
    /* read by the planner */
    {"--model-path", true, M}, {"--model", true, M}, {"--tp-size", true, M}, {"--tp", true, M},
    {"--tensor-parallel-size", true, M}, {"--pp-size", true, M},
    {"--pipeline-parallel-size", true, M}, {"--mem-fraction-static", true, M},
    {"--context-length", true, M}, {"--chunked-prefill-size", true, M},
    {"--max-running-requests", true, M}, {"--max-total-tokens", true, M},
    {"--cuda-graph-max-bs", true, M}, {"--cuda-graph-bs", true, M},
    {"--disable-cuda-graph", false, M}, {"--kv-cache-dtype", true, M}, {"--page-size", true, M},
    {"--dtype", true, M}, {"--quantization", true, M},
    /* server front end, tokenizer, scheduling: no device memory at start-up */
    {"--host", true, I}, {"--port", true, I}, {"--served-model-name", true, I},
    {"--trust-remote-code", false, I}, {"--tokenizer-path", true, I},
    {"--tokenizer-mode", true, I}, {"--skip-tokenizer-init", false, I},
    {"--load-format", true, I}, {"--download-dir", true, I}, {"--revision", true, I},
    {"--chat-template", true, I}, {"--api-key", true, I}, {"--log-level", true, I},
    {"--log-level-http", true, I}, {"--log-requests", false, I},
    {"--log-requests-level", true, I}, {"--enable-metrics", false, I},
    {"--show-time-cost", false, I}, {"--decode-log-interval", true, I},
    {"--random-seed", true, I}, {"--watchdog-timeout", true, I}, {"--dist-timeout", true, I},
    {"--stream-interval", true, I}, {"--stream-output", false, I},
    {"--schedule-policy", true, I}, {"--schedule-conservativeness", true, I},
    {"--max-prefill-tokens", true, I}, {"--disable-radix-cache", false, I},
    {"--disable-overlap-schedule", false, I}, {"--enable-cache-report", false, I},
    {"--reasoning-parser", true, I}, {"--tool-call-parser", true, I},
    {"--attention-backend", true, I}, {"--sampling-backend", true, I},
    {"--grammar-backend", true, I}, {"--enable-p2p-check", false, I},
    {"--disable-custom-all-reduce", false, I}, {"--base-gpu-id", true, I},
    {"--gpu-id-step", true, I}, {"--dp-size", true, I}, {"--dp", true, I},
    {"--data-parallel-size", true, I}, {"--load-balance-method", true, I},
    {"--nnodes", true, I}, {"--node-rank", true, I}, {"--dist-init-addr", true, I},
    {"--device", true, I}, {"--file-storage-path", true, I}, {"--allow-auto-truncate", false, I},
    {"--disable-cuda-graph-padding", false, I}, {"--disable-outlines-disk-cache", false, I},
    {"--is-embedding", false, I}, {"--skip-server-warmup", false, I}, {"--nccl-port", true, I},
    {"--enable-metrics-for-all-schedulers", false, I}, {"--tokenizer-worker-num", true, I},
    {"--sampling-defaults", true, I}, {"--preferred-sampling-params", true, I},
    /* change device memory in ways the planner does not model */
    {"--enable-dp-attention", false, U}, {"--speculative-algorithm", true, U},
    {"--speculative-draft-model-path", true, U}, {"--speculative-num-steps", true, U},
    {"--speculative-eagle-topk", true, U}, {"--speculative-num-draft-tokens", true, U},
    {"--enable-torch-compile", false, U}, {"--torch-compile-max-bs", true, U},
    {"--enable-piecewise-cuda-graph", false, U}, {"--cpu-offload-gb", true, U},
    {"--lora-paths", true, U}, {"--max-loras-per-batch", true, U},
    {"--enable-hierarchical-cache", false, U}, {"--hicache-ratio", true, U},
    {"--json-model-override-args", true, U}, {"--enable-ep-moe", false, U},
    {"--ep-size", true, U}, {"--enable-mixed-chunk", false, U},
    {"--enable-memory-saver", false, U}, {"--enable-symm-mem", false, U},
    {"--max-mamba-cache-size", true, U}, {"--swa-full-tokens-ratio", true, U},
    {"--enable-double-sparsity", false, U}, {"--enable-two-batch-overlap", false, U},
    {"--disaggregation-mode", true, U},
    /* current releases: the vision tower's and the experts' kernels */
    {"--mm-attention-backend", true, U}, {"--moe-runner-backend", true, U},
    {"--moe-a2a-backend", true, U},
    {NULL, false, 0},
};

#undef M
#undef I
#undef U

/* ---- the command line -------------------------------------------------------------------- */

static int count_value(const char *flag, const char *v, int64_t lo, int64_t *out, hbm_err *err)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > (1LL << 40))
        return hbm_err_set(err, "%s: \"%s\" is not a count of at least %lld", flag, v,
                           (long long)lo);
    *out = x;
    return 0;
}

static bool is_count(const char *w)
{
    if (!w || !*w)
        return false;
    for (const char *p = w; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

/* One flag with its value (NULL for a switch) into in; name is the table's. */
static int read_flag(hbm_plan_input *in, const char *name, const char *v, hbm_err *err)
{
    int64_t x;
    if (!strcmp(name, "--model-path") || !strcmp(name, "--model")) {
        in->served_model = v;
        if (!in->model_path)
            in->model_path = v;
    } else if (!strcmp(name, "--tp-size") || !strcmp(name, "--tp") ||
               !strcmp(name, "--tensor-parallel-size")) {
        if (count_value(name, v, 1, &x, err) < 0)
            return -1;
        in->tensor_parallel_size = x;
    } else if (!strcmp(name, "--pp-size") || !strcmp(name, "--pipeline-parallel-size")) {
        if (count_value(name, v, 1, &x, err) < 0)
            return -1;
        in->pipeline_parallel_size = x;
    } else if (!strcmp(name, "--mem-fraction-static")) {
        char *end;
        double u = strtod(v, &end);
        if (end == v || *end || !(u > 0 && u < 1))
            return hbm_err_set(err, "%s: \"%s\" is not a fraction in (0, 1)", name, v);
        in->gpu_memory_utilization = u;
    } else if (!strcmp(name, "--context-length")) {
        if (count_value(name, v, 1, &x, err) < 0)
            return -1;
        in->max_model_len = x;
    } else if (!strcmp(name, "--chunked-prefill-size")) {
        /* -1 (or 0) turns chunked prefill off: kept as 0, "given, off" */
        if (count_value(name, v, -1, &x, err) < 0)
            return -1;
        in->max_num_batched_tokens = x > 0 ? x : 0;
    } else if (!strcmp(name, "--max-running-requests")) {
        if (count_value(name, v, 1, &x, err) < 0)
            return -1;
        in->max_num_seqs = x;
    } else if (!strcmp(name, "--max-total-tokens")) {
        if (count_value(name, v, 1, &x, err) < 0)
            return -1;
        in->sglang.max_total_tokens = x;
    } else {
        return 1; /* not a counted flag */
    }
    return 0;
}

/* The rest of the flags read_flag leaves. */
static int read_flag_more(hbm_plan_input *in, const char *name, const char *v, hbm_err *err)
{
    int64_t x;
    if (!strcmp(name, "--cuda-graph-max-bs") || !strcmp(name, "--cuda-graph-bs")) {
        if (count_value(name, v, 1, &x, err) < 0)
            return -1;
        if (x > in->sglang.cuda_graph_max_bs)
            in->sglang.cuda_graph_max_bs = x;
    } else if (!strcmp(name, "--page-size")) {
        if (count_value(name, v, 1, &x, err) < 0 || x > 65536)
            return hbm_err_set(err, "%s: \"%s\" is not a page size", name, v);
        in->block_size = x;
    } else if (!strcmp(name, "--disable-cuda-graph")) {
        in->enforce_eager = 1;
    } else if (!strcmp(name, "--kv-cache-dtype")) {
        in->kv_cache_dtype = v;
    } else if (!strcmp(name, "--dtype")) {
        in->dtype = v;
    } else if (!strcmp(name, "--quantization")) {
        in->quantization = v;
    }
    return 0;
}

static void note_unmodelled(hbm_plan_input *in, const hbm_plan_flag *fl)
{
    for (size_t k = 0; k < in->nunmodelled; k++)
        if (in->unmodelled[k] == fl->name)
            return;
    if (in->nunmodelled < sizeof in->unmodelled / sizeof in->unmodelled[0])
        in->unmodelled[in->nunmodelled++] = fl->name;
}

/* Where SGLang's own words start: after `-m sglang.launch_server`, `sglang serve` or
 * hbmctl's "serve" (which a model directory may follow). */
static int after_launcher(int argc, char *const *argv, bool *positional)
{
    *positional = false;
    for (int k = 0; k < argc && k < 6; k++) {
        const char *w = argv[k];
        size_t l = strlen(w);
        if (l >= 13 && !strcmp(w + l - 13, "launch_server"))
            return k + 1;
        if (!strcmp(w, "serve")) {
            *positional = true;
            return k + 1;
        }
    }
    return 0;
}

/* A word that is not a flag: the model after "serve", else a mistake. */
static int read_word(hbm_plan_input *in, const char *w, bool positional, hbm_err *err)
{
    if (positional && !in->served_model) {
        in->served_model = w;
        if (!in->model_path)
            in->model_path = w;
        return 0;
    }
    return hbm_err_set(err, "\"%s\": SGLang takes flags only (the model is --model-path); a "
                            "list for --cuda-graph-bs goes after '--'", w);
}

static int sglang_args(hbm_plan_input *in, int argc, char *const *argv, hbm_err *err)
{
    bool positional;
    for (int i = after_launcher(argc, argv, &positional); i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            if (read_word(in, a, positional, err) < 0)
                return -1;
            continue;
        }
        bool attached;
        const hbm_plan_flag *fl = plan_flag_find(sglang_flags, a, &attached);
        if (fl && !strncmp(a, "--no-", 5) && strncmp(fl->name, "--no-", 5))
            fl = NULL; /* vLLM's negated switches: SGLang has none */
        if (!fl) {
            const char *near = plan_flag_suggest(sglang_flags, a, NULL);
            return hbm_err_set(err, "%s is not an SGLang flag the planner knows%s%s%s", a,
                               near ? " (did you mean " : "", near ? near : "",
                               near ? "?)" : "");
        }
        const char *v = attached ? strchr(a, '=') + 1 : NULL;
        if (fl->value && !attached) {
            if (i + 1 >= argc || (argv[i + 1][0] == '-' && !isdigit((unsigned char)argv[i + 1][1])))
                return hbm_err_set(err, "%s: needs a value", fl->name);
            v = argv[++i];
        }
        if (fl->use == HBM_PLAN_FLAG_UNMODELLED)
            note_unmodelled(in, fl);
        if (fl->use != HBM_PLAN_FLAG_MODELLED)
            continue;
        int rc = read_flag(in, fl->name, v, err);
        if (rc > 0)
            rc = read_flag_more(in, fl->name, v, err);
        if (rc < 0)
            return -1;
        /* --cuda-graph-bs takes a list: the largest size counts */
        while (!strcmp(fl->name, "--cuda-graph-bs") && !attached && i + 1 < argc &&
               is_count(argv[i + 1]))
            if (read_flag_more(in, fl->name, argv[++i], err) < 0)
                return -1;
    }
    return 0;
}

/* ---- the rules ---------------------------------------------------------------------------- */

/* What one evaluation starts from: the release, the card, the flags in effect. */
typedef struct sgl_flags {
    int ver;
    plan_ctx c;         /* the shared model: weights per rank */
    plan_flags f;       /* tp, pp for the shared weight split */
    double gpu_mib;     /* the card's memory as SGLang's defaults see it */
    double frac;        /* mem_fraction_static in effect */
    bool frac_given;
    int64_t context, chunked, graph_bs, page, max_total, running;
    int kvb;
} sgl_flags;

/* One evaluation. */
typedef struct sgl_outcome {
    int64_t weights, held, total, reserve, rest, cell, tokens, running;
    bool oom, no_memory;
} sgl_outcome;

/* chunked_prefill_size and cuda_graph_max_bs by the card's memory (0.5.4 on; before, 2048
 * under 25000 MiB and 8192 above) */
static void work_defaults(sgl_flags *s, const hbm_plan_input *in)
{
    double g = s->gpu_mib;
    int64_t tp = s->f.tp;
    int64_t cps, bs;
    if (s->ver < SGL_RESERVE_BY_WORK)
        cps = g < 25000 ? 2048 : 8192, bs = 0;
    else if (g < 20 * 1024)
        cps = 2048, bs = 8;
    else if (g < 35 * 1024)
        cps = 2048, bs = tp < 4 ? 24 : 80;
    else if (g < 60 * 1024)
        cps = 4096, bs = tp < 4 ? 32 : 160;
    else if (g < 160 * 1024)
        cps = 8192, bs = tp < 4 ? 256 : 512;
    else
        cps = 16384, bs = 512;
    s->chunked = in->max_num_batched_tokens >= 0 ? in->max_num_batched_tokens : cps;
    s->graph_bs = in->sglang.cuda_graph_max_bs > 0 ? in->sglang.cuda_graph_max_bs : bs;
}

/* server_args.py's default mem_fraction_static for the release. */
static double default_fraction(const sgl_flags *s)
{
    int64_t tp = s->f.tp, ps = s->f.tp * s->f.pp;
    double g = s->gpu_mib, reserved;
    if (s->ver < SGL_RESERVE_BY_CARD)
        return tp >= 16 ? 0.79 : tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
    if (s->ver < SGL_RESERVE_BY_WORK) {
        if (g < 35 * 1024)
            reserved = (2.8 + (double)ps / 10) * 1024;
        else if (g < 90 * 1024)
            reserved = (9.5 + (double)ps / 2) * 1024;
        else if (g < 160 * 1024)
            reserved = (12 + (double)ps / 2) * 1024;
        else
            reserved = 32 * 1024;
    } else {
        /* metadata, activations of one chunk (the prefill budget when unchunked), the
         * CUDA graphs, and a share for large parallel sizes; at least 10 GiB on big cards */
        double chunk = (double)(s->chunked > 0 ? s->chunked : 16384);
        reserved = 512 + (chunk > 2048 ? chunk : 2048) * 1.5 + (double)s->graph_bs * 2 +
                   (double)ps / 8 * 1024;
        if (g > 60 * 1024 && reserved < 10 * 1024)
            reserved = 10 * 1024;
    }
    return round((g - reserved) / g * 1000) / 1000;
}

/* Bytes of one token's KV across one rank's layers (get_cell_size_per_token). */
static int64_t cell_size(const sgl_flags *s)
{
    const hbm_plan_model *m = s->c.m;
    int64_t layers = 0;
    for (int64_t i = 0; i < m->num_layers; i++)
        layers += m->layer_kinds[i] == HBM_PLAN_LAYER_FULL ||
                  m->layer_kinds[i] == HBM_PLAN_LAYER_SLIDING;
    layers = (layers + s->f.pp - 1) / s->f.pp;
    if (m->mla)
        return (m->kv_lora_rank + m->qk_rope_head_dim) * layers * s->kvb;
    int64_t heads = m->num_kv_heads / s->f.tp > 1 ? m->num_kv_heads / s->f.tp : 1;
    int64_t vd = m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
    return heads * (m->head_dim + vd) * layers * s->kvb;
}

static void sgl_evaluate(const sgl_flags *s, int64_t free_bytes, sgl_outcome *o)
{
    memset(o, 0, sizeof *o);
    int64_t layers = (s->c.m->num_layers + s->f.pp - 1) / s->f.pp;
    o->weights = plan_weights_per_rank(&s->c, &s->f) + layers * SGL_LOAD_SLACK_PER_LAYER;
    o->held = SGL_CONTEXT_BYTES + (s->f.tp * s->f.pp > 1 ? SGL_COLLECTIVE_BYTES : 0);
    o->total = free_bytes - o->held;
    o->oom = o->weights > o->total;
    o->reserve = (int64_t)((double)o->total * (1 - s->frac));
    o->rest = o->total - o->weights - o->reserve;
    o->cell = cell_size(s);
    o->tokens = o->rest > 0 && o->cell > 0 ? o->rest / o->cell : 0;
    if (s->max_total > 0 && s->max_total < o->tokens)
        o->tokens = s->max_total;
    o->tokens = o->tokens / s->page * s->page;
    o->no_memory = !o->oom && o->tokens <= 0;
    /* requests the pool is sized for: max_running_requests, else the token share of 512
     * contexts, within 2048..4096 */
    double share = (double)o->tokens / (double)s->context * 512;
    o->running = s->running > 0 ? s->running : share < 2048 ? 2048 : share > 4096 ? 4096
                                                                               : (int64_t)share;
}

/* ---- the run ------------------------------------------------------------------------------ */

/* The flags in effect: the given ones, else SGLang's defaults for the release and card. */
static sgl_flags sglang_flags_for(const hbm_plan_input *in, const hbm_plan_model *m, int ver)
{
    sgl_flags s = {.ver = ver, .c = {.m = m, .w_scale = 1.0}};
    s.c.act_bytes = m->dtype_bytes == 4 ? 2 : m->dtype_bytes;
    if (m->dtype_bytes == 4 && !m->weights_estimated)
        s.c.w_scale = 0.5; /* float32 checkpoints run in 16-bit */
    if (in->dtype && plan_dtype_bytes(in->dtype) >= 2)
        s.c.act_bytes = plan_dtype_bytes(in->dtype);
    if (in->quantization && !strncasecmp(in->quantization, "fp8", 3) && !m->quant_method[0] &&
        m->dtype_bytes >= 2)
        s.c.w_scale /= s.c.act_bytes; /* online fp8: one byte a weight */
    s.f.tp = in->tensor_parallel_size > 0 ? in->tensor_parallel_size : 1;
    s.f.pp = in->pipeline_parallel_size > 0 ? in->pipeline_parallel_size : 1;
    s.gpu_mib = (double)in->mem_total_bytes / MIB_D;
    work_defaults(&s, in);
    s.frac_given = !isnan(in->gpu_memory_utilization);
    s.frac = s.frac_given ? in->gpu_memory_utilization : default_fraction(&s);
    s.context = in->max_model_len > 0            ? in->max_model_len
                : m->max_position_embeddings > 0 ? m->max_position_embeddings
                                                 : 2048;
    s.page = in->block_size > 0 ? in->block_size : 1;
    s.max_total = in->sglang.max_total_tokens;
    s.running = in->max_num_seqs;
    s.kvb = plan_kv_dtype_bytes(in->kv_cache_dtype, s.c.act_bytes);
    return s;
}

static int64_t free_of(const hbm_plan_input *in)
{
    return in->mem_free_bytes >= 0 && in->mem_free_bytes < in->mem_total_bytes
               ? in->mem_free_bytes
               : in->mem_total_bytes;
}

/* The whole `python -m sglang.launch_server` line (owned). */
static char *sglang_line(const hbm_plan_input *in, const char *model, const sgl_flags *s)
{
    char *l = hbm_xasprintf("python -m sglang.launch_server --model-path %s --tp-size %lld", model,
                            (long long)s->f.tp);
    char *extra[10] = {0};
    int n = 0;
    if (s->f.pp > 1)
        extra[n++] = hbm_xasprintf(" --pp-size %lld", (long long)s->f.pp);
    extra[n++] = hbm_xasprintf(" --mem-fraction-static %.3g", s->frac);
    extra[n++] = hbm_xasprintf(" --context-length %lld", (long long)s->context);
    if (in->max_num_batched_tokens >= 0)
        extra[n++] = hbm_xasprintf(" --chunked-prefill-size %lld",
                                   (long long)(s->chunked > 0 ? s->chunked : -1));
    if (s->running > 0)
        extra[n++] = hbm_xasprintf(" --max-running-requests %lld", (long long)s->running);
    if (s->max_total > 0)
        extra[n++] = hbm_xasprintf(" --max-total-tokens %lld", (long long)s->max_total);
    if (in->sglang.cuda_graph_max_bs > 0)
        extra[n++] = hbm_xasprintf(" --cuda-graph-max-bs %lld", (long long)s->graph_bs);
    if (in->kv_cache_dtype && strcasecmp(in->kv_cache_dtype, "auto"))
        extra[n++] = hbm_xasprintf(" --kv-cache-dtype %s", in->kv_cache_dtype);
    if (s->page > 1)
        extra[n++] = hbm_xasprintf(" --page-size %lld", (long long)s->page);
    if (in->quantization)
        extra[n++] = hbm_xasprintf(" --quantization %s", in->quantization);
    for (int i = 0; i < n; i++) {
        char *t = hbm_xasprintf("%s%s", l, extra[i]);
        free(l);
        free(extra[i]);
        l = t;
    }
    if (in->enforce_eager == 1) {
        char *t = hbm_xasprintf("%s --disable-cuda-graph", l);
        free(l);
        l = t;
    }
    return l;
}

/* SGLang's start-up checks in its words: torch's out-of-memory while the weights load, and
 * the model runner's refusal of an empty KV pool. */
static void sglang_errors(const sgl_flags *s, const sgl_outcome *o, hbm_plan_result *res)
{
    if (o->oom) {
        plan_add_error(res, "weights_oom",
                  hbm_xasprintf("torch.OutOfMemoryError: CUDA out of memory while loading the "
                                "weights: %.2f GiB per rank, %.2f GiB free after start-up. "
                                "Try a larger --tp-size or --quantization.",
                                (double)o->weights / GIB_D, (double)o->total / GIB_D));
        return;
    }
    if (!o->no_memory)
        return;
    char current[96] = "";
    if (s->ver >= SGL_RESERVE_BY_WORK)
        snprintf(current, sizeof current, " Current value: self.server_args.mem_fraction_static=%g",
                 s->frac);
    plan_add_error(res, "no_kv_memory",
              hbm_xasprintf("Not enough memory. Please try to increase --mem-fraction-static.%s",
                            current));
}

/* One change, re-planned: appended only when it starts. */
static void try_change(const hbm_plan_input *in, const char *model, sgl_flags *t,
                       const char *kind, hbm_plan_result *res)
{
    sgl_outcome o;
    sgl_evaluate(t, free_of(in), &o);
    if (o.oom || o.no_memory)
        return;
    res->recs = hbm_xrealloc(res->recs, (res->nrecs + 1) * sizeof *res->recs);
    hbm_plan_rec *r = &res->recs[res->nrecs++];
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    if (!strcmp(kind, "tensor_parallel_size")) {
        r->change = hbm_xasprintf("spread the model over %lld devices", (long long)t->f.tp);
        r->cost = hbm_xasprintf("%lld devices instead of %lld; %lld KV tokens",
                                (long long)t->f.tp, (long long)res->tensor_parallel_size,
                                (long long)o.tokens);
        r->flags = hbm_xasprintf("--tp-size %lld", (long long)t->f.tp);
    } else {
        r->change = hbm_xasprintf("raise --mem-fraction-static to %.2f", t->frac);
        r->cost = hbm_xasprintf("%.2f GiB left for activations and CUDA graphs; %lld KV tokens",
                                (double)o.reserve / GIB_D, (long long)o.tokens);
        r->flags = hbm_xasprintf("--mem-fraction-static %.2f", t->frac);
    }
    r->launch_line = sglang_line(in, model, t);
}

/* The changes that make it start, best first: the fraction up to 0.95 that holds the
 * weights and one request of the context length, then more devices (TP up to 8, the heads
 * divisible). */
static void sglang_advise(const hbm_plan_input *in, const char *model, const sgl_flags *s,
                          const sgl_outcome *o, hbm_plan_result *res)
{
    if (!o->oom && o->total > 0) {
        sgl_flags t = *s;
        int64_t request = (s->context + s->page - 1) / s->page * s->page;
        double need = (double)(o->weights + o->cell * request) / (double)o->total;
        t.frac = ceil(need * 100) / 100;
        if (t.frac <= 0.95 && t.frac > s->frac)
            try_change(in, model, &t, "gpu_memory_utilization", res);
    }
    for (int64_t tp = s->f.tp * 2; tp <= 8; tp *= 2) {
        if (s->c.m->num_heads % tp)
            continue;
        sgl_flags t = *s;
        t.f.tp = tp;
        work_defaults(&t, in);
        if (!t.frac_given)
            t.frac = default_fraction(&t);
        size_t before = res->nrecs;
        try_change(in, model, &t, "tensor_parallel_size", res);
        if (res->nrecs > before)
            break;
    }
}

static void fill_result(const hbm_plan_input *in, const sgl_flags *s, const sgl_outcome *o,
                        hbm_plan_result *res)
{
    res->fits = !o->oom && !o->no_memory;
    res->weights_bytes = o->weights;
    res->activation_bytes = o->reserve; /* what the fraction leaves for activations, graphs */
    res->non_torch_bytes = o->held;
    res->kv_bytes_per_token = o->cell;
    res->kv_cache_bytes = o->tokens > 0 ? o->tokens * o->cell : o->rest;
    res->kv_cache_tokens = o->tokens;
    res->block_size = s->page;
    res->num_blocks = o->tokens / s->page;
    res->max_concurrency = (double)o->tokens / (double)s->context;
    /* SGLang caps a request's input at the pool rather than refusing to start */
    res->max_model_len_fit = o->tokens < s->context ? o->tokens : s->context;
    res->total_bytes = in->mem_total_bytes;
    res->free_bytes = in->mem_free_bytes;
    res->requested_bytes = (int64_t)((double)o->total * s->frac);
    res->gpu_memory_utilization = s->frac;
    res->tensor_parallel_size = s->f.tp;
    res->pipeline_parallel_size = s->f.pp;
    res->max_model_len = s->context;
    res->max_num_seqs = o->running;
    res->max_num_batched_tokens = s->chunked;
    res->kv_dtype_bytes = s->kvb;
    snprintf(res->kv_cache_dtype, sizeof res->kv_cache_dtype, "%s",
             in->kv_cache_dtype ? in->kv_cache_dtype : "auto");
    plan_fill_device(in, res);
}

static void unmodelled_note(const hbm_plan_input *in, hbm_plan_result *res)
{
    char *list = hbm_xstrdup(in->unmodelled[0]);
    for (size_t k = 1; k < in->nunmodelled; k++) {
        char *t = hbm_xasprintf("%s, %s", list, in->unmodelled[k]);
        free(list);
        list = t;
    }
    plan_add_note(res, hbm_xasprintf("%s %s device memory in ways the planner does not model: the "
                                "figures assume SGLang's default%s",
                                list, in->nunmodelled > 1 ? "change" : "changes",
                                in->nunmodelled > 1 ? "s" : ""));
    free(list);
}

static void sglang_notes(const hbm_plan_input *in, const sgl_flags *s, const sgl_outcome *o,
                         hbm_plan_result *res)
{
    const hbm_plan_model *m = s->c.m;
    plan_model_notes(m, res);
    if (!s->frac_given)
        plan_add_note(res, hbm_xasprintf("mem_fraction_static %.3g is SGLang %s's default for %.0f "
                                    "MiB and TP %lld (it reads the card's size from nvidia-smi, "
                                    "a little above the %.2f GiB planned with)",
                                    s->frac, res->vllm_version, s->gpu_mib, (long long)s->f.tp,
                                    (double)in->mem_total_bytes / GIB_D));
    if (in->mem_free_bytes < 0)
        plan_add_note(res, hbm_xstrdup("free memory unknown: the device is taken as otherwise empty"));
    if (o->tokens > 0 && o->tokens < s->context)
        plan_add_note(res, hbm_xasprintf("the pool holds fewer tokens than --context-length %lld: "
                                    "SGLang starts and cuts requests to %lld tokens",
                                    (long long)s->context, (long long)o->tokens - 1));
    for (int64_t i = 0; i < m->num_layers; i++)
        if (m->layer_kinds[i] == HBM_PLAN_LAYER_LINEAR) {
            plan_add_note(res, hbm_xstrdup("linear-attention layers: SGLang's Mamba state pool is "
                                      "not modelled, only the attention layers' KV"));
            break;
        }
    if (in->nunmodelled)
        unmodelled_note(in, res);
}

/* The model as SGLang's --model-path takes it: a directory, not its config.json (owned). */
static char *model_arg(const hbm_plan_input *in)
{
    const char *s = in->served_model ? in->served_model : in->model_path;
    size_t l = strlen(s);
    if (l >= 12 && !strcmp(s + l - 12, "/config.json"))
        return hbm_xasprintf("%.*s", (int)(l - 12), s);
    return hbm_xstrdup(l == 11 && !strcmp(s, "config.json") ? "." : s);
}

static int sglang_run(const hbm_plan_input *in, hbm_plan_result *res, hbm_err *err)
{
    if (!in->model_path)
        return hbm_err_set(err, "no model: give a model directory or config.json");
    if (in->mem_total_bytes <= 0)
        return hbm_err_set(err, "device memory unknown: give --device NAME, --device auto or "
                                "--mem SIZE");
    int ver;
    bool newer;
    /* SGLang's patch releases change its defaults (0.4.7, 0.5.4): a later patch is newer */
    static const plan_release rel = {"--engine-version", "SGLang", SGL_OLDEST, SGL_NEWEST, true};
    if (plan_release_rules(in->engine_version, &rel, &ver, &newer, err) < 0)
        return -1;
    plan_release_record(res, "SGLang", in->engine_version, ver, newer);
    if (hbm_plan_model_load(in->model_path, &res->model, err) < 0)
        return -1;
    sgl_flags s = sglang_flags_for(in, &res->model, ver);
    sgl_outcome o;
    sgl_evaluate(&s, free_of(in), &o);
    fill_result(in, &s, &o, res);
    char *model = model_arg(in);
    res->launch_line = sglang_line(in, model, &s);
    sglang_errors(&s, &o, res);
    if (!res->fits)
        sglang_advise(in, model, &s, &o, res);
    sglang_notes(in, &s, &o, res);
    free(model);
    return 0;
}

const plan_engine plan_engine_sglang = {
    .id = HBM_PLAN_ENGINE_SGLANG,
    .name = "sglang",
    .flags = sglang_flags,
    .args = sglang_args,
    .run = sglang_run,
    .util_flag = "--mem-fraction-static",
    .len_flag = "--context-length",
};
