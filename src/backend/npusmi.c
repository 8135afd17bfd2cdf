/* Reader for `npu-smi info` text. The two header rows of the device section and the header
 * row of the process section say which columns exist, in which '|' cell and at which offset;
 * data rows are read against that layout. Nothing depends on a known sample: a new column is
 * ignored, a missing one is unknown, a value that is not what its column promises is an error
 * naming the line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hbm/npusmi.h"

#define MAX_CELLS 12
#define MAX_COLS 24
#define MAX_TOKENS 32
#define MAX_PREAMBLE_LINES 200 /* text before the table (tool banners, HAMi logs) */

typedef struct column {
    char label[48];
    int cell;
    int off; /* offset of the label within its cell */
} column;

typedef struct layout {
    column cols[MAX_COLS];
    int ncols;
    int ncells;
    int line;
} layout;

typedef struct cell {
    const char *p;
    size_t n;
} cell;

typedef struct token {
    char text[96];
    int off;
} token;

typedef struct reader {
    hbm_obs *obs;
    const char *name;
    hbm_err *err;
    int line;
} reader;

static int fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(reader *r, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hbm_err_set(r->err, "%s:%d: %s", r->name, r->line, msg);
}

static bool is_border(const char *s, size_t n)
{
    if (n < 2 || s[0] != '+')
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '+' && s[i] != '-' && s[i] != '=')
            return false;
    return true;
}

/* Splits "| a | b |" into cells; returns the count, or -1 when the row is not closed by '|'
 * (a line cut in the middle of a row). */
static int split_cells(const char *s, size_t n, cell *cells)
{
    if (n < 2 || s[0] != '|')
        return -1;
    if (s[n - 1] != '|')
        return -1;
    int nc = 0;
    const char *start = s + 1;
    for (size_t i = 1; i < n; i++) {
        if (s[i] != '|')
            continue;
        if (nc == MAX_CELLS)
            return MAX_CELLS + 1;
        cells[nc].p = start;
        cells[nc].n = (size_t)(s + i - start);
        nc++;
        start = s + i + 1;
    }
    return nc;
}

/* Column labels are separated by two or more blanks ("NPU ID" is one label). */
static int add_labels(layout *lay, int cellno, const cell *c)
{
    size_t i = 0;
    while (i < c->n) {
        while (i < c->n && isspace((unsigned char)c->p[i]))
            i++;
        if (i >= c->n)
            break;
        size_t start = i;
        while (i < c->n) {
            if (c->p[i] == '\t')
                break;
            if (c->p[i] == ' ' && (i + 1 >= c->n || isspace((unsigned char)c->p[i + 1])))
                break;
            i++;
        }
        if (lay->ncols == MAX_COLS)
            return -1;
        column *col = &lay->cols[lay->ncols++];
        size_t len = i - start;
        if (len >= sizeof col->label)
            len = sizeof col->label - 1;
        memcpy(col->label, c->p + start, len);
        col->label[len] = '\0';
        col->cell = cellno;
        col->off = (int)start;
    }
    return 0;
}

/* Whitespace tokens of a data cell, with "12 / 34", "12/ 34" and "12 /34" joined into one
 * "12/34" token: a used/total pair is one value. */
static int tokenize(const cell *c, token *toks)
{
    int nt = 0;
    size_t i = 0;
    while (i < c->n) {
        while (i < c->n && isspace((unsigned char)c->p[i]))
            i++;
        if (i >= c->n)
            break;
        size_t start = i;
        while (i < c->n && !isspace((unsigned char)c->p[i]))
            i++;
        size_t len = i - start;
        bool join = nt > 0 && (c->p[start] == '/' ||
                               toks[nt - 1].text[strlen(toks[nt - 1].text) - 1] == '/');
        if (join) {
            token *t = &toks[nt - 1];
            size_t have = strlen(t->text);
            if (have + len < sizeof t->text) {
                memcpy(t->text + have, c->p + start, len);
                t->text[have + len] = '\0';
            }
            continue;
        }
        if (nt == MAX_TOKENS)
            return -1;
        if (len >= sizeof toks[nt].text)
            len = sizeof toks[nt].text - 1;
        memcpy(toks[nt].text, c->p + start, len);
        toks[nt].text[len] = '\0';
        toks[nt].off = (int)start;
        nt++;
    }
    return nt;
}

