/* Live cross-checks: what the host shows now for each finding. The log says what went
 * wrong then; these say whether it still holds (who holds the memory, whether the port in
 * a refused connection has a listener and where the server really listens, whether the
 * visible devices match the tensor-parallel size). Host facts answer the port, server and
 * holder checks even on a machine without an accelerator backend. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "explain_int.h"
#include "hbm/util.h"

#define MAX_SERVERS 16
#define MAX_PORTS 8
#define MAX_HOLDER_LINES 12

typedef struct server {
    int pid;
    char word[32];    /* the server word its command line holds: vllm, sglang, ... */
    char comm[32];
    char *cmdline;    /* owned copy */
    char *visible;    /* owned copy of its visible-devices variable, NULL unknown */
    int ports[MAX_PORTS];
    size_t nports;
    int port_arg;     /* --port N on its command line, -1 none */
} server;

typedef struct live_ctx {
    const hbm_catalog *cat;
    const hbm_obs *obs;
    const char *root; /* NULL: obs is a capture, so /proc now says nothing about it */
    server servers[MAX_SERVERS];
    size_t nservers;
    bool servers_done;
} live_ctx;

typedef struct out {
    json_t *live;
    char **lines;
    size_t n, cap;
} out;

static void say(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = hbm_xmalloc(n > 0 ? (size_t)n + 1 : 1);
    va_start(ap, fmt);
    vsnprintf(s, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
    va_end(ap);
    hbm_grow((void **)&o->lines, &o->cap, o->n, sizeof *o->lines);
    o->lines[o->n++] = s;
}

static const char *ci_find(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0)
            return p;
    return NULL;
}

static int port_arg(const char *cmdline)
{
    for (const char *p = strstr(cmdline, "--port"); p; p = strstr(p + 1, "--port")) {
        const char *q = p + 6;
        if (*q != ' ' && *q != '=')
            continue;
        q++;
        if (isdigit((unsigned char)*q))
            return atoi(q);
    }
    return -1;
}

static server *add_server(live_ctx *lc, const hbm_hproc *p)
{
    for (size_t i = 0; i < lc->nservers; i++)
        if (lc->servers[i].pid == p->pid)
            return &lc->servers[i];
    const char *const *words;
    size_t nwords = hbm_explain_catalog_servers(lc->cat, &words);
    const char *word = NULL;
    for (size_t i = 0; i < nwords && !word; i++)
        if ((p->cmdline && ci_find(p->cmdline, words[i])) || ci_find(p->comm, words[i]))
            word = words[i];
    if (!word || lc->nservers == MAX_SERVERS)
        return NULL;
    server *s = &lc->servers[lc->nservers++];
    memset(s, 0, sizeof *s);
    s->pid = p->pid;
    snprintf(s->word, sizeof s->word, "%s", word);
    snprintf(s->comm, sizeof s->comm, "%s", p->comm);
    s->cmdline = hbm_xstrdup(p->cmdline ? p->cmdline : "");
    s->visible = p->visible_devices ? hbm_xstrdup(p->visible_devices) : NULL;
    s->port_arg = port_arg(s->cmdline);
    return s;
}

/* Inference servers now: processes whose command line names a server, and the owners of
 * listening sockets that do. */
static void find_servers(live_ctx *lc)
{
    if (lc->servers_done || !lc->obs->has_host)
        return;
    lc->servers_done = true;
    const hbm_host *h = &lc->obs->host;
    for (size_t i = 0; i < h->nprocs; i++)
        add_server(lc, &h->procs[i]);
    for (size_t i = 0; i < h->nlisteners; i++) {
        const hbm_listener *l = &h->listeners[i];
        if (l->pid <= 0)
            continue;
        server *s = NULL;
        const hbm_hproc *known = hbm_host_find(h, l->pid);
        if (known) {
            s = add_server(lc, known);
        } else if (lc->root) {
            hbm_hproc p;
            memset(&p, 0, sizeof p);
            if (hbm_host_read_proc(lc->root, l->pid, &p, NULL) == 0)
                s = add_server(lc, &p);
            hbm_hproc_free(&p);
        }
        if (!s)
            continue;
        bool dup = false;
        for (size_t k = 0; k < s->nports; k++)
            dup |= s->ports[k] == l->port;
        if (!dup && s->nports < MAX_PORTS)
            s->ports[s->nports++] = l->port;
    }
}

