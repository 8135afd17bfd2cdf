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
#include "hbm/doctor.h"
#include "hbm/lease.h"
#include "hbm/plan.h"
#include "hbm/run.h"

#define PREFIX "hbmctl run: "

static void usage(FILE *f)
{
    fprintf(f,
        "usage: hbmctl run [OPTIONS] -- COMMAND [ARGS...]\n\n"
        "Runs COMMAND so that stopping it always gives the device back: hbmctl is its\n"
        "subreaper (or PID 1), forwards signals to its process group, and on SIGTERM/SIGINT\n"
        "or the command's exit ends every process of the tree (SIGTERM, grace, SIGKILL),\n"
        "waits for device memory to return, removes shared memory the tree left, releases\n"
        "its leases, prints one summary line and exits with the command's status.\n\n"
        "before the start:\n"
        "  --devices N|LIST       pick N free devices, or these ids (0,1  4-7  5,), lease\n"
        "                         them and export ASCEND_RT_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES\n"
        "  --lease-name NAME      name of the leases (default run)\n"
        "  --expandable-segments  set PYTORCH_NPU_ALLOC_CONF/PYTORCH_CUDA_ALLOC_CONF to\n"
        "                         expandable_segments:True unless already set otherwise\n"
        "  --preflight MODEL_DIR  plan the launch first (serving flags from COMMAND) and\n"
        "                         refuse to start when vLLM would fail (exit 125)\n"
        "tree and stop:\n"
        "  --setsid               the command in its own session (no controlling terminal)\n"
        "  --no-cgroup            no cgroup v2 leaf even when one can be made\n"
        "  --grace DUR            SIGTERM to SIGKILL (default 30s)\n"
        "  --kill-timeout DUR     bound on waiting after SIGKILL (default 10s)\n"
        "  --release-timeout DUR  bound on waiting for device memory (default 60s)\n"
        "while running:\n"
        "  --restart POLICY       never, on-failure, always (default never)\n"
        "  --max-restarts N[/WIN] restart budget (default 5/1d)\n"
        "  --backoff DUR          first restart delay, doubled each time up to 60s (default 1s)\n"
        "  --restart-on-mem PCT   drain and restart when device memory stays above PCT\n"
        "  --mem-window DUR       ... for this long (default 60s)\n"
        "  --mem-interval DUR     memory sampling period (default 5s)\n"
        "  --health-url URL       readiness wait, then periodic GET (2xx = healthy)\n"
        "  --health-interval DUR  (default 10s)   --health-timeout DUR (default 5s)\n"
        "  --health-retries N     failures in a row that make it unhealthy (default 3)\n"
        "  --ready-timeout DUR    give up waiting for readiness (default: wait)\n"
        "other:\n"
        "  --audit-log FILE       where kills and removals are recorded\n"
        "                         (default $HBMCTL_AUDIT_LOG or " HBM_AUDIT_DEFAULT_PATH ")\n"
        "  --backend NAME  --root DIR   how devices are observed (see hbmctl status --help)\n\n"
        "exit: the command's status, 128+N when signal N killed it; 125 hbmctl failed\n"
        "(bad usage, preflight refusal, no free device), 126 not executable, 127 not found.\n"
        "Event lines go to stderr prefixed \"hbmctl run: \". Details: docs/run.md\n");
}

enum {
    OPT_DEVICES = CLI_OPT_FIRST_FREE, OPT_LEASE_NAME, OPT_EXPANDABLE, OPT_PREFLIGHT,
    OPT_SETSID, OPT_NO_CGROUP, OPT_GRACE, OPT_KILL_TIMEOUT, OPT_RELEASE_TIMEOUT, OPT_RESTART,
    OPT_MAX_RESTARTS, OPT_BACKOFF, OPT_RESTART_ON_MEM, OPT_MEM_WINDOW, OPT_MEM_INTERVAL,
    OPT_HEALTH_URL, OPT_HEALTH_INTERVAL, OPT_HEALTH_TIMEOUT, OPT_HEALTH_RETRIES,
    OPT_READY_TIMEOUT, OPT_AUDIT_LOG,
};

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

static int dur(const char *arg, const char *opt, double *out)
{
    hbm_err err;
    if (hbm_parse_duration(arg, out, &err) < 0) {
        fail("%s: %s", opt, err.msg);
        return -1;
    }
    return 0;
}

/* The device the preflight judges: the chosen one with the least free memory, else the
 * first the visible-device variable names, else the first device. */
