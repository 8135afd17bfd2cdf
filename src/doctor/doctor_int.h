/* Private to the doctor module. */
#ifndef HBM_DOCTOR_INT_H
#define HBM_DOCTOR_INT_H

#include "hbm/doctor.h"

/* Helpers every rule file uses (finding.c), so rule files never call each other. */

/* Appends a finding with an empty evidence object; the pointer is valid until the next add. */
hbm_finding *doc_add(hbm_findings *f, const char *id, hbm_severity sev, int64_t device,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void doc_remedy(hbm_finding *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* JSON integer, or null for an unknown (negative) value. */
json_t *doc_jint(int64_t v);
const hbm_hproc *doc_find_proc(const hbm_obs *obs, int pid);
/* Seconds since the process started, -1 unknown. */
double doc_age(const hbm_obs *obs, const hbm_hproc *p, double now);

/* Inference servers: visible-device variables and --port (servers.c). */
void doc_server_findings(const hbm_obs *obs, hbm_findings *out);

#endif
