/* hbmctl run: the supervisor's front end. Before the start it leases devices, sets the
 * allocator and refuses a launch the planner says will fail; then it hands over to
 * hbm_run_supervise and exits with the child's status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hbm/audit.h"
#include "hbm/preflight.h"
#include "hbm/progress.h"
#include "hbm/run.h"
#include "run_lines.h"

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

/* What the command line asks of run besides the supervisor's own options. */
typedef struct run_args {
    hbm_opt_common cc;
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
            return cli_run_fail("--stall needs --health-url or --metrics-url (the server's "
                            "/metrics)");
        hbm_progress_metrics_url(o->health_url, buf, n);
        o->metrics_url = buf;
    }
    if (o->metrics_url && o->stall_s <= 0)
        return cli_run_fail("--metrics-url is read for --stall DUR: give both");
    return 0;
}

static int parse(run_args *a, hbm_run_opts *o, cli_run_sinks *rc, int argc, char **argv)
{
    hbm_opt_common_init(&a->cc);
    a->lease_name = "run";
    long retries = o->health_retries;
    const hbm_opt opts[] = {
        HBM_OPT_HEAD("before the start"),
        HBM_OPT(HBM_OPT_STRING, "devices", 0, "N|LIST", &a->devices,
                "pick N free devices, or these ids (0,1  4-7  5,), lease\n"
                "them and export ASCEND_RT_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES"),
        HBM_OPT(HBM_OPT_STRING, "lease-name", 0, "NAME", &a->lease_name,
                "name of the leases (default run)"),
        HBM_OPT(HBM_OPT_FLAG, "expandable-segments", 0, NULL, &a->expandable,
                "set PYTORCH_NPU_ALLOC_CONF/PYTORCH_CUDA_ALLOC_CONF to\n"
                "expandable_segments:True unless already set otherwise"),
        HBM_OPT(HBM_OPT_STRING, "preflight", 0, "MODEL_DIR", &a->model,
                "plan the launch first (serving flags from COMMAND) and\n"
                "refuse to start when vLLM would fail (exit 125)"),
        HBM_OPT_HEAD("tree and stop"),
        HBM_OPT(HBM_OPT_FLAG, "setsid", 0, NULL, &o->setsid,
                "the command in its own session (no controlling terminal)"),
        HBM_OPT(HBM_OPT_FLAG, "no-cgroup", 0, NULL, &o->no_cgroup,
                "no cgroup v2 leaf even when one can be made"),
        HBM_OPT(HBM_OPT_DURATION, "grace", 0, "DUR", &o->grace_s,
                "SIGTERM to SIGKILL (default 30s)"),
        HBM_OPT(HBM_OPT_DURATION, "kill-timeout", 0, "DUR", &o->kill_wait_s,
                "bound on waiting after SIGKILL (default 10s)"),
        HBM_OPT(HBM_OPT_DURATION, "release-timeout", 0, "DUR", &o->release_timeout_s,
                "bound on waiting for device memory (default 60s)"),
        HBM_OPT_HEAD("while running"),
        HBM_OPT(HBM_OPT_CALL, "restart", 0, "POLICY", &o->restart,
                "never, on-failure, always (default never)", .fn = read_restart,
                .words = "never on-failure always"),
        HBM_OPT(HBM_OPT_CALL, "max-restarts", 0, "N[/WIN]", &o->budget,
                "restart budget (default 5/1d)", .fn = read_budget),
        HBM_OPT(HBM_OPT_DURATION, "backoff", 0, "DUR", &o->backoff_s,
                "first restart delay, doubled each time up to 60s (default 1s)"),
        HBM_OPT(HBM_OPT_RATIO, "restart-on-mem", 0, "PCT", &o->restart_on_mem,
                "drain and restart when device memory stays above PCT",
                .words = "80% 90% 95%"),
        HBM_OPT(HBM_OPT_DURATION, "mem-window", 0, "DUR", &o->mem_window_s,
                "... for this long (default 60s)"),
        HBM_OPT(HBM_OPT_DURATION, "mem-interval", 0, "DUR", &o->mem_interval_s,
                "memory sampling period (default 5s)", .min = 1e-9, .why = "must be positive"),
        HBM_OPT(HBM_OPT_CALL, "health-url", 0, "URL", &o->health_url,
                "readiness wait, then periodic GET (2xx = healthy)", .fn = read_health_url),
        HBM_OPT(HBM_OPT_DURATION, "health-interval", 0, "DUR", &o->health_interval_s,
                "between health checks (default 10s)"),
        HBM_OPT(HBM_OPT_DURATION, "health-timeout", 0, "DUR", &o->health_timeout_s,
                "one health check (default 5s)"),
        HBM_OPT(HBM_OPT_COUNT, "health-retries", 0, "N", &retries,
                "failures in a row that make it unhealthy (default 3)", .min = 1,
                .max = 1000000, .why = "expected 1 or more"),
        HBM_OPT(HBM_OPT_DURATION, "ready-timeout", 0, "DUR", &o->ready_timeout_s,
                "give up waiting for readiness (default: wait)"),
        HBM_OPT(HBM_OPT_DURATION, "stall", 0, "DUR", &o->stall_s,
                "unhealthy (restarted under --restart) when the server's\n"
                "/metrics shows work running or waiting and no token for\n"
                "DUR; read at each health check (vLLM, SGLang, MindIE)", .min = 1e-9,
                .why = "must be positive", .words = "30s 1m 5m"),
        HBM_OPT(HBM_OPT_STRING, "metrics-url", 0, "URL", &o->metrics_url,
                "where (default: /metrics of --health-url's server)"),
        HBM_OPT_HEAD("other"),
        HBM_OPT(HBM_OPT_STRING, "audit-log", 0, "FILE", &rc->audit_path,
                "where kills and removals are recorded\n"
                "(default $HBMCTL_AUDIT_LOG or " HBM_AUDIT_DEFAULT_PATH ")"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "run", .usage = "[OPTIONS] -- COMMAND [ARGS...]", .about = about, .opts = opts,
        .groups = HBM_OPT_G_LIVE, .common = &a->cc, .exits = exits,
        .bad_exit = HBM_RUN_EXIT_FAILED, .max_args = -1,
        /* options end at the first word of COMMAND, so its own flags stay its own */
        .stop_at_arg = true,
    };
    hbm_opt_args args;
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
    hbm_opt_args_free(&args);
    return prc;
}

/* The devices leased and the verdict shown, then the command under the supervisor; the
 * leases end after it (after memory and segments). */
static int start(run_args *a, hbm_run_opts *o, cli_run_sinks *rc, hbm_preflight_start *st)
{
    const hbm_pick_result *pick = &st->pick;
    if (pick->n)
        cli_run_leased(pick);
    if (st->judged && cli_run_verdict(&st->verdict))
        return HBM_RUN_EXIT_FAILED;
    if (a->expandable)
        cli_run_alloc_conf(st);
    o->argv = a->cmd;
    o->src = &a->cc.src;
    o->devices = st->pick.devices;
    o->ndevices = st->pick.n;
    o->log = cli_run_log_line;
    o->audit = cli_run_audit;
    o->ctx = rc;
    hbm_run_result res;
    hbm_err err = {{0}};
    if (hbm_run_supervise(o, &res, &err) < 0)
        return cli_run_fail("%s", err.msg);
    bool leased = st->pick.n > 0;
    hbm_pick_result_free(&st->pick);
    memset(&st->pick, 0, sizeof st->pick);
    if (leased)
        fprintf(stderr, RUN_PREFIX "leases released\n");
    fprintf(stderr, RUN_PREFIX "summary: %s\n", res.summary ? res.summary : "");
    int code = res.exit_code;
    hbm_run_result_free(&res);
    return code;
}

int cmd_run(int argc, char **argv)
{
    hbm_run_opts o;
    hbm_run_opts_init(&o);
    cli_run_sinks rc = {0};
    run_args a = {0};
    hbm_err err = {{0}};
    int prc = parse(&a, &o, &rc, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    rc.audit_path = hbm_audit_path(rc.audit_path);
    hbm_preflight_start_opts po = {.src = &a.cc.src, .lease_name = a.lease_name,
                                   .model = a.model, .argc = a.ncmd, .argv = a.cmd};
    int64_t *ids = NULL;
    if (a.devices && hbm_run_parse_devices(a.devices, &po.count, &ids, &po.nids, &err) < 0)
        return cli_run_fail("%s", err.msg);
    po.ids = ids;
    hbm_preflight_start st;
    int code;
    if (hbm_preflight_start_run(&po, &st, &err) < 0)
        code = cli_run_fail("%s", err.msg);
    else if (st.outcome == HBM_PREFLIGHT_NO_DEVICES)
        code = cli_run_no_devices(&st.pick, po.count);
    else
        code = start(&a, &o, &rc, &st);
    hbm_preflight_start_free(&st);
    free(ids);
    return code;
}
