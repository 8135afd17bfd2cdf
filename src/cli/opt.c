/* The option table: parsing, help and completion listing from one description. The walk
 * over argv is its own rather than getopt_long's: plan hands the words it does not know
 * (vLLM's --max-model-len, -tp) whole to its own reader, which getopt_long would have split
 * into short options or refused. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "hbm/text.h"

bool cli_opt_listing;

#define HELP_WIDTH_MAX 28 /* a longer option name puts its help on the next line */
#define MAX_OPTS 64

void cli_common_init(cli_common *c)
{
    memset(c, 0, sizeof *c);
    c->src.backend = "auto";
    c->src.root = getenv("HBMCTL_ROOT");
}

static bool help_only(cli_kind k)
{
    return k == CLI_SECTION || k == CLI_NOTE || k == CLI_GROUPS;
}

/* The group options of s, in help order; returns the count. */
static size_t group_opts(const cli_spec *s, cli_opt *out)
{
    size_t n = 0;
    cli_common *c = s->common;
    if (s->groups & CLI_G_JSON)
        out[n++] = (cli_opt)CLI_OPT(CLI_FLAG, "json", 0, NULL, &c->json,
                                    s->json_help ? s->json_help
                                                 : "machine-readable output (stable field "
                                                   "names: hbmctl(1), docs/)");
    if (s->groups & CLI_G_SNAPSHOT)
        out[n++] = (cli_opt)CLI_OPT(CLI_STRING, "snapshot", 0, "FILE", &c->src.snapshot,
                                    s->snapshot_help ? s->snapshot_help
                                                     : "read a snapshot or npu-smi text instead "
                                                       "of the live host (- = stdin)");
    if (s->groups & CLI_G_LIVE) {
        out[n++] = (cli_opt)CLI_OPT(CLI_STRING, "backend", 0, "NAME", &c->src.backend,
                                    "auto, nvml, dcmi, npu-smi, snapshot (default auto)",
                                    .words = "auto nvml dcmi npu-smi snapshot");
        out[n++] = (cli_opt)CLI_OPT(CLI_STRING, "root", 0, "DIR", &c->src.root,
                                    "read /proc, /sys and /dev under DIR (tests; env "
                                    "HBMCTL_ROOT)");
        out[n++] = (cli_opt)CLI_OPT(CLI_DURATION, "vendor-timeout", 0, "DUR",
                                    &c->src.vendor_timeout,
                                    "give up on a driver call (DCMI, NVML) or npu-smi run\n"
                                    "after this: exit 2 naming it (default 5s)",
                                    .min = 1e-3, .why = "want 1ms or more",
                                    .words = "2s 5s 10s");
    }
    return n;
}

static const cli_opt help_opt = CLI_OPT(CLI_FLAG, "help", 'h', NULL, NULL, "this text");

/* Every option s parses: its table, its groups and --help. */
static size_t all_opts(const cli_spec *s, cli_opt *out)
{
    size_t n = 0;
    for (const cli_opt *o = s->opts; o && o->kind != CLI_END && n < MAX_OPTS - 6; o++)
        if (!help_only(o->kind))
            out[n++] = *o;
    n += group_opts(s, out + n);
    out[n++] = help_opt;
    return n;
}

static bool takes_value(const cli_opt *o)
{
    return o->kind != CLI_FLAG;
}

static int usage_exit(const cli_spec *s)
{
    return s->bad_exit ? s->bad_exit : CLI_EXIT_ERROR;
}

