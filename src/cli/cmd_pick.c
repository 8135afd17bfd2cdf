/* hbmctl pick N: free devices, one interconnect domain first, optionally leased. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_findings.h"
#include "hbm/lease.h"

static const char about[] =
    "Chooses N FREE devices, preferring one interconnect domain (HCCS, NVLink) and the\n"
    "fewest hops, and prints the visible-device variable (logic ids on Ascend,\n"
    "indexes on NVIDIA). Says why each other device was refused.\n";

static const char exits[] =
    "exit: 0 chosen (and leased), 1 fewer than N devices qualify (each refusal on\n"
    "      stderr; nothing is leased), 2 could not look, bad usage, or the lease\n"
    "      directory cannot be used (the message says who owns it)\n"
    "example: eval \"$(hbmctl pick 2 --lease web)\" && vllm serve ... -tp 2\n";

static const char *const formats[] = {"env", "list", "json", NULL};
enum { FORMAT_ENV, FORMAT_LIST, FORMAT_JSON };

/* One refusal per device, reasons wrapped under each other within 100 columns. */
static void print_refusals(const hbm_pick_result *r)
{
    for (size_t i = 0; i < r->nrefused; i++) {
        char label[32] = "  device -";
        if (r->refused[i].device >= 0)
            snprintf(label, sizeof label, "  device %lld", (long long)r->refused[i].device);
        cli_wrap(stderr, label, 15, r->refused[i].why);
    }
}

int cmd_pick(int argc, char **argv)
{
    hbm_opt_common c;
    hbm_opt_common_init(&c);
    hbm_pick_opts po = {.min_free_bytes = HBM_UNKNOWN};
    const char *lease_dir_opt = NULL;
    int format = FORMAT_ENV;
    long hold_pid = 0;
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_SIZE, "min-free", 0, "SIZE", &po.min_free_bytes,
                "refuse devices with less free memory (e.g. 30GiB)"),
        HBM_OPT(HBM_OPT_ENUM, "format", 0, "F", &format,
                "env (default): ASCEND_RT_VISIBLE_DEVICES=0,1\n"
                "list: 0,1    json: {\"devices\",\"env\",\"refused\",\n"
                "\"placement\",\"lease\"} (docs/doctor.md)", .choices = formats),
        HBM_OPT(HBM_OPT_STRING, "lease", 0, "NAME", &po.lease_name,
                "take an exclusive lease on each device: a small holder\n"
                "process keeps it until --hold-pid exits"),
        HBM_OPT(HBM_OPT_COUNT, "hold-pid", 0, "PID", &hold_pid,
                "the process whose exit ends the lease (default: the caller,\n"
                "i.e. pick's parent; from a pipeline or subshell pass $$)", .min = 1,
                .max = 0x3fffffff, .why = "not a process id"),
        HBM_OPT(HBM_OPT_STRING, "lease-dir", 0, "DIR", &lease_dir_opt,
                "lease files (default $HBMCTL_LEASE_DIR, else " HBM_LEASE_DEFAULT_DIR ");\n"
                "made mode 1777 with files 0666 so every user shares it"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "pick", .usage = "N [OPTIONS]", .about = about, .opts = opts,
        .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &c, .exits = exits, .max_args = 1,
    };
    hbm_opt_args args;
    int prc = cli_parse(&spec, argc, argv, &args);
    const char *count = args.nargs == 1 ? args.args[0] : NULL;
    hbm_opt_args_free(&args);
    if (prc != CLI_CONTINUE)
        return prc;
    if (c.json)
        format = FORMAT_JSON;
    if (!count) {
        cli_errorf("pick needs one argument: the number of devices");
        fprintf(stderr, "hbmctl pick: see 'hbmctl pick --help'\n");
        return CLI_EXIT_ERROR;
    }
    char *end;
    long n = strtol(count, &end, 10);
    if (*end || n < 1 || n > 4096) {
        cli_errorf("pick: '%s' is not a device count", count);
        return CLI_EXIT_ERROR;
    }
    po.n = (size_t)n;
    if (hold_pid && !po.lease_name) {
        cli_errorf("--hold-pid needs --lease NAME");
        return CLI_EXIT_ERROR;
    }
    if (!hold_pid)
        hold_pid = getppid();
    const char *dir = hbm_lease_dir(lease_dir_opt);
    po.lease_dir = dir;

    c.src.want_topology = true; /* placement follows the links */
    hbm_obs obs;
    if (!cli_observe(&c, &obs))
        return CLI_EXIT_ERROR;
    hbm_pick_result r;
    hbm_err err = {{0}};
    int rc = hbm_pick(&obs, &po, &r, &err);
    if (rc < 0) {
        cli_errorf("pick: %s", err.msg);
        hbm_obs_free(&obs);
        return CLI_EXIT_ERROR;
    }
    pid_t holder = 0;
    if (rc == 0 && po.lease_name) {
        if (hbm_lease_spawn_holder(po.lease_name, r.lease_fds, r.devices, r.n, (int)hold_pid,
                                   &holder, &err) < 0) {
            cli_errorf("pick: %s", err.msg);
            hbm_pick_result_free(&r);
            hbm_obs_free(&obs);
            return CLI_EXIT_ERROR;
        }
    }
    bool json = format == FORMAT_JSON;
    if (json) {
        cli_json_out(hbm_pick_result_json(&r, po.lease_name, (int)holder, (int)hold_pid, dir));
    } else if (rc == 0) {
        if (format == FORMAT_ENV)
            printf("%s=%s\n", r.env_name, r.env_value);
        else
            printf("%s\n", r.env_value);
    }
    if (rc == 1) {
        cli_errorf("cannot pick %ld device%s: %zu usable of %zu", n, n == 1 ? "" : "s",
                   r.nusable, obs.ndevs);
        print_refusals(&r);
    } else if (!json) {
        /* The placement says something only when several devices were chosen. */
        char *msg = NULL;
        if (po.lease_name)
            msg = hbm_xasprintf("lease '%s' held by pid %d until pid %ld exits%s%s%s",
                                po.lease_name, (int)holder, hold_pid, r.n > 1 ? " (" : "",
                                r.n > 1 ? r.placement : "", r.n > 1 ? ")" : "");
        else if (r.n > 1)
            msg = hbm_xasprintf("%s", r.placement);
        if (msg)
            cli_wrap(stderr, "hbmctl:", 8, msg);
        free(msg);
    }
    hbm_pick_result_free(&r); /* the holder keeps its own copies of the lease fds */
    hbm_obs_free(&obs);
    return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_PROBLEM;
}
