/* The option table: parsing, help and completion listing from one description. The walk
 * over argv is its own rather than getopt_long's: plan hands the words it does not know
 * (vLLM's --max-model-len, -tp) whole to its own reader, which getopt_long would have split
 * into short options or refused. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/opt.h"
#include "hbm/text.h"
#include "hbm/util.h"

#define HELP_WIDTH_MAX 28 /* a longer option name puts its help on the next line */
#define MAX_OPTS 64

void hbm_opt_common_init(hbm_opt_common *c)
{
    memset(c, 0, sizeof *c);
    c->src.backend = "auto";
    c->src.root = getenv("HBMCTL_ROOT");
}

static bool help_only(hbm_opt_kind k)
{
    return k == HBM_OPT_SECTION || k == HBM_OPT_NOTE || k == HBM_OPT_GROUPS;
}

/* The group options of s, in help order; returns the count. */
static size_t group_opts(const hbm_opt_spec *s, hbm_opt *out)
{
    size_t n = 0;
    hbm_opt_common *c = s->common;
    if (s->groups & HBM_OPT_G_JSON)
        out[n++] = (hbm_opt)HBM_OPT(HBM_OPT_FLAG, "json", 0, NULL, &c->json,
                                    s->json_help ? s->json_help
                                                 : "machine-readable output (stable field "
                                                   "names: hbmctl(1), docs/)");
    if (s->groups & HBM_OPT_G_SNAPSHOT)
        out[n++] = (hbm_opt)HBM_OPT(HBM_OPT_STRING, "snapshot", 0, "FILE", &c->src.snapshot,
                                    s->snapshot_help ? s->snapshot_help
                                                     : "read a snapshot or npu-smi text instead "
                                                       "of the live host (- = stdin)");
    if (s->groups & HBM_OPT_G_LIVE) {
        out[n++] = (hbm_opt)HBM_OPT(HBM_OPT_STRING, "backend", 0, "NAME", &c->src.backend,
                                    "auto, nvml, dcmi, npu-smi, snapshot (default auto)",
                                    .words = "auto nvml dcmi npu-smi snapshot");
        out[n++] = (hbm_opt)HBM_OPT(HBM_OPT_STRING, "root", 0, "DIR", &c->src.root,
                                    "read /proc, /sys and /dev under DIR (tests; env "
                                    "HBMCTL_ROOT)");
        out[n++] = (hbm_opt)HBM_OPT(HBM_OPT_DURATION, "vendor-timeout", 0, "DUR",
                                    &c->src.vendor_timeout,
                                    "give up on a driver call (DCMI, NVML) or npu-smi run\n"
                                    "after this: exit 2 naming it (default 5s)",
                                    .min = 1e-3, .why = "want 1ms or more",
                                    .words = "2s 5s 10s");
    }
    return n;
}

static const hbm_opt help_opt = HBM_OPT(HBM_OPT_FLAG, "help", 'h', NULL, NULL, "this text");

/* Every option s parses: its table, its groups and --help. */
static size_t all_opts(const hbm_opt_spec *s, hbm_opt *out)
{
    size_t n = 0;
    for (const hbm_opt *o = s->opts; o && o->kind != HBM_OPT_END && n < MAX_OPTS - 6; o++)
        if (!help_only(o->kind))
            out[n++] = *o;
    n += group_opts(s, out + n);
    out[n++] = help_opt;
    return n;
}

static bool takes_value(const hbm_opt *o)
{
    return o->kind != HBM_OPT_FLAG;
}

/* A stream into an allocated string, for the text handed back; running out of memory
 * aborts, as hbm_xmalloc does. */
static FILE *text_stream(char **text, size_t *len)
{
    FILE *f = open_memstream(text, len);
    if (!f)
        abort();
    return f;
}

char *hbm_opt_bad_value(const hbm_opt_spec *s, const char *name, const char *value,
                        const char *why)
{
    return hbm_xasprintf("hbmctl %s: --%s '%s': %s\n", s->cmd, name, value, why);
}

static int read_count(const hbm_opt *o, const char *v, char *why, size_t n)
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

static int read_device(const hbm_opt *o, const char *v, char *why, size_t n)
{
    hbm_opt_devices *d = o->dst;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < 0) {
        snprintf(why, n, "want a device id (logic id on Ascend, index on NVIDIA)");
        return -1;
    }
    if (d->n == HBM_OPT_MAX_DEVICES) {
        snprintf(why, n, "at most %d devices", HBM_OPT_MAX_DEVICES);
        return -1;
    }
    d->id[d->n++] = x;
    return 0;
}

