/* hbmctl release NAME: end a lease by stopping its holder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hbm/doctor.h"
#include "hbm/lease.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: hbmctl release NAME [--lease-dir DIR] [--timeout DURATION]\n\n"
               "Ends the lease NAME: sends SIGTERM to its holder process (checked by start time,\n"
               "through a pidfd) and waits until its devices are free. Lease files are writable\n"
               "by every user, so a holder is signalled only when it has the file open. Ending\n"
               "another user's lease needs root.\n\n"
               "options:\n"
               "  --lease-dir DIR    default $HBMCTL_LEASE_DIR, else " HBM_LEASE_DEFAULT_DIR "\n"
               "  --timeout DURATION how long to wait for the locks to drop (default 10s)\n"
               "  -h, --help         this text\n\n"
               "exit: 0 released, 1 no lease of that name is held, 2 the holder could not be\n"
               "      signalled (not its owner, or it does not hold the file), or a lock is still\n"
               "      held after --timeout\n");
}

/* Every user can write a lease file, so the pid it names is a claim: signal it only when
 * that process really has the file open (as the holder does). */
static bool holders_verified(const char *dir, const char *name)
{
    hbm_lease_info *ls;
    size_t n;
    hbm_err err = {{0}};
    if (hbm_lease_list(dir, &ls, &n, &err) < 0) {
        cli_errorf("release %s: %s", name, err.msg);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        if (!ls[i].held || strcmp(ls[i].name, name) != 0 || ls[i].pid <= 1)
            continue;
        if (!hbm_lease_pid_holds(&ls[i])) {
            cli_errorf("release %s: %s names pid %d as its holder, but that process does not "
                       "have the file open; not signalling it (`hbmctl leases` shows the "
                       "lease; end its real holder yourself)", name, ls[i].path, ls[i].pid);
            ok = false;
        }
    }
    free(ls);
    return ok;
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
    const char *dir = hbm_lease_dir(dir_opt);
    if (!holders_verified(dir, name))
        return CLI_EXIT_ERROR;
    size_t ended = 0;
    int rc = hbm_lease_end(dir, name, timeout, &ended, &err);
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
