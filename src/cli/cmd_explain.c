/* hbmctl explain: read a failing server's log and say what happened and what to do
 * (hbmctl(1)). The catalogue is data; the live checks and the planner's figures are the
 * preflight tier's; this file picks the inputs and prints (render_explain.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hbm/preflight.h"
#include "render_explain.h"
#include "wrap.h"

static const char about[] =
    "Reads a server log (vLLM, vllm-ascend, MindIE, torch_npu, CANN, HCCL, PyTorch, CUDA,\n"
    "NCCL) and, for each known failure, prints the first line that shows it (with its line\n"
    "number and how often it repeats), the cause, what the numbers in it mean, the remedies\n"
    "in the order to try, and what this host shows now. Logs are streamed (any size); ANSI\n"
    "colours and docker / Kubernetes timestamps are tolerated. Without LOG, standard input\n"
    "is read.\n";

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
            cli_wrap_after(stdout, 50, "", s->title ? s->title : "");
        } else {
            cli_wrap_after(stdout, 0, lead, s->title ? s->title : "");
        }
        if (s->nproducts) {
            char prods[400] = "";
            for (size_t k = 0; k < s->nproducts; k++)
                snprintf(prods + strlen(prods), sizeof prods - strlen(prods), "%s%s", k ? ", " : "",
                         s->products[k].name);
            cli_wrap_after(stdout, 50, "", prods);
        }
    }
}

static void print_report(const char *path, const hbm_explain_report *rep,
                         const hbm_preflight_figures *figs, const char *live_note)
{
    bool color = cli_color(stdout);
    char *name = hbm_xasprintf("%s:", strcmp(path, "-") == 0 ? "(stdin)" : path);
    char rest[96];
    if (rep->nfindings == 0 && rep->structure.error) {
        snprintf(rest, sizeof rest, " no catalogue entry matches, but the log shows a failure "
                                    "(%llu lines).", (unsigned long long)rep->lines);
        cli_print_path(stdout, "", name, rest);
        cli_explain_structure(rep);
    } else if (rep->nfindings == 0) {
        snprintf(rest, sizeof rest, " no known failure found in %llu lines.",
                 (unsigned long long)rep->lines);
        cli_print_path(stdout, "", name, rest);
        cli_explain_structure(rep);
    }
    if (rep->nfindings == 0) {
        if (rep->ntail) {
            printf("last error-looking lines:\n");
            cli_explain_tail(rep, 2, UINT64_MAX);
        } else {
            printf("no error-looking lines either.\n");
        }
    } else {
        snprintf(rest, sizeof rest, " %zu known failure%s in %llu line%s", rep->nfindings,
                 rep->nfindings == 1 ? "" : "s", (unsigned long long)rep->lines,
                 rep->lines == 1 ? "" : "s");
        cli_print_path(stdout, "", name, rest);
        cli_explain_structure(rep);
        printf("\n");
        for (size_t i = 0; i < rep->nfindings; i++)
            cli_explain_finding(rep, i, &figs[i], color);
    }
    if (rep->cut_lines)
        printf("note: %llu line%s longer than %d bytes were read only up to that length.\n",
               (unsigned long long)rep->cut_lines, rep->cut_lines == 1 ? "" : "s",
               HBM_EXPLAIN_LINE_MAX);
    if (live_note)
        cli_wrap_after(stdout, 0, "note: ", live_note);
    free(name);
}

/* The report of one log, with the live checks and the planner's figures, printed. */
static void explain_output(const hbm_opt_common *c, const hbm_catalog *cat, const char *cat_path,
                           const char *path, hbm_explain_report *rep,
                           const hbm_preflight_explain_opts *po)
{
    hbm_preflight_explained ex;
    hbm_preflight_explain(rep, cat, po, &ex);
    if (c->json)
        cli_json_out(hbm_preflight_explain_json(rep, &ex, path, cat_path));
    else
        print_report(path, rep, ex.figures, ex.live_note[0] ? ex.live_note : NULL);
    hbm_preflight_explained_free(&ex);
}

static int explain_main(const hbm_opt_common *c, const char *catalog, bool list, const char *log,
                        const hbm_preflight_explain_opts *po)
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
        explain_output(c, cat, cat_path, path, &rep, po);
        rc = hbm_explain_report_failed(&rep) ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
        hbm_explain_report_free(&rep);
    }
    free(cat_path);
    hbm_explain_catalog_free(cat);
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    hbm_opt_common c;
    hbm_opt_common_init(&c);
    bool list = false;
    const char *catalog = NULL;
    int mode = HBM_PREFLIGHT_LIVE_AUTO;
    hbm_preflight_explain_opts po = {.src = &c.src, .mem = HBM_UNKNOWN};
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_FLAG, "list", 0, NULL, &list, "print the signature catalogue and exit"),
        HBM_OPT(HBM_OPT_STRING, "catalog", 0, "FILE", &catalog,
                "signature catalogue (default: $HBMCTL_CATALOG, then the installed\n"
                "share/hbmctl/signatures.json, then the source tree's data/)"),
        HBM_OPT(HBM_OPT_FLAG, "live", 0, NULL, &mode,
                "check the host now (default when a device backend is available;\n"
                "without one, host facts still answer port/process checks)",
                .value = HBM_PREFLIGHT_LIVE_ON),
        HBM_OPT(HBM_OPT_FLAG, "no-live", 0, NULL, &mode, "only read the log",
                .value = HBM_PREFLIGHT_LIVE_OFF),
        HBM_OPT_HEAD("the planner's figures (a vLLM launch the log names: its non-default args)"),
        HBM_OPT(HBM_OPT_STRING, "model", 0, "DIR", &po.model,
                "the model directory or config.json (default: the log's model, when\n"
                "it is a directory here)"),
        HBM_OPT(HBM_OPT_STRING, "device", 0, "NAME", &po.device,
                "the device, a name from plan's device table (default: this\n"
                "host's first device, when the host is checked)"),
        HBM_OPT(HBM_OPT_SIZE, "mem", 0, "SIZE", &po.mem, "or its total memory as vLLM sees it",
                .min = 1, .why = "must be positive"),
        HBM_OPT_FORM("-- vllm serve ...", "the launch's flags, over those the log shows"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "explain", .usage = "[OPTIONS] [LOG|-] [-- vllm serve ...]", .about = about, .opts = opts,
        .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &c, .max_args = -1,
        .exits = "exit codes: 0 no failure, 1 the log shows a failure (known or not),\n"
                 "2 could not read (file:line named)\n",
    };
    hbm_opt_args args;
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
    po.live = (hbm_preflight_live_mode)mode;
    if (rc == CLI_CONTINUE)
        rc = explain_main(&c, catalog, list, log, &po);
    hbm_opt_args_free(&args);
    return rc;
}
