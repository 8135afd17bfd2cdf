/* What to change when vLLM would not start (SPEC 4 order): free what others hold, more
 * devices, a shorter context, a smaller profile run, another utilisation, a one-byte KV
 * cache. Every suggestion is re-planned, so each value given is one that fits. */
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
    char *extra[5] = {0};
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
    r->vllm_args = line;
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
    char us[32] = "", ml[48] = "";
    if (g->util != f->util)
        snprintf(us, sizeof us, " --gpu-memory-utilization %g", g->util);
    if (g->mml != f->mml)
        snprintf(ml, sizeof ml, " --max-model-len %lld", (long long)g->mml);
    return hbm_xasprintf("--tensor-parallel-size %lld%s%s", (long long)g->tp, us, ml);
}

void plan_advise(const plan_ctx *c, const plan_flags *f, const plan_outcome *o, const plan_view *v,
                   hbm_plan_result *res)
{
    const hbm_plan_model *m = c->m;
    plan_outcome t;
    plan_flags g;
    int64_t others = f->free >= 0 && f->free < f->total ? f->total - f->free : 0;
    double u_max = f->free >= 0 ? floor2((double)f->free / (double)f->total) : 1.0;
    if (u_max > 1)
        u_max = 1;

    /* 1. memory another process holds */
    if (others > (int64_t)(1 * GIB_D) && (o->precheck_fail || o->no_kv || o->mml_fail || o->oom)) {
        g = *f;
        g.free = f->total;
        bool ok = settle_mml(c, &g, &t);
        char who[512] = "";
        size_t w = 0;
        for (size_t i = 0; i < v->in->nholders && w < sizeof who - 80; i++)
            w += (size_t)snprintf(who + w, sizeof who - w, "%spid %lld %s (%.2f GiB)",
                                  i ? ", " : " by ", (long long)v->in->holders[i].pid,
                                  v->in->holders[i].name,
                                  (double)v->in->holders[i].memory_bytes / GIB_D);
        /* does any utilisation pass while the memory stays held? */
        plan_flags h = *f;
        h.util = u_max;
        plan_outcome th;
        bool some_util = u_max >= 0.01 && settle_mml(c, &h, &th);
        char *lead = some_util
                         ? hbm_xstrdup("")
                         : hbm_xasprintf("No --gpu-memory-utilization works while %.2f GiB is "
                                         "held by other processes: at most %g passes the "
                                         "start-up check, and that leaves %.2f GiB, less than "
                                         "weights %.2f + activation %.2f + non-torch %.2f GiB "
                                         "plus one request's KV cache. ",
                                         (double)others / GIB_D, u_max,
                                         u_max * (double)f->total / GIB_D,
                                         (double)o->weights / GIB_D, (double)o->act / GIB_D,
                                         (double)o->nt / GIB_D);
        if (ok) {
            char *sum = fit_summary(&t, &g);
            add_rec(res, "free_memory",
                    hbm_xasprintf("%sFree the %.2f GiB held%s (hbmctl doctor shows the "
                                  "holder, hbmctl clean ends an orphan safely); then "
                                  "--gpu-memory-utilization %g fits with max-model-len %lld: "
                                  "%s.%s",
                                  lead, (double)others / GIB_D, who[0] ? who : " by another process",
                                  g.util, (long long)g.mml, sum,
                                  some_util ? " Until then a lower --gpu-memory-utilization "
                                              "starts too, with a smaller KV cache (below)."
                                            : ""),
                    hbm_xasprintf("%s", g.mml < f->mml ? "a shorter context than asked"
                                                       : "nothing, once the other process is gone"),
                    g.mml < f->mml ? hbm_xasprintf("--max-model-len %lld", (long long)g.mml)
                                   : hbm_xstrdup(""),
                    plan_flag_line(v, &g, v->in->kv_cache_dtype));
            free(sum);
        }
        free(lead);
    }

    /* 2. more devices; not when lowering the utilisation alone passes the check and fits */
    bool util_alone = false;
    if (o->precheck_fail && u_max >= 0.01) {
        g = *f;
        g.util = u_max;
        plan_evaluate(c, &g, &t);
        util_alone = t.fits;
    }
    for (int64_t tp = f->tp * 2; !util_alone && tp <= 64 && res->nrecs < 16; tp *= 2) {
        if (m->num_heads % tp)
            continue;
        g = *f;
        g.tp = tp;
        if (o->precheck_fail && g.util > u_max)
            g.util = u_max;
        if (g.util < 0.01)
            break;
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
                              others ? ", each with as much free memory as this one" : "",
                              g.mml < f->mml ? ", and a shorter context" : ""),
                tp_flags(&g, f), plan_flag_line(v, &g, v->in->kv_cache_dtype));
        free(sum);
        break;
    }

    /* 3. shorter context */
    if (!o->precheck_fail && !o->no_kv && !o->oom && o->mml_fail && o->mml_fit > 0) {
        g = *f;
        g.mml = o->mml_fit;
        plan_evaluate(c, &g, &t);
        if (t.fits) {
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
    }

    /* 4./5. smaller profile run: fewer sequences, then fewer batched tokens */
    if (!o->precheck_fail && !o->oom && (o->no_kv || o->mml_fail || o->mamba_fail)) {
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
                    hbm_xasprintf("%s %lld: the profile run's peak activation drops to %.2f GiB; "
                                  "%s.",
                                  flag, (long long)best, (double)t.act / GIB_D, sum),
                    hbm_xstrdup(pass == 0 ? "fewer requests served at once"
                                          : "slower prefill of long prompts (chunked)"),
                    hbm_xasprintf("%s %lld", flag, (long long)best), plan_flag_line(v, &g, v->in->kv_cache_dtype));
            free(sum);
        }
    }

    /* 6. utilisation */
    if (!o->fits && !o->oom) {
        double chosen = -1;
        if (o->precheck_fail) {
            g = *f;
            g.util = u_max;
            plan_evaluate(c, &g, &t);
            if (t.fits && u_max >= 0.01)
                chosen = u_max;
        } else {
            for (double u = floor2(f->util) + 0.01; u <= u_max + 1e-9 && u <= 1.0 + 1e-9; u += 0.01) {
                g = *f;
                g.util = round(u * 100) / 100;
                plan_evaluate(c, &g, &t);
                if (t.fits) {
                    chosen = g.util;
                    break;
                }
            }
        }
        if (chosen > 0) {
            g = *f;
            g.util = chosen;
            plan_evaluate(c, &g, &t);
            char *sum = fit_summary(&t, &g);
            add_rec(res, "gpu_memory_utilization",
                    hbm_xasprintf("--gpu-memory-utilization %g: %s.", chosen, sum),
                    hbm_xasprintf(chosen < f->util ? "a smaller KV cache (%.2f GiB per rank)"
                                                   : "%.2f GiB more of the device, none left to "
                                                     "other processes",
                                  chosen < f->util ? (double)t.avail / GIB_D
                                                   : (chosen - f->util) * (double)f->total / GIB_D),
                    hbm_xasprintf("--gpu-memory-utilization %g", chosen),
                    plan_flag_line(v, &g, v->in->kv_cache_dtype));
            free(sum);
        }
    }

    /* 7. a one-byte KV cache */
    if (!o->precheck_fail && !o->oom && !o->no_kv && o->mml_fail && f->kvb > 1) {
        g = *f;
        g.kvb = 1;
        plan_evaluate(c, &g, &t);
        if (t.fits) {
            char *sum = fit_summary(&t, &g);
            add_rec(res, "kv_cache_dtype",
                    hbm_xasprintf("--kv-cache-dtype fp8: half the bytes per token; %s.", sum),
                    hbm_xstrdup("KV cache precision (fp8)"), hbm_xstrdup("--kv-cache-dtype fp8"),
                    plan_flag_line(v, &g, "fp8"));
            free(sum);
        }
    }
}
