/* NVIDIA backend: NVML loaded with dlopen, prototypes and structs declared here (no CUDA
 * SDK at build time). Every call beyond enumeration is optional: a driver that lacks it,
 * or answers NOT_SUPPORTED, leaves the fact unknown (NAN / HBM_UNKNOWN), never 0. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dl.h"
#include "hbm/backend.h"
#include "hbm/util.h"
#include "hbm/text.h"

/* ---- NVML ABI, as the library exports it -------------------------------------------- */

typedef int nv_ret;
typedef struct nv_device_st *nv_dev; /* opaque handle owned by the library */

enum {
    NV_OK = 0,
    NV_ERR_NOT_SUPPORTED = 3,
    NV_ERR_NO_PERMISSION = 4,
    NV_ERR_NOT_FOUND = 6,
    NV_ERR_INSUFFICIENT_SIZE = 7,
    NV_ERR_FUNCTION_NOT_FOUND = 13,
    NV_ERR_GPU_IS_LOST = 15,
};

enum { NV_TEMPERATURE_GPU = 0 };
enum { NV_MEMORY_ERROR_UNCORRECTED = 1, NV_VOLATILE_ECC = 0 };
enum { NV_FEATURE_ENABLED = 1 };
enum { NV_MIG_ENABLE = 1 };
enum { NV_P2P_CAPS_INDEX_NVLINK = 2, NV_P2P_STATUS_OK = 0 };
enum { NV_NVLINK_DEVICE_SWITCH = 2 };
/* Links per GPU in current headers (older ones said 4, 6, 12: asking past a GPU's own
 * count just answers INVALID_ARGUMENT). */
enum { NV_NVLINK_MAX_LINKS = 18 };
/* nvmlGpuTopologyLevel_t */
enum {
    NV_TOPO_INTERNAL = 0,
    NV_TOPO_SINGLE = 10,
    NV_TOPO_MULTIPLE = 20,
    NV_TOPO_HOSTBRIDGE = 30,
    NV_TOPO_NODE = 40,
    NV_TOPO_SYSTEM = 50,
};
/* usedGpuMemory when the driver cannot say (e.g. no permission). */
#define NV_VALUE_NOT_AVAILABLE (~0ULL)

typedef struct nv_memory {
    unsigned long long total, free, used;
} nv_memory;

typedef struct nv_memory_v2 {
    unsigned int version; /* sizeof | 2 << 24 */
    unsigned long long total, reserved, free, used;
} nv_memory_v2;

typedef struct nv_util {
    unsigned int gpu, memory; /* percent */
} nv_util;

/* Current nvmlPciInfo_t. The oldest layout starts with a 16-byte busId followed by the
 * same domain/bus/device words, so those three sit at the same offsets in both. */