static void free_servers(live_ctx *lc)
{
    for (size_t i = 0; i < lc->nservers; i++) {
        free(lc->servers[i].cmdline);
        free(lc->servers[i].visible);
    }
}

static const char *listener_name(live_ctx *lc, int pid, char *buf, size_t n)
{
    const hbm_hproc *p = pid > 0 ? hbm_host_find(&lc->obs->host, pid) : NULL;
    if (p) {
        snprintf(buf, n, "%s", p->comm);
        return buf;
    }
    hbm_hproc q;
    memset(&q, 0, sizeof q);
    if (pid > 0 && lc->root && hbm_host_read_proc(lc->root, pid, &q, NULL) == 0)
        snprintf(buf, n, "%s", q.comm);
    else
        snprintf(buf, n, "?");
    hbm_hproc_free(&q);
    return buf;
}

static void describe_servers(live_ctx *lc, out *o, int log_port)
{
    find_servers(lc);
    json_t *arr = json_array();
    const char *const *words;
    size_t nwords = hbm_explain_catalog_servers(lc->cat, &words);
    if (lc->nservers == 0) {
        char list[200] = "";
        for (size_t i = 0; i < nwords && i < 6; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     words[i]);
        say(o, "no inference server process (%s) runs on this host now", list);
    }
    for (size_t i = 0; i < lc->nservers; i++) {
        server *s = &lc->servers[i];
        json_t *ports = json_array();
        char plist[128] = "";
        for (size_t k = 0; k < s->nports; k++) {
            json_array_append_new(ports, json_integer(s->ports[k]));
            snprintf(plist + strlen(plist), sizeof plist - strlen(plist), "%s%d", k ? ", " : "",
                     s->ports[k]);
        }
        json_array_append_new(arr, json_pack("{s:i,s:s,s:s,s:o,s:o}", "pid", s->pid, "name",
                                             s->word, "cmdline", s->cmdline, "ports", ports,
                                             "port_arg",
                                             s->port_arg > 0 ? json_integer(s->port_arg)
                                                             : json_null()));
        if (s->nports > 0)
            say(o, "a %s process (pid %d) listens on %s", s->word, s->pid, plist);
        else if (s->port_arg > 0)
            say(o, "a %s process (pid %d) was started with --port %d but does not listen "
                   "yet: still loading, or its engine failed",
                s->word, s->pid, s->port_arg);
        if (log_port > 0 && s->port_arg > 0 && s->port_arg != log_port)
            say(o, "the log's port %d is not the server's --port %d: check the URL or port "
                   "mapping",
                log_port, s->port_arg);
        else if (log_port > 0 && s->port_arg <= 0 && s->nports > 0) {
            bool on = false;
            for (size_t k = 0; k < s->nports; k++)
                on |= s->ports[k] == log_port;
            if (!on)
                say(o, "the log's port %d is not one the %s process listens on (%s): check "
                       "the URL or port mapping",
                    log_port, s->word, plist);
        }
    }
    json_object_set_new(o->live, "servers", arr);
}

static int finding_int(const hbm_explain_report *rep, const hbm_explain_finding *f,
                       const char *num, const char *fact)
{
    const hbm_explain_num *n = hbm_explain_finding_num(f, num);
    if (n && !isnan(n->value) && n->value > 0 && n->value < 1e9)
        return (int)n->value;
    const hbm_explain_fact *x = fact ? hbm_explain_report_fact(rep, fact) : NULL;
    if (x && isdigit((unsigned char)x->text[0]))
        return atoi(x->text);
    return -1;
}

static void check_port(live_ctx *lc, const hbm_explain_report *rep,
                       const hbm_explain_finding *f, out *o)
{
    int port = finding_int(rep, f, "port", "port");
    if (!lc->obs->has_host) {
        say(o, "port check: this observation has no host facts");
        return;
    }
    if (port > 0) {
        json_t *ls = json_array();
        const hbm_host *h = &lc->obs->host;
        for (size_t i = 0; i < h->nlisteners; i++) {
            const hbm_listener *l = &h->listeners[i];
            if (l->port != port)
                continue;
            char name[64];
            listener_name(lc, l->pid, name, sizeof name);
            json_array_append_new(ls, json_pack("{s:s,s:o,s:s}", "addr", l->addr, "pid",
                                                l->pid > 0 ? json_integer(l->pid) : json_null(),
                                                "name", name));
            if (l->pid > 0)
                say(o, "port %d: listening on %s (pid %d, %s)", port, l->addr, l->pid, name);
            else
                say(o, "port %d: listening on %s (owner not visible from here)", port,
                    l->addr);
        }
        bool listening = json_array_size(ls) > 0;
        if (!listening)
            say(o, "port %d: nothing listens on this host now", port);
        json_object_set_new(o->live, "port",
                            json_pack("{s:i,s:b,s:o}", "port", port, "listening", listening,
                                      "listeners", ls));
    }
    describe_servers(lc, o, port);
}

