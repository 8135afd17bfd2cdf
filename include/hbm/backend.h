/* Device backends: one file per vendor source behind one small interface.
 * Each backend fills the devices (and topology when it knows it) of an observation. */
#ifndef HBM_BACKEND_H
#define HBM_BACKEND_H

#include <stdbool.h>

#include "hbm/err.h"
#include "hbm/obs.h"

typedef struct hbm_backend {
    const char *name;
    /* 1 when the source is present (a tool on PATH), 0 when absent, with a message in err
     * saying why; the probe must be cheap and leave nothing loaded. NULL for a vendor
     * library: loading one runs its constructors, which may wait on a wedged driver, so
     * only observe loads it, under the deadline, and says there when it cannot. */
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

/* True while a vendor call (or the loading of a vendor library) abandoned at its deadline
 * has not returned. A library still loading holds the dynamic loader's lock, which the
 * destructors run by exit() wait for: a process in this state leaves with _exit. */
bool hbm_backend_wedged(void);

#endif
