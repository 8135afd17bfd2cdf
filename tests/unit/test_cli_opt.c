/* The CLI option table: every kind with a good and a bad value, the message form, groups,
 * arguments, "--", the unknown-option handler, and the generated help. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "cli/opt.h"

/* Everything one table can fill. */
typedef struct dst {
    bool flag;
    int mode;
    const char *str;
    int64_t size;
    double ratio, dur;
    long count;
    cli_devices devs;
    int choice;
    int calls;
    const char *called_with;
} dst;

static const char *const colours[] = {"red", "green", "blue", NULL};

static int even_only(void *p, const char *v, char *why, size_t n)
{
    dst *d = p;
    if (strlen(v) % 2) {
        snprintf(why, n, "want an even number of letters");
        return -1;
    }
    d->calls++;
    d->called_with = v;
    return 0;
}

static cli_common common;
static dst d;
static char err_text[4096];

static const cli_opt opts[] = {
    CLI_HEAD("first"),
    CLI_OPT(CLI_FLAG, "flag", 'f', NULL, &d.flag, "a flag"),
    CLI_OPT(CLI_FLAG, "on", 0, NULL, &d.mode, "mode 1", .value = 1),
    CLI_OPT(CLI_FLAG, "off", 0, NULL, &d.mode, "mode 2", .value = 2),
    CLI_OPT(CLI_STRING, "output", 'o', "FILE", &d.str, "a file\nsecond help line"),
    CLI_OPT(CLI_SIZE, "size", 0, "SIZE", &d.size, "a size", .min = 1, .why = "want a size"),
    CLI_OPT(CLI_RATIO, "ratio", 0, "PCT", &d.ratio, "a ratio"),
    CLI_OPT(CLI_DURATION, "interval", 0, "DUR", &d.dur, "a duration", .min = 0.01,
            .why = "want 10ms or more"),
    CLI_OPT(CLI_COUNT, "count", 0, "N", &d.count, "a count", .min = 1, .max = 9),
    CLI_OPT(CLI_DEVICES, "device", 0, "ID", &d.devs, "a device"),
    CLI_HEAD("second"),
    CLI_OPT(CLI_ENUM, "colour", 0, "C", &d.choice, "a colour", .choices = colours),
    CLI_OPT(CLI_CALL, "even", 0, "WORD", &d, "an even word", .fn = even_only),
    CLI_FORM("--even auto", "another form"),
    CLI_TEXT("a note line"),
    CLI_HEAD("output"),
    CLI_GROUPS_HERE,
    CLI_OPTS_END,
};

static cli_spec spec(void)
{
    cli_spec s = {
        .cmd = "t", .usage = "[OPTIONS] [ARG]", .about = "A test command.\n", .opts = opts,
        .groups = CLI_G_JSON | CLI_G_SOURCE, .common = &common,
        .exits = "exit: 0 fine, 2 bad usage\n", .max_args = 1,
    };
    return s;
}

/* Parses words (NULL-terminated, the command name first) with stderr captured. */
static int parse_with(const cli_spec *s, cli_args *out, char **words)
{
    int argc = 0;
    while (words[argc])
        argc++;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *t = tmpfile();
    assert_non_null(t);
    dup2(fileno(t), STDERR_FILENO);
    int rc = cli_parse(s, argc, words, out);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(t);
    size_t n = fread(err_text, 1, sizeof err_text - 1, t);
    err_text[n] = '\0';
    fclose(t);
    return rc;
}

#define PARSE(rc_var, ...)                                                                   \
    do {                                                                                     \
        char *w_[] = {"t", __VA_ARGS__, NULL};                                               \
        cli_spec s_ = spec();                                                                \
        cli_args a_;                                                                         \
        rc_var = parse_with(&s_, &a_, w_);                                                   \
        cli_args_free(&a_);                                                                  \
    } while (0)

static int setup(void **state)
{
    (void)state;
    memset(&d, 0, sizeof d);
    d.ratio = NAN;
    cli_common_init(&common);
    return 0;
}

