/* What to change when vLLM would not start, best first (order at plan_advise): each change
 * is offered only for a check it clears, and re-planned, so each value given is one that
 * fits and each cost is the re-planned one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

#define GIB_D 1073741824.0

char *plan_flag_line(const plan_view *v, const plan_flags *f, const char *kv_dtype)
{
    char util[32];
    snprintf(util, sizeof util, "%g", f->util);
    char pp[48] = "";
    if (f->pp > 1)
        snprintf(pp, sizeof pp, " --pipeline-parallel-size %lld", (long long)f->pp);
    char *s = hbm_xasprintf("vllm serve %s --tensor-parallel-size %lld%s "
                            "--gpu-memory-utilization %s --max-model-len %lld --max-num-seqs "
                            "%lld --max-num-batched-tokens %lld",
                            v->model, (long long)f->tp, pp, util, (long long)f->mml,
                            (long long)f->seqs, (long long)f->mnbt);
    char *extra[13] = {0};
    int n = 0;
    if (f->block_given)
        extra[n++] = hbm_xasprintf(" --block-size %lld", (long long)f->block);
    if (kv_dtype && strcasecmp(kv_dtype, "auto"))
        extra[n++] = hbm_xasprintf(" --kv-cache-dtype %s", kv_dtype);
    if (v->in->quantization)
        extra[n++] = hbm_xasprintf(" --quantization %s", v->in->quantization);
    if (f->eager)
        extra[n++] = hbm_xstrdup(" --enforce-eager");
    if (f->kvmem >= 0)
        extra[n++] = hbm_xasprintf(" --kv-cache-memory-bytes %lld", (long long)f->kvmem);
    if (f->blocks_override > 0)
        extra[n++] = hbm_xasprintf(" --num-gpu-blocks-override %lld",
                                   (long long)f->blocks_override);
    if (v->in->vllm.mm_limit_image >= 0 || v->in->vllm.mm_limit_video >= 0)
        extra[n++] = plan_mm_limits_flag(v->in);
    if (v->in->vllm.mm_processor_kwargs)
        extra[n++] = hbm_xasprintf(" --mm-processor-kwargs '%s'", v->in->vllm.mm_processor_kwargs);
    if (v->in->vllm.mm_encoder_tp_mode)
        extra[n++] = hbm_xasprintf(" --mm-encoder-tp-mode %s", v->in->vllm.mm_encoder_tp_mode);
    if (v->in->vllm.skip_mm_profiling)
        extra[n++] = hbm_xstrdup(" --skip-mm-profiling");
    /* the drafter stays: the figures count it */
    if (v->in->vllm.speculative_config)
        extra[n++] = hbm_xasprintf(" --speculative-config '%s'", v->in->vllm.speculative_config);
    if (v->in->vllm.speculative_model || v->in->vllm.num_speculative_tokens > 0)
        extra[n++] = hbm_xasprintf("%s%s --num-speculative-tokens %lld",
                                   v->in->vllm.speculative_model ? " --speculative-model " : "",
                                   v->in->vllm.speculative_model ? v->in->vllm.speculative_model : "",
                                   (long long)(v->in->vllm.num_speculative_tokens > 0
                                                   ? v->in->vllm.num_speculative_tokens : 1));
    if (v->in->vllm.enable_lora == 1)
        extra[n++] = plan_lora_flag_text(v->in);
    for (int i = 0; i < n; i++) {
        char *t = hbm_xasprintf("%s%s", s, extra[i]);
        free(s);
        free(extra[i]);
        s = t;
    }
    return s;
}

static void add_rec(hbm_plan_result *res, const char *kind, char *change, char *cost,
                    char *fl, char *line)
{
    res->recs = hbm_xrealloc(res->recs, (res->nrecs + 1) * sizeof *res->recs);
    hbm_plan_rec *r = &res->recs[res->nrecs++];
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    r->change = change;
    r->cost = cost;
    r->flags = fl;
    r->launch_line = line;
}

static double floor2(double x)
{
    return floor(x * 100 + 1e-9) / 100;
}

static char *fit_summary(const plan_outcome *o, const plan_flags *f)
{
    return hbm_xasprintf("%lld KV tokens, max concurrency %.2fx at max-model-len %lld",
                         (long long)o->tokens, o->conc, (long long)f->mml);
}

/* The longest context that fits after a change, applied to the plan_flags when it is shorter. */
static bool settle_mml(const plan_ctx *c, plan_flags *g, plan_outcome *o)
{
    plan_evaluate(c, g, o);
    if (o->fits)
        return true;
    if (!o->precheck_fail && !o->no_kv && !o->oom && o->mml_fail && o->mml_fit > 0) {
        g->mml = o->mml_fit;
        plan_evaluate(c, g, o);
    }
    return o->fits;
}

