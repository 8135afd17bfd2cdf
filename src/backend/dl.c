#include "backend/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *hbm_dl_open(const char *env, const char *const *candidates, hbm_err *err)
{
    const char *forced = env ? getenv(env) : NULL;
    if (forced && *forced) {
        void *h = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *why = dlerror();
            hbm_err_set(err, "%s=%s: %s", env, forced, why ? why : "cannot load");
        }
        return h;
    }
    char tried[768] = "";
    size_t used = 0;
    for (size_t i = 0; candidates && candidates[i]; i++) {
        void *h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        int n = snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "",
                         candidates[i]);
        if (n > 0 && (size_t)n < sizeof tried - used)
            used += (size_t)n;
    }
    hbm_err_set(err, "cannot load %s%s%s", tried, env ? " (set " : "", env ? env : "");
    if (env && err) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, " to its path)");
    }
    return NULL;
}

hbm_dl_fn hbm_dl_sym(void *h, const char *name)
{
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
    void *p = dlsym(h, name);
    hbm_dl_fn fn;
    memcpy(&fn, &p, sizeof fn);
    return p ? fn : NULL;
}

hbm_dl_fn hbm_dl_sym_any(void *h, const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        hbm_dl_fn fn = hbm_dl_sym(h, names[i]);
        if (fn)
            return fn;
    }
    return NULL;
}

void hbm_dl_close(void *h)
{
    if (h)
        dlclose(h);
}

void hbm_dl_copy(char *dst, size_t n, const char *src, size_t srcmax)
{
    if (n == 0)
        return;
    size_t len = strnlen(src, srcmax);
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}
