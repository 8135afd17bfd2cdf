/* Ending a lease: its holder is signalled through the start-time-checked path, then the
 * lock must drop. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hbm/host.h"
#include "hbm/lease.h"
#include "hbm/util.h"

/* A lease of this name that a live lock still holds. */
static bool held_as(const hbm_lease_info *l, const char *name)
{
    return l->held && strcmp(l->name, name) == 0;
}

int hbm_lease_end(const char *lease_dir, const char *name, double timeout_s, size_t *ended,
                  hbm_err *err)
{
    *ended = 0;
    hbm_lease_info *ls;
    size_t n;
    if (hbm_lease_list(lease_dir, &ls, &n, err) < 0)
        return -1;
    size_t matched = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!held_as(&ls[i], name))
            continue;
        matched++;
        if (ls[i].pid <= 1 || ls[i].starttime == 0) {
            rc = hbm_err_set(err, "lease %s on device %lld names no holder pid", name,
                             (long long)ls[i].device);
            break;
        }
        if (hbm_host_is_self_or_ancestor(ls[i].pid)) {
            rc = hbm_err_set(err, "lease %s on device %lld is held by pid %d, an ancestor of "
                             "this hbmctl: end that process instead", name,
                             (long long)ls[i].device, ls[i].pid);
            break;
        }
        hbm_kill_outcome o;
        if (hbm_host_kill_checked(ls[i].pid, ls[i].starttime, SIGTERM, &o, NULL, err) < 0) {
            rc = -1;
            break;
        }
        if (o == HBM_KILL_SENT)
            (*ended)++;
    }
    /* Then wait for every matching lock to drop. */
    double deadline = hbm_now_mono() + timeout_s;
    while (rc == 0 && matched) {
        bool still = false;
        int64_t dev = -1;
        for (size_t i = 0; i < n; i++) {
            if (!held_as(&ls[i], name))
                continue;
            hbm_lease_info q;
            int h = hbm_lease_query(lease_dir, ls[i].device, &q, NULL);
            if (h == 1 && strcmp(q.name, name) == 0) {
                still = true;
                dev = ls[i].device;
            }
        }
        if (!still)
            break;
        if (hbm_now_mono() > deadline) {
            rc = hbm_err_set(err, "lease %s on device %lld is still held after %.0f s", name,
                             (long long)dev, timeout_s);
            break;
        }
        usleep(50 * 1000);
    }
    free(ls);
    if (rc < 0)
        return -1;
    return matched ? 0 : 1;
}

int hbm_lease_claim_check(const char *dir, const char *name, hbm_lease_info *bad,
                          hbm_err *err)
{
    hbm_lease_info *ls;
    size_t n;
    if (hbm_lease_list(dir, &ls, &n, err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!held_as(&ls[i], name) || ls[i].pid <= 1)
            continue;
        if (!hbm_lease_pid_holds(&ls[i])) {
            *bad = ls[i];
            rc = 1;
        }
    }
    free(ls);
    return rc;
}
