/* A plan as JSON and as the human breakdown (a bar per component against the
 * device, the verdict in vLLM's words, the changes that fit). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

#define GIB_D 1073741824.0

static json_t *int_or_null(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

json_t *hbm_plan_result_to_json(const hbm_plan_result *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "fits", json_boolean(r->fits));
    json_t *errs = json_array();
    for (size_t i = 0; i < r->nerrors; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "kind", json_string(r->errors[i].kind));
        json_object_set_new(e, "message", json_string(r->errors[i].message));
        json_array_append_new(errs, e);
    }
    json_object_set_new(j, "errors", errs);
    json_object_set_new(j, "weights_bytes", int_or_null(r->weights_bytes));
    json_object_set_new(j, "activation_bytes", int_or_null(r->activation_bytes));
    json_object_set_new(j, "non_torch_bytes", int_or_null(r->non_torch_bytes));
    json_object_set_new(j, "graph_bytes", int_or_null(r->graph_bytes));
    json_object_set_new(j, "kv_cache_bytes", json_integer(r->kv_cache_bytes));
    json_object_set_new(j, "kv_bytes_per_token", int_or_null(r->kv_bytes_per_token));
    json_object_set_new(j, "block_size", int_or_null(r->block_size));
    json_object_set_new(j, "num_blocks", int_or_null(r->num_blocks));
    json_object_set_new(j, "kv_cache_tokens", int_or_null(r->kv_cache_tokens));
    json_object_set_new(j, "max_concurrency", json_real(r->max_concurrency));
    json_t *recs = json_array();
    for (size_t i = 0; i < r->nrecs; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "kind", json_string(r->recs[i].kind));
        json_object_set_new(e, "change", json_string(r->recs[i].change));
        json_object_set_new(e, "cost", json_string(r->recs[i].cost));
        json_object_set_new(e, "flags", json_string(r->recs[i].flags));
        json_object_set_new(e, "vllm_args", json_string(r->recs[i].vllm_args));
        json_array_append_new(recs, e);
    }
    json_object_set_new(j, "recommendations", recs);
    json_object_set_new(j, "vllm_args", json_string(r->vllm_args ? r->vllm_args : ""));
    /* what the prediction rests on */
    json_object_set_new(j, "graph_outside_budget_bytes", int_or_null(r->graph_outside_bytes));
    json_object_set_new(j, "max_model_len_fit", int_or_null(r->max_model_len_fit));
    json_object_set_new(j, "memory_total_bytes", int_or_null(r->total_bytes));
    json_object_set_new(j, "memory_free_bytes", int_or_null(r->free_bytes));
    json_object_set_new(j, "requested_bytes", int_or_null(r->requested_bytes));
    json_object_set_new(j, "gpu_memory_utilization", json_real(r->gpu_memory_utilization));
    json_object_set_new(j, "tensor_parallel_size", json_integer(r->tensor_parallel_size));
    json_object_set_new(j, "pipeline_parallel_size", json_integer(r->pipeline_parallel_size));
    json_object_set_new(j, "max_model_len", json_integer(r->max_model_len));
    json_object_set_new(j, "max_num_seqs", json_integer(r->max_num_seqs));
    json_object_set_new(j, "max_num_batched_tokens", json_integer(r->max_num_batched_tokens));
    json_object_set_new(j, "kv_cache_dtype", json_string(r->kv_cache_dtype));
    json_object_set_new(j, "vllm_version", json_string(r->vllm_version));
    json_object_set_new(j, "platform", json_string(r->platform == HBM_PLAN_PLATFORM_ASCEND
                                                       ? "ascend"
                                                       : r->platform == HBM_PLAN_PLATFORM_CUDA
                                                             ? "cuda"
                                                             : "unknown"));
    json_object_set_new(j, "device", r->device_name[0] ? json_string(r->device_name) : json_null());
    json_object_set_new(j, "live", json_boolean(r->live));
    json_t *ids = json_array();
    for (size_t i = 0; i < r->ndevice_ids; i++)
        json_array_append_new(ids, json_integer(r->device_ids[i]));
    json_object_set_new(j, "devices", r->ndevice_ids ? ids : (json_decref(ids), json_null()));
    json_object_set_new(j, "visible_devices",
                        r->visible_devices[0] ? json_string(r->visible_devices) : json_null());
    const hbm_plan_model *m = &r->model;
    json_t *mo = json_object();
    json_object_set_new(mo, "config", json_string(m->path));
    json_object_set_new(mo, "architecture", json_string(m->architecture));
    json_object_set_new(mo, "num_layers", int_or_null(m->num_layers));
    json_object_set_new(mo, "num_kv_heads", int_or_null(m->num_kv_heads));
    json_object_set_new(mo, "head_dim", int_or_null(m->head_dim));
    json_object_set_new(mo, "mla", json_boolean(m->mla));
    json_object_set_new(mo, "num_experts", json_integer(m->num_experts));
    json_object_set_new(mo, "dtype", json_string(m->dtype));
    json_object_set_new(mo, "checkpoint_bytes", int_or_null(m->weights_bytes));
    json_object_set_new(mo, "weights_estimated", json_boolean(m->weights_estimated));
    json_object_set_new(mo, "safetensors_files", json_integer(m->weights_files));
    json_object_set_new(j, "model", mo);
    json_t *notes = json_array();
    for (size_t i = 0; i < r->nnotes; i++)
        json_array_append_new(notes, json_string(r->notes[i]));
    json_object_set_new(j, "notes", notes);
    return j;
}

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

