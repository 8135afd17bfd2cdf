/* The checks of `hbmctl probe` and of its node-problem-detector plugin mode (--npd): device
 * health and memory against a limit over an observation, an HTTP endpoint, a server's
 * progress from its /metrics, and NPD's one-line checks. Each returns its result (the exit
 * code: 0 healthy, 1 unhealthy, 2 could not check) with the reason and, for the probe, the
 * checks as JSON; the caller observes, prints and exits. */
#ifndef HBM_PROBE_H
#define HBM_PROBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"
#include "hbm/obs.h"
#include "hbm/progress.h"

/* A check's result; the worst one is the probe's exit code. */
typedef enum hbm_probe_result {
    HBM_PROBE_OK = 0,      /* healthy */
    HBM_PROBE_BAD = 1,     /* unhealthy */
    HBM_PROBE_UNKNOWN = 2, /* could not check */
} hbm_probe_result;

/* The checks of one probe, in the order they ran. */
typedef struct hbm_probe {
    json_t *checks;         /* owned array of {"check", "ok", "result", "detail", ...} */
    hbm_probe_result worst; /* BAD beats UNKNOWN beats OK */
    char first[600];        /* the detail of the first check that set worst */
    char oks[600];          /* the details of the checks that passed, "; " between, cut */
} hbm_probe;

void hbm_probe_init(hbm_probe *p);
void hbm_probe_free(hbm_probe *p);
/* Adds one check: extra (taken; NULL for none) carries its own fields, fmt its detail. */
void hbm_probe_record(hbm_probe *p, const char *check, hbm_probe_result r, json_t *extra,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* "healthy", "unhealthy", "unknown" (the JSON's words). */
const char *hbm_probe_result_name(hbm_probe_result r);
/* Why the probe ends as it does: what passed when healthy, else the first worst detail. */
const char *hbm_probe_reason(const hbm_probe *p);
/* The --json document {"status", "exit", "reason", "checks"}; the checks move into it. */
json_t *hbm_probe_json(hbm_probe *p);

/* A memory limit: a size (bytes, else HBM_UNKNOWN) or a share of the device (ratio, else
 * NAN); neither: health alone. */
typedef struct hbm_probe_limit {
    int64_t bytes;
    double ratio;
} hbm_probe_limit;

/* Health, then memory against lim, of the devices ids[0..n) of obs (every device when n
 * is 0). observed false: the observation failed, err says why. */
void hbm_probe_devices(hbm_probe *p, hbm_obs *obs, bool observed, const hbm_err *err,
                       const int64_t *ids, size_t n, hbm_probe_limit lim);

/* A GET of url within timeout seconds: healthy on 2xx; could not check when the URL cannot
 * be used or HTTP is not available here. */
void hbm_probe_url(hbm_probe *p, const char *url, double timeout);

/* A server's progress (--metrics-url): one sample judged against the one the previous run
 * left in the state file (state_file NULL: one per URL under /run/hbmctl). */
typedef struct hbm_probe_progress_opts {
    const char *url, *state_file;
    double stall, timeout; /* seconds */
} hbm_probe_progress_opts;
void hbm_probe_progress(hbm_probe *p, const hbm_probe_progress_opts *po);

/* The progress check of a judged sample: stalled is unhealthy, a first sample healthy (it
 * is judged next time), no counter could not check. c (taken) holds the check's fields. */
void hbm_probe_progress_judged(hbm_probe *p, json_t *c, const hbm_progress *track);

/* ---- node-problem-detector custom plugin (docs/kubernetes.md) ---- */

/* NPD's max_output_length default: the rest of a line is cut. */
#define HBM_NPD_LINE_MAX 80

typedef enum hbm_npd_check {
    HBM_NPD_ORPHANED,
    HBM_NPD_UNACCOUNTED,
    HBM_NPD_UNHEALTHY,
    HBM_NPD_LEAKING,
    HBM_NPD_STALLED, /* a server's progress (--metrics-url), not the devices */
} hbm_npd_check;

/* The checks' names in enum order, NULL-terminated: the words of --npd. */
extern const char *const hbm_npd_names[];

/* Whether the check needs the host's processes joined (orphans do; health and memory come
 * from the driver alone). */
bool hbm_npd_needs_host(hbm_npd_check c);

/* One device check (not HBM_NPD_STALLED) on obs: NPD's line ("ok: ...", "NPU 0 ORPHANED:
 * ...", "unknown: ...") into line, and the result (0 OK, 1 NonOK, 2 Unknown). observed
 * false: the observation failed, err says why. HBM_NPD_LEAKING appends this sample to the
 * history file and judges the staircase over it. */
hbm_probe_result hbm_npd_run(hbm_npd_check c, const hbm_obs *obs, bool observed, hbm_err *err,
                             const char *history, char *line, size_t n);

/* HBM_NPD_STALLED: the progress check alone (po->url NULL: Unknown), in NPD's line. */
hbm_probe_result hbm_npd_stalled(const hbm_probe_progress_opts *po, char *line, size_t n);

/* How many bytes of line NPD gets: at most HBM_NPD_LINE_MAX, cut on a character boundary. */
size_t hbm_npd_fit(const char *line);

#endif