static void good_values(void **state)
{
    (void)state;
    int rc;
    PARSE(rc, "-f", "--output=out.json", "--size", "2GiB", "--ratio", "80%", "--interval",
          "250ms", "--count", "9", "--device", "3", "--device=0", "--colour", "blue", "--even",
          "ab", "--on", "--off", "--json", "--snapshot", "s.json", "--backend", "dcmi", "--root",
          "/r");
    assert_int_equal(rc, CLI_CONTINUE);
    assert_string_equal(err_text, "");
    assert_true(d.flag);
    assert_int_equal(d.mode, 2); /* the later of --on and --off */
    assert_string_equal(d.str, "out.json");
    assert_int_equal(d.size, 2LL << 30);
    assert_float_equal(d.ratio, 0.8, 1e-12);
    assert_float_equal(d.dur, 0.25, 1e-12);
    assert_int_equal(d.count, 9);
    assert_int_equal(d.devs.n, 2);
    assert_int_equal(d.devs.id[0], 3);
    assert_int_equal(d.devs.id[1], 0);
    assert_int_equal(d.choice, 2);
    assert_int_equal(d.calls, 1);
    assert_string_equal(d.called_with, "ab");
    assert_true(common.json);
    assert_string_equal(common.src.snapshot, "s.json");
    assert_string_equal(common.src.backend, "dcmi");
    assert_string_equal(common.src.root, "/r");
}

static void short_forms(void **state)
{
    (void)state;
    int rc;
    PARSE(rc, "-fofile");
    assert_int_equal(rc, CLI_CONTINUE);
    assert_true(d.flag);
    assert_string_equal(d.str, "file");
    PARSE(rc, "-o", "other");
    assert_int_equal(rc, CLI_CONTINUE);
    assert_string_equal(d.str, "other");
    PARSE(rc, "-o");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "-o needs a value"));
}

/* One bad value per kind: "hbmctl t: --name 'value': why", exit 2, nothing else set. */
static void bad_values(void **state)
{
    (void)state;
    static const struct {
        const char *opt, *value, *msg;
    } cases[] = {
        {"--size", "12 parsecs", "hbmctl t: --size '12 parsecs': "},
        {"--size", "0", "hbmctl t: --size '0': want a size\n"},
        {"--ratio", "150%", "hbmctl t: --ratio '150%': "},
        {"--interval", "soon", "hbmctl t: --interval 'soon': "},
        {"--interval", "1ms", "hbmctl t: --interval '1ms': want 10ms or more\n"},
        {"--count", "0", "hbmctl t: --count '0': want a whole number from 1 to 9\n"},
        {"--count", "10", "hbmctl t: --count '10': want a whole number from 1 to 9\n"},
        {"--count", "3x", "hbmctl t: --count '3x': want a whole number from 1 to 9\n"},
        {"--count", "", "hbmctl t: --count '': want a whole number from 1 to 9\n"},
        {"--device", "-1", "hbmctl t: --device '-1': want a device id (logic id on Ascend, "
                           "index on NVIDIA)\n"},
        {"--device", "x", "hbmctl t: --device 'x': want a device id"},
        {"--colour", "mauve", "hbmctl t: --colour 'mauve': want red, green or blue\n"},
        {"--even", "abc", "hbmctl t: --even 'abc': want an even number of letters\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setup(NULL);
        int rc;
        PARSE(rc, (char *)cases[i].opt, (char *)cases[i].value);
        assert_int_equal(rc, CLI_EXIT_ERROR);
        if (strncmp(err_text, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("%s %s: got '%s', want it to start with '%s'", cases[i].opt,
                     cases[i].value, err_text, cases[i].msg);
        /* a refused value leaves its destination as it was */
        assert_int_equal(d.calls, 0);
        assert_int_equal(d.size, 0);
        assert_true(d.dur == 0);
        assert_true(isnan(d.ratio));
        assert_int_equal(d.count, 0);
        assert_int_equal(d.devs.n, 0);
    }
}

static void too_many_devices(void **state)
{
    (void)state;
    char *w[2 * CLI_MAX_DEVICES + 4] = {"t"};
    int n = 1;
    for (int i = 0; i <= CLI_MAX_DEVICES; i++) {
        w[n++] = "--device";
        w[n++] = "1";
    }
    cli_spec s = spec();
    cli_args a;
    int rc = parse_with(&s, &a, w);
    cli_args_free(&a);
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "at most 64 devices"));
    assert_int_equal(d.devs.n, CLI_MAX_DEVICES);
}

static void usage_errors(void **state)
{
    (void)state;
    int rc;
    PARSE(rc, "--colur", "red");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "unknown option '--colur' (did you mean --colour?)"));
    assert_non_null(strstr(err_text, "see 'hbmctl t --help'"));
    PARSE(rc, "--zzqqxx");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_null(strstr(err_text, "did you mean"));
    PARSE(rc, "--count");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "--count needs a value"));
    PARSE(rc, "--flag=yes");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "--flag takes no value"));
    PARSE(rc, "--o");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "'--o' is ambiguous")); /* --on, --off, --output */
    PARSE(rc, "--outp", "x");
    assert_int_equal(rc, CLI_CONTINUE); /* a unique abbreviation */
    assert_string_equal(d.str, "x");
    PARSE(rc, "-q");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "unknown option '-q'"));
    PARSE(rc, "a", "b");
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_non_null(strstr(err_text, "unexpected argument 'b'"));
}

