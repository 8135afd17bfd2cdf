/* The supervisor (docs/run.md): runs one command as a child so that stopping it always gives the
 * device back. hbmctl is a child subreaper (and a correct PID 1), starts the child in its own
 * process group (and session on request), in its own cgroup v2 leaf when one can be made,
 * forwards signals to the child's group, and on stop ends every process of the tree:
 * SIGTERM, the grace period, SIGKILL, a bounded wait until none is left, a bounded wait
 * for the watched devices' memory to fall back to baseline, then removal of SysV segments
 * the tree created that nobody attaches.
 *
 * The library never prints: every event goes to the caller's log callback as one line, and
 * every kill or removal to the audit callback as one JSON object. */
#ifndef HBM_RUN_H
#define HBM_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"
#include "hbm/observe.h"

/* Exit codes of `hbmctl run` itself, as `docker run` uses them. Anything else is the
 * child's status, 128+N when signal N killed it. */
enum {
    HBM_RUN_EXIT_FAILED = 125,         /* hbmctl failed: bad usage, preflight, no device */
    HBM_RUN_EXIT_NOT_EXECUTABLE = 126, /* found but could not be executed */
    HBM_RUN_EXIT_NOT_FOUND = 127,      /* no such command */
};

typedef enum hbm_run_restart {
    HBM_RUN_RESTART_NEVER = 0,
    HBM_RUN_RESTART_ON_FAILURE, /* non-zero status or killed by a signal hbmctl did not send */
    HBM_RUN_RESTART_ALWAYS,
} hbm_run_restart;

/* "never", "on-failure", "always". */
int hbm_run_parse_restart(const char *s, hbm_run_restart *out, hbm_err *err);

/* Restart budget: at most max restarts within any window of window_s seconds. */
typedef struct hbm_run_budget {
    int max;         /* 0 = no restarts at all */
    double window_s; /* INFINITY when the budget has no window ("5") */
} hbm_run_budget;

/* "5/1d", "3/10m", "5" (no window), "0". */
int hbm_run_parse_budget(const char *s, hbm_run_budget *out, hbm_err *err);

/* Whether one more restart at time now fits, given the times of past restarts (any order). */
bool hbm_run_budget_allows(const hbm_run_budget *b, const double *past, size_t npast, double now);

/* Delay before restart number `attempt` (1 = first after a failure): base doubled per
 * attempt, capped at cap_s. */
double hbm_run_backoff(double base_s, unsigned attempt, double cap_s);

/* Whether a child status asks for a restart under the policy. stopped_by_us: hbmctl was
 * told to stop (SIGTERM/SIGINT), which never restarts. */
bool hbm_run_wants_restart(hbm_run_restart policy, int status, bool stopped_by_us);

/* The status a shell reports for a wait(2) status: code, or 128+N for signal N. */
int hbm_run_exit_code(int wstatus);

/* --expandable-segments: the allocator setting to put into PYTORCH_NPU_ALLOC_CONF /
 * PYTORCH_CUDA_ALLOC_CONF given its current value (NULL or "" when unset). Returns 1 and
 * an owned *out when it should be set, 0 with *why when it must be left alone (it already
 * names expandable_segments, or uses max_split_size_mb, which cannot be combined). */
int hbm_run_alloc_conf(const char *current, char **out, char *why, size_t nwhy);

/* "3" -> count 3; "0,1", "4-7", "5," -> a list of device ids (ascending, no repeats).
 * *ids is owned by the caller (free()). */
int hbm_run_parse_devices(const char *s, size_t *count, int64_t **ids, size_t *nids,
                          hbm_err *err);

/* One event line (no prefix, no newline); ctx is the caller's. */
typedef void (*hbm_run_log_fn)(void *ctx, const char *line);
/* One action taken (kill, removal) as a JSON object; the callee takes the reference. */
typedef void (*hbm_run_audit_fn)(void *ctx, json_t *event);

typedef struct hbm_run_opts {
    char *const *argv;         /* borrowed; NULL-terminated command, argv[0] looked up in PATH */
    bool setsid;               /* child in its own session (no controlling terminal) */
    bool no_cgroup;            /* do not make a cgroup v2 leaf even when possible */
    double grace_s;            /* SIGTERM -> SIGKILL (default 30) */
    double kill_wait_s;        /* bound on waiting for SIGKILLed processes (default 10) */
    double release_timeout_s;  /* bound on waiting for device memory (default 60) */

    hbm_run_restart restart;
    hbm_run_budget budget;
    double backoff_s;          /* first restart delay, doubled each time (default 1) */
    double backoff_max_s;      /* cap (default 60) */

    /* device memory: watched devices (user ids: logic id on Ascend, index on NVIDIA) */
    const hbm_source_opts *src; /* borrowed; how to observe devices (NULL = auto) */
    const int64_t *devices;     /* borrowed */
    size_t ndevices;
    double restart_on_mem;      /* ratio 0..1; NAN = off */
    double mem_window_s;        /* over the threshold this long -> drain (default 60) */
    double mem_interval_s;      /* sampling period (default 5) */

    const char *health_url;     /* borrowed; NULL = none */
    double health_interval_s;   /* periodic check (default 10) */
    double health_timeout_s;    /* one request (default 5) */
    int health_retries;         /* consecutive failures that make it unhealthy (default 3) */
    double ready_timeout_s;     /* readiness wait bound; 0 = unbounded */
    /* progress: the server's /metrics read at every health check (hbm/progress.h); work
     * running or waiting and no token for stall_s is unhealthy at once */
    const char *metrics_url;    /* borrowed; NULL = no progress check */
    double stall_s;             /* > 0 with metrics_url */

    hbm_run_log_fn log;         /* required */
    hbm_run_audit_fn audit;     /* may be NULL */
    void *ctx;                  /* passed to log and audit */
} hbm_run_opts;

/* Defaults for everything; argv, log left NULL. */
void hbm_run_opts_init(hbm_run_opts *o);

/* What the last stop did (the summary line's facts). */
typedef struct hbm_run_result {
    int exit_code;             /* what hbmctl run exits with */
    int restarts;
    int stalls;                /* progress checks that found the server stalled */
    size_t stopped;            /* processes that ended after SIGTERM (all stops) */
    size_t killed;             /* processes that needed SIGKILL */
    size_t survivors;          /* still there after the bounded wait (D state, ...) */
    size_t segments_removed;
    char *summary;             /* owned: the one summary line */
} hbm_run_result;

void hbm_run_result_free(hbm_run_result *r);

/* Runs the command to the end (restarts included). Returns 0 with r->exit_code set (also
 * for 125/126/127 when the command could not start), -1 when hbmctl cannot supervise at
 * all (err says why; the caller exits 125). Must be called from a single-threaded process,
 * which it leaves with the forwarded signals and SIGCHLD blocked: the caller is expected
 * to exit with r->exit_code, and a late SIGTERM must not pre-empt that. */
int hbm_run_supervise(const hbm_run_opts *o, hbm_run_result *r, hbm_err *err);

#endif
