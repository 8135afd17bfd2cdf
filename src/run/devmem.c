/* Device memory of the watched devices: the baseline before the child starts, the
 * samples the memory guard judges, and the release wait after a stop. The devices are the
 * leased ones; without a lease (--restart-on-mem alone) those named by the visible-device
 * variable hbmctl was given, else every device of the vendor. */
#include <stdlib.h>
#include <string.h>

#include "run_int.h"
#include "hbm/util.h"

void run_devices_init(run_devices *dv, const hbm_run_opts *o)
{
    memset(dv, 0, sizeof *dv);
    if (o->ndevices) {
        dv->d = hbm_xcalloc(o->ndevices, sizeof *dv->d);
        dv->n = o->ndevices;
        for (size_t i = 0; i < o->ndevices; i++) {
            dv->d[i].id = o->devices[i];
            dv->d[i].baseline = dv->d[i].used = dv->d[i].held = dv->d[i].total = HBM_UNKNOWN;
        }
    }
}

void run_devices_free(run_devices *dv)
{
    free(dv->d);
    memset(dv, 0, sizeof *dv);
}

/* Without a device list: the visible-device variable's ids, else all devices. */
static void choose_devices(run_devices *dv, const hbm_obs *obs)
{
    const char *vis = NULL;
    if (obs->ndevs)
        vis = getenv(hbm_vendor_visible_env(obs->devs[0].vendor));
    size_t cap = 0;
    if (vis && *vis) {
        char *copy = hbm_xstrdup(vis), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            hbm_grow((void **)&dv->d, &cap, dv->n, sizeof *dv->d);
            dv->d[dv->n++].id = strtoll(t, NULL, 10);
        }
        free(copy);
    } else {
        for (size_t i = 0; i < obs->ndevs; i++) {
            hbm_grow((void **)&dv->d, &cap, dv->n, sizeof *dv->d);
            dv->d[dv->n++].id = hbm_device_user_id(&obs->devs[i]);
        }
    }
    for (size_t i = 0; i < dv->n; i++)
        dv->d[i].baseline = dv->d[i].used = dv->d[i].held = dv->d[i].total = HBM_UNKNOWN;
}

int run_devices_sample(run_devices *dv, const hbm_run_opts *o, bool set_baseline,
                       hbm_obs *obs_out, hbm_err *err)
{
    if (dv->disabled)
        return hbm_err_set(err, "device memory is not observed");
    hbm_source_opts src = {0};
    if (o->src)
        src = *o->src;
    src.no_host = true; /* memory figures only: no /proc walk every sample */
    hbm_obs obs;
    hbm_obs_init(&obs);
    if (hbm_observe(&obs, &src, err) < 0) {
        hbm_obs_free(&obs);
        return -1;
    }
    if (dv->n == 0)
        choose_devices(dv, &obs);
    for (size_t i = 0; i < dv->n; i++) {
        run_devmem *m = &dv->d[i];
        hbm_device *d = hbm_obs_find_device(&obs, m->id);
        m->seen = d != NULL;
        if (!d)
            continue;
        m->total = d->memory_total_bytes;
        m->used = d->memory_used_bytes;
        if (set_baseline) {
            m->baseline = m->used;
            m->held = m->used;
        } else if (m->used > m->held) {
            m->held = m->used;
        }
    }
    if (obs_out)
        *obs_out = obs;
    else
        hbm_obs_free(&obs);
    return 0;
}
