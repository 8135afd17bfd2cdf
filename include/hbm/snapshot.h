/* The snapshot: an observation written down as JSON (schema hbmctl.snapshot/1).
 * Every read-only command can replay one; field names are a contract (docs/snapshot.md). */
#ifndef HBM_SNAPSHOT_H
#define HBM_SNAPSHOT_H

#include <jansson.h>

#include "hbm/err.h"
#include "hbm/obs.h"

#define HBM_SNAPSHOT_SCHEMA "hbmctl.snapshot/1"

/* New reference; never NULL. */
json_t *hbm_snapshot_to_json(const hbm_obs *obs);

/* Reads a snapshot document; name is used in errors ("FILE: devices[2].index: ..."). */
int hbm_snapshot_parse(hbm_obs *obs, const char *text, size_t len, const char *name,
                       hbm_err *err);

#endif
