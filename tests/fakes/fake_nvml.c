/* A stand-in for libnvidia-ml.so.1 with the real exported names, signatures and struct
 * layouts, serving the GPUs a JSON scenario describes (file named by
 * HBM_FAKE_NVML_SCENARIO, read at every nvmlInit). Tests put pids of processes they
 * started in it, so everything after the driver call runs for real.
 *
 * Scenario:
 *   {"driver_version": "550.54.15",
 *    "init_error": 9,                      optional: nvmlInit fails with this code
 *    "process_entry_size": 24 | 32,        bytes per entry the _v3 process calls write
 *    "errors": {"nvmlDeviceGetX": 3},      forced return code of a call, every device
 *    "hang": {"nvmlDeviceGetX": 3600},     that call blocks this many seconds (-1: for
 *                                          ever) before answering: a wedged driver
 *    "topology": [[0, 10], [10, 0]],       nvmlGpuTopologyLevel_t per pair (absent: the
 *                                          call answers NOT_SUPPORTED)
 *    "release_on_exit": true,              optional: as a real driver does, a listed process
 *                                          that has exited (gone or zombie) is dropped at
 *                                          nvmlInit and its memory leaves memory_used
 *    "devices": [{"name", "uuid", "bus_id": "00000000:18:00.0", "memory_total",
 *                 "memory_used", "memory_reserved" (bytes), "utilization_gpu" (percent),
 *                 "temperature", "power_mw", "ecc_uncorrected", "retired_pending",
 *                 "remap_pending", "remap_failed", "lost", "mig_mode", "mig_instances",
 *                 "errors": {...},
 *                 "compute": [{"pid", "used_memory" (bytes or null), "gi", "ci"}],
 *                 "graphics": [...],
 *                 "nvlinks": ["00000000:19:00.0" | "switch", ...]}]}
 *
 * Built twice: the default exports the current calls; with FAKE_NVML_OLD it exports only
 * what an old driver had (no _v2/_v3 process calls, no memory v2, no MIG, no row
 * remapping, no NVLink device type, the oldest PCI struct). */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "fake_hang.h"

#define EXPORT __attribute__((visibility("default")))

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

enum { FAKE_MAX_DEVS = 64, FAKE_MAX_LINKS = 18, FAKE_MAX_MIG = 7 };

typedef struct nvmlDevice_st {
    int index;
    bool mig_child; /* a MIG device handle */
    int parent;
} *nvmlDevice_t;

