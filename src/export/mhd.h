/* libmicrohttpd, loaded on first use (mhd.c). */
#ifndef HBM_EXPORT_MHD_H
#define HBM_EXPORT_MHD_H

#include "hbm/err.h"

/* Loads the library once; 0 when its entry points are there, else -1 saying why. */
int hbm_export_mhd_load(hbm_err *err);

#endif
