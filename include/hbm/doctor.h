/* Findings, safe clean-up actions and the audit log (docs/doctor.md).
 *
 * Findings are a pure function of one observation (live or a snapshot): the same input
 * always yields the same findings. Each names what is wrong, the evidence, the remedy in
 * words and the action `clean` would take. Actions are planned against safety rules and
 * performed only on request, each signal through a pidfd after re-checking the process
 * start time; every action performed is appended to the audit log. */
#ifndef HBM_DOCTOR_H
#define HBM_DOCTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hbm/audit.h"
#include "hbm/err.h"
#include "hbm/obs.h"

typedef enum hbm_severity {
    HBM_SEV_INFO = 0,
    HBM_SEV_WARNING,
    HBM_SEV_CRITICAL,
} hbm_severity;

typedef enum hbm_action_kind {
    HBM_ACT_NONE = 0,
    HBM_ACT_KILL,       /* SIGTERM, grace, SIGKILL: pid + start time */
    HBM_ACT_SYSV_RMID,  /* shmctl(IPC_RMID): shmid + key */
    HBM_ACT_SHM_UNLINK, /* unlink a /dev/shm object: path */
} hbm_action_kind;

typedef struct hbm_action {
    hbm_action_kind kind;
    int pid;            /* KILL */
    uint64_t starttime; /* KILL: identity observed, checked again before each signal */
    int shmid;          /* SYSV_RMID */
    int64_t key;        /* SYSV_RMID */
    char path[256];     /* SHM_UNLINK */
    char text[200];     /* what it does, in words */
} hbm_action;

typedef struct hbm_finding {
    char id[40];          /* stable id, e.g. "orphan-holder" (docs/doctor.md) */
    int rule;             /* its entry in the rule registry (hbm_doctor_rule_at) */
    hbm_severity severity;
    int64_t device;       /* user id of the device concerned, HBM_UNKNOWN for host findings */
    char summary[240];
    json_t *evidence;     /* owned object: pids, sizes, paths, numbers */
    char remedy[600];
    hbm_action action;    /* what clean does; kind NONE when it does nothing */
} hbm_finding;

typedef struct hbm_findings {
    hbm_finding *items;   /* owned; sorted by severity (critical first), then id, device */
    size_t n;
    size_t cap;
} hbm_findings;

typedef struct hbm_doctor_opts {
    double devshm_full_ratio; /* /dev/shm use that counts as nearly full; 0 = 0.90 */
    double now;               /* unix seconds for ages; 0 = obs->captured_at */
} hbm_doctor_opts;

/* One rule of the registry: a finding doctor can raise, as docs/doctor.md describes it. */
typedef struct hbm_doctor_rule {
    const char *id;       /* the finding's id */
    const char *severity; /* "critical", or when it varies, the rule ("warning (critical at 98%)") */
    const char *when;     /* what raises it */
    const char *evidence; /* the evidence fields */
    const char *remedy;
    hbm_action_kind action; /* what clean does, HBM_ACT_NONE when nothing */
    const char *clean;      /* that action in words */
} hbm_doctor_rule;

size_t hbm_doctor_nrules(void);
/* Rule i (0 .. hbm_doctor_nrules() - 1), NULL past the end. */
const hbm_doctor_rule *hbm_doctor_rule_at(size_t i);
/* {"rules": [{"id","severity","when","evidence","remedy","action","clean"}]}; action is the
 * clean action's kind, null when clean does nothing. */
json_t *hbm_doctor_rules_json(void);

/* Derives every finding of obs (server-stalled from the servers' samples obs carries:
 * hbm_observe_servers) into out (initialised by the call). Never fails. */
void hbm_doctor_findings(const hbm_obs *obs, const hbm_doctor_opts *opts, hbm_findings *out);
void hbm_findings_free(hbm_findings *f);

const char *hbm_severity_name(hbm_severity s);
const char *hbm_action_kind_name(hbm_action_kind k);

/* {"findings": [{"id","severity","summary","evidence","remedy","action","device"}]}. */
json_t *hbm_findings_to_json(const hbm_findings *f);
/* One line: "3 problems: 1 critical (orphan-holder), 2 warnings (...)" or "no problems". */
void hbm_findings_verdict(const hbm_findings *f, char *buf, size_t n);
/* Findings of severity warning or worse. */
size_t hbm_findings_problems(const hbm_findings *f);

/* ---- clean ------------------------------------------------------------------------------ */

/* Pointers are borrowed. */
typedef struct hbm_clean_opts {
    double grace_s;          /* SIGTERM -> SIGKILL; default 10 */
    const int *named_pids;   /* --pid: processes the user names (also in running containers) */
    size_t nnamed;
    const char *audit_path;  /* NULL = hbm_audit_path(NULL) */
    const char *command;     /* recorded in the audit log, e.g. "hbmctl clean --apply" */
    const char *only;        /* --only: comma-separated finding ids whose actions the plan
                                takes (named pids aside); NULL = all */
    double min_age_s;        /* --min-age: a leftover younger than this waits; < 0 none */
    long max_actions;        /* --max-actions: steps done per run, the rest deferred; <= 0
                                no limit */
    const char *state_path;  /* where each leftover's first sighting is kept between runs
                                (hbm_clean_policy); NULL = HBM_CLEAN_STATE_DEFAULT */
} hbm_clean_opts;

