#include "backend/dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/util.h"

/* Libraries kept loaded, by the name they were opened with. Few distinct names ever occur
 * (one per backend, more only when tests switch fakes). */
typedef struct dl_kept {
    char *name; /* owned */
    void *handle;
} dl_kept;

static dl_kept *kept;
static size_t nkept, capkept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void *open_one(const char *name)
{
    pthread_mutex_lock(&kept_lock);
    void *h = NULL;
    for (size_t i = 0; i < nkept && !h; i++)
        if (strcmp(kept[i].name, name) == 0)
            h = kept[i].handle;
    if (!h) {
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            hbm_grow((void **)&kept, &capkept, nkept, sizeof *kept);
            kept[nkept++] = (dl_kept){hbm_xstrdup(name), h};
        }
    }
    pthread_mutex_unlock(&kept_lock);
    return h;
}

static void *open_lib(const char *env, const char *const *candidates, hbm_err *err)
{
    const char *forced = env ? getenv(env) : NULL;
    if (forced && *forced) {
        void *h = open_one(forced);
        if (!h) {
            const char *why = dlerror();
            hbm_err_set(err, "%s=%s: %s", env, forced, why ? why : "cannot load");
        }
        return h;
    }
    char tried[768] = "";
    size_t used = 0;
    for (size_t i = 0; candidates && candidates[i]; i++) {
        void *h = open_one(candidates[i]);
        if (h)
            return h;
        int n = snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "",
                         candidates[i]);
        if (n > 0 && (size_t)n < sizeof tried - used)
            used += (size_t)n;
    }
    if (env)
        hbm_err_set(err, "cannot load %s (set %s to its path)", tried, env);
    else
        hbm_err_set(err, "cannot load %s", tried);
    return NULL;
}

void *hbm_dl_open(const char *env, const char *const *candidates, hbm_err *err)
{
    return open_lib(env, candidates, err);
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