static char *tp_flags(const plan_flags *g, const plan_flags *f)
{
    char us[48] = "", ml[48] = "";
    if (g->util != f->util)
        snprintf(us, sizeof us, " --gpu-memory-utilization %g", g->util);
    if (g->mml != f->mml)
        snprintf(ml, sizeof ml, " --max-model-len %lld", (long long)g->mml);
    return hbm_xasprintf("--tensor-parallel-size %lld%s%s", (long long)g->tp, us, ml);
}

static bool failing(const plan_outcome *o)
{
    return o->precheck_fail || o->no_kv || o->mml_fail || o->oom || o->mamba_fail;
}

/* Memory other processes hold, and the highest utilisation the start-up check passes. */
static int64_t held_by_others(const plan_flags *f)
{
    return f->free >= 0 && f->free < f->total ? f->total - f->free : 0;
}

static double util_ceiling(const plan_flags *f)
{
    double u = f->free >= 0 ? floor2((double)f->free / (double)f->total) : 1.0;
    return u > 1 ? 1 : u;
}

/* Freeing what others hold is a fix only for a check their memory makes fail: the
 * start-up check, loading the weights, or (rules that charge it to the budget) the KV
 * cache; never for a plan whose free-memory check already passes on its own. */
static bool freeing_clears(const plan_ctx *c, const plan_flags *f, const plan_outcome *o)
{
    if (held_by_others(f) <= (int64_t)GIB_D || !failing(o))
        return false;
    plan_flags g = *f;
    g.free = f->total;
    plan_outcome t;
    plan_evaluate(c, &g, &t);
    return (o->precheck_fail && !t.precheck_fail) || (o->oom && !t.oom) || t.avail > o->avail;
}

/* The utilisation change that fits: with the start-up check failing, the highest that
 * passes it (and the longest context it then holds); else the lowest higher one that fits
 * within the memory free now. */
static bool util_change(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                        plan_flags *g, plan_outcome *t)
{
    if (o->oom || !failing(o))
        return false;
    double u_max = util_ceiling(f);
    if (o->precheck_fail) {
        if (u_max < 0.01)
            return false;
        *g = *f;
        g->util = u_max;
        return settle_mml(c, g, t);
    }
    /* rules that charge others' memory to the budget have no start-up check: vLLM's share
     * is util x total less what others hold, so any utilisation up to 1 stays within it */
    if (!c->r.snapshot_budget)
        u_max = 1.0;
    for (double u = floor2(f->util) + 0.01; u <= u_max + 1e-9; u += 0.01) {
        *g = *f;
        g->util = round(u * 100) / 100;
        plan_evaluate(c, g, t);
        if (t->fits)
            return true;
    }
    return false;
}

/* Bytes of the device that stay free once vLLM has taken its share at utilisation g. */
static int64_t left_free(const plan_ctx *c, const plan_flags *g, const plan_outcome *t)
{
    int64_t free_now = g->free >= 0 ? g->free : g->total;
    int64_t take = t->requested - (c->r.snapshot_budget ? 0 : held_by_others(g));
    return free_now - take;
}

