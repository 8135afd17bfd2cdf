/* The option table on arbitrary argument words (one per line of the input): every word is
 * taken, refused with the usage exit, or ends in --help; values land only in range. */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 32

static const char *const choices[] = {"a", "bb", NULL};

static int call(void *dst, const char *v, char *why, size_t n)
{
    if (!*v) {
        snprintf(why, n, "empty");
        return -1;
    }
    (*(int *)dst)++;
    return 0;
}

static int parse(int argc, char **argv)
{
    cli_common common;
    cli_common_init(&common);
    bool flag = false;
    const char *str = NULL;
    int64_t size = HBM_UNKNOWN;
    double ratio = NAN, dur = -1;
    long count = 0;
    cli_devices devs = {{0}, 0};
    int choice = -1, calls = 0;
    const cli_opt opts[] = {
        CLI_OPT(CLI_FLAG, "flag", 'f', NULL, &flag, "f"),
        CLI_OPT(CLI_STRING, "str", 's', "FILE", &str, "s"),
        CLI_OPT(CLI_SIZE, "size", 0, "SIZE", &size, "z", .min = 1),
        CLI_OPT(CLI_RATIO, "ratio", 0, "PCT", &ratio, "r"),
        CLI_OPT(CLI_DURATION, "dur", 0, "DUR", &dur, "d", .min = 0.5),
        CLI_OPT(CLI_COUNT, "count", 0, "N", &count, "c", .min = 1, .max = 9),
        CLI_OPT(CLI_DEVICES, "device", 0, "ID", &devs, "i"),
        CLI_OPT(CLI_ENUM, "choice", 0, "C", &choice, "e", .choices = choices),
        CLI_OPT(CLI_CALL, "call", 0, "V", &calls, "k", .fn = call),
        CLI_GROUPS_HERE,
        CLI_OPTS_END,
    };
    const cli_spec spec = {
        .cmd = "fuzz", .usage = "[OPTIONS]", .about = "fuzz\n", .opts = opts,
        .groups = CLI_G_JSON | CLI_G_SOURCE, .common = &common, .exits = "exit\n",
        .max_args = 2,
    };
    cli_args args;
    int rc = cli_parse(&spec, argc, argv, &args);
    if (rc != CLI_CONTINUE && rc != CLI_EXIT_OK && rc != CLI_EXIT_ERROR)
        abort();
    if (rc == CLI_CONTINUE && (args.nargs > 2 && args.dash < 0))
        abort();
    if ((size != HBM_UNKNOWN && size < 1) || (count && (count < 1 || count > 9)) ||
        (dur != -1 && dur < 0.5) || devs.n > CLI_MAX_DEVICES || choice > 1 ||
        (!isnan(ratio) && (ratio < 0 || ratio > 1)))
        abort();
    for (size_t i = 0; i < devs.n; i++)
        if (devs.id[i] < 0)
            abort();
    cli_args_free(&args);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    if (!copy)
        abort();
    memcpy(copy, data, size);
    copy[size] = '\0';
    char *words[MAX_WORDS + 2] = {"fuzz"};
    int argc = 1;
    for (char *save = NULL, *w = strtok_r(copy, "\n", &save); w && argc <= MAX_WORDS;
         w = strtok_r(NULL, "\n", &save))
        words[argc++] = w;
    /* the messages and --help are not what is checked here */
    fflush(stdout);
    fflush(stderr);
    int out = dup(STDOUT_FILENO), err = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    parse(argc, words);
    fflush(stdout);
    fflush(stderr);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    close(out);
    close(err);
    close(null);
    free(copy);
    return 0;
}
