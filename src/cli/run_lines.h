/* What `hbmctl run` says on stderr, each line prefixed "hbmctl run: ": its failures, what
 * it does before the start (leases, the preflight's verdict, the allocator), and the
 * supervisor's events and audit records as they come (cmd_run.c parses and calls). */
#ifndef HBM_CLI_RUN_LINES_H
#define HBM_CLI_RUN_LINES_H

#include <jansson.h>
#include <stdbool.h>

#include "hbm/preflight.h"

#define RUN_PREFIX "hbmctl run: "

/* The supervisor's sinks: ctx is a cli_run_sinks. */
typedef struct cli_run_sinks {
    const char *audit_path;
    bool audit_warned; /* a failed append is said once */
} cli_run_sinks;

void cli_run_log_line(void *ctx, const char *line);
void cli_run_audit(void *ctx, json_t *event);

/* One failure line; returns run's own failure status (125). */
int cli_run_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Why too few devices were free for --devices N; returns 125. */
int cli_run_no_devices(const hbm_pick_result *pick, size_t count);

/* The devices leased, their variable set for the command. */
void cli_run_leased(const hbm_pick_result *pick);

/* The preflight's verdict: a refusal with the reasons and the changes that make it fit
 * (returns 125), or one line each of the plan's verdict (returns 0). */
int cli_run_verdict(const hbm_preflight_verdict *v);

/* --expandable-segments: the allocator variable of the vendor observed (both when none
 * was), set for the command unless it already says otherwise. */
void cli_run_alloc_conf(const hbm_preflight_start *st);

#endif
