/* hbmctl run: the supervisor's front end. Before the start it leases devices, sets the
 * allocator and refuses a launch the planner says will fail; then it hands over to
 * hbm_run_supervise and exits with the child's status. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hbm/audit.h"
#include "hbm/lease.h"
#include "hbm/preflight.h"
#include "hbm/progress.h"
#include "hbm/run.h"
#include "render_plan.h"

#define PREFIX "hbmctl run: "

static const char about[] =
    "Runs COMMAND so that stopping it always gives the device back: hbmctl is its\n"
    "subreaper (or PID 1), forwards signals to its process group, and on SIGTERM/SIGINT\n"
    "or the command's exit ends every process of the tree (SIGTERM, grace, SIGKILL),\n"
    "waits for device memory to return, removes shared memory the tree left, releases\n"
    "its leases, prints one summary line and exits with the command's status.\n";

static const char exits[] =
    "exit: the command's status, 128+N when signal N killed it; 125 hbmctl failed\n"
    "(bad usage, preflight refusal, no free device), 126 not executable, 127 not found.\n"
    "Event lines go to stderr prefixed \"hbmctl run: \". Details: docs/run.md\n";

static int read_restart(void *dst, const char *v, char *why, size_t n)
{
    hbm_err err = {{0}};
    if (hbm_run_parse_restart(v, dst, &err) < 0) {
        snprintf(why, n, "%s", err.msg);
        return -1;
    }
    return 0;
}

static int read_budget(void *dst, const char *v, char *why, size_t n)
{
    hbm_err err = {{0}};
    if (hbm_run_parse_budget(v, dst, &err) < 0) {
        snprintf(why, n, "%s", err.msg);
        return -1;
    }
    return 0;
}

static int read_health_url(void *dst, const char *v, char *why, size_t n)
{
#ifndef HBM_HAVE_CURL
    (void)dst;
    (void)v;
    snprintf(why, n, "this build has no libcurl, so health checks are left out (see hbmctl "
             "--version)");
    return -1;
#else
    (void)why;
    (void)n;
    *(const char **)dst = v;
    return 0;
#endif
}

typedef struct run_cli {
    const char *audit_path;
    bool audit_warned;
} run_cli;

static void log_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, PREFIX "%s\n", line);
    fflush(stderr);
}

static void audit(void *ctx, json_t *event)
{
    run_cli *c = ctx;
    hbm_err err = {{0}};
    if (hbm_audit_append(c->audit_path, event, &err) < 0 && !c->audit_warned) {
        fprintf(stderr, PREFIX "audit log: %s\n", err.msg);
        c->audit_warned = true;
    }
    json_decref(event);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PREFIX, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return HBM_RUN_EXIT_FAILED;
}

static int preflight(const char *model, char **argv, int argc, hbm_obs *obs,
                     const hbm_pick_result *pick)
{
    hbm_preflight_verdict v;
    hbm_err err = {{0}};
    if (hbm_preflight_run(obs, pick ? pick->dev_index : NULL, pick ? pick->n : 0, model, argc,
                          argv, &v, &err) < 0)
        return fail("preflight: %s", err.msg);
    char *text = cli_plan_verdict_text(&v.plan);
    int code = 0;
    if (!v.fits) {
        fprintf(stderr, PREFIX "preflight refuses to start on device %lld (%s):\n",
                (long long)v.device, v.device_name);
        fputs(text, stderr);
        if (*text && text[strlen(text) - 1] != '\n')
            fputc('\n', stderr);
        code = HBM_RUN_EXIT_FAILED;
    } else {
        for (char *l = text, *e; l && *l; l = e ? e + 1 : NULL) {
            e = strchr(l, '\n');
            if (e)
                *e = '\0';
            fprintf(stderr, PREFIX "preflight: %s\n", l);
        }
    }
    free(text);
    hbm_preflight_verdict_free(&v);
    return code;
}

static int pick_devices(size_t count, const int64_t *ids, size_t nids,
                        const char *lease_name, hbm_obs *obs, hbm_pick_result *pick)
{
    hbm_pick_opts po = {0};
    po.n = count;
    po.min_free_bytes = HBM_UNKNOWN;
    po.lease_name = lease_name;
    po.only = ids;
    po.nonly = nids;
    hbm_err err = {{0}};
    int rc = hbm_pick(obs, &po, pick, &err);
    if (rc < 0)
        return fail("--devices: %s", err.msg);
    if (rc == 1) {
        fprintf(stderr, PREFIX "--devices: %zu free device%s wanted, not available:\n", count,
                count == 1 ? "" : "s");
        for (size_t i = 0; i < pick->nrefused; i++) {
            /* A chip with no logic id is named inside its reason (card and chip). */
            if (pick->refused[i].device >= 0)
                fprintf(stderr, PREFIX "  device %lld: %s\n",
                        (long long)pick->refused[i].device, pick->refused[i].why);
            else
                fprintf(stderr, PREFIX "  %s\n", pick->refused[i].why);
        }
        return HBM_RUN_EXIT_FAILED;
    }
    for (size_t i = 0; i < pick->n; i++)
        if (pick->lease_fds && pick->lease_fds[i] >= 0)
            fcntl(pick->lease_fds[i], F_SETFD, FD_CLOEXEC); /* the tree must not keep it */
    setenv(pick->env_name, pick->env_value, 1);
    fprintf(stderr, PREFIX "leased %s=%s (%s)\n", pick->env_name, pick->env_value,
            pick->placement);
    return 0;
}