#define HBM_CLEAN_STATE_DEFAULT "/run/hbmctl/clean-seen.json"
/* The policy spelling (clean --policy): what may be touched unattended and when. */
#define HBM_CLEAN_POLICY_ONLY "orphan-holder,stale-sysv-shm,stale-posix-shm"
#define HBM_CLEAN_POLICY_MIN_AGE 600.0
#define HBM_CLEAN_POLICY_MAX_ACTIONS 5

/* --policy: the policy's spelling where opts leave it open (only < 0 or NULL: not given). */
void hbm_clean_opts_policy(hbm_clean_opts *opts);

/* The first comma-separated word of list that is no finding id with a clean action (into
 * bad, "" when every word is one). Returns true when all are. */
bool hbm_clean_only_ok(const char *list, char *bad, size_t n);

typedef struct hbm_clean_step {
    hbm_action action;
    char finding_id[40];
    int64_t device;
    bool allowed;            /* false: a safety rule keeps it (why says which) */
    char why[240];
    bool done;               /* performed (apply) */
    bool failed;
    char result[300];        /* what happened */
    double age_s;            /* how long it has been a leftover (hbm_clean_policy); NAN unknown */
    const char *age_basis;   /* static: "first seen", "process start", "segment ctime",
                                "file mtime"; NULL unknown */
    bool waiting;            /* kept because younger than min_age (not a safety refusal) */
    bool deferred;           /* kept by max_actions: the next run takes it */
} hbm_clean_step;

typedef struct hbm_clean_plan {
    hbm_clean_step *steps;   /* owned */
    size_t n;
    size_t cap;
} hbm_clean_plan;

/* Builds the plan from the findings' actions plus one kill per named pid that holds a
 * device in obs; applies the safety rules (never PID 1, never hbmctl or its ancestors,
 * never a process in a running container unless named). Pure apart from the ancestor walk. */
void hbm_clean_plan_make(const hbm_obs *obs, const hbm_findings *f, const hbm_clean_opts *opts,
                         hbm_clean_plan *plan);
void hbm_clean_plan_free(hbm_clean_plan *plan);

/* The remediation policy on a plan: each allowed step's age (how long it has been seen as a
 * leftover, from the state file at opts->state_path, which it updates: one record per
 * leftover, pid + start time, segment id + key + ctime, /dev/shm path + inode; where the
 * file cannot be kept, the process's start, the segment's ctime or dtime, the file's
 * mtime), then steps younger than min_age_s wait and those past max_actions (youngest
 * first) are deferred; both are no longer allowed. With neither limit (min_age_s < 0,
 * max_actions <= 0) it does nothing. Returns 0, or -1 with err saying why
 * the state file could not be kept (the ages then come from the objects themselves). */
int hbm_clean_policy(const hbm_obs *obs, hbm_clean_plan *plan, const hbm_clean_opts *opts,
                     double now, hbm_err *err);
/* True when every device on which a step ended a process shows less memory in after than
 * in before (drivers free memory asynchronously: clean observes again until then). */
bool hbm_clean_settled(const hbm_obs *before, const hbm_obs *after, const hbm_clean_plan *plan);
/* Per device of before: [{device, before_bytes, after_bytes, released_bytes}], null where
 * not known (clean --json's "released"). */
json_t *hbm_clean_released(const hbm_obs *before, const hbm_obs *after);
/* The steps as JSON (clean --json's "steps"). */
json_t *hbm_clean_steps_json(const hbm_clean_plan *plan);
/* clean --json: {dry_run, backend, backend_why (why no device source, null), steps}, and
 * after an apply {released (taken; NULL: null), audit_log}; audit NULL: no apply. */
json_t *hbm_clean_json(const hbm_obs *obs, const hbm_clean_plan *plan, bool dry_run,
                       json_t *released, const char *audit);

/* A plan's steps by what becomes of them: every step is exactly one. */
typedef struct hbm_clean_counts {
    size_t allowed;  /* to be done */
    size_t waiting;  /* under --min-age */
    size_t deferred; /* past --max-actions */
    size_t kept;     /* by a safety rule */
} hbm_clean_counts;
hbm_clean_counts hbm_clean_plan_counts(const hbm_clean_plan *plan);

/* Performs every allowed step, re-checking each object right before acting (start time;
 * SysV nattch, creator and last user; /dev/shm holders), appending one audit record per
 * step. Returns the number of steps that failed or were kept at the last check, or -1
 * when the audit log cannot be written (then nothing is done). */
int hbm_clean_apply(hbm_clean_plan *plan, const hbm_clean_opts *opts, hbm_err *err);

/* Live re-checks used by apply (exposed for tests; the SysV one is hbm_host_sysv_stale_now). */
/* 1 when no live process maps or holds the file open now (scans /proc). */
int hbm_doctor_shm_unheld_now(const char *path, char *why, size_t n);

#endif