static int read_enum(const hbm_opt *o, const char *v, char *why, size_t n)
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
static int apply(const hbm_opt *o, const char *v, char *why, size_t n)
{
    hbm_err err = {{0}};
    int rc = 0;
    switch (o->kind) {
    case HBM_OPT_FLAG:
        if (o->value)
            *(int *)o->dst = o->value;
        else
            *(bool *)o->dst = true;
        return 0;
    case HBM_OPT_STRING: *(const char **)o->dst = v; return 0;
    case HBM_OPT_COUNT: return read_count(o, v, why, n);
    case HBM_OPT_DEVICES: return read_device(o, v, why, n);
    case HBM_OPT_ENUM: return read_enum(o, v, why, n);
    case HBM_OPT_CALL: return o->fn(o->dst, v, why, n);
    case HBM_OPT_RATIO: {
        double r;
        rc = hbm_parse_ratio(v, &r, &err);
        if (rc == 0)
            *(double *)o->dst = r;
        break;
    }
    case HBM_OPT_SIZE: {
        int64_t b;
        rc = hbm_parse_size(v, &b, &err);
        if (rc == 0 && (double)b < o->min)
            rc = hbm_err_set(&err, "%s", o->why ? o->why : "too small");
        if (rc == 0)
            *(int64_t *)o->dst = b;
        break;
    }
    case HBM_OPT_DURATION: {
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
static const hbm_opt *find_long(const hbm_opt *opts, size_t n, const char *name, size_t len,
                                bool prefixes, bool *ambiguous)
{
    const hbm_opt *hit = NULL;
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

static const hbm_opt *find_short(const hbm_opt *opts, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].short_name && opts[i].short_name == c)
            return &opts[i];
    return NULL;
}

typedef struct parse_state {
    const hbm_opt_spec *s;
    hbm_opt opts[MAX_OPTS];
    size_t n;
    bool help;
    char *text; /* the message of a bad usage */
} parse_state;

#define NOT_OURS (-1) /* a word the table does not name */

static hbm_opt_result usage_error(parse_state *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static hbm_opt_result usage_error(parse_state *p, const char *fmt, ...)
{
    size_t len;
    FILE *f = text_stream(&p->text, &len);
    va_list ap;
    va_start(ap, fmt);
    fprintf(f, "hbmctl %s: ", p->s->cmd);
    vfprintf(f, fmt, ap);
    fprintf(f, "; see 'hbmctl %s --help'\n", p->s->cmd);
    va_end(ap);
    fclose(f);
    return HBM_OPT_BAD;
}

/* An unknown option, with the nearest long name when one is close. */
static hbm_opt_result unknown_option(parse_state *p, const char *word)
{
    const hbm_opt *opts = p->opts;
    size_t n = p->n;
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
        return usage_error(p, "unknown option '%s' (did you mean --%s?)", word, best);
    return usage_error(p, "unknown option '%s'", word);
}

static int set_value(parse_state *p, const hbm_opt *o, const char *v)
{
    if (o->kind == HBM_OPT_FLAG && !strcmp(o->name, help_opt.name)) {
        p->help = true;
        return HBM_OPT_GO;
    }
    char why[512] = "";
    if (apply(o, v, why, sizeof why) < 0) {
        p->text = hbm_opt_bad_value(p->s, o->name, v, why);
        return HBM_OPT_BAD;
    }
    return HBM_OPT_GO;
}

/* One "--name[=value]" word (and its value word); *i moves past what it took. */
static int long_word(parse_state *p, int argc, char **argv, int *i)
{
    const char *name = argv[*i] + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    bool ambiguous;
    const hbm_opt *o = find_long(p->opts, p->n, name, len, !p->s->unknown, &ambiguous);
    if (ambiguous)
        return usage_error(p, "option '%s' is ambiguous", argv[*i]);
    if (!o)
        return NOT_OURS;
    const char *v = NULL;
    if (takes_value(o)) {
        if (eq)
            v = eq + 1;
        else if (*i + 1 < argc)
            v = argv[++*i];
        else
            return usage_error(p, "--%s needs a value", o->name);
    } else if (eq) {
        return usage_error(p, "--%s takes no value", o->name);
    }
    return set_value(p, o, v);
}

/* One "-x", "-xVALUE" or "-xy" word (and its value word). */
static int short_word(parse_state *p, int argc, char **argv, int *i)
{
    const char *w = argv[*i];
    if (!find_short(p->opts, p->n, w[1]))
        return NOT_OURS;
    for (size_t j = 1; w[j]; j++) {
        const hbm_opt *o = find_short(p->opts, p->n, w[j]);
        if (!o)
            return usage_error(p, "unknown option '-%c'", w[j]);
        if (!takes_value(o)) {
            int rc = set_value(p, o, NULL);
            if (rc != HBM_OPT_GO)
                return rc;
            continue;
        }
        if (w[j + 1])
            return set_value(p, o, w + j + 1);
        if (*i + 1 >= argc)
            return usage_error(p, "-%c needs a value", w[j]);
        return set_value(p, o, argv[++*i]);
    }
    return HBM_OPT_GO;
}

/* An option word: ours, the command's unknown handler's, or an error. */
static int option_word(parse_state *p, int argc, char **argv, int *i)
{
    const char *w = argv[*i];
    int rc = w[1] == '-' ? long_word(p, argc, argv, i) : short_word(p, argc, argv, i);
    if (rc != NOT_OURS)
        return rc;
    if (!p->s->unknown)
        return unknown_option(p, w);
    int took = p->s->unknown(p->s->unknown_ctx, argv + *i, argc - *i);
    if (took < 1)
        return HBM_OPT_BAD;
    *i += took - 1;
    return HBM_OPT_GO;
}

static int walk(parse_state *p, int argc, char **argv, hbm_opt_args *out)
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
        if (rc != HBM_OPT_GO)
            return rc;
    }
    return HBM_OPT_GO;
}

hbm_opt_result hbm_opt_parse(const hbm_opt_spec *s, int argc, char **argv, hbm_opt_args *out,
                             char **text)
{
    parse_state p = {.s = s};
    p.n = all_opts(s, p.opts);
    out->args = hbm_xcalloc((size_t)argc + 1, sizeof *out->args);
    out->nargs = 0;
    out->dash = -1;
    *text = NULL;
    hbm_opt_result rc = walk(&p, argc, argv, out);
    int before_dash = out->dash >= 0 ? out->dash : out->nargs;
    if (rc == HBM_OPT_GO && p.help) {
        rc = HBM_OPT_HELP;
        p.text = hbm_opt_help(s);
    } else if (rc == HBM_OPT_GO && s->max_args >= 0 && before_dash > s->max_args) {
        if (s->max_args == 0)
            usage_error(&p, "takes no arguments ('%s')", out->args[0]);
        else
            usage_error(&p, "unexpected argument '%s'", out->args[s->max_args]);
        rc = HBM_OPT_BAD;
    }
    *text = p.text;
    return rc;
}

void hbm_opt_args_free(hbm_opt_args *a)
{
    free(a->args);
    a->args = NULL;
    a->nargs = 0;
}

const char **hbm_opt_names(const hbm_opt_spec *s)
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

static size_t left_text(const hbm_opt *o, char *buf, size_t n)
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

static void help_option(FILE *f, const hbm_opt *o, size_t width)
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
static void help_note_entry(FILE *f, const hbm_opt *o, size_t width)
{
    char left[96];
    snprintf(left, sizeof left, "  %s", o->name);
    help_entry(f, left, o->help, width);
}

static size_t help_width(const hbm_opt *opts, size_t n)
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

char *hbm_opt_help(const hbm_opt_spec *s)
{
    hbm_opt all[MAX_OPTS], groups[8];
    size_t nall = all_opts(s, all), ngroups = group_opts(s, groups);
    size_t width = help_width(all, nall);
    char *text;
    size_t len;
    FILE *f = text_stream(&text, &len);
    fprintf(f, "usage: hbmctl %s %s\n\n%s\n", s->cmd, s->usage, s->about);
    const hbm_opt *o = s->opts;
    if (!o || o->kind != HBM_OPT_SECTION)
        fputs("options:\n", f);
    bool groups_shown = false;
    for (; o && o->kind != HBM_OPT_END; o++) {
        if (o->kind == HBM_OPT_SECTION)
            fprintf(f, "%s%s:\n", o == s->opts ? "" : "\n", o->help);
        else if (o->kind == HBM_OPT_NOTE && o->name)
            help_note_entry(f, o, width);
        else if (o->kind == HBM_OPT_NOTE)
            help_note(f, o->help);
        else if (o->kind != HBM_OPT_GROUPS)
            help_option(f, o, width);
        if (o->kind == HBM_OPT_GROUPS) {
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
    fclose(f);
    return text;
}

/* ---- completion ---- */

/* What completes the value of o: "@file", "@dir", or words ("" for nothing). */
static const char *value_words(const hbm_opt *o, char *buf, size_t n)
{
    if (o->words)
        return o->words;
    if (o->kind == HBM_OPT_ENUM) {
        size_t len = 0;
        buf[0] = '\0';
        for (size_t k = 0; o->choices[k] && len < n; k++)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", k ? " " : "", o->choices[k]);
        return buf;
    }
    if (o->kind == HBM_OPT_DURATION)
        return "1s 2s 5s 10s 30s";
    if (o->meta && strstr(o->meta, "DIR"))
        return "@dir";
    if (o->meta && strstr(o->meta, "FILE"))
        return "@file";
    return "";
}

char *hbm_opt_listing(const hbm_opt_spec *s)
{
    hbm_opt opts[MAX_OPTS];
    size_t n = all_opts(s, opts);
    char *text;
    size_t len;
    FILE *f = text_stream(&text, &len);
    fprintf(f, "_hbmctl_opts[%s]=\"", s->cmd);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s--%s", i ? " " : "", opts[i].name);
    fprintf(f, "\"\n");
    for (size_t i = 0; i < n; i++) {
        const hbm_opt *o = &opts[i];
        char buf[256];
        if (!takes_value(o))
            continue;
        fprintf(f, "_hbmctl_vals[\"%s --%s\"]=\"%s\"\n", s->cmd, o->name,
                value_words(o, buf, sizeof buf));
        if (o->short_name)
            fprintf(f, "_hbmctl_vals[\"%s -%c\"]=\"%s\"\n", s->cmd, o->short_name,
                    value_words(o, buf, sizeof buf));
    }
    fclose(f);
    return text;
}
