/* The live devices a launch would use, put to the planner (include/hbm/preflight.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/preflight.h"
#include "hbm/util.h"

static hbm_plan_platform platform_of(const hbm_device *d)
{
    return d->vendor == HBM_VENDOR_ASCEND ? HBM_PLAN_PLATFORM_ASCEND : HBM_PLAN_PLATFORM_CUDA;
}

/* The devices obs->devs[use[0..n)] as one plan input: the smallest total and free among
 * them (as the framework sees them), the first one's name and platform, every holder. */
static int fill_memory(hbm_obs *obs, const size_t *use, size_t n, hbm_plan_input *in,
                       hbm_preflight_live *live, hbm_err *err)
{
    int64_t total = -1, free_min = -1;
    for (size_t i = 0; i < n; i++) {
        hbm_device *d = &obs->devs[use[i]];
        hbm_plan_devmem dm;
        if (hbm_plan_device_memory(d->name, platform_of(d), obs->has_host && obs->host.wsl2,
                                   d->memory_total_bytes,
                                   d->memory_used_bytes, &dm, err) < 0)
            return hbm_err_prefix(err, "device %lld", (long long)hbm_device_user_id(d));
        if (total < 0 || dm.total_bytes < total)
            total = dm.total_bytes;
        if (free_min < 0 || dm.free_bytes < free_min)
            free_min = dm.free_bytes;
        if (i == 0) {
            snprintf(live->name, sizeof live->name, "%s", d->name[0] ? d->name : "device");
            in->platform = platform_of(d);
            in->large_device = dm.large_device;
        }
        for (size_t p = 0; p < d->nprocs; p++) {
            size_t k = live->nholders++;
            live->holders = hbm_xrealloc(live->holders, live->nholders * sizeof *live->holders);
            hbm_plan_holder *h = &live->holders[k];
            h->pid = d->procs[p].pid;
            snprintf(h->name, sizeof h->name, "%s", d->procs[p].name[0] ? d->procs[p].name : "?");
            h->memory_bytes = d->procs[p].memory_bytes;
        }
    }
    in->device_name = live->name;
    in->mem_total_bytes = total;
    in->mem_free_bytes = free_min;
    in->wsl2 = obs->has_host && obs->host.wsl2;
    in->holders = live->holders;
    in->nholders = live->nholders;
    in->live = true;
    return 0;
}

/* One entry of a visible-device list, blanks trimmed: the device it names, or NULL. */
static hbm_device *visible_entry(hbm_obs *obs, hbm_vendor vendor, char *t)
{
    while (isspace((unsigned char)*t))
        t++;
    size_t l = strlen(t);
    while (l && isspace((unsigned char)t[l - 1]))
        t[--l] = 0;
    char *end;
    long long id = strtoll(t, &end, 10);
    if (l && !*end && end != t && id >= 0)
        return hbm_obs_find_device(obs, id);
    if (vendor == HBM_VENDOR_NVIDIA && !strncmp(t, "GPU-", 4))
        for (size_t k = 0; k < obs->ndevs; k++)
            if (!strncmp(obs->devs[k].uuid, t, l))
                return &obs->devs[k];
    return NULL;
}

long hbm_preflight_visible(hbm_obs *obs, hbm_vendor vendor, const char *value, size_t *out,
                           size_t cap, char *why, size_t whylen)
{
    long n = 0;
    int64_t last = -1;
    char *copy = hbm_xstrdup(value), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        hbm_device *d = visible_entry(obs, vendor, t);
        while (isspace((unsigned char)*t))
            t++;
        for (long k = 0; d && k < n; k++)
            if (&obs->devs[out[k]] == d)
                d = NULL; /* named twice: CUDA treats it as invalid */
        if (vendor == HBM_VENDOR_ASCEND && (!d || hbm_device_user_id(d) <= last)) {
            snprintf(why, whylen, "%s: \"%s\" %s", value, t,
                     !d ? "is not a logic id of this host (hbmctl status lists them)"
                        : "breaks the ascending order the Ascend runtime requires");
            free(copy);
            return -1;
        }
        if (!d) {
            /* CUDA sees the devices before an entry it cannot use, and none after it */
            snprintf(why, whylen, "CUDA stops at \"%s\": no such device here", t);
            break;
        }
        last = hbm_device_user_id(d);
        if ((size_t)n < cap)
            out[n++] = (size_t)(d - obs->devs);
    }
    free(copy);
    return n;
}

