/* Private to the lease module. */
#ifndef HBM_LEASE_INT_H
#define HBM_LEASE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hbm/err.h"

/* The shared lease directory (share.c): created mode 1777 (parents 0755) when missing; an
 * existing one is used as it is. On failure the message names the owners and modes and
 * how to configure another directory. */
int lease_dir_prepare(const char *dir, hbm_err *err);
/* Opens DIR/BASE read-write, creating it mode 0666 when missing; refuses symbolic links,
 * hard links and non-regular files. Returns the fd, or -1 with a message that says who
 * owns the directory and the file when permission is the problem. */
int lease_file_open(const char *dir, const char *base, hbm_err *err);
/* Makes sure DIR/device-ID.lease exists and is usable (lease_file_open, then closed). */
int lease_file_ensure(const char *dir, int64_t device, hbm_err *err);
/* Whether the calling user owns dir. */
bool lease_dir_owned(const char *dir);

#endif