static void alloc_conf(const hbm_obs *obs, bool have_obs)
{
    /* the variable of the vendor in use; both when no device was observed */
    const char *vars[2] = {"PYTORCH_NPU_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"};
    int from = 0, to = 2;
    if (have_obs && obs->ndevs) {
        from = obs->devs[0].vendor == HBM_VENDOR_NVIDIA ? 1 : 0;
        to = from + 1;
    }
    for (int i = from; i < to; i++) {
        char *val = NULL, why[300];
        if (hbm_run_alloc_conf(getenv(vars[i]), &val, why, sizeof why)) {
            setenv(vars[i], val, 1);
            fprintf(stderr, PREFIX "%s=%s\n", vars[i], val);
            free(val);
        } else {
            fprintf(stderr, PREFIX "--expandable-segments: %s left as is: %s\n", vars[i], why);
        }
    }
}

/* What the command line asks of run besides the supervisor's own options. */
typedef struct run_args {
    cli_common cc;
    const char *devices, *lease_name, *model;
    bool expandable;
    char **cmd; /* COMMAND and its arguments: argv's NULL-terminated tail */
    int ncmd;
    char metrics_url[1024]; /* --stall without --metrics-url: the --health-url server's */
} run_args;

/* --stall reads --metrics-url, by default the /metrics of the --health-url server. */
static int progress_url(hbm_run_opts *o, char *buf, size_t n)
{
    if (o->stall_s > 0 && !o->metrics_url) {
        if (!o->health_url)
            return fail("--stall needs --health-url or --metrics-url (the server's /metrics)");
        hbm_progress_metrics_url(o->health_url, buf, n);
        o->metrics_url = buf;
    }
    if (o->metrics_url && o->stall_s <= 0)
        return fail("--metrics-url is read for --stall DUR: give both");
    return 0;
}