int hbm_preflight_live_devices(hbm_obs *obs, int64_t ndev, hbm_plan_input *in,
                               hbm_preflight_live *live, hbm_err *err)
{
    memset(live, 0, sizeof *live);
    if (obs->ndevs == 0)
        return hbm_err_set(err, "the %s backend sees no device", obs->backend);
    hbm_vendor vendor = obs->devs[0].vendor;
    const char *var = hbm_vendor_visible_env(vendor);
    const char *val = var ? getenv(var) : NULL;
    size_t *use = hbm_xcalloc(obs->ndevs, sizeof *use);
    long nuse = (long)obs->ndevs;
    char why[256] = "";
    int rc = -1;
    if (val) {
        nuse = hbm_preflight_visible(obs, vendor, val, use, obs->ndevs, why, sizeof why);
        if (nuse < 0) {
            hbm_err_set(err, "%s=%s", var, why);
            goto out;
        }
        live->visible = hbm_xasprintf("%s=%s", var, val);
    } else {
        for (size_t k = 0; k < obs->ndevs; k++)
            use[k] = k;
    }
    if (ndev > nuse) {
        hbm_err_set(err, "TP x PP needs %lld devices but %s%s%s%s leaves %ld%s%s%s",
                    (long long)ndev, val ? var : "the host", val ? "=\"" : "", val ? val : "",
                    val ? "\"" : "", nuse, why[0] ? " (" : "", why, why[0] ? ")" : "");
        goto out;
    }
    if (fill_memory(obs, use, (size_t)ndev, in, live, err) < 0)
        goto out;
    live->ids = hbm_xcalloc((size_t)ndev, sizeof *live->ids);
    for (int64_t i = 0; i < ndev; i++)
        live->ids[i] = hbm_device_user_id(&obs->devs[use[i]]);
    live->nids = (size_t)ndev;
    in->device_ids = live->ids;
    in->ndevice_ids = live->nids;
    in->visible_devices = live->visible;
    if (obs->partial)
        in->live_partial = live->partial = hbm_xstrdup(obs->partial_why);
    rc = 0;
out:
    free(use);
    return rc;
}

void hbm_preflight_live_free(hbm_preflight_live *live)
{
    free(live->holders);
    free(live->ids);
    free(live->visible);
    free(live->partial);
    memset(live, 0, sizeof *live);
}

static int64_t free_of(const hbm_device *d)
{
    return d->memory_total_bytes - d->memory_used_bytes;
}

hbm_device *hbm_preflight_device(hbm_obs *obs, const size_t *chosen, size_t nchosen)
{
    hbm_device *best = NULL;
    for (size_t i = 0; chosen && i < nchosen; i++) {
        hbm_device *d = &obs->devs[chosen[i]];
        if (!best || free_of(d) < free_of(best))
            best = d;
    }
    if (best || obs->ndevs == 0)
        return best;
    const char *vis = getenv(hbm_vendor_visible_env(obs->devs[0].vendor));
    if (vis && *vis) {
        hbm_device *d = hbm_obs_find_device(obs, strtoll(vis, NULL, 10));
        if (d)
            return d;
    }
    return &obs->devs[0];
}

int hbm_preflight_run(hbm_obs *obs, const size_t *chosen, size_t nchosen, const char *model,
                      int argc, char **argv, hbm_preflight_verdict *out, hbm_err *err)
{
    memset(out, 0, sizeof *out);
    hbm_device *dev = hbm_preflight_device(obs, chosen, nchosen);
    if (!dev)
        return hbm_err_set(err, "no device is visible to plan against");
    out->device = hbm_device_user_id(dev);
    snprintf(out->device_name, sizeof out->device_name, "%s", dev->name);
    hbm_plan_input in;
    hbm_plan_input_init(&in);
    in.model_path = model;
    if (hbm_plan_args_from_argv(&in, argc, argv, err) < 0)
        return -1;
    in.model_path = model;
    hbm_preflight_live live;
    memset(&live, 0, sizeof live);
    size_t idx = (size_t)(dev - obs->devs);
    /* the same figures as `hbmctl plan --device auto` */
    int rc = fill_memory(obs, &idx, 1, &in, &live, err);
    if (rc == 0 && hbm_plan_run(&in, &out->plan, err) < 0)
        rc = hbm_err_prefix(err, "cannot plan");
    hbm_preflight_live_free(&live);
    if (rc < 0) {
        hbm_plan_result_free(&out->plan);
        return -1;
    }
    out->fits = out->plan.fits;
    return 0;
}