/* The value of each column of a layout for one data row: values[col] (empty = blank). */
typedef struct rowvals {
    char v[MAX_COLS][128];
} rowvals;

static int read_row(reader *r, const layout *lay, const cell *cells, int nc, rowvals *out)
{
    if (nc != lay->ncells)
        return fail(r, "row has %d cells where the header at line %d has %d", nc, lay->line,
                    lay->ncells);
    memset(out, 0, sizeof *out);
    for (int ci = 0; ci < nc; ci++) {
        int first = -1, nlab = 0;
        for (int k = 0; k < lay->ncols; k++)
            if (lay->cols[k].cell == ci) {
                if (first < 0)
                    first = k;
                nlab++;
            }
        token toks[MAX_TOKENS];
        int nt = tokenize(&cells[ci], toks);
        if (nt < 0)
            return fail(r, "too many values in cell %d", ci + 1);
        if (nlab == 0) {
            if (nt > 0)
                return fail(r, "value '%s' in cell %d, which has no column in the header at "
                               "line %d", toks[0].text, ci + 1, lay->line);
            continue;
        }
        for (int t = 0; t < nt; t++) {
            int k = first;
            if (nt == nlab) {
                k = first + t;
            } else {
                /* Counts differ (a blank value, or a value with blanks in it): the column
                 * whose label starts at or before the token owns it. */
                for (int j = first; j < first + nlab; j++)
                    if (lay->cols[j].off <= toks[t].off + 1)
                        k = j;
            }
            char *dst = out->v[k];
            size_t have = strlen(dst);
            snprintf(dst + have, sizeof out->v[k] - have, "%s%s", have ? " " : "",
                     toks[t].text);
        }
    }
    return 0;
}

static int find_col(const layout *lay, const char *label)
{
    for (int k = 0; k < lay->ncols; k++)
        if (strcasecmp(lay->cols[k].label, label) == 0)
            return k;
    return -1;
}

static int find_col_prefix(const layout *lay, const char *prefix)
{
    for (int k = 0; k < lay->ncols; k++)
        if (strncasecmp(lay->cols[k].label, prefix, strlen(prefix)) == 0)
            return k;
    return -1;
}

static bool is_blank_value(const char *v)
{
    return !*v || strcmp(v, "-") == 0 || strcasecmp(v, "NA") == 0 || strcasecmp(v, "N/A") == 0;
}

static int placeholder(reader *r, const char *col, const char *v)
{
    return fail(r, "%s value '%s' is a placeholder: this is the vendor's documentation "
                   "template, not the output of a real npu-smi", col, v);
}

static bool is_placeholder(const char *v)
{
    return strchr(v, 'x') && strspn(v, "xX.") == strlen(v);
}

static int parse_int(reader *r, const char *col, const char *v, int64_t *out, bool required)
{
    if (is_blank_value(v)) {
        if (required)
            return fail(r, "%s is empty", col);
        *out = HBM_UNKNOWN;
        return 0;
    }
    if (is_placeholder(v))
        return placeholder(r, col, v);
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < 0)
        return fail(r, "%s value '%s' is not a whole number", col, v);
    *out = x;
    return 0;
}

static int parse_real(reader *r, const char *col, const char *v, double *out)
{
    if (is_blank_value(v)) {
        *out = NAN;
        return 0;
    }
    if (is_placeholder(v))
        return placeholder(r, col, v);
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x))
        return fail(r, "%s value '%s' is not a number", col, v);
    *out = x;
    return 0;
}

/* "used/total" as one token. */
static int parse_pair(reader *r, const char *col, const char *v, int64_t *used, int64_t *total)
{
    if (is_blank_value(v)) {
        *used = *total = HBM_UNKNOWN;
        return 0;
    }
    const char *slash = strchr(v, '/');
    if (!slash)
        return fail(r, "%s value '%s' is not 'used / total'", col, v);
    char a[64], b[64];
    snprintf(a, sizeof a, "%.*s", (int)(slash - v), v);
    snprintf(b, sizeof b, "%s", slash + 1);
    if (parse_int(r, col, a, used, true) < 0 || parse_int(r, col, b, total, true) < 0)
        return -1;
    if (*used > *total && *total > 0)
        return fail(r, "%s value '%s': used is larger than total", col, v);
    return 0;
}

