/* explain's report for people: each finding with its cause, remedies, the planner's figures
 * and the live checks; the log's structure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "render_explain.h"
#include "wrap.h"

static void figure(FILE *f, char *line)
{
    cli_wrap_after(f, 6, "- ", line);
    free(line);
}

/* Each remedy's value re-planned, or why there is none. */
static void explain_fixes(FILE *f, const hbm_preflight_figures *fig)
{
    char s[32], g[32];
    const hbm_preflight_seqs_fix *q = &fig->seqs;
    if (q->max_num_seqs <= 0)
        figure(f, hbm_xstrdup("--max-num-seqs: no smaller value is enough; the profile run "
                              "already counted the sampler, so the KV cache takes what a "
                              "smaller one saves"));
    else
        figure(f, hbm_xasprintf("--max-num-seqs %lld: the sampler needs %s%s %s more stays free "
                                "beside it; the KV cache keeps %lld tokens",
                                (long long)q->max_num_seqs,
                                hbm_fmt_size(s, sizeof s, q->sampler_bytes),
                                q->absorbed ? ", but the KV cache takes what it saves (the "
                                              "profile run counted the sampler): only"
                                            : " and",
                                hbm_fmt_size(g, sizeof g, q->gained_bytes > 0 ? q->gained_bytes : 0),
                                (long long)q->kv_cache_tokens));
    const hbm_preflight_util_fix *u = &fig->util;
    if (isnan(u->gpu_memory_utilization))
        figure(f, hbm_xstrdup("--gpu-memory-utilization: no lower value leaves that much "
                              "(or --kv-cache-memory-bytes sizes the cache)"));
    else
        figure(f, hbm_xasprintf("--gpu-memory-utilization %.2f: %s free beside the sampler; the "
                                "KV cache keeps %lld tokens",
                                u->gpu_memory_utilization, hbm_fmt_size(s, sizeof s, u->free_bytes),
                                (long long)u->kv_cache_tokens));
}

/* The planner's figures for the finding, as items under it; nothing when it has none. */
static void figures(FILE *f, const hbm_preflight_figures *fig)
{
    if (!fig->sized)
        return;
    fprintf(f, "    the planner's figures for this launch:\n");
    if (fig->skipped) {
        figure(f, hbm_xasprintf("no figures: %s", fig->skipped));
        return;
    }
    const hbm_plan_result *r = &fig->plan;
    char s[32], h[32], k[32], d[32];
    int64_t headroom = fig->headroom_bytes, need = r->sampler_bytes;
    figure(f, hbm_xasprintf("the sampler's dummy run over %lld requests needs %s (the logits "
                            "of a %lld-entry vocabulary, its sorting buffers, the hidden "
                            "states); after the KV cache (%s, %lld tokens) and the graphs, "
                            "%s stays free for it",
                            (long long)r->sampler_rows, hbm_fmt_size(s, sizeof s, need),
                            (long long)r->model.vocab_size,
                            hbm_fmt_size(k, sizeof k, r->kv_cache_bytes),
                            (long long)r->kv_cache_tokens,
                            hbm_fmt_size(h, sizeof h, headroom > 0 ? headroom : 0)));
    if (fig->predicted)
        figure(f, hbm_xasprintf("short by %s: the plan predicts this failure%s",
                                hbm_fmt_size(d, sizeof d, need - headroom),
                                r->graph_outside_bytes > 0
                                    ? " (the graphs are captured outside the budget)"
                                    : ""));
    else
        figure(f, hbm_xstrdup("the plan leaves room for it: the memory went to what the plan "
                              "does not see (another process on the device since start-up, "
                              "fragmentation); halving the sampler's need:"));
    explain_fixes(f, fig);
}

size_t cli_explain_tail(const hbm_explain_report *rep, int indent, uint64_t before)
{
    size_t shown = 0;
    for (size_t k = 0; k < rep->ntail; k++)
        if (rep->tail[k].line < before) {
            char lead[32];
            snprintf(lead, sizeof lead, "%llu: ", (unsigned long long)rep->tail[k].line);
            cli_wrap_after(stdout, indent, lead, rep->tail[k].text);
            shown++;
        }
    return shown;
}

/* A summary's cause: the finding that is, or the error lines before it. */
static void root_cause(const hbm_explain_report *rep, size_t idx)
{
    long k = hbm_explain_root_cause(rep, idx);
    if (k >= 0) {
        const hbm_explain_finding *c = &rep->findings[k];
        char why[200];
        snprintf(why, sizeof why, "see [%ld] %s at line %llu %s", k + 1, c->sig->id,
                 (unsigned long long)c->line, (size_t)k < idx ? "above" : "below");
        cli_wrap_after(stdout, 4, "root cause: ", why);
        return;
    }
    printf("    root cause: no known failure before it; error lines before it:\n");
    if (!cli_explain_tail(rep, 6, rep->findings[idx].line))
        printf("      (none in the log)\n");
}

