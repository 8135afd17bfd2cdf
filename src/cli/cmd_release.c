/* hbmctl release NAME: end a lease by stopping its holder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hbm/doctor.h"
#include "hbm/lease.h"

/* Every user can write a lease file, so the pid it names is a claim: signal it only when
 * that process really has the file open (as the holder does). */
static bool holders_verified(const char *dir, const char *name)
{
    hbm_lease_info bad;
    hbm_err err = {{0}};
    int rc = hbm_lease_claim_check(dir, name, &bad, &err);
    if (rc < 0)
        cli_errorf("release %s: %s", name, err.msg);
    else if (rc == 1)
        cli_errorf("release %s: %s names pid %d as its holder, but that process does not "
                   "have the file open; not signalling it (`hbmctl leases` shows the "
                   "lease; end its real holder yourself)", name, bad.path, bad.pid);
    return rc == 0;
}

int cmd_release(int argc, char **argv)
{
    const char *dir_opt = NULL;
    double timeout = 10;
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_STRING, "lease-dir", 0, "DIR", &dir_opt,
                "default $HBMCTL_LEASE_DIR, else " HBM_LEASE_DEFAULT_DIR),
        HBM_OPT(HBM_OPT_DURATION, "timeout", 0, "DURATION", &timeout,
                "how long to wait for the locks to drop (default 10s)"),
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "release", .usage = "NAME [--lease-dir DIR] [--timeout DURATION]",
        .about = "Ends the lease NAME: sends SIGTERM to its holder process (checked by start time,\n"
                 "through a pidfd) and waits until its devices are free. Lease files are writable\n"
                 "by every user, so a holder is signalled only when it has the file open. Ending\n"
                 "another user's lease needs root.\n",
        .opts = opts, .max_args = 1,
        .exits = "exit: 0 released, 1 no lease of that name is held, 2 the holder could not be\n"
                 "      signalled (not its owner, or it does not hold the file), or a lock is still\n"
                 "      held after --timeout\n",
    };
    hbm_opt_args args;
    int rc = cli_parse(&spec, argc, argv, &args);
    const char *name = args.nargs == 1 ? args.args[0] : NULL;
    hbm_opt_args_free(&args);
    if (rc != CLI_CONTINUE)
        return rc;
    if (!name) {
        cli_errorf("release needs one argument: the lease name");
        fprintf(stderr, "hbmctl release: see 'hbmctl release --help'\n");
        return CLI_EXIT_ERROR;
    }
    hbm_err err = {{0}};
    const char *dir = hbm_lease_dir(dir_opt);
    if (!holders_verified(dir, name))
        return CLI_EXIT_ERROR;
    size_t ended = 0;
    rc = hbm_lease_end(dir, name, timeout, &ended, &err);
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