typedef struct nv_pci {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nv_pci;

/* Output structs are passed inside a larger zeroed buffer: a driver whose struct grew
 * cannot write past hbmctl's memory. */
typedef union nv_pci_buf {
    nv_pci pci;
    unsigned char room[256];
} nv_pci_buf;

/* Process entries. v1 {u32 pid; u64 used} = 16 bytes, v2 adds {u32 gpuInstanceId; u32
 * computeInstanceId} = 24, and one header generation's v3 adds u64 usedGpuCcProtectedMemory
 * = 32. Drivers and headers disagreed on which one the _v3 call writes (pids came out
 * scrambled in tools that trusted a struct), so the stride is measured, see nv_stride.
 * Fields are read at fixed offsets: pid 0, used 8, gi 16, ci 20. */
/* Bytes of buffer per entry the driver is told about: twice the largest entry any header
 * declared, so a driver with a still larger one cannot write past the buffer. */
enum { NV_PROC_ROOM = 64 };

typedef nv_ret (*nv_void_fn)(void);
typedef const char *(*nv_errstr_fn)(nv_ret);
typedef nv_ret (*nv_uint_fn)(unsigned int *);
typedef nv_ret (*nv_handle_fn)(unsigned int, nv_dev *);
typedef nv_ret (*nv_str_fn)(nv_dev, char *, unsigned int);
typedef nv_ret (*nv_sysstr_fn)(char *, unsigned int);
typedef nv_ret (*nv_dev_uint_fn)(nv_dev, unsigned int *);
typedef nv_ret (*nv_pci_fn)(nv_dev, nv_pci *);
typedef nv_ret (*nv_mem_fn)(nv_dev, nv_memory *);
typedef nv_ret (*nv_mem2_fn)(nv_dev, nv_memory_v2 *);
typedef nv_ret (*nv_util_fn)(nv_dev, nv_util *);
typedef nv_ret (*nv_temp_fn)(nv_dev, int, unsigned int *);
typedef nv_ret (*nv_procs_fn)(nv_dev, unsigned int *, void *);
typedef nv_ret (*nv_mig_fn)(nv_dev, unsigned int *, unsigned int *);
typedef nv_ret (*nv_mig_handle_fn)(nv_dev, unsigned int, nv_dev *);
typedef nv_ret (*nv_ecc_fn)(nv_dev, int, int, unsigned long long *);
typedef nv_ret (*nv_remap_fn)(nv_dev, unsigned int *, unsigned int *, unsigned int *,
                              unsigned int *);
typedef nv_ret (*nv_topo_fn)(nv_dev, nv_dev, int *);
typedef nv_ret (*nv_link_uint_fn)(nv_dev, unsigned int, unsigned int *);
typedef nv_ret (*nv_link_pci_fn)(nv_dev, unsigned int, nv_pci *);
typedef nv_ret (*nv_p2p_fn)(nv_dev, nv_dev, int, int *);

typedef struct nv_api {
    void *lib; /* borrowed: kept loaded by hbm_dl_open */
    nv_void_fn init, shutdown;
    nv_errstr_fn errstr;
    nv_sysstr_fn driver_version;
    nv_uint_fn count;
    nv_handle_fn handle;
    nv_str_fn name, uuid;
    nv_dev_uint_fn index, power, retired_pending;
    nv_pci_fn pci;
    bool pci_has_bus_id; /* _v2/_v3 fill the 32-byte busId */
    nv_mem_fn memory;
    nv_mem2_fn memory_v2;
    nv_util_fn util;
    nv_temp_fn temperature;
    nv_procs_fn compute[3], graphics[3]; /* _v3, _v2, unversioned */
    nv_mig_fn mig_mode;
    nv_dev_uint_fn mig_max;
    nv_mig_handle_fn mig_handle;
    nv_ecc_fn ecc_total;
    nv_remap_fn remapped_rows;
    nv_topo_fn topo;
    nv_link_uint_fn link_state, link_remote_type;
    nv_link_pci_fn link_remote_pci;
    nv_p2p_fn p2p;
} nv_api;

static const char *const nv_lib_names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL};
#define NV_LIB_ENV "HBMCTL_NVML_LIB"

#define NV_SYM(api, field, type, ...) \
    ((api)->field = (type)hbm_dl_sym_any((api)->lib, (const char *const[]){__VA_ARGS__, NULL}))

