/* explain's report for people (hbmctl explain). */
#ifndef HBM_CLI_RENDER_EXPLAIN_H
#define HBM_CLI_RENDER_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/preflight.h"

/* Finding idx of rep, numbered from 1: the line that shows it, the cause (for a summary,
 * the finding that caused it or the error lines before it), what its numbers say, the
 * remedies, the planner's figures fig and the live checks; color adds ANSI colour. */
void cli_explain_finding(const hbm_explain_report *rep, size_t idx,
                         const hbm_preflight_figures *fig, bool color);

/* The log's own structure: engine, phases, where and how it failed, and with no known
 * failure the failing phase's next steps. */
void cli_explain_structure(const hbm_explain_report *rep);

/* The log's last error-looking lines before line `before`, "N: text" at indent; returns
 * how many were shown. */
size_t cli_explain_tail(const hbm_explain_report *rep, int indent, uint64_t before);

#endif