void hbm_preflight_verdict_free(hbm_preflight_verdict *v)
{
    hbm_plan_result_free(&v->plan);
    memset(v, 0, sizeof *v);
}

bool hbm_preflight_target_live(const hbm_preflight_target *t)
{
    return t->device && !strcmp(t->device, "auto");
}

/* A device from the table, or the live devices; neither when only --mem names it. */
static int target_device(const hbm_preflight_target *t, hbm_obs *obs, hbm_plan_input *in,
                         hbm_preflight_live *live, hbm_err *err)
{
    if (hbm_preflight_target_live(t)) {
        int64_t n = (in->tensor_parallel_size > 0 ? in->tensor_parallel_size : 1) *
                    (in->pipeline_parallel_size > 0 ? in->pipeline_parallel_size : 1);
        if (hbm_preflight_live_devices(obs, n, in, live, err) < 0)
            return hbm_err_prefix(err, "--device auto");
    } else if (t->device) {
        const hbm_plan_device *d = hbm_plan_device_find(t->device);
        if (!d)
            return hbm_err_set(err, "--device: \"%s\" is not in the device table (hbmctl plan "
                               "--list-devices); use --mem SIZE for others", t->device);
        in->device_name = d->name;
        in->mem_total_bytes = d->total_bytes;
        in->large_device = d->large_class;
        if (t->platform == HBM_PLAN_PLATFORM_UNKNOWN)
            in->platform = d->platform;
    }
    return 0;
}

int hbm_preflight_target_input(const hbm_preflight_target *t, hbm_obs *obs,
                               hbm_plan_input *in, hbm_preflight_live *live, hbm_err *err)
{
    memset(live, 0, sizeof *live);
    if (t->platform != HBM_PLAN_PLATFORM_UNKNOWN)
        in->platform = t->platform;
    if (t->serve && hbm_preflight_target_live(t))
        return hbm_err_set(err, "--serve chooses how many devices: give --device NAME or --mem "
                           "SIZE --free SIZE, not --device auto");
    if (target_device(t, obs, in, live, err) < 0)
        return -1;
    if (t->mem_bytes != HBM_UNKNOWN) {
        in->mem_total_bytes = t->mem_bytes;
        if (!t->device)
            in->large_device = t->mem_bytes >= 70 * HBM_GIB;
    }
    if (t->free_bytes != HBM_UNKNOWN)
        in->mem_free_bytes = t->free_bytes;
    if (in->platform == HBM_PLAN_PLATFORM_UNKNOWN)
        in->platform = HBM_PLAN_PLATFORM_CUDA;
    if (in->mem_total_bytes <= 0)
        return hbm_err_set(err, "plan: which device? give --device NAME, --device auto or "
                           "--mem SIZE");
    if (in->mem_free_bytes > in->mem_total_bytes)
        return hbm_err_set(err, "--free: %lld bytes is more than the device's %lld",
                           (long long)in->mem_free_bytes, (long long)in->mem_total_bytes);
    return 0;
}

int hbm_preflight_plan(const hbm_preflight_target *t, hbm_obs *obs, hbm_plan_input *in,
                       hbm_plan_result *res, hbm_err *err)
{
    hbm_preflight_live live;
    int rc = hbm_preflight_target_input(t, obs, in, &live, err);
    if (rc == 0) {
        in->serve_requests = t->serve > 0 ? t->serve : HBM_UNKNOWN;
        rc = t->serve > 0 ? hbm_plan_serve(in, res, err) : hbm_plan_run(in, res, err);
    }
    hbm_preflight_live_free(&live);
    if (rc < 0)
        return -1;
    return (t->serve > 0 ? res->launch.serves : res->fits) ? 1 : 0;
}
