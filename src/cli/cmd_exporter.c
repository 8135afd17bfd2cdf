/* hbmctl exporter: Prometheus metrics over HTTP (libmicrohttpd, epoll). Left out of builds
 * without libmicrohttpd (the static build): main.c then lists it as left out. */
#ifdef HBM_HAVE_MHD
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "cli_progress.h"
#include "hbm/backend.h"
#include "hbm/export.h"

static const char about[] =
    "Serves Prometheus metrics (every device fact, process memory, verdicts, leak\n"
    "state, doctor findings, host hugepages and shared memory, leases) on /metrics and\n"
    "a health answer on /healthz. Observations are reused for --min-interval, so any\n"
    "number of scrapes costs at most one driver query per interval. Metric names:\n"
    "docs/metrics.md.\n";

/* Each connection needs a descriptor: take what the hard limit allows. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* --once: the metrics on standard output; frees ex. */
static int print_once(hbm_exporter *ex)
{
    size_t len;
    char *body = hbm_exporter_metrics(ex, &len);
    fwrite(body, 1, len, stdout);
    free(body);
    char why[1100];
    bool ok = hbm_exporter_healthy(ex, why, sizeof why);
    hbm_exporter_free(ex);
    if (!ok)
        cli_errorf("%s", why);
    return ok ? CLI_EXIT_OK : CLI_EXIT_PROBLEM;
}

/* Serves until SIGTERM, SIGINT or SIGHUP. */
static int serve(hbm_exporter *ex, const hbm_export_server_opts *so)
{
    hbm_err err = {{0}};
    raise_nofile();
    /* Block the stop signals before the server thread starts, so only sigwait sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    hbm_export_server *srv;
    if (hbm_export_server_start(ex, so, &srv, &err) < 0) {
        cli_errorf("%s", err.msg);
        return CLI_EXIT_ERROR;
    }
    fprintf(stderr, "hbmctl exporter: serving /metrics and /healthz on %s%s (port %d)\n",
            so->web && so->web->cert_pem ? "https://" : "", so->listen,
            hbm_export_server_port(srv));
    int sig = 0;
    sigwait(&stop, &sig);
    /* A scrape waiting for a wedged driver ends now, so stopping the server need not wait
     * out --vendor-timeout. */
    hbm_backend_stop();
    hbm_export_server_stop(srv);
    return CLI_EXIT_OK;
}

/* Reads the options, then prints once or serves; servers: the --metrics-url ones. */
static int exporter(int argc, char **argv, hbm_progress_servers *servers)
{
    hbm_opt_common common;
    hbm_opt_common_init(&common);
    hbm_exporter_opts xo = {0};
    hbm_leak_params_default(&xo.leak);
    xo.min_interval = 1.0;
    hbm_export_server_opts so = {.listen = "127.0.0.1:9464"};
    cli_limit threshold = {xo.leak.threshold_bytes, xo.leak.threshold_ratio};
    long max_conn = 0, per_client = 0;
    double timeout = 10;
    bool once = false;
    const char *web_config = NULL;
    hbm_err err = {{0}};
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_STRING, "listen", 0, "ADDR", &so.listen,
                "address to serve on (default 127.0.0.1:9464; [::1]:9464,\n"
                ":9464 for every IPv4 address; numeric only)",
                .words = "127.0.0.1:9464 0.0.0.0:9464 [::1]:9464"),
        HBM_OPT(HBM_OPT_DURATION, "min-interval", 0, "DUR", &xo.min_interval,
                "reuse an observation this long (default 1s)", .min = 1e-9,
                .why = "must be > 0"),
        HBM_OPT(HBM_OPT_COUNT, "max-connections", 0, "N", &max_conn,
                "concurrent connections (default 2048)", .min = 1, .max = 1000000),
        HBM_OPT(HBM_OPT_COUNT, "max-per-client", 0, "N", &per_client,
                "concurrent connections from one client address (default 64)",
                .min = 1, .max = 1000000),
        HBM_OPT(HBM_OPT_DURATION, "timeout", 0, "DUR", &timeout,
                "close idle connections after this (default 10s)", .min = 1,
                .why = "want 1s or more"),
        HBM_OPT(HBM_OPT_CALL, "threshold", 0, "PCT|SIZE", &threshold,
                "leak threshold per device, e.g. 90% (default none)", .fn = cli_read_limit,
                .words = "80% 90% 95%"),
        HBM_OPT(HBM_OPT_STRING, "lease-dir", 0, "DIR", &xo.lease_dir,
                "lease directory (default /run/hbmctl, env HBMCTL_LEASE_DIR)"),
        HBM_OPT(HBM_OPT_STRING, "audit-log", 0, "FILE", &xo.audit_path,
                "audit log counted into hbmctl_remediations_total (default\n"
                "$HBMCTL_AUDIT_LOG, else " HBM_AUDIT_DEFAULT_PATH ")"),
        HBM_OPT(HBM_OPT_STRING, "clean-state", 0, "FILE", &xo.clean_state,
                "the remediation policy's state file: its mtime is its last\n"
                "run (default " HBM_CLEAN_STATE_DEFAULT ")"),
        HBM_OPT(HBM_OPT_STRING, "web-config", 0, "FILE", &web_config,
                "TLS and basic auth, in the exporter toolkit's format:\n"
                "tls_server_config {cert_file, key_file},\n"
                "basic_auth_users {NAME: BCRYPT_HASH} (docs/metrics.md)"),
        HBM_OPT(HBM_OPT_FLAG, "once", 0, NULL, &once,
                "print the metrics once to standard output and exit"),
        CLI_PROGRESS_OPTS(servers),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "exporter", .usage = "[--listen ADDR] [--min-interval DUR] [OPTIONS]",
        .about = about, .opts = opts, .groups = HBM_OPT_G_LIVE, .common = &common,
        .exits = "exit: 0 stopped by SIGTERM/SIGINT (or --once printed), 2 bad usage, bad web "
                 "config\n      or cannot listen\n",
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    xo.leak.threshold_bytes = threshold.bytes;
    xo.leak.threshold_ratio = threshold.ratio;
    so.max_connections = (unsigned)max_conn;
    so.per_client = (unsigned)per_client;
    so.timeout_s = (unsigned)ceil(timeout);
    static hbm_webconfig web;
    if (web_config) {
        if (hbm_webconfig_load(web_config, &web, &err) < 0) {
            cli_errorf("--web-config %s", err.msg);
            return CLI_EXIT_ERROR;
        }
        so.web = &web;
    }
    xo.src = common.src;
    xo.servers = servers->n ? servers : NULL;
    hbm_exporter *ex = hbm_exporter_new(&xo);
    if (once) {
        rc = print_once(ex);
        hbm_webconfig_free(&web);
        return rc;
    }

    rc = serve(ex, &so);
    hbm_exporter_free(ex);
    hbm_webconfig_free(&web);
    return rc;
}

int cmd_exporter(int argc, char **argv)
{
    hbm_progress_servers servers;
    hbm_progress_servers_init(&servers, 60, 2);
    int code = exporter(argc, argv, &servers);
    hbm_progress_servers_free(&servers);
    return code;
}
#endif