__attribute__((format(printf, 2, 3))) static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0)
        return;
    if (b->n + (size_t)need + 1 > b->cap) {
        b->cap = (b->n + (size_t)need + 1) * 2;
        b->s = hbm_xrealloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

/* Words of text wrapped at width, continuing a line already at column col; later lines
 * are indented by hang. */
static void sb_wrap_from(sbuf *b, const char *text, int col, int hang, int width)
{
    const char *p = text;
    bool first = true;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        int wl = (int)(e - p);
        if (wl == 0)
            break;
        if (!first && col + 1 + wl > width) {
            sb_printf(b, "\n%*s", hang, "");
            col = hang;
        } else if (!first) {
            sb_printf(b, " ");
            col++;
        }
        sb_printf(b, "%.*s", wl, p);
        col += wl;
        first = false;
        p = e;
    }
    sb_printf(b, "\n");
}

/* The same from the start of a line indented by indent. */
static void sb_wrap_hang(sbuf *b, const char *text, int indent, int hang, int width)
{
    sb_printf(b, "%*s", indent, "");
    sb_wrap_from(b, text, indent, hang, width);
}

static void sb_wrap(sbuf *b, const char *text, int indent, int width)
{
    sb_wrap_hang(b, text, indent, indent, width);
}

static void bar_row(sbuf *b, const char *label, int64_t bytes, int64_t total, int barw)
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
    sb_printf(b, "  %-23s %9.2f GiB %5.1f%%  %s\n", label, (double)bytes / GIB_D,
              total > 0 ? 100.0 * (double)bytes / (double)total : 0.0, bar);
}

/* The numbered changes with their costs and flag lines. */
static void recs_text(sbuf *b, const hbm_plan_result *r, int width)
{
    sb_printf(b, "what makes it fit, best first:\n");
    for (size_t i = 0; i < r->nrecs; i++) {
        char *t = hbm_xasprintf("%zu. %s", i + 1, r->recs[i].change);
        sb_wrap_hang(b, t, 2, 5, width);
        free(t);
        char *c = hbm_xasprintf("cost: %s", r->recs[i].cost);
        sb_wrap(b, c, 5, width);
        free(c);
        sb_wrap_hang(b, r->recs[i].vllm_args, 5, 7, width);
    }
}

char *hbm_plan_verdict_text(const hbm_plan_result *r)
{
    sbuf b = {0};
    if (r->fits) {
        sb_printf(&b, "vLLM starts: %lld KV tokens, %.2fx concurrency at max-model-len %lld\n",
                  (long long)r->kv_cache_tokens, r->max_concurrency,
                  (long long)r->max_model_len);
        return b.s;
    }
    /* vLLM's words on one line, so they read (and grep) as vLLM prints them */
    sb_printf(&b, "vLLM will not start: %s\n", r->nerrors ? r->errors[0].message : "");
    if (r->nrecs)
        recs_text(&b, r, 100);
    else
        sb_printf(&b, "no single change found that makes it fit\n");
    return b.s;
}

