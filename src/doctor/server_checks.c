/* Findings about running inference servers: the devices their visible-device variable
 * names (missing, busy with another process, not matching the parallel size) and the
 * port they were told to serve on. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor_int.h"
#include "hbm/util.h"
#include "hbm/inference.h"
#include "hbm/verdict.h"

static const hbm_device *find_dev(const hbm_obs *obs, int64_t uid)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        if (hbm_device_user_id(&obs->devs[i]) == uid)
            return &obs->devs[i];
    return NULL;
}

static void visible_findings(const hbm_obs *obs, const hbm_hproc *s, hbm_findings *out)
{
    const char *v = s->visible_devices;
    long ids[64];
    size_t n = 0;
    /* The runtimes stop at the first token that is not a number. */
    for (const char *p = v; *p && n < 64;) {
        while (*p == ' ')
            p++;
        if (!isdigit((unsigned char)*p))
            break;
        char *end;
        ids[n++] = strtol(p, &end, 10);
        p = end;
        while (*p == ' ')
            p++;
        if (*p != ',')
            break;
        p++;
    }
    /* Without a device source (backend "none") no device is known, so none is missing. */
    bool devices_known = strcmp(obs->backend, "none") != 0;
    for (size_t i = 0; i < n && devices_known; i++) {
        const hbm_device *d = find_dev(obs, ids[i]);
        if (!d) {
            hbm_finding *x = doc_add(out, DOC_VISIBLE_DEVICE_MISSING, HBM_SEV_WARNING, ids[i],
                                     "pid %d (%s) was started with visible devices '%s', but "
                                     "device %ld does not exist here",
                                     s->pid, s->comm, v, ids[i]);
            json_object_set_new(x->evidence, "pid", json_integer(s->pid));
            json_object_set_new(x->evidence, "visible_devices", json_string(v));
            json_object_set_new(x->evidence, "device", json_integer(ids[i]));
            doc_remedy(x, "Use the ids `hbmctl status` shows (logic ids on Ascend, indexes on "
                          "NVIDIA), or let `hbmctl pick N` choose free ones.");
            continue;
        }
        for (size_t j = 0; j < d->nprocs; j++) {
            const hbm_dproc *p = &d->procs[j];
            if (hbm_obs_in_tree(obs, s->pid, (int)p->pid) ||
                (p->state != HBM_PID_LIVE && p->state != HBM_PID_ABANDONED &&
                 p->state != HBM_PID_STUCK && p->state != HBM_PID_ZOMBIE))
                continue;
            char sz[32];
            hbm_finding *x = doc_add(out, DOC_VISIBLE_DEVICE_BUSY, HBM_SEV_WARNING, ids[i],
                                     "pid %d (%s) was given device %ld, which pid %lld (%s) "
                                     "outside its process tree also uses (%s)", s->pid,
                                     s->comm, ids[i], (long long)p->pid, p->name,
                                     hbm_fmt_size(sz, sizeof sz, p->memory_bytes));
            json_object_set_new(x->evidence, "pid", json_integer(s->pid));
            json_object_set_new(x->evidence, "visible_devices", json_string(v));
            json_object_set_new(x->evidence, "device", json_integer(ids[i]));
            json_object_set_new(x->evidence, "other_pid", json_integer(p->pid));
            json_object_set_new(x->evidence, "other_memory_bytes", doc_jint(p->memory_bytes));
            doc_remedy(x, "Two servers on one device share its memory and the second one's "
                          "start-up check fails: give each server its own devices "
                          "(`hbmctl pick N --lease NAME` or `hbmctl run --devices N`).");
            break;
        }
    }
    const char *cmd = s->cmdline ? s->cmdline : "";
    long tp = hbm_cmdline_arg_long(cmd, "--tensor-parallel-size", "-tp", 1);
    long pp = hbm_cmdline_arg_long(cmd, "--pipeline-parallel-size", "-pp", 1);
    if (n > 0 && (long)n != tp * pp) {
        bool too_few = (long)n < tp * pp;
        hbm_finding *x = doc_add(out, DOC_VISIBLE_DEVICES_TP_MISMATCH,
                                 too_few ? HBM_SEV_WARNING : HBM_SEV_INFO, HBM_UNKNOWN,
                                 "pid %d (%s): %zu visible device%s '%s' for tensor parallel "
                                 "%ld x pipeline parallel %ld", s->pid, s->comm, n,
                                 n == 1 ? "" : "s", v, tp, pp);
        json_object_set_new(x->evidence, "pid", json_integer(s->pid));
        json_object_set_new(x->evidence, "visible_devices", json_string(v));
        json_object_set_new(x->evidence, "visible_count", json_integer((json_int_t)n));
        json_object_set_new(x->evidence, "tensor_parallel_size", json_integer(tp));
        json_object_set_new(x->evidence, "pipeline_parallel_size", json_integer(pp));
        if (too_few)
            doc_remedy(x, "The server needs %ld devices and can see %zu: list %ld devices in "
                       "the variable or lower --tensor-parallel-size.", tp * pp, n, tp * pp);
        else
            doc_remedy(x, "Only the first %ld of the %zu visible devices are used; the rest "
                          "stay idle but reserved for this server.", tp * pp, n);
    }
}