static const char *val(const rowvals *rv, int k)
{
    return k >= 0 ? rv->v[k] : "";
}

/* Row A of a device: NPU, Name, Health, Power, Temp, Hugepages. */
static int read_device_a(reader *r, const layout *lay, const rowvals *rv, hbm_device *d)
{
    int k_npu = find_col(lay, "NPU") >= 0 ? find_col(lay, "NPU") : find_col(lay, "NPU ID");
    if (parse_int(r, "NPU", val(rv, k_npu), &d->index, true) < 0)
        return -1;
    const char *name = val(rv, find_col(lay, "Name"));
    if (is_placeholder(name) && *name)
        return placeholder(r, "Name", name);
    snprintf(d->name, sizeof d->name, "%s", name);
    const char *health = val(rv, find_col(lay, "Health"));
    snprintf(d->health, sizeof d->health, "%s", is_blank_value(health) ? "" : health);
    d->healthy = !*d->health || strcasecmp(d->health, "OK") == 0;
    if (parse_real(r, "Power(W)", val(rv, find_col_prefix(lay, "Power")), &d->power_watts) < 0 ||
        parse_real(r, "Temp(C)", val(rv, find_col_prefix(lay, "Temp")),
                   &d->temperature_celsius) < 0 ||
        parse_pair(r, "Hugepages-Usage(page)", val(rv, find_col_prefix(lay, "Hugepages")),
                   &d->hugepages_used, &d->hugepages_total) < 0)
        return -1;
    return 0;
}

/* Row B of a device: Chip, Phy-ID or Device (logic id), Bus-Id, AICore, memory columns. */
static int read_device_b(reader *r, const layout *lay, const rowvals *rv, hbm_device *d)
{
    int64_t mem_used, mem_total, hbm_used, hbm_total;
    double util;
    int k_chip = find_col(lay, "Chip");
    if (k_chip >= 0) {
        if (parse_int(r, "Chip", val(rv, k_chip), &d->chip, true) < 0)
            return -1;
    } else {
        d->chip = 0;
    }
    if (parse_int(r, "Phy-ID", val(rv, find_col(lay, "Phy-ID")), &d->phy_id, false) < 0 ||
        parse_int(r, "Device", val(rv, find_col(lay, "Device")), &d->logic_id, false) < 0)
        return -1;
    const char *bus = val(rv, find_col(lay, "Bus-Id"));
    snprintf(d->bus_id, sizeof d->bus_id, "%s", is_blank_value(bus) ? "" : bus);
    int k_util = find_col_prefix(lay, "AICore");
    if (k_util < 0)
        k_util = find_col_prefix(lay, "NPU Util");
    if (parse_real(r, "AICore(%)", val(rv, k_util), &util) < 0 ||
        parse_pair(r, "Memory-Usage(MB)", val(rv, find_col_prefix(lay, "Memory-Usage")),
                   &mem_used, &mem_total) < 0 ||
        parse_pair(r, "HBM-Usage(MB)", val(rv, find_col_prefix(lay, "HBM-Usage")), &hbm_used,
                   &hbm_total) < 0)
        return -1;
    if (!isnan(util)) {
        if (util > 100)
            return fail(r, "AICore(%%) value %.1f is above 100", util);
        d->utilization_ratio = util / 100.0;
    }
    /* The 910 family reports its memory in the HBM column (Memory-Usage is DDR, 0/0 on
     * 910B); the 310 family has no HBM and reports Memory-Usage. */
    if (hbm_total > 0) {
        d->memory_used_bytes = hbm_used * HBM_MIB;
        d->memory_total_bytes = hbm_total * HBM_MIB;
        if (mem_total > 0) {
            d->ddr_used_bytes = mem_used * HBM_MIB;
            d->ddr_total_bytes = mem_total * HBM_MIB;
        }
    } else if (mem_total >= 0) {
        d->memory_used_bytes = mem_used * HBM_MIB;
        d->memory_total_bytes = mem_total * HBM_MIB;
    }
    return 0;
}

static hbm_device *find_device(hbm_obs *obs, int64_t index, int64_t chip)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        if (obs->devs[i].index == index && obs->devs[i].chip == chip)
            return &obs->devs[i];
    return NULL;
}

static void set_partial(hbm_obs *obs, const char *why)
{
    if (obs->partial)
        return;
    obs->partial = true;
    snprintf(obs->partial_why, sizeof obs->partial_why, "%s", why);
}