static void nv_bind(nv_api *a)
{
    NV_SYM(a, init, nv_void_fn, "nvmlInit_v2", "nvmlInit");
    NV_SYM(a, shutdown, nv_void_fn, "nvmlShutdown");
    NV_SYM(a, errstr, nv_errstr_fn, "nvmlErrorString");
    NV_SYM(a, driver_version, nv_sysstr_fn, "nvmlSystemGetDriverVersion");
    NV_SYM(a, count, nv_uint_fn, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    NV_SYM(a, handle, nv_handle_fn, "nvmlDeviceGetHandleByIndex_v2",
           "nvmlDeviceGetHandleByIndex");
    NV_SYM(a, name, nv_str_fn, "nvmlDeviceGetName");
    NV_SYM(a, uuid, nv_str_fn, "nvmlDeviceGetUUID");
    NV_SYM(a, index, nv_dev_uint_fn, "nvmlDeviceGetIndex");
    NV_SYM(a, power, nv_dev_uint_fn, "nvmlDeviceGetPowerUsage");
    NV_SYM(a, retired_pending, nv_dev_uint_fn, "nvmlDeviceGetRetiredPagesPendingStatus");
    NV_SYM(a, pci, nv_pci_fn, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
    a->pci_has_bus_id = a->pci != NULL;
    if (!a->pci)
        NV_SYM(a, pci, nv_pci_fn, "nvmlDeviceGetPciInfo");
    NV_SYM(a, memory, nv_mem_fn, "nvmlDeviceGetMemoryInfo");
    NV_SYM(a, memory_v2, nv_mem2_fn, "nvmlDeviceGetMemoryInfo_v2");
    NV_SYM(a, util, nv_util_fn, "nvmlDeviceGetUtilizationRates");
    NV_SYM(a, temperature, nv_temp_fn, "nvmlDeviceGetTemperature");
    NV_SYM(a, compute[0], nv_procs_fn, "nvmlDeviceGetComputeRunningProcesses_v3");
    NV_SYM(a, compute[1], nv_procs_fn, "nvmlDeviceGetComputeRunningProcesses_v2");
    NV_SYM(a, compute[2], nv_procs_fn, "nvmlDeviceGetComputeRunningProcesses");
    NV_SYM(a, graphics[0], nv_procs_fn, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    NV_SYM(a, graphics[1], nv_procs_fn, "nvmlDeviceGetGraphicsRunningProcesses_v2");
    NV_SYM(a, graphics[2], nv_procs_fn, "nvmlDeviceGetGraphicsRunningProcesses");
    NV_SYM(a, mig_mode, nv_mig_fn, "nvmlDeviceGetMigMode");
    NV_SYM(a, mig_max, nv_dev_uint_fn, "nvmlDeviceGetMaxMigDeviceCount");
    NV_SYM(a, mig_handle, nv_mig_handle_fn, "nvmlDeviceGetMigDeviceHandleByIndex");
    NV_SYM(a, ecc_total, nv_ecc_fn, "nvmlDeviceGetTotalEccErrors");
    NV_SYM(a, remapped_rows, nv_remap_fn, "nvmlDeviceGetRemappedRows");
    NV_SYM(a, topo, nv_topo_fn, "nvmlDeviceGetTopologyCommonAncestor");
    NV_SYM(a, link_state, nv_link_uint_fn, "nvmlDeviceGetNvLinkState");
    NV_SYM(a, link_remote_type, nv_link_uint_fn, "nvmlDeviceGetNvLinkRemoteDeviceType");
    NV_SYM(a, link_remote_pci, nv_link_pci_fn, "nvmlDeviceGetNvLinkRemotePciInfo_v2",
           "nvmlDeviceGetNvLinkRemotePciInfo");
    NV_SYM(a, p2p, nv_p2p_fn, "nvmlDeviceGetP2PStatus");
}

static const char *nv_strerror(const nv_api *a, nv_ret r, char *buf, size_t n)
{
    const char *s = a->errstr ? HBM_VCALL(a->errstr)(r) : NULL;
    if (s && *s)
        snprintf(buf, n, "%s", s);
    else
        snprintf(buf, n, "NVML error %d", r);
    return buf;
}

/* ---- processes ------------------------------------------------------------------------ */

typedef struct nv_proc {
    int64_t pid;
    int64_t mem; /* HBM_UNKNOWN when the driver did not say */
} nv_proc;

typedef struct nv_plist {
    nv_proc *v; /* owned */
    size_t n;
} nv_plist;

static bool nv_pid_plausible(uint32_t pid)
{
    return pid > 0 && pid <= 4194304; /* PID_MAX_LIMIT on 64-bit Linux */
}

/* Which entry size did the driver write? Two calls into buffers pre-filled with different
 * bytes: what the driver wrote is equal in both, what it left differs, so the last equal
 * byte ends entry n-1. When that is inconclusive (the list changed between the calls),
 * the sizes are tried for plausible pids, nominal first. */
static size_t nv_stride(const unsigned char *a, const unsigned char *b, size_t bytes,
                        unsigned int n, bool both, size_t nominal)
{
    static const size_t sizes[] = {16, 24, 32};
    if (both) {
        size_t end = 0;
        for (size_t i = bytes; i > 0; i--)
            if (a[i - 1] == b[i - 1]) {
                end = i;
                break;
            }
        for (size_t k = 0; k < 3; k++)
            if (sizes[k] * n >= end && sizes[k] * n < end + 8)
                return sizes[k];
    }
    size_t order[4] = {nominal, 16, 24, 32};
    for (size_t k = 0; k < 4; k++) {
        bool ok = true;
        for (unsigned int i = 0; i < n && ok; i++) {
            uint32_t pid;
            memcpy(&pid, a + i * order[k], sizeof pid);
            ok = nv_pid_plausible(pid);
        }
        if (ok)
            return order[k];
    }
    return nominal;
}

/* One process call, growing the buffer while the driver says it is too small. */
static nv_ret nv_procs_call(nv_procs_fn fn, nv_dev dev, size_t nominal, nv_plist *out)
{
    unsigned int cap = 64;
    for (int attempt = 0; attempt < 6; attempt++) {
        size_t bytes = (size_t)cap * NV_PROC_ROOM;
        unsigned char *a = hbm_xmalloc(bytes);
        unsigned char *b = hbm_xmalloc(bytes);
        memset(a, 0xA5, bytes);
        memset(b, 0x5A, bytes);
        unsigned int na = cap;
        nv_ret r = HBM_VCALL(fn)(dev, &na, a);
        if (r == NV_ERR_INSUFFICIENT_SIZE) {
            free(a);
            free(b);
            cap = (na > cap ? na : cap * 2) + 16;
            continue;
        }
        if (r != NV_OK || na == 0 || na > cap) {
            free(a);
            free(b);
            return r == NV_OK && na > cap ? NV_ERR_INSUFFICIENT_SIZE : r;
        }
        unsigned int nb = cap;
        nv_ret rb = HBM_VCALL(fn)(dev, &nb, b);
        size_t stride = nv_stride(a, b, bytes, na, rb == NV_OK && nb == na, nominal);
        out->v = hbm_xrealloc(out->v, (out->n + na) * sizeof *out->v);
        for (unsigned int i = 0; i < na; i++) {
            uint32_t pid;
            unsigned long long used;
            memcpy(&pid, a + i * stride, sizeof pid);
            memcpy(&used, a + i * stride + 8, sizeof used);
            nv_proc *p = &out->v[out->n++];
            p->pid = pid;
            p->mem = used == NV_VALUE_NOT_AVAILABLE || used > (unsigned long long)INT64_MAX
                         ? HBM_UNKNOWN
                         : (int64_t)used;
        }
        free(a);
        free(b);
        return NV_OK;
    }
    return NV_ERR_INSUFFICIENT_SIZE;
}

/* Newest call first; a version the driver refuses to serve falls back to the older one. */
static nv_ret nv_procs_list(const nv_procs_fn fns[3], nv_dev dev, nv_plist *out)
{
    static const size_t nominal[3] = {24, 24, 16};
    nv_ret r = NV_ERR_FUNCTION_NOT_FOUND;
    for (int v = 0; v < 3; v++) {
        if (!fns[v])
            continue;
        out->n = 0;
        r = nv_procs_call(fns[v], dev, nominal[v], out);
        if (r != NV_ERR_FUNCTION_NOT_FOUND && r != NV_ERR_NOT_SUPPORTED)
            return r;
    }
    return r;
}

/* One pid may appear several times in a list (once per MIG instance: summed) and in both
 * the compute and the graphics list (the same memory: the larger figure is kept). */
static void nv_sum_by_pid(nv_plist *l)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        size_t j = 0;
        while (j < k && l->v[j].pid != l->v[i].pid)
            j++;
        if (j == k) {
            l->v[k++] = l->v[i];
        } else if (l->v[j].mem == HBM_UNKNOWN || l->v[i].mem == HBM_UNKNOWN) {
            l->v[j].mem = HBM_UNKNOWN;
        } else {
            l->v[j].mem += l->v[i].mem;
        }
    }
    l->n = k;
}

static void nv_fill_procs(const nv_api *a, nv_dev dev, hbm_device *d)
{
    nv_plist c = {0}, g = {0};
    nv_ret rc = nv_procs_list(a->compute, dev, &c);
    nv_ret rg = nv_procs_list(a->graphics, dev, &g);
    if (rc != NV_OK)
        c.n = 0;
    if (rg != NV_OK)
        g.n = 0;
    nv_sum_by_pid(&c);
    nv_sum_by_pid(&g);
    for (size_t i = 0; i < g.n; i++) {
        size_t j = 0;
        while (j < c.n && c.v[j].pid != g.v[i].pid)
            j++;
        if (j == c.n) {
            c.v = hbm_xrealloc(c.v, (c.n + 1) * sizeof *c.v);
            c.v[c.n++] = g.v[i];
        } else if (g.v[i].mem > c.v[j].mem) {
            c.v[j].mem = g.v[i].mem;
        }
    }
    d->procs_known = rc == NV_OK || rg == NV_OK;
    for (size_t i = 0; i < c.n; i++) {
        hbm_dproc *p = hbm_device_add_proc(d);
        p->pid = c.v[i].pid;
        p->memory_bytes = c.v[i].mem;
    }
    free(c.v);
    free(g.v);
}

/* ---- per device ------------------------------------------------------------------------ */

typedef struct nv_loc {
    unsigned int domain, bus, device;
    bool known;
} nv_loc;

/* What the topology pass needs about each GPU. */
typedef struct nv_gpu {
    nv_dev h;
    nv_loc loc;
    nv_loc peer[NV_NVLINK_MAX_LINKS]; /* PCI location at the far end of each active link */
    bool to_switch;                   /* an active link ends at an NVSwitch */
} nv_gpu;

static void nv_fill_health(const nv_api *a, nv_dev dev, hbm_device *d)
{
    bool checked = false;
    unsigned long long ecc = 0;
    if (a->ecc_total &&
        HBM_VCALL(a->ecc_total)(dev, NV_MEMORY_ERROR_UNCORRECTED, NV_VOLATILE_ECC, &ecc) == NV_OK) {
        checked = true;
        if (ecc > 0) {
            hbm_text_fitf(d->health, sizeof d->health, "ECC: %llu uncorrected", ecc);
            d->healthy = false;
            return;
        }
    }
    unsigned int corr = 0, unc = 0, pending = 0, failed = 0;
    if (a->remapped_rows &&
        HBM_VCALL(a->remapped_rows)(dev, &corr, &unc, &pending, &failed) == NV_OK) {
        checked = true;
        if (failed || pending) {
            snprintf(d->health, sizeof d->health, "%s",
                     failed ? "row remapping failed" : "row remap pending: reset");
            d->healthy = false;
            return;
        }
    }
    unsigned int retire = 0;
    if (a->retired_pending && HBM_VCALL(a->retired_pending)(dev, &retire) == NV_OK) {
        checked = true;
        if (retire == NV_FEATURE_ENABLED) {
            snprintf(d->health, sizeof d->health, "page retirement pending");
            d->healthy = false;
            return;
        }
    }
    if (checked)
        snprintf(d->health, sizeof d->health, "OK");
}

static void nv_fill_mig(const nv_api *a, nv_dev dev, hbm_device *d)
{
    unsigned int cur = 0, pending = 0;
    if (!a->mig_mode || HBM_VCALL(a->mig_mode)(dev, &cur, &pending) != NV_OK ||
        cur != NV_MIG_ENABLE)
        return;
    unsigned int max = 0, inst = 0;
    bool counted = a->mig_max && a->mig_handle && HBM_VCALL(a->mig_max)(dev, &max) == NV_OK;
    for (unsigned int i = 0; counted && i < max; i++) {
        nv_dev m;
        if (HBM_VCALL(a->mig_handle)(dev, i, &m) == NV_OK)
            inst++;
    }
    if (counted)
        snprintf(d->mig, sizeof d->mig, "enabled, %u instance%s", inst, inst == 1 ? "" : "s");
    else
        snprintf(d->mig, sizeof d->mig, "enabled");
}

static void nv_fill_links(const nv_api *a, nv_gpu *g)
{
    if (!a->link_state)
        return;
    for (unsigned int l = 0; l < NV_NVLINK_MAX_LINKS; l++) {
        unsigned int active = 0;
        if (HBM_VCALL(a->link_state)(g->h, l, &active) != NV_OK || active != NV_FEATURE_ENABLED)
            continue;
        unsigned int type = 0;
        if (a->link_remote_type && HBM_VCALL(a->link_remote_type)(g->h, l, &type) == NV_OK &&
            type == NV_NVLINK_DEVICE_SWITCH) {
            g->to_switch = true;
            continue;
        }
        nv_pci_buf pb;
        memset(&pb, 0, sizeof pb);
        if (a->link_remote_pci && HBM_VCALL(a->link_remote_pci)(g->h, l, &pb.pci) == NV_OK)
            g->peer[l] = (nv_loc){pb.pci.domain, pb.pci.bus, pb.pci.device, true};
    }
}

/* Fills one device; returns false when the GPU is not ours to see (no permission). */
static bool nv_fill_device(const nv_api *a, unsigned int i, hbm_obs *obs, nv_gpu *g)
{
    nv_ret r = HBM_VCALL(a->handle)(i, &g->h);
    if (r == NV_ERR_NO_PERMISSION || r == NV_ERR_NOT_FOUND)
        return false;
    hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_NVIDIA);
    d->index = i;
    d->chip = 0;
    if (r != NV_OK) {
        char e[128];
        g->h = NULL;
        snprintf(d->health, sizeof d->health, "%s",
                 r == NV_ERR_GPU_IS_LOST ? "GPU lost" : nv_strerror(a, r, e, sizeof e));
        d->healthy = r != NV_ERR_GPU_IS_LOST;
        return true;
    }
    unsigned int u = 0;
    if (a->index && HBM_VCALL(a->index)(g->h, &u) == NV_OK)
        d->index = u;
    char buf[128];
    if (a->name && HBM_VCALL(a->name)(g->h, buf, sizeof buf) == NV_OK)
        hbm_dl_copy(d->name, sizeof d->name, buf, sizeof buf);
    if (a->uuid && HBM_VCALL(a->uuid)(g->h, buf, sizeof buf) == NV_OK)
        hbm_dl_copy(d->uuid, sizeof d->uuid, buf, sizeof buf);
    nv_pci_buf pb;
    memset(&pb, 0, sizeof pb);
    if (a->pci && HBM_VCALL(a->pci)(g->h, &pb.pci) == NV_OK) {
        g->loc = (nv_loc){pb.pci.domain, pb.pci.bus, pb.pci.device, true};
        if (a->pci_has_bus_id && pb.pci.bus_id[0])
            hbm_dl_copy(d->bus_id, sizeof d->bus_id, pb.pci.bus_id, sizeof pb.pci.bus_id);
        else
            snprintf(d->bus_id, sizeof d->bus_id, "%08X:%02X:%02X.0", pb.pci.domain,
                     pb.pci.bus, pb.pci.device);
    }

    nv_memory_v2 m2 = {.version = (unsigned int)(sizeof m2 | 2u << 24)};
    nv_memory m1 = {0};
    nv_ret rm = a->memory_v2 ? HBM_VCALL(a->memory_v2)(g->h, &m2) : NV_ERR_FUNCTION_NOT_FOUND;
    if (rm == NV_OK) {
        d->memory_total_bytes = (int64_t)m2.total;
        d->memory_used_bytes = (int64_t)m2.used;
        d->memory_reserved_bytes = (int64_t)m2.reserved;
    } else if (a->memory && (rm = HBM_VCALL(a->memory)(g->h, &m1)) == NV_OK) {
        d->memory_total_bytes = (int64_t)m1.total;
        d->memory_used_bytes = (int64_t)m1.used;
    }
    nv_util ut;
    if (a->util && HBM_VCALL(a->util)(g->h, &ut) == NV_OK && ut.gpu <= 100)
        d->utilization_ratio = ut.gpu / 100.0;
    if (a->temperature && HBM_VCALL(a->temperature)(g->h, NV_TEMPERATURE_GPU, &u) == NV_OK)
        d->temperature_celsius = u;
    if (a->power && HBM_VCALL(a->power)(g->h, &u) == NV_OK)
        d->power_watts = u / 1000.0;

    nv_fill_health(a, g->h, d);
    if (rm == NV_ERR_GPU_IS_LOST) {
        snprintf(d->health, sizeof d->health, "GPU lost");
        d->healthy = false;
    }
    nv_fill_mig(a, g->h, d);
    nv_fill_procs(a, g->h, d);
    nv_fill_links(a, g);
    return true;
}

