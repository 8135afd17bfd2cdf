/* The bridge from an observation to the planner: the live devices a launch would use, their
 * memory as the framework sees it and who holds it, put into a plan input. `plan --device
 * auto` and `run --preflight` both plan through it, so they give the same figures. It sits
 * above observe and plan (which never call each other) and below the command line. */
#ifndef HBM_PREFLIGHT_H
#define HBM_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"
#include "hbm/explain.h"
#include "hbm/lease.h"
#include "hbm/obs.h"
#include "hbm/observe.h"
#include "hbm/plan.h"

/* What a plan input borrows from the observation, owned here so the observation can go. */
typedef struct hbm_preflight_live {
    char name[64];            /* the first device's name ("device" when it has none) */
    hbm_plan_holder *holders; /* owned: every process on the devices used */
    size_t nholders;
    int64_t *ids;             /* owned: the devices used, user ids */
    size_t nids;
    char *visible;            /* owned: "VAR=value" when the visible-device variable chose */
    char *partial;            /* owned: why the observation was a fragment, NULL when whole */
} hbm_preflight_live;

/* `plan --device auto`: the first ndev devices that the vendor's visible-device variable
 * (CUDA_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES, read from the environment) leaves, in
 * its order, as the framework would see them (all devices when it is unset). Fills in's
 * platform, memory (the smallest total and free among them), holders and device ids,
 * borrowing from live. Returns 0, or -1 with err saying why no plan can be made on them. */
int hbm_preflight_live_devices(hbm_obs *obs, int64_t ndev, hbm_plan_input *in,
                               hbm_preflight_live *live, hbm_err *err);

/* The devices a visible-device variable's value leaves, in its order: CUDA takes indices
 * or GPU- UUID prefixes and stops at the first entry it cannot use; the Ascend runtime
 * takes logic ids and refuses a list out of range or out of order. Fills out (indices into
 * obs->devs, at most cap) and returns their count, or -1 with the reason in why; a
 * CUDA list cut short returns the count with the reason in why all the same. */
long hbm_preflight_visible(hbm_obs *obs, hbm_vendor vendor, const char *value, size_t *out,
                           size_t cap, char *why, size_t whylen);

void hbm_preflight_live_free(hbm_preflight_live *live);

/* `run --preflight`'s verdict on a launch: the device judged and the plan on it. */
typedef struct hbm_preflight_verdict {
    int64_t device;           /* its user id */
    char device_name[64];     /* as the driver names it */
    bool fits;                /* the plan says the launch starts: run lets it */
    hbm_plan_result plan;     /* owned: the reasons and the changes that make it fit */
} hbm_preflight_verdict;

/* The device run's preflight judges: among the chosen (indices into obs->devs; NULL or none
 * when run picks no devices) the one with the least free memory, else the first the
 * visible-device variable names, else the first device. NULL when there is none. */
hbm_device *hbm_preflight_device(hbm_obs *obs, const size_t *chosen, size_t nchosen);

/* Plans COMMAND's launch (its serving flags, argv[0..argc)) of model on the device
 * hbm_preflight_device picks, with the same figures as `plan --device auto`. Returns 0 with
 * the verdict, or -1 with err saying why there is no verdict (no device, a bad flag, a
 * model that cannot be read): run refuses then too. */
int hbm_preflight_run(hbm_obs *obs, const size_t *chosen, size_t nchosen, const char *model,
                      int argc, char **argv, hbm_preflight_verdict *out, hbm_err *err);

void hbm_preflight_verdict_free(hbm_preflight_verdict *v);

/* The device `plan` plans for, as its options name it. */
typedef struct hbm_preflight_target {
    const char *device;          /* a device table name, "auto" (the live host), or NULL */
    int64_t mem_bytes;           /* total memory as the framework sees it, HBM_UNKNOWN */
    int64_t free_bytes;          /* free at start-up, HBM_UNKNOWN: all of it, or live */
    hbm_plan_platform platform;  /* HBM_PLAN_PLATFORM_UNKNOWN when not given */
    int64_t serve;               /* planning backwards: requests to serve (the planner
                                  * chooses the devices then); 0 when not asked */
} hbm_preflight_target;

/* True when target asks for the live host (so an observation is wanted). */
bool hbm_preflight_target_live(const hbm_preflight_target *t);

/* Fills in's device facts from target: the table's row, --mem and --free over it, the
 * live devices of obs for "auto" (obs is read only then; live keeps what in borrows).
 * Returns 0, or -1 with err saying which device is missing or impossible. */
int hbm_preflight_target_input(const hbm_preflight_target *t, hbm_obs *obs,
                               hbm_plan_input *in, hbm_preflight_live *live, hbm_err *err);

/* `plan`: in planned on target's device (hbm_preflight_target_input), forwards, or with
 * t->serve backwards: the cheapest launch that serves that many requests. Returns 1 when
 * the launch starts (serves them), 0 when it does not, -1 with err when there is no plan. */
int hbm_preflight_plan(const hbm_preflight_target *t, hbm_obs *obs, hbm_plan_input *in,
                       hbm_plan_result *res, hbm_err *err);

/* What `run` does before the start. */
typedef struct hbm_preflight_start_opts {
    const hbm_source_opts *src; /* where to observe */
    size_t count;               /* --devices N: devices to pick (0: none) */
    const int64_t *ids;         /* --devices LIST: only these (nids of them) */
    size_t nids;
    const char *lease_name;     /* the leases' name */
    const char *model;          /* --preflight MODEL_DIR, NULL when not asked */
    int argc;                   /* COMMAND and its arguments: the serving flags */
    char **argv;
} hbm_preflight_start_opts;

