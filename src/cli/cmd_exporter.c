/* hbmctl exporter: Prometheus metrics over HTTP (libmicrohttpd, epoll). Left out of builds
 * without libmicrohttpd (the static build): main.c then lists it as left out. */
#ifdef HBM_HAVE_MHD
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "hbm/export.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hbmctl exporter [--listen ADDR] [--min-interval DUR] [OPTIONS]\n\n"
            "Serves Prometheus metrics (every device fact, process memory, verdicts, leak\n"
            "state, doctor findings, host hugepages and shared memory, leases) on /metrics and\n"
            "a health answer on /healthz. Observations are reused for --min-interval, so any\n"
            "number of scrapes costs at most one driver query per interval. Metric names:\n"
            "docs/metrics.md.\n\n"
            "options:\n"
            "  --listen ADDR          address to serve on (default 127.0.0.1:9464; [::1]:9464,\n"
            "                         :9464 for every IPv4 address; numeric only)\n"
            "  --min-interval DUR     reuse an observation this long (default 1s)\n"
            "  --max-connections N    concurrent connections (default 2048)\n"
            "  --timeout DUR          close idle connections after this (default 10s)\n"
            "  --threshold PCT|SIZE   leak threshold per device, e.g. 90%% (default none)\n"
            "  --lease-dir DIR        lease directory (default /run/hbmctl, env "
            "HBMCTL_LEASE_DIR)\n"
            "  --once                 print the metrics once to standard output and exit\n"
            "  --snapshot FILE        serve a snapshot, re-read at each observation\n"
            "  --backend NAME         auto, nvml, dcmi, npu-smi, snapshot (default auto)\n"
            "  --root DIR             read /proc, /sys and /dev under DIR (tests; env "
            "HBMCTL_ROOT)\n"
            "  -h, --help             this text\n\n"
            "exit: 0 stopped by SIGTERM/SIGINT (or --once printed), 2 bad usage or cannot "
            "listen\n");
}

enum {
    OPT_LISTEN = CLI_OPT_FIRST_FREE,
    OPT_MIN_INTERVAL,
    OPT_MAX_CONN,
    OPT_TIMEOUT,
    OPT_THRESHOLD,
    OPT_LEASE_DIR,
    OPT_ONCE,
};

/* Each connection needs a descriptor: take what the hard limit allows. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int cmd_exporter(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_LONGOPTS,
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"min-interval", required_argument, NULL, OPT_MIN_INTERVAL},
        {"max-connections", required_argument, NULL, OPT_MAX_CONN},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"threshold", required_argument, NULL, OPT_THRESHOLD},
        {"lease-dir", required_argument, NULL, OPT_LEASE_DIR},
        {"once", no_argument, NULL, OPT_ONCE},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    cli_common common;
    cli_common_init(&common);
    hbm_exporter_opts xo = {0};
    hbm_leak_params_default(&xo.leak);
    xo.min_interval = 1.0;
    hbm_export_server_opts so = {.listen = "127.0.0.1:9464"};
    double timeout = 10;
    bool once = false;
    hbm_err err = {{0}};
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (cli_common_opt(&common, opt, optarg))
            continue;
        switch (opt) {
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        case OPT_LISTEN:
            so.listen = optarg;
            break;
        case OPT_MIN_INTERVAL:
            if (hbm_parse_duration(optarg, &xo.min_interval, &err) < 0 || xo.min_interval <= 0) {
                cli_errorf("--min-interval %s: %s", optarg, err.msg[0] ? err.msg : "must be > 0");
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_MAX_CONN: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 1000000) {
                cli_errorf("--max-connections %s: want 1..1000000", optarg);
                return CLI_EXIT_ERROR;
            }
            so.max_connections = (unsigned)v;
            break;
        }
        case OPT_TIMEOUT:
            if (hbm_parse_duration(optarg, &timeout, &err) < 0 || timeout < 1) {
                cli_errorf("--timeout %s: %s", optarg, err.msg[0] ? err.msg : "want 1s or more");
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_THRESHOLD:
            if (hbm_watch_parse_limit(optarg, &xo.leak.threshold_bytes, &xo.leak.threshold_ratio,
                                      &err) < 0) {
                cli_errorf("--threshold: %s", err.msg);
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_LEASE_DIR:
            xo.lease_dir = optarg;
            break;
        case OPT_ONCE:
            once = true;
            break;
        default:
            return cli_usage_error("exporter");
        }
    }
    if (optind < argc || common.json) {
        cli_errorf("exporter takes no arguments and no --json");
        return cli_usage_error("exporter");
    }
    so.timeout_s = (unsigned)ceil(timeout);
    xo.src = common.src;
    hbm_exporter *ex = hbm_exporter_new(&xo);
    if (once) {
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
    if (hbm_export_server_start(ex, &so, &srv, &err) < 0) {
        cli_errorf("%s", err.msg);
        hbm_exporter_free(ex);
        return CLI_EXIT_ERROR;
    }
    fprintf(stderr, "hbmctl exporter: serving /metrics and /healthz on %s (port %d)\n",
            so.listen, hbm_export_server_port(srv));
    int sig = 0;
    sigwait(&stop, &sig);
    hbm_export_server_stop(srv);
    hbm_exporter_free(ex);
    return CLI_EXIT_OK;
}
#endif
