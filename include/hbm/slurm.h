/* Slurm prolog, epilog and health check (docs/slurm.md).
 *
 * Prolog: refuses a job whose devices are not FREE for a reason the job cannot fix (memory
 * of a process from outside the job, unaccounted memory, an unhealthy device) and drains the
 * node saying which. Epilog: ends every process that still holds one of the job's devices or
 * belongs to the job, removes the shared memory it left, waits (bounded) for the devices'
 * memory to return to baseline, audits every action, and drains the node when memory stays.
 * Health check: drains on a dirty or unhealthy device, resumes a node only when hbmctl's own
 * reason is on it. The node is changed only through `scontrol`, run as a child process. */
#ifndef HBM_SLURM_H
#define HBM_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "hbm/observe.h"
#include "hbm/err.h"

/* Every drain reason hbmctl writes starts with this; only such a reason is resumed. */
#define HBM_SLURM_REASON_PREFIX "hbmctl: "
#define HBM_SLURM_MAX_DEVS 64

typedef enum hbm_slurm_mode {
    HBM_SLURM_PROLOG = 0,
    HBM_SLURM_EPILOG,
    HBM_SLURM_HEALTHCHECK,
} hbm_slurm_mode;

/* What Slurm gives a prolog/epilog, borrowed strings; NULL when unset. */
typedef struct hbm_slurm_env {
    const char *job_id;       /* SLURM_JOB_ID */
    const char *node;         /* SLURMD_NODENAME (or --node) */
    const char *job_gpus;     /* SLURM_JOB_GPUS: gres/gpu indexes */
    const char *cuda_visible; /* CUDA_VISIBLE_DEVICES */
    const char *ascend_visible; /* ASCEND_RT_VISIBLE_DEVICES */
    const char *devices;      /* --devices: overrides all of the above */
} hbm_slurm_env;

typedef struct hbm_slurm_opts {
    hbm_slurm_mode mode;
    hbm_slurm_env env;
    hbm_source_opts src;
    const char *scontrol;   /* program run to read and change the node; NULL = "scontrol" */
    bool no_drain;          /* report only: never run scontrol update */
    double grace_s;         /* epilog: SIGTERM to SIGKILL; 0 = 5 s */
    double settle_s;        /* epilog: bound on the wait for memory to return; 0 = 20 s */
    const char *audit_path; /* NULL = hbm_audit_path(NULL) */
    /* Where the prolog notes a job it refused, so that job's epilog (Slurm runs it after a
     * failed prolog too) leaves the outsider for the health check; NULL = the default. */
    const char *state_dir;
} hbm_slurm_opts;

#define HBM_SLURM_STATE_DEFAULT "/run/hbmctl/slurm"

/* One process the epilog ended (or tried to). */
typedef struct hbm_slurm_kill {
    int pid;
    uint64_t starttime;
    char comm[32];
    char why[80];     /* "holds GPU 0", "in job 42's cgroup", "SLURM_JOB_ID=42 in environ" */
    bool done;
    char result[200];
} hbm_slurm_kill;

typedef struct hbm_slurm_result {
    int64_t devs[HBM_SLURM_MAX_DEVS]; /* the job's devices (user ids) */
    size_t ndevs;
    char devs_from[40];   /* which variable named them: "SLURM_JOB_GPUS", "all devices" */
    char problem[400];    /* the drain reason when something is wrong, else "" */
    hbm_slurm_kill *kills; /* owned */
    size_t nkills;
    size_t shm_removed;
    double waited_s;      /* epilog: time spent waiting for memory to return */
    bool refused_job;     /* epilog: the prolog had refused this job; nothing of it ran */
    bool drained;         /* scontrol drained the node */
    bool resumed;         /* health check: hbmctl's own drain lifted */
    char kept_reason[200]; /* the reason on a node left alone (not hbmctl's), "" if none */
    char kept_state[64];   /* the state of a node left alone, "" when hbmctl could change it */
    char kept_why[320];    /* why it was left alone, e.g. "state DOWN (DOWN is not ...)" */
} hbm_slurm_result;