static hbm_device *preflight_device(hbm_obs *obs, const hbm_pick_result *pick)
{
    hbm_device *best = NULL;
    if (pick && pick->n) {
        for (size_t i = 0; i < pick->n; i++) {
            hbm_device *d = &obs->devs[pick->dev_index[i]];
            if (!best || d->memory_total_bytes - d->memory_used_bytes <
                             best->memory_total_bytes - best->memory_used_bytes)
                best = d;
        }
        return best;
    }
    if (obs->ndevs == 0)
        return NULL;
    const char *vis = getenv(hbm_vendor_visible_env(obs->devs[0].vendor));
    if (vis && *vis) {
        hbm_device *d = hbm_obs_find_device(obs, strtoll(vis, NULL, 10));
        if (d)
            return d;
    }
    return &obs->devs[0];
}

static int preflight(const char *model, char **argv, int argc, hbm_obs *obs,
                     const hbm_pick_result *pick)
{
    hbm_device *dev = preflight_device(obs, pick);
    if (!dev)
        return fail("preflight: %s", "no device is visible to plan against");
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = model;
    hbm_err err = {{0}};
    if (hbm_plan_args_from_argv(&in, argc, argv, &err) < 0)
        return fail("preflight: %s", err.msg);
    in.model_path = model;
    in.platform = dev->vendor == HBM_VENDOR_ASCEND ? HBM_PLAN_PLATFORM_ASCEND
                                                   : HBM_PLAN_PLATFORM_CUDA;
    in.device_name = dev->name;
    /* the same figures as `hbmctl plan --device auto` */
    hbm_plan_devmem dm;
    if (hbm_plan_device_memory(dev->name, in.platform, dev->memory_total_bytes,
                               dev->memory_used_bytes, &dm, &err) < 0)
        return fail("preflight: device %lld: %s", (long long)hbm_device_user_id(dev), err.msg);
    in.mem_total_bytes = dm.total_bytes;
    in.mem_free_bytes = dm.free_bytes;
    in.large_device = dm.large_device;
    hbm_plan_holder *holders = hbm_xcalloc(dev->nprocs ? dev->nprocs : 1, sizeof *holders);
    for (size_t i = 0; i < dev->nprocs; i++) {
        holders[i].pid = dev->procs[i].pid;
        snprintf(holders[i].name, sizeof holders[i].name, "%s", dev->procs[i].name);
        holders[i].memory_bytes = dev->procs[i].memory_bytes;
    }
    in.holders = holders;
    in.nholders = dev->nprocs;
    in.live = true;
    hbm_plan_result r;
    memset(&r, 0, sizeof r);
    int rc = hbm_plan_run(&in, &r, &err);
    free(holders);
    if (rc < 0) {
        hbm_plan_result_free(&r);
        return fail("preflight: cannot plan: %s", err.msg);
    }
    char *text = hbm_plan_verdict_text(&r);
    int code = 0;
    if (!r.fits) {
        fprintf(stderr, PREFIX "preflight refuses to start on device %lld (%s):\n",
                (long long)hbm_device_user_id(dev), dev->name);
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
    hbm_plan_result_free(&r);
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

int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"devices", required_argument, NULL, OPT_DEVICES},
        {"lease-name", required_argument, NULL, OPT_LEASE_NAME},
        {"expandable-segments", no_argument, NULL, OPT_EXPANDABLE},
        {"preflight", required_argument, NULL, OPT_PREFLIGHT},
        {"setsid", no_argument, NULL, OPT_SETSID},
        {"no-cgroup", no_argument, NULL, OPT_NO_CGROUP},
        {"grace", required_argument, NULL, OPT_GRACE},
        {"kill-timeout", required_argument, NULL, OPT_KILL_TIMEOUT},
        {"release-timeout", required_argument, NULL, OPT_RELEASE_TIMEOUT},
        {"restart", required_argument, NULL, OPT_RESTART},
        {"max-restarts", required_argument, NULL, OPT_MAX_RESTARTS},
        {"backoff", required_argument, NULL, OPT_BACKOFF},
        {"restart-on-mem", required_argument, NULL, OPT_RESTART_ON_MEM},
        {"mem-window", required_argument, NULL, OPT_MEM_WINDOW},
        {"mem-interval", required_argument, NULL, OPT_MEM_INTERVAL},
        {"health-url", required_argument, NULL, OPT_HEALTH_URL},
        {"health-interval", required_argument, NULL, OPT_HEALTH_INTERVAL},
        {"health-timeout", required_argument, NULL, OPT_HEALTH_TIMEOUT},
        {"health-retries", required_argument, NULL, OPT_HEALTH_RETRIES},
        {"ready-timeout", required_argument, NULL, OPT_READY_TIMEOUT},
        {"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
        CLI_COMMON_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    hbm_run_opts o;
    hbm_run_opts_init(&o);
    cli_common cc;
    cli_common_init(&cc);
    run_cli rc = {0};
    const char *devices = NULL, *lease_name = "run", *model = NULL;
    bool expandable = false;
    hbm_err err = {{0}};
    int opt;
    optind = 1;
    /* '+': options end at the first word of COMMAND, so its own flags stay its own */
    while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(stdout); return 0;
        case OPT_DEVICES: devices = optarg; break;
        case OPT_LEASE_NAME: lease_name = optarg; break;
        case OPT_EXPANDABLE: expandable = true; break;
        case OPT_PREFLIGHT: model = optarg; break;
        case OPT_SETSID: o.setsid = true; break;
        case OPT_NO_CGROUP: o.no_cgroup = true; break;
        case OPT_GRACE: if (dur(optarg, "--grace", &o.grace_s)) return 125; break;
        case OPT_KILL_TIMEOUT: if (dur(optarg, "--kill-timeout", &o.kill_wait_s)) return 125; break;
        case OPT_RELEASE_TIMEOUT:
            if (dur(optarg, "--release-timeout", &o.release_timeout_s)) return 125;
            break;
        case OPT_RESTART:
            if (hbm_run_parse_restart(optarg, &o.restart, &err) < 0)
                return fail("%s", err.msg);
            break;
        case OPT_MAX_RESTARTS:
            if (hbm_run_parse_budget(optarg, &o.budget, &err) < 0)
                return fail("%s", err.msg);
            break;
        case OPT_BACKOFF: if (dur(optarg, "--backoff", &o.backoff_s)) return 125; break;
        case OPT_RESTART_ON_MEM:
            if (hbm_parse_ratio(optarg, &o.restart_on_mem, &err) < 0)
                return fail("--restart-on-mem: %s", err.msg);
            break;
        case OPT_MEM_WINDOW: if (dur(optarg, "--mem-window", &o.mem_window_s)) return 125; break;
        case OPT_MEM_INTERVAL:
            if (dur(optarg, "--mem-interval", &o.mem_interval_s)) return 125;
            if (o.mem_interval_s <= 0)
                return fail("--mem-interval must be positive");
            break;
        case OPT_HEALTH_URL:
#ifndef HBM_HAVE_CURL
            return fail("--health-url: this build has no libcurl, so health checks are left "
                        "out (see hbmctl --version)");
#endif
            o.health_url = optarg;
            break;
        case OPT_HEALTH_INTERVAL:
            if (dur(optarg, "--health-interval", &o.health_interval_s)) return 125;
            break;
        case OPT_HEALTH_TIMEOUT:
            if (dur(optarg, "--health-timeout", &o.health_timeout_s)) return 125;
            break;
        case OPT_HEALTH_RETRIES:
            o.health_retries = atoi(optarg);
            if (o.health_retries < 1)
                return fail("--health-retries '%s': expected 1 or more", optarg);
            break;
        case OPT_READY_TIMEOUT:
            if (dur(optarg, "--ready-timeout", &o.ready_timeout_s)) return 125;
            break;
        case OPT_AUDIT_LOG: rc.audit_path = optarg; break;
        default:
            if (cli_common_opt(&cc, opt, optarg))
                break;
            fprintf(stderr, "hbmctl run: see 'hbmctl run --help'\n");
            return HBM_RUN_EXIT_FAILED;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return HBM_RUN_EXIT_FAILED;
    }
    if (cc.json || cc.src.snapshot)
        return fail("--json and --snapshot do not apply to run");
    char **cmd = argv + optind;
    int ncmd = argc - optind;
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
        if (hbm_observe(&obs, &cc.src, &err) < 0) {
            code = fail("cannot observe devices: %s", err.msg);
            goto out;
        }
        have_obs = true;
    }
    if (devices) {
        code = pick_devices(count, ids, nids, lease_name, &obs, &pick);
        if (code)
            goto out;
    }
    if (model) {
        code = preflight(model, cmd, ncmd, &obs, devices ? &pick : NULL);
        if (code)
            goto out;
    }
    if (expandable)
        alloc_conf(&obs, have_obs);

    o.argv = cmd;
    o.src = &cc.src;
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
