/* Sampling and leak detection (docs/leak-detection.md).
 *
 * A leak detector reads one memory series (a device's used memory, or one process's memory
 * on one device), one sample at a time, and says whether the memory climbs in steps that
 * never come back down, and whether it crossed a threshold. It keeps a bounded amount of
 * state (no allocation), so one detector per device and per process is cheap.
 *
 * hbm_watch keeps one detector and one short history per device and per device process
 * across observations, keyed by the device's user id (logic id on Ascend, index on NVIDIA)
 * and the pid. */
#ifndef HBM_WATCH_H
#define HBM_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "hbm/obs.h"
#include "hbm/observe.h"
#include "hbm/progress.h"

#define HBM_LEAK_WINDOW_MAX 15 /* running-median window bound (samples) */
#define HBM_LEAK_HOLD_MAX 8    /* plateau length bound (samples) */
#define HBM_LEAK_NOISE_RING 64 /* residuals kept for the noise scale */
#define HBM_LEAK_LEVELS_MAX 32 /* staircase levels kept (base + steps) */

typedef struct hbm_leak_params {
    size_t window;          /* samples in the running median: the robust level (odd) */
    size_t hold;            /* consecutive levels within one step size that make a plateau */
    size_t steps;           /* unreturned steps that make a leak */
    int64_t step_min_bytes; /* smallest rise counted as a step, whatever the noise */
    double noise_k;         /* a step must also exceed noise_k x the noise scale */
    int64_t threshold_bytes; /* threshold crossing level; HBM_UNKNOWN = none */
    double threshold_ratio;  /* or a ratio of the total (used when bytes is unknown); NAN */
} hbm_leak_params;

/* Events of one sample (bits of hbm_leak_status.events). */
enum {
    HBM_LEAK_EV_STEP = 1 << 0,        /* a new, higher plateau was confirmed */
    HBM_LEAK_EV_RETURN = 1 << 1,      /* the level came back below an earlier step */
    HBM_LEAK_EV_LEAK = 1 << 2,        /* the staircase reached params.steps: leak reported */
    HBM_LEAK_EV_LEAK_CLEAR = 1 << 3,  /* the memory came back to the level before it */
    HBM_LEAK_EV_CROSS_UP = 1 << 4,    /* the level crossed the threshold upwards */
    HBM_LEAK_EV_CROSS_DOWN = 1 << 5,  /* back below the threshold minus hysteresis */
};

typedef struct hbm_leak_status {
    bool ready;          /* enough samples for a robust level */
    bool judging;        /* enough samples to know the noise: steps are counted */
    bool leak;           /* step growth reported (held until the memory returns) */
    bool above;          /* the level is above the threshold */
    int steps;           /* unreturned steps above the base level */
    int64_t level;       /* robust level (running median), bytes; HBM_UNKNOWN before ready */
    int64_t base;        /* the level before the current staircase */
    int64_t growth;      /* top plateau - base, bytes (0 without steps) */
    int64_t step_bytes;  /* the step size in force: max(step_min, noise_k x noise) */
    double noise_bytes;  /* robust noise scale (from residuals around the median) */
    double since;        /* time (caller's clock) of the first unreturned step; NAN */
    unsigned events;     /* HBM_LEAK_EV_* of the last sample */
} hbm_leak_status;

typedef struct hbm_leak {
    hbm_leak_params p;
    uint64_t n;                            /* samples seen */
    int64_t win[HBM_LEAK_WINDOW_MAX];      /* last samples (ring) */
    int64_t med[HBM_LEAK_HOLD_MAX + 2];    /* last robust levels (ring) */
    uint64_t nmed;
    uint64_t jump_start, jump_end;         /* nmed indexes of the last run of fast rises */
    double resid[HBM_LEAK_NOISE_RING];     /* |sample - centred median| (ring) */
    uint64_t nresid;
    int64_t levels[HBM_LEAK_LEVELS_MAX];   /* staircase: base, then each step's plateau */
    double level_t[HBM_LEAK_LEVELS_MAX];   /* when each level was confirmed */
    size_t nlevels;
    hbm_leak_status st;
} hbm_leak;

