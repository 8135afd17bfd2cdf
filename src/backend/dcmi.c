/* Ascend backend: DCMI (libdcmi.so, the driver's management library) loaded with dlopen;
 * the prototypes and structs used are declared here (no Ascend SDK at build time). Field
 * layouts and units follow research/ascend-dcmi.md: memory in MB, power in 0.1 W, process
 * memory in bytes, ids in four numberings (card, chip in card, logic, physical). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dl.h"
#include "hbm/backend.h"
#include "hbm/util.h"

/* ---- DCMI ABI ------------------------------------------------------------------------ */

enum {
    DC_OK = 0,
    DC_MAX_CARDS = 64,             /* MAX_CARD_NUM */
    DC_NAME_LEN = 32,              /* MAX_CHIP_NAME_LEN */
    DC_ERR_NOT_SUPPORT = -8255,
    DC_UTIL_AICORE = 2,            /* DCMI_UTILIZATION_RATE_AICORE */
    DC_UTIL_VF_BIT = 1 << 9,       /* set by some drivers on a virtualised (vNPU) chip */
    DC_NPU_TYPE = 0,               /* enum dcmi_unit_type */
    DC_HEALTH_ABSENT = -1,         /* 0xFFFFFFFF: the device does not exist */
    DC_TEMP_INVALID = 0x7ffd,
    DC_TEMP_FAILED = 0x7fff,
};
/* The process call takes no capacity: the driver writes up to 64 entries
 * (MAX_PROC_NUM_IN_DEVICE), whatever older headers said (32). The buffer has room for
 * twice that, so a driver that raises its limit still cannot write past it. */
enum { DC_PROCS_DRIVER_MAX = 64, DC_PROCS_ROOM = 2 * DC_PROCS_DRIVER_MAX };

struct dc_chip_info {
    unsigned char chip_type[DC_NAME_LEN];
    unsigned char chip_name[DC_NAME_LEN];
    unsigned char chip_ver[DC_NAME_LEN];
    unsigned int aicore_cnt;
};

struct dc_hbm_info { /* dcmi_hbm_info and the legacy dsmi_hbm_info_stru: MB */
    unsigned long long memory_size;
    unsigned int freq;
    unsigned long long memory_usage;
    int temp;
    unsigned int bandwith_util_rate;
};

struct dc_mem_v3 { /* dcmi_get_memory_info_stru */
    unsigned long long memory_size;      /* MB */
    unsigned long long memory_available; /* MB: free + free hugepages */
    unsigned int freq;
    unsigned long hugepagesize; /* KB */
    unsigned long hugepages_total;
    unsigned long hugepages_free;
    unsigned int utiliza;
    unsigned char reserve[60];
};

struct dc_mem_v2 { /* dcmi_memory_info */
    unsigned long long memory_size; /* MB */
    unsigned int freq;
    unsigned int utiliza; /* percent */
};

struct dc_proc {
    int proc_id;                   /* host pid */
    unsigned long proc_mem_usage;  /* bytes */
};

struct dc_pcie_all { /* dcmi_pcie_info_all (the _v2 call) */
    unsigned int venderid, subvenderid, deviceid, subdeviceid;
    int domain;
    unsigned int bdf_busid, bdf_deviceid, bdf_funcid;
    unsigned char reserve[32];
};

struct dc_pcie { /* dcmi_pcie_info: other field order, no domain */
    unsigned int deviceid, venderid, subvenderid, subdeviceid;
    unsigned int bdf_deviceid, bdf_busid, bdf_funcid;
};

/* Every output struct goes inside a larger zeroed buffer: a header the driver has
 * outgrown cannot make it write past hbmctl's memory. */
#define DC_ROOM(type)                                                                       \
    union {                                                                                 \
        type v;                                                                             \
        unsigned char room[512];                                                            \
    }

/* The topology codes. 0..5 agree in every header; 6 is SIO (between the dies of one
 * card) in current headers but "unknown" (BUTT) in older ones; 7 switched HCCS; 8 UB or
 * "unknown" depending on the header; 9 unknown. */
enum { DC_TOPO_SELF, DC_TOPO_SYS, DC_TOPO_PHB, DC_TOPO_HCCS, DC_TOPO_PXB, DC_TOPO_PIX,
       DC_TOPO_SIO_OR_OLD_UNKNOWN, DC_TOPO_HCCS_SW };

