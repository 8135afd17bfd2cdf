/* Private to the lease module. */
#ifndef HBM_LEASE_INT_H
#define HBM_LEASE_INT_H

#include <stdint.h>

#include "hbm/err.h"

/* mkdir -p with mode 0755. */
int lease_mkdir_p(const char *dir, hbm_err *err);

#endif