static void arguments_and_dash(void **state)
{
    (void)state;
    char *w[] = {"t", "log", "--flag", "--", "--count", "x", NULL};
    cli_spec s = spec();
    s.max_args = 1;
    cli_args a;
    int rc = parse_with(&s, &a, w);
    assert_int_equal(rc, CLI_CONTINUE);
    assert_true(d.flag);
    assert_int_equal(a.nargs, 3);
    assert_int_equal(a.dash, 1);
    assert_string_equal(a.args[0], "log");
    assert_string_equal(a.args[1], "--count"); /* after "--": an argument */
    assert_int_equal(d.count, 0);
    cli_args_free(&a);

    /* stop_at_arg: the first argument ends the options (a command and its own flags) */
    char *w2[] = {"t", "--flag", "cmd", "--count", "5", NULL};
    s.stop_at_arg = true;
    s.max_args = -1;
    s.bad_exit = 125;
    setup(NULL);
    rc = parse_with(&s, &a, w2);
    assert_int_equal(rc, CLI_CONTINUE);
    assert_int_equal(a.nargs, 3);
    assert_int_equal(a.dash, -1);
    assert_string_equal(a.args[1], "--count");
    assert_int_equal(d.count, 0);
    cli_args_free(&a);

    /* the command's own usage exit */
    char *w3[] = {"t", "--count", "0", NULL};
    rc = parse_with(&s, &a, w3);
    cli_args_free(&a);
    assert_int_equal(rc, 125);
}

/* Options a command does not take are refused by the parser: no groups, no --json. */
static void groups_left_out(void **state)
{
    (void)state;
    cli_spec s = spec();
    s.groups = CLI_G_LIVE;
    static const char *const refused[] = {"--json", "--snapshot"};
    for (size_t i = 0; i < 2; i++) {
        char *w[] = {"t", (char *)refused[i], "x", NULL};
        cli_args a;
        int rc = parse_with(&s, &a, w);
        cli_args_free(&a);
        assert_int_equal(rc, CLI_EXIT_ERROR);
        assert_non_null(strstr(err_text, "unknown option"));
    }
    char *w[] = {"t", "--backend", "nvml", NULL};
    cli_args a;
    assert_int_equal(parse_with(&s, &a, w), CLI_CONTINUE);
    cli_args_free(&a);
    assert_string_equal(common.src.backend, "nvml");
}

typedef struct seen {
    char *words[8];
    int n;
} seen;

/* Takes "--x" alone and "--y V" with its value; refuses the rest. */
static int handler(void *ctx, char **words, int nwords)
{
    seen *s = ctx;
    if (!strcmp(words[0], "--x") || !strcmp(words[0], "-tp")) {
        s->words[s->n++] = words[0];
        return 1;
    }
    if (!strcmp(words[0], "--y") && nwords > 1) {
        s->words[s->n++] = words[0];
        s->words[s->n++] = words[1];
        return 2;
    }
    fprintf(stderr, "refused %s\n", words[0]);
    return -1;
}