static int usage_error(const cli_spec *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(const cli_spec *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hbmctl %s: ", s->cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "; see 'hbmctl %s --help'\n", s->cmd);
    va_end(ap);
    return usage_exit(s);
}

int cli_bad_value(const cli_spec *s, const char *name, const char *value, const char *why)
{
    fprintf(stderr, "hbmctl %s: --%s '%s': %s\n", s->cmd, name, value, why);
    return usage_exit(s);
}

static int read_count(const cli_opt *o, const char *v, char *why, size_t n)
{
    char *end;
    long x = strtol(v, &end, 10);
    bool above_max = o->max > 0 && (double)x > o->max;
    if (end == v || *end || (double)x < o->min || above_max) {
        if (o->why)
            snprintf(why, n, "%s", o->why);
        else if (o->max > 0)
            snprintf(why, n, "want a whole number from %.0f to %.0f", o->min, o->max);
        else
            snprintf(why, n, "want a whole number, %.0f or more", o->min);
        return -1;
    }
    *(long *)o->dst = x;
    return 0;
}

static int read_device(const cli_opt *o, const char *v, char *why, size_t n)
{
    cli_devices *d = o->dst;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < 0) {
        snprintf(why, n, "want a device id (logic id on Ascend, index on NVIDIA)");
        return -1;
    }
    if (d->n == CLI_MAX_DEVICES) {
        snprintf(why, n, "at most %d devices", CLI_MAX_DEVICES);
        return -1;
    }
    d->id[d->n++] = x;
    return 0;
}

static int read_enum(const cli_opt *o, const char *v, char *why, size_t n)
{
    size_t k = 0, len = 0;
    for (; o->choices[k]; k++)
        if (!strcmp(o->choices[k], v)) {
            *(int *)o->dst = (int)k;
            return 0;
        }
    len += (size_t)snprintf(why, n, "want ");
    for (size_t i = 0; i < k && len < n; i++)
        len += (size_t)snprintf(why + len, n - len, "%s%s", o->choices[i],
                                i + 2 == k ? " or " : i + 1 < k ? ", " : "");
    return -1;
}

/* Converts v per the option's kind into its destination, which changes only when the
 * value is good. */
static int apply(const cli_opt *o, const char *v, char *why, size_t n)
{
    hbm_err err = {{0}};
    int rc = 0;
    switch (o->kind) {
    case CLI_FLAG:
        if (o->value)
            *(int *)o->dst = o->value;
        else
            *(bool *)o->dst = true;
        return 0;
    case CLI_STRING: *(const char **)o->dst = v; return 0;
    case CLI_COUNT: return read_count(o, v, why, n);
    case CLI_DEVICES: return read_device(o, v, why, n);
    case CLI_ENUM: return read_enum(o, v, why, n);
    case CLI_CALL: return o->fn(o->dst, v, why, n);
    case CLI_RATIO: {
        double r;
        rc = hbm_parse_ratio(v, &r, &err);
        if (rc == 0)
            *(double *)o->dst = r;
        break;
    }
    case CLI_SIZE: {
        int64_t b;
        rc = hbm_parse_size(v, &b, &err);
        if (rc == 0 && (double)b < o->min)
            rc = hbm_err_set(&err, "%s", o->why ? o->why : "too small");
        if (rc == 0)
            *(int64_t *)o->dst = b;
        break;
    }
    case CLI_DURATION: {
        double sec;
        rc = hbm_parse_duration(v, &sec, &err);
        if (rc == 0 && sec < o->min)
            rc = hbm_err_set(&err, "%s", o->why ? o->why : "too short");
        if (rc == 0)
            *(double *)o->dst = sec;
        break;
    }
    default: return 0;
    }
    if (rc < 0)
        hbm_text_fitf(why, n, "%s", err.msg);
    return rc;
}

/* The option named by the first len bytes of name: exact, else (when allowed) the one
 * option it abbreviates. *ambiguous tells a prefix of several from no match. */
static const cli_opt *find_long(const cli_opt *opts, size_t n, const char *name, size_t len,
                                bool prefixes, bool *ambiguous)
{
    const cli_opt *hit = NULL;
    int nhit = 0;
    *ambiguous = false;
    for (size_t i = 0; i < n; i++) {
        if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len))
            return &opts[i];
        if (prefixes && len && !strncmp(opts[i].name, name, len)) {
            hit = &opts[i];
            nhit++;
        }
    }
    *ambiguous = nhit > 1;
    return nhit == 1 ? hit : NULL;
}

