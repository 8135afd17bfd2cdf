/* Prometheus text exposition format 0.0.4: `name{label="value",...} value [timestamp]`,
 * '#' lines for HELP, TYPE and comments. Written for the servers' /metrics pages, which are
 * small: one line at a time into a bounded buffer, no allocation per sample. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hbm/progress.h"

#define LINE_MAX_LEN 8192

static bool name_start(int c)
{
    return isalpha(c) || c == '_' || c == ':';
}

static bool name_char(int c)
{
    return isalnum(c) || c == '_' || c == ':';
}

/* Reads a float as Prometheus writes it (Go's ParseFloat: also NaN, +Inf, -Inf). */
static int parse_value(char **pp, double *out)
{
    char *p = *pp;
    const char *specials[] = {"NaN", "+Inf", "-Inf", "Inf"};
    const double vals[] = {NAN, INFINITY, -INFINITY, INFINITY};
    for (size_t i = 0; i < 4; i++) {
        size_t n = strlen(specials[i]);
        if (strncasecmp(p, specials[i], n) == 0 && (p[n] == ' ' || p[n] == '\t' || !p[n])) {
            *out = vals[i];
            *pp = p + n;
            return 0;
        }
    }
    if (!(isdigit((unsigned char)*p) || *p == '-' || *p == '+' || *p == '.'))
        return -1;
    char *end;
    *out = strtod(p, &end);
    if (end == p || (*end && *end != ' ' && *end != '\t'))
        return -1;
    *pp = end;
    return 0;
}

/* Label value in double quotes, unescaped in place (\\, \", \n). */
static const char *parse_quoted(char **pp)
{
    char *p = *pp;
    if (*p != '"')
        return NULL;
    char *start = ++p, *w = p;
    for (; *p && *p != '"'; p++) {
        if (*p == '\\') {
            p++;
            if (*p == 'n')
                *w++ = '\n';
            else if (*p == '\\' || *p == '"')
                *w++ = *p;
            else
                return NULL;
        } else {
            *w++ = *p;
        }
    }
    if (*p != '"')
        return NULL;
    *w = '\0';
    *pp = p + 1;
    return start;
}

static char *skip_blank(char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static const char *parse_labels(char **pp, hbm_prom_sample *s)
{
    char *p = *pp + 1; /* past '{' */
    for (;;) {
        p = skip_blank(p);
        if (*p == '}')
            break;
        if (!name_start((unsigned char)*p) || *p == ':')
            return "label name expected";
        char *name = p;
        while (name_char((unsigned char)*p) && *p != ':')
            p++;
        char *name_end = p;
        p = skip_blank(p);
        if (*p != '=')
            return "'=' expected after the label name";
        *name_end = '\0';
        p = skip_blank(p + 1);
        const char *val = parse_quoted(&p);
        if (!val)
            return "label value must be a quoted string (escapes \\\\ \\\" \\n)";
        if (s->nlabels == HBM_PROM_MAX_LABELS)
            return "too many labels";
        s->label_names[s->nlabels] = name;
        s->label_values[s->nlabels++] = val;
        p = skip_blank(p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != '}')
            return "',' or '}' expected after a label";
        break;
    }
    *pp = p + 1;
    return NULL;
}

/* One sample line (a copy the parser may cut). NULL or the reason it is malformed. */
static const char *parse_line(char *line, hbm_prom_sample *s)
{
    char *p = line;
    if (!name_start((unsigned char)*p))
        return "metric name expected";
    s->name = p;
    while (name_char((unsigned char)*p))
        p++;
    char *name_end = p;
    s->nlabels = 0;
    if (*p == '{') {
        const char *why = parse_labels(&p, s);
        if (why)
            return why;
    }
    if (*p != ' ' && *p != '\t')
        return "a space and the value expected after the metric name";
    p = skip_blank(p);
    *name_end = '\0';
    if (parse_value(&p, &s->value) < 0)
        return "value is not a number";
    p = skip_blank(p);
    if (*p) {
        double ts;
        if (parse_value(&p, &ts) < 0 || *skip_blank(p))
            return "only a timestamp may follow the value";
    }
    return NULL;
}

int hbm_prom_parse(const char *text, size_t len, const char *origin, hbm_prom_fn fn, void *ctx,
                   hbm_err *err)
{
    char buf[LINE_MAX_LEN];
    int lineno = 0;
    for (size_t off = 0; off < len;) {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t n = nl ? (size_t)(nl - (text + off)) : len - off;
        const char *src = text + off;
        off += n + (nl ? 1 : 0);
        lineno++;
        if (n && src[n - 1] == '\r')
            n--;
        if (n >= sizeof buf)
            return hbm_err_set(err, "%s:%d: line longer than %d bytes", origin, lineno,
                               LINE_MAX_LEN - 1);
        if (memchr(src, '\0', n))
            return hbm_err_set(err, "%s:%d: NUL byte: not a Prometheus text page", origin,
                               lineno);
        memcpy(buf, src, n);
        buf[n] = '\0';
        char *line = skip_blank(buf);
        if (!*line || *line == '#')
            continue;
        hbm_prom_sample s = {.line = lineno};
        const char *why = parse_line(line, &s);
        if (why)
            return hbm_err_set(err, "%s:%d: %s: not a Prometheus text page", origin, lineno,
                               why);
        if (fn(&s, ctx))
            return 0;
    }
    return 0;
}

const char *hbm_prom_label(const hbm_prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->label_names[i], name) == 0)
            return s->label_values[i];
    return NULL;
}
