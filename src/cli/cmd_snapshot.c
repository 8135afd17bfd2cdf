/* hbmctl snapshot: everything hbmctl observes, as one JSON document to replay or attach. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_findings.h"
#include "hbm/snapshot.h"

int cmd_snapshot(int argc, char **argv)
{
    hbm_opt_common c;
    hbm_opt_common_init(&c);
    const char *out = NULL;
    c.src.progress_interval_s = 5;
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_STRING, "output", 'o', "FILE", &out,
                "write to FILE instead of standard output"),
        HBM_OPT(HBM_OPT_DURATION, "progress-interval", 0, "DUR", &c.src.progress_interval_s,
                "read the /metrics of each inference server found listening here\n"
                "twice this far apart and keep what they showed (default 5s; 0 =\n"
                "do not): doctor --snapshot then judges server-stalled as live",
                .min = 0, .words = "0 1s 5s"),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "snapshot", .usage = "[-o FILE] [--snapshot FILE] [--backend NAME] [--root DIR]",
        .about =
            "Writes the devices, their processes, the host facts (device-file holders, SysV and\n"
            "POSIX shared memory, hugepages, THP, /dev/shm, TCP listeners), the time, hostname,\n"
            "tool version and source backend as one JSON document (schema hbmctl.snapshot/1,\n"
            "docs/snapshot.md). Every read-only command replays it with --snapshot FILE.\n"
            "With no device source it writes the host facts alone (backend \"none\", the\n"
            "reason in backend_why) and says so on stderr.\n",
        .opts = opts, .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &c,
        .json_help = "accepted; the output is JSON anyway",
        .exits = "exit: 0 written, 2 could not write, or could not look (unreadable input, a\n"
                 "      --backend named that is unavailable)\n",
    };
    int rc = cli_parse_options(&spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    c.src.host_only_ok = true;
    c.src.want_topology = true; /* a snapshot records it */
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
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(doc);
    hbm_err err = {{0}};
    rc = hbm_write_file_atomic(out, text, strlen(text), 0644, &err);
    free(text);
    if (rc < 0) {
        cli_errorf("snapshot: cannot write %s", err.msg);
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
