/* The option table: every kind with a good and a bad value, the message form, groups,
 * arguments, "--", the unknown-option handler, the generated help and completion listing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hbm/opt.h"

/* Everything one table can fill. */
typedef struct dst {
    bool flag;
    int mode;
    const char *str;
    int64_t size;
    double ratio, dur;
    long count;
    hbm_opt_devices devs;
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

static hbm_opt_common common;
static dst d;
static char said[8192];

static const hbm_opt opts[] = {
    HBM_OPT_HEAD("first"),
    HBM_OPT(HBM_OPT_FLAG, "flag", 'f', NULL, &d.flag, "a flag"),
    HBM_OPT(HBM_OPT_FLAG, "on", 0, NULL, &d.mode, "mode 1", .value = 1),
    HBM_OPT(HBM_OPT_FLAG, "off", 0, NULL, &d.mode, "mode 2", .value = 2),
    HBM_OPT(HBM_OPT_STRING, "output", 'o', "FILE", &d.str, "a file\nsecond help line"),
    HBM_OPT(HBM_OPT_SIZE, "size", 0, "SIZE", &d.size, "a size", .min = 1, .why = "want a size"),
    HBM_OPT(HBM_OPT_RATIO, "ratio", 0, "PCT", &d.ratio, "a ratio"),
    HBM_OPT(HBM_OPT_DURATION, "interval", 0, "DUR", &d.dur, "a duration", .min = 0.01,
            .why = "want 10ms or more"),
    HBM_OPT(HBM_OPT_COUNT, "count", 0, "N", &d.count, "a count", .min = 1, .max = 9),
    HBM_OPT(HBM_OPT_DEVICES, "device", 0, "ID", &d.devs, "a device"),
    HBM_OPT_HEAD("second"),
    HBM_OPT(HBM_OPT_ENUM, "colour", 0, "C", &d.choice, "a colour", .choices = colours),
    HBM_OPT(HBM_OPT_CALL, "even", 0, "WORD", &d, "an even word", .fn = even_only),
    HBM_OPT_FORM("--even auto", "another form"),
    HBM_OPT_TEXT("a note line"),
    HBM_OPT_HEAD("output"),
    HBM_OPT_GROUPS_HERE,
    HBM_OPTS_END,
};

static hbm_opt_spec spec(void)
{
    hbm_opt_spec s = {
        .cmd = "t", .usage = "[OPTIONS] [ARG]", .about = "A test command.\n", .opts = opts,
        .groups = HBM_OPT_G_JSON | HBM_OPT_G_SOURCE, .common = &common,
        .exits = "exit: 0 fine, 2 bad usage\n", .max_args = 1,
    };
    return s;
}

/* Parses words (NULL-terminated, the command name first); the text handed back lands in
 * said ("" for none). */
static int parse_with(const hbm_opt_spec *s, hbm_opt_args *out, char **words)
{
    int argc = 0;
    while (words[argc])
        argc++;
    char *text;
    int rc = hbm_opt_parse(s, argc, words, out, &text);
    snprintf(said, sizeof said, "%s", text ? text : "");
    free(text);
    return rc;
}

#define PARSE(rc_var, ...)                                                                   \
    do {                                                                                     \
        char *w_[] = {"t", __VA_ARGS__, NULL};                                               \
        hbm_opt_spec s_ = spec();                                                                \
        hbm_opt_args a_;                                                                         \
        rc_var = parse_with(&s_, &a_, w_);                                                   \
        hbm_opt_args_free(&a_);                                                                  \
    } while (0)

static int setup(void **state)
{
    (void)state;
    memset(&d, 0, sizeof d);
    d.ratio = NAN;
    hbm_opt_common_init(&common);
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
    assert_int_equal(rc, HBM_OPT_GO);
    assert_string_equal(said, "");
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
    assert_int_equal(rc, HBM_OPT_GO);
    assert_true(d.flag);
    assert_string_equal(d.str, "file");
    PARSE(rc, "-o", "other");
    assert_int_equal(rc, HBM_OPT_GO);
    assert_string_equal(d.str, "other");
    PARSE(rc, "-o");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "-o needs a value"));
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
        assert_int_equal(rc, HBM_OPT_BAD);
        if (strncmp(said, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("%s %s: got '%s', want it to start with '%s'", cases[i].opt,
                     cases[i].value, said, cases[i].msg);
        /* a refused value leaves its destination as it was */
        assert_int_equal(d.calls, 0);
        assert_int_equal(d.size, 0);
        assert_true(d.dur == 0);
        assert_true(isnan(d.ratio));
        assert_int_equal(d.count, 0);
        assert_int_equal(d.devs.n, 0);
    }
    /* a value the command refuses after parsing reads the same */
    hbm_opt_spec s = spec();
    char *m = hbm_opt_bad_value(&s, "user", "a:b", "no ':' in a user name");
    assert_string_equal(m, "hbmctl t: --user 'a:b': no ':' in a user name\n");
    free(m);
}

