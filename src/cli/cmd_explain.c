/* hbmctl explain: read a failing server's log and say what happened and what to do
 * (hbmctl(1)). The catalogue is data; this file only picks the inputs and prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "explain_plan.h"
#include "hbm/explain.h"
#include "wrap.h"

static const char about[] =
    "Reads a server log (vLLM, vllm-ascend, MindIE, torch_npu, CANN, HCCL, PyTorch, CUDA,\n"
    "NCCL) and, for each known failure, prints the first line that shows it (with its line\n"
    "number and how often it repeats), the cause, what the numbers in it mean, the remedies\n"
    "in the order to try, and what this host shows now. Logs are streamed (any size); ANSI\n"
    "colours and docker / Kubernetes timestamps are tolerated. Without LOG, standard input\n"
    "is read.\n";

/* Prints text wrapped to CLI_WIDTH with the given indent (first line after `lead`). */
static void wrap(const char *lead, int indent, const char *text)
{
    int col = printf("%*s%s", indent, "", lead);
    cli_wrap_from(stdout, text, col, col, CLI_WIDTH, true);
}

static void print_list(const hbm_catalog *cat, const char *path, bool json)
{
    if (json) {
        json_t *j = hbm_explain_catalog_json(cat);
        json_object_set_new(j, "catalog", json_string(path));
        cli_json_out(j);
        return;
    }
    cli_print_path(stdout, "catalogue: ", path, "");
    printf("\n%-32s %-8s %-7s %s\n", "ID", "KIND", "LEVEL", "TITLE / PRODUCTS");
    for (size_t i = 0; i < hbm_explain_catalog_size(cat); i++) {
        const hbm_sig *s = hbm_explain_catalog_get(cat, i);
        char lead[80];
        snprintf(lead, sizeof lead, "%-32s %-8s %-7s ", s->id, s->kind,
                 strcmp(s->kind, "failure") == 0 ? s->severity : "-");
        if (strlen(lead) > 50) { /* an id longer than its column: title on the next line */
            printf("%s\n", lead);
            wrap("", 50, s->title ? s->title : "");
        } else {
            wrap(lead, 0, s->title ? s->title : "");
        }
        if (s->nproducts) {
            char prods[400] = "";
            for (size_t k = 0; k < s->nproducts; k++)
                snprintf(prods + strlen(prods), sizeof prods - strlen(prods), "%s%s", k ? ", " : "",
                         s->products[k].name);
            wrap("", 50, prods);
        }
    }
}

