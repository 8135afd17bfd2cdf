/* Pieces shared by the planner's source files (not part of the public API). */
#ifndef HBM_PLAN_INT_H
#define HBM_PLAN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hbm/plan.h"

/* Bytes of one element of a dtype name ("bfloat16", "fp8", ...); 0 when unknown. */
int plan_dtype_bytes(const char *name);

/* Sums the safetensors headers of a model directory: the files named by
 * model.safetensors.index.json when present, else every *.safetensors. *files = 0 when the
 * directory holds none. */
int plan_weights_in_dir(const char *dir, hbm_plan_st_sum *sum, int *files, hbm_err *err);

/* vLLM version as major*10000 + minor*100 + patch; -1 when unparsable. */
int plan_version_parse(const char *s);
#define PLAN_VERSION_NEWEST 2300 /* 0.23.0: the newest release the rules know */

#endif
