/* Shared pieces of the command-line front end: exit codes, the option table's text
 * printed, observing per the source options (hbm/opt.h), and output helpers. Only the CLI
 * prints and chooses exit codes. */
#ifndef HBM_CLI_H
#define HBM_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "hbm/obs.h"
#include "hbm/observe.h"
#include "hbm/opt.h"

/* Exit codes shared by the reading commands (documented in `hbmctl --help`). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_PROBLEM = 1, /* the command worked and found a problem (doctor, probe) */
    CLI_EXIT_ERROR = 2,   /* could not look: bad input, bad usage, no backend */
};

/* One command: cmd_<name>(argc, argv) gets argv[0] = "<name>". */
typedef int (*cli_cmd_fn)(int argc, char **argv);

#define CLI_CONTINUE (-1)

/* hbm_opt_parse with its text printed: returns CLI_CONTINUE when the command should go on,
 * else the exit code to return (0 after --help, the usage exit after a message on stderr).
 * out->args must be released with hbm_opt_args_free in every case. */
int cli_parse(const hbm_opt_spec *s, int argc, char **argv, hbm_opt_args *out);
/* cli_parse for a command that takes no other words. */
int cli_parse_options(const hbm_opt_spec *s, int argc, char **argv);
void cli_help(const hbm_opt_spec *s, FILE *f);
/* hbm_opt_bad_value's message on stderr; returns the usage exit. */
int cli_bad_value(const hbm_opt_spec *s, const char *name, const char *value, const char *why);

/* `hbmctl __complete`: cli_parse prints the command's options for the bash completion
 * instead of parsing, and returns 0. */
extern bool cli_opt_listing;

/* Observes per the common options; on failure prints "hbmctl: <why>" and returns false. */
bool cli_observe(const hbm_opt_common *c, hbm_obs *obs);

/* A memory limit as a share of the device ("80%", 0.8) or a size ("60GiB"): the value of
 * --max-mem and --threshold, read by cli_read_limit (a HBM_OPT_CALL reader). */
typedef struct cli_limit {
    int64_t bytes; /* HBM_UNKNOWN unless a size was given */
    double ratio;  /* NAN unless a share was given */
} cli_limit;
int cli_read_limit(void *dst, const char *value, char *why, size_t whylen);

/* Prints a JSON value (indented, newline) to stdout and releases the reference. */
/* Human output fits CLI_WIDTH columns. prefix, path and rest on one line when they fit;
 * else each on its own line, the path whole (never cut or broken, so it can be copied): a
 * Hugging Face snapshot path alone is over 100 characters. */
#define CLI_WIDTH 100
void cli_print_path(FILE *f, const char *prefix, const char *path, const char *rest);
void cli_json_out(json_t *j);

/* "hbmctl: ..." on stderr. */
void cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Colour only on a terminal and never with NO_COLOR set. */
bool cli_color(FILE *f);
const char *cli_verdict_color(hbm_verdict v);
#define CLI_RESET cli_sgr(0)

/* Output (out.c, docs/safety.md): after cli_out_init, every byte written to stdout and
 * stderr passes one filter that escapes what a terminal must not get raw (controls, C1,
 * invalid UTF-8: "\x1b"), so renderers print strings from outside as they are. */
void cli_out_init(void);
/* SGR colour code (31 red, 0 reset) as only hbmctl can write it through the filter. */
const char *cli_sgr(int code);
/* Whether f (stdout, stderr) is a terminal, under the filter too. */
bool cli_out_tty(FILE *f);
/* A JSON value to stdout with flags; the filter then escapes as JSON (\u007f). */
void cli_json_print(json_t *j, size_t flags);
/* The unfiltered stdout, for ncurses, which escapes what it draws itself. */
FILE *cli_raw_stdout(void);

/* Formats a size in bytes, "-" when unknown; returns buf. */
const char *cli_size(char *buf, size_t n, int64_t bytes);

/* Where a device process runs: "namespace/pod" in Kubernetes, else its container id, else
 * "-"; returns buf. */
const char *cli_proc_where(char *buf, size_t n, const hbm_dproc *p);

#endif
