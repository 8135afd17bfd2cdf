/* Device backends: one file per vendor source behind one small interface.
 * Each backend fills the devices (and topology when it knows it) of an observation. */
#ifndef HBM_BACKEND_H
#define HBM_BACKEND_H

#include <stdbool.h>

#include "hbm/err.h"
#include "hbm/obs.h"

typedef struct hbm_source_opts {
    const char *backend;  /* "auto", "nvml", "dcmi", "npu-smi", "snapshot"; NULL = auto */
    const char *snapshot; /* file (or "-") for --snapshot: a snapshot or npu-smi text */
    const char *root;     /* host root prefix for host facts; NULL = live */
    bool no_host;         /* skip the host scan (e.g. a pure device query) */
    /* auto only: when no device source works, still return the host facts with zero
     * devices, backend "none" and the reason in obs->backend_why (doctor, clean,
     * snapshot: host findings matter most when the driver is broken). */
    bool host_only_ok;
} hbm_source_opts;

typedef struct hbm_backend {
    const char *name;
    /* 1 when the source is present (library loads, tool on PATH), 0 when absent, with a
     * message in err saying why; the probe must be cheap and leave nothing loaded. */
    int (*available)(hbm_err *err);
    /* Fills obs->devs (and topo, driver_version). */
    int (*observe)(hbm_obs *obs, hbm_err *err);
} hbm_backend;

extern const hbm_backend hbm_backend_nvml;
extern const hbm_backend hbm_backend_dcmi;
extern const hbm_backend hbm_backend_npusmi; /* runs `npu-smi info` and reads its text */

/* One full observation: devices from the chosen backend (auto: the first live one that
 * is available, saying which), host facts, the driver/host join and verdicts. In auto
 * mode with none available it fails, unless opts->host_only_ok (see above).
 * With opts->snapshot set, reads that file instead (snapshot JSON or npu-smi text). */
int hbm_observe(hbm_obs *obs, const hbm_source_opts *opts, hbm_err *err);


#endif