/* A holder the log itself shows as the server's own process: not a stranger to end. */
static const char *own_mark(const hbm_explain_report *rep, long pid, char *buf, size_t n)
{
    const hbm_explain_proc *pr = hbm_explain_report_proc(rep, pid);
    if (!pr)
        return "";
    snprintf(buf, n, "; the log's own %s (line %llu), not a foreign holder", pr->name,
             (unsigned long long)pr->line);
    return buf;
}

static void check_holders(live_ctx *lc, const hbm_explain_report *rep, out *o)
{
    char mark[128];
    const hbm_obs *obs = lc->obs;
    json_t *holders = json_array();
    size_t lines = 0;
    char a[32], b[32];
    if (obs->ndevs > 0) {
        for (size_t i = 0; i < obs->ndevs; i++) {
            const hbm_device *d = &obs->devs[i];
            if (d->nprocs == 0 && d->verdict == HBM_VERDICT_FREE)
                continue;
            if (lines++ < MAX_HOLDER_LINES)
                say(o, "device %lld (%s): %s of %s used, %s%s%s", (long long)hbm_device_user_id(d),
                    d->name[0] ? d->name : "?", hbm_fmt_size(a, sizeof a, d->memory_used_bytes),
                    hbm_fmt_size(b, sizeof b, d->memory_total_bytes),
                    hbm_verdict_name(d->verdict), d->reason[0] ? ": " : "", d->reason);
            for (size_t k = 0; k < d->nprocs; k++) {
                const hbm_dproc *p = &d->procs[k];
                const hbm_explain_proc *own = hbm_explain_report_proc(rep, (long)p->pid);
                json_array_append_new(
                    holders, json_pack("{s:I,s:I,s:s,s:o,s:s,s:o}", "device",
                                       (json_int_t)hbm_device_user_id(d), "pid",
                                       (json_int_t)p->pid, "name", p->name,
                                       "memory_bytes",
                                       p->memory_bytes >= 0 ? json_integer(p->memory_bytes)
                                                            : json_null(),
                                       "state", hbm_pid_state_name(p->state), "log_process",
                                       own ? json_string(own->name) : json_null()));
                if (lines++ < MAX_HOLDER_LINES)
                    say(o, "  pid %lld %s holds %s (%s%s)", (long long)p->pid,
                        p->name[0] ? p->name : "?", hbm_fmt_size(a, sizeof a, p->memory_bytes),
                        hbm_pid_state_name(p->state), own_mark(rep, (long)p->pid, mark, sizeof mark));
            }
        }
        if (lines == 0)
            say(o, "every device (%zu) is free now: nothing holds device memory", obs->ndevs);
    } else if (obs->has_host) {
        const hbm_host *h = &obs->host;
        for (size_t i = 0; i < h->nprocs; i++) {
            const hbm_hproc *p = &h->procs[i];
            if (p->ndev_paths == 0)
                continue;
            const hbm_explain_proc *own = hbm_explain_report_proc(rep, p->pid);
            json_array_append_new(holders,
                                  json_pack("{s:o,s:i,s:s,s:o,s:s,s:o}", "device", json_null(),
                                            "pid", p->pid, "name", p->comm, "memory_bytes",
                                            json_null(), "state", (char[2]){p->state, 0},
                                            "log_process",
                                            own ? json_string(own->name) : json_null()));
            if (lines++ < MAX_HOLDER_LINES)
                say(o, "pid %d (%s, state %c) holds %s%s%s", p->pid, p->comm, p->state,
                    p->dev_paths[0], p->ndev_paths > 1 ? " and more device files" : "",
                    own_mark(rep, p->pid, mark, sizeof mark));
        }
        if (lines == 0)
            say(o, "no process holds an accelerator device file on this host now");
        else
            say(o, "(no device backend here: memory per process is unknown)");
    } else {
        say(o, "holders: this observation has neither devices nor host facts");
    }
    if (lines > MAX_HOLDER_LINES)
        say(o, "... %zu more lines (see hbmctl status)", lines - MAX_HOLDER_LINES);
    json_object_set_new(o->live, "holders", holders);
}