typedef int (*dc_init_fn)(void);
typedef int (*dc_ver_fn)(char *, unsigned int);
typedef int (*dc_cards_fn)(int *, int *, int);
typedef int (*dc_card_int_fn)(int, int *);
typedef int (*dc_logic_fn)(int *, int, int);
typedef int (*dc_phy_fn)(unsigned int, unsigned int *);
typedef int (*dc_type_fn)(int, int, int *);
typedef int (*dc_chip_fn)(int, int, struct dc_chip_info *);
typedef int (*dc_uint_fn)(int, int, unsigned int *);
typedef int (*dc_int_fn)(int, int, int *);
typedef int (*dc_errcode_fn)(int, int, int *, unsigned int *, unsigned int);
typedef int (*dc_hbm_fn)(int, int, struct dc_hbm_info *);
typedef int (*dc_mem3_fn)(int, int, struct dc_mem_v3 *);
typedef int (*dc_mem2_fn)(int, int, struct dc_mem_v2 *);
typedef int (*dc_util_fn)(int, int, int, unsigned int *);
typedef int (*dc_procs_fn)(int, int, struct dc_proc *, int *);
typedef int (*dc_pcie2_fn)(int, int, struct dc_pcie_all *);
typedef int (*dc_pcie_fn)(int, int, struct dc_pcie *);
typedef int (*dc_topo_fn)(int, int, int, int, int *);

typedef struct dc_api {
    void *lib; /* borrowed: kept loaded by hbm_dl_open */
    dc_init_fn init;
    dc_ver_fn driver_version;
    dc_cards_fn cards;
    dc_card_int_fn chips_in_card;
    dc_logic_fn logic_id;
    dc_phy_fn phy_from_logic;
    dc_type_fn unit_type;
    dc_chip_fn chip_info;
    dc_uint_fn health;
    dc_errcode_fn errcodes;
    dc_int_fn temperature, power;
    dc_hbm_fn hbm;
    dc_mem3_fn mem_v3;
    dc_mem2_fn mem_v2;
    dc_util_fn util;
    dc_procs_fn procs;
    dc_pcie2_fn pcie_v2;
    dc_pcie_fn pcie;
    dc_topo_fn topo;
} dc_api;

/* Where drivers install it; research/ascend-dcmi.md §15. */
static const char *const dc_lib_names[] = {
    "libdcmi.so",
    "/usr/local/Ascend/driver/lib64/driver/libdcmi.so",
    "/usr/local/dcmi/libdcmi.so",
    NULL,
};
#define DC_LIB_ENV "HBMCTL_DCMI_LIB"

#define DC_SYM(api, field, type, ...) \
    ((api)->field = (type)hbm_dl_sym_any((api)->lib, (const char *const[]){__VA_ARGS__, NULL}))

static void dc_bind(dc_api *a)
{
    DC_SYM(a, init, dc_init_fn, "dcmi_init");
    DC_SYM(a, driver_version, dc_ver_fn, "dcmi_get_driver_version");
    /* dcmi_get_card_num_list is the deprecated twin with the same signature. */
    DC_SYM(a, cards, dc_cards_fn, "dcmi_get_card_list", "dcmi_get_card_num_list");
    DC_SYM(a, chips_in_card, dc_card_int_fn, "dcmi_get_device_num_in_card");
    DC_SYM(a, logic_id, dc_logic_fn, "dcmi_get_device_logic_id");
    DC_SYM(a, phy_from_logic, dc_phy_fn, "dcmi_get_device_phyid_from_logicid");
    DC_SYM(a, unit_type, dc_type_fn, "dcmi_get_device_type");
    DC_SYM(a, chip_info, dc_chip_fn, "dcmi_get_device_chip_info");
    DC_SYM(a, health, dc_uint_fn, "dcmi_get_device_health");
    DC_SYM(a, errcodes, dc_errcode_fn, "dcmi_get_device_errorcode_v2");
    DC_SYM(a, temperature, dc_int_fn, "dcmi_get_device_temperature");
    DC_SYM(a, power, dc_int_fn, "dcmi_get_device_power_info");
    /* The legacy dcmi_get_hbm_info has the same layout and, per the implementation, the
     * same MB units whatever its header comment says. */
    DC_SYM(a, hbm, dc_hbm_fn, "dcmi_get_device_hbm_info", "dcmi_get_hbm_info");
    DC_SYM(a, mem_v3, dc_mem3_fn, "dcmi_get_device_memory_info_v3");
    DC_SYM(a, mem_v2, dc_mem2_fn, "dcmi_get_device_memory_info_v2", "dcmi_get_memory_info");
    DC_SYM(a, util, dc_util_fn, "dcmi_get_device_utilization_rate");
    DC_SYM(a, procs, dc_procs_fn, "dcmi_get_device_resource_info");
    DC_SYM(a, pcie_v2, dc_pcie2_fn, "dcmi_get_device_pcie_info_v2");
    DC_SYM(a, pcie, dc_pcie_fn, "dcmi_get_device_pcie_info");
    DC_SYM(a, topo, dc_topo_fn, "dcmi_get_topo_info_by_device_id");
}