static void too_many_devices(void **state)
{
    (void)state;
    char *w[2 * HBM_OPT_MAX_DEVICES + 4] = {"t"};
    int n = 1;
    for (int i = 0; i <= HBM_OPT_MAX_DEVICES; i++) {
        w[n++] = "--device";
        w[n++] = "1";
    }
    hbm_opt_spec s = spec();
    hbm_opt_args a;
    int rc = parse_with(&s, &a, w);
    hbm_opt_args_free(&a);
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "at most 64 devices"));
    assert_int_equal(d.devs.n, HBM_OPT_MAX_DEVICES);
}

static void usage_errors(void **state)
{
    (void)state;
    int rc;
    PARSE(rc, "--colur", "red");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "unknown option '--colur' (did you mean --colour?)"));
    assert_non_null(strstr(said, "see 'hbmctl t --help'"));
    PARSE(rc, "--zzqqxx");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_null(strstr(said, "did you mean"));
    PARSE(rc, "--count");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "--count needs a value"));
    PARSE(rc, "--flag=yes");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "--flag takes no value"));
    PARSE(rc, "--o");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "'--o' is ambiguous")); /* --on, --off, --output */
    PARSE(rc, "--outp", "x");
    assert_int_equal(rc, HBM_OPT_GO); /* a unique abbreviation */
    assert_string_equal(d.str, "x");
    PARSE(rc, "-q");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "unknown option '-q'"));
    PARSE(rc, "a", "b");
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_non_null(strstr(said, "unexpected argument 'b'"));
}

static void arguments_and_dash(void **state)
{
    (void)state;
    char *w[] = {"t", "log", "--flag", "--", "--count", "x", NULL};
    hbm_opt_spec s = spec();
    s.max_args = 1;
    hbm_opt_args a;
    int rc = parse_with(&s, &a, w);
    assert_int_equal(rc, HBM_OPT_GO);
    assert_true(d.flag);
    assert_int_equal(a.nargs, 3);
    assert_int_equal(a.dash, 1);
    assert_string_equal(a.args[0], "log");
    assert_string_equal(a.args[1], "--count"); /* after "--": an argument */
    assert_int_equal(d.count, 0);
    hbm_opt_args_free(&a);

    /* stop_at_arg: the first argument ends the options (a command and its own flags) */
    char *w2[] = {"t", "--flag", "cmd", "--count", "5", NULL};
    s.stop_at_arg = true;
    s.max_args = -1;
    setup(NULL);
    rc = parse_with(&s, &a, w2);
    assert_int_equal(rc, HBM_OPT_GO);
    assert_int_equal(a.nargs, 3);
    assert_int_equal(a.dash, -1);
    assert_string_equal(a.args[1], "--count");
    assert_int_equal(d.count, 0);
    hbm_opt_args_free(&a);

    /* options before the first argument are still read, and refused when bad */
    char *w3[] = {"t", "--count", "0", "cmd", NULL};
    rc = parse_with(&s, &a, w3);
    hbm_opt_args_free(&a);
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_string_equal(said, "hbmctl t: --count '0': want a whole number from 1 to 9\n");
}

