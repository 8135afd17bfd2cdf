/* hbmctl probe: a health check for Kubernetes exec probes and scripts, in place of
 * `npu-smi info | grep | awk`. Exit 0 healthy, 1 unhealthy, 2 could not check; one line
 * that says why. The whole probe has a deadline, so a hung driver cannot hang it. The
 * checks themselves are the probe library's (hbm/probe.h). */
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"
#include "hbm/probe.h"
#include "hbm/util.h"

static const char about[] =
    "Checks device health, device memory against a limit and, optionally, that an\n"
    "HTTP endpoint answers 2xx. Prints one line that says why. Meant for Kubernetes\n"
    "exec probes:  livenessProbe: {exec: {command: [hbmctl, probe, --max-mem, 90%,\n"
    "--url, http://127.0.0.1:8000/health]}}\n";

/* The deadline's line: NPD's 80 characters in --npd mode; with --json, the document of a
 * probe that could not check (the same fields as hbm_probe_json's). */
static const char *deadline_msg = "hbmctl probe: could not check: deadline passed (driver or "
                                  "endpoint did not answer)\n";
static const char deadline_json[] =
    "{\"status\": \"unknown\", \"exit\": 2, \"reason\": \"deadline passed (driver or endpoint "
    "did not answer)\", \"checks\": []}\n";

static void on_deadline(int sig)
{
    (void)sig;
    /* A hung npu-smi goes with the probe: nothing it started outlives the deadline. */
    hbm_children_kill();
    ssize_t w = write(STDOUT_FILENO, deadline_msg, strlen(deadline_msg));
    (void)w;
    _exit(HBM_PROBE_UNKNOWN);
}

/* Arms (seconds > 0) or disarms (0) the deadline, to the microsecond: alarm() would round
 * 1500ms up to 2s. */
static void deadline_arm(double seconds)
{
    struct itimerval it = {{0, 0}, {(time_t)seconds,
                                     (suseconds_t)((seconds - floor(seconds)) * 1e6)}};
    if (seconds > 0 && it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
        it.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &it, NULL);
}

/* Observes as the check needs: with the host's processes joined or from the driver alone. */
static bool observe(hbm_opt_common *common, bool host, hbm_obs *obs, hbm_err *err)
{
    hbm_obs_init(obs);
    common->src.no_host = !host;
    return hbm_observe(obs, &common->src, err) == 0;
}

/* The one line (or the JSON) of a probe; releases its checks. */
static void report(hbm_probe *p, bool json)
{
    if (json) {
        cli_json_out(hbm_probe_json(p));
        return;
    }
    printf("hbmctl probe: %s: %s\n", p->worst == HBM_PROBE_UNKNOWN ? "could not check"
                                     : hbm_probe_result_name(p->worst),
           hbm_probe_reason(p));
    hbm_probe_free(p);
}

/* --npd CHECK: NPD's one line, cut to what NPD keeps, and its exit code. */
static int npd_run(hbm_opt_common *common, hbm_npd_check c, const char *history,
                   const hbm_probe_progress_opts *po)
{
    char line[700];
    hbm_probe_result r;
    if (c == HBM_NPD_STALLED) {
        r = hbm_npd_stalled(po, line, sizeof line);
    } else {
        hbm_obs obs;
        hbm_err err = {{0}};
        bool ok = observe(common, hbm_npd_needs_host(c), &obs, &err);
        r = hbm_npd_run(c, &obs, ok, &err, history, line, sizeof line);
        hbm_obs_free(&obs);
    }
    deadline_arm(0);
    printf("%.*s\n", (int)hbm_npd_fit(line), line);
    return r;
}