static size_t count_ids(const char *list, int *ids, size_t max)
{
    size_t n = 0;
    const char *p = list;
    while (*p) {
        while (*p && !isdigit((unsigned char)*p))
            p++;
        if (!*p)
            break;
        if (n < max)
            ids[n] = atoi(p);
        n++;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return n;
}

static void check_visible(live_ctx *lc, const hbm_explain_report *rep,
                          const hbm_explain_finding *f, out *o)
{
    int tp = finding_int(rep, f, "tp", "tp");
    const char *visible = NULL, *from = NULL;
    const hbm_explain_num *vn = hbm_explain_finding_num(f, "visible");
    const hbm_explain_fact *vf = hbm_explain_report_fact(rep, "visible");
    if (vn) {
        visible = vn->text;
        from = "the failing line";
    } else if (vf) {
        visible = vf->text;
        from = "the log";
    } else {
        find_servers(lc);
        for (size_t i = 0; i < lc->nservers && !visible; i++)
            if (lc->servers[i].visible) {
                visible = lc->servers[i].visible;
                from = "a running server's environment";
            }
    }
    int ids[64];
    size_t nvis = visible ? count_ids(visible, ids, 64) : 0;
    int count = finding_int(rep, f, "visible_count", NULL);
    json_t *j = json_object();
    json_object_set_new(j, "tp", tp > 0 ? json_integer(tp) : json_null());
    json_object_set_new(j, "visible", visible ? json_string(visible) : json_null());
    json_object_set_new(j, "visible_count",
                        visible ? json_integer((json_int_t)nvis)
                                : count > 0 ? json_integer(count) : json_null());
    json_object_set_new(j, "devices_here",
                        lc->obs->ndevs ? json_integer((json_int_t)lc->obs->ndevs) : json_null());
    if (tp > 0)
        say(o, "tensor-parallel size in the log: %d", tp);
    if (visible)
        say(o, "visible devices from %s: %s (%zu device%s)", from, visible, nvis,
            nvis == 1 ? "" : "s");
    int have = visible ? (int)nvis : count;
    if (tp > 0 && have > 0) {
        json_object_set_new(j, "match", json_boolean(tp <= have));
        if (tp > have)
            say(o, "tensor-parallel size %d needs %d visible devices, only %d are visible", tp,
                tp, have);
        else
            say(o, "tensor-parallel size %d fits the %d visible device%s", tp, have,
                have == 1 ? "" : "s");
    } else {
        json_object_set_new(j, "match", json_null());
    }
    if (lc->obs->ndevs > 0) {
        say(o, "this host shows %zu device%s", lc->obs->ndevs, lc->obs->ndevs == 1 ? "" : "s");
        json_t *missing = json_array(), *busy = json_array();
        for (size_t i = 0; i < nvis && i < 64; i++) {
            hbm_device *d = hbm_obs_find_device((hbm_obs *)lc->obs, ids[i]);
            if (!d) {
                json_array_append_new(missing, json_integer(ids[i]));
                say(o, "visible device %d does not exist here", ids[i]);
            } else if (d->verdict != HBM_VERDICT_FREE && d->verdict != HBM_VERDICT_NONE) {
                json_array_append_new(busy, json_integer(ids[i]));
                say(o, "visible device %d is %s: %s", ids[i], hbm_verdict_name(d->verdict),
                    d->reason);
            }
        }
        json_object_set_new(j, "missing", missing);
        json_object_set_new(j, "not_free", busy);
    } else if (!visible && tp <= 0) {
        say(o, "visible devices: neither the log nor this host says which devices were used");
    }
    json_object_set_new(o->live, "visible_devices", j);
}

static void check_health(live_ctx *lc, out *o)
{
    json_t *bad = json_array();
    size_t n = 0;
    for (size_t i = 0; i < lc->obs->ndevs; i++) {
        const hbm_device *d = &lc->obs->devs[i];
        if (d->healthy || !d->health[0])
            continue;
        n++;
        json_array_append_new(bad, json_pack("{s:I,s:s}", "device",
                                             (json_int_t)hbm_device_user_id(d), "health",
                                             d->health));
        say(o, "device %lld health is %s now", (long long)hbm_device_user_id(d), d->health);
    }
    if (lc->obs->ndevs == 0)
        say(o, "device health: no device backend here");
    else if (n == 0)
        say(o, "all %zu devices report healthy now", lc->obs->ndevs);
    json_object_set_new(o->live, "unhealthy", bad);
}

/* NCCL's segments of crashed runs stay in /dev/shm until removed; with enough of them the
 * next run's segment does not fit and NCCL says "unhandled system error". */
static void check_dev_shm(live_ctx *lc, out *o)
{
    const hbm_host *h = &lc->obs->host;
    if (!lc->obs->has_host) {
        say(o, "/dev/shm: no host facts here");
        return;
    }
    json_t *stale = json_array();
    size_t nccl = 0, nstale = 0;
    uint64_t stale_bytes = 0;
    for (size_t i = 0; i < h->nposix; i++) {
        const hbm_posix_shm *s = &h->posix[i];
        const char *base = s->path ? strrchr(s->path, '/') : NULL;
        if (!base || strncmp(base + 1, "nccl-", 5) != 0)
            continue;
        nccl++;
        if (s->nholders > 0 || !h->sees_host_pids)
            continue;
        nstale++;
        stale_bytes += s->size;
        json_array_append_new(stale, json_pack("{s:s,s:I}", "path", s->path, "size_bytes",
                                               (json_int_t)s->size));
    }
    char used[32], total[32], sz[32];
    json_t *j = json_pack("{s:o,s:o,s:I,s:o}", "used_bytes",
                          h->devshm_used_bytes >= 0 ? json_integer(h->devshm_used_bytes)
                                                    : json_null(),
                          "total_bytes",
                          h->devshm_total_bytes > 0 ? json_integer(h->devshm_total_bytes)
                                                    : json_null(),
                          "nccl_objects", (json_int_t)nccl, "stale_nccl", stale);
    json_object_set_new(o->live, "dev_shm", j);
    if (h->devshm_total_bytes > 0 && h->devshm_used_bytes >= 0)
        say(o, "/dev/shm holds %s of %s now (%.0f%%)",
            hbm_fmt_size(used, sizeof used, h->devshm_used_bytes),
            hbm_fmt_size(total, sizeof total, h->devshm_total_bytes),
            100.0 * (double)h->devshm_used_bytes / (double)h->devshm_total_bytes);
    else
        say(o, "/dev/shm is not mounted here");
    if (nstale)
        say(o, "%zu nccl-* object%s (%s) in /dev/shm belong%s to no process: leftovers of "
               "crashed runs; hbmctl clean --apply removes them", nstale, nstale == 1 ? "" : "s",
            hbm_fmt_size(sz, sizeof sz, (int64_t)stale_bytes), nstale == 1 ? "s" : "");
    else if (nccl)
        say(o, "%zu nccl-* object%s in /dev/shm, all in use%s", nccl, nccl == 1 ? "" : "s",
            h->sees_host_pids ? "" : " or owned outside this PID namespace");
    else
        say(o, "no nccl-* object in /dev/shm now");
}

#define KMSG_KEEP 3
#define KMSG_MAX_BYTES (16u << 20) /* the ring is a few MiB; a file given in its place is cut */

typedef struct oom_kill {
    int pid;
    char name[64];
} oom_kill;

/* One kernel log record: "prio,seq,usec,flags;text" from /dev/kmsg, or a dmesg line. */
static void kmsg_line(const char *line, oom_kill *kills, size_t *n)
{
    const char *at = strstr(line, "Killed process ");
    if (!at || (!strstr(line, "Out of memory") && !strstr(line, "oom")))
        return;
    oom_kill k = {.pid = atoi(at + 15)};
    const char *open = strchr(at, '('), *close = open ? strchr(open, ')') : NULL;
    if (open && close)
        snprintf(k.name, sizeof k.name, "%.*s", (int)(close - open - 1), open + 1);
    if (*n == KMSG_KEEP)
        memmove(kills, kills + 1, (KMSG_KEEP - 1) * sizeof *kills);
    kills[*n == KMSG_KEEP ? KMSG_KEEP - 1 : (*n)++] = k;
}

/* The OOM killer's records in the kernel log, read without blocking (/dev/kmsg returns
 * one record per read and EAGAIN at the end; a regular file in its place, as tests give
 * under the root prefix, is read in chunks). */
static int read_kmsg(const char *path, oom_kill *kills, size_t *n, size_t *total)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[8192 + 1], carry[1024];
    size_t clen = 0, bytes = 0;
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf - 1);
        if (got < 0 && (errno == EINTR || errno == EPIPE))
            continue; /* EPIPE: records overwritten while reading */
        if (got <= 0 || (bytes += (size_t)got) > KMSG_MAX_BYTES)
            break;
        buf[got] = '\0';
        char *p = buf;
        for (char *nl; (nl = strchr(p, '\n')); p = nl + 1) {
            *nl = '\0';
            if (clen) { /* a line cut by the previous chunk */
                snprintf(carry + clen, sizeof carry - clen, "%s", p);
                carry[sizeof carry - 1] = '\0';
                kmsg_line(carry, kills, n);
                clen = 0;
            } else {
                kmsg_line(p, kills, n);
            }
            (*total)++;
        }
        size_t rest = strlen(p);
        if (rest) { /* kept, bounded, until its newline comes */
            size_t room = sizeof carry - 1 - clen, take = rest < room ? rest : room;
            memcpy(carry + clen, p, take);
            clen += take;
            carry[clen] = '\0';
        }
    }
    if (clen)
        kmsg_line(carry, kills, n);
    close(fd);
    return 0;
}

