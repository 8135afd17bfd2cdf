/* libcrypt, loaded when a web config names basic-auth users rather than linked, so the
 * commands that never check a password (`run` first of all) do not map it. crypt_r is
 * defined here under its own name and forwards to the library's. */
#ifndef HBM_STATIC_BUILD
#include <crypt.h>
#include <stdbool.h>

#include "export/libcrypt.h"
#include "hbm/libload.h"

static struct {
    bool tried, ok;
    char why[300];
    char *(*crypt_r)(const char *, const char *, struct crypt_data *);
} lib;

int hbm_export_crypt_load(hbm_err *err)
{
    if (!lib.tried) {
        lib.tried = true;
        const hbm_dl_sym syms[] = {{"crypt_r", (void **)&lib.crypt_r}};
        lib.ok = hbm_dl_load("HBMCTL_CRYPT_LIB", "libcrypt.so.1", "libcrypt1", syms, 1,
                             lib.why, sizeof lib.why) != NULL;
    }
    return lib.ok ? 0 : hbm_err_set(err, "%s", lib.why);
}

/* Unloaded, no password matches. */
char *crypt_r(const char *phrase, const char *setting, struct crypt_data *data)
{
    return hbm_export_crypt_load(NULL) == 0 ? lib.crypt_r(phrase, setting, data) : NULL;
}
#endif
