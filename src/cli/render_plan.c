/* The planner's result for people: a bar per component against the device, the verdict in
 * vLLM's words, the changes that fit. */
#include <math.h>
#include <stdlib.h>

#include "cli.h"
#include "render_plan.h"
#include "wrap.h"

#define GIB_D 1073741824.0

/* From the start of a line: indent columns, then text, continuation lines at hang. */
static void wrap_hang(FILE *f, const char *text, int indent, int hang, int width)
{
    fprintf(f, "%*s", indent, "");
    cli_wrap_from(f, text, indent, hang, width, false);
}

static void bar_row(FILE *f, const char *label, int64_t bytes, int64_t total, int barw)
{
    int n = 0;
    if (bytes > 0 && total > 0) {
        n = (int)lround((double)bytes / (double)total * barw);
        if (n == 0)
            n = 1;
        if (n > barw)
            n = barw;
    }
    char bar[256];
    int i = 0;
    for (; i < n && i < (int)sizeof bar - 1; i++)
        bar[i] = '#';
    for (; i < barw && i < (int)sizeof bar - 1; i++)
        bar[i] = '.';
    bar[i] = 0;
    fprintf(f, "  %-23s %9.2f GiB %5.1f%%  %s\n", label, (double)bytes / GIB_D,
            total > 0 ? 100.0 * (double)bytes / (double)total : 0.0, bar);
}

/* Whose start-up the plan is: vLLM (vllm-ascend on Ascend, when the rules are named) or the
 * engine --engine named. */
static const char *engine_word(const hbm_plan_result *r, bool rules)
{
    if (r->engine == HBM_PLAN_ENGINE_MINDIE)
        return "MindIE";
    if (r->engine == HBM_PLAN_ENGINE_SGLANG)
        return "SGLang";
    return rules && r->platform == HBM_PLAN_PLATFORM_ASCEND ? "vllm-ascend" : "vLLM";
}

/* The numbered changes with their costs and flag lines. */
static void recs_text(FILE *f, const hbm_plan_result *r, int width)
{
    fprintf(f, "what makes it fit, best first:\n");
    for (size_t i = 0; i < r->nrecs; i++) {
        char *t = hbm_xasprintf("%zu. %s", i + 1, r->recs[i].change);
        wrap_hang(f, t, 2, 5, width);
        free(t);
        char *c = hbm_xasprintf("cost: %s", r->recs[i].cost);
        wrap_hang(f, c, 5, 5, width);
        free(c);
        wrap_hang(f, r->recs[i].launch_line, 5, 7, width);
    }
}

char *cli_plan_verdict_text(const hbm_plan_result *r)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    if (!f)
        return hbm_xstrdup("");
    if (r->fits) {
        fprintf(f, "%s starts: %lld KV tokens, %.2fx concurrency at max-model-len %lld\n",
                engine_word(r, false), (long long)r->kv_cache_tokens, r->max_concurrency, (long long)r->max_model_len);
    } else {
        /* vLLM's words on one line, so they read (and grep) as vLLM prints them */
        fprintf(f, "%s will not start: %s\n", engine_word(r, false),
                r->nerrors ? r->errors[0].message : "");
        if (r->nrecs)
            recs_text(f, r, CLI_WIDTH);
        else
            fprintf(f, "no single change found that makes it fit\n");
    }
    fclose(f);
    return s;
}

/* The engine's own names of the flags the report shows. */
typedef struct flag_words {
    const char *util, *len, *seqs, *batched, *block;
} flag_words;

static const flag_words *words_of(const hbm_plan_result *r)
{
    static const flag_words vllm = {"util", "max-model-len", "max-num-seqs", "batched-tokens",
                                    "block"};
    static const flag_words sglang = {"mem-fraction-static", "context-length",
                                      "max-running-requests", "chunked-prefill-size",
                                      "page-size"};
    static const flag_words mindie = {"NPU_MEMORY_FRACTION", "maxSeqLen", "maxBatchSize",
                                      "maxPrefillTokens", "cacheBlockSize"};
    return r->engine == HBM_PLAN_ENGINE_SGLANG   ? &sglang
           : r->engine == HBM_PLAN_ENGINE_MINDIE ? &mindie
                                                 : &vllm;
}