/* Options a command does not take are refused by the parser: no groups, no --json. */
static void groups_left_out(void **state)
{
    (void)state;
    hbm_opt_spec s = spec();
    s.groups = HBM_OPT_G_LIVE;
    static const char *const refused[] = {"--json", "--snapshot"};
    for (size_t i = 0; i < 2; i++) {
        char *w[] = {"t", (char *)refused[i], "x", NULL};
        hbm_opt_args a;
        int rc = parse_with(&s, &a, w);
        hbm_opt_args_free(&a);
        assert_int_equal(rc, HBM_OPT_BAD);
        assert_non_null(strstr(said, "unknown option"));
    }
    char *w[] = {"t", "--backend", "nvml", NULL};
    hbm_opt_args a;
    assert_int_equal(parse_with(&s, &a, w), HBM_OPT_GO);
    hbm_opt_args_free(&a);
    assert_string_equal(common.src.backend, "nvml");
}

typedef struct seen {
    char *words[8];
    int n;
    const char *refused; /* the handler tells why itself: here, what it refused */
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
    s->refused = words[0];
    return -1;
}

static void unknown_handler(void **state)
{
    (void)state;
    seen got = {{0}, 0, NULL};
    hbm_opt_spec s = spec();
    s.unknown = handler;
    s.unknown_ctx = &got;
    s.max_args = -1;
    char *w[] = {"t", "--x", "--y", "3", "-tp", "--flag", "m", NULL};
    hbm_opt_args a;
    int rc = parse_with(&s, &a, w);
    assert_int_equal(rc, HBM_OPT_GO);
    assert_int_equal(got.n, 4);
    assert_string_equal(got.words[2], "3");
    assert_string_equal(got.words[3], "-tp");
    assert_true(d.flag);
    assert_int_equal(a.nargs, 1);
    hbm_opt_args_free(&a);
    /* with a handler, own options match exactly: "--fla" goes to the handler */
    char *w2[] = {"t", "--fla", NULL};
    rc = parse_with(&s, &a, w2);
    hbm_opt_args_free(&a);
    assert_int_equal(rc, HBM_OPT_BAD);
    assert_string_equal(said, ""); /* the handler's refusal: no text of the parser's */
    assert_string_equal(got.refused, "--fla");
    const char **names = hbm_opt_names(&s);
    size_t n = 0;
    while (names[n])
        n++;
    assert_string_equal(names[0], "--flag");
    assert_string_equal(names[n - 1], "--help");
    free(names);
}

static void help_generated(void **state)
{
    (void)state;
    hbm_opt_spec s = spec();
    char *h = hbm_opt_help(&s);
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

    /* --help itself hands back the same text */
    int rc;
    PARSE(rc, "--count", "3", "--help");
    assert_int_equal(rc, HBM_OPT_HELP);
    assert_string_equal(said, h);
    free(h);
}

static void completion_listing(void **state)
{
    (void)state;
    hbm_opt_spec s = spec();
    char *out = hbm_opt_listing(&s);
    assert_non_null(strstr(out, "_hbmctl_opts[t]=\"--flag --on --off --output --size"));
    assert_non_null(strstr(out, "--json --snapshot --backend --root --vendor-timeout --help\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --output\"]=\"@file\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t -o\"]=\"@file\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --colour\"]=\"red green blue\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --interval\"]=\"1s 2s 5s 10s 30s\"\n"));
    assert_non_null(strstr(out, "_hbmctl_vals[\"t --root\"]=\"@dir\"\n"));
    assert_null(strstr(out, "\"t --flag\"")); /* a flag takes no value */
    free(out);
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
