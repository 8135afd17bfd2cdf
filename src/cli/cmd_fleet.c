/* hbmctl fleet: every node's devices, verdicts, holders and findings from the hbmctl metrics
 * a Prometheus server scrapes (docs/fleet.md). Exit 0 all clean, 1 a dirty or stale node,
 * 2 Prometheus unreachable, its answer unreadable or late, or no node matching. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hbm/fleet.h"

static const char about[] =
    "The whole fleet in one view from the hbmctl metrics Prometheus scrapes: one row\n"
    "per node and device (verdict, memory, leak), the holders with their pods, the\n"
    "findings per node, worst first. A node whose last scrape failed is listed as\n"
    "stale. Scrape the exporters with honor_labels: true (docs/kubernetes.md).\n";

/* A secret from a file (docs/fleet.md); NULL with a message when refused. */
static char *read_secret(const char *opt, const char *path, bool token)
{
    char *s;
    hbm_err err;
    if (hbm_fleet_read_secret(path, token, &s, &err) < 0) {
        cli_errorf("%s %s", opt, err.msg);
        return NULL;
    }
    return s;
}

static void print_dev(const char *node, const hbm_fleet_dev *d, bool first)
{
    char used[32], total[32], mem[72], where[400];
    snprintf(mem, sizeof mem, "%s / %s", cli_size(used, sizeof used, d->memory_used_bytes),
             cli_size(total, sizeof total, d->memory_total_bytes));
    const char *vc = cli_color(stdout) ? cli_verdict_color(hbm_verdict_parse(d->verdict)) : "";
    printf("%-24.24s %-6.6s %-16.16s %s%-11s%s %21s %s\n", first ? node : "", d->index,
           d->name[0] ? d->name : "-", vc, d->verdict[0] ? d->verdict : "-",
           vc[0] ? CLI_RESET : "", mem, d->leak < 0 ? "-" : d->leak ? "LEAK" : "no");
    for (size_t k = 0; k < d->nprocs; k++) {
        const hbm_fleet_proc *p = &d->procs[k];
        if (p->pod[0])
            snprintf(where, sizeof where, "%s/%s%s%s", p->ns, p->pod, p->container[0] ? " " : "",
                     p->container);
        else
            snprintf(where, sizeof where, "-");
        printf("%-24s   pid %-9lld %-16.16s %11s  %.40s%s\n", "", (long long)p->pid,
               p->name[0] ? p->name : "-", cli_size(used, sizeof used, p->memory_bytes), where,
               p->leak > 0 ? "  LEAK" : "");
    }
}

static void print_text(const hbm_fleet *f)
{
    size_t stale = hbm_fleet_stale(f);
    char when[32];
    time_t t = (time_t)f->at;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    printf("%s at %s: %zu node%s, %zu stale\n\n", f->prometheus, when, f->nnodes,
           f->nnodes == 1 ? "" : "s", stale);
    printf("%-24s %-6s %-16s %-11s %21s %s\n", "NODE", "DEVICE", "NAME", "VERDICT",
           "MEMORY USED / TOTAL", "LEAK");
    for (size_t i = 0; i < f->nnodes; i++) {
        const hbm_fleet_node *n = &f->nodes[i];
        const char *name = hbm_fleet_node_name(n);
        if (n->stale)
            printf("%-24.24s stale: its last scrape failed (%s)\n", name, n->instance);
        else if (n->ndevs == 0)
            printf("%-24.24s no device reported\n", name);
        for (size_t k = 0; k < n->ndevs; k++)
            print_dev(name, &n->devs[k], k == 0);
        for (size_t k = 0; k < n->nfindings; k++) {
            const hbm_fleet_finding *x = &n->findings[k];
            printf("%-24s   %-8s %s%s%s%s x%lld\n", "", x->severity, x->id,
                   x->device[0] ? " (device " : "", x->device, x->device[0] ? ")" : "",
                   (long long)x->count);
        }
        if (n->last_remediation > 0) {
            time_t lt = (time_t)n->last_remediation;
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&lt, &tm));
            printf("%-24s   last clean-up %s\n", "", when);
        }
    }
}

/* Writes a JSON value as part of the --json document, its lines indented by indent. */
static void dump_at(const json_t *j, const char *indent)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                                JSON_REAL_PRECISION(10));
    for (const char *c = s, *nl; c && *c; c = nl + 1) {
        nl = strchr(c, '\n');
        if (!nl) {
            fputs(c, stdout);
            break;
        }
        fwrite(c, 1, (size_t)(nl - c) + 1, stdout);
        fputs(indent, stdout);
    }
    free(s);
}

