/* libcrypt, loaded on first use (libcrypt.c). */
#ifndef HBM_EXPORT_LIBCRYPT_H
#define HBM_EXPORT_LIBCRYPT_H

#include "hbm/err.h"

/* Loads the library once; 0 when crypt_r is there, else -1 saying why. The static build
 * links it. */
#ifdef HBM_STATIC_BUILD
static inline int hbm_export_crypt_load(hbm_err *err)
{
    (void)err;
    return 0;
}
#else
int hbm_export_crypt_load(hbm_err *err);
#endif

#endif