static int parse(run_args *a, hbm_run_opts *o, run_cli *rc, int argc, char **argv)
{
    cli_common_init(&a->cc);
    a->lease_name = "run";
    long retries = o->health_retries;
    const cli_opt opts[] = {
        CLI_HEAD("before the start"),
        CLI_OPT(CLI_STRING, "devices", 0, "N|LIST", &a->devices,
                "pick N free devices, or these ids (0,1  4-7  5,), lease\n"
                "them and export ASCEND_RT_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES"),
        CLI_OPT(CLI_STRING, "lease-name", 0, "NAME", &a->lease_name,
                "name of the leases (default run)"),
        CLI_OPT(CLI_FLAG, "expandable-segments", 0, NULL, &a->expandable,
                "set PYTORCH_NPU_ALLOC_CONF/PYTORCH_CUDA_ALLOC_CONF to\n"
                "expandable_segments:True unless already set otherwise"),
        CLI_OPT(CLI_STRING, "preflight", 0, "MODEL_DIR", &a->model,
                "plan the launch first (serving flags from COMMAND) and\n"
                "refuse to start when vLLM would fail (exit 125)"),
        CLI_HEAD("tree and stop"),
        CLI_OPT(CLI_FLAG, "setsid", 0, NULL, &o->setsid,
                "the command in its own session (no controlling terminal)"),
        CLI_OPT(CLI_FLAG, "no-cgroup", 0, NULL, &o->no_cgroup,
                "no cgroup v2 leaf even when one can be made"),
        CLI_OPT(CLI_DURATION, "grace", 0, "DUR", &o->grace_s, "SIGTERM to SIGKILL (default 30s)"),
        CLI_OPT(CLI_DURATION, "kill-timeout", 0, "DUR", &o->kill_wait_s,
                "bound on waiting after SIGKILL (default 10s)"),
        CLI_OPT(CLI_DURATION, "release-timeout", 0, "DUR", &o->release_timeout_s,
                "bound on waiting for device memory (default 60s)"),
        CLI_HEAD("while running"),
        CLI_OPT(CLI_CALL, "restart", 0, "POLICY", &o->restart,
                "never, on-failure, always (default never)", .fn = read_restart,
                .words = "never on-failure always"),
        CLI_OPT(CLI_CALL, "max-restarts", 0, "N[/WIN]", &o->budget,
                "restart budget (default 5/1d)", .fn = read_budget),
        CLI_OPT(CLI_DURATION, "backoff", 0, "DUR", &o->backoff_s,
                "first restart delay, doubled each time up to 60s (default 1s)"),
        CLI_OPT(CLI_RATIO, "restart-on-mem", 0, "PCT", &o->restart_on_mem,
                "drain and restart when device memory stays above PCT",
                .words = "80% 90% 95%"),
        CLI_OPT(CLI_DURATION, "mem-window", 0, "DUR", &o->mem_window_s,
                "... for this long (default 60s)"),
        CLI_OPT(CLI_DURATION, "mem-interval", 0, "DUR", &o->mem_interval_s,
                "memory sampling period (default 5s)", .min = 1e-9, .why = "must be positive"),
        CLI_OPT(CLI_CALL, "health-url", 0, "URL", &o->health_url,
                "readiness wait, then periodic GET (2xx = healthy)", .fn = read_health_url),
        CLI_OPT(CLI_DURATION, "health-interval", 0, "DUR", &o->health_interval_s,
                "between health checks (default 10s)"),
        CLI_OPT(CLI_DURATION, "health-timeout", 0, "DUR", &o->health_timeout_s,
                "one health check (default 5s)"),
        CLI_OPT(CLI_COUNT, "health-retries", 0, "N", &retries,
                "failures in a row that make it unhealthy (default 3)", .min = 1,
                .max = 1000000, .why = "expected 1 or more"),
        CLI_OPT(CLI_DURATION, "ready-timeout", 0, "DUR", &o->ready_timeout_s,
                "give up waiting for readiness (default: wait)"),
        CLI_OPT(CLI_DURATION, "stall", 0, "DUR", &o->stall_s,
                "unhealthy (restarted under --restart) when the server's\n"
                "/metrics shows work running or waiting and no token for\n"
                "DUR; read at each health check (vLLM, SGLang, MindIE)", .min = 1e-9,
                .why = "must be positive", .words = "30s 1m 5m"),
        CLI_OPT(CLI_STRING, "metrics-url", 0, "URL", &o->metrics_url,
                "where (default: /metrics of --health-url's server)"),
        CLI_HEAD("other"),
        CLI_OPT(CLI_STRING, "audit-log", 0, "FILE", &rc->audit_path,
                "where kills and removals are recorded\n"
                "(default $HBMCTL_AUDIT_LOG or " HBM_AUDIT_DEFAULT_PATH ")"),
        CLI_GROUPS_HERE,
        CLI_OPTS_END,
    };
    const cli_spec spec = {
        .cmd = "run", .usage = "[OPTIONS] -- COMMAND [ARGS...]", .about = about, .opts = opts,
        .groups = CLI_G_LIVE, .common = &a->cc, .exits = exits,
        .bad_exit = HBM_RUN_EXIT_FAILED, .max_args = -1,
        /* options end at the first word of COMMAND, so its own flags stay its own */
        .stop_at_arg = true,
    };
    cli_args args;
    int prc = cli_parse(&spec, argc, argv, &args);
    o->health_retries = (int)retries;
    if (prc == CLI_CONTINUE && args.nargs == 0) {
        cli_help(&spec, stderr);
        prc = HBM_RUN_EXIT_FAILED;
    }
    if (prc == CLI_CONTINUE && progress_url(o, a->metrics_url, sizeof a->metrics_url))
        prc = HBM_RUN_EXIT_FAILED;
    if (prc == CLI_CONTINUE) {
        a->cmd = argv + argc - args.nargs; /* with stop_at_arg the arguments are argv's tail */
        a->ncmd = args.nargs;
    }
    cli_args_free(&args);
    return prc;
}

