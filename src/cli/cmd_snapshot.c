/* hbmctl snapshot: everything hbmctl observes, as one JSON document to replay or attach. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_findings.h"
#include "hbm/snapshot.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: hbmctl snapshot [-o FILE] [--snapshot FILE] [--backend NAME] [--root DIR]\n\n"
               "Writes the devices, their processes, the host facts (device-file holders, SysV and\n"
               "POSIX shared memory, hugepages, THP, /dev/shm, TCP listeners), the time, hostname,\n"
               "tool version and source backend as one JSON document (schema hbmctl.snapshot/1,\n"
               "docs/snapshot.md). Every read-only command replays it with --snapshot FILE.\n"
               "With no device source it writes the host facts alone (backend \"none\", the\n"
               "reason in backend_why) and says so on stderr.\n\n"
               "options:\n"
               "  -o, --output FILE  write to FILE instead of standard output\n" CLI_COMMON_HELP
               "\nexit: 0 written, 2 could not write, or could not look (unreadable input, a\n"
               "      --backend named that is unavailable)\n");
}

int cmd_snapshot(int argc, char **argv)
{
    static const struct option longopts[] = {
        CLI_COMMON_LONGOPTS,
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    cli_common c;
    cli_common_init(&c);
    const char *out = NULL;
    int opt;
    while ((opt = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        if (cli_common_opt(&c, opt, optarg))
            continue;
        if (opt == 'h') {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (opt == 'o') {
            out = optarg;
            continue;
        }
        return cli_usage_error("snapshot");
    }
    if (optind < argc) {
        cli_errorf("snapshot: unexpected argument '%s'", argv[optind]);
        return CLI_EXIT_ERROR;
    }
    c.src.host_only_ok = true;
    hbm_obs obs;
    if (!cli_observe(&c, &obs))
        return CLI_EXIT_ERROR;
    cli_print_skipped(stderr, "hbmctl: ", &obs);
    json_t *doc = hbm_snapshot_to_json(&obs);
    hbm_obs_free(&obs);
    if (!out || strcmp(out, "-") == 0) {
        cli_json_out(doc);
        return CLI_EXIT_OK;
    }
    /* Written beside the target and renamed, so a reader never sees half a snapshot. */
    char *tmp = hbm_xasprintf("%s.tmp.%d", out, (int)getpid());
    int rc = json_dump_file(doc, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(doc);
    if (rc < 0 || rename(tmp, out) < 0) {
        cli_errorf("snapshot: cannot write %s: %s", out, strerror(errno));
        unlink(tmp);
        free(tmp);
        return CLI_EXIT_ERROR;
    }
    free(tmp);
    return CLI_EXIT_OK;
}