static int read_process(reader *r, const layout *lay, const rowvals *rv)
{
    int64_t npu, chip = 0, pid, mem, pid_in_ctr = HBM_UNKNOWN;
    int k_npu = find_col(lay, "NPU") >= 0 ? find_col(lay, "NPU") : find_col(lay, "NPU ID");
    if (parse_int(r, "NPU", val(rv, k_npu), &npu, true) < 0)
        return -1;
    int k_chip = find_col(lay, "Chip");
    if (k_chip >= 0 && parse_int(r, "Chip", val(rv, k_chip), &chip, true) < 0)
        return -1;
    if (parse_int(r, "Process id", val(rv, find_col(lay, "Process id")), &pid, true) < 0 ||
        parse_int(r, "Process memory(MB)", val(rv, find_col_prefix(lay, "Process memory")),
                  &mem, false) < 0 ||
        parse_int(r, "Process id in container",
                  val(rv, find_col(lay, "Process id in container")), &pid_in_ctr, false) < 0)
        return -1;
    hbm_device *d = find_device(r->obs, npu, chip);
    if (!d) {
        d = hbm_obs_add_device(r->obs, HBM_VENDOR_ASCEND);
        d->index = npu;
        d->chip = chip;
        set_partial(r->obs, "the process table names a chip the device table does not show");
    }
    hbm_dproc *p = hbm_device_add_proc(d);
    p->pid = pid;
    p->memory_bytes = mem >= 0 ? mem * HBM_MIB : HBM_UNKNOWN;
    p->pid_in_container = pid_in_ctr;
    snprintf(p->name, sizeof p->name, "%s", val(rv, find_col(lay, "Process name")));
    return 0;
}

static bool cell_has(const cell *c, int nc, const char *word)
{
    for (int i = 0; i < nc; i++)
        if (memmem(c[i].p, c[i].n, word, strlen(word)))
            return true;
    return false;
}

static void take_layout(layout *lay, const cell *cells, int nc, int line)
{
    memset(lay, 0, sizeof *lay);
    lay->ncells = nc;
    lay->line = line;
    for (int i = 0; i < nc; i++)
        add_labels(lay, i, &cells[i]);
}

static void read_title(hbm_obs *obs, const cell *c)
{
    const char *v = memmem(c->p, c->n, "Version:", 8);
    if (!v)
        return;
    v += 8;
    while (v < c->p + c->n && *v == ' ')
        v++;
    size_t n = 0;
    while (v + n < c->p + c->n && !isspace((unsigned char)v[n]))
        n++;
    snprintf(obs->driver_version, sizeof obs->driver_version, "%.*s", (int)n, v);
}

enum section { SEC_NONE, SEC_DEV_HEAD2, SEC_DEVICES, SEC_PROCS };

/* Where the reader is in the paste: the header layouts seen and the row it waits for. */
typedef struct info_state {
    layout dev_a, dev_b, procs;
    enum section sec;
    bool table_started, awaiting_b, last_was_row, saw_any;
    size_t border_len; /* the first border's length: a shorter one was cut */
    int cut_border;    /* line of a border the paste ends inside, 0 = none */
    hbm_device *cur;
} info_state;

/* A paste that ends inside a row (chats and issues cut long tables): every device whose rows
 * are complete is kept, the one being read is dropped, and the observation says where and
 * why it stops. */
static void cut_here(reader *r, info_state *st)
{
    hbm_obs *obs = r->obs;
    char why[sizeof obs->partial_why];
    if (st->awaiting_b) {
        hbm_device *d = &obs->devs[--obs->ndevs];
        snprintf(why, sizeof why, "%s:%d: the paste ends inside the rows of NPU %lld, which "
                 "is left out", r->name, r->line, (long long)d->index);
        free(d->procs);
    } else {
        snprintf(why, sizeof why, "%s:%d: the paste ends inside a row of the %s table, "
                 "which is left out", r->name, r->line,
                 st->sec == SEC_PROCS ? "process" : "device");
    }
    st->awaiting_b = false;
    st->last_was_row = false;
    obs->partial = false; /* the cut says more than an earlier note */
    set_partial(obs, why);
}

/* The last line of a paste is cut when it is not closed by '|' or has fewer cells than its
 * header: a cut just after an inner '|' still ends with one. */