int cmd_probe(int argc, char **argv)
{
    hbm_opt_common common;
    hbm_opt_common_init(&common);
    cli_limit max = {HBM_UNKNOWN, NAN};
    double timeout = 2, deadline = -1;
    hbm_opt_devices devices = {{0}, 0};
    const char *url = NULL;
    bool no_devices = false;
    hbm_probe_progress_opts po = {.stall = 60};
    int npd = -1;
    const char *history = "/run/hbmctl/npd-history.json";
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_CALL, "max-mem", 0, "PCT|SIZE", &max,
                "unhealthy when a checked device uses more (80%, 0.8, 60GiB)", .fn = cli_read_limit,
                .words = "80% 90% 95%"),
        HBM_OPT(HBM_OPT_DEVICES, "device", 0, "ID", &devices,
                "check only this device (logic id on Ascend, index on NVIDIA);\n"
                "repeat for several; default every device"),
        HBM_OPT(HBM_OPT_STRING, "url", 0, "URL", &url,
                "unhealthy unless a GET answers 2xx within --timeout"),
        HBM_OPT(HBM_OPT_STRING, "metrics-url", 0, "URL", &po.url,
                "the server's Prometheus /metrics (vLLM, SGLang, MindIE):\n"
                "unhealthy once work runs or waits and no token came for\n"
                "--stall; the previous sample is kept in --state-file"),
        HBM_OPT(HBM_OPT_DURATION, "stall", 0, "DUR", &po.stall,
                "no token this long with work is a stall (default 60s)", .min = 1e-9,
                .why = "must be above 0", .words = "30s 1m 5m"),
        HBM_OPT(HBM_OPT_STRING, "state-file", 0, "FILE", &po.state_file,
                "where the previous sample lives (default\n"
                "/run/hbmctl/progress-HASH.json, one per URL); missing or\n"
                "corrupt: a first sample, healthy, judged at the next run"),
        HBM_OPT(HBM_OPT_DURATION, "timeout", 0, "DUR", &timeout, "HTTP time limit (default 2s)",
                .min = 1e-9, .why = "must be above 0"),
        HBM_OPT(HBM_OPT_DURATION, "deadline", 0, "DUR", &deadline,
                "give up on everything after this (default 10s, 4s with --npd):\nexit 2",
                .min = 1e-9, .why = "must be above 0"),
        HBM_OPT(HBM_OPT_FLAG, "no-devices", 0, NULL, &no_devices,
                "check only the URLs (no driver query)"),
        HBM_OPT(HBM_OPT_ENUM, "npd", 0, "CHECK", &npd,
                "node-problem-detector custom plugin: orphaned, unaccounted,\n"
                "unhealthy or leaking devices, or a stalled server (with\n"
                "--metrics-url); exit 0 OK, 1 NonOK, 2 Unknown,\n"
                "one line of at most 80 characters (docs/kubernetes.md)",
                .choices = hbm_npd_names),
        HBM_OPT(HBM_OPT_STRING, "history", 0, "FILE", &history,
                "memory history kept between --npd leaking runs\n"
                "(default /run/hbmctl/npd-history.json)"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "probe", .usage = "[--max-mem PCT|SIZE] [--device ID]... [--url URL] [OPTIONS]",
        .about = about, .opts = opts, .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE,
        .common = &common,
        .json_help = "{\"status\", \"exit\", \"reason\", \"checks\": [...]}",
        .snapshot_help = "check a snapshot instead of the live devices",
        .exits = "exit: 0 healthy (progressing, idle or a first sample), 1 unhealthy (a stall,\n"
                 "      no 2xx, timeout), 2 could not check (no backend, unknown device, memory\n"
                 "      not reported, a page that is not Prometheus text or has no engine\n"
                 "      metrics, state file not writable, bad option, deadline passed)\n",
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    if (no_devices && !url && !po.url) {
        printf("hbmctl probe: could not check: --no-devices needs --url or --metrics-url\n");
        return HBM_PROBE_UNKNOWN;
    }
    po.timeout = timeout;
    if (npd >= 0)
        /* Well inside NPD's 5 s plugin timeout, so NPD hears Unknown, not a kill. */
        deadline_msg = "unknown: deadline passed (the driver did not answer)\n";
    else if (common.json)
        deadline_msg = deadline_json;
    if (deadline < 0)
        deadline = npd >= 0 ? 4 : 10;
    struct sigaction sa = {0};
    sa.sa_handler = on_deadline;
    sigaction(SIGALRM, &sa, NULL);
    deadline_arm(deadline);
    if (npd >= 0)
        return npd_run(&common, (hbm_npd_check)npd, history, &po);
    hbm_probe p;
    hbm_probe_init(&p);
    if (!no_devices) {
        hbm_obs obs;
        hbm_err err = {{0}};
        /* health and memory come from the driver alone */
        bool ok = observe(&common, false, &obs, &err);
        hbm_probe_devices(&p, &obs, ok, &err, devices.id, devices.n,
                          (hbm_probe_limit){max.bytes, max.ratio});
        hbm_obs_free(&obs);
    }
    if (url)
        hbm_probe_url(&p, url, timeout);
    if (po.url)
        hbm_probe_progress(&p, &po);
    deadline_arm(0);
    hbm_probe_result worst = p.worst;
    report(&p, common.json);
    return worst;
}