static void unknown_handler(void **state)
{
    (void)state;
    seen got = {{0}, 0};
    cli_spec s = spec();
    s.unknown = handler;
    s.unknown_ctx = &got;
    s.max_args = -1;
    char *w[] = {"t", "--x", "--y", "3", "-tp", "--flag", "m", NULL};
    cli_args a;
    int rc = parse_with(&s, &a, w);
    assert_int_equal(rc, CLI_CONTINUE);
    assert_int_equal(got.n, 4);
    assert_string_equal(got.words[2], "3");
    assert_string_equal(got.words[3], "-tp");
    assert_true(d.flag);
    assert_int_equal(a.nargs, 1);
    cli_args_free(&a);
    /* with a handler, own options match exactly: "--fla" goes to the handler */
    char *w2[] = {"t", "--fla", NULL};
    rc = parse_with(&s, &a, w2);
    cli_args_free(&a);
    assert_int_equal(rc, CLI_EXIT_ERROR);
    assert_string_equal(err_text, "refused --fla\n");
    const char **names = cli_opt_names(&s);
    size_t n = 0;
    while (names[n])
        n++;
    assert_string_equal(names[0], "--flag");
    assert_string_equal(names[n - 1], "--help");
    free(names);
}

static char *help_text(const cli_spec *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_help(s, f);
    fclose(f);
    return buf;
}

static void help_generated(void **state)
{
    (void)state;
    cli_spec s = spec();
    char *h = help_text(&s);
    static const char *const want[] = {
        "usage: hbmctl t [OPTIONS] [ARG]\n\nA test command.\n\nfirst:\n",
        "\n  -f, --flag            a flag\n",
        "\n  -o, --output FILE     a file\n                        second help line\n",
        "\nsecond:\n  --colour C",
        "\n  --even auto           another form\n  a note line\n",
        "\noutput:\n  --json                machine-readable output",
        "\n  --root DIR            read /proc",
        "\n  --vendor-timeout DUR  give up on a driver call",
        "\n  -h, --help            this text\n\nexit: 0 fine, 2 bad usage\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(h, want[i]))
            fail_msg("help lacks '%s':\n%s", want[i], h);
    assert_null(strstr(h, "options:")); /* the first heading replaces it */
    for (char *l = h, *e; *l; l = e + 1) {
        e = strchr(l, '\n');
        assert_non_null(e);
        if (e - l > 100)
            fail_msg("help line over 100 columns: %.*s", (int)(e - l), l);
    }
    free(h);

    /* --help itself prints the same text and exits 0 */
    int rc;
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    FILE *t = tmpfile();
    dup2(fileno(t), STDOUT_FILENO);
    PARSE(rc, "--count", "3", "--help");
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    assert_int_equal(rc, CLI_EXIT_OK);
    assert_true(ftell(t) > 200);
    fclose(t);
}

static void completion_listing(void **state)
{
    (void)state;
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    FILE *t = tmpfile();
    dup2(fileno(t), STDOUT_FILENO);
    cli_opt_listing = true;
    int rc;
    PARSE(rc, "--count", "not even parsed");
    cli_opt_listing = false;
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    assert_int_equal(rc, CLI_EXIT_OK);
    assert_int_equal(d.count, 0);
    rewind(t);
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, t);
    out[n] = '\0';
    fclose(t);
    assert_non_null(strstr(out, "_hbmctl_opts[t]=\"--flag --on --off --output --size"));
    assert_non_null(strstr(out, "--json --snapshot --backend --root --vendor-timeout --help\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --output\"]=\"@file\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t -o\"]=\"@file\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --colour\"]=\"red green blue\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --interval\"]=\"1s 2s 5s 10s 30s\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --root\"]=\"@dir\"\n"));
    assert_null(strstr(out, "\"t --flag\"")); /* a flag takes no value */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(good_values, setup),
        cmocka_unit_test_setup(short_forms, setup),
        cmocka_unit_test_setup(bad_values, setup),
        cmocka_unit_test_setup(too_many_devices, setup),
        cmocka_unit_test_setup(usage_errors, setup),
        cmocka_unit_test_setup(arguments_and_dash, setup),
        cmocka_unit_test_setup(groups_left_out, setup),
        cmocka_unit_test_setup(unknown_handler, setup),
        cmocka_unit_test_setup(help_generated, setup),
        cmocka_unit_test_setup(completion_listing, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
