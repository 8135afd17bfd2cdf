/* hbmctl leases: who holds which device. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hbm/lease.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: hbmctl leases [--lease-dir DIR] [--all] [--json]\n\n"
               "Lists device leases (taken by `pick --lease` and `run --devices`) with their\n"
               "holder. A lease ends when its holder exits; `hbmctl release NAME` ends one.\n\n"
               "options:\n"
               "  --lease-dir DIR    default $HBMCTL_LEASE_DIR, else " HBM_LEASE_DEFAULT_DIR "\n"
               "  --all              also list lease files nobody holds\n"
               "  --json             {\"dir\", \"leases\": [{\"device\",\"name\",\"pid\","
               "\"hold_pid\",\"since\",\"held\"}]}\n"
               "  -h, --help         this text\n\n"
               "HOLDER is the process that keeps the lock; HOLD-PID the one whose exit ends it.\n"
               "exit: 0 listed (also when no lease is held or the directory does not exist),\n"
               "      2 the directory cannot be read\n");
}

int cmd_leases(int argc, char **argv)
{
    const char *dir_opt = NULL;
    bool all = false, json = false;
    enum { OPT_DIR = CLI_OPT_FIRST_FREE, OPT_ALL };
    static const struct option longopts[] = {
        {"lease-dir", required_argument, NULL, OPT_DIR},
        {"all", no_argument, NULL, OPT_ALL},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(stdout); return CLI_EXIT_OK;
        case OPT_DIR: dir_opt = optarg; break;
        case OPT_ALL: all = true; break;
        case CLI_OPT_JSON: json = true; break;
        default: return cli_usage_error("leases");
        }
    }
    if (optind < argc)
        return cli_usage_error("leases");
    const char *dir = hbm_lease_dir(dir_opt);
    hbm_lease_info *ls;
    size_t n;
    hbm_err err = {{0}};
    if (hbm_lease_list(dir, &ls, &n, &err) < 0) {
        cli_errorf("%s", err.msg);
        return CLI_EXIT_ERROR;
    }
    if (json) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            if (!ls[i].held && !all)
                continue;
            json_array_append_new(
                a, json_pack("{s:I, s:s, s:o, s:o, s:o, s:b}", "device", (json_int_t)ls[i].device,
                             "name", ls[i].name,
                             "pid", ls[i].held && ls[i].pid ? json_integer(ls[i].pid) : json_null(),
                             "hold_pid", ls[i].held && ls[i].hold_pid ? json_integer(ls[i].hold_pid)
                                                                     : json_null(),
                             "since", ls[i].held && ls[i].since > 0 ? json_real(ls[i].since)
                                                                    : json_null(),
                             "held", ls[i].held));
        }
        json_t *j = json_object();
        json_object_set_new(j, "dir", json_string(dir));
        json_object_set_new(j, "leases", a);
        cli_json_out(j);
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