char *hbm_plan_result_text(const hbm_plan_result *r, int width, bool color)
{
    if (width < 60)
        width = 60;
    sbuf b = {0};
    const hbm_plan_model *m = &r->model;
    const char *green = color ? "\033[32m" : "", *red = color ? "\033[31m" : "";
    const char *reset = color ? "\033[0m" : "";
    sb_printf(&b, "model   ");
    char *line = hbm_xasprintf(
        "%s: %lld layers, %lld KV heads x %lld%s, %s%s%s; %s rules %s",
        m->architecture[0] ? m->architecture : m->model_type, (long long)m->num_layers,
        (long long)m->num_kv_heads, (long long)m->head_dim, m->mla ? " (MLA latent)" : "",
        m->dtype, m->num_experts ? ", MoE" : "", m->quant_method[0] ? ", quantised" : "",
        r->platform == HBM_PLAN_PLATFORM_ASCEND ? "vllm-ascend" : "vLLM", r->vllm_version);
    sb_wrap_from(&b, line, 8, 8, width);
    free(line);
    char fr[48];
    if (r->free_bytes >= 0)
        snprintf(fr, sizeof fr, "%.2f GiB free", (double)r->free_bytes / GIB_D);
    else
        snprintf(fr, sizeof fr, "free not known");
    sb_printf(&b, "device  ");
    line = hbm_xasprintf("%s%s%.2f GiB total as the framework sees it, %s",
                         r->device_name,
                         r->device_name[0] ? (r->live ? " (live): " : ": ") : "",
                         (double)r->total_bytes / GIB_D, fr);
    sb_wrap_from(&b, line, 8, 8, width);
    free(line);
    if (r->ndevice_ids) {
        /* which devices vLLM would take, and what chose them */
        char *ids = hbm_xstrdup("");
        for (size_t i = 0; i < r->ndevice_ids; i++) {
            char *t = hbm_xasprintf("%s%s%lld", ids, i ? ", " : "",
                                    (long long)r->device_ids[i]);
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
        sb_printf(&b, "        ");
        sb_wrap_from(&b, line, 8, 8, width);
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
    sb_wrap_hang(&b, line, 0, 8, width);
    free(line);
    sb_printf(&b, "flags   TP %lld  PP %lld  util %g  max-model-len %lld  max-num-seqs %lld  "
                  "batched-tokens %lld\n        block %lld  kv-cache-dtype %s (%d B)\n\n",
              (long long)r->tensor_parallel_size, (long long)r->pipeline_parallel_size,
              r->gpu_memory_utilization, (long long)r->max_model_len,
              (long long)r->max_num_seqs, (long long)r->max_num_batched_tokens,
              (long long)r->block_size, r->kv_cache_dtype, r->kv_dtype_bytes);

    int barw = width - 50;
    if (barw > 50)
        barw = 50;
    sb_printf(&b, "per rank                       size   device  (bar: share of %.2f GiB)\n",
              (double)r->total_bytes / GIB_D);
    int64_t T = r->total_bytes;
    bar_row(&b, "weights", r->weights_bytes, T, barw);
    bar_row(&b, "peak activation", r->activation_bytes, T, barw);
    bar_row(&b, "non-torch", r->non_torch_bytes, T, barw);
    if (r->graph_bytes > 0)
        bar_row(&b, "graphs (in budget)", r->graph_bytes, T, barw);
    bar_row(&b, "KV cache", r->kv_cache_bytes > 0 ? r->kv_cache_bytes : 0, T, barw);
    if (r->kv_cache_bytes < 0)
        sb_printf(&b, "  %-22s %9.2f GiB  (budget short by this much)\n", "KV cache budget",
                  (double)r->kv_cache_bytes / GIB_D);
    if (r->graph_outside_bytes > 0)
        bar_row(&b, "graphs (after budget)", r->graph_outside_bytes, T, barw);
    if (r->free_bytes >= 0 && r->free_bytes < T)
        bar_row(&b, "other processes", T - r->free_bytes, T, barw);
    bar_row(&b, "requested: util x total", r->requested_bytes, T, barw);
    sb_printf(&b, "\n");
    if (r->kv_cache_bytes > 0)
        sb_printf(&b, "KV      %lld B per token per rank; %lld blocks of %lld tokens = %lld "
                      "tokens;\n        max concurrency %.2fx at max-model-len %lld\n",
                  (long long)r->kv_bytes_per_token, (long long)r->num_blocks,
                  (long long)r->block_size, (long long)r->kv_cache_tokens, r->max_concurrency,
                  (long long)r->max_model_len);
    if (r->fits)
        sb_printf(&b, "verdict %sFITS%s: vLLM starts with these flags\n", green, reset);
    else
        sb_printf(&b, "verdict %sDOES NOT START%s: vLLM will say\n", red, reset);
    for (size_t i = 0; i < r->nerrors; i++)
        sb_wrap(&b, r->errors[i].message, 8, width);
    if (r->nrecs) {
        sb_printf(&b, "\n");
        recs_text(&b, r, width);
    } else if (!r->fits) {
        sb_printf(&b, "\nno single change found that makes it fit\n");
    }
    sb_printf(&b, "\ncommand ");
    sb_wrap_from(&b, r->vllm_args ? r->vllm_args : "", 8, 8, width);
    if (r->nnotes) {
        sb_printf(&b, "\nnotes:\n");
        for (size_t i = 0; i < r->nnotes; i++) {
            char *t = hbm_xasprintf("- %s", r->notes[i]);
            sb_wrap_hang(&b, t, 2, 4, width);
            free(t);
        }
    }
    return b.s ? b.s : hbm_xstrdup("");
}