static void port_findings(const hbm_obs *obs, const hbm_hproc *s, hbm_findings *out)
{
    long port = hbm_cmdline_arg_long(s->cmdline ? s->cmdline : "", "--port", NULL, -1);
    if (port <= 0 || port > 65535)
        return;
    const hbm_listener *mine = NULL, *other = NULL;
    for (size_t i = 0; i < obs->host.nlisteners; i++) {
        const hbm_listener *l = &obs->host.listeners[i];
        if (l->port != port)
            continue;
        if (l->pid > 0 && hbm_obs_in_tree(obs, s->pid, l->pid))
            mine = l;
        else
            other = l;
    }
    if (mine)
        return;
    double age = doc_age(obs, s, obs->captured_at);
    hbm_finding *x;
    if (other && other->pid > 0) {
        x = doc_add(out, DOC_PORT_HELD_BY_OTHER, HBM_SEV_WARNING, HBM_UNKNOWN,
                    "pid %d (%s) was told --port %ld, but pid %d listens there", s->pid,
                    s->comm, port, other->pid);
        json_object_set_new(x->evidence, "listener_pid", json_integer(other->pid));
        doc_remedy(x, "Another process owns the port, so clients reach that one: stop it or "
                      "give this server another --port.");
    } else if (other) {
        /* Listening, owner not visible (another namespace or no permission). */
        return;
    } else {
        x = doc_add(out, DOC_PORT_NOT_LISTENING, HBM_SEV_WARNING, HBM_UNKNOWN,
                    "pid %d (%s) was told --port %ld, and nothing listens on it", s->pid,
                    s->comm, port);
        doc_remedy(x, "A server still loading weights listens only when ready (age below). "
                      "Otherwise it is hung or failed: read its log (`hbmctl explain`); "
                      "clients must use the port it really serves.");
    }
    json_object_set_new(x->evidence, "pid", json_integer(s->pid));
    json_object_set_new(x->evidence, "port", json_integer(port));
    json_object_set_new(x->evidence, "age_seconds", age >= 0 ? json_real(age) : json_null());
    if (s->cmdline)
        json_object_set_new(x->evidence, "cmdline", json_string(s->cmdline));
}

/* A worker never listens: it inherited the server's --port in its command line. Here its
 * server is gone (its parent is no server), so it is either a server's child by
 * construction or a device holder the join found abandoned; orphan-holder covers it. */
static bool orphaned_worker(const hbm_obs *obs, const hbm_hproc *s)
{
    if (hbm_verdict_server_child(s))
        return true;
    for (size_t i = 0; i < obs->ndevs; i++)
        for (size_t j = 0; j < obs->devs[i].nprocs; j++)
            if (obs->devs[i].procs[j].pid == s->pid &&
                obs->devs[i].procs[j].state == HBM_PID_ABANDONED)
                return true;
    return false;
}

void doc_check_servers(const doc_ctx *c, hbm_findings *out)
{
    const hbm_obs *obs = c->obs;
    if (!obs->has_host)
        return;
    for (size_t i = 0; i < obs->host.nprocs; i++) {
        const hbm_hproc *s = &obs->host.procs[i];
        if (!hbm_inference_server(s) || hbm_inference_parent_is_server(obs, s))
            continue;
        if (s->visible_devices && *s->visible_devices)
            visible_findings(obs, s, out);
        if (!orphaned_worker(obs, s))
            port_findings(obs, s, out);
    }
}