/* Defaults: window 5, hold 3, steps 3, step_min 512 MiB, noise_k 4, no threshold. */
void hbm_leak_params_default(hbm_leak_params *p);

/* p NULL = defaults; out-of-range values are clamped to the bounds above. */
void hbm_leak_init(hbm_leak *d, const hbm_leak_params *p);

/* Feeds one sample (bytes; t in any monotonic unit, kept only for `since`); total_bytes
 * (HBM_UNKNOWN if unknown) serves threshold_ratio. A negative sample is ignored.
 * Returns the status after it. */
const hbm_leak_status *hbm_leak_add(hbm_leak *d, double t, int64_t bytes, int64_t total_bytes);

#define HBM_WATCH_HISTORY 256 /* samples of history kept per series (for the TUI strip) */

typedef struct hbm_watch_series {
    int64_t device;          /* user id of the device */
    int64_t pid;             /* HBM_UNKNOWN for the device series */
    uint64_t starttime;      /* the process's start time when the host facts have it, else
                                0: a recycled pid starts a new series */
    char name[64];           /* device or process name */
    int64_t total_bytes;     /* device total, HBM_UNKNOWN */
    hbm_leak det;
    int64_t hist[HBM_WATCH_HISTORY]; /* ring of raw samples */
    size_t nhist;            /* valid entries (<= HBM_WATCH_HISTORY) */
    size_t ihist;            /* next write position */
    uint64_t seen_gen;       /* generation of the last observation that had it */
} hbm_watch_series;

typedef struct hbm_watch {
    hbm_leak_params params;
    hbm_watch_series *series; /* owned */
    size_t nseries, cap;
    uint64_t gen;
    size_t nsamples;          /* observations fed */
} hbm_watch;

void hbm_watch_init(hbm_watch *w, const hbm_leak_params *p);
void hbm_watch_free(hbm_watch *w);

/* Feeds one observation: one sample per device (used memory) and per listed process
 * (its memory on that device). Series that the observation no longer has are dropped
 * (a process that ended starts afresh if its pid comes back). t: seconds, any clock. */
void hbm_watch_update(hbm_watch *w, const hbm_obs *obs, double t);

/* The device's series (pid HBM_UNKNOWN) or a process's; NULL when not tracked. */
const hbm_watch_series *hbm_watch_find(const hbm_watch *w, int64_t device, int64_t pid);

/* The i-th most recent sample of a series (0 = latest); HBM_UNKNOWN past the history. */
int64_t hbm_watch_hist_at(const hbm_watch_series *s, size_t i);

/* One line describing the leak state of a series, e.g. "grew 3.00 GiB in 3 steps"
 * or "steady"; writes into buf and returns it. */
const char *hbm_watch_describe(const hbm_watch_series *s, char *buf, size_t n);

/* A memory limit as users write it: "80%" or "0.8" (a ratio of the device's total) or a
 * size ("60GiB", "512MiB"). Exactly one of *bytes (HBM_UNKNOWN otherwise) and *ratio (NAN
 * otherwise) is set. */
int hbm_watch_parse_limit(const char *s, int64_t *bytes, double *ratio, hbm_err *err);

/* Device memory history kept in a file between runs of a short-lived checker (probe --npd
 * leak runs once per NPD interval): the last HBM_HISTORY_MAX samples per device, as JSON
 * {"schema": "hbmctl.history/1", "devices": [{"device", "total_bytes", "samples":
 * [[t, bytes], ...]}]}. */
