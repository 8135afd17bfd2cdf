/* Human rendering of doctor findings, shared by `doctor` and `clean`. */
#ifndef HBM_CLI_FINDINGS_H
#define HBM_CLI_FINDINGS_H

#include <stdio.h>

#include "hbm/doctor.h"
#include "hbm/obs.h"

/* The verdict line, a table (severity, id, device, summary) and one block per finding
 * (summary, evidence, remedy, clean action), wrapped to 100 columns. */
void cli_print_findings(FILE *f, const hbm_obs *obs, const hbm_findings *fs);

/* Writes text after a label of width indent, wrapped at 100 columns. */
void cli_wrap(FILE *f, const char *label, int indent, const char *text);

#endif