static void rec_free(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                     const plan_view *v, hbm_plan_result *res)
{
    if (!freeing_clears(c, f, o))
        return;
    int64_t others = held_by_others(f);
    plan_flags g = *f;
    g.free = f->total;
    plan_outcome t;
    if (!settle_mml(c, &g, &t))
        return;
    char who[512] = "";
    size_t w = 0;
    for (size_t i = 0; i < v->in->nholders && w < sizeof who - 80; i++)
        w += (size_t)snprintf(who + w, sizeof who - w, "%spid %lld %s (%.2f GiB)",
                              i ? ", " : " by ", (long long)v->in->holders[i].pid,
                              v->in->holders[i].name,
                              (double)v->in->holders[i].memory_bytes / GIB_D);
    /* why the held memory is in the way, and what starts while it stays held */
    plan_flags h;
    plan_outcome th;
    bool some_util = util_change(c, f, o, &h, &th);
    char *lead, *tail;
    if (o->precheck_fail && !some_util)
        lead = hbm_xasprintf("No --gpu-memory-utilization works while %.2f GiB is held by "
                             "other processes: at most %g passes the start-up check, and that "
                             "leaves %.2f GiB, less than weights %.2f + activation %.2f + "
                             "non-torch %.2f GiB plus one request's KV cache. ",
                             (double)others / GIB_D, util_ceiling(f),
                             util_ceiling(f) * (double)f->total / GIB_D,
                             (double)o->weights / GIB_D, (double)o->act / GIB_D,
                             (double)o->nt / GIB_D);
    else if (o->precheck_fail)
        lead = hbm_xstrdup("");
    else if (o->oom)
        lead = hbm_xasprintf("The weights (%.2f GiB per rank) do not fit the %.2f GiB free. ",
                             (double)o->weights / GIB_D, (double)f->free / GIB_D);
    else
        lead = hbm_xasprintf("These rules (%s %s) take the %.2f GiB other processes hold out "
                             "of the KV cache budget. ",
                             c->r.ascend ? "vllm-ascend" : "vLLM", res->vllm_version,
                             (double)others / GIB_D);
    if (o->precheck_fail && some_util) {
        char ml[64] = "";
        if (h.mml != f->mml)
            snprintf(ml, sizeof ml, " with max-model-len %lld", (long long)h.mml);
        tail = hbm_xasprintf(" Until then --gpu-memory-utilization %g starts%s, with a smaller "
                             "KV cache.", h.util, ml);
    } else {
        tail = hbm_xstrdup("");
    }
    char *sum = fit_summary(&t, &g);
    add_rec(res, "free_memory",
            hbm_xasprintf("%sFree the %.2f GiB held%s (hbmctl doctor shows the holder, hbmctl "
                          "clean ends an orphan safely); then --gpu-memory-utilization %g fits "
                          "with max-model-len %lld: %s.%s",
                          lead, (double)others / GIB_D, who[0] ? who : " by another process",
                          g.util, (long long)g.mml, sum, tail),
            hbm_xstrdup(g.mml < f->mml ? "a shorter context than asked"
                                       : "nothing, once the other process is gone"),
            g.mml < f->mml ? hbm_xasprintf("--max-model-len %lld", (long long)g.mml)
                           : hbm_xstrdup(""),
            plan_flag_line(v, &g, v->in->kv_cache_dtype));
    free(sum);
    free(lead);
    free(tail);
}

/* raise: only a higher utilisation (nothing asked for is given up); lower: only one below */
static void rec_util(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                     const plan_view *v, hbm_plan_result *res, bool raise)
{
    plan_flags g;
    plan_outcome t;
    if (!util_change(c, f, o, &g, &t) || (g.util > f->util) != raise)
        return;
    char *sum = fit_summary(&t, &g);
    char *cost;
    if (raise) {
        int64_t left = left_free(c, &g, &t);
        char stays[96];
        if (left >= (int64_t)(0.01 * GIB_D))
            snprintf(stays, sizeof stays, "%.2f GiB of the device stays free",
                     (double)left / GIB_D);
        else
            snprintf(stays, sizeof stays, "no free memory left for other processes");
        cost = hbm_xasprintf("%.2f GiB more of the device for vLLM; %s",
                             (g.util - f->util) * (double)f->total / GIB_D, stays);
    } else {
        cost = hbm_xasprintf("a smaller KV cache (%.2f GiB per rank)%s", (double)t.avail / GIB_D,
                             g.mml < f->mml ? " and a shorter context" : "");
    }
    char ml[48] = "";
    if (g.mml != f->mml)
        snprintf(ml, sizeof ml, " --max-model-len %lld", (long long)g.mml);
    add_rec(res, "gpu_memory_utilization",
            hbm_xasprintf("--gpu-memory-utilization %g%s: %s.", g.util, ml, sum), cost,
            hbm_xasprintf("--gpu-memory-utilization %g%s", g.util, ml),
            plan_flag_line(v, &g, v->in->kv_cache_dtype));
    free(sum);
}

/* More devices; not when lowering the utilisation alone passes the check and fits. */
static void rec_tp(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                   const plan_view *v, hbm_plan_result *res)
{
    double u_max = util_ceiling(f);
    plan_flags g;
    plan_outcome t;
    if (o->precheck_fail && u_max >= 0.01) {
        g = *f;
        g.util = u_max;
        plan_evaluate(c, &g, &t);
        if (t.fits)
            return;
    }
    for (int64_t tp = f->tp * 2; tp <= 64; tp *= 2) {
        if (c->m->num_heads % tp)
            continue;
        g = *f;
        g.tp = tp;
        if (o->precheck_fail && g.util > u_max)
            g.util = u_max;
        if (g.util < 0.01)
            return;
        if (!settle_mml(c, &g, &t))
            continue;
        char *sum = fit_summary(&t, &g);
        add_rec(res, "tensor_parallel_size",
                hbm_xasprintf("--tensor-parallel-size %lld%s: %.2f GiB of weights per rank; %s.",
                              (long long)tp,
                              g.util != f->util ? " with the utilisation that passes the check"
                                                : "",
                              (double)t.weights / GIB_D, sum),
                hbm_xasprintf("%lld devices instead of %lld%s%s", (long long)(tp * f->pp),
                              (long long)(f->tp * f->pp),
                              held_by_others(f) ? ", each with as much free memory as this one"
                                                : "",
                              g.mml < f->mml ? ", and a shorter context" : ""),
                tp_flags(&g, f), plan_flag_line(v, &g, v->in->kv_cache_dtype));
        free(sum);
        return;
    }
}

