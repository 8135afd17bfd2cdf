/* A watch session's views: plain and JSON lines (cmd_watch.c), full screen (watch_tui.c);
 * the session itself (sampling, events) is the watch library's (hbm_watch_session). */
#ifndef HBM_CLI_WATCH_SESSION_H
#define HBM_CLI_WATCH_SESSION_H

#include <stdbool.h>

#include "cli.h"
#include "hbm/progress.h"
#include "hbm/watch.h"

typedef struct watch_ctx {
    hbm_opt_common common;
    double interval;              /* seconds between samples */
    long count;                   /* samples to take; 0 = until stopped */
    hbm_opt_devices only;             /* --device filter (user ids) */
    hbm_progress_servers servers; /* owned; --metrics-url, sampled with the devices */
    hbm_watch_session s;          /* owned */
} watch_ctx;

/* Line k of the server section: one per engine of each --metrics-url ("URL  stalled: ..."),
 * or the reason a server's page was not read. Returns false past the last line; *stalled
 * tells lines to highlight. */
bool watch_server_line(const watch_ctx *c, size_t k, char *buf, size_t n, bool *stalled);

/* Local wall-clock time as HH:MM:SS. */
void watch_clock_text(char *buf, size_t n, double wall);

/* An event as one line, its time first ("12:00:03 LEAK device 1: memory grew ..."). */
const char *watch_event_text(const hbm_watch_event *e, char *buf, size_t n);

/* The full-screen view (builds with ncurses only); returns the exit code. Needs a
 * terminal on stdin and stdout. */
int watch_tui_run(watch_ctx *c);

#endif
