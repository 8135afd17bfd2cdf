/* Holds device memory on one GPU through the CUDA driver API, loaded with dlopen (no CUDA
 * SDK needed), until killed: the real process tests/hw/nvidia.sh compares tools on.
 *
 * usage: cuda_hold [GPU_ORDINAL [MIB]]   (defaults 0 and 1024)
 * Prints "ready PID BYTES" on stdout once the memory is allocated, then sleeps. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int cu_result;                 /* CUresult, 0 = CUDA_SUCCESS */
typedef int cu_device;                 /* CUdevice */
typedef struct cu_ctx_st *cu_context;  /* CUcontext */
typedef unsigned long long cu_devptr;  /* CUdeviceptr on 64-bit hosts */

typedef cu_result (*init_fn)(unsigned int);
typedef cu_result (*device_get_fn)(cu_device *, int);
typedef cu_result (*primary_retain_fn)(cu_context *, cu_device);
typedef cu_result (*ctx_set_fn)(cu_context);
typedef cu_result (*mem_alloc_fn)(cu_devptr *, size_t);

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "cuda_hold: libcuda.so.1 has no %s\n", name);
        exit(2);
    }
    return p;
}

static void check(cu_result r, const char *what)
{
    if (r != 0) {
        fprintf(stderr, "cuda_hold: %s failed: CUresult %d\n", what, r);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    int ordinal = argc > 1 ? atoi(argv[1]) : 0;
    size_t mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 1024;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "cuda_hold: %s\n", dlerror());
        return 2;
    }
    init_fn cu_init;
    device_get_fn cu_device_get;
    primary_retain_fn cu_primary_retain;
    ctx_set_fn cu_ctx_set;
    mem_alloc_fn cu_mem_alloc;
    /* POSIX: a dlsym result converts to a function pointer. */
    void *p;
    p = sym(lib, "cuInit"), memcpy(&cu_init, &p, sizeof p);
    p = sym(lib, "cuDeviceGet"), memcpy(&cu_device_get, &p, sizeof p);
    p = sym(lib, "cuDevicePrimaryCtxRetain"), memcpy(&cu_primary_retain, &p, sizeof p);
    p = sym(lib, "cuCtxSetCurrent"), memcpy(&cu_ctx_set, &p, sizeof p);
    p = sym(lib, "cuMemAlloc_v2"), memcpy(&cu_mem_alloc, &p, sizeof p);

    cu_device dev;
    cu_context ctx;
    cu_devptr ptr;
    check(cu_init(0), "cuInit");
    check(cu_device_get(&dev, ordinal), "cuDeviceGet");
    check(cu_primary_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cu_ctx_set(ctx), "cuCtxSetCurrent");
    check(cu_mem_alloc(&ptr, mib << 20), "cuMemAlloc");
    printf("ready %d %zu\n", (int)getpid(), mib << 20);
    fflush(stdout);
    for (;;)
        pause();
}