/* The model, the device (and which ones), the weights and the flags. */
static void report_inputs(FILE *f, const hbm_plan_result *r, int width)
{
    const hbm_plan_model *m = &r->model;
    fprintf(f, "model   ");
    char newer[64] = "";
    if (r->rules_newer)
        snprintf(newer, sizeof newer, " (%s is newer: the newest rules)", r->engine_version);
    char *line = hbm_xasprintf(
        "%s: %lld layers, %lld KV heads x %lld%s, %s%s%s; %s rules %s%s",
        m->architecture[0] ? m->architecture : m->model_type, (long long)m->num_layers,
        (long long)m->num_kv_heads, (long long)m->head_dim, m->mla ? " (MLA latent)" : "",
        m->dtype, m->num_experts ? ", MoE" : "", m->quant_method[0] ? ", quantised" : "",
        engine_word(r, true), r->vllm_version, newer);
    cli_wrap_from(f, line, 8, 8, width, false);
    free(line);
    char fr[48];
    if (r->free_bytes >= 0)
        snprintf(fr, sizeof fr, "%.2f GiB free", (double)r->free_bytes / GIB_D);
    else
        snprintf(fr, sizeof fr, "free not known");
    fprintf(f, "device  ");
    line = hbm_xasprintf("%s%s%.2f GiB total as the framework sees it, %s", r->device_name,
                         r->device_name[0] ? (r->live ? " (live): " : ": ") : "",
                         (double)r->total_bytes / GIB_D, fr);
    cli_wrap_from(f, line, 8, 8, width, false);
    free(line);
    if (r->ndevice_ids) {
        /* which devices vLLM would take, and what chose them */
        char *ids = hbm_xstrdup("");
        for (size_t i = 0; i < r->ndevice_ids; i++) {
            char *t = hbm_xasprintf("%s%s%lld", ids, i ? ", " : "", (long long)r->device_ids[i]);
            free(ids);
            ids = t;
        }
        bool npu = r->platform == HBM_PLAN_PLATFORM_ASCEND;
        char why[200];
        if (r->visible_devices[0])
            snprintf(why, sizeof why, "as %s leaves them", r->visible_devices);
        else
            snprintf(why, sizeof why, "the first %zu, %s not set", r->ndevice_ids,
                     npu ? "ASCEND_RT_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES");
        line = hbm_xasprintf("uses %s %s: %s%s", npu ? "NPU" : "GPU", ids, why,
                             r->ndevice_ids > 1 ? "; the least free memory among them counts"
                                                : "");
        wrap_hang(f, line, 8, 8, width);
        free(line);
        free(ids);
    }
    if (m->weights_estimated)
        line = hbm_xasprintf("weights estimated from the architecture (%.2f B parameters): no "
                             "safetensors found",
                             (double)m->params_estimated / 1e9);
    else
        line = hbm_xasprintf("weights %.2f GiB measured from %d safetensors file%s (%lld "
                             "tensors)",
                             (double)m->weights_bytes / GIB_D, m->weights_files,
                             m->weights_files == 1 ? "" : "s", (long long)m->weights_tensors);
    wrap_hang(f, line, 0, 8, width);
    free(line);
    const hbm_plan_multimodal *mm = &r->multimodal;
    if (mm->present) {
        line = mm->profiled
                   ? hbm_xasprintf("vision  tower %.2f GiB per rank (in the weights); profiled: "
                                   "%lld %s item%s of %lld tokens, encoder cache %lld tokens, "
                                   "encoder peak %.2f GiB",
                                   (double)mm->encoder_weights_bytes / GIB_D,
                                   (long long)mm->items, mm->modality, mm->items == 1 ? "" : "s",
                                   (long long)mm->tokens_per_item,
                                   (long long)mm->encoder_cache_tokens,
                                   (double)mm->encoder_activation_bytes / GIB_D)
                   : mm->tower_loaded
                         ? hbm_xasprintf("vision  tower %.2f GiB per rank (in the weights); no "
                                         "encoder input profiled",
                                         (double)mm->encoder_weights_bytes / GIB_D)
                         : hbm_xstrdup("vision  tower not loaded: no modality allowed; no "
                                       "encoder input profiled");
        wrap_hang(f, line, 0, 8, width);
        free(line);
    }
    const flag_words *w = words_of(r);
    fprintf(f, "flags   TP %lld  PP %lld  %s %g  %s %lld  %s %lld\n        %s %lld  %s %lld  "
               "kv-cache-dtype %s (%d B)\n\n",
            (long long)r->tensor_parallel_size, (long long)r->pipeline_parallel_size, w->util,
            r->gpu_memory_utilization, w->len, (long long)r->max_model_len, w->seqs,
            (long long)r->max_num_seqs, w->batched, (long long)r->max_num_batched_tokens,
            w->block, (long long)r->block_size, r->kv_cache_dtype, r->kv_dtype_bytes);
}

