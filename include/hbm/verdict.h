/* Verdicts per device (docs/verdicts.md): processes first, then memory against the chip's idle
 * baseline, then utilisation; precedence UNHEALTHY > ORPHANED > BUSY > UNACCOUNTED > FREE.
 * Pure function of the observation: the same snapshot always gives the same verdicts. */
#ifndef HBM_VERDICT_H
#define HBM_VERDICT_H

#include "hbm/obs.h"

/* Idle memory a process-free chip of this model shows (driver, firmware, padding), in
 * bytes, from the documented table; total_bytes picks the row for unknown names. */
int64_t hbm_verdict_baseline(const char *chip_name, hbm_vendor vendor, int64_t total_bytes);


/* True when the process is by construction some server's child (vLLM's VLLM::* titled
 * EngineCore or workers, a Python multiprocessing spawn/fork child): never the server. */
bool hbm_verdict_server_child(const hbm_hproc *hp);

/* What a process on the host is to its device: live, a zombie, stuck (D) or abandoned (its
 * container or server is gone), with why in words ("" when live). The one rule the verdict,
 * doctor and clean share. */
hbm_pid_state hbm_verdict_process_state(const hbm_host *h, const hbm_hproc *hp, char *why,
                                        size_t n);

/* Joins driver-listed pids with host facts (when present) and fills device verdicts and
 * reasons. */
void hbm_verdict_apply(hbm_obs *obs);

#endif
