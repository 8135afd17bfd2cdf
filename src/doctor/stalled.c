/* server-stalled: an inference server found listening on this host whose /metrics showed
 * work running or waiting and no token between the observation's two samples of it (its
 * /health may answer all along). Read from the observation (obs->servers), so a snapshot
 * replays it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "doctor/doctor_int.h"

static json_t *jreal(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

static void stalled_finding(const hbm_server *v, const hbm_server_engine *e, hbm_findings *out)
{
    hbm_finding *x = doc_add(out, DOC_SERVER_STALLED, HBM_SEV_CRITICAL, HBM_UNKNOWN,
                             "pid %d (%s) at %s is %s", v->pid, v->comm, v->url, e->line);
    json_t *ev = x->evidence;
    json_object_set_new(ev, "pid", json_integer(v->pid));
    json_object_set_new(ev, "url", json_string(v->url));
    json_object_set_new(ev, "engine_kind", json_string(e->kind));
    json_object_set_new(ev, "model", e->model[0] ? json_string(e->model) : json_null());
    json_object_set_new(ev, "engine", e->engine[0] ? json_string(e->engine) : json_null());
    json_object_set_new(ev, "running", jreal(e->running));
    json_object_set_new(ev, "waiting", jreal(e->waiting));
    json_object_set_new(ev, "tokens_before", jreal(e->tokens_before));
    json_object_set_new(ev, "tokens_after", jreal(e->tokens_after));
    json_object_set_new(ev, "seconds_without_token", json_real(e->stalled_for_s));
    doc_remedy(x, "The server answers but produces no token (a hung collective or worker; "
                  "/health can stay 200). Read its log (`hbmctl explain`), then restart it; "
                  "`hbmctl run --stall DUR` restarts it on its own.");
}

static void unknown_finding(const hbm_server *v, const char *why, hbm_findings *out)
{
    hbm_finding *x = doc_add(out, DOC_SERVER_PROGRESS_UNKNOWN, HBM_SEV_INFO, HBM_UNKNOWN,
                             "pid %d (%s) at %s: could not tell whether it makes progress (%s)",
                             v->pid, v->comm, v->url, why);
    json_object_set_new(x->evidence, "pid", json_integer(v->pid));
    json_object_set_new(x->evidence, "url", json_string(v->url));
    json_object_set_new(x->evidence, "why", json_string(why));
    doc_remedy(x, "Serve the engine's Prometheus metrics on that port (SGLang: "
                  "--enable-metrics) so a hung server can be told from a busy one.");
}

void doc_check_progress(const doc_ctx *c, hbm_findings *out)
{
    for (size_t i = 0; i < c->obs->nservers; i++) {
        const hbm_server *v = &c->obs->servers[i];
        if (!v->up) {
            unknown_finding(v, v->error, out);
            continue;
        }
        if (v->nengines == 0) {
            unknown_finding(v, "no vLLM, SGLang or MindIE metric there", out);
            continue;
        }
        for (size_t k = 0; k < v->nengines; k++) {
            const hbm_server_engine *e = &v->engines[k];
            if (strcmp(e->state, "stalled") == 0)
                stalled_finding(v, e, out);
            else if (strcmp(e->state, "unknown") == 0)
                unknown_finding(v, e->why[0] ? e->why : "no token counter", out);
        }
    }
}
