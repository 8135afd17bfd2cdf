/* Private to the doctor module. */
#ifndef HBM_DOCTOR_INT_H
#define HBM_DOCTOR_INT_H

#include "hbm/doctor.h"

/* The registry's entries (rules.c), one per finding id, in docs/doctor.md's order. */
enum doc_rule {
    DOC_ORPHAN_HOLDER,
    DOC_ENGINE_ORPHAN,
    DOC_ZOMBIE_HOLDER,
    DOC_STUCK_HOLDER,
    DOC_GONE_HOLDER,
    DOC_UNACCOUNTED_MEMORY,
    DOC_DEVICE_NEEDS_RESET,
    DOC_DEVICE_HUGEPAGES_FULL,
    DOC_SERVER_STALLED,
    DOC_SERVER_PROGRESS_UNKNOWN,
    DOC_STALE_SYSV_SHM,
    DOC_STALE_POSIX_SHM,
    DOC_HUGEPAGES_EXHAUSTED,
    DOC_THP_ALWAYS,
    DOC_DEVSHM_NEARLY_FULL,
    DOC_VISIBLE_DEVICE_MISSING,
    DOC_VISIBLE_DEVICE_BUSY,
    DOC_VISIBLE_DEVICES_TP_MISMATCH,
    DOC_PORT_NOT_LISTENING,
    DOC_PORT_HELD_BY_OTHER,
    DOC_NRULES
};

/* What every check reads: the observation and the options, with their defaults applied. */
typedef struct doc_ctx {
    const hbm_obs *obs;
    const hbm_doctor_opts *opts;
    double now; /* unix seconds for ages */
} doc_ctx;

/* A check judges one part of the observation and adds the findings of its rules; the
 * registry names, for each rule, the check that raises it (several rules of one family
 * share a check: a holder is judged once and is orphaned, a zombie, stuck or gone). */
typedef void doc_check(const doc_ctx *c, hbm_findings *out);
doc_check doc_check_holders, doc_check_devices, doc_check_sysv, doc_check_posix,
    doc_check_host_memory; /* findings.c */
doc_check doc_check_servers;  /* server_checks.c */
doc_check doc_check_progress; /* stalled.c */

/* Helpers every rule file uses (finding.c), so rule files never call each other. */

/* Appends a finding of rule r with an empty evidence object (its id is the registry's, set
 * when every check has run); the pointer is valid until the next add. */
hbm_finding *doc_add(hbm_findings *f, enum doc_rule r, hbm_severity sev, int64_t device,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* clean's action for a holder: SIGTERM, the grace period, SIGKILL, bound to its start time. */
void doc_kill_action(hbm_finding *x, const hbm_hproc *hp);
void doc_remedy(hbm_finding *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* JSON integer, or null for an unknown (negative) value. */
json_t *doc_jint(int64_t v);
const hbm_hproc *doc_find_proc(const hbm_obs *obs, int pid);
/* Seconds since the process started, -1 unknown. */
double doc_age(const hbm_obs *obs, const hbm_hproc *p, double now);


#endif
