/* The planner's result for people: `plan`'s report and `run --preflight`'s verdict. */
#ifndef HBM_CLI_RENDER_PLAN_H
#define HBM_CLI_RENDER_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "hbm/plan.h"

/* The breakdown with a bar per component against the device, the verdict in vLLM's words,
 * the changes that fit and the flag line; lines fit width columns (at least 60). color adds
 * ANSI colour. */
void cli_plan_report(FILE *f, const hbm_plan_result *r, int width, bool color);

/* The verdict alone: one line when it starts; else vLLM's message on one line, then every
 * change that makes it fit with its cost and flag line (within 100 columns). Owned string,
 * ending in a newline. */
char *cli_plan_verdict_text(const hbm_plan_result *r);

/* `plan --list-devices`: the device table, one row each with its source. */
void cli_plan_list_devices(void);

/* `plan --list-flags`: the engine's flags accepted before '--' and what each does here. */
void cli_plan_list_flags(hbm_plan_engine e);

#endif