/* ---- topology ------------------------------------------------------------------------- */

static bool nv_loc_eq(nv_loc x, nv_loc y)
{
    return x.known && y.known && x.domain == y.domain && x.bus == y.bus && x.device == y.device;
}

static bool nv_nvlinked(const nv_api *a, const nv_gpu *x, const nv_gpu *y)
{
    for (int l = 0; l < NV_NVLINK_MAX_LINKS; l++)
        if (nv_loc_eq(x->peer[l], y->loc) || nv_loc_eq(y->peer[l], x->loc))
            return true;
    if (x->to_switch && y->to_switch)
        return true;
    /* P2P over NVLink covers fabrics whose link calls say little (older drivers). */
    int st = -1;
    return a->p2p && HBM_VCALL(a->p2p)(x->h, y->h, NV_P2P_CAPS_INDEX_NVLINK, &st) == NV_OK &&
           st == NV_P2P_STATUS_OK;
}

static hbm_link nv_level_link(int level)
{
    switch (level) {
    case NV_TOPO_INTERNAL: /* two GPUs on one board */
    case NV_TOPO_SINGLE: return HBM_LINK_PIX;
    case NV_TOPO_MULTIPLE: return HBM_LINK_PXB;
    case NV_TOPO_HOSTBRIDGE: return HBM_LINK_PHB;
    case NV_TOPO_NODE: return HBM_LINK_NODE;
    case NV_TOPO_SYSTEM: return HBM_LINK_SYS;
    default: return HBM_LINK_UNKNOWN;
    }
}