#define HBM_HISTORY_MAX 64
typedef struct hbm_history_dev {
    int64_t device;      /* user id */
    int64_t total_bytes; /* HBM_UNKNOWN when unknown */
    size_t n;            /* samples, oldest first */
    double t[HBM_HISTORY_MAX];
    int64_t bytes[HBM_HISTORY_MAX];
} hbm_history_dev;
typedef struct hbm_history {
    hbm_history_dev *devs; /* owned */
    size_t n;
} hbm_history;
/* Parses the JSON above; -1 with the JSON path or line of what is wrong. */
int hbm_history_parse(const char *buf, size_t len, hbm_history *h, hbm_err *err);
/* Reads path; a missing file is an empty history. */
int hbm_history_load(const char *path, hbm_history *h, hbm_err *err);
/* Appends one sample per device of obs at time t; devices obs lacks are dropped. */
void hbm_history_add(hbm_history *h, const hbm_obs *obs, double t);
/* Writes path atomically (a temporary file renamed over it). */
int hbm_history_save(const char *path, const hbm_history *h, hbm_err *err);
/* Runs the leak detector (p NULL = defaults) over one device's samples. */
hbm_leak_status hbm_history_judge(const hbm_history_dev *d, const hbm_leak_params *p);
void hbm_history_free(hbm_history *h);

/* ---- a watch session ---------------------------------------------------------------- */

/* One observation per sample fed to the detectors; what changed since the sample before (a
 * leak, its end, a threshold crossed either way, a server engine turned stalled or back) is
 * kept as an event for the views to show. */
#define HBM_WATCH_EVENTS 8 /* events kept, newest last */

typedef enum hbm_watch_event_kind {
    HBM_WATCH_EV_LEAK,       /* memory grew in steps that never returned */
    HBM_WATCH_EV_LEAK_CLEAR, /* memory back at its earlier level */
    HBM_WATCH_EV_CROSS_UP,   /* memory crossed the threshold */
    HBM_WATCH_EV_CROSS_DOWN, /* memory back below the threshold */
    HBM_WATCH_EV_STALL,      /* a server engine turned stalled */
    HBM_WATCH_EV_STALL_END,  /* a stalled server engine is no longer stalled */
} hbm_watch_event_kind;

typedef struct hbm_watch_event {
    hbm_watch_event_kind kind;
    double wall;            /* when it was seen (wall clock) */
    int64_t device;         /* memory events: the device's user id */
    int64_t pid;            /* ... the process's, HBM_UNKNOWN for the device's own series */
    char name[64];          /* ... the process's name */
    int64_t growth_bytes;   /* ... growth over the unreturned steps */
    int64_t level_bytes;    /* ... the memory's level now */
    int steps;              /* ... unreturned steps */
    char url[512];          /* server events: the server, without credentials */
    char line[400];         /* ... its engine's progress line when it changed */
} hbm_watch_event;

typedef struct hbm_watch_session {
    const hbm_source_opts *src;     /* borrowed: where each sample observes */
    const int64_t *only;            /* borrowed: the devices shown (user ids); none = all */
    size_t nonly;
    hbm_progress_servers *servers;  /* borrowed: sampled with the devices (may be empty) */
    hbm_watch w;                    /* owned */
    hbm_obs obs;                    /* owned: the latest observation */
    bool have_obs;
    char error[1024];               /* why the latest observation failed, "" when it did not */
    long samples;
    double started;                 /* wall clock of the first sample */
    bool problem_seen;              /* a leak or a stall was reported (watch exits 1) */
    hbm_progress_state *last_state; /* owned: each server engine as last reported */
    size_t nlast;
    hbm_watch_event events[HBM_WATCH_EVENTS];
    size_t nevents;
    unsigned long events_total;     /* events ever added */
    unsigned long events_shown;     /* events_total when a view last showed them */
} hbm_watch_session;

void hbm_watch_session_init(hbm_watch_session *s, const hbm_leak_params *p,
                            const hbm_source_opts *src, const int64_t *only, size_t nonly,
                            hbm_progress_servers *servers);
void hbm_watch_session_free(hbm_watch_session *s);

/* One sample: the servers, then one observation fed to the detectors, their events kept.
 * Returns 0, or -1 when the observation failed (error says why; the previous observation
 * is kept). */
int hbm_watch_session_sample(hbm_watch_session *s);

/* The server engines' events of their latest sample (part of hbm_watch_session_sample). */
void hbm_watch_session_server_events(hbm_watch_session *s);