/* A bar per component against the device's total, then the KV cache's figures. */
static void report_breakdown(FILE *f, const hbm_plan_result *r, int width)
{
    int barw = width - 50;
    if (barw > 50)
        barw = 50;
    fprintf(f, "per rank                       size   device  (bar: share of %.2f GiB)\n",
            (double)r->total_bytes / GIB_D);
    int64_t T = r->total_bytes;
    bar_row(f, "weights", r->weights_bytes, T, barw);
    bar_row(f, "peak activation", r->activation_bytes, T, barw);
    bar_row(f, "non-torch", r->non_torch_bytes, T, barw);
    if (r->graph_bytes > 0)
        bar_row(f, "graphs (in budget)", r->graph_bytes, T, barw);
    bar_row(f, "KV cache", r->kv_cache_bytes > 0 ? r->kv_cache_bytes : 0, T, barw);
    if (r->kv_cache_bytes < 0)
        fprintf(f, "  %-22s %9.2f GiB  (budget short by this much)\n", "KV cache budget",
                (double)r->kv_cache_bytes / GIB_D);
    if (r->graph_outside_bytes > 0)
        bar_row(f, "graphs (after budget)", r->graph_outside_bytes, T, barw);
    if (r->free_bytes >= 0 && r->free_bytes < T)
        bar_row(f, "other processes", T - r->free_bytes, T, barw);
    bar_row(f, "requested: util x total", r->requested_bytes, T, barw);
    fprintf(f, "\n");
    if (r->kv_cache_bytes > 0)
        fprintf(f, "KV      %lld B per token per rank; %lld blocks of %lld tokens = %lld "
                   "tokens;\n        max concurrency %.2fx at max-model-len %lld\n",
                (long long)r->kv_bytes_per_token, (long long)r->num_blocks,
                (long long)r->block_size, (long long)r->kv_cache_tokens, r->max_concurrency,
                (long long)r->max_model_len);
}

