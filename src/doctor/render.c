/* Findings as JSON (docs/doctor.md) and the one-line verdict. */
#include <stdio.h>
#include <string.h>

#include "hbm/doctor.h"

const char *hbm_severity_name(hbm_severity s)
{
    switch (s) {
    case HBM_SEV_CRITICAL: return "critical";
    case HBM_SEV_WARNING: return "warning";
    default: return "info";
    }
}

const char *hbm_action_kind_name(hbm_action_kind k)
{
    switch (k) {
    case HBM_ACT_KILL: return "kill";
    case HBM_ACT_SYSV_RMID: return "sysv-rmid";
    case HBM_ACT_SHM_UNLINK: return "shm-unlink";
    default: return "none";
    }
}

static json_t *action_json(const hbm_action *a)
{
    if (a->kind == HBM_ACT_NONE)
        return json_null();
    json_t *j = json_object();
    json_object_set_new(j, "kind", json_string(hbm_action_kind_name(a->kind)));
    json_object_set_new(j, "text", json_string(a->text));
    if (a->kind == HBM_ACT_KILL) {
        json_object_set_new(j, "pid", json_integer(a->pid));
        json_object_set_new(j, "starttime", json_integer((json_int_t)a->starttime));
    } else if (a->kind == HBM_ACT_SYSV_RMID) {
        json_object_set_new(j, "shmid", json_integer(a->shmid));
        char key[16];
        snprintf(key, sizeof key, "0x%08llx", (unsigned long long)(a->key & 0xffffffffLL));
        json_object_set_new(j, "key", json_string(key));
    } else {
        json_object_set_new(j, "path", json_string(a->path));
    }
    return j;
}

json_t *hbm_findings_to_json(const hbm_findings *f)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < f->n; i++) {
        const hbm_finding *x = &f->items[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(x->id));
        json_object_set_new(o, "severity", json_string(hbm_severity_name(x->severity)));
        json_object_set_new(o, "device", x->device < 0 ? json_null() : json_integer(x->device));
        json_object_set_new(o, "summary", json_string(x->summary));
        json_object_set(o, "evidence", x->evidence ? x->evidence : json_object());
        json_object_set_new(o, "remedy", json_string(x->remedy));
        json_object_set_new(o, "action", action_json(&x->action));
        json_array_append_new(arr, o);
    }
    char verdict[512];
    hbm_findings_verdict(f, verdict, sizeof verdict);
    json_t *root = json_object();
    json_object_set_new(root, "verdict", json_string(verdict));
    json_object_set_new(root, "problems", json_integer((json_int_t)hbm_findings_problems(f)));
    json_object_set_new(root, "findings", arr);
    return root;
}

size_t hbm_findings_problems(const hbm_findings *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += f->items[i].severity >= HBM_SEV_WARNING;
    return n;
}

/* "3 problems: 2 critical (orphan-holder, gone-holder), 1 warning (stale-sysv-shm)". */
void hbm_findings_verdict(const hbm_findings *f, char *buf, size_t n)
{
    size_t problems = hbm_findings_problems(f);
    if (!problems) {
        snprintf(buf, n, "no problems%s", f->n ? " (notes below)" : "");
        return;
    }
    size_t pos = (size_t)snprintf(buf, n, "%zu problem%s:", problems, problems == 1 ? "" : "s");
    bool any = false;
    for (int sev = HBM_SEV_CRITICAL; sev >= HBM_SEV_WARNING && pos < n; sev--) {
        size_t count = 0;
        for (size_t i = 0; i < f->n; i++)
            count += (int)f->items[i].severity == sev;
        if (!count)
            continue;
        pos += (size_t)snprintf(buf + pos, n - pos, "%s %zu %s%s (", any ? "," : "", count, sev == HBM_SEV_CRITICAL ? "critical" : "warning",
                                sev == HBM_SEV_WARNING && count > 1 ? "s" : "");
        const char *last = "";
        bool first = true;
        for (size_t i = 0; i < f->n && pos < n; i++) {
            const hbm_finding *x = &f->items[i];
            if ((int)x->severity != sev || strcmp(x->id, last) == 0)
                continue;
            pos += (size_t)snprintf(buf + pos, n - pos, "%s%s", first ? "" : ", ", x->id);
            last = x->id;
            first = false;
        }
        if (pos < n)
            pos += (size_t)snprintf(buf + pos, n - pos, ")");
        any = true;
    }
}
