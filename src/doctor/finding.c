/* Building one finding, and the process facts findings quote: shared by the device, host
 * and server rules. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "doctor/doctor_int.h"
#include "hbm/util.h"

json_t *doc_jint(int64_t v)
{
    return v < 0 ? json_null() : json_integer((json_int_t)v);
}

hbm_finding *doc_add(hbm_findings *f, enum doc_rule r, hbm_severity sev, int64_t device,
                     const char *fmt, ...)
{
    hbm_grow((void **)&f->items, &f->cap, f->n, sizeof *f->items);
    hbm_finding *x = &f->items[f->n++];
    memset(x, 0, sizeof *x);
    x->rule = (int)r;
    x->severity = sev;
    x->device = device;
    x->evidence = json_object();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->summary, sizeof x->summary, fmt, ap);
    va_end(ap);
    return x;
}

void doc_kill_action(hbm_finding *x, const hbm_hproc *hp)
{
    x->action.kind = HBM_ACT_KILL;
    x->action.pid = hp->pid;
    x->action.starttime = hp->starttime;
    snprintf(x->action.text, sizeof x->action.text,
             "SIGTERM pid %d (%s), SIGKILL after the grace period", hp->pid, hp->comm);
}

void doc_remedy(hbm_finding *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->remedy, sizeof x->remedy, fmt, ap);
    va_end(ap);
}

const hbm_hproc *doc_find_proc(const hbm_obs *obs, int pid)
{
    if (!obs->has_host)
        return NULL;
    for (size_t i = 0; i < obs->host.nprocs; i++)
        if (obs->host.procs[i].pid == pid)
            return &obs->host.procs[i];
    return NULL;
}

double doc_age(const hbm_obs *obs, const hbm_hproc *p, double now)
{
    if (!p || obs->host.clk_tck <= 0 || obs->host.boot_time <= 0 || now <= 0)
        return -1;
    double start = obs->host.boot_time + (double)p->starttime / (double)obs->host.clk_tck;
    return now > start ? now - start : 0;
}
