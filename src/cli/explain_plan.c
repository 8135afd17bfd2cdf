/* The planner's figures for explain's findings. A vLLM log names its launch (the
 * "non-default args" line) and its release; with the model directory and the device, the
 * planner says what the failing step needed, what the launch left for it, and what each
 * remedy's flag value gives, every figure re-planned. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "explain_plan.h"
#include "hbm/plan.h"

/* The launch planned, as the log and the options give it. */
typedef struct launch {
    hbm_plan_input in;
    char **words; /* the log's launch, owned */
    int nwords;
} launch;

static void add_line(explain_plan_figures *f, char *line)
{
    f->lines = hbm_xrealloc(f->lines, sizeof *f->lines * (f->nlines + 1));
    f->lines[f->nlines++] = line;
}

static bool is_model_here(const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) < 0)
        return false;
    if (S_ISREG(st.st_mode))
        return true;
    char *cfg = hbm_xasprintf("%s/config.json", path);
    bool ok = S_ISDIR(st.st_mode) && stat(cfg, &st) == 0;
    free(cfg);
    return ok;
}

/* This host's first device as the framework sees it (the server is gone, so its free
 * memory then is not known); returns NULL or why not (owned). */
static char *live_device(const hbm_obs *obs, launch *l)
{
    const hbm_device *d = &obs->devs[0];
    hbm_plan_platform plat =
        d->vendor == HBM_VENDOR_ASCEND ? HBM_PLAN_PLATFORM_ASCEND : HBM_PLAN_PLATFORM_CUDA;
    hbm_plan_devmem dm;
    hbm_err err = {{0}};
    if (hbm_plan_device_memory(d->name, plat, d->memory_total_bytes, d->memory_used_bytes, &dm,
                               &err) < 0)
        return hbm_xasprintf("this host's device: %s; give --device NAME or --mem SIZE",
                             err.msg);
    l->in.device_name = d->name[0] ? d->name : "device";
    l->in.mem_total_bytes = dm.total_bytes;
    l->in.large_device = dm.large_device;
    l->in.platform = plat;
    return NULL;
}

/* Fills l from the log's facts and the options; returns NULL or why it cannot (owned). */
static char *launch_setup(const hbm_explain_report *rep, const explain_plan_opts *o, launch *l)
{
    hbm_plan_input_init(&l->in);
    hbm_err err = {{0}};
    const hbm_explain_fact *args = hbm_explain_report_fact(rep, "vllm_launch");
    if (args && (hbm_plan_argv_from_pydict(args->text, strlen(args->text), &l->words,
                                           &l->nwords, &err) < 0 ||
                 hbm_plan_args_from_argv(&l->in, l->nwords, l->words, &err) < 0))
        return hbm_xasprintf("the launch at line %llu could not be read: %s",
                             (unsigned long long)args->line, err.msg);
    if (o->nlaunch && hbm_plan_args_from_argv(&l->in, o->nlaunch, o->launch, &err) < 0)
        return hbm_xasprintf("the launch after '--': %s", err.msg);
    const char *named = l->in.model_path;
    if (o->model)
        l->in.model_path = o->model;
    if (!is_model_here(l->in.model_path))
        return named ? hbm_xasprintf("give --model DIR: the log's model \"%s\" is not a model "
                                     "directory here", named)
                     : hbm_xstrdup("give --model DIR: the log does not name its model");
    const hbm_explain_fact *ver = hbm_explain_report_fact(rep, "vllm_version");
    if (ver && !l->in.engine_version)
        l->in.engine_version = ver->text;
    /* the torch sampler's warm-up takes four times FlashInfer's */
    const hbm_explain_fact *smp = hbm_explain_report_fact(rep, "vllm_sampler");
    if (smp)
        l->in.vllm.sampler = strcmp(smp->text, "FlashInfer") ? HBM_PLAN_SAMPLER_TORCH
                                                        : HBM_PLAN_SAMPLER_FLASHINFER;
    if (o->device) {
        const hbm_plan_device *d = hbm_plan_device_find(o->device);
        if (!d)
            return hbm_xasprintf("--device: \"%s\" is not in the device table (hbmctl plan "
                                 "--list-devices); use --mem SIZE for others", o->device);
        l->in.device_name = d->name;
        l->in.mem_total_bytes = d->total_bytes;
        l->in.large_device = d->large_class;
        l->in.platform = d->platform;
    }
    if (o->mem != HBM_UNKNOWN) {
        l->in.mem_total_bytes = o->mem;
        l->in.large_device = l->in.large_device || o->mem >= 70 * HBM_GIB;
    }
    if (l->in.mem_total_bytes <= 0 && !o->device && o->live && o->live->ndevs > 0)
        return live_device(o->live, l);
    if (l->in.mem_total_bytes <= 0)
        return hbm_xstrdup("give --device NAME or --mem SIZE: the device's memory");
    return NULL;
}