static const char *dc_strerror(int code)
{
    switch (code) {
    case -8001: return "invalid parameter";
    case -8002: return "operation not permitted";
    case -8005: return "internal error";
    case -8006: return "timed out";
    case -8007: return "invalid device id";
    case -8008: return "device does not exist";
    case -8009: return "ioctl failed";
    case -8012: return "not ready, retry";
    case -8013: return "not supported in a container";
    case -8020: return "device resources occupied";
    case -8255: return "not supported";
    default: return "error";
    }
}

/* ---- one chip ------------------------------------------------------------------------- */

typedef struct dc_chip {
    int card, dev;
} dc_chip;

static void dc_fill_health(const dc_api *a, dc_chip c, hbm_device *d)
{
    unsigned int h = 0;
    if (!a->health || HBM_VCALL(a->health)(c.card, c.dev, &h) != DC_OK)
        return;
    static const char *const words[] = {"OK", "Warning", "Alarm", "Critical"};
    const char *w = (int)h == DC_HEALTH_ABSENT ? "Absent" : h < 4 ? words[h] : "UNKNOWN";
    /* Minor alarms leave a chip usable; major and critical ones, or a chip the driver
     * says is gone, are evidence it is not. A code this table lacks is no evidence. */
    d->healthy = h != 2 && h != 3 && (int)h != DC_HEALTH_ABSENT;
    unsigned int codes[128];
    int ncodes = 0;
    if (h != 0 && a->errcodes &&
        HBM_VCALL(a->errcodes)(c.card, c.dev, &ncodes, codes, sizeof codes / sizeof *codes) ==
            DC_OK &&
        ncodes > 0)
        snprintf(d->health, sizeof d->health, "%s 0x%08X", w, codes[0]);
    else
        snprintf(d->health, sizeof d->health, "%s", w);
}

/* HBM on the 910 family; chips without HBM (310, 310P, 310B) answer NOT_SUPPORT or a zero
 * size there and report their memory through the general memory call, with the card
 * hugepages npu-smi shows. First-generation 910 has both: HBM is its memory, the other
 * one its DDR. */
static void dc_fill_memory(const dc_api *a, dc_chip c, hbm_device *d)
{
    DC_ROOM(struct dc_hbm_info) hbm;
    memset(&hbm, 0, sizeof hbm);
    bool have_hbm = a->hbm && HBM_VCALL(a->hbm)(c.card, c.dev, &hbm.v) == DC_OK &&
                    hbm.v.memory_size > 0;
    if (have_hbm) {
        d->memory_total_bytes = (int64_t)hbm.v.memory_size * HBM_MIB;
        d->memory_used_bytes = (int64_t)hbm.v.memory_usage * HBM_MIB;
    }
    DC_ROOM(struct dc_mem_v3) m3;
    memset(&m3, 0, sizeof m3);
    int64_t total = HBM_UNKNOWN, used = HBM_UNKNOWN;
    if (a->mem_v3 && HBM_VCALL(a->mem_v3)(c.card, c.dev, &m3.v) == DC_OK &&
        m3.v.memory_size > 0) {
        total = (int64_t)m3.v.memory_size * HBM_MIB;
        if (m3.v.memory_available <= m3.v.memory_size)
            used = (int64_t)(m3.v.memory_size - m3.v.memory_available) * HBM_MIB;
        if (m3.v.hugepages_free <= m3.v.hugepages_total) {
            d->hugepages_total = (int64_t)m3.v.hugepages_total;
            d->hugepages_used = (int64_t)(m3.v.hugepages_total - m3.v.hugepages_free);
        }
    } else {
        DC_ROOM(struct dc_mem_v2) m2;
        memset(&m2, 0, sizeof m2);
        if (a->mem_v2 && HBM_VCALL(a->mem_v2)(c.card, c.dev, &m2.v) == DC_OK &&
            m2.v.memory_size > 0) {
            total = (int64_t)m2.v.memory_size * HBM_MIB;
            if (m2.v.utiliza <= 100)
                used = total * (int64_t)m2.v.utiliza / 100;
        }
    }
    if (have_hbm) {
        d->ddr_total_bytes = total;
        d->ddr_used_bytes = used;
    } else {
        d->memory_total_bytes = total;
        d->memory_used_bytes = used;
    }
}