static bool row_is_cut(const info_state *st, const cell *cells, int nc, bool last_line)
{
    if (nc < 0)
        return true;
    if (!last_line || (st->sec != SEC_DEVICES && st->sec != SEC_PROCS))
        return false;
    const layout *lay = st->sec == SEC_PROCS ? &st->procs
                        : st->awaiting_b     ? &st->dev_b
                                             : &st->dev_a;
    if (nc >= lay->ncells)
        return false;
    /* "| No running processes found in NPU 3 |" is one whole cell. */
    return !(st->sec == SEC_PROCS && nc == 1 &&
             memmem(cells[0].p, cells[0].n, "No running", 10));
}

/* "No running processes found in NPU N": that NPU's process list is known and empty.
 * Returns false when the cell says something else. */
static bool read_no_processes(hbm_obs *obs, const cell *c)
{
    char buf[160];
    snprintf(buf, sizeof buf, "%.*s", (int)c->n, c->p);
    long long npu;
    if (sscanf(hbm_trim(buf), "No running processes found in NPU %lld", &npu) != 1)
        return false;
    bool any = false;
    for (size_t i = 0; i < obs->ndevs; i++)
        if (obs->devs[i].index == npu) {
            obs->devs[i].procs_known = true;
            any = true;
        }
    if (!any) {
        hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
        d->index = npu;
        d->chip = 0;
        d->procs_known = true;
        set_partial(obs, "the process table names an NPU the device table does not show");
    }
    return true;
}

/* A header row: takes its layout and returns 1; 0 when the row is not a header. */
static int read_header(reader *r, info_state *st, const cell *cells, int nc)
{
    if (cell_has(cells, nc, "Process id")) {
        take_layout(&st->procs, cells, nc, r->line);
        if (find_col(&st->procs, "NPU") < 0 && find_col(&st->procs, "NPU ID") < 0)
            return fail(r, "process header without an NPU column");
        st->sec = SEC_PROCS;
        st->saw_any = true;
        return 1;
    }
    if (st->sec != SEC_PROCS && cell_has(cells, nc, "Name") && cell_has(cells, nc, "NPU") &&
        cell_has(cells, nc, "Health")) {
        take_layout(&st->dev_a, cells, nc, r->line);
        st->sec = SEC_DEV_HEAD2;
        return 1;
    }
    if (st->sec == SEC_DEV_HEAD2) {
        take_layout(&st->dev_b, cells, nc, r->line);
        if (find_col(&st->dev_b, "Bus-Id") < 0 &&
            find_col_prefix(&st->dev_b, "Memory-Usage") < 0 &&
            find_col_prefix(&st->dev_b, "HBM-Usage") < 0)
            return fail(r, "second header row names no Bus-Id or memory column");
        st->sec = SEC_DEVICES;
        st->saw_any = true;
        return 1;
    }
    return 0;
}

/* One table row split into cells: the title, a header, a device's row or a process. */
static int read_table_row(reader *r, info_state *st, const cell *cells, int nc)
{
    hbm_obs *obs = r->obs;
    if (nc == 1 && memmem(cells[0].p, cells[0].n, "npu-smi", 7)) {
        read_title(obs, &cells[0]);
        return 0;
    }
    int h = read_header(r, st, cells, nc);
    if (h != 0)
        return h < 0 ? -1 : 0;
    if (st->sec == SEC_NONE)
        return fail(r, "table row before any header row (NPU / Name / Health or "
                       "Process id)");
    rowvals rv;
    if (st->sec == SEC_DEVICES && !st->awaiting_b) {
        if (read_row(r, &st->dev_a, cells, nc, &rv) < 0)
            return -1;
        st->cur = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
        st->awaiting_b = true;
        return read_device_a(r, &st->dev_a, &rv, st->cur);
    }
    if (st->sec == SEC_DEVICES) {
        st->awaiting_b = false;
        if (read_row(r, &st->dev_b, cells, nc, &rv) < 0)
            return -1;
        return read_device_b(r, &st->dev_b, &rv, st->cur);
    }
    if (nc == 1 && read_no_processes(obs, &cells[0]))
        return 0;
    if (read_row(r, &st->procs, cells, nc, &rv) < 0)
        return -1;
    return read_process(r, &st->procs, &rv);
}