static const cli_opt *find_short(const cli_opt *opts, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].short_name && opts[i].short_name == c)
            return &opts[i];
    return NULL;
}

/* An unknown option, with the nearest long name when one is close. */
static int unknown_option(const cli_spec *s, const cli_opt *opts, size_t n, const char *word)
{
    const char *w = word;
    while (*w == '-')
        w++;
    size_t wl = strcspn(w, "=");
    char bare[96];
    snprintf(bare, sizeof bare, "%.*s", (int)(wl < sizeof bare ? wl : sizeof bare - 1), w);
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = hbm_edit_distance(bare, opts[i].name);
        if (d < bestd) {
            bestd = d;
            best = opts[i].name;
        }
    }
    /* a typo is a few edits away; a short name allows fewer */
    size_t allowed = strlen(bare) / 4 < 1 ? 1 : strlen(bare) / 4 > 3 ? 3 : strlen(bare) / 4;
    if (best && bestd <= allowed)
        return usage_error(s, "unknown option '%s' (did you mean --%s?)", word, best);
    return usage_error(s, "unknown option '%s'", word);
}

typedef struct parse_state {
    const cli_spec *s;
    cli_opt opts[MAX_OPTS];
    size_t n;
    bool help;
} parse_state;

static int set_value(parse_state *p, const cli_opt *o, const char *v)
{
    if (o->kind == CLI_FLAG && !strcmp(o->name, help_opt.name)) {
        p->help = true;
        return CLI_CONTINUE;
    }
    char why[512] = "";
    if (apply(o, v, why, sizeof why) < 0)
        return cli_bad_value(p->s, o->name, v, why);
    return CLI_CONTINUE;
}

/* One "--name[=value]" word (and its value word); *i moves past what it took. */
static int long_word(parse_state *p, int argc, char **argv, int *i)
{
    const char *name = argv[*i] + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    bool ambiguous;
    const cli_opt *o = find_long(p->opts, p->n, name, len, !p->s->unknown, &ambiguous);
    if (ambiguous)
        return usage_error(p->s, "option '%s' is ambiguous", argv[*i]);
    if (!o)
        return -2; /* not ours */
    const char *v = NULL;
    if (takes_value(o)) {
        if (eq)
            v = eq + 1;
        else if (*i + 1 < argc)
            v = argv[++*i];
        else
            return usage_error(p->s, "--%s needs a value", o->name);
    } else if (eq) {
        return usage_error(p->s, "--%s takes no value", o->name);
    }
    return set_value(p, o, v);
}

/* One "-x", "-xVALUE" or "-xy" word (and its value word). */
static int short_word(parse_state *p, int argc, char **argv, int *i)
{
    const char *w = argv[*i];
    if (!find_short(p->opts, p->n, w[1]))
        return -2;
    for (size_t j = 1; w[j]; j++) {
        const cli_opt *o = find_short(p->opts, p->n, w[j]);
        if (!o)
            return usage_error(p->s, "unknown option '-%c'", w[j]);
        if (!takes_value(o)) {
            int rc = set_value(p, o, NULL);
            if (rc != CLI_CONTINUE)
                return rc;
            continue;
        }
        if (w[j + 1])
            return set_value(p, o, w + j + 1);
        if (*i + 1 >= argc)
            return usage_error(p->s, "-%c needs a value", w[j]);
        return set_value(p, o, argv[++*i]);
    }
    return CLI_CONTINUE;
}

static void list_options(const parse_state *p);

