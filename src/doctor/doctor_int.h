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
/* True for an inference server's process (vLLM, SGLang, MindIE, ...) that is not a zombie. */
bool doc_is_server(const hbm_hproc *p);
/* True when the server's parent is a server too (the outermost one carries findings). */
bool doc_parent_is_server(const hbm_obs *obs, const hbm_hproc *p);
/* The positive integer value of option a (or b) in a command line, else dflt. */
long doc_arg_long(const char *cmd, const char *a, const char *b, long dflt);
/* True when pid is root or one of its descendants among the recorded processes. */
bool doc_in_tree(const hbm_obs *obs, int root, int pid);

/* Progress of the servers listening here: two samples of /metrics (progress.c). */
void doc_progress_findings(const hbm_obs *obs, double interval_s, hbm_findings *out);

#endif
