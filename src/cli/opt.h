/* The option table every command parses its arguments with. A command describes its
 * options once (name, kind, where the value goes, help); the same table parses argv,
 * writes `--help`, and feeds the bash completion (`hbmctl __complete`). A bad value gets
 * one message form, "hbmctl CMD: --name 'value': why", and the command's usage exit. */
#ifndef HBM_CLI_OPT_H
#define HBM_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hbm/observe.h"

#define CLI_MAX_DEVICES 64

typedef enum cli_kind {
    CLI_END = 0,  /* ends a table */
    CLI_FLAG,     /* bool *: set to true; with .value, int *: set to value (last one wins) */
    CLI_STRING,   /* const char **: the word itself */
    CLI_SIZE,     /* int64_t *: "60GiB", at least min bytes */
    CLI_RATIO,    /* double *: "80%" or "0.8" */
    CLI_DURATION, /* double *: seconds, at least min */
    CLI_COUNT,    /* long *: an integer in min..max */
    CLI_DEVICES,  /* cli_devices *: a device id (logic id on Ascend, index on NVIDIA), appended */
    CLI_ENUM,     /* int *: the index of the word in choices */
    CLI_CALL,     /* fn(dst, value, why): the command's own reading */
    CLI_SECTION,  /* help only: a heading ("before the start") */
    CLI_NOTE,     /* help only: lines printed as they are, indented; with a name, that name
                   * in the option column and the lines as its help */
    CLI_GROUPS,   /* help only: where the command's option groups are listed */
} cli_kind;

typedef struct cli_devices {
    int64_t id[CLI_MAX_DEVICES];
    size_t n;
} cli_devices;

/* Reads value into dst; returns 0, or -1 with why filled (no option name in it). */
typedef int (*cli_opt_fn)(void *dst, const char *value, char *why, size_t whylen);

typedef struct cli_opt {
    cli_kind kind;
    const char *name;  /* without the dashes */
    char short_name;   /* 0 when none */
    const char *meta;  /* the value in help: "DUR"; FILE and DIR also guide the completion */
    const char *help;  /* '\n' starts a continuation line */
    void *dst;
    double min, max;   /* CLI_DURATION/CLI_SIZE minimum, CLI_COUNT bounds (max 0: none) */
    const char *why;   /* CLI_DURATION/CLI_SIZE/CLI_COUNT: the message when out of range */
    const char *const *choices; /* CLI_ENUM: NULL-terminated */
    const char *words; /* completion candidates for the value ("1s 2s 5s") */
    cli_opt_fn fn;     /* CLI_CALL */
    int value;         /* CLI_FLAG: when not 0, what it stores in an int */
} cli_opt;

/* Table entries, designated so that the optional fields (min, max, why, choices, words, fn)
 * follow as ".min = 1" in the variadic part. */
#define CLI_OPT(kind_, name_, short_, meta_, dst_, help_, ...)                              \
    {.kind = (kind_), .name = (name_), .short_name = (short_), .meta = (meta_),           \
     .dst = (dst_), .help = (help_), __VA_ARGS__}
#define CLI_HEAD(text) {.kind = CLI_SECTION, .help = (text)}
#define CLI_TEXT(text) {.kind = CLI_NOTE, .help = (text)}
#define CLI_FORM(left, text) {.kind = CLI_NOTE, .name = (left), .help = (text)}
#define CLI_GROUPS_HERE {.kind = CLI_GROUPS}
#define CLI_OPTS_END {.kind = CLI_END}

/* Option groups a command takes only when it supports them. */
enum {
    CLI_G_JSON = 1,     /* --json */
    CLI_G_SNAPSHOT = 2, /* --snapshot FILE */
    CLI_G_LIVE = 4,     /* --backend NAME --root DIR */
    CLI_G_SOURCE = CLI_G_SNAPSHOT | CLI_G_LIVE,
};

/* Where the group options land. */
typedef struct cli_common {
    bool json;
    hbm_source_opts src;
} cli_common;

typedef struct cli_spec {
    const char *cmd;      /* "doctor" */
    const char *usage;    /* what follows "usage: hbmctl CMD " */
    const char *about;    /* the description, lines ending in '\n' */
    const cli_opt *opts;  /* ends with {CLI_END} */
    unsigned groups;      /* CLI_G_* */
    cli_common *common;   /* with groups: where they land (cli_common_init first) */
    const char *json_help, *snapshot_help; /* this command's words for a group option */
    const char *env;      /* "environment: ..." text, or NULL */
    const char *exits;    /* "exit: ..." text */
    int bad_exit;         /* exit for bad usage; 0 means 2 */
    int max_args;         /* words that are not options; -1 any number */
    bool stop_at_arg;     /* options end at the first other word (run: COMMAND's flags) */
    /* Called with a word that looks like an option and is not in the table; returns how
     * many words it took (1 or 2) or -1 after printing why (the usage exit follows). With
     * none, such a word is an error naming the nearest option. */
    int (*unknown)(void *ctx, char **words, int nwords);
    void *unknown_ctx;
} cli_spec;

/* What cli_parse leaves: the other words, in order (pointers into argv). After "--", or
 * with stop_at_arg from the first other word on, every word is an argument; dash is the
 * index in args of the first word after "--" (-1 when there was none). */
typedef struct cli_args {
    char **args;
    int nargs;
    int dash;
} cli_args;

#define CLI_CONTINUE (-1)

/* Parses argv[1..] (argv[0] is the command name). Returns CLI_CONTINUE when the command
 * should go on, else the exit code to return (0 after --help, the usage exit after a
 * message on stderr). out->args must be released with cli_args_free in every case. */
int cli_parse(const cli_spec *s, int argc, char **argv, cli_args *out);
void cli_args_free(cli_args *a);
/* cli_parse for a command that takes no other words. */
int cli_parse_options(const cli_spec *s, int argc, char **argv);

/* The command's --help, generated from the table. */
void cli_help(const cli_spec *s, FILE *f);

/* "hbmctl CMD: --name 'value': why" on stderr; returns the usage exit. */
int cli_bad_value(const cli_spec *s, const char *name, const char *value, const char *why);

/* The long names of the table and groups, "--name", NULL-terminated; free the array. */
const char **cli_opt_names(const cli_spec *s);

/* `hbmctl __complete`: cli_parse prints the command's options for the bash completion
 * instead of parsing, and returns 0. */
extern bool cli_opt_listing;

void cli_common_init(cli_common *c);

#endif