/* True when the device passes the device filter. */
bool hbm_watch_session_wanted(const hbm_watch_session *s, const hbm_device *d);

/* Index in events of the first event not yet shown; marks them all shown. */
size_t hbm_watch_session_first_unshown(hbm_watch_session *s);

/* The devices shown, as `watch --json` writes them: each with its memory, verdict, leak
 * state and processes (a new array). */
json_t *hbm_watch_session_devices_json(const hbm_watch_session *s);

/* The servers' latest sample, as `watch --json` writes them (a new array). */
json_t *hbm_watch_session_servers_json(const hbm_watch_session *s);

/* ---- the full-screen view's model ---------------------------------------------------- */

/* What `watch`'s terminal view shows, computed without a terminal: the device rows' order,
 * the selection and how keys move it, the history strip's cells, the tone a verdict is
 * drawn in; the CLI draws them with curses. */
typedef enum hbm_watch_sort {
    HBM_WATCH_SORT_ID,     /* device id, ascending */
    HBM_WATCH_SORT_USED,   /* used memory, largest first */
    HBM_WATCH_SORT_GROWTH, /* unreturned growth of the device's series, largest first */
    HBM_WATCH_SORT_N
} hbm_watch_sort;

/* The colour a verdict is drawn in, by what it asks of the reader. */
typedef enum hbm_watch_tone {
    HBM_WATCH_TONE_PLAIN,
    HBM_WATCH_TONE_FREE,   /* FREE */
    HBM_WATCH_TONE_BUSY,   /* BUSY */
    HBM_WATCH_TONE_ODD,    /* UNACCOUNTED: worth a look */
    HBM_WATCH_TONE_BAD,    /* ORPHANED, UNHEALTHY; also leaks and stalls */
} hbm_watch_tone;

typedef struct hbm_watch_view {
    hbm_watch_sort sort;
    int64_t selected;  /* user id of the selected device, HBM_UNKNOWN none */
    bool details;      /* the selected device's details shown */
    char digits[8];    /* digits typed to pick a device */
    double digits_at;  /* when the last digit was typed (monotonic seconds) */
} hbm_watch_view;

#define HBM_WATCH_STRIP_LEVELS 8 /* a strip cell's levels above blank (eighths of a cell) */
#define HBM_WATCH_STRIP_MIN 8    /* fewer free columns than this: no history strip */

/* No selection, sorted by id, no details. */
void hbm_watch_view_init(hbm_watch_view *v);
const char *hbm_watch_sort_name(hbm_watch_sort sort);
hbm_watch_tone hbm_watch_verdict_tone(hbm_verdict v);
/* Indexes into s->obs.devs of the devices shown (the device filter), in the view's order;
 * at most cap. Selects the first one when nothing is selected yet. */
size_t hbm_watch_view_rows(const hbm_watch_session *s, hbm_watch_view *v, size_t *idx,
                           size_t cap);
/* The selection moved delta rows, held at the first and last row. */
void hbm_watch_view_move(hbm_watch_view *v, const hbm_watch_session *s, int delta);
/* A digit typed at now (monotonic seconds): digits typed within 1.5 s of each other form one
 * id, selected as soon as the observation has a device of that id. */
void hbm_watch_view_digit(hbm_watch_view *v, const hbm_watch_session *s, char digit,
                          double now);
/* The history strip's columns given the free ones: 0 when too few for a strip. */
int hbm_watch_strip_cells(int free_cols);
/* A strip of `width` cells, newest on the right: each the sample's level, 0 (blank) to
 * HBM_WATCH_STRIP_LEVELS, scaled to total (to the largest sample when the total is unknown);
 * -1 where the history has no sample. s may be NULL (all -1). */
void hbm_watch_strip(const hbm_watch_series *s, int64_t total, int *levels, int width);

/* ncurses for the view's drawing, loaded once when the view starts (curses.c): NULL when
 * its entry points are there, else why not. */
const char *hbm_watch_curses_load(void);

#endif
