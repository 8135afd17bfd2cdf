/* Shared pieces of the command-line front end: the command table, options every reading
 * command takes, and output helpers. Only the CLI prints and chooses exit codes. */
#ifndef HBM_CLI_H
#define HBM_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "hbm/obs.h"
#include "hbm/observe.h"

/* Exit codes shared by the reading commands (documented in `hbmctl --help`). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_PROBLEM = 1, /* the command worked and found a problem (doctor, probe) */
    CLI_EXIT_ERROR = 2,   /* could not look: bad input, bad usage, no backend */
};

/* One command: cmd_<name>(argc, argv) gets argv[0] = "<name>". */
typedef int (*cli_cmd_fn)(int argc, char **argv);

/* Options of every reading command: --json --snapshot FILE --backend NAME --root DIR. */
typedef struct cli_common {
    bool json;
    hbm_source_opts src;
} cli_common;

enum {
    CLI_OPT_JSON = 1000,
    CLI_OPT_SNAPSHOT,
    CLI_OPT_BACKEND,
    CLI_OPT_ROOT,
    CLI_OPT_FIRST_FREE = 1100, /* commands number their own long-only options from here */
};

#define CLI_COMMON_LONGOPTS                                                                  \
    {"json", no_argument, NULL, CLI_OPT_JSON},                                               \
        {"snapshot", required_argument, NULL, CLI_OPT_SNAPSHOT},                             \
        {"backend", required_argument, NULL, CLI_OPT_BACKEND},                               \
        {"root", required_argument, NULL, CLI_OPT_ROOT}

#define CLI_COMMON_HELP                                                                      \
    "  --json             machine-readable output (stable field names: hbmctl(1), docs/)\n" \
    "  --snapshot FILE    read a snapshot or npu-smi text instead of the live host (- = stdin)\n" \
    "  --backend NAME     auto, nvml, dcmi, npu-smi, snapshot (default auto)\n"             \
    "  --root DIR         read /proc, /sys and /dev under DIR (tests; env HBMCTL_ROOT)\n"

void cli_common_init(cli_common *c);
/* Handles a common option from getopt_long; returns true when opt was one. */
bool cli_common_opt(cli_common *c, int opt, const char *arg);

/* Observes per the common options; on failure prints "hbmctl: <why>" and returns false. */
bool cli_observe(const cli_common *c, hbm_obs *obs);

/* Prints a JSON value (indented, newline) to stdout and releases the reference. */
void cli_json_out(json_t *j);

/* "hbmctl: ..." on stderr. */
void cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hbmctl <cmd>: unknown option; see hbmctl <cmd> --help" and CLI_EXIT_ERROR. */
int cli_usage_error(const char *cmd);

/* Colour only on a terminal and never with NO_COLOR set. */
bool cli_color(FILE *f);
const char *cli_verdict_color(hbm_verdict v);
#define CLI_RESET "\033[0m"

/* Formats a size in bytes, "-" when unknown; returns buf. */
const char *cli_size(char *buf, size_t n, int64_t bytes);

#endif
