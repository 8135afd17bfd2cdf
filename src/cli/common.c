#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hbm/watch.h"

bool cli_opt_listing;

static int usage_exit(const hbm_opt_spec *s)
{
    return s->bad_exit ? s->bad_exit : CLI_EXIT_ERROR;
}

int cli_parse(const hbm_opt_spec *s, int argc, char **argv, hbm_opt_args *out)
{
    char *text;
    hbm_opt_result r = hbm_opt_parse(s, argc, argv, out, &text);
    if (cli_opt_listing) { /* main passes no other word: nothing was parsed */
        free(text);
        text = hbm_opt_listing(s);
    }
    fputs(text ? text : "", r == HBM_OPT_BAD ? stderr : stdout);
    free(text);
    if (r == HBM_OPT_BAD)
        return usage_exit(s);
    return r == HBM_OPT_HELP || cli_opt_listing ? CLI_EXIT_OK : CLI_CONTINUE;
}

int cli_parse_options(const hbm_opt_spec *s, int argc, char **argv)
{
    hbm_opt_args args;
    int rc = cli_parse(s, argc, argv, &args);
    hbm_opt_args_free(&args);
    return rc;
}

void cli_help(const hbm_opt_spec *s, FILE *f)
{
    char *text = hbm_opt_help(s);
    fputs(text, f);
    free(text);
}

int cli_bad_value(const hbm_opt_spec *s, const char *name, const char *value, const char *why)
{
    char *text = hbm_opt_bad_value(s, name, value, why);
    fputs(text, stderr);
    free(text);
    return usage_exit(s);
}

bool cli_observe(const hbm_opt_common *c, hbm_obs *obs)
{
    hbm_err err = {{0}};
    if (hbm_observe(obs, &c->src, &err) < 0) {
        cli_errorf("%s", err.msg);
        return false;
    }
    return true;
}

int cli_read_limit(void *dst, const char *value, char *why, size_t whylen)
{
    cli_limit *l = dst;
    hbm_err err = {{0}};
    if (hbm_watch_parse_limit(value, &l->bytes, &l->ratio, &err) < 0) {
        snprintf(why, whylen, "%s", err.msg);
        return -1;
    }
    return 0;
}

void cli_print_path(FILE *f, const char *prefix, const char *path, const char *rest)
{
    if (strlen(prefix) + strlen(path) + strlen(rest) <= CLI_WIDTH) {
        fprintf(f, "%s%s%s\n", prefix, path, rest);
        return;
    }
    size_t pl = strlen(prefix);
    while (pl && prefix[pl - 1] == ' ')
        pl--;
    if (pl)
        fprintf(f, "%.*s\n", (int)pl, prefix);
    fprintf(f, "%s\n", path);
    while (*rest == ' ')
        rest++;
    if (*rest)
        fprintf(f, "%s\n", rest);
}

void cli_json_out(json_t *j)
{
    cli_json_print(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    fputc('\n', stdout);
    json_decref(j);
}

void cli_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hbmctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool cli_color(FILE *f)
{
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc)
        return false;
    return cli_out_tty(f);
}

const char *cli_verdict_color(hbm_verdict v)
{
    switch (v) {
    case HBM_VERDICT_FREE: return cli_sgr(32);
    case HBM_VERDICT_BUSY: return cli_sgr(33);
    case HBM_VERDICT_UNACCOUNTED: return cli_sgr(35);
    case HBM_VERDICT_ORPHANED:
    case HBM_VERDICT_UNHEALTHY: return cli_sgr(31);
    default: return "";
    }
}

const char *cli_proc_where(char *buf, size_t n, const hbm_dproc *p)
{
    if (p->pod.name[0])
        snprintf(buf, n, "%s%s%s", p->pod.ns, p->pod.ns[0] ? "/" : "", p->pod.name);
    else if (p->container_name[0]) /* the name operators gave it, over its id */
        snprintf(buf, n, "%s", p->container_name);
    else
        snprintf(buf, n, "%s", p->container[0] ? p->container : "-");
    return buf;
}

const char *cli_size(char *buf, size_t n, int64_t bytes)
{
    return hbm_fmt_size(buf, n, bytes);
}
