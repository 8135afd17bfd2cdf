/* explain's findings put to the planner, and its live checks (include/hbm/preflight.h):
 * the log's launch re-planned on the device named or this host's, each remedy's value
 * re-planned. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hbm/host.h"
#include "hbm/preflight.h"
#include "hbm/util.h"

/* The launch planned, as the log and the options give it. */
typedef struct launch {
    hbm_plan_input in;
    char **words; /* the log's launch, owned */
    int nwords;
} launch;

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
    if (hbm_plan_device_memory(d->name, plat, obs->has_host && obs->host.wsl2,
                               d->memory_total_bytes, d->memory_used_bytes, &dm, &err) < 0)
        return hbm_xasprintf("this host's device: %s; give --device NAME or --mem SIZE",
                             err.msg);
    l->in.device_name = d->name[0] ? d->name : "device";
    l->in.mem_total_bytes = dm.total_bytes;
    l->in.large_device = dm.large_device;
    l->in.platform = plat;
    return NULL;
}

/* Fills l from the log's facts and the options; returns NULL or why it cannot (owned). */
static char *launch_setup(const hbm_explain_report *rep, const hbm_preflight_explain_opts *o,
                          const hbm_obs *live, launch *l)
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
    if (l->in.mem_total_bytes <= 0 && !o->device && live && live->ndevs > 0)
        return live_device(live, l);
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

/* The largest --max-num-seqs below rows that passes (hbm_preflight_seqs_fix); 0 if none. */
static int64_t seqs_search(const launch *l, int64_t rows, bool predicted, int64_t half)
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

static void fix_seqs(const launch *l, hbm_preflight_figures *f)
{
    const hbm_plan_result *r = &f->plan;
    int64_t margin = f->headroom_bytes - r->sampler_bytes;
    int64_t m = seqs_search(l, r->sampler_rows, f->predicted, r->sampler_bytes / 2);
    replan p;
    if (m <= 0 || replan_at(l, m, NAN, &p) < 0)
        return;
    int64_t gain = p.headroom - p.need - margin;
    /* the profile run counted the sampler: a smaller one mostly grows the KV cache */
    f->seqs = (hbm_preflight_seqs_fix){m, p.need, gain, p.kv_tokens,
                                       gain * 10 < r->sampler_bytes - p.need};
}

/* The utilisation that leaves `freed` more outside the budget, re-planned. */
static void fix_util(const launch *l, int64_t freed, hbm_preflight_figures *f)
{
    const hbm_plan_result *r = &f->plan;
    double u = r->gpu_memory_utilization -
               ceil((double)freed / (double)r->total_bytes * 100.0 - 1e-9) / 100.0;
    replan p;
    if (u < 0.01 || l->in.kv_cache_memory_bytes > 0 || replan_at(l, 0, u, &p) < 0)
        return;
    f->util = (hbm_preflight_util_fix){u, p.headroom - p.need, p.kv_tokens};
}

static void sampler_figures(const hbm_explain_finding *fd, const hbm_explain_report *rep,
                            const hbm_preflight_explain_opts *o, const hbm_obs *live,
                            hbm_preflight_figures *f)
{
    launch l = {0};
    f->sized = true;
    f->util.gpu_memory_utilization = NAN;
    char *why = launch_setup(rep, o, live, &l);
    const hbm_explain_num *req = hbm_explain_finding_num(fd, "requests");
    if (!why && l.in.max_num_seqs <= 0 && req && !isnan(req->value))
        l.in.max_num_seqs = (int64_t)req->value; /* the dummy requests are max_num_seqs */
    hbm_err err = {{0}};
    if (!why && hbm_plan_run(&l.in, &f->plan, &err) < 0)
        why = hbm_xasprintf("the planner could not plan it: %s", err.msg);
    if (!why && f->plan.kv_cache_bytes <= 0)
        why = hbm_xstrdup("the plan finds no KV cache at these flags (hbmctl plan says why)");
    if (why) {
        f->skipped = why;
    } else {
        f->model = hbm_xstrdup(l.in.model_path);
        f->headroom_bytes = warmup_headroom(&f->plan);
        int64_t need = f->plan.sampler_bytes;
        f->predicted = f->headroom_bytes < need;
        fix_seqs(&l, f);
        fix_util(&l, f->predicted ? need - f->headroom_bytes : need / 2, f);
    }
    hbm_plan_argv_free(l.words, l.nwords);
}

static bool sized(const hbm_explain_finding *f)
{
    return !strcmp(f->sig->id, "vllm_sampler_warmup_oom");
}

/* Whether the planner has a finding of rep to size and no device given: this host's
 * devices would answer. */
static bool plan_wants_live(const hbm_explain_report *rep, const hbm_preflight_explain_opts *o)
{
    if (o->device || o->mem != HBM_UNKNOWN)
        return false;
    for (size_t i = 0; i < rep->nfindings; i++)
        if (sized(&rep->findings[i]))
            return true;
    return false;
}

