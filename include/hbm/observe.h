/* One observation of this host: a device source chosen (or a snapshot / npu-smi paste
 * read), the host facts scanned and joined with the driver's pids, verdicts applied. */
#ifndef HBM_OBSERVE_H
#define HBM_OBSERVE_H

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
    /* > 0, live only: the inference servers listening here are found and their /metrics
     * read twice this many seconds apart (obs->servers); 0 = not. */
    double progress_interval_s;
    /* Seconds each vendor call (DCMI, NVML) or npu-smi run may take before the observation
     * fails naming it (--vendor-timeout); 0 = HBM_VENDOR_TIMEOUT_DEFAULT. */
    double vendor_timeout;
} hbm_source_opts;

#define HBM_VENDOR_TIMEOUT_DEFAULT 5.0

/* One full observation: devices from the chosen backend (auto: the first live one that
 * is available, saying which), host facts, the driver/host join and verdicts. In auto
 * mode with none available it fails, unless opts->host_only_ok (see above). A driver
 * call or npu-smi run past opts->vendor_timeout fails it with HBM_ERR_HUNG (no other
 * source is tried, host_only_ok or not), err naming the call.
 * With opts->snapshot set, reads that file instead (snapshot JSON or npu-smi text). */
int hbm_observe(hbm_obs *obs, const hbm_source_opts *opts, hbm_err *err);

/* Finds the inference servers listening on this host (obs's host facts) and reads each
 * one's /metrics twice, interval_s apart, into obs->servers: network and a wait, so it runs
 * only when asked. */
void hbm_observe_servers(hbm_obs *obs, double interval_s);

#endif