static void nv_fill_topo(const nv_api *a, hbm_obs *obs, size_t base, const nv_gpu *g, size_t n)
{
    size_t total = obs->ndevs;
    if (n < 2 || base + n != total)
        return;
    hbm_link *m = hbm_xcalloc(total * total, sizeof *m);
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            hbm_link l = HBM_LINK_UNKNOWN;
            int level = -1;
            if (i == j)
                l = HBM_LINK_SELF;
            else if (!g[i].h || !g[j].h)
                l = HBM_LINK_UNKNOWN;
            else if (nv_nvlinked(a, &g[i], &g[j]))
                l = HBM_LINK_NVLINK;
            else if (a->topo && HBM_VCALL(a->topo)(g[i].h, g[j].h, &level) == NV_OK)
                l = nv_level_link(level);
            any |= i != j && l != HBM_LINK_UNKNOWN;
            m[(base + i) * total + base + j] = l;
        }
    }
    if (any)
        hbm_obs_set_topo(obs, m, total);
    free(m);
}

/* ---- the backend ------------------------------------------------------------------------ */

static int nvml_calls(hbm_obs *obs, hbm_err *err)
{
    nv_api a;
    memset(&a, 0, sizeof a);
    hbm_err why = {{0}};
    a.lib = hbm_dl_open(NV_LIB_ENV, nv_lib_names, &why);
    if (!a.lib)
        return hbm_err_set(err, "%s", why.msg);
    nv_bind(&a);
    if (!a.init || !a.shutdown || !a.count || !a.handle)
        return hbm_err_set(err, "the library lacks nvmlInit/nvmlDeviceGetCount/"
                                "nvmlDeviceGetHandleByIndex");
    char e[128];
    nv_ret r = HBM_VCALL(a.init)();
    if (r != NV_OK)
        return hbm_err_set(err, "nvmlInit: %s", nv_strerror(&a, r, e, sizeof e));
    unsigned int n = 0;
    r = HBM_VCALL(a.count)(&n);
    if (r != NV_OK) {
        hbm_err_set(err, "nvmlDeviceGetCount: %s", nv_strerror(&a, r, e, sizeof e));
        HBM_VCALL(a.shutdown)();
        return -1;
    }
    char ver[96];
    if (a.driver_version && HBM_VCALL(a.driver_version)(ver, sizeof ver) == NV_OK)
        hbm_dl_copy(obs->driver_version, sizeof obs->driver_version, ver, sizeof ver);
    snprintf(obs->backend, sizeof obs->backend, "nvml");
    size_t base = obs->ndevs;
    nv_gpu *g = hbm_xcalloc(n ? n : 1, sizeof *g);
    size_t k = 0;
    for (unsigned int i = 0; i < n; i++) {
        memset(&g[k], 0, sizeof g[k]);
        if (nv_fill_device(&a, i, obs, &g[k]))
            k++;
    }
    nv_fill_topo(&a, obs, base, g, k);
    free(g);
    HBM_VCALL(a.shutdown)();
    return 0;
}

static int nvml_observe(hbm_obs *obs, double timeout, hbm_err *err)
{
    return hbm_vcall_run("nvml", nvml_calls, obs, timeout, err);
}

const hbm_backend hbm_backend_nvml = {
    .name = "nvml",
    .observe = nvml_observe,
};
