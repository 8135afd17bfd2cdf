/* Progress of an inference server, from its own Prometheus metrics (docs/metrics.md,
 * "Server progress"). A server whose /health answers can still be hung: requests running or
 * waiting and no token produced. The engine's token counters tell: they advance on every
 * step that does work.
 *
 * One sample is the request gauges and token counters of each engine behind a /metrics page
 * (vLLM V0 and V1, SGLang, MindIE), keyed by model name and engine index. A tracker keeps the
 * previous sample per engine and decides progressing / idle / stalled; the tracker
 * round-trips through a small state file so a one-shot probe can judge across runs. */
#ifndef HBM_PROGRESS_H
#define HBM_PROGRESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "hbm/err.h"
#include "hbm/http.h"

/* ---- Prometheus text format (version 0.0.4) ------------------------------------------- */

#define HBM_PROM_MAX_LABELS 16

typedef struct hbm_prom_sample {
    const char *name; /* borrowed for the callback's duration */
    size_t nlabels;
    const char *label_names[HBM_PROM_MAX_LABELS];
    const char *label_values[HBM_PROM_MAX_LABELS]; /* unescaped */
    double value;                                  /* NaN and +-Inf as written */
    int line;
} hbm_prom_sample;

/* Called per sample line; return non-zero to stop (hbm_prom_parse then returns 0). */
typedef int (*hbm_prom_fn)(const hbm_prom_sample *s, void *ctx);

/* Reads text (len bytes, need not be NUL-terminated). Comments, HELP and TYPE lines are
 * skipped. Returns 0, or -1 with "ORIGIN:LINE: why" in err at the first malformed line. */
int hbm_prom_parse(const char *text, size_t len, const char *origin, hbm_prom_fn fn, void *ctx,
                   hbm_err *err);

/* The value of label name in s, or NULL. */
const char *hbm_prom_label(const hbm_prom_sample *s, const char *name);

/* ---- progress ----------------------------------------------------------------------- */

typedef enum hbm_progress_state {
    HBM_PROGRESS_UNKNOWN = 0, /* no engine metrics, or the first sample with work */
    HBM_PROGRESS_PROGRESSING, /* tokens advanced, or work but still within --stall */
    HBM_PROGRESS_IDLE,        /* nothing running or waiting */
    HBM_PROGRESS_STALLED,     /* work running or waiting and no token for --stall */
} hbm_progress_state;

const char *hbm_progress_state_name(hbm_progress_state s);

typedef struct hbm_progress_engine {
    char kind[16];     /* "vllm", "sglang", "mindie" */
    char model[160];   /* model_name label; "" when absent */
    char engine[32];   /* engine label (vLLM V1's engine index); "" when absent */
    /* this sample (NAN when the server does not report it) */
    double running, waiting; /* requests; vLLM V0's swapped count as waiting */
    double tokens;           /* prompt + generation tokens so far (or the iteration sum) */
    /* judged against the previous sample */
    hbm_progress_state state;
    bool judged;           /* false on the first sample of this engine */
    bool reset;            /* counters went backwards: the server restarted */
    double tokens_per_s;   /* since the previous sample; NAN when not judged */
    double since_token_s;  /* seconds since tokens last advanced; NAN when never seen */
    double stalled_for_s;  /* seconds of work without a token (0 when not busy) */
    /* history carried to the next sample (wall-clock unix seconds) */
    double at;            /* this sample */
    double last_token_at; /* last time tokens advanced (or the first sample) */
    double busy_since;    /* start of the current busy stretch without a token; 0 = not */
} hbm_progress_engine;

typedef struct hbm_progress {
    hbm_progress_engine *e; /* owned */
    size_t n, cap;
} hbm_progress;

void hbm_progress_init(hbm_progress *p);
void hbm_progress_free(hbm_progress *p);

/* The engines in a /metrics page (a sample, nothing judged yet). An empty page or one with
 * no engine metric gives n == 0 (state unknown). -1 on a malformed page. */
int hbm_progress_read(const char *text, size_t len, const char *origin, hbm_progress *out,
                      hbm_err *err);

/* Judges sample (read now, at unix time now) against the history in track, then replaces
 * track's engines by the sample's, carrying their history. stall_s > 0. */
void hbm_progress_judge(hbm_progress *track, hbm_progress *sample, double now, double stall_s);

/* The engine that decides a server's health: a stalled one first, then unknown, then
 * progressing, then idle. NULL when there is none. */
const hbm_progress_engine *hbm_progress_worst(const hbm_progress *p);

/* One line, e.g. "stalled: 3 running, 12 waiting, no token for 95s". */
void hbm_progress_line(const hbm_progress_engine *e, char *buf, size_t n);

/* {"kind","model","engine","state","judged","running","waiting","tokens",
 *  "tokens_per_second","seconds_since_progress","stalled_seconds"}; unknowns null. */
json_t *hbm_progress_engine_json(const hbm_progress_engine *e);

/* GETs url and reads it into sample. Returns 0, or -1 with err; res tells a request that
 * failed or did not answer 2xx from a malformed page (answered, 2xx, and still -1). */
int hbm_progress_fetch(const char *url, double timeout_s, hbm_progress *sample,
                       hbm_http_result *res, hbm_err *err);

/* url without user:password@ (for anything printed, logged or exported). */
void hbm_progress_url_safe(const char *url, char *buf, size_t n);

/* "scheme://host:port/metrics" from any URL of the same server (a --health-url). */
void hbm_progress_metrics_url(const char *url, char *buf, size_t n);

/* ---- servers watched over time (watch, exporter) -------------------------------------- */

typedef struct hbm_progress_server {
    char *url;          /* owned, as given */
    char safe[512];     /* the URL without credentials: what is shown and exported */
    hbm_progress track; /* engines of the last sample, judged */
    bool sampled;       /* a sample was tried */
    bool up;            /* the last sample was read */
    char error[512];    /* why it was not */
} hbm_progress_server;

typedef struct hbm_progress_servers {
    hbm_progress_server *s; /* owned */
    size_t n, cap;
    double stall_s;   /* > 0 */
    double timeout_s; /* one request */
} hbm_progress_servers;

void hbm_progress_servers_init(hbm_progress_servers *set, double stall_s, double timeout_s);
void hbm_progress_servers_add(hbm_progress_servers *set, const char *url);
/* Samples every server once (sequentially, each bounded by timeout_s) and judges it. */
void hbm_progress_servers_sample(hbm_progress_servers *set);
void hbm_progress_servers_free(hbm_progress_servers *set);

/* ---- the state file (for one-shot probes) --------------------------------------------- */

/* Default path for url: /run/hbmctl/progress-HASH.json. */
void hbm_progress_state_path(const char *url, char *buf, size_t n);

/* Loads the history of url into track. Returns 0 when loaded, 1 when there is none to use
 * (missing, corrupt, another URL's, from the future): why says which, for the line. */
int hbm_progress_state_load(const char *path, const char *url, hbm_progress *track, char *why,
                            size_t whyn);

/* Writes track for url atomically (a temporary file in the same directory, fsync, rename);
 * creates the directory when missing. */
int hbm_progress_state_save(const char *path, const char *url, const hbm_progress *track,
                            hbm_err *err);

#endif