typedef enum hbm_preflight_outcome {
    HBM_PREFLIGHT_GO,         /* start the command */
    HBM_PREFLIGHT_NO_DEVICES, /* too few free devices: pick.refused says why */
    HBM_PREFLIGHT_REFUSED,    /* the plan says the launch fails: verdict says why */
} hbm_preflight_outcome;

typedef struct hbm_preflight_start {
    hbm_preflight_outcome outcome;
    bool observed;               /* devices were observed (--devices or --preflight) */
    bool vendor_known;           /* ... and some were seen: vendor is theirs */
    hbm_vendor vendor;
    hbm_pick_result pick;        /* owned: the devices chosen and leased (n 0 when none) */
    bool judged;                 /* a preflight verdict was made */
    hbm_preflight_verdict verdict; /* owned */
} hbm_preflight_start;

/* Observes when devices are to be picked or a launch judged, picks and leases the devices
 * (their lease files closed on exec: the command's tree must not keep them), then judges
 * the launch on them. Returns 0 with the outcome, or -1 with err naming the step that
 * failed (the observation, --devices, preflight): run refuses to start then. */
int hbm_preflight_start_run(const hbm_preflight_start_opts *o, hbm_preflight_start *out,
                            hbm_err *err);

/* Frees what out holds, its leases too. */
void hbm_preflight_start_free(hbm_preflight_start *out);

/* `explain`'s live checks and the planner's figures for its findings. A vLLM log names its
 * launch (the "non-default args" line) and its release; with the model directory and the
 * device, the planner says what the failing step needed, what the launch left for it, and
 * what each remedy's flag value gives, every figure re-planned. */
typedef enum hbm_preflight_live_mode {
    HBM_PREFLIGHT_LIVE_AUTO, /* when a device backend answers (or a snapshot is given) */
    HBM_PREFLIGHT_LIVE_ON,   /* --live: host facts answer without a device backend */
    HBM_PREFLIGHT_LIVE_OFF,  /* --no-live: only the log */
} hbm_preflight_live_mode;

typedef struct hbm_preflight_explain_opts {
    const hbm_source_opts *src;   /* where the live checks look (a snapshot, a root) */
    hbm_preflight_live_mode live;
    const char *model;  /* --model: the model directory (default: the launch's, when local) */
    const char *device; /* --device: a device table name */
    int64_t mem;        /* --mem: total device memory, HBM_UNKNOWN when not given */
    char **launch;      /* the words after '--' (a vllm serve line), over the log's own */
    int nlaunch;
} hbm_preflight_explain_opts;

/* The largest --max-num-seqs below the dummy requests that passes: with the failure
 * predicted, the sampler fits what is left; otherwise it needs at most half of now. */
typedef struct hbm_preflight_seqs_fix {
    int64_t max_num_seqs;    /* 0 when no smaller value is enough */
    int64_t sampler_bytes;   /* the sampler's need at that value */
    int64_t gained_bytes;    /* free beside the sampler, more than now (<= 0: nothing) */
    int64_t kv_cache_tokens;
    bool absorbed;           /* the KV cache takes most of what it saves (the profile run
                              * counted the sampler) */
} hbm_preflight_seqs_fix;

/* The --gpu-memory-utilization that leaves the shortfall (or half the need) outside the
 * budget, re-planned. */
typedef struct hbm_preflight_util_fix {
    double gpu_memory_utilization; /* NAN when no lower value leaves that much */
    int64_t free_bytes;            /* free beside the sampler at that value */
    int64_t kv_cache_tokens;
} hbm_preflight_util_fix;

/* The planner's figures for one finding. */
typedef struct hbm_preflight_figures {
    bool sized;             /* the planner sizes this finding; nothing below is set if not */
    char *skipped;          /* owned: why there are no figures, NULL when planned */
    char *model;            /* owned: the model planned */
    hbm_plan_result plan;   /* owned: the launch as the log and the options give it */
    int64_t headroom_bytes; /* free when the sampler warms up (after the KV cache, the
                             * weights and the graphs); negative when short */
    bool predicted;         /* headroom_bytes < the sampler's need */
    hbm_preflight_seqs_fix seqs;
    hbm_preflight_util_fix util;
} hbm_preflight_figures;

typedef struct hbm_preflight_explained {
    hbm_preflight_figures *figures; /* owned: one per finding of the report */
    size_t nfigures;
    char live_note[1400];           /* why the live checks were skipped, "" when not */
} hbm_preflight_explained;

/* After the log is read: observes (o->src) when a finding asks a live check, or when the
 * planner has a finding to size and no device is given (this host's first device then),
 * applies the live checks to rep and plans each finding the planner sizes. What could not
 * be done is said in out->live_note and each figure's skipped. */
void hbm_preflight_explain(hbm_explain_report *rep, const hbm_catalog *cat,
                           const hbm_preflight_explain_opts *o, hbm_preflight_explained *out);

/* `explain --json`: rep's JSON, each sized finding's `plan`, the log, the catalogue path,
 * the live note. */
json_t *hbm_preflight_explain_json(const hbm_explain_report *rep,
                                   const hbm_preflight_explained *ex, const char *log,
                                   const char *catalog);

void hbm_preflight_explained_free(hbm_preflight_explained *ex);

#endif