static void check_kernel_log(live_ctx *lc, out *o)
{
    if (!lc->root) {
        say(o, "kernel log: not read (the observation is a snapshot, not this host)");
        return;
    }
    char *path = hbm_xasprintf("%s/dev/kmsg", lc->root);
    oom_kill kills[KMSG_KEEP];
    size_t n = 0, total = 0;
    int rc = read_kmsg(path, kills, &n, &total);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:i,s:s}", "pid", kills[i].pid, "name", kills[i].name));
    json_object_set_new(o->live, "kernel_oom_kills", rc < 0 ? json_null() : a);
    if (rc < 0) {
        json_decref(a);
        say(o, "kernel log: cannot read %s (%s): run as root, or read dmesg", path, strerror(-rc));
    } else if (n == 0) {
        say(o, "the kernel log (%zu records) shows no OOM kill: the signal came from elsewhere "
               "(a supervisor, a container limit seen by the runtime, or a user)", total);
    } else {
        for (size_t i = 0; i < n; i++)
            say(o, "the kernel's OOM killer killed pid %d (%s)", kills[i].pid, kills[i].name);
        say(o, "host memory ran out: lower the server's host memory (swap space, CPU offload, "
               "worker count) or give it more");
    }
    free(path);
}

void hbm_explain_live_apply(hbm_explain_report *rep, const hbm_catalog *cat,
                            const hbm_obs *obs, const char *root, const char *source)
{
    live_ctx lc = {.cat = cat, .obs = obs, .root = root};
    for (size_t i = 0; i < rep->nfindings; i++) {
        hbm_explain_finding *f = &rep->findings[i];
        if (f->sig->nchecks == 0)
            continue;
        out o = {.live = json_pack("{s:s}", "source", source)};
        for (size_t k = 0; k < f->sig->nchecks; k++) {
            const char *c = f->sig->checks[k];
            if (strcmp(c, "port") == 0)
                check_port(&lc, rep, f, &o);
            else if (strcmp(c, "servers") == 0 && !json_object_get(o.live, "servers"))
                describe_servers(&lc, &o, -1);
            else if (strcmp(c, "holders") == 0)
                check_holders(&lc, rep, &o);
            else if (strcmp(c, "visible_devices") == 0)
                check_visible(&lc, rep, f, &o);
            else if (strcmp(c, "health") == 0)
                check_health(&lc, &o);
            else if (strcmp(c, "dev_shm") == 0)
                check_dev_shm(&lc, &o);
            else if (strcmp(c, "kernel_log") == 0)
                check_kernel_log(&lc, &o);
        }
        json_object_set_new(o.live, "notes", json_array());
        for (size_t k = 0; k < o.n; k++)
            json_array_append_new(json_object_get(o.live, "notes"), json_string(o.lines[k]));
        json_decref(f->live);
        f->live = o.live;
        for (size_t k = 0; k < f->nlive_lines; k++)
            free(f->live_lines[k]);
        free(f->live_lines);
        f->live_lines = o.lines;
        f->nlive_lines = o.n;
    }
    free_servers(&lc);
}