/* Runs one mode. Returns 0 clean (and the node resumed when it was hbmctl's drain), 1 a
 * problem (problem filled; drained unless no_drain), -1 when it could not look or act. */
int hbm_slurm_run(const hbm_slurm_opts *opts, hbm_slurm_result *res, hbm_err *err);
void hbm_slurm_result_free(hbm_slurm_result *res);

/* "prolog", "epilog", "healthcheck"; parse: false for any other word. */
const char *hbm_slurm_mode_name(hbm_slurm_mode m);
bool hbm_slurm_mode_parse(const char *word, hbm_slurm_mode *m);
/* The job and node from Slurm's environment (SLURM_JOB_ID, else SLURM_JOBID; SLURMD_NODENAME,
 * else the short host name, written into host) and the device variables; unset or empty
 * ones NULL. */
void hbm_slurm_env_read(hbm_slurm_env *e, char *host, size_t n);
/* `hbmctl slurm --json`: {mode, node, job, devices, devices_from, problem, ended,
 * shm_removed, refused_job, drained, resumed, kept_reason, kept} (docs/slurm.md). */
json_t *hbm_slurm_result_json(const hbm_slurm_opts *o, const hbm_slurm_result *r);

/* Parses a device list: "0,1", "0-3,6" (Slurm and the visible-device variables); at most
 * max ids. "NoDevFiles" (Slurm's value for a GPU gres without device files) yields none. */
int hbm_slurm_parse_devlist(const char *s, int64_t *ids, size_t max, size_t *n, hbm_err *err);
/* The inverse, "0,1,3" (cut to fit outn; "" for none). */
void hbm_slurm_format_devlist(const int64_t *ids, size_t n, char *out, size_t outn);

/* The state and reason of one node from `scontrol show node -o NAME` output. */
typedef struct hbm_slurm_node {
    char state[64];   /* e.g. IDLE+DRAIN */
    char reason[400]; /* without Slurm's " [user@time]" suffix; "" when none */
    bool drain;       /* state has DRAIN in it */
} hbm_slurm_node;

int hbm_slurm_parse_node(const char *buf, size_t len, hbm_slurm_node *out, hbm_err *err);

/* Whether hbmctl may drain or resume this node (docs/slurm.md, "Admin states"): the base
 * state is IDLE, MIXED or ALLOCATED, no flag but COMPLETING, DRAIN, PLANNED, CLOUD or
 * DYNAMIC_NORM is set, and a DRAIN carries hbmctl's own reason. When not, why says what is
 * kept, e.g. "state DOWN+DRAIN (DOWN is not hbmctl's to change)". */
bool hbm_slurm_node_changeable(const hbm_slurm_node *n, char *why, size_t whyn);

/* A job id as Slurm prints one job: digits, optionally "_N" (array task) or "+N" (het
 * component). Anything else (a '/', "..", a space) never becomes a path or an argument. */
bool hbm_slurm_job_id_valid(const char *id);

/* True when the hostlist expression ("n1", "n[01-04,07],gpu3") names this node. */
bool hbm_slurm_hostlist_has(const char *list, size_t len, const char *name);

/* The job's device indexes on this node from `scontrol show job -d ID` output: the GRES=
 * field of the detail lines whose Nodes= names the node, gpu and npu gres ("gpu:2(IDX:0-1)",
 * "gpu:910b:1(IDX:3)"). 0 with *n = 0 when the job has none there; -1 on bad input or when
 * no detail line names the node (its devices are then unknown, not none). */
int hbm_slurm_parse_job_gres(const char *buf, size_t len, const char *node, int64_t *ids,
                             size_t max, size_t *n, hbm_err *err);

/* True when the environment block (NUL-separated, as /proc/PID/environ) holds
 * SLURM_JOB_ID=job_id (or its old name SLURM_JOBID). */
bool hbm_slurm_environ_has_job(const char *buf, size_t len, const char *job_id);
/* True when the cgroup text (/proc/PID/cgroup) places the process in job_<job_id>. */
bool hbm_slurm_cgroup_has_job(const char *buf, size_t len, const char *job_id);

#endif
