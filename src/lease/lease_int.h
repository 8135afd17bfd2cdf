/* Private to the lease module. */
#ifndef HBM_LEASE_INT_H
#define HBM_LEASE_INT_H

#include <stdint.h>

#include "hbm/err.h"

/* Start time (field 22 of /proc/PID/stat) and state of a live process; -1 when gone. */
int lease_proc_starttime(int pid, uint64_t *starttime, char *state);

/* mkdir -p with mode 0755. */
int lease_mkdir_p(const char *dir, hbm_err *err);

#endif