/* Free device memory when the sampler is warmed up: the KV cache, the weights, memory
 * outside torch and the captured graphs are all in place by then. */
static int64_t warmup_headroom(const hbm_plan_result *r)
{
    int64_t free = r->free_bytes > 0 ? r->free_bytes : r->total_bytes;
    return free - r->weights_bytes - r->kv_cache_bytes - r->non_torch_bytes - r->graph_bytes -
           r->graph_outside_bytes;
}

/* One re-plan at other flags: what the sampler needs, what is left for it, the KV tokens. */
typedef struct replan {
    int64_t need, headroom, kv_tokens;
} replan;

static int replan_at(const launch *l, int64_t seqs, double util, replan *out)
{
    hbm_plan_input in = l->in;
    if (seqs > 0)
        in.max_num_seqs = seqs;
    if (!isnan(util))
        in.gpu_memory_utilization = util;
    hbm_plan_result r;
    hbm_err err = {{0}};
    int rc = hbm_plan_run(&in, &r, &err);
    if (rc == 0 && r.kv_cache_bytes <= 0)
        rc = -1;
    if (rc == 0)
        *out = (replan){r.sampler_bytes, warmup_headroom(&r), r.kv_cache_tokens};
    hbm_plan_result_free(&r);
    return rc;
}

/* The largest --max-num-seqs below rows that passes: with the failure predicted, the sampler
 * fits what is left; otherwise it needs at most half of what it does now. 0 when none. */
