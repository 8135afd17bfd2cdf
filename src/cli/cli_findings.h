/* Human rendering of doctor findings, shared by `doctor` and `clean`, and of clean's plan. */
#ifndef HBM_CLI_FINDINGS_H
#define HBM_CLI_FINDINGS_H

#include <stdio.h>

#include "hbm/doctor.h"
#include "hbm/obs.h"
#include "wrap.h" /* cli_wrap, used with these by doctor, clean and pick */

/* The verdict line, a table (severity, id, device, summary) and one block per finding
 * (summary, evidence, remedy, clean action), wrapped to 100 columns. */
void cli_print_findings(FILE *f, const hbm_obs *obs, const hbm_findings *fs);

/* When obs has no device source (backend "none"), says so and why, wrapped, prefixed by
 * prefix ("" or "hbmctl: "); prints nothing otherwise. */
void cli_print_skipped(FILE *f, const char *prefix, const hbm_obs *obs);
/* "partial input: WHY" when the source was a fragment (a cut paste), else nothing. */
void cli_print_partial(FILE *f, const char *prefix, const hbm_obs *obs);

/* clean's plan: one line per step (do / would / keep / wait / defer) and what it does or why
 * not. */
void cli_print_clean_plan(const hbm_obs *obs, const hbm_clean_plan *plan, bool apply);
/* After --apply: one line per step taken (done / KEPT) and what happened. */
void cli_print_clean_results(const hbm_clean_plan *plan, const char *audit);
/* The per-device table of hbm_clean_released's answer. */
void cli_print_released(const json_t *rel);

#endif