/* The --json document, a node at a time: the same text as one dump of the whole tree,
 * without the whole tree in memory (tens of MB at thousands of nodes). */
static void print_json(const hbm_fleet *f)
{
    json_t *url = json_string(f->prometheus), *at = json_real(f->at);
    fputs("{\n  \"prometheus\": ", stdout);
    dump_at(url, "");
    fputs(",\n  \"at\": ", stdout);
    dump_at(at, "");
    fputs(",\n  \"nodes\": [", stdout);
    for (size_t i = 0; i < f->nnodes; i++) {
        json_t *n = hbm_fleet_node_json(&f->nodes[i]);
        fputs(i ? ",\n    " : "\n    ", stdout);
        dump_at(n, "    ");
        json_decref(n);
    }
    fputs(f->nnodes ? "\n  ]\n}\n" : "]\n}\n", stdout);
    json_decref(url);
    json_decref(at);
}

int cmd_fleet(int argc, char **argv)
{
    hbm_opt_common common;
    hbm_opt_common_init(&common);
    hbm_fleet_opts o = {.timeout_s = 10};
    const char *token_file = NULL, *password_file = NULL;
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_STRING, "prometheus", 0, "URL", &o.url,
                "the server, e.g. http://prometheus:9090"),
        HBM_OPT(HBM_OPT_STRING, "selector", 0, "MATCHERS", &o.selector,
                "narrow by label, PromQL matchers without braces:\n"
                "'pool=\"a100\"', 'job=\"hbmctl\",zone=~\"eu.*\"'"),
        HBM_OPT(HBM_OPT_STRING, "bearer-token-file", 0, "FILE", &token_file,
                "send the token in FILE (Authorization: Bearer)"),
        HBM_OPT(HBM_OPT_STRING, "user", 0, "NAME", &o.username,
                "basic auth user; the password from --password-file"),
        HBM_OPT(HBM_OPT_STRING, "password-file", 0, "FILE", &password_file, "basic auth password"),
        HBM_OPT(HBM_OPT_STRING, "ca-file", 0, "FILE", &o.ca_file,
                "CA bundle that signed the server's certificate"),
        HBM_OPT(HBM_OPT_DURATION, "timeout", 0, "DUR", &o.timeout_s,
                "time limit for all queries together (default 10s)", .min = 1e-9,
                .why = "must be > 0"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "fleet", .usage = "--prometheus URL [--selector MATCHERS] [OPTIONS]",
        .about = about, .opts = opts, .groups = HBM_OPT_G_JSON, .common = &common,
        .json_help = "{prometheus, at, nodes: [{instance, hostname, stale,\n"
                     "devices: [...], findings: [...], last_remediation}]} (docs/fleet.md)",
        .exits = "exit: 0 every node clean, 1 a device ORPHANED, UNACCOUNTED or UNHEALTHY, a\n"
                 "      critical finding, or a stale node; 2 Prometheus unreachable, its answer\n"
                 "      unreadable or late, no hbmctl exporter matching, or bad usage\n",
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (!o.url)
        return cli_bad_value(&spec, "prometheus", "", "fleet needs --prometheus URL");
    if (!o.username != !password_file || (token_file && o.username))
        return cli_bad_value(&spec, o.username ? "user" : "password-file",
                             o.username ? o.username : password_file,
                             "--user and --password-file go together, without "
                             "--bearer-token-file");
    if (o.username && !hbm_fleet_user_ok(o.username))
        return cli_bad_value(&spec, "user", "", "a basic auth user name has no ':' and "
                                                    "no control character");
    char *token = token_file ? read_secret("--bearer-token-file", token_file, true) : NULL;
    char *password = password_file ? read_secret("--password-file", password_file, false) : NULL;
    if ((token_file && !token) || (password_file && !password)) {
        hbm_fleet_secret_free(token);
        hbm_fleet_secret_free(password);
        return CLI_EXIT_ERROR;
    }
    o.bearer_token = token;
    o.password = password;
    hbm_fleet f;
    hbm_err err = {{0}};
    rc = hbm_fleet_fetch(&o, &f, &err);
    hbm_fleet_secret_free(token);
    hbm_fleet_secret_free(password);
    if (rc < 0) {
        cli_errorf("%s", err.msg);
        return CLI_EXIT_ERROR;
    }
    bool dirty = hbm_fleet_dirty(&f);
    if (common.json)
        print_json(&f);
    else
        print_text(&f);
    hbm_fleet_free(&f);
    return dirty ? CLI_EXIT_PROBLEM : CLI_EXIT_OK;
}
