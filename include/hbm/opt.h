/* The option table every command parses its arguments with. A command describes its
 * options once (name, kind, where the value goes, help); the same table parses argv,
 * writes `--help`, and feeds the bash completion (`hbmctl __complete`). A bad value gets
 * one message form, "hbmctl CMD: --name 'value': why". The text is handed back to the
 * caller, which prints it and chooses the exit. */
#ifndef HBM_OPT_H
#define HBM_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/observe.h"

#define HBM_OPT_MAX_DEVICES 64

typedef enum hbm_opt_kind {
    HBM_OPT_END = 0,  /* ends a table */
    HBM_OPT_FLAG,     /* bool *: set to true; with .value, int *: set to value (last one wins) */
    HBM_OPT_STRING,   /* const char **: the word itself */
    HBM_OPT_SIZE,     /* int64_t *: "60GiB", at least min bytes */
    HBM_OPT_RATIO,    /* double *: "80%" or "0.8" */
    HBM_OPT_DURATION, /* double *: seconds, at least min */
    HBM_OPT_COUNT,    /* long *: an integer in min..max */
    HBM_OPT_DEVICES,  /* hbm_opt_devices *: a device id (logic id on Ascend, index on NVIDIA),
                       * appended */
    HBM_OPT_ENUM,     /* int *: the index of the word in choices */
    HBM_OPT_CALL,     /* fn(dst, value, why): the command's own reading */
    HBM_OPT_SECTION,  /* help only: a heading ("before the start") */
    HBM_OPT_NOTE,     /* help only: lines printed as they are, indented; with a name, that name
                       * in the option column and the lines as its help */
    HBM_OPT_GROUPS,   /* help only: where the command's option groups are listed */
} hbm_opt_kind;

typedef struct hbm_opt_devices {
    int64_t id[HBM_OPT_MAX_DEVICES];
    size_t n;
} hbm_opt_devices;

/* Reads value into dst; returns 0, or -1 with why filled (no option name in it). */
typedef int (*hbm_opt_fn)(void *dst, const char *value, char *why, size_t whylen);

typedef struct hbm_opt {
    hbm_opt_kind kind;
    const char *name;  /* without the dashes */
    char short_name;   /* 0 when none */
    const char *meta;  /* the value in help: "DUR"; FILE and DIR also guide the completion */
    const char *help;  /* '\n' starts a continuation line */
    void *dst;
    double min, max;   /* HBM_OPT_DURATION/SIZE minimum, HBM_OPT_COUNT bounds (max 0: none) */
    const char *why;   /* HBM_OPT_DURATION/SIZE/COUNT: the message when out of range */
    const char *const *choices; /* HBM_OPT_ENUM: NULL-terminated */
    const char *words; /* completion candidates for the value ("1s 2s 5s") */
    hbm_opt_fn fn;     /* HBM_OPT_CALL */
    int value;         /* HBM_OPT_FLAG: when not 0, what it stores in an int */
} hbm_opt;

/* Table entries, designated so that the optional fields (min, max, why, choices, words, fn)
 * follow as ".min = 1" in the variadic part. */
#define HBM_OPT(kind_, name_, short_, meta_, dst_, help_, ...)                              \
    {.kind = (kind_), .name = (name_), .short_name = (short_), .meta = (meta_),           \
     .dst = (dst_), .help = (help_), __VA_ARGS__}
#define HBM_OPT_HEAD(text) {.kind = HBM_OPT_SECTION, .help = (text)}
#define HBM_OPT_TEXT(text) {.kind = HBM_OPT_NOTE, .help = (text)}
#define HBM_OPT_FORM(left, text) {.kind = HBM_OPT_NOTE, .name = (left), .help = (text)}
#define HBM_OPT_GROUPS_HERE {.kind = HBM_OPT_GROUPS}
#define HBM_OPTS_END {.kind = HBM_OPT_END}

/* Option groups a command takes only when it supports them. */
enum {
    HBM_OPT_G_JSON = 1,     /* --json */
    HBM_OPT_G_SNAPSHOT = 2, /* --snapshot FILE */
    HBM_OPT_G_LIVE = 4,     /* --backend NAME --root DIR */
    HBM_OPT_G_SOURCE = HBM_OPT_G_SNAPSHOT | HBM_OPT_G_LIVE,
};

/* Where the group options land. */
typedef struct hbm_opt_common {
    bool json;
    hbm_source_opts src;
} hbm_opt_common;

typedef struct hbm_opt_spec {
    const char *cmd;      /* "doctor" */
    const char *usage;    /* what follows "usage: hbmctl CMD " */
    const char *about;    /* the description, lines ending in '\n' */
    const hbm_opt *opts;  /* ends with {HBM_OPT_END} */
    unsigned groups;      /* HBM_OPT_G_* */
    hbm_opt_common *common; /* with groups: where they land (hbm_opt_common_init first) */
    const char *json_help, *snapshot_help; /* this command's words for a group option */
    const char *env;      /* "environment: ..." text, or NULL */
    const char *exits;    /* "exit: ..." text */
    int bad_exit;         /* the caller's: its exit for bad usage (0: its default) */
    int max_args;         /* words that are not options; -1 any number */
    bool stop_at_arg;     /* options end at the first other word (run: COMMAND's flags) */
    /* Called with a word that looks like an option and is not in the table; returns how
     * many words it took (1 or 2) or -1 after telling why itself (hbm_opt_parse then
     * returns HBM_OPT_BAD with no text). With none, such a word is an error naming the
     * nearest option. */
    int (*unknown)(void *ctx, char **words, int nwords);
    void *unknown_ctx;
} hbm_opt_spec;

/* What hbm_opt_parse leaves: the other words, in order (pointers into argv). After "--", or
 * with stop_at_arg from the first other word on, every word is an argument; dash is the
 * index in args of the first word after "--" (-1 when there was none). */
typedef struct hbm_opt_args {
    char **args;
    int nargs;
    int dash;
} hbm_opt_args;

typedef enum hbm_opt_result {
    HBM_OPT_GO,   /* parsed: the command goes on */
    HBM_OPT_HELP, /* --help was given: *text is the help */
    HBM_OPT_BAD,  /* bad usage: *text is the message, one line ending in '\n' (NULL when the
                   * unknown handler told why) */
} hbm_opt_result;

/* Parses argv[1..] (argv[0] is the command name) into the table's destinations. *text is
 * NULL or allocated (free it). out->args must be released with hbm_opt_args_free in every
 * case. */
hbm_opt_result hbm_opt_parse(const hbm_opt_spec *s, int argc, char **argv, hbm_opt_args *out,
                             char **text);
void hbm_opt_args_free(hbm_opt_args *a);

/* The command's --help, generated from the table (allocated). */
char *hbm_opt_help(const hbm_opt_spec *s);

/* "hbmctl CMD: --name 'value': why\n" (allocated): a value the command itself refuses
 * after parsing, in the parser's words. */
char *hbm_opt_bad_value(const hbm_opt_spec *s, const char *name, const char *value,
                        const char *why);

/* The command's options as bash assignments the completion script reads
 * (scripts/hbmctl.bash-completion), allocated. */
char *hbm_opt_listing(const hbm_opt_spec *s);

/* The long names of the table and groups, "--name", NULL-terminated; free the array. */
const char **hbm_opt_names(const hbm_opt_spec *s);

void hbm_opt_common_init(hbm_opt_common *c);

#endif
