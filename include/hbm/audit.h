/* The audit log (docs/doctor.md): every action hbmctl takes on the host, one JSON object per
 * line, appended with a single write(2) so concurrent writers never interleave. */
#ifndef HBM_AUDIT_H
#define HBM_AUDIT_H

#include <jansson.h>

#include "hbm/err.h"

#define HBM_AUDIT_DEFAULT_PATH "/var/log/hbmctl/audit.jsonl"

/* override when non-empty, else $HBMCTL_AUDIT_LOG, else the default. Borrowed string. */
const char *hbm_audit_path(const char *override);

/* Appends one JSON line: the record's fields plus "time" (RFC 3339 UTC), "unix_time",
 * "host", "uid", "hbmctl_pid". Creates the directory (0750) and file (0640) when needed.
 * The record is borrowed. */
int hbm_audit_append(const char *path, json_t *record, hbm_err *err);

/* The command line as an audit record names it ("hbmctl clean --apply --pid 42"): "hbmctl"
 * and argv (argv[0] the command's name), credentials redacted like any command line hbmctl
 * records. Allocated. */
char *hbm_audit_command(int argc, char *const *argv);

#endif