/* The answer of planning backwards and why nothing cheaper serves. */
static void launch_text(FILE *f, const hbm_plan_result *r, int width)
{
    const hbm_plan_launch *l = &r->launch;
    const char *util = hbm_plan_engine_util_flag(r->engine);
    int64_t d = l->tensor_parallel_size * l->pipeline_parallel_size;
    char pp[32] = "";
    if (l->pipeline_parallel_size > 1)
        snprintf(pp, sizeof pp, " x PP %lld", (long long)l->pipeline_parallel_size);
    char *t;
    if (l->serves)
        t = hbm_xasprintf("%lld requests of %lld tokens: TP %lld%s (%lld device%s) at "
                          "%s %.2f serves %.2fx, the cheapest launch that does",
                          (long long)l->requests, (long long)l->max_model_len,
                          (long long)l->tensor_parallel_size, pp, (long long)d,
                          d == 1 ? "" : "s", util, l->gpu_memory_utilization,
                          l->max_concurrency);
    else
        t = hbm_xasprintf("%lld requests of %lld tokens: no launch up to TP %d x PP %d serves "
                          "them; closest: TP %lld%s at %s %.2f, %.2fx",
                          (long long)l->requests, (long long)l->max_model_len,
                          HBM_PLAN_SERVE_MAX_TP, HBM_PLAN_SERVE_MAX_PP,
                          (long long)l->tensor_parallel_size, pp, util,
                          l->gpu_memory_utilization, l->max_concurrency);
    fprintf(f, "\ntarget  ");
    cli_wrap_from(f, t, 8, 8, width, false);
    free(t);
    if (!l->serves)
        return;
    if (!isnan(l->fewer_devices_concurrency)) {
        t = l->fewer_devices_concurrency > 0
                ? hbm_xasprintf("fewer devices reach at most %.2fx", l->fewer_devices_concurrency)
                : hbm_xasprintf("on fewer devices %s does not start", engine_word(r, false));
        wrap_hang(f, t, 8, 8, width);
        free(t);
    }
    if (!isnan(l->lower_util_concurrency)) {
        t = hbm_xasprintf("%.2f serves %.2fx", l->gpu_memory_utilization - 0.01,
                          l->lower_util_concurrency);
        wrap_hang(f, t, 8, 8, width);
        free(t);
    }
}

void cli_plan_report(FILE *f, const hbm_plan_result *r, int width, bool color)
{
    if (width < 60)
        width = 60;
    const char *green = color ? cli_sgr(32) : "", *red = color ? cli_sgr(31) : "";
    const char *reset = color ? cli_sgr(0) : "";
    report_inputs(f, r, width);
    report_breakdown(f, r, width);
    if (r->fits)
        fprintf(f, "verdict %sFITS%s: %s starts with these flags\n", green, reset,
                engine_word(r, false));
    else
        fprintf(f, "verdict %sDOES NOT START%s: %s will say\n", red, reset,
                engine_word(r, false));
    for (size_t i = 0; i < r->nerrors; i++)
        wrap_hang(f, r->errors[i].message, 8, 8, width);
    if (r->nrecs) {
        fprintf(f, "\n");
        recs_text(f, r, width);
    } else if (!r->fits) {
        fprintf(f, "\nno single change found that makes it fit\n");
    }
    if (r->launch.asked)
        launch_text(f, r, width);
    fprintf(f, "\ncommand ");
    cli_wrap_from(f, r->launch_line ? r->launch_line : "", 8, 8, width, false);
    if (r->nnotes) {
        fprintf(f, "\nnotes:\n");
        for (size_t i = 0; i < r->nnotes; i++) {
            char *t = hbm_xasprintf("- %s", r->notes[i]);
            wrap_hang(f, t, 2, 4, width);
            free(t);
        }
    }
}

void cli_plan_list_devices(void)
{
    size_t n;
    const hbm_plan_device *d = hbm_plan_devices(&n);
    printf("%-10s %-7s %10s  %s\n", "DEVICE", "KIND", "TOTAL", "SOURCE");
    for (size_t i = 0; i < n; i++)
        printf("%-10s %-7s %6.2f GiB  %.69s\n", d[i].name,
               d[i].platform == HBM_PLAN_PLATFORM_ASCEND ? "ascend" : "cuda",
               (double)d[i].total_bytes / 1073741824.0, d[i].source);
}

void cli_plan_list_flags(hbm_plan_engine e)
{
    size_t n;
    const hbm_plan_flag *f = hbm_plan_flags(e, &n);
    printf("%-44s %-6s %s\n", "FLAG", "VALUE", "USE");
    for (size_t i = 0; i < n; i++)
        printf("%-44s %-6s %s\n", f[i].name, f[i].value ? "yes" : "no",
               f[i].use == HBM_PLAN_FLAG_MODELLED     ? "read by the planner"
               : f[i].use == HBM_PLAN_FLAG_UNMODELLED ? "changes memory, not modelled (noted)"
                                                      : "no device memory: skipped");
}