static void print_finding(const hbm_explain_report *rep, size_t idx,
                          const explain_plan_figures *fig, bool color)
{
    const hbm_explain_finding *f = &rep->findings[idx];
    const char *c = "", *r = "";
    if (color) {
        c = cli_sgr(strcmp(f->sig->severity, "error") == 0 ? 31 : 33);
        r = CLI_RESET;
    }
    printf("[%zu] %s%s%s %s\n", idx + 1, c, strcmp(f->sig->severity, "error") ? "WARNING" : "ERROR",
           r, f->sig->id);
    wrap("", 4, f->sig->title);
    if (f->count > 1)
        printf("    line %llu (%llu times, last at line %llu):\n", (unsigned long long)f->line,
               (unsigned long long)f->count, (unsigned long long)f->last_line);
    else
        printf("    line %llu:\n", (unsigned long long)f->line);
    char shown[420];
    size_t tl = strlen(f->text);
    snprintf(shown, sizeof shown, "%.400s%s", f->text, tl > 400 ? " ..." : "");
    wrap("", 6, shown);
    wrap("cause: ", 4, f->sig->cause);
    if (f->sig->wrapper) {
        bool any = false;
        /* The cause comes before a summary, or in the block printed right after it. */
        for (size_t k = 0; k < rep->nfindings && !any; k++)
            if (!rep->findings[k].sig->wrapper &&
                (k < idx || rep->findings[k].line <= f->line + HBM_EXPLAIN_SUMMARY_BLOCK)) {
                char why[200];
                snprintf(why, sizeof why, "see [%zu] %s at line %llu %s", k + 1,
                         rep->findings[k].sig->id, (unsigned long long)rep->findings[k].line,
                         k < idx ? "above" : "below");
                wrap("root cause: ", 4, why);
                any = true;
                break;
            }
        if (!any) {
            printf("    root cause: no known failure before it; error lines before it:\n");
            size_t shown_n = 0;
            for (size_t k = 0; k < rep->ntail; k++)
                if (rep->tail[k].line < f->line) {
                    char lead[32];
                    snprintf(lead, sizeof lead, "%llu: ", (unsigned long long)rep->tail[k].line);
                    wrap(lead, 6, rep->tail[k].text);
                    shown_n++;
                }
            if (!shown_n)
                printf("      (none in the log)\n");
        }
    }
    if (f->nmeaning) {
        printf("    what the numbers say:\n");
        for (size_t k = 0; k < f->nmeaning; k++)
            wrap("- ", 6, f->meaning[k]);
    }
    if (f->nremedies) {
        printf("    remedies, in order:\n");
        for (size_t k = 0; k < f->nremedies; k++) {
            char lead[24];
            snprintf(lead, sizeof lead, "%zu. ", k + 1);
            wrap(lead, 6, f->remedies[k]);
        }
    }
    if (fig->nlines) {
        printf("    the planner's figures for this launch:\n");
        for (size_t k = 0; k < fig->nlines; k++)
            wrap("- ", 6, fig->lines[k]);
    }
    if (f->live) {
        json_t *src = json_object_get(f->live, "source");
        printf("    now (%s):\n", json_string_value(src) ? json_string_value(src) : "live");
        for (size_t k = 0; k < f->nlive_lines; k++)
            wrap("- ", 6, f->live_lines[k]);
    }
    printf("\n");
}

/* The log's own structure: engine, phases, and where and how it failed. */
static void print_structure(const hbm_explain_report *rep)
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
        wrap("log: ", 0, buf);
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
        wrap("and: ", 0, line);
        free(line);
    }
    bool known = false;
    for (size_t i = 0; i < rep->nfindings; i++)
        known |= !rep->findings[i].sig->wrapper;
    if (known)
        return; /* the findings below carry their own remedies */
    const char *const *steps;
    size_t ns = hbm_explain_phase_steps(st->phase, &steps);
    printf("next steps for a failure in this phase:\n");
    for (size_t k = 0; k < ns; k++) {
        char num[24];
        snprintf(num, sizeof num, "%zu. ", k + 1);
        wrap(num, 2, steps[k]);
    }
}

static void print_report(const char *path, const hbm_explain_report *rep,
                         const explain_plan_figures *figs, const char *live_note)
{
    bool color = cli_color(stdout);
    char *name = hbm_xasprintf("%s:", strcmp(path, "-") == 0 ? "(stdin)" : path);
    char rest[96];
    if (rep->nfindings == 0 && rep->structure.error) {
        snprintf(rest, sizeof rest, " no catalogue entry matches, but the log shows a failure "
                                    "(%llu lines).", (unsigned long long)rep->lines);
        cli_print_path(stdout, "", name, rest);
        print_structure(rep);
    } else if (rep->nfindings == 0) {
        snprintf(rest, sizeof rest, " no known failure found in %llu lines.",
                 (unsigned long long)rep->lines);
        cli_print_path(stdout, "", name, rest);
        print_structure(rep);
    }
    if (rep->nfindings == 0) {
        if (rep->ntail) {
            printf("last error-looking lines:\n");
            for (size_t k = 0; k < rep->ntail; k++) {
                char lead[32];
                snprintf(lead, sizeof lead, "%llu: ", (unsigned long long)rep->tail[k].line);
                wrap(lead, 2, rep->tail[k].text);
            }
        } else {
            printf("no error-looking lines either.\n");
        }
    } else {
        snprintf(rest, sizeof rest, " %zu known failure%s in %llu line%s", rep->nfindings,
                 rep->nfindings == 1 ? "" : "s", (unsigned long long)rep->lines,
                 rep->lines == 1 ? "" : "s");
        cli_print_path(stdout, "", name, rest);
        print_structure(rep);
        printf("\n");
        for (size_t i = 0; i < rep->nfindings; i++)
            print_finding(rep, i, &figs[i], color);
    }
    if (rep->cut_lines)
        printf("note: %llu line%s longer than %d bytes were read only up to that length.\n",
               (unsigned long long)rep->cut_lines, rep->cut_lines == 1 ? "" : "s",
               HBM_EXPLAIN_LINE_MAX);
    if (live_note)
        wrap("note: ", 0, live_note);
    free(name);
}

