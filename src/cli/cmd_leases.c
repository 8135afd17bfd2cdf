/* hbmctl leases: who holds which device. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hbm/lease.h"

int cmd_leases(int argc, char **argv)
{
    const char *dir_opt = NULL;
    bool all = false;
    hbm_opt_common c;
    hbm_opt_common_init(&c);
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_STRING, "lease-dir", 0, "DIR", &dir_opt,
                "default $HBMCTL_LEASE_DIR, else " HBM_LEASE_DEFAULT_DIR),
        HBM_OPT(HBM_OPT_FLAG, "all", 0, NULL, &all, "also list lease files nobody holds"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "leases", .usage = "[--lease-dir DIR] [--all] [--json]",
        .about = "Lists device leases (taken by `pick --lease` and `run --devices`) with their\n"
                 "holder. A lease ends when its holder exits; `hbmctl release NAME` ends one.\n",
        .opts = opts, .groups = HBM_OPT_G_JSON, .common = &c,
        .json_help = "{\"dir\", \"leases\": [{\"device\",\"name\",\"pid\",\"hold_pid\","
                     "\"since\",\"held\"}]}",
        .exits = "HOLDER is the process that keeps the lock; HOLD-PID the one whose exit ends it.\n"
                 "exit: 0 listed (also when no lease is held or the directory does not exist),\n"
                 "      2 the directory cannot be read\n",
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    bool json = c.json;
    const char *dir = hbm_lease_dir(dir_opt);
    hbm_lease_info *ls;
    size_t n;
    hbm_err err = {{0}};
    if (hbm_lease_list(dir, &ls, &n, &err) < 0) {
        cli_errorf("%s", err.msg);
        return CLI_EXIT_ERROR;
    }
    if (json) {
        cli_json_out(hbm_lease_list_json(dir, ls, n, all));
    } else {
        size_t shown = 0;
        for (size_t i = 0; i < n; i++) {
            if (!ls[i].held && !all)
                continue;
            if (!shown++)
                printf("%-7s %-24s %-8s %-9s %-20s %s\n", "DEVICE", "LEASE", "HOLDER", "HOLD-PID",
                       "SINCE (UTC)", "STATE");
            char when[32] = "-";
            if (ls[i].held && ls[i].since > 0) {
                time_t t = (time_t)ls[i].since;
                struct tm tm;
                gmtime_r(&t, &tm);
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
            }
            char holder[16] = "-", hold[16] = "-";
            if (ls[i].held && ls[i].pid)
                snprintf(holder, sizeof holder, "%d", ls[i].pid);
            if (ls[i].held && ls[i].hold_pid)
                snprintf(hold, sizeof hold, "%d", ls[i].hold_pid);
            printf("%-7lld %-24.24s %-8s %-9s %-20s %s\n", (long long)ls[i].device,
                   ls[i].held ? ls[i].name : "-", holder, hold, when, ls[i].held ? "held" : "free");
        }
        if (!shown)
            printf("no leases held (%s)\n", dir);
    }
    free(ls);
    return CLI_EXIT_OK;
}
