/* What `hbmctl run` says on stderr (run_lines.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/audit.h"
#include "hbm/run.h"
#include "render_plan.h"
#include "run_lines.h"

void cli_run_log_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, RUN_PREFIX "%s\n", line);
    fflush(stderr);
}

void cli_run_audit(void *ctx, json_t *event)
{
    cli_run_sinks *c = ctx;
    hbm_err err = {{0}};
    if (hbm_audit_append(c->audit_path, event, &err) < 0 && !c->audit_warned) {
        fprintf(stderr, RUN_PREFIX "audit log: %s\n", err.msg);
        c->audit_warned = true;
    }
    json_decref(event);
}

int cli_run_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(RUN_PREFIX, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return HBM_RUN_EXIT_FAILED;
}

int cli_run_no_devices(const hbm_pick_result *pick, size_t count)
{
    fprintf(stderr, RUN_PREFIX "--devices: %zu free device%s wanted, not available:\n", count,
            count == 1 ? "" : "s");
    for (size_t i = 0; i < pick->nrefused; i++) {
        /* A chip with no logic id is named inside its reason (card and chip). */
        if (pick->refused[i].device >= 0)
            fprintf(stderr, RUN_PREFIX "  device %lld: %s\n", (long long)pick->refused[i].device,
                    pick->refused[i].why);
        else
            fprintf(stderr, RUN_PREFIX "  %s\n", pick->refused[i].why);
    }
    return HBM_RUN_EXIT_FAILED;
}

void cli_run_leased(const hbm_pick_result *pick)
{
    setenv(pick->env_name, pick->env_value, 1);
    fprintf(stderr, RUN_PREFIX "leased %s=%s (%s)\n", pick->env_name, pick->env_value,
            pick->placement);
}

int cli_run_verdict(const hbm_preflight_verdict *v)
{
    char *text = cli_plan_verdict_text(&v->plan);
    int code = 0;
    if (!v->fits) {
        fprintf(stderr, RUN_PREFIX "preflight refuses to start on device %lld (%s):\n",
                (long long)v->device, v->device_name);
        fputs(text, stderr);
        if (*text && text[strlen(text) - 1] != '\n')
            fputc('\n', stderr);
        code = HBM_RUN_EXIT_FAILED;
    } else {
        for (char *l = text, *e; l && *l; l = e ? e + 1 : NULL) {
            e = strchr(l, '\n');
            if (e)
                *e = '\0';
            fprintf(stderr, RUN_PREFIX "preflight: %s\n", l);
        }
    }
    free(text);
    return code;
}

void cli_run_alloc_conf(const hbm_preflight_start *st)
{
    /* the variable of the vendor in use; both when no device was observed */
    const char *vars[2] = {"PYTORCH_NPU_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};
    int from = 0, to = 2;
    if (st->vendor_known) {
        from = st->vendor == HBM_VENDOR_NVIDIA ? 1 : 0;
        to = from + 1;
    }
    for (int i = from; i < to; i++) {
        char *val = NULL, why[300];
        if (hbm_run_alloc_conf(getenv(vars[i]), &val, why, sizeof why)) {
            setenv(vars[i], val, 1);
            fprintf(stderr, RUN_PREFIX "%s=%s\n", vars[i], val);
            free(val);
        } else {
            fprintf(stderr, RUN_PREFIX "--expandable-segments: %s left as is: %s\n", vars[i], why);
        }
    }
}