typedef enum { LIVE_AUTO, LIVE_ON, LIVE_OFF } live_mode; /* --live, --no-live: the later wins */

/* Observes the host for the live checks; returns the source text or NULL (with a note). */
static const char *observe_live(const cli_common *c, live_mode mode, hbm_obs *obs,
                                char *note, size_t nnote, char *src, size_t nsrc)
{
    hbm_err err = {{0}};
    if (c->src.snapshot) {
        if (hbm_observe(obs, &c->src, &err) < 0) {
            snprintf(note, nnote, "live checks skipped: %s", err.msg);
            return NULL;
        }
        snprintf(src, nsrc, "snapshot %s", c->src.snapshot);
        return src;
    }
    if (hbm_observe(obs, &c->src, &err) == 0 && obs->ndevs > 0) {
        snprintf(src, nsrc, "this host, %s backend", obs->backend);
        return src;
    }
    hbm_obs_free(obs);
    if (mode == LIVE_AUTO) {
        snprintf(note, nnote, "live checks skipped: no device backend here (%s); --live checks "
                              "this host's processes and ports anyway", err.msg[0] ? err.msg : "no devices");
        return NULL;
    }
    hbm_obs_init(obs);
    hbm_host_opts hopts = {.root = c->src.root ? c->src.root : hbm_host_env_root()};
    hbm_err herr = {{0}};
    if (hbm_host_scan(&obs->host, &hopts, &herr) < 0) {
        snprintf(note, nnote, "live checks skipped: host facts: %s", herr.msg);
        return NULL;
    }
    obs->has_host = true;
    snprintf(src, nsrc, "this host, host facts only: no device backend");
    return src;
}

/* The report of one log, with the live checks and the planner's figures, printed. */
static void explain_output(const cli_common *c, int mode, const hbm_catalog *cat,
                           const char *cat_path, const char *path, hbm_explain_report *rep,
                           const explain_plan_opts *po)
{
    char note[1400] = "";
    if (c->src.snapshot && mode == LIVE_AUTO)
        mode = LIVE_ON;
    hbm_obs obs;
    hbm_obs_init(&obs);
    explain_plan_opts plan_opts = *po;
    if (mode != LIVE_OFF &&
        (hbm_explain_report_wants_live(rep) || explain_plan_wants_live(rep, po))) {
        char src[300];
        const char *source = observe_live(c, mode, &obs, note, sizeof note, src, sizeof src);
        if (source)
            hbm_explain_live_apply(rep, cat, &obs,
                                   c->src.snapshot ? NULL
                                   : c->src.root   ? c->src.root
                                                   : hbm_host_env_root(),
                                   source);
        plan_opts.live = source ? &obs : NULL;
    }
    explain_plan_figures *figs = explain_plan(rep, &plan_opts);
    hbm_obs_free(&obs);
    if (c->json) {
        json_t *j = hbm_explain_report_json(rep);
        json_t *found = json_object_get(j, "findings");
        for (size_t i = 0; i < rep->nfindings; i++)
            if (figs[i].json)
                json_object_set(json_array_get(found, i), "plan", figs[i].json);
        json_object_set_new(j, "log", json_string(strcmp(path, "-") == 0 ? "-" : path));
        json_object_set_new(j, "catalog", json_string(cat_path));
        json_object_set_new(j, "live_note", note[0] ? json_string(note) : json_null());
        cli_json_out(j);
    } else {
        print_report(path, rep, figs, note[0] ? note : NULL);
    }
    explain_plan_free(figs, rep->nfindings);
}