static void dc_fill_procs(const dc_api *a, dc_chip c, hbm_device *d)
{
    if (!a->procs)
        return;
    struct dc_proc *buf = hbm_xcalloc(DC_PROCS_ROOM, sizeof *buf);
    int n = 0;
    if (HBM_VCALL(a->procs)(c.card, c.dev, buf, &n) == DC_OK) {
        d->procs_known = true;
        if (n > DC_PROCS_ROOM) {
            n = DC_PROCS_ROOM;
            d->procs_truncated = true;
        }
        for (int i = 0; i < n; i++) {
            hbm_dproc *p = hbm_device_add_proc(d);
            p->pid = buf[i].proc_id;
            p->memory_bytes = buf[i].proc_mem_usage > (unsigned long)INT64_MAX
                                  ? HBM_UNKNOWN
                                  : (int64_t)buf[i].proc_mem_usage;
        }
    }
    free(buf);
}

static void dc_fill_bus_id(const dc_api *a, dc_chip c, hbm_device *d)
{
    DC_ROOM(struct dc_pcie_all) p2;
    memset(&p2, 0, sizeof p2);
    if (a->pcie_v2 && HBM_VCALL(a->pcie_v2)(c.card, c.dev, &p2.v) == DC_OK) {
        snprintf(d->bus_id, sizeof d->bus_id, "%04X:%02X:%02X.%X", (unsigned)p2.v.domain & 0xffff,
                 p2.v.bdf_busid & 0xff, p2.v.bdf_deviceid & 0x1f, p2.v.bdf_funcid & 0x7);
        return;
    }
    DC_ROOM(struct dc_pcie) p1;
    memset(&p1, 0, sizeof p1);
    if (a->pcie && HBM_VCALL(a->pcie)(c.card, c.dev, &p1.v) == DC_OK)
        snprintf(d->bus_id, sizeof d->bus_id, "0000:%02X:%02X.%X", p1.v.bdf_busid & 0xff,
                 p1.v.bdf_deviceid & 0x1f, p1.v.bdf_funcid & 0x7);
}

static void dc_fill_chip(const dc_api *a, dc_chip c, hbm_obs *obs)
{
    hbm_device *d = hbm_obs_add_device(obs, HBM_VENDOR_ASCEND);
    d->index = c.card;
    d->chip = c.dev;
    int logic = -1;
    if (a->logic_id && HBM_VCALL(a->logic_id)(&logic, c.card, c.dev) == DC_OK && logic >= 0) {
        d->logic_id = logic;
        unsigned int phy = 0;
        if (a->phy_from_logic && HBM_VCALL(a->phy_from_logic)((unsigned int)logic, &phy) == DC_OK)
            d->phy_id = phy;
    }
    DC_ROOM(struct dc_chip_info) ci;
    memset(&ci, 0, sizeof ci);
    if (a->chip_info && HBM_VCALL(a->chip_info)(c.card, c.dev, &ci.v) == DC_OK)
        hbm_dl_copy(d->name, sizeof d->name, (const char *)ci.v.chip_name,
                    sizeof ci.v.chip_name);
    dc_fill_health(a, c, d);
    int v = 0;
    if (a->temperature && HBM_VCALL(a->temperature)(c.card, c.dev, &v) == DC_OK &&
        v != DC_TEMP_INVALID && v != DC_TEMP_FAILED && v > -100 && v < 300)
        d->temperature_celsius = v;
    if (a->power && HBM_VCALL(a->power)(c.card, c.dev, &v) == DC_OK && v >= 0)
        d->power_watts = v / 10.0;
    unsigned int u = 0;
    if (a->util && HBM_VCALL(a->util)(c.card, c.dev, DC_UTIL_AICORE, &u) == DC_OK) {
        u &= ~(unsigned int)DC_UTIL_VF_BIT;
        if (u <= 100)
            d->utilization_ratio = u / 100.0;
    }
    dc_fill_memory(a, c, d);
    dc_fill_procs(a, c, d);
    dc_fill_bus_id(a, c, d);
}

/* ---- topology --------------------------------------------------------------------------- */

