#include "hbm/libload.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *hbm_dl_load(const char *env, const char *soname, const char *package,
                  const hbm_dl_sym *syms, size_t n, char *why, size_t why_len)
{
    const char *path = env ? getenv(env) : NULL;
    if (!path || !*path)
        path = soname;
    /* RTLD_LOCAL: the library's symbols never bind to hbmctl's own forwarders of the same
     * names (hbmctl exports none, no -rdynamic) nor to another library's. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, why_len, "cannot load %s (install %s): %s", path, package, dlerror());
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(why, why_len, "%s lacks %s", path, syms[i].name);
            for (size_t j = 0; j < i; j++)
                *syms[j].slot = NULL;
            dlclose(h);
            return NULL;
        }
    }
    return h;
}
