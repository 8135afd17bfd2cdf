/* Loading a vendor driver library at run time: hbmctl builds and runs without any vendor
 * SDK, and a host without the driver simply has no such backend. Private to src/backend. */
#ifndef HBM_BACKEND_DL_H
#define HBM_BACKEND_DL_H

#include <stdbool.h>
#include <stddef.h>

#include "hbm/err.h"
#include "hbm/obs.h"

/* Opens the library named by environment variable env when set (and only that one, so a
 * test or an odd install is never silently served by another copy), else the first of the
 * NULL-terminated candidates that loads. Returns the dlopen handle, or NULL with err saying
 * what was tried.
 * A library opened this way stays loaded for the life of the process (later calls return
 * the same handle): driver libraries start threads and register handlers that do not
 * survive being unloaded, and a watch loop should not reload them every sample. */
void *hbm_dl_open(const char *env, const char *const *candidates, hbm_err *err);

/* A symbol of handle h as a generic function pointer; NULL when the library lacks it
 * (an older driver). Callers cast it to the prototype they declared. */
typedef void (*hbm_dl_fn)(void);
hbm_dl_fn hbm_dl_sym(void *h, const char *name);

/* The first of several names that exists (newest version first), NULL when none does. */
hbm_dl_fn hbm_dl_sym_any(void *h, const char *const *names);

/* ---- vendor calls under a deadline (vcall.c) ---- */

/* A backend's whole observation: the vendor calls it makes go through HBM_VCALL. */
typedef int (*hbm_vcall_body)(hbm_obs *obs, hbm_err *err);

/* Runs body on a worker thread; each vendor call it makes may take at most timeout
 * seconds (loading the library counts as the first). When one passes it, returns
 * HBM_ERR_HUNG with
 * "NAME did not return within Ns", NAME the exported symbol; the call is abandoned and, until
 * it returns, every later hbm_vcall_run fails at once saying so. obs must be freshly
 * initialised; it is filled only when body finished in time. timeout <= 0: body runs
 * here, unguarded. */
int hbm_vcall_run(const char *backend, hbm_vcall_body body, hbm_obs *obs, double timeout,
                  hbm_err *err);

/* Marks the start of vendor call fn on a guarded thread (a no-op elsewhere); returns fn. */
hbm_dl_fn hbm_vcall_enter(hbm_dl_fn fn);
/* f(args) becomes HBM_VCALL(f)(args): the same call, its start marked for the deadline. */
#define HBM_VCALL(f) ((__typeof__(f))hbm_vcall_enter((hbm_dl_fn)(f)))

/* Copies a string a driver wrote into a fixed buffer (srcmax bytes, maybe without a NUL)
 * into dst of n bytes, truncating, always NUL-terminated. */
void hbm_dl_copy(char *dst, size_t n, const char *src, size_t srcmax);

#endif
