/* Planning backwards: the cheapest launch that serves a target of N concurrent requests of L
 * tokens. Every candidate is planned forward with hbm_plan_run, so the answer is what the
 * forward planner says of its own flags, and so is the proof that one step cheaper fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

#define SERVE_MAX_TP HBM_PLAN_SERVE_MAX_TP
#define SERVE_MAX_PP HBM_PLAN_SERVE_MAX_PP
#define SERVE_MAX_DEVICES (SERVE_MAX_TP * SERVE_MAX_PP)
#define SERVE_MAX_CENTS 99 /* 0.99: vLLM accepts 1.0, which leaves the device nothing */

typedef struct serve_ctx {
    const hbm_plan_input *in;
    int64_t heads, layers;
    int cap; /* highest utilisation (hundredths) that passes the free-memory check */
} serve_ctx;

typedef struct layout {
    int64_t tp, pp;
} layout;

static bool has_error(const hbm_plan_result *r, const char *kind)
{
    for (size_t i = 0; i < r->nerrors; i++)
        if (!strcmp(r->errors[i].kind, kind))
            return true;
    return false;
}

/* Plans one launch forward; *serves says it starts, holds N requests of L tokens and leaves
 * room for the graphs captured after the budget. */
static int try_launch(const serve_ctx *s, layout l, int cents, hbm_plan_result *r, bool *serves,
                      hbm_err *err)
{
    hbm_plan_input in = *s->in;
    in.tensor_parallel_size = l.tp;
    in.pipeline_parallel_size = l.pp;
    in.gpu_memory_utilization = cents / 100.0;
    if (in.max_num_seqs < in.serve_requests)
        in.max_num_seqs = in.serve_requests; /* fewer sequences than requests cannot serve */
    if (hbm_plan_run(&in, r, err) < 0)
        return -1;
    int64_t room = in.mem_free_bytes >= 0 ? in.mem_free_bytes : in.mem_total_bytes;
    *serves = r->fits && r->max_concurrency + 1e-9 >= (double)in.serve_requests &&
              (double)r->requested_bytes + (double)r->graph_outside_bytes <= (double)room;
    return 0;
}

/* Concurrency of one launch (0 when it does not start), or -1 on error; *graphs (may be
 * NULL) the graph memory captured after the budget. */
static double concurrency_at(const serve_ctx *s, layout l, int cents, bool *serves,
                             int64_t *graphs, hbm_err *err)
{
    hbm_plan_result r;
    if (try_launch(s, l, cents, &r, serves, err) < 0) {
        hbm_plan_result_free(&r);
        return -1;
    }
    double c = r.fits ? r.max_concurrency : 0;
    if (graphs)
        *graphs = r.graph_outside_bytes;
    hbm_plan_result_free(&r);
    return c;
}

/* The highest utilisation of a layout: the free-memory check's, less the graphs captured
 * after the budget (older releases), which must find room too. */
static int layout_cap(const serve_ctx *s, layout l, hbm_err *err)
{
    bool serves;
    int64_t graphs = 0;
    if (concurrency_at(s, l, s->cap, &serves, &graphs, err) < 0)
        return -1;
    int64_t room = s->in->mem_free_bytes >= 0 ? s->in->mem_free_bytes : s->in->mem_total_bytes;
    double f = floor((double)(room - graphs) * 100 / (double)s->in->mem_total_bytes);
    return f < s->cap ? (f > 0 ? (int)f : 0) : s->cap;
}

/* The layouts by cost: fewest devices, and among equal counts the larger TP first. */
static size_t layouts(const serve_ctx *s, layout *out)
{
    size_t n = 0;
    for (int64_t d = 1; d <= SERVE_MAX_DEVICES; d++)
        for (int64_t tp = SERVE_MAX_TP; tp >= 1; tp /= 2) {
            int64_t pp = d / tp;
            if (d % tp || pp > SERVE_MAX_PP || pp > s->layers || s->heads % tp)
                continue;
            if ((s->in->tensor_parallel_size > 0 && tp != s->in->tensor_parallel_size) ||
                (s->in->pipeline_parallel_size > 0 && pp != s->in->pipeline_parallel_size) ||
                (plan_engine_of(s->in->engine)->no_pipeline && pp > 1))
                continue;
            out[n++] = (layout){tp, pp};
        }
    return n;
}

/* The highest utilisation the free-memory check lets through (0 when none). */
static int util_cap(const serve_ctx *s, hbm_err *err)
{
    int cents = SERVE_MAX_CENTS;
    if (s->in->mem_free_bytes >= 0) {
        double f = floor((double)s->in->mem_free_bytes * 100 / (double)s->in->mem_total_bytes);
        cents = f < cents ? (int)f : cents;
    }
    for (; cents > 0; cents--) {
        hbm_plan_result r;
        bool serves;
        int rc = try_launch(s, (layout){1, 1}, cents, &r, &serves, err);
        bool refused = rc == 0 && has_error(&r, "free_memory");
        hbm_plan_result_free(&r);
        if (rc < 0)
            return -1;
        if (!refused)
            return cents;
    }
    return 0;
}

