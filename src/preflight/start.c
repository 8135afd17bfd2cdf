/* What `run` does before the start (include/hbm/preflight.h): observe, pick and lease the
 * devices, judge the launch on them. */
#include <fcntl.h>
#include <string.h>

#include "hbm/preflight.h"

/* Picks and leases o->count devices (or o->count of o->ids); 1 when too few are free. */
static int pick(const hbm_preflight_start_opts *o, hbm_obs *obs, hbm_pick_result *res,
                hbm_err *err)
{
    hbm_pick_opts po = {0};
    po.n = o->count;
    po.min_free_bytes = HBM_UNKNOWN;
    po.lease_name = o->lease_name;
    po.only = o->ids;
    po.nonly = o->nids;
    int rc = hbm_pick(obs, &po, res, err);
    if (rc < 0)
        return hbm_err_prefix(err, "--devices");
    for (size_t i = 0; rc == 0 && i < res->n; i++)
        if (res->lease_fds && res->lease_fds[i] >= 0)
            fcntl(res->lease_fds[i], F_SETFD, FD_CLOEXEC); /* the tree must not keep it */
    return rc;
}

int hbm_preflight_start_run(const hbm_preflight_start_opts *o, hbm_preflight_start *out,
                            hbm_err *err)
{
    memset(out, 0, sizeof *out);
    out->outcome = HBM_PREFLIGHT_GO;
    bool devices = o->count > 0;
    if (!devices && !o->model)
        return 0;
    hbm_source_opts src = *o->src;
    src.want_topology = devices; /* --devices N picks by the links */
    hbm_obs obs;
    hbm_obs_init(&obs);
    int rc = hbm_observe(&obs, &src, err);
    if (rc < 0) {
        hbm_err_prefix(err, "cannot observe devices");
        goto out;
    }
    out->observed = true;
    out->vendor_known = obs.ndevs > 0;
    out->vendor = obs.ndevs ? obs.devs[0].vendor : HBM_VENDOR_UNKNOWN;
    if (devices) {
        rc = pick(o, &obs, &out->pick, err);
        if (rc != 0) {
            if (rc == 1)
                out->outcome = HBM_PREFLIGHT_NO_DEVICES;
            rc = rc == 1 ? 0 : -1;
            goto out;
        }
    }
    if (o->model) {
        rc = hbm_preflight_run(&obs, devices ? out->pick.dev_index : NULL,
                               devices ? out->pick.n : 0, o->model, o->argc, o->argv,
                               &out->verdict, err);
        if (rc < 0) {
            hbm_err_prefix(err, "preflight");
            goto out;
        }
        out->judged = true;
        if (!out->verdict.fits)
            out->outcome = HBM_PREFLIGHT_REFUSED;
    }
out:
    hbm_obs_free(&obs);
    return rc;
}

void hbm_preflight_start_free(hbm_preflight_start *out)
{
    hbm_pick_result_free(&out->pick);
    if (out->judged)
        hbm_preflight_verdict_free(&out->verdict);
    memset(out, 0, sizeof *out);
}
