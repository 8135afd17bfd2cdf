/* hbmctl_remediations_total from the audit log: the log is already the record every acting
 * run appends to, so the exporter counts it instead of keeping a second record. Each scrape
 * reads only what was appended since the last one, a bounded chunk, from a descriptor
 * opened non-blocking (a FIFO planted in its place is refused, never waited on). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/export_int.h"
#include "hbm/util.h"

/* Series shown at 0 before the first action, so rate() and alerts have them. */
static const char *const actions[] = {"kill", "sysv-rmid", "shm-unlink"};
static const char *const results[] = {"done", "kept"};

static hbm_remedy_count *slot(hbm_remedy_log *l, const char *action, const char *result)
{
    for (size_t i = 0; i < l->nc; i++)
        if (!strcmp(l->c[i].action, action) && !strcmp(l->c[i].result, result))
            return &l->c[i];
    if (l->nc == sizeof l->c / sizeof l->c[0])
        return NULL;
    hbm_remedy_count *c = &l->c[l->nc++];
    snprintf(c->action, sizeof c->action, "%s", action);
    snprintf(c->result, sizeof c->result, "%s", result);
    c->n = 0;
    return c;
}

static void seed(hbm_remedy_log *l)
{
    if (l->nc)
        return;
    for (size_t a = 0; a < sizeof actions / sizeof actions[0]; a++)
        for (size_t r = 0; r < sizeof results / sizeof results[0]; r++)
            slot(l, actions[a], results[r]);
}

/* One record: an action with its outcome is counted; a run's start stamps last_run. */
static void take(hbm_remedy_log *l, const char *line, size_t n)
{
    json_t *r = json_loadb(line, n, 0, NULL);
    if (!json_is_object(r)) {
        json_decref(r);
        return;
    }
    const char *event = json_string_value(json_object_get(r, "event"));
    const char *action = json_string_value(json_object_get(r, "action"));
    const char *outcome = json_string_value(json_object_get(r, "outcome"));
    double t = json_number_value(json_object_get(r, "unix_time"));
    if (action && outcome) {
        hbm_remedy_count *c = slot(l, action, outcome);
        if (c)
            c->n++;
        else
            l->other++;
        if (t > l->last_action)
            l->last_action = t;
    } else if (event && (!strcmp(event, "clean-start") ||
                         (!strcmp(event, "slurm-epilog") && action && !strcmp(action, "start")))) {
        if (t > l->last_run)
            l->last_run = t;
    }
    json_decref(r);
}

void hbm_remedy_log_read(hbm_remedy_log *l, const char *path, size_t max, const char *state)
{
    seed(l);
    /* Every policy run rewrites its state file, dry runs included (they write no audit). */
    struct stat ss;
    l->policy_run = lstat(state ? state : HBM_CLEAN_STATE_DEFAULT, &ss) == 0 &&
                            S_ISREG(ss.st_mode) ? (double)ss.st_mtime : 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        l->readable = errno == ENOENT; /* no action yet */
        l->synced |= l->readable;
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        l->readable = false;
        return;
    }
    if ((uint64_t)st.st_dev != l->dev || (uint64_t)st.st_ino != l->ino ||
        (uint64_t)st.st_size < l->off) {
        l->dev = st.st_dev; /* rotated or truncated: a new log, counted on top */
        l->ino = st.st_ino;
        l->off = 0;
    }
    size_t want = (uint64_t)st.st_size - l->off < max ? (size_t)(st.st_size - l->off) : max;
    char *buf = hbm_xmalloc(want + 1);
    ssize_t got = want ? pread(fd, buf, want, (off_t)l->off) : 0;
    close(fd);
    l->readable = got >= 0;
    size_t used = 0;
    for (size_t i = 0; got > 0 && i < (size_t)got; i++) {
        if (buf[i] != '\n')
            continue;
        take(l, buf + used, i - used);
        used = i + 1;
    }
    /* A line longer than a whole chunk is no record hbmctl wrote: skip it. */
    if (got > 0 && used == 0 && (size_t)got == max)
        used = (size_t)got;
    /* Read to the end (a last line still being written aside): the counts are whole. */
    if (got >= 0 && l->off + (uint64_t)got >= (uint64_t)st.st_size)
        l->synced = true;
    l->off += used;
    free(buf);
}

/* Until the whole log was read once (4 MiB a scrape), the counts and times are left out:
 * served low they would look like a counter reset to Prometheus, and the climb back like a
 * burst of remediations. */
void hbm_remedy_log_render(const hbm_remedy_log *l, hbm_export_buf *b)
{
    hbm_export_family(b, "hbmctl_remediations_total", "counter",
                      "Actions recorded in the audit log (clean --apply, the Slurm epilog), by "
                      "action (kill, sysv-rmid, shm-unlink) and result (done; kept: found no "
                      "longer safe, or failed), since the log began.");
    for (size_t i = 0; l->synced && i < l->nc; i++) {
        hbm_export_label lb[2] = {{"action", l->c[i].action}, {"result", l->c[i].result}};
        hbm_export_sample(b, "hbmctl_remediations_total", lb, 2, (double)l->c[i].n);
    }
    if (l->synced && l->other) {
        hbm_export_label lb[2] = {{"action", "other"}, {"result", "other"}};
        hbm_export_sample(b, "hbmctl_remediations_total", lb, 2, (double)l->other);
    }
    /* Whole seconds: the writer's %.9g would round a unix time to ten seconds. */
    hbm_export_family(b, "hbmctl_last_remediation_timestamp_seconds", "gauge",
                      "Unix time of the last action in the audit log (absent before one).");
    hbm_export_sample(b, "hbmctl_last_remediation_timestamp_seconds", NULL, 0,
                      l->synced && l->last_action > 0 ? floor(l->last_action) : NAN);
    hbm_export_family(b, "hbmctl_last_remediation_run_timestamp_seconds", "gauge",
                      "Unix time of the last run that acted (clean --apply with something to "
                      "do, the Slurm epilog); dry runs write nothing.");
    hbm_export_sample(b, "hbmctl_last_remediation_run_timestamp_seconds", NULL, 0,
                      l->synced && l->last_run > 0 ? floor(l->last_run) : NAN);
    hbm_export_family(b, "hbmctl_remediation_policy_last_run_timestamp_seconds", "gauge",
                      "Unix time of the remediation policy's last run (clean --policy, dry "
                      "runs included: its state file's mtime); absent before one.");
    hbm_export_sample(b, "hbmctl_remediation_policy_last_run_timestamp_seconds", NULL, 0,
                      l->policy_run > 0 ? l->policy_run : NAN);
    hbm_export_family(b, "hbmctl_remediation_audit_log_readable", "gauge",
                      "1 when the audit log was read (or does not exist yet); 0 means the "
                      "remediation counts are not current.");
    hbm_export_sample(b, "hbmctl_remediation_audit_log_readable", NULL, 0, l->readable);
}