/* The lowest utilisation at which layout l serves, knowing it serves at cap. */
static int lowest_util(const serve_ctx *s, layout l, int cap, hbm_err *err)
{
    int lo = 1, hi = cap;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        bool serves;
        if (concurrency_at(s, l, mid, &serves, NULL, err) < 0)
            return -1;
        if (serves)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The forward plan's flags, one word each: from the first option after the launcher. */
static void split_flags(hbm_plan_launch *lw, const char *line)
{
    const char *p = !line ? NULL : !strncmp(line, "--", 2) ? line : strstr(line, " --");
    while (p && *p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        lw->flags = hbm_xrealloc(lw->flags, (lw->nflags + 1) * sizeof *lw->flags);
        lw->flags[lw->nflags++] = hbm_xasprintf("%.*s", (int)n, p);
        p += n;
    }
}

static int check_target(const hbm_plan_input *in, hbm_err *err)
{
    const plan_engine *pe = plan_engine_of(in->engine);
    if (!pe || !pe->util_flag)
        return hbm_err_set(err, "--serve: %s has no memory share for it to choose",
                           hbm_plan_engine_name(in->engine));
    if (in->serve_requests <= 0)
        return hbm_err_set(err, "--serve: give the number of concurrent requests (at least 1)");
    if (in->max_model_len <= 0)
        return hbm_err_set(err, "--serve needs %s: the tokens of each request", pe->len_flag);
    if (in->kv_cache_memory_bytes >= 0 || !isnan(in->gpu_memory_utilization))
        return hbm_err_set(err, "--serve chooses %s: drop %s", pe->util_flag,
                           in->kv_cache_memory_bytes >= 0 ? "--kv-cache-memory-bytes"
                                                          : pe->util_flag);
    if (in->mem_total_bytes <= 0)
        return hbm_err_set(err, "device memory unknown: give --device NAME or --mem SIZE");
    return 0;
}

/* Walks the layouts by cost; *best is the first that serves (found), else the one with the
 * most concurrency at the cap; *fewer the most any layout with fewer devices reached. */
static int search(const serve_ctx *s, layout *best, int *cap, bool *found, double *fewer,
                  hbm_err *err)
{
    layout *all = hbm_xcalloc(SERVE_MAX_DEVICES * 5, sizeof *all);
    size_t n = layouts(s, all);
    double most = -1, below = NAN, here = NAN;
    *found = false;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && all[i].tp * all[i].pp > all[i - 1].tp * all[i - 1].pp) {
            below = isnan(below) || here > below ? here : below;
            here = NAN;
        }
        bool serves = false;
        int top = s->cap > 0 ? layout_cap(s, all[i], err) : 0;
        double c = top > 0 ? concurrency_at(s, all[i], top, &serves, NULL, err) : 0;
        if (top < 0 || c < 0) {
            free(all);
            return -1;
        }
        if (serves || c > most) {
            most = c;
            *best = all[i];
            *cap = top > 0 ? top : 1;
        }
        if (serves) {
            *found = true;
            break;
        }
        here = isnan(here) || c > here ? c : here;
    }
    *fewer = below;
    free(all);
    if (n == 0)
        return hbm_err_set(err, "--serve: no tensor-parallel size up to %d divides the %lld "
                                "attention heads%s",
                           SERVE_MAX_TP, (long long)s->heads,
                           s->in->tensor_parallel_size > 0 ? " as given" : "");
    return 0;
}

int hbm_plan_serve(const hbm_plan_input *in, hbm_plan_result *r, hbm_err *err)
{
    memset(r, 0, sizeof *r);
    /* the search walks vLLM's layouts (TP x PP) and utilisations */
    if (check_target(in, err) < 0 || !in->model_path)
        return in->model_path ? -1 : hbm_err_set(err, "no model: give a model directory");
    hbm_plan_model m;
    hbm_plan_model_init(&m);
    if (hbm_plan_model_load(in->model_path, &m, err) < 0) {
        hbm_plan_model_free(&m);
        return -1;
    }
    serve_ctx s = {.in = in, .heads = m.num_heads > 0 ? m.num_heads : 1, .layers = m.num_layers};
    hbm_plan_model_free(&m);
    s.cap = util_cap(&s, err);
    layout best = {1, 1};
    int cap = 1;
    bool found;
    double fewer;
    if (s.cap < 0 || search(&s, &best, &cap, &found, &fewer, err) < 0)
        return -1;
    int cents = found ? lowest_util(&s, best, cap, err) : cap;
    double lower = NAN;
    bool serves = false;
    if (cents < 0 || (found && cents > 1 &&
                      (lower = concurrency_at(&s, best, cents - 1, &serves, NULL, err)) < 0))
        return -1;
    if (try_launch(&s, best, cents, r, &serves, err) < 0)
        return -1;
    hbm_plan_launch *lw = &r->launch;
    lw->asked = true;
    lw->serves = found && serves;
    lw->requests = in->serve_requests;
    lw->max_model_len = in->max_model_len;
    lw->tensor_parallel_size = best.tp;
    lw->pipeline_parallel_size = best.pp;
    lw->gpu_memory_utilization = cents / 100.0;
    lw->max_concurrency = r->fits ? r->max_concurrency : 0;
    lw->fewer_devices_concurrency = fewer;
    lw->lower_util_concurrency = lower;
    split_flags(lw, r->launch_line);
    return 0;
}