/* An option word: ours, the command's unknown handler's, or an error. */
static int option_word(parse_state *p, int argc, char **argv, int *i)
{
    const char *w = argv[*i];
    int rc = w[1] == '-' ? long_word(p, argc, argv, i) : short_word(p, argc, argv, i);
    if (rc != -2)
        return rc;
    if (!p->s->unknown)
        return unknown_option(p->s, p->opts, p->n, w);
    int took = p->s->unknown(p->s->unknown_ctx, argv + *i, argc - *i);
    if (took < 1)
        return usage_exit(p->s);
    *i += took - 1;
    return CLI_CONTINUE;
}

static int walk(parse_state *p, int argc, char **argv, cli_args *out)
{
    bool all_args = false;
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (!all_args && !strcmp(w, "--")) {
            out->dash = out->nargs;
            all_args = true;
            continue;
        }
        if (all_args || w[0] != '-' || !w[1]) {
            out->args[out->nargs++] = argv[i];
            all_args |= p->s->stop_at_arg;
            continue;
        }
        int rc = option_word(p, argc, argv, &i);
        if (rc != CLI_CONTINUE)
            return rc;
    }
    return CLI_CONTINUE;
}

int cli_parse(const cli_spec *s, int argc, char **argv, cli_args *out)
{
    parse_state p = {.s = s};
    p.n = all_opts(s, p.opts);
    out->args = hbm_xcalloc((size_t)argc + 1, sizeof *out->args);
    out->nargs = 0;
    out->dash = -1;
    if (cli_opt_listing) {
        list_options(&p);
        return CLI_EXIT_OK;
    }
    int rc = walk(&p, argc, argv, out);
    if (rc != CLI_CONTINUE)
        return rc;
    if (p.help) {
        cli_help(s, stdout);
        return CLI_EXIT_OK;
    }
    int before_dash = out->dash >= 0 ? out->dash : out->nargs;
    if (s->max_args >= 0 && before_dash > s->max_args) {
        if (s->max_args == 0)
            return usage_error(s, "takes no arguments ('%s')", out->args[0]);
        return usage_error(s, "unexpected argument '%s'", out->args[s->max_args]);
    }
    return CLI_CONTINUE;
}

void cli_args_free(cli_args *a)
{
    free(a->args);
    a->args = NULL;
    a->nargs = 0;
}

int cli_parse_options(const cli_spec *s, int argc, char **argv)
{
    cli_args args;
    int rc = cli_parse(s, argc, argv, &args);
    cli_args_free(&args);
    return rc;
}

const char **cli_opt_names(const cli_spec *s)
{
    parse_state p = {.s = s};
    p.n = all_opts(s, p.opts);
    const char **names = hbm_xcalloc(p.n + 1, sizeof *names);
    static char buf[MAX_OPTS][48]; /* the names live as long as the program */
    for (size_t i = 0; i < p.n; i++) {
        snprintf(buf[i], sizeof buf[i], "--%s", p.opts[i].name);
        names[i] = buf[i];
    }
    return names;
}

/* ---- help ---- */

static size_t left_text(const cli_opt *o, char *buf, size_t n)
{
    char shortname[8] = "";
    if (o->short_name)
        snprintf(shortname, sizeof shortname, "-%c, ", o->short_name);
    return (size_t)snprintf(buf, n, "  %s--%s%s%s", shortname, o->name, o->meta ? " " : "",
                            o->meta ? o->meta : "");
}

/* One entry: the left text, then its help from column width ('\n': a line below). */
static void help_entry(FILE *f, const char *left, const char *help, size_t width)
{
    size_t l = strlen(left);
    fputs(left, f);
    const char *h = help ? help : "";
    if (l + 1 > width) {
        fputc('\n', f);
        l = 0;
    }
    for (bool first = true; first || *h; first = false) {
        size_t len = strcspn(h, "\n");
        fprintf(f, "%*s%.*s\n", (int)(first ? width - l : width), "", (int)len, h);
        h += len + (h[len] == '\n');
    }
}

static void help_option(FILE *f, const cli_opt *o, size_t width)
{
    char left[96];
    left_text(o, left, sizeof left);
    help_entry(f, left, o->help, width);
}