static int explain_main(const cli_common *c, int mode, const char *catalog, bool list,
                        const char *log, const explain_plan_opts *po)
{
    hbm_err err = {{0}};
    char *cat_path = NULL;
    const char *origin = NULL;
    hbm_catalog *cat = NULL;
    int rc = CLI_EXIT_ERROR;
    const char *path = log ? log : "-";
    hbm_explain_report rep;
    if (hbm_explain_catalog_locate(catalog, &cat_path, &origin, &err) < 0 ||
        hbm_explain_catalog_load(cat_path, &cat, &err) < 0) {
        cli_errorf("explain: %s", err.msg);
    } else if (list) {
        print_list(cat, cat_path, c->json);
        rc = CLI_EXIT_OK;
    } else if (!log && isatty(STDIN_FILENO)) {
        cli_errorf("explain: give a LOG file, or - to read standard input");
    } else if (hbm_explain_scan_path(cat, path, &rep, &err) < 0) {
        cli_errorf("explain: %s", err.msg);
    } else {
        explain_output(c, mode, cat, cat_path, path, &rep, po);
        rc = hbm_explain_report_failed(&rep) ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
        hbm_explain_report_free(&rep);
    }
    free(cat_path);
    hbm_explain_catalog_free(cat);
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    cli_common c;
    cli_common_init(&c);
    bool list = false;
    int mode = LIVE_AUTO;
    const char *catalog = NULL;
    explain_plan_opts po = {.mem = HBM_UNKNOWN};
    const cli_opt opts[] = {
        CLI_OPT(CLI_FLAG, "list", 0, NULL, &list, "print the signature catalogue and exit"),
        CLI_OPT(CLI_STRING, "catalog", 0, "FILE", &catalog,
                "signature catalogue (default: $HBMCTL_CATALOG, then the installed\n"
                "share/hbmctl/signatures.json, then the source tree's data/)"),
        CLI_OPT(CLI_FLAG, "live", 0, NULL, &mode,
                "check the host now (default when a device backend is available;\n"
                "without one, host facts still answer port/process checks)", .value = LIVE_ON),
        CLI_OPT(CLI_FLAG, "no-live", 0, NULL, &mode, "only read the log", .value = LIVE_OFF),
        CLI_HEAD("the planner's figures (a vLLM launch the log names: its non-default args)"),
        CLI_OPT(CLI_STRING, "model", 0, "DIR", &po.model,
                "the model directory or config.json (default: the log's model, when\n"
                "it is a directory here)"),
        CLI_OPT(CLI_STRING, "device", 0, "NAME", &po.device,
                "the device, a name from plan's device table (default: this\n"
                "host's first device, when the host is checked)"),
        CLI_OPT(CLI_SIZE, "mem", 0, "SIZE", &po.mem, "or its total memory as vLLM sees it",
                .min = 1, .why = "must be positive"),
        CLI_FORM("-- vllm serve ...", "the launch's flags, over those the log shows"),
        CLI_GROUPS_HERE,
        CLI_OPTS_END,
    };
    const cli_spec spec = {
        .cmd = "explain", .usage = "[OPTIONS] [LOG|-] [-- vllm serve ...]", .about = about, .opts = opts,
        .groups = CLI_G_JSON | CLI_G_SOURCE, .common = &c, .max_args = -1,
        .exits = "exit codes: 0 no failure, 1 the log shows a failure (known or not),\n"
                 "2 could not read (file:line named)\n",
    };
    cli_args args;
    int rc = cli_parse(&spec, argc, argv, &args);
    int nlogs = args.dash >= 0 ? args.dash : args.nargs;
    if (rc == CLI_CONTINUE && nlogs > 1) {
        cli_errorf("explain: one log at a time (got %d)", nlogs);
        rc = CLI_EXIT_ERROR;
    }
    const char *log = nlogs ? args.args[0] : NULL;
    if (args.dash >= 0) {
        po.launch = args.args + args.dash;
        po.nlaunch = args.nargs - args.dash;
    }
    if (rc == CLI_CONTINUE)
        rc = explain_main(&c, mode, catalog, list, log, &po);
    cli_args_free(&args);
    return rc;
}
