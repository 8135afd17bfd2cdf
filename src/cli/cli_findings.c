/* Findings for people: the verdict first, a table, then the detail of each finding. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_findings.h"

void cli_print_skipped(FILE *f, const char *prefix, const hbm_obs *obs)
{
    if (strcmp(obs->backend, "none") != 0)
        return;
    char *text = hbm_xasprintf("device checks skipped, host checks only: %s",
                               obs->backend_why[0] ? obs->backend_why
                                                   : "no accelerator backend was used");
    cli_wrap(f, prefix, (int)strlen(prefix), text);
    free(text);
}

void cli_print_partial(FILE *f, const char *prefix, const hbm_obs *obs)
{
    if (!obs->partial)
        return;
    char *text = hbm_xasprintf("partial input: %s", obs->partial_why);
    cli_wrap(f, prefix, (int)strlen(prefix), text);
    free(text);
}

static void flatten(json_t *v, const char *prefix, char *buf, size_t n, size_t *pos)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            char name[128];
            snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", k);
            flatten(x, name, buf, n, pos);
        }
        return;
    }
    if (json_is_array(v) && json_array_size(v) > 0 && json_is_object(json_array_get(v, 0))) {
        /* holders=[{...}]: one key=value per field, so the line wraps like the rest. */
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            char name[128];
            snprintf(name, sizeof name, "%s[%zu]", prefix, i);
            flatten(x, name, buf, n, pos);
        }
        return;
    }
    if (*pos >= n)
        return;
    char val[320];
    if (json_is_string(v))
        snprintf(val, sizeof val, "%s", json_string_value(v));
    else if (json_is_array(v)) {
        size_t i, vp = 0;
        json_t *x;
        val[0] = '\0';
        json_array_foreach(v, i, x) {
            char *s = json_is_string(x) ? NULL : json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
            vp += (size_t)snprintf(val + vp, vp < sizeof val ? sizeof val - vp : 0, "%s%s",
                                   i ? "; " : "", s ? s : json_string_value(x));
            free(s);
            if (vp >= sizeof val)
                break;
        }
    } else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        snprintf(val, sizeof val, "%s", s ? s : "?");
        free(s);
    }
    *pos += (size_t)snprintf(buf + *pos, n - *pos, "%s%s=%s", *pos ? " " : "", prefix, val);
}

static const char *sev_color(hbm_severity s)
{
    return cli_sgr(s == HBM_SEV_CRITICAL ? 31 : s == HBM_SEV_WARNING ? 33 : 36);
}

void cli_print_findings(FILE *f, const hbm_obs *obs, const hbm_findings *fs)
{
    bool color = cli_color(f);
    char verdict[512];
    hbm_findings_verdict(fs, verdict, sizeof verdict);
    cli_print_skipped(f, "", obs);
    cli_print_partial(f, "", obs);
    cli_wrap(f, "", 0, verdict);
    if (obs->backend[0] || obs->source[0]) {
        char *head = hbm_xasprintf("(source: %s%s", obs->backend, obs->source[0] ? " " : "");
        char *path = hbm_xasprintf("%s)", obs->source);
        cli_print_path(f, head, path, "");
        free(head);
        free(path);
    }
    if (!fs->n)
        return;
    fprintf(f, "\n%-9s %-28s %-7s %s\n", "SEVERITY", "FINDING", "DEVICE", "SUMMARY");
    for (size_t i = 0; i < fs->n; i++) {
        const hbm_finding *x = &fs->items[i];
        char dev[24] = "-";
        if (x->device >= 0)
            snprintf(dev, sizeof dev, "%lld", (long long)x->device);
        char sum[60];
        size_t len = strlen(x->summary);
        snprintf(sum, sizeof sum, "%.*s%s", len > 52 ? 50 : (int)len, x->summary,
                 len > 52 ? "..." : "");
        fprintf(f, "%s%-9s%s %-28s %-7s %s\n", color ? sev_color(x->severity) : "",
                hbm_severity_name(x->severity), color ? CLI_RESET : "", x->id, dev, sum);
    }
    for (size_t i = 0; i < fs->n; i++) {
        const hbm_finding *x = &fs->items[i];
        fprintf(f, "\n%s[%s] %s%s\n", color ? sev_color(x->severity) : "",
                hbm_severity_name(x->severity), x->id, color ? CLI_RESET : "");
        cli_wrap(f, "  what", 12, x->summary);
        char ev[2048] = "";
        size_t pos = 0;
        if (x->evidence)
            flatten(x->evidence, "", ev, sizeof ev, &pos);
        if (ev[0])
            cli_wrap(f, "  evidence", 12, ev);
        cli_wrap(f, "  remedy", 12, x->remedy);
        cli_wrap(f, "  clean", 12,
                 x->action.kind == HBM_ACT_NONE ? "nothing (not something hbmctl removes)"
                                                : x->action.text);
    }
}

/* Per device: memory before and after, as hbm_clean_released gives them. */
void cli_print_released(const json_t *rel)
{
    size_t i;
    const json_t *e;
    json_array_foreach(rel, i, e) {
        const json_t *dev = json_object_get(e, "device"), *r = json_object_get(e, "released_bytes");
        int64_t b = json_is_integer(json_object_get(e, "before_bytes"))
                        ? json_integer_value(json_object_get(e, "before_bytes")) : HBM_UNKNOWN;
        int64_t n = json_is_integer(json_object_get(e, "after_bytes"))
                        ? json_integer_value(json_object_get(e, "after_bytes")) : HBM_UNKNOWN;
        int64_t rb = json_is_integer(r) ? json_integer_value(r) : 0;
        char sb[32], sn[32], sr[32];
        printf("  %-7lld %12s -> %-12s %s%s\n",
               json_is_integer(dev) ? (long long)json_integer_value(dev) : -1LL,
               cli_size(sb, sizeof sb, b), cli_size(sn, sizeof sn, n),
               !json_is_integer(r) ? "unknown" : cli_size(sr, sizeof sr, rb > 0 ? rb : 0),
               rb > 0 ? " released" : "");
    }
}

void cli_print_clean_plan(const hbm_obs *obs, const hbm_clean_plan *plan, bool apply)
{
    cli_print_skipped(stdout, "", obs);
    hbm_clean_counts n = hbm_clean_plan_counts(plan);
    printf("%s: %zu action%s", apply ? "clean" : "dry run", n.allowed, n.allowed == 1 ? "" : "s");
    if (n.kept)
        printf(", %zu kept by safety rules", n.kept);
    if (n.waiting)
        printf(", %zu under --min-age", n.waiting);
    if (n.deferred)
        printf(", %zu deferred by --max-actions", n.deferred);
    printf("\n");
    for (size_t i = 0; i < plan->n; i++) {
        const hbm_clean_step *s = &plan->steps[i];
        char label[64];
        snprintf(label, sizeof label, "  %s %s",
                 s->allowed ? (apply ? "do  " : "would")
                 : s->waiting ? "wait" : s->deferred ? "defer" : "keep",
                 s->finding_id);
        cli_wrap(stdout, label, 28, s->allowed ? s->action.text : s->why);
    }
}

void cli_print_clean_results(const hbm_clean_plan *plan, const char *audit)
{
    printf("results (audit log: %s):\n", audit);
    for (size_t i = 0; i < plan->n; i++) {
        const hbm_clean_step *s = &plan->steps[i];
        if (!s->allowed)
            continue;
        char label[64];
        snprintf(label, sizeof label, "  %s %s", s->done ? "done" : "KEPT", s->finding_id);
        cli_wrap(stdout, label, 28, s->result);
    }
}