static int64_t seqs_fix(const launch *l, int64_t rows, bool predicted, int64_t half)
{
    int64_t lo = 0, hi = rows - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        replan p;
        bool ok = replan_at(l, mid, NAN, &p) == 0 &&
                  (predicted ? p.headroom >= p.need : p.need <= half);
        if (ok)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static void fix_seqs(const launch *l, const hbm_plan_result *r, bool predicted,
                     explain_plan_figures *f)
{
    int64_t margin = warmup_headroom(r) - r->sampler_bytes;
    int64_t m = seqs_fix(l, r->sampler_rows, predicted, r->sampler_bytes / 2);
    replan p;
    if (m <= 0 || replan_at(l, m, NAN, &p) < 0) {
        add_line(f, hbm_xstrdup("--max-num-seqs: no smaller value is enough; the profile run "
                                "already counted the sampler, so the KV cache takes what a "
                                "smaller one saves"));
        return;
    }
    char s[32], g[32];
    int64_t gain = p.headroom - p.need - margin;
    /* the profile run counted the sampler: a smaller one mostly grows the KV cache */
    bool absorbed = gain * 10 < r->sampler_bytes - p.need;
    add_line(f, hbm_xasprintf("--max-num-seqs %lld: the sampler needs %s%s %s more stays free "
                              "beside it; the KV cache keeps %lld tokens",
                              (long long)m, hbm_fmt_size(s, sizeof s, p.need),
                              absorbed ? ", but the KV cache takes what it saves (the profile "
                                         "run counted the sampler): only"
                                       : " and",
                              hbm_fmt_size(g, sizeof g, gain > 0 ? gain : 0),
                              (long long)p.kv_tokens));
    json_object_set_new(f->json, "max_num_seqs_fix",
                        json_pack("{s:I, s:I, s:I}", "max_num_seqs", (json_int_t)m,
                                  "sampler_bytes", (json_int_t)p.need, "kv_cache_tokens",
                                  (json_int_t)p.kv_tokens));
}

/* The utilisation that leaves `freed` more outside the budget, re-planned. */
static void fix_util(const launch *l, const hbm_plan_result *r, int64_t freed,
                     explain_plan_figures *f)
{
    double u = r->gpu_memory_utilization -
               ceil((double)freed / (double)r->total_bytes * 100.0 - 1e-9) / 100.0;
    replan p;
    if (u < 0.01 || l->in.kv_cache_memory_bytes > 0 || replan_at(l, 0, u, &p) < 0) {
        add_line(f, hbm_xstrdup("--gpu-memory-utilization: no lower value leaves that much "
                                "(or --kv-cache-memory-bytes sizes the cache)"));
        return;
    }
    char s[32];
    add_line(f, hbm_xasprintf("--gpu-memory-utilization %.2f: %s free beside the sampler; the "
                              "KV cache keeps %lld tokens",
                              u, hbm_fmt_size(s, sizeof s, p.headroom - p.need),
                              (long long)p.kv_tokens));
    json_object_set_new(f->json, "gpu_memory_utilization_fix",
                        json_pack("{s:f, s:I}", "gpu_memory_utilization", u, "kv_cache_tokens",
                                  (json_int_t)p.kv_tokens));
}

/* What the plan says of the headroom against the sampler, with both remedies' figures. */
static void sampler_verdict(const launch *l, const hbm_plan_result *r, explain_plan_figures *f)
{
    char s[32], h[32], k[32], d[32];
    int64_t headroom = warmup_headroom(r), need = r->sampler_bytes;
    add_line(f, hbm_xasprintf("the sampler's dummy run over %lld requests needs %s (the logits "
                              "of a %lld-entry vocabulary, its sorting buffers, the hidden "
                              "states); after the KV cache (%s, %lld tokens) and the graphs, "
                              "%s stays free for it",
                              (long long)r->sampler_rows, hbm_fmt_size(s, sizeof s, need),
                              (long long)r->model.vocab_size,
                              hbm_fmt_size(k, sizeof k, r->kv_cache_bytes),
                              (long long)r->kv_cache_tokens,
                              hbm_fmt_size(h, sizeof h, headroom > 0 ? headroom : 0)));
    bool predicted = headroom < need;
    if (predicted)
        add_line(f, hbm_xasprintf("short by %s: the plan predicts this failure%s",
                                  hbm_fmt_size(d, sizeof d, need - headroom),
                                  r->graph_outside_bytes > 0
                                      ? " (the graphs are captured outside the budget)"
                                      : ""));
    else
        add_line(f, hbm_xstrdup("the plan leaves room for it: the memory went to what the "
                                "plan does not see (another process on the device since "
                                "start-up, fragmentation); halving the sampler's need:"));
    json_object_set_new(f->json, "headroom_bytes", json_integer(headroom));
    json_object_set_new(f->json, "predicted", json_boolean(predicted));
    fix_seqs(l, r, predicted, f);
    fix_util(l, r, predicted ? need - headroom : need / 2, f);
}

static void sampler_figures(const hbm_explain_finding *fd, const explain_plan_opts *o,
                            const hbm_explain_report *rep, explain_plan_figures *f)
{
    launch l = {0};
    f->json = json_object();
    char *why = launch_setup(rep, o, &l);
    const hbm_explain_num *req = hbm_explain_finding_num(fd, "requests");
    if (!why && l.in.max_num_seqs <= 0 && req && !isnan(req->value))
        l.in.max_num_seqs = (int64_t)req->value; /* the dummy requests are max_num_seqs */
    hbm_plan_result r;
    memset(&r, 0, sizeof r);
    hbm_err err = {{0}};
    if (!why && hbm_plan_run(&l.in, &r, &err) < 0)
        why = hbm_xasprintf("the planner could not plan it: %s", err.msg);
    if (!why && r.kv_cache_bytes <= 0)
        why = hbm_xstrdup("the plan finds no KV cache at these flags (hbmctl plan says why)");
    if (why) {
        add_line(f, hbm_xasprintf("no figures: %s", why));
        json_object_set_new(f->json, "skipped", json_string(why));
        free(why);
    } else {
        json_object_set_new(f->json, "model", json_string(l.in.model_path));
        json_object_set_new(f->json, "device", json_string(r.device_name));
        json_object_set_new(f->json, "vllm_version", json_string(r.vllm_version));
        json_object_set_new(f->json, "sampler_rows", json_integer(r.sampler_rows));
        json_object_set_new(f->json, "sampler_bytes", json_integer(r.sampler_bytes));
        json_object_set_new(f->json, "kv_cache_bytes", json_integer(r.kv_cache_bytes));
        json_object_set_new(f->json, "kv_cache_tokens", json_integer(r.kv_cache_tokens));
        json_object_set_new(f->json, "launch_line", json_string(r.launch_line ? r.launch_line : ""));
        json_object_set_new(f->json, "vllm_args", json_string(r.launch_line ? r.launch_line : ""));
        sampler_verdict(&l, &r, f);
    }
    hbm_plan_result_free(&r);
    hbm_plan_argv_free(l.words, l.nwords);
}

static bool sized(const hbm_explain_finding *f)
{
    return !strcmp(f->sig->id, "vllm_sampler_warmup_oom");
}

bool explain_plan_wants_live(const hbm_explain_report *rep, const explain_plan_opts *o)
{
    if (o->device || o->mem != HBM_UNKNOWN)
        return false;
    for (size_t i = 0; i < rep->nfindings; i++)
        if (sized(&rep->findings[i]))
            return true;
    return false;
}

explain_plan_figures *explain_plan(const hbm_explain_report *rep, const explain_plan_opts *o)
{
    explain_plan_figures *figs = hbm_xcalloc(rep->nfindings ? rep->nfindings : 1, sizeof *figs);
    for (size_t i = 0; i < rep->nfindings; i++)
        if (sized(&rep->findings[i]))
            sampler_figures(&rep->findings[i], o, rep, &figs[i]);
    return figs;
}

void explain_plan_free(explain_plan_figures *figs, size_t n)
{
    for (size_t i = 0; figs && i < n; i++) {
        for (size_t k = 0; k < figs[i].nlines; k++)
            free(figs[i].lines[k]);
        free(figs[i].lines);
        json_decref(figs[i].json);
    }
    free(figs);
}