/* What the end of the input says about the paste. */
static int finish_info(reader *r, info_state *st)
{
    hbm_obs *obs = r->obs;
    if (st->awaiting_b)
        cut_here(r, st);
    if (!st->saw_any) {
        if (r->line == 0)
            r->line = 1;
        return fail(r, "no npu-smi table found (expected a header row naming NPU, Name and "
                       "Health, or a process header)");
    }
    if (obs->ndevs == 0)
        return fail(r, "the paste ends before any device's rows are complete");
    if (st->cut_border && st->procs.ncols == 0) {
        /* The devices are complete, but what followed the border (the process table) is
         * not there: who holds the memory is unknown, not "nobody". */
        char why[sizeof obs->partial_why];
        snprintf(why, sizeof why, "%s:%d: the paste ends inside a border line; the process "
                 "table after it is missing", r->name, st->cut_border);
        set_partial(obs, why);
    }
    if (st->dev_a.ncols == 0)
        set_partial(obs, "only the process table was pasted; device memory is unknown");
    else if (st->last_was_row)
        set_partial(obs, "the table has no closing border: the paste ends early");

    for (size_t i = 0; i < obs->ndevs; i++)
        if (obs->devs[i].nprocs >= HBM_NPUSMI_MAX_PROCS_PER_CHIP)
            obs->devs[i].procs_truncated = true;
    return 0;
}

/* A line outside the table's rows: before the table it is skipped (up to a bound); after
 * it, the table is over. Returns 1 to stop reading, 0 to go on. */
static int read_outside_line(reader *r, info_state *st, const char *s, const char *end)
{
    if (!st->table_started) {
        if (r->line > MAX_PREAMBLE_LINES)
            return fail(r, "no npu-smi table in the first %d lines", MAX_PREAMBLE_LINES);
        return 0;
    }
    /* Text after the table (a shell prompt, a comment): the table is over. Binary data
     * there means the file is not a paste at all. */
    if (memchr(s, '\0', (size_t)(end - s)))
        return fail(r, "binary data (NUL byte) after the table: not npu-smi text");
    if (st->awaiting_b)
        cut_here(r, st);
    return 1;
}

int hbm_npusmi_parse_info(hbm_obs *obs, const char *text, size_t len, const char *name,
                          hbm_err *err)
{
    reader r = {.obs = obs, .name = name, .err = err, .line = 0};
    info_state st = {0};
    const char *p = text, *end = text + len;

    size_t blank = 0;
    while (blank < len && strchr(" \t\r\n", text[blank]) && text[blank])
        blank++;
    if (blank == len) {
        r.line = 1;
        return fail(&r, "empty input: expected the text of 'npu-smi info'");
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        r.line++;
        if (memchr(p, '\0', (size_t)(eol - p)))
            return fail(&r, "binary data (NUL byte): not npu-smi text");
        const char *s = p;
        while (s < eol && (*s == ' ' || *s == '\t'))
            s++;
        size_t n = (size_t)(eol - s);
        while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        p = nl ? nl + 1 : end;

        if (n == 0)
            continue;
        st.cut_border = 0;
        if (is_border(s, n)) {
            st.table_started = true;
            st.last_was_row = false;
            if (!st.border_len)
                st.border_len = n;
            if (p == end && (n < st.border_len || s[n - 1] != '+'))
                st.cut_border = r.line;
            if (st.awaiting_b)
                return fail(&r, "border after the first row of NPU %lld: its second row "
                                "is missing", (long long)st.cur->index);
            continue;
        }
        if (n >= 3 && strncmp(s, "...", 3) == 0 && st.table_started) {
            set_partial(obs, "rows were elided ('...') in the pasted table");
            continue;
        }
        if (s[0] != '|') {
            int stop = read_outside_line(&r, &st, s, end);
            if (stop < 0)
                return -1;
            if (stop)
                break;
            continue;
        }
        cell cells[MAX_CELLS];
        int nc = split_cells(s, n, cells);
        if (row_is_cut(&st, cells, nc, p == end)) {
            cut_here(&r, &st);
            break;
        }
        if (nc > MAX_CELLS)
            return fail(&r, "row has more than %d cells: not an npu-smi layout", MAX_CELLS);
        st.table_started = true;
        st.last_was_row = true;
        if (read_table_row(&r, &st, cells, nc) < 0)
            return -1;
    }
    return finish_info(&r, &st);
}
