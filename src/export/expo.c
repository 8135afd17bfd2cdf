/* The Prometheus text exposition writer: families, samples and escaping. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/export.h"
#include "hbm/redact.h"
#include "hbm/text.h"

static void reserve(hbm_export_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = hbm_xrealloc(b->data, cap);
    b->cap = cap;
}

void hbm_export_buf_append(hbm_export_buf *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void hbm_export_buf_printf(hbm_export_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        hbm_export_buf_append(b, small, (size_t)n);
        return;
    }
    reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void hbm_export_buf_free(hbm_export_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* HELP text escapes backslash and newline only. */
static void escape_help(hbm_export_buf *b, const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '\\')
            hbm_export_buf_append(b, "\\\\", 2);
        else if (*p == '\n')
            hbm_export_buf_append(b, "\\n", 2);
        else
            hbm_export_buf_append(b, p, 1);
    }
}

/* A label value comes from outside (a process name, a pod, a model): redacted, and a
 * control character, a C1 control or an invalid byte written as a visible escape with its
 * backslash escaped ("\\x1b"): valid UTF-8 that every exposition parser takes. */
void hbm_export_escape_label(hbm_export_buf *b, const char *value)
{
    char *r = hbm_redact_text(value, strlen(value));
    size_t n = strlen(r), run = 0, i = 0;
    while (i < n) {
        long cp;
        size_t len = hbm_text_next(r + i, n - i, &cp);
        char esc[12] = "";
        if (r[i] == '\\' || r[i] == '"')
            snprintf(esc, sizeof esc, "\\%c", r[i]);
        else if (r[i] == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (!len || hbm_text_unsafe(cp)) {
            esc[0] = '\\';
            hbm_text_escape(esc + 1, len ? cp : -1, (unsigned char)r[i]);
        }
        len = len ? len : 1;
        if (esc[0]) {
            hbm_export_buf_append(b, r + run, i - run);
            hbm_export_buf_append(b, esc, strlen(esc));
            run = i + len;
        }
        i += len;
    }
    hbm_export_buf_append(b, r + run, n - run);
    free(r);
}

void hbm_export_family(hbm_export_buf *b, const char *name, const char *type, const char *help)
{
    hbm_export_buf_printf(b, "# HELP %s ", name);
    escape_help(b, help);
    hbm_export_buf_printf(b, "\n# TYPE %s %s\n", name, type);
}

static void labels_out(hbm_export_buf *b, const hbm_export_label *labels, size_t n)
{
    if (n == 0)
        return;
    hbm_export_buf_append(b, "{", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            hbm_export_buf_append(b, ",", 1);
        hbm_export_buf_printf(b, "%s=\"", labels[i].name);
        hbm_export_escape_label(b, labels[i].value ? labels[i].value : "");
        hbm_export_buf_append(b, "\"", 1);
    }
    hbm_export_buf_append(b, "}", 1);
}

void hbm_export_sample(hbm_export_buf *b, const char *name, const hbm_export_label *labels,
                       size_t nlabels, double value)
{
    if (!isfinite(value))
        return;
    hbm_export_buf_append(b, name, strlen(name));
    labels_out(b, labels, nlabels);
    if (value == floor(value) && fabs(value) < 9e15)
        hbm_export_buf_printf(b, " %lld\n", (long long)value);
    else
        hbm_export_buf_printf(b, " %.9g\n", value);
}

void hbm_export_sample_i64(hbm_export_buf *b, const char *name, const hbm_export_label *labels,
                           size_t nlabels, int64_t value)
{
    if (value < 0)
        return;
    hbm_export_buf_append(b, name, strlen(name));
    labels_out(b, labels, nlabels);
    hbm_export_buf_printf(b, " %lld\n", (long long)value);
}