void cli_explain_finding(const hbm_explain_report *rep, size_t idx,
                         const hbm_preflight_figures *fig, bool color)
{
    const hbm_explain_finding *f = &rep->findings[idx];
    const char *c = "", *r = "";
    if (color) {
        c = cli_sgr(strcmp(f->sig->severity, "error") == 0 ? 31 : 33);
        r = CLI_RESET;
    }
    printf("[%zu] %s%s%s %s\n", idx + 1, c, strcmp(f->sig->severity, "error") ? "WARNING" : "ERROR",
           r, f->sig->id);
    cli_wrap_after(stdout, 4, "", f->sig->title);
    if (f->count > 1)
        printf("    line %llu (%llu times, last at line %llu):\n", (unsigned long long)f->line,
               (unsigned long long)f->count, (unsigned long long)f->last_line);
    else
        printf("    line %llu:\n", (unsigned long long)f->line);
    char shown[420];
    size_t tl = strlen(f->text);
    snprintf(shown, sizeof shown, "%.400s%s", f->text, tl > 400 ? " ..." : "");
    cli_wrap_after(stdout, 6, "", shown);
    if (f->detail) {
        char lead[48];
        snprintf(lead, sizeof lead, "what failed (line %llu): ", (unsigned long long)f->detail_line);
        cli_wrap_after(stdout, 4, lead, f->detail);
    }
    cli_wrap_after(stdout, 4, "cause: ", f->sig->cause);
    if (f->sig->wrapper)
        root_cause(rep, idx);
    if (f->nmeaning) {
        printf("    what the numbers say:\n");
        for (size_t k = 0; k < f->nmeaning; k++)
            cli_wrap_after(stdout, 6, "- ", f->meaning[k]);
    }
    if (f->nremedies) {
        printf("    remedies, in order:\n");
        for (size_t k = 0; k < f->nremedies; k++) {
            char lead[24];
            snprintf(lead, sizeof lead, "%zu. ", k + 1);
            cli_wrap_after(stdout, 6, lead, f->remedies[k]);
        }
    }
    figures(stdout, fig);
    if (f->live) {
        json_t *src = json_object_get(f->live, "source");
        printf("    now (%s):\n", json_string_value(src) ? json_string_value(src) : "live");
        for (size_t k = 0; k < f->nlive_lines; k++)
            cli_wrap_after(stdout, 6, "- ", f->live_lines[k]);
    }
    printf("\n");
}

void cli_explain_structure(const hbm_explain_report *rep)
{
    const hbm_explain_structure *st = &rep->structure;
    char buf[400] = "";
    size_t n = 0;
    if (st->engine[0])
        n += (size_t)snprintf(buf, sizeof buf, "%s%s%s; ", st->engine, st->version[0] ? " " : "",
                              st->version);
    for (int p = 0, k = 0; p < HBM_EXPLAIN_PHASES && n < sizeof buf; p++)
        if (st->phase_line[p])
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s (line %llu)", k++ ? ", " : "phases: ",
                                  hbm_explain_phase_name(p), (unsigned long long)st->phase_line[p]);
    if (buf[0])
        cli_wrap_after(stdout, 0, "log: ", buf);
    if (!st->error)
        return;
    char *what = hbm_xasprintf("failed in phase %s: %s (line %llu)", hbm_explain_phase_name(st->phase),
                               st->error, (unsigned long long)st->error_line);
    cli_wrap_from(stdout, what, 0, 2, CLI_WIDTH, true);
    free(what);
    if (st->exit_text && st->exit_line != st->error_line) {
        char how[64];
        if (st->signal)
            snprintf(how, sizeof how, "killed by signal %d", st->signal);
        else
            snprintf(how, sizeof how, "exit code %d", st->exit_code);
        char *line = hbm_xasprintf("%s at line %llu: %s", how, (unsigned long long)st->exit_line,
                                   st->exit_text);
        cli_wrap_after(stdout, 0, "and: ", line);
        free(line);
    }
    if (hbm_explain_report_known(rep))
        return; /* the findings below carry their own remedies */
    const char *const *steps;
    size_t ns = hbm_explain_phase_steps(st->phase, &steps);
    printf("next steps for a failure in this phase:\n");
    for (size_t k = 0; k < ns; k++) {
        char num[24];
        snprintf(num, sizeof num, "%zu. ", k + 1);
        cli_wrap_after(stdout, 2, num, steps[k]);
    }
}
