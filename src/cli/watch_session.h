/* A watch session (watch_session.c: sampling, events) and its two views: plain and JSON
 * lines (cmd_watch.c), full screen (watch_tui.c). */
#ifndef HBM_CLI_WATCH_SESSION_H
#define HBM_CLI_WATCH_SESSION_H

#include <stdbool.h>

#include "cli.h"
#include "hbm/progress.h"
#include "hbm/watch.h"

#define WATCH_EVENTS 8 /* leak and threshold messages kept for the view */

typedef struct watch_ctx {
    cli_common common;
    double interval;        /* seconds between samples */
    long count;             /* samples to take; 0 = until stopped */
    cli_devices only;       /* --device filter (user ids) */
    hbm_watch w;            /* owned */
    hbm_obs obs;            /* owned; the latest observation */
    bool have_obs;
    char error[1024];       /* why the latest observation failed ("" when it did not) */
    long samples;
    double started;         /* wall clock of the first sample */
    bool leak_seen;         /* a leak or a stall was reported during this run (exit 1) */
    hbm_progress_servers servers; /* owned; --metrics-url, sampled with the devices */
    hbm_progress_state *last_state; /* owned; per server engine as last reported, for events */
    size_t nlast;
    char events[WATCH_EVENTS][200]; /* newest last */
    size_t nevents;
    unsigned long events_total; /* events ever added */
    unsigned long events_shown; /* events_total when output last showed them */
} watch_ctx;

/* Observes once, feeds the detectors and records event messages. Returns 0, or -1 when the
 * observation failed (error says why; the previous observation is kept). */
int watch_sample(watch_ctx *c);

/* Line k of the server section: one per engine of each --metrics-url ("URL  stalled: ..."),
 * or the reason a server's page was not read. Returns false past the last line; *stalled
 * tells lines to highlight. */
bool watch_server_line(const watch_ctx *c, size_t k, char *buf, size_t n, bool *stalled);

/* True when the device passes the --device filter. */
bool watch_wanted(const watch_ctx *c, const hbm_device *d);

/* Local wall-clock time as HH:MM:SS. */
void watch_clock_text(char *buf, size_t n, double wall);

/* Index in the event ring of the first event not yet shown; marks them all shown. */
size_t watch_first_unshown(watch_ctx *c);

/* The full-screen view (builds with ncurses only); returns the exit code. Needs a
 * terminal on stdin and stdout. */
int watch_tui_run(watch_ctx *c);

#endif