/* Observes the host for the live checks; returns the source's words or NULL (with a note). */
static const char *observe_live(const hbm_preflight_explain_opts *o, hbm_obs *obs, char *note,
                                size_t nnote, char *src, size_t nsrc)
{
    hbm_err err = {{0}};
    if (o->src->snapshot) {
        if (hbm_observe(obs, o->src, &err) < 0) {
            snprintf(note, nnote, "live checks skipped: %s", err.msg);
            return NULL;
        }
        snprintf(src, nsrc, "snapshot %s", o->src->snapshot);
        return src;
    }
    if (hbm_observe(obs, o->src, &err) == 0 && obs->ndevs > 0) {
        snprintf(src, nsrc, "this host, %s backend", obs->backend);
        return src;
    }
    hbm_obs_free(obs);
    if (o->live == HBM_PREFLIGHT_LIVE_AUTO) {
        snprintf(note, nnote, "live checks skipped: no device backend here (%s); --live checks "
                              "this host's processes and ports anyway", err.msg[0] ? err.msg : "no devices");
        return NULL;
    }
    hbm_obs_init(obs);
    hbm_host_opts hopts = {.root = o->src->root ? o->src->root : hbm_host_env_root()};
    hbm_err herr = {{0}};
    if (hbm_host_scan(&obs->host, &hopts, &herr) < 0) {
        snprintf(note, nnote, "live checks skipped: host facts: %s", herr.msg);
        return NULL;
    }
    obs->has_host = true;
    snprintf(src, nsrc, "this host, host facts only: no device backend");
    return src;
}

void hbm_preflight_explain(hbm_explain_report *rep, const hbm_catalog *cat,
                           const hbm_preflight_explain_opts *o, hbm_preflight_explained *out)
{
    memset(out, 0, sizeof *out);
    hbm_preflight_live_mode mode = o->live;
    if (o->src->snapshot && mode == HBM_PREFLIGHT_LIVE_AUTO)
        mode = HBM_PREFLIGHT_LIVE_ON;
    hbm_obs obs;
    hbm_obs_init(&obs);
    const char *source = NULL;
    if (mode != HBM_PREFLIGHT_LIVE_OFF &&
        (hbm_explain_report_wants_live(rep) || plan_wants_live(rep, o))) {
        char src[300];
        hbm_preflight_explain_opts observed = *o;
        observed.live = mode;
        source = observe_live(&observed, &obs, out->live_note, sizeof out->live_note, src,
                              sizeof src);
        if (source)
            hbm_explain_live_apply(rep, cat, &obs,
                                   o->src->snapshot ? NULL
                                   : o->src->root   ? o->src->root
                                                    : hbm_host_env_root(),
                                   source);
    }
    out->nfigures = rep->nfindings;
    out->figures = hbm_xcalloc(rep->nfindings ? rep->nfindings : 1, sizeof *out->figures);
    for (size_t i = 0; i < rep->nfindings; i++)
        if (sized(&rep->findings[i]))
            sampler_figures(&rep->findings[i], rep, o, source ? &obs : NULL, &out->figures[i]);
    hbm_obs_free(&obs);
}

static json_t *figures_json(const hbm_preflight_figures *f)
{
    const hbm_plan_result *r = &f->plan;
    if (f->skipped)
        return json_pack("{s:s}", "skipped", f->skipped);
    const char *line = r->launch_line ? r->launch_line : "";
    json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:I, s:b}", "model",
                          f->model, "device", r->device_name, "vllm_version", r->vllm_version,
                          "sampler_rows", (json_int_t)r->sampler_rows, "sampler_bytes",
                          (json_int_t)r->sampler_bytes, "kv_cache_bytes",
                          (json_int_t)r->kv_cache_bytes, "kv_cache_tokens",
                          (json_int_t)r->kv_cache_tokens, "launch_line", line, "vllm_args", line,
                          "headroom_bytes", (json_int_t)f->headroom_bytes, "predicted",
                          f->predicted);
    if (f->seqs.max_num_seqs > 0)
        json_object_set_new(j, "max_num_seqs_fix",
                            json_pack("{s:I, s:I, s:I}", "max_num_seqs",
                                      (json_int_t)f->seqs.max_num_seqs, "sampler_bytes",
                                      (json_int_t)f->seqs.sampler_bytes, "kv_cache_tokens",
                                      (json_int_t)f->seqs.kv_cache_tokens));
    if (!isnan(f->util.gpu_memory_utilization))
        json_object_set_new(j, "gpu_memory_utilization_fix",
                            json_pack("{s:f, s:I}", "gpu_memory_utilization",
                                      f->util.gpu_memory_utilization, "kv_cache_tokens",
                                      (json_int_t)f->util.kv_cache_tokens));
    return j;
}

json_t *hbm_preflight_explain_json(const hbm_explain_report *rep,
                                   const hbm_preflight_explained *ex, const char *log,
                                   const char *catalog)
{
    json_t *j = hbm_explain_report_json(rep);
    json_t *found = json_object_get(j, "findings");
    for (size_t i = 0; i < ex->nfigures; i++)
        if (ex->figures[i].sized)
            json_object_set_new(json_array_get(found, i), "plan", figures_json(&ex->figures[i]));
    json_object_set_new(j, "log", json_string(log));
    json_object_set_new(j, "catalog", json_string(catalog));
    json_object_set_new(j, "live_note",
                        ex->live_note[0] ? json_string(ex->live_note) : json_null());
    return j;
}

void hbm_preflight_explained_free(hbm_preflight_explained *ex)
{
    for (size_t i = 0; ex->figures && i < ex->nfigures; i++) {
        free(ex->figures[i].skipped);
        free(ex->figures[i].model);
        if (ex->figures[i].sized)
            hbm_plan_result_free(&ex->figures[i].plan);
    }
    free(ex->figures);
    memset(ex, 0, sizeof *ex);
}
