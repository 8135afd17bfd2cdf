/* Device backends: one file per vendor source behind one small interface.
 * Each backend fills the devices (and topology when it knows it) of an observation. */
#ifndef HBM_BACKEND_H
#define HBM_BACKEND_H

#include "hbm/err.h"
#include "hbm/obs.h"

typedef struct hbm_backend {
    const char *name;
    /* 1 when the source is present (library loads, tool on PATH), 0 when absent, with a
     * message in err saying why; the probe must be cheap and leave nothing loaded. */
    int (*available)(hbm_err *err);
    /* Fills obs->devs (and topo, driver_version). Each vendor call (or run of a tool) may
     * take at most timeout seconds (<= 0: no bound); past it, or while a call abandoned
     * earlier has not returned, fails with HBM_ERR_HUNG and err naming the call. */
    int (*observe)(hbm_obs *obs, double timeout, hbm_err *err);
} hbm_backend;

extern const hbm_backend hbm_backend_nvml;
extern const hbm_backend hbm_backend_dcmi;
extern const hbm_backend hbm_backend_npusmi; /* runs `npu-smi info` and reads its text */

/* The process is stopping: every wait for a vendor call ends now (it fails saying so) and
 * no new one starts; an exporter's SIGTERM need not wait for a wedged driver. */
void hbm_backend_stop(void);

#endif
