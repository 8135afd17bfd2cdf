/* The option table on arbitrary argument words (one per line of the input): every word is
 * taken, refused with a message, or ends in --help with its text; values land only in
 * range. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/opt.h"
#include "hbm/util.h"

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
    hbm_opt_common common;
    hbm_opt_common_init(&common);
    bool flag = false;
    const char *str = NULL;
    int64_t size = HBM_UNKNOWN;
    double ratio = NAN, dur = -1;
    long count = 0;
    hbm_opt_devices devs = {{0}, 0};
    int choice = -1, calls = 0;
    const hbm_opt opts[] = {
        HBM_OPT(HBM_OPT_FLAG, "flag", 'f', NULL, &flag, "f"),
        HBM_OPT(HBM_OPT_STRING, "str", 's', "FILE", &str, "s"),
        HBM_OPT(HBM_OPT_SIZE, "size", 0, "SIZE", &size, "z", .min = 1),
        HBM_OPT(HBM_OPT_RATIO, "ratio", 0, "PCT", &ratio, "r"),
        HBM_OPT(HBM_OPT_DURATION, "dur", 0, "DUR", &dur, "d", .min = 0.5),
        HBM_OPT(HBM_OPT_COUNT, "count", 0, "N", &count, "c", .min = 1, .max = 9),
        HBM_OPT(HBM_OPT_DEVICES, "device", 0, "ID", &devs, "i"),
        HBM_OPT(HBM_OPT_ENUM, "choice", 0, "C", &choice, "e", .choices = choices),
        HBM_OPT(HBM_OPT_CALL, "call", 0, "V", &calls, "k", .fn = call),
        HBM_OPT_GROUPS_HERE,
        HBM_OPTS_END,
    };
    const hbm_opt_spec spec = {
        .cmd = "fuzz", .usage = "[OPTIONS]", .about = "fuzz\n", .opts = opts,
        .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &common, .exits = "exit\n",
        .max_args = 2,
    };
    hbm_opt_args args;
    char *text;
    hbm_opt_result rc = hbm_opt_parse(&spec, argc, argv, &args, &text);
    if (rc != HBM_OPT_GO && rc != HBM_OPT_HELP && rc != HBM_OPT_BAD)
        abort();
    if ((rc == HBM_OPT_GO) != !text) /* text with help and a refusal, none else */
        abort();
    if (rc == HBM_OPT_GO && (args.nargs > 2 && args.dash < 0))
        abort();
    if ((size != HBM_UNKNOWN && size < 1) || (count && (count < 1 || count > 9)) ||
        (dur != -1 && dur < 0.5) || devs.n > HBM_OPT_MAX_DEVICES || choice > 1 ||
        (!isnan(ratio) && (ratio < 0 || ratio > 1)))
        abort();
    for (size_t i = 0; i < devs.n; i++)
        if (devs.id[i] < 0)
            abort();
    hbm_opt_args_free(&args);
    free(text);
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
    parse(argc, words);
    free(copy);
    return 0;
}