static void help_note(FILE *f, const char *text)
{
    while (*text) {
        size_t len = strcspn(text, "\n");
        fprintf(f, "  %.*s\n", (int)len, text);
        text += len + (text[len] == '\n');
    }
}

/* A note with a left column: another form of the option above ("--device auto"). */
static void help_note_entry(FILE *f, const cli_opt *o, size_t width)
{
    char left[96];
    snprintf(left, sizeof left, "  %s", o->name);
    help_entry(f, left, o->help, width);
}

static size_t help_width(const cli_opt *opts, size_t n)
{
    size_t width = 0;
    char left[96];
    for (size_t i = 0; i < n; i++) {
        size_t l = left_text(&opts[i], left, sizeof left) + 2;
        if (l > width && l <= HELP_WIDTH_MAX)
            width = l;
    }
    return width;
}

void cli_help(const cli_spec *s, FILE *f)
{
    cli_opt all[MAX_OPTS], groups[8];
    size_t nall = all_opts(s, all), ngroups = group_opts(s, groups);
    size_t width = help_width(all, nall);
    fprintf(f, "usage: hbmctl %s %s\n\n%s\n", s->cmd, s->usage, s->about);
    const cli_opt *o = s->opts;
    if (!o || o->kind != CLI_SECTION)
        fputs("options:\n", f);
    bool groups_shown = false;
    for (; o && o->kind != CLI_END; o++) {
        if (o->kind == CLI_SECTION)
            fprintf(f, "%s%s:\n", o == s->opts ? "" : "\n", o->help);
        else if (o->kind == CLI_NOTE && o->name)
            help_note_entry(f, o, width);
        else if (o->kind == CLI_NOTE)
            help_note(f, o->help);
        else if (o->kind != CLI_GROUPS)
            help_option(f, o, width);
        if (o->kind == CLI_GROUPS) {
            for (size_t i = 0; i < ngroups; i++)
                help_option(f, &groups[i], width);
            groups_shown = true;
        }
    }
    for (size_t i = 0; !groups_shown && i < ngroups; i++)
        help_option(f, &groups[i], width);
    help_option(f, &help_opt, width);
    if (s->env)
        fprintf(f, "\n%s", s->env);
    fprintf(f, "\n%s", s->exits);
}

/* ---- completion ---- */

/* What completes the value of o: "@file", "@dir", or words ("" for nothing). */
static const char *value_words(const cli_opt *o, char *buf, size_t n)
{
    if (o->words)
        return o->words;
    if (o->kind == CLI_ENUM) {
        size_t len = 0;
        buf[0] = '\0';
        for (size_t k = 0; o->choices[k] && len < n; k++)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", k ? " " : "", o->choices[k]);
        return buf;
    }
    if (o->kind == CLI_DURATION)
        return "1s 2s 5s 10s 30s";
    if (o->meta && strstr(o->meta, "DIR"))
        return "@dir";
    if (o->meta && strstr(o->meta, "FILE"))
        return "@file";
    return "";
}

/* Bash assignments the completion script reads (scripts/hbmctl.bash-completion). */
static void list_options(const parse_state *p)
{
    printf("_hbmctl_opts[%s]=\"", p->s->cmd);
    for (size_t i = 0; i < p->n; i++)
        printf("%s--%s", i ? " " : "", p->opts[i].name);
    printf("\"\n");
    for (size_t i = 0; i < p->n; i++) {
        const cli_opt *o = &p->opts[i];
        char buf[256];
        if (!takes_value(o))
            continue;
        printf("_hbmctl_vals[\"%s --%s\"]=\"%s\"\n", p->s->cmd, o->name,
               value_words(o, buf, sizeof buf));
        if (o->short_name)
            printf("_hbmctl_vals[\"%s -%c\"]=\"%s\"\n", p->s->cmd, o->short_name,
                   value_words(o, buf, sizeof buf));
    }
}