static void rec_mml(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                    const plan_view *v, hbm_plan_result *res)
{
    if (o->precheck_fail || o->no_kv || o->oom || !o->mml_fail || o->mml_fit <= 0)
        return;
    plan_flags g = *f;
    plan_outcome t;
    g.mml = o->mml_fit;
    plan_evaluate(c, &g, &t);
    if (!t.fits)
        return;
    char *sum = fit_summary(&t, &g);
    add_rec(res, "max_model_len",
            hbm_xasprintf("--max-model-len %lld (the longest one request can hold): %s.",
                          (long long)g.mml, sum),
            hbm_xasprintf("context %lld instead of %lld tokens", (long long)g.mml,
                          (long long)f->mml),
            hbm_xasprintf("--max-model-len %lld", (long long)g.mml),
            plan_flag_line(v, &g, v->in->kv_cache_dtype));
    free(sum);
}

/* A smaller profile run: fewer sequences, then fewer batched tokens. */
static void rec_profile(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                        const plan_view *v, hbm_plan_result *res)
{
    if (o->precheck_fail || o->oom || !(o->no_kv || o->mml_fail || o->mamba_fail))
        return;
    plan_flags g;
    plan_outcome t;
    for (int pass = 0; pass < 2; pass++) {
        /* vLLM refuses max_num_batched_tokens below max_num_seqs (and below
         * max_model_len without chunked prefill) */
        int64_t lo = pass == 0 ? 1 : (f->chunked ? f->seqs : f->mml);
        int64_t hi = pass == 0 ? f->seqs - 1 : f->mnbt - 1, best = -1;
        while (lo <= hi) {
            int64_t mid = lo + (hi - lo) / 2;
            g = *f;
            if (pass == 0)
                g.seqs = mid;
            else
                g.mnbt = mid;
            plan_evaluate(c, &g, &t);
            if (t.fits)
                best = mid, lo = mid + 1;
            else
                hi = mid - 1;
        }
        if (best < 0)
            continue;
        g = *f;
        if (pass == 0)
            g.seqs = best;
        else
            g.mnbt = best;
        plan_evaluate(c, &g, &t);
        char *sum = fit_summary(&t, &g);
        const char *name = pass == 0 ? "max_num_seqs" : "max_num_batched_tokens";
        const char *flag = pass == 0 ? "--max-num-seqs" : "--max-num-batched-tokens";
        add_rec(res, name,
                hbm_xasprintf("%s %lld: the profile run's peak activation drops to %.2f GiB; %s.",
                              flag, (long long)best, (double)t.act / GIB_D, sum),
                hbm_xstrdup(pass == 0 ? "fewer requests served at once"
                                      : "slower prefill of long prompts (chunked)"),
                hbm_xasprintf("%s %lld", flag, (long long)best),
                plan_flag_line(v, &g, v->in->kv_cache_dtype));
        free(sum);
    }
}

static void rec_fp8(const plan_ctx *c, const plan_flags *f, const plan_outcome *o,
                    const plan_view *v, hbm_plan_result *res)
{
    if (o->precheck_fail || o->oom || o->no_kv || !o->mml_fail || f->kvb <= 1)
        return;
    plan_flags g = *f;
    plan_outcome t;
    g.kvb = 1;
    plan_evaluate(c, &g, &t);
    if (!t.fits)
        return;
    char *sum = fit_summary(&t, &g);
    add_rec(res, "kv_cache_dtype",
            hbm_xasprintf("--kv-cache-dtype fp8: half the bytes per token; %s.", sum),
            hbm_xstrdup("KV cache precision (fp8)"), hbm_xstrdup("--kv-cache-dtype fp8"),
            plan_flag_line(v, &g, "fp8"));
    free(sum);
}

/* Best first: freeing what others hold when their memory is what fails (the documented order puts it
 * first); a higher utilisation that only takes memory free now (no context, concurrency
 * or device given up); more devices; a shorter context; a smaller profile run; a lower
 * utilisation (a smaller KV cache); a one-byte KV cache. */
void plan_advise(const plan_ctx *c, const plan_flags *f, const plan_outcome *o, const plan_view *v,
                 hbm_plan_result *res)
{
    rec_free(c, f, o, v, res);
    rec_util(c, f, o, v, res, true);
    rec_tp(c, f, o, v, res);
    rec_mml(c, f, o, v, res);
    rec_profile(c, f, o, v, res);
    rec_util(c, f, o, v, res, false);
    rec_fp8(c, f, o, v, res);
}