static hbm_link dc_topo_link(int code, bool same_card)
{
    switch (code) {
    case DC_TOPO_SELF: return HBM_LINK_SELF;
    case DC_TOPO_SYS: return HBM_LINK_SYS;
    case DC_TOPO_PHB: return HBM_LINK_PHB;
    case DC_TOPO_HCCS: return HBM_LINK_HCCS;
    case DC_TOPO_PXB: return HBM_LINK_PXB;
    case DC_TOPO_PIX: return HBM_LINK_PIX;
    /* Only dies of one card talk over SIO; elsewhere 6 is an old driver's "unknown". */
    case DC_TOPO_SIO_OR_OLD_UNKNOWN: return same_card ? HBM_LINK_HCCS : HBM_LINK_UNKNOWN;
    case DC_TOPO_HCCS_SW: return HBM_LINK_HCCS;
    default: return HBM_LINK_UNKNOWN;
    }
}

static void dc_fill_topo(const dc_api *a, hbm_obs *obs, size_t base, const dc_chip *c,
                         size_t n)
{
    size_t total = obs->ndevs;
    if (!a->topo || n < 2 || base + n != total)
        return;
    hbm_link *m = hbm_xcalloc(total * total, sizeof *m);
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            hbm_link l = HBM_LINK_SELF;
            if (i != j) {
                int code = -1;
                int r = HBM_VCALL(a->topo)(c[i].card, c[i].dev, c[j].card, c[j].dev, &code);
                if (r == DC_ERR_NOT_SUPPORT) /* 310P, 950: asking each pair is pointless */
                    goto done;
                l = r == DC_OK ? dc_topo_link(code, c[i].card == c[j].card) : HBM_LINK_UNKNOWN;
                any |= l != HBM_LINK_UNKNOWN;
            }
            m[(base + i) * total + base + j] = l;
        }
    }
    if (any)
        hbm_obs_set_topo(obs, m, total);
done:
    free(m);
}

/* ---- the backend ------------------------------------------------------------------------ */

static int dcmi_calls(hbm_obs *obs, hbm_err *err)
{
    dc_api a;
    memset(&a, 0, sizeof a);
    hbm_err why = {{0}};
    a.lib = hbm_dl_open(DC_LIB_ENV, dc_lib_names, &why);
    if (!a.lib)
        return hbm_err_set(err, "%s", why.msg);
    dc_bind(&a);
    if (!a.init || !a.cards || !a.chips_in_card)
        return hbm_err_set(err, "the library lacks dcmi_init/dcmi_get_card_list/"
                                "dcmi_get_device_num_in_card");
    /* Documented as required before any other call; there is no matching shutdown. */
    int r = HBM_VCALL(a.init)();
    if (r != DC_OK)
        return hbm_err_set(err, "dcmi_init: %d (%s)", r, dc_strerror(r));
    int cards[DC_MAX_CARDS];
    int ncards = 0;
    r = HBM_VCALL(a.cards)(&ncards, cards, DC_MAX_CARDS);
    if (r != DC_OK)
        return hbm_err_set(err, "dcmi_get_card_list: %d (%s)", r, dc_strerror(r));
    if (ncards > DC_MAX_CARDS)
        ncards = DC_MAX_CARDS;
    char ver[256];
    memset(ver, 0, sizeof ver);
    if (a.driver_version && HBM_VCALL(a.driver_version)(ver, sizeof ver) == DC_OK)
        hbm_dl_copy(obs->driver_version, sizeof obs->driver_version, ver, sizeof ver);
    snprintf(obs->backend, sizeof obs->backend, "dcmi");

    size_t base = obs->ndevs, n = 0, cap = 0;
    dc_chip *chips = NULL;
    for (int i = 0; i < ncards; i++) {
        int nchips = 0;
        if (HBM_VCALL(a.chips_in_card)(cards[i], &nchips) != DC_OK || nchips <= 0)
            continue;
        for (int dev = 0; dev < nchips && dev < 16; dev++) {
            int type = DC_NPU_TYPE;
            /* MCU and CPU units of a card are not NPUs; an old driver may not say. */
            if (a.unit_type && HBM_VCALL(a.unit_type)(cards[i], dev, &type) == DC_OK &&
                type != DC_NPU_TYPE)
                continue;
            hbm_grow((void **)&chips, &cap, n, sizeof *chips);
            chips[n] = (dc_chip){cards[i], dev};
            dc_fill_chip(&a, chips[n], obs);
            n++;
        }
    }
    dc_fill_topo(&a, obs, base, chips, n);
    free(chips);
    return 0;
}

static int dcmi_observe(hbm_obs *obs, double timeout, hbm_err *err)
{
    return hbm_vcall_run("dcmi", dcmi_calls, obs, timeout, err);
}

const hbm_backend hbm_backend_dcmi = {
    .name = "dcmi",
    .observe = dcmi_observe,
};
