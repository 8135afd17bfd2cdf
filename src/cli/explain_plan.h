/* explain's findings that the planner can put figures to (the model and the launch known). */
#ifndef HBM_CLI_EXPLAIN_PLAN_H
#define HBM_CLI_EXPLAIN_PLAN_H

#include <jansson.h>
#include <stdbool.h>

#include "hbm/explain.h"
#include "hbm/obs.h"

typedef struct explain_plan_opts {
    const char *model;  /* --model: the model directory (default: the launch's, when local) */
    const char *device; /* --device: a device table name */
    int64_t mem;        /* --mem: total device memory, HBM_UNKNOWN when not given */
    char **launch;      /* the words after '--' (a vllm serve line), over the log's own */
    int nlaunch;
    const hbm_obs *live; /* this host's devices, for the device when none is given (NULL) */
} explain_plan_opts;

/* The figures for one finding: lines to print and the JSON `plan` object (NULL when the
 * planner has nothing to say about that finding). */
typedef struct explain_plan_figures {
    char **lines;
    size_t nlines;
    json_t *json;
} explain_plan_figures;

/* Whether the planner has a finding of rep to size and no device given: this host's
 * devices would answer. */
bool explain_plan_wants_live(const hbm_explain_report *rep, const explain_plan_opts *o);

/* One entry per finding of rep (rep->nfindings), owned: explain_plan_free. */
explain_plan_figures *explain_plan(const hbm_explain_report *rep, const explain_plan_opts *o);
void explain_plan_free(explain_plan_figures *figs, size_t n);

#endif
