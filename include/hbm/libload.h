/* Shared libraries loaded on first use rather than linked, so a command maps only what it
 * uses: `run`, a container's PID 1, maps neither the HTTP server, the terminal UI, the regex
 * engine nor libcrypt (docs/bench.md). */
#ifndef HBM_LIBLOAD_H
#define HBM_LIBLOAD_H

#include <stddef.h>

typedef struct hbm_dl_sym {
    const char *name;
    void **slot; /* where the address goes: a function pointer cast to void ** */
} hbm_dl_sym;

/* Opens the library that environment variable `env` names (a test's substitute), else
 * `soname`, never to be unloaded, and resolves every symbol into its slot. On failure
 * returns NULL with a sentence in why naming the library and, for a missing file, the
 * Debian package that installs it. */
void *hbm_dl_load(const char *env, const char *soname, const char *package,
                  const hbm_dl_sym *syms, size_t n, char *why, size_t why_len);

#endif
