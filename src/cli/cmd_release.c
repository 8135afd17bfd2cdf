/* hbmctl release NAME: end a lease by stopping its holder. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "hbm/doctor.h"
#include "hbm/lease.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: hbmctl release NAME [--lease-dir DIR] [--timeout DURATION]\n\n"
               "Ends the lease NAME: sends SIGTERM to its holder process (checked by start time,\n"
               "through a pidfd) and waits until its devices are free.\n\n"
               "options:\n"
               "  --lease-dir DIR    default $HBMCTL_LEASE_DIR or " HBM_LEASE_DEFAULT_DIR "\n"
               "  --timeout DURATION how long to wait for the locks to drop (default 10s)\n"
               "  -h, --help         this text\n\n"
               "exit: 0 released, 1 no lease of that name is held, 2 error\n");
}

int cmd_release(int argc, char **argv)
{
    const char *dir_opt = NULL;
    double timeout = 10;
    enum { OPT_DIR = CLI_OPT_FIRST_FREE, OPT_TIMEOUT };
    static const struct option longopts[] = {
        {"lease-dir", required_argument, NULL, OPT_DIR},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 1;
    hbm_err err = {{0}};
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(stdout); return CLI_EXIT_OK;
        case OPT_DIR: dir_opt = optarg; break;
        case OPT_TIMEOUT:
            if (hbm_parse_duration(optarg, &timeout, &err) < 0) {
                cli_errorf("--timeout: %s", err.msg);
                return CLI_EXIT_ERROR;
            }
            break;
        default: return cli_usage_error("release");
        }
    }
    if (optind + 1 != argc) {
        cli_errorf("release needs one argument: the lease name");
        return cli_usage_error("release");
    }
    const char *name = argv[optind];
    size_t ended = 0;
    int rc = hbm_doctor_end_lease(hbm_lease_dir(dir_opt), name, timeout, &ended, &err);
    if (rc < 0) {
        cli_errorf("release %s: %s", name, err.msg);
        return CLI_EXIT_ERROR;
    }
    if (rc == 1) {
        cli_errorf("no lease named '%s' is held", name);
        return CLI_EXIT_PROBLEM;
    }
    printf("released '%s' (%zu holder%s stopped)\n", name, ended, ended == 1 ? "" : "s");
    return CLI_EXIT_OK;
}