int cmd_run(int argc, char **argv)
{
    hbm_run_opts o;
    hbm_run_opts_init(&o);
    run_cli rc = {0};
    run_args a = {0};
    hbm_err err = {{0}};
    int prc = parse(&a, &o, &rc, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    const char *devices = a.devices, *model = a.model;
    char **cmd = a.cmd;
    int ncmd = a.ncmd;
    rc.audit_path = hbm_audit_path(rc.audit_path);

    size_t count = 0, nids = 0;
    int64_t *ids = NULL;
    if (devices && hbm_run_parse_devices(devices, &count, &ids, &nids, &err) < 0)
        return fail("%s", err.msg);

    hbm_obs obs;
    hbm_obs_init(&obs);
    bool have_obs = false;
    hbm_pick_result pick;
    memset(&pick, 0, sizeof pick);
    int code = 0;
    if (devices || model) {
        a.cc.src.want_topology = devices != NULL; /* --devices N picks by the links */
        if (hbm_observe(&obs, &a.cc.src, &err) < 0) {
            code = fail("cannot observe devices: %s", err.msg);
            goto out;
        }
        have_obs = true;
    }
    if (devices) {
        code = pick_devices(count, ids, nids, a.lease_name, &obs, &pick);
        if (code)
            goto out;
    }
    if (model) {
        code = preflight(model, cmd, ncmd, &obs, devices ? &pick : NULL);
        if (code)
            goto out;
    }
    if (a.expandable)
        alloc_conf(&obs, have_obs);

    o.argv = cmd;
    o.src = &a.cc.src;
    o.devices = pick.devices;
    o.ndevices = pick.n;
    o.log = log_line;
    o.audit = audit;
    o.ctx = &rc;
    hbm_obs_free(&obs);
    have_obs = false;

    hbm_run_result res;
    if (hbm_run_supervise(&o, &res, &err) < 0) {
        code = fail("%s", err.msg);
        goto out;
    }
    bool leased = pick.n > 0;
    hbm_pick_result_free(&pick); /* the leases end here, after memory and segments */
    memset(&pick, 0, sizeof pick);
    if (leased)
        fprintf(stderr, PREFIX "leases released\n");
    fprintf(stderr, PREFIX "summary: %s\n", res.summary ? res.summary : "");
    code = res.exit_code;
    hbm_run_result_free(&res);
out:
    if (have_obs)
        hbm_obs_free(&obs);
    hbm_pick_result_free(&pick);
    free(ids);
    return code;
}