typedef struct nvmlMemory_st {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct nvmlPciInfo_st {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

/* The layout before the 32-byte busId existed. */
typedef struct nvmlPciInfoOld_st {
    char busId[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    unsigned int reserved0, reserved1, reserved2, reserved3;
} nvmlPciInfoOld_t;

typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

/* The header generation whose _v3 entry carried confidential-computing memory. */
typedef struct nvmlProcessInfoCc_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfoCc_t;

static json_t *g_scn;                 /* owned: the scenario of the current init */
static int g_init_count;
static struct nvmlDevice_st g_devs[FAKE_MAX_DEVS];
static struct nvmlDevice_st g_mig[FAKE_MAX_DEVS][FAKE_MAX_MIG];

static json_t *devices(void)
{
    return json_object_get(g_scn, "devices");
}

static json_t *dev_json(nvmlDevice_t d)
{
    return d ? json_array_get(devices(), (size_t)d->index) : NULL;
}

static long long num(json_t *o, const char *key, long long dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* The forced code of a call, per device first, then scenario-wide; 0 = none. */
static nvmlReturn_t forced(nvmlDevice_t d, const char *fn)
{
    json_t *dj = dev_json(d);
    long long code = num(json_object_get(dj, "errors"), fn, -1);
    if (code < 0)
        code = num(json_object_get(g_scn, "errors"), fn, -1);
    return code < 0 ? NVML_SUCCESS : (nvmlReturn_t)code;
}

/* Common entry checks of a device call. */
static nvmlReturn_t enter(nvmlDevice_t d, const char *fn)
{
    if (!g_scn)
        return NVML_ERROR_UNINITIALIZED;
    json_t *dj = dev_json(d);
    if (!dj)
        return NVML_ERROR_INVALID_ARGUMENT;
    fake_hang(g_scn, fn);
    if (json_is_true(json_object_get(dj, "lost")))
        return NVML_ERROR_GPU_IS_LOST;
    return forced(d, fn);
}

static bool exited(long long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *paren = strrchr(buf, ')');
    return !paren || paren[1] == 0 || paren[2] == 'Z' || paren[2] == 'X';
}

/* Drops the entries of exited processes from one list, keeping the largest memory freed per
 * pid (compute and graphics entries of one process are one allocation). */
static void release_list(json_t *dj, const char *list, long long pid_freed[][2], size_t *nf)
{
    json_t *arr = json_object_get(dj, list);
    for (size_t i = json_array_size(arr); i-- > 0;) {
        json_t *p = json_array_get(arr, i);
        long long pid = num(p, "pid", 0), mem = num(p, "used_memory", 0);
        if (!exited(pid))
            continue;
        size_t k = 0;
        while (k < *nf && pid_freed[k][0] != pid)
            k++;
        if (k == *nf && *nf < 64)
            pid_freed[(*nf)++][0] = pid, pid_freed[k][1] = 0;
        if (k < 64 && mem > pid_freed[k][1])
            pid_freed[k][1] = mem;
        json_array_remove(arr, i);
    }
}

static void release_exited(json_t *scn)
{
    json_t *devs = json_object_get(scn, "devices");
    for (size_t d = 0; d < json_array_size(devs); d++) {
        json_t *dj = json_array_get(devs, d);
        long long freed[64][2];
        size_t nf = 0;
        release_list(dj, "compute", freed, &nf);
        release_list(dj, "graphics", freed, &nf);
        long long used = num(dj, "memory_used", -1);
        for (size_t k = 0; k < nf && used >= 0; k++)
            used = used > freed[k][1] ? used - freed[k][1] : 0;
        if (used >= 0)
            json_object_set_new(dj, "memory_used", json_integer(used));
    }
}

static nvmlReturn_t do_init(void)
{
    if (g_scn) {
        g_init_count++;
        return NVML_SUCCESS;
    }
    const char *path = getenv("HBM_FAKE_NVML_SCENARIO");
    if (!path)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    json_error_t je;
    json_t *s = json_load_file(path, 0, &je);
    if (!s) {
        fprintf(stderr, "fake NVML: %s:%d: %s\n", path, je.line, je.text);
        return NVML_ERROR_UNKNOWN;
    }
    fake_hang(s, "nvmlInit_v2");
    long long ie = num(s, "init_error", 0);
    if (ie) {
        json_decref(s);
        return (nvmlReturn_t)ie;
    }
    if (json_is_true(json_object_get(s, "release_on_exit")))
        release_exited(s);
    g_scn = s;
    g_init_count = 1;
    for (int i = 0; i < FAKE_MAX_DEVS; i++) {
        g_devs[i] = (struct nvmlDevice_st){i, false, -1};
        for (int m = 0; m < FAKE_MAX_MIG; m++)
            g_mig[i][m] = (struct nvmlDevice_st){m, true, i};
    }
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit(void)
{
    return do_init();
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    if (!g_scn)
        return NVML_ERROR_UNINITIALIZED;
    if (--g_init_count == 0) {
        json_decref(g_scn);
        g_scn = NULL;
    }
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!g_scn)
        return NVML_ERROR_UNINITIALIZED;
    const char *v = json_string_value(json_object_get(g_scn, "driver_version"));
    if (!v)
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(v) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(version, v, strlen(v) + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
    if (!g_scn)
        return NVML_ERROR_UNINITIALIZED;
    size_t n = json_array_size(devices());
    *count = (unsigned int)(n > FAKE_MAX_DEVS ? FAKE_MAX_DEVS : n);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    unsigned int n = 0;
    nvmlReturn_t r = nvmlDeviceGetCount(&n);
    if (r != NVML_SUCCESS)
        return r;
    if (index >= n)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (json_is_true(json_object_get(json_array_get(devices(), index), "lost")))
        return NVML_ERROR_GPU_IS_LOST;
    *device = &g_devs[index];
    return NVML_SUCCESS;
}

static nvmlReturn_t copy_str(const char *s, char *out, unsigned int length)
{
    if (!s)
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(s) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetName");
    return r ? r : copy_str(json_string_value(json_object_get(dev_json(d), "name")), name, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetUUID");
    return r ? r : copy_str(json_string_value(json_object_get(dev_json(d), "uuid")), uuid, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetIndex");
    if (!r)
        *index = (unsigned int)d->index;
    return r;
}

static bool parse_bus(const char *s, unsigned int *dom, unsigned int *bus, unsigned int *dev)
{
    return s && sscanf(s, "%x:%x:%x", dom, bus, dev) == 3;
}

static nvmlReturn_t pci_common(nvmlDevice_t d, const char *fn, unsigned int *dom,
                               unsigned int *bus, unsigned int *dev, const char **id)
{
    nvmlReturn_t r = enter(d, fn);
    if (r)
        return r;
    *id = json_string_value(json_object_get(dev_json(d), "bus_id"));
    return parse_bus(*id, dom, bus, dev) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

#ifdef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfoOld_t *pci)
{
    const char *id;
    unsigned int dom, bus, dev;
    nvmlReturn_t r = pci_common(d, "nvmlDeviceGetPciInfo", &dom, &bus, &dev, &id);
    if (r)
        return r;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%04X:%02X:%02X.0", dom & 0xffff, bus, dev);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = 0x233010de;
    return NVML_SUCCESS;
}
#else
static nvmlReturn_t pci_new(nvmlDevice_t d, nvmlPciInfo_t *pci, const char *fn)
{
    const char *id;
    unsigned int dom, bus, dev;
    nvmlReturn_t r = pci_common(d, fn, &dom, &bus, &dev, &id);
    if (r)
        return r;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", dom & 0xffff, bus,
             dev);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", dom, bus, dev);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = 0x233010de;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    return pci_new(d, pci, "nvmlDeviceGetPciInfo_v3");
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    return pci_new(d, pci, "nvmlDeviceGetPciInfo_v2");
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    return pci_new(d, pci, "nvmlDeviceGetPciInfo");
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetMemoryInfo");
    if (r)
        return r;
    json_t *dj = dev_json(d);
    long long total = num(dj, "memory_total", -1), used = num(dj, "memory_used", -1);
    if (total < 0 || used < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    /* The first memory call counts the reserved part as used, as drivers do. */
    m->total = (unsigned long long)total;
    m->used = (unsigned long long)(used + num(dj, "memory_reserved", 0));
    m->free = m->total > m->used ? m->total - m->used : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetUtilizationRates");
    if (r)
        return r;
    long long g = num(dev_json(d), "utilization_gpu", -1);
    if (g < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = (unsigned int)g;
    u->memory = 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *temp)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetTemperature");
    if (r)
        return r;
    long long t = num(dev_json(d), "temperature", -1);
    if (sensor != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (t < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *temp = (unsigned int)t;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetPowerUsage");
    if (r)
        return r;
    long long p = num(dev_json(d), "power_mw", -1);
    if (p < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *mw = (unsigned int)p;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
                                                unsigned long long *count)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetTotalEccErrors");
    if (r)
        return r;
    (void)counter;
    long long n = num(dev_json(d), "ecc_uncorrected", -1);
    if (n < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = type == 1 ? (unsigned long long)n : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetRetiredPagesPendingStatus");
    if (r)
        return r;
    *pending = json_is_true(json_object_get(dev_json(d), "retired_pending")) ? 1 : 0;
    return NVML_SUCCESS;
}

/* Processes: writes min(count, capacity) entries of the given size. */
static nvmlReturn_t procs(nvmlDevice_t d, const char *fn, const char *list, size_t entry,
                          unsigned int *count, void *infos)
{
    nvmlReturn_t r = enter(d, fn);
    if (r)
        return r;
    json_t *arr = json_object_get(dev_json(d), list);
    unsigned int n = (unsigned int)json_array_size(arr);
    if (*count < n || (!infos && n > 0)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; i++) {
        json_t *p = json_array_get(arr, i);
        json_t *mem = json_object_get(p, "used_memory");
        nvmlProcessInfoCc_t e = {
            .pid = (unsigned int)num(p, "pid", 0),
            .usedGpuMemory = json_is_integer(mem) ? (unsigned long long)json_integer_value(mem)
                                                  : ~0ULL,
            .gpuInstanceId = (unsigned int)num(p, "gi", 0xFFFFFFFF),
            .computeInstanceId = (unsigned int)num(p, "ci", 0xFFFFFFFF),
        };
        char *slot = (char *)infos + i * entry;
        if (entry == sizeof(nvmlProcessInfo_v1_t)) {
            nvmlProcessInfo_v1_t v1 = {e.pid, e.usedGpuMemory};
            memcpy(slot, &v1, sizeof v1);
        } else if (entry == sizeof(nvmlProcessInfo_v2_t)) {
            nvmlProcessInfo_v2_t v2 = {e.pid, e.usedGpuMemory, e.gpuInstanceId,
                                       e.computeInstanceId};
            memcpy(slot, &v2, sizeof v2);
        } else {
            memcpy(slot, &e, sizeof e);
        }
    }
    *count = n;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *count,
                                                         nvmlProcessInfo_v1_t *infos)
{
    return procs(d, "nvmlDeviceGetComputeRunningProcesses", "compute", sizeof *infos, count,
                 infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int *count,
                                                          nvmlProcessInfo_v1_t *infos)
{
    return procs(d, "nvmlDeviceGetGraphicsRunningProcesses", "graphics", sizeof *infos, count,
                 infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                                        int *level)
{
    nvmlReturn_t r = enter(a, "nvmlDeviceGetTopologyCommonAncestor");
    if (!r)
        r = enter(b, "nvmlDeviceGetTopologyCommonAncestor");
    if (r)
        return r;
    json_t *row = json_array_get(json_object_get(g_scn, "topology"), (size_t)a->index);
    json_t *v = json_array_get(row, (size_t)b->index);
    if (!json_is_integer(v))
        return NVML_ERROR_NOT_SUPPORTED;
    *level = (int)json_integer_value(v);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetNvLinkState");
    if (r)
        return r;
    json_t *links = json_object_get(dev_json(d), "nvlinks");
    if (!links)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= FAKE_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = link < json_array_size(links) ? 1 : 0;
    return NVML_SUCCESS;
}

static const char *link_end(nvmlDevice_t d, unsigned int link)
{
    return json_string_value(json_array_get(json_object_get(dev_json(d), "nvlinks"), link));
}

static nvmlReturn_t remote_pci(nvmlDevice_t d, unsigned int link, unsigned int *dom,
                               unsigned int *bus, unsigned int *dev, const char *fn)
{
    nvmlReturn_t r = enter(d, fn);
    if (r)
        return r;
    const char *end = link_end(d, link);
    if (!end)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!parse_bus(end, dom, bus, dev)) {
        /* An NVSwitch has its own PCI address, on no GPU. */
        *dom = 0;
        *bus = 0xfe;
        *dev = link;
    }
    return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t d, unsigned int link,
                                                     nvmlPciInfoOld_t *pci)
{
    unsigned int dom, bus, dev;
    nvmlReturn_t r = remote_pci(d, link, &dom, &bus, &dev, "nvmlDeviceGetNvLinkRemotePciInfo");
    if (r)
        return r;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%04X:%02X:%02X.0", dom & 0xffff, bus, dev);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    return NVML_SUCCESS;
}
#else
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link,
                                                        nvmlPciInfo_t *pci)
{
    unsigned int dom, bus, dev;
    nvmlReturn_t r =
        remote_pci(d, link, &dom, &bus, &dev, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (r)
        return r;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", dom, bus, dev);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned int link,
                                                        int *type)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetNvLinkRemoteDeviceType");
    if (r)
        return r;
    const char *end = link_end(d, link);
    if (!end)
        return NVML_ERROR_INVALID_ARGUMENT;
    *type = strcmp(end, "switch") == 0 ? 2 : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return do_init();
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    return nvmlDeviceGetCount(count);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetMemoryInfo_v2");
    if (r)
        return r;
    if (m->version != (unsigned int)(sizeof *m | 2u << 24))
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    json_t *dj = dev_json(d);
    long long total = num(dj, "memory_total", -1), used = num(dj, "memory_used", -1);
    if (total < 0 || used < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    m->total = (unsigned long long)total;
    m->reserved = (unsigned long long)num(dj, "memory_reserved", 0);
    m->used = (unsigned long long)used;
    m->free = m->total > m->used + m->reserved ? m->total - m->used - m->reserved : 0;
    return NVML_SUCCESS;
}

static size_t v3_entry(void)
{
    long long s = num(g_scn, "process_entry_size", (long long)sizeof(nvmlProcessInfo_v2_t));
    return s == (long long)sizeof(nvmlProcessInfoCc_t) ? sizeof(nvmlProcessInfoCc_t)
                                                       : sizeof(nvmlProcessInfo_v2_t);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                            void *infos)
{
    return procs(d, "nvmlDeviceGetComputeRunningProcesses_v3", "compute", v3_entry(), count,
                 infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d,
                                                             unsigned int *count, void *infos)
{
    return procs(d, "nvmlDeviceGetGraphicsRunningProcesses_v3", "graphics", v3_entry(), count,
                 infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                            nvmlProcessInfo_v2_t *infos)
{
    return procs(d, "nvmlDeviceGetComputeRunningProcesses_v2", "compute", sizeof *infos, count,
                 infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d,
                                                             unsigned int *count,
                                                             nvmlProcessInfo_v2_t *infos)
{
    return procs(d, "nvmlDeviceGetGraphicsRunningProcesses_v2", "graphics", sizeof *infos,
                 count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current,
                                         unsigned int *pending)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetMigMode");
    if (r)
        return r;
    long long m = num(dev_json(d), "mig_mode", -1);
    if (m < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = (unsigned int)m;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetMaxMigDeviceCount");
    if (r)
        return r;
    *count = num(dev_json(d), "mig_mode", 0) == 1 ? FAKE_MAX_MIG : 0;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index,
                                                        nvmlDevice_t *mig)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetMigDeviceHandleByIndex");
    if (r)
        return r;
    if (index >= FAKE_MAX_MIG)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((long long)index >= num(dev_json(d), "mig_instances", 0))
        return NVML_ERROR_NOT_FOUND;
    *mig = &g_mig[d->index][index];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr,
                                              unsigned int *unc, unsigned int *pending,
                                              unsigned int *failed)
{
    nvmlReturn_t r = enter(d, "nvmlDeviceGetRemappedRows");
    if (r)
        return r;
    json_t *dj = dev_json(d);
    *corr = *unc = 0;
    *pending = json_is_true(json_object_get(dj, "remap_pending"));
    *failed = json_is_true(json_object_get(dj, "remap_failed"));
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int cap, int *status)
{
    nvmlReturn_t r = enter(a, "nvmlDeviceGetP2PStatus");
    if (r)
        return r;
    if (cap != 2) /* NVML_P2P_CAPS_INDEX_NVLINK */
        return NVML_ERROR_NOT_SUPPORTED;
    /* Peers over NVLink when a link of either ends at the other, or both reach a switch. */
    json_t *da = dev_json(a), *db = dev_json(b);
    const char *ida = json_string_value(json_object_get(da, "bus_id"));
    const char *idb = json_string_value(json_object_get(db, "bus_id"));
    bool sa = false, sb = false, direct = false;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(da, "nvlinks"), i, v) {
        const char *end = json_is_string(v) ? json_string_value(v) : "";
        sa |= strcmp(end, "switch") == 0;
        direct |= idb && strcasecmp(end, idb) == 0;
    }
    json_array_foreach(json_object_get(db, "nvlinks"), i, v) {
        const char *end = json_is_string(v) ? json_string_value(v) : "";
        sb |= strcmp(end, "switch") == 0;
        direct |= ida && strcasecmp(end, ida) == 0;
    }
    *status = direct || (sa && sb) ? 0 : 5; /* OK : NVML_P2P_STATUS_NOT_SUPPORTED */
    return NVML_SUCCESS;
}
#endif
