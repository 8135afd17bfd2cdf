/* A stand-in for libdcmi.so with the real exported names, signatures and struct layouts
 * (research/ascend-dcmi.md), serving the NPUs a JSON scenario describes (file named by
 * HBM_FAKE_DCMI_SCENARIO, read at every dcmi_init). Tests put pids of processes they
 * started in it.
 *
 * Scenario:
 *   {"driver_version": "24.1.rc2",
 *    "init_error": -8005,                 optional: dcmi_init fails with this code
 *    "errors": {"dcmi_get_x": -8255},     forced return code of a call, every chip
 *    "hang": {"dcmi_get_x": 3600},        that call blocks this many seconds (-1: for
 *                                         ever) before answering: a wedged driver
 *                                         ("load": loading the library blocks)
 *    "topology": [[0, 3], [3, 0]],        topo code per pair of chips in list order
 *                                         (absent: NOT_SUPPORT, as on 310P)
 *    "cards": [{"card_id": 32768,
 *               "chips": [{"logic_id", "phy_id", "name", "health", "error_codes": [..],
 *                          "temperature", "power_dw" (0.1 W), "aicore_util" (percent,
 *                          may carry the vNPU bit 9),
 *                          "hbm": {"total_mb", "used_mb"}           absent: NOT_SUPPORT
 *                          "memory": {"total_mb", "available_mb", "hugepagesize_kb",
 *                                     "hugepages_total", "hugepages_free"}  absent: same
 *                          "bus_id": "0000:C1:00.0",
 *                          "processes": [{"pid", "memory"}]    (bytes; at most 64 written;
 *                                         "freed_on_exit": true: once the pid has exited it
 *                                         is not listed and its memory leaves used_mb, as
 *                                         the driver frees a context with its process)
 *                          "errors": {...}}]}]}
 *
 * Built twice: the default exports the current calls; with FAKE_DCMI_OLD only what an old
 * driver had (dcmi_get_card_num_list, dcmi_get_hbm_info, dcmi_get_device_pcie_info,
 * dcmi_get_device_memory_info_v2; no phy ids, error codes, unit types or topology). */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_hang.h"

#define EXPORT __attribute__((visibility("default")))

#define DCMI_OK 0
#define DCMI_ERR_CODE_INVALID_PARAMETER (-8001)
#define DCMI_ERR_CODE_INNER_ERR (-8005)
#define DCMI_ERR_CODE_INVALID_DEVICE_ID (-8007)
#define DCMI_ERR_CODE_DEVICE_NOT_EXIST (-8008)
#define DCMI_ERR_CODE_NOT_SUPPORT (-8255)
#define MAX_CHIP_NAME_LEN 32
#define MAX_PROC_NUM_IN_DEVICE 64

struct dcmi_chip_info {
    unsigned char chip_type[MAX_CHIP_NAME_LEN];
    unsigned char chip_name[MAX_CHIP_NAME_LEN];
    unsigned char chip_ver[MAX_CHIP_NAME_LEN];
    unsigned int aicore_cnt;
};

struct dcmi_hbm_info {
    unsigned long long memory_size;
    unsigned int freq;
    unsigned long long memory_usage;
    int temp;
    unsigned int bandwith_util_rate;
};

struct dcmi_get_memory_info_stru {
    unsigned long long memory_size;
    unsigned long long memory_available;
    unsigned int freq;
    unsigned long hugepagesize;
    unsigned long hugepages_total;
    unsigned long hugepages_free;
    unsigned int utiliza;
    unsigned char reserve[60];
};

struct dcmi_memory_info {
    unsigned long long memory_size;
    unsigned int freq;
    unsigned int utiliza;
};

struct dcmi_proc_mem_info {
    int proc_id;
    unsigned long proc_mem_usage;
};

struct dcmi_pcie_info_all {
    unsigned int venderid, subvenderid, deviceid, subdeviceid;
    int domain;
    unsigned int bdf_busid, bdf_deviceid, bdf_funcid;
    unsigned char reserve[32];
};

struct dcmi_pcie_info {
    unsigned int deviceid, venderid, subvenderid, subdeviceid;
    unsigned int bdf_deviceid, bdf_busid, bdf_funcid;
};

static json_t *g_scn; /* owned: the scenario of the last dcmi_init */

static long long num(json_t *o, const char *key, long long dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static json_t *card_json(int card_id)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(g_scn, "cards"), i, c)
        if (num(c, "card_id", -1) == card_id)
            return c;
    return NULL;
}

static bool freed(json_t *p)
{
    return json_is_true(json_object_get(p, "freed_on_exit")) &&
           kill((pid_t)num(p, "pid", 0), 0) < 0 && errno == ESRCH;
}

/* MB the exited processes of chip ch gave back. */
static long long freed_mb(json_t *ch)
{
    size_t i;
    json_t *p;
    long long mb = 0;
    json_array_foreach(json_object_get(ch, "processes"), i, p)
        if (freed(p))
            mb += num(p, "memory", 0) >> 20;
    return mb;
}

/* The chip, or NULL with *rc set as the driver would answer. */
static json_t *chip(int card_id, int device_id, const char *fn, int *rc)
{
    *rc = DCMI_ERR_CODE_INVALID_DEVICE_ID;
    if (!g_scn)
        return NULL;
    fake_hang(g_scn, fn);
    json_t *c = card_json(card_id);
    json_t *ch = json_array_get(json_object_get(c, "chips"), (size_t)device_id);
    if (!ch || device_id < 0)
        return NULL;
    long long code = num(json_object_get(ch, "errors"), fn, 1);
    if (code > 0)
        code = num(json_object_get(g_scn, "errors"), fn, 1);
    *rc = code > 0 ? DCMI_OK : (int)code;
    return *rc == DCMI_OK ? ch : NULL;
}

EXPORT int dcmi_init(void)
{
    const char *path = getenv("HBM_FAKE_DCMI_SCENARIO");
    if (!path)
        return DCMI_ERR_CODE_DEVICE_NOT_EXIST;
    json_error_t je;
    json_t *s = json_load_file(path, 0, &je);
    if (!s) {
        fprintf(stderr, "fake DCMI: %s:%d: %s\n", path, je.line, je.text);
        return DCMI_ERR_CODE_INNER_ERR;
    }
    fake_hang(s, "dcmi_init");
    int ie = (int)num(s, "init_error", 0);
    if (ie) {
        json_decref(s);
        return ie;
    }
    json_decref(g_scn);
    g_scn = s;
    return DCMI_OK;
}

/* "hang": {"load": S}: loading the library blocks, as a vendor library whose constructor
 * waits on a wedged device does. */
__attribute__((constructor)) static void fake_load(void)
{
    const char *path = getenv("HBM_FAKE_DCMI_SCENARIO");
    json_t *s = path ? json_load_file(path, 0, NULL) : NULL;
    if (s)
        fake_hang(s, "load");
    json_decref(s);
}

/* libdcmi has no shutdown call: release the scenario when the library is unloaded. */
__attribute__((destructor)) static void fake_unload(void)
{
    json_decref(g_scn);
    g_scn = NULL;
}

EXPORT int dcmi_get_driver_version(char *ver, unsigned int len)
{
    const char *v = json_string_value(json_object_get(g_scn, "driver_version"));
    if (!v)
        return DCMI_ERR_CODE_NOT_SUPPORT;
    if (strlen(v) + 1 > len)
        return DCMI_ERR_CODE_INVALID_PARAMETER;
    memcpy(ver, v, strlen(v) + 1);
    return DCMI_OK;
}

static int card_list(int *card_num, int *card_list, int list_len)
{
    if (!g_scn)
        return DCMI_ERR_CODE_INNER_ERR;
    fake_hang(g_scn, "dcmi_get_card_list");
    json_t *cards = json_object_get(g_scn, "cards");
    int n = (int)json_array_size(cards);
    if (n > list_len)
        return DCMI_ERR_CODE_INVALID_PARAMETER;
    for (int i = 0; i < n; i++)
        card_list[i] = (int)num(json_array_get(cards, (size_t)i), "card_id", -1);
    *card_num = n;
    return DCMI_OK;
}

EXPORT int dcmi_get_card_num_list(int *card_num, int *card_list_out, int list_len)
{
    return card_list(card_num, card_list_out, list_len);
}

EXPORT int dcmi_get_device_num_in_card(int card_id, int *device_num)
{
    json_t *c = g_scn ? card_json(card_id) : NULL;
    if (!c)
        return DCMI_ERR_CODE_INVALID_DEVICE_ID;
    *device_num = (int)json_array_size(json_object_get(c, "chips"));
    return DCMI_OK;
}

EXPORT int dcmi_get_device_logic_id(int *logic_id, int card_id, int device_id)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_logic_id", &rc);
    if (ch)
        *logic_id = (int)num(ch, "logic_id", 0);
    return rc;
}

EXPORT int dcmi_get_device_chip_info(int card_id, int device_id, struct dcmi_chip_info *info)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_chip_info", &rc);
    if (!ch)
        return rc;
    memset(info, 0, sizeof *info);
    const char *name = json_string_value(json_object_get(ch, "name"));
    snprintf((char *)info->chip_type, sizeof info->chip_type, "Ascend");
    snprintf((char *)info->chip_name, sizeof info->chip_name, "%s", name ? name : "");
    snprintf((char *)info->chip_ver, sizeof info->chip_ver, "V1");
    info->aicore_cnt = 20;
    return DCMI_OK;
}

EXPORT int dcmi_get_device_health(int card_id, int device_id, unsigned int *health)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_health", &rc);
    if (ch)
        *health = (unsigned int)num(ch, "health", 0);
    return rc;
}

EXPORT int dcmi_get_device_temperature(int card_id, int device_id, int *temperature)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_temperature", &rc);
    if (!ch)
        return rc;
    long long t = num(ch, "temperature", -1000);
    if (t == -1000)
        return DCMI_ERR_CODE_NOT_SUPPORT;
    *temperature = (int)t;
    return DCMI_OK;
}

EXPORT int dcmi_get_device_power_info(int card_id, int device_id, int *power)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_power_info", &rc);
    if (!ch)
        return rc;
    long long p = num(ch, "power_dw", -1);
    if (p < 0)
        return DCMI_ERR_CODE_NOT_SUPPORT;
    *power = (int)p;
    return DCMI_OK;
}

EXPORT int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type,
                                            unsigned int *rate)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_utilization_rate", &rc);
    if (!ch)
        return rc;
    long long u = num(ch, "aicore_util", -1);
    if (input_type != 2 || u < 0)
        return DCMI_ERR_CODE_NOT_SUPPORT;
    *rate = (unsigned int)u;
    return DCMI_OK;
}

static int hbm(int card_id, int device_id, struct dcmi_hbm_info *out, const char *fn)
{
    int rc;
    json_t *ch = chip(card_id, device_id, fn, &rc);
    if (!ch)
        return rc;
    json_t *h = json_object_get(ch, "hbm");
    if (!h)
        return DCMI_ERR_CODE_NOT_SUPPORT;
    memset(out, 0, sizeof *out);
    out->memory_size = (unsigned long long)num(h, "total_mb", 0);
    long long used = num(h, "used_mb", 0) - freed_mb(ch);
    out->memory_usage = (unsigned long long)(used > 0 ? used : 0);
    out->freq = 1600;
    out->temp = 40;
    return DCMI_OK;
}

static json_t *ddr(int card_id, int device_id, const char *fn, int *rc)
{
    json_t *ch = chip(card_id, device_id, fn, rc);
    if (!ch)
        return NULL;
    json_t *m = json_object_get(ch, "memory");
    if (!m)
        *rc = DCMI_ERR_CODE_NOT_SUPPORT;
    return m;
}

EXPORT int dcmi_get_device_memory_info_v2(int card_id, int device_id,
                                          struct dcmi_memory_info *info)
{
    int rc;
    json_t *m = ddr(card_id, device_id, "dcmi_get_device_memory_info_v2", &rc);
    if (!m)
        return rc;
    long long total = num(m, "total_mb", 0), avail = num(m, "available_mb", 0);
    info->memory_size = (unsigned long long)total;
    info->freq = 2933;
    info->utiliza = total > 0 ? (unsigned int)((total - avail) * 100 / total) : 0;
    return DCMI_OK;
}

EXPORT int dcmi_get_device_resource_info(int card_id, int device_id,
                                         struct dcmi_proc_mem_info *proc_info, int *proc_num)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_resource_info", &rc);
    if (!ch)
        return rc;
    json_t *ps = json_object_get(ch, "processes");
    size_t n = json_array_size(ps);
    /* The driver fills up to 64 entries, whatever size the caller's array has. */
    if (n > MAX_PROC_NUM_IN_DEVICE)
        n = MAX_PROC_NUM_IN_DEVICE;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(ps, i);
        if (freed(p))
            continue;
        proc_info[k].proc_id = (int)num(p, "pid", 0);
        proc_info[k++].proc_mem_usage = (unsigned long)num(p, "memory", 0);
    }
    *proc_num = (int)k;
    return DCMI_OK;
}

static bool bus(json_t *ch, unsigned int v[4])
{
    const char *s = json_string_value(json_object_get(ch, "bus_id"));
    return s && sscanf(s, "%x:%x:%x.%x", &v[0], &v[1], &v[2], &v[3]) == 4;
}

EXPORT int dcmi_get_device_pcie_info(int card_id, int device_id, struct dcmi_pcie_info *info)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_pcie_info", &rc);
    unsigned int v[4];
    if (!ch)
        return rc;
    if (!bus(ch, v))
        return DCMI_ERR_CODE_NOT_SUPPORT;
    memset(info, 0, sizeof *info);
    info->deviceid = 0xd802;
    info->venderid = 0x19e5;
    info->bdf_busid = v[1];
    info->bdf_deviceid = v[2];
    info->bdf_funcid = v[3];
    return DCMI_OK;
}

#ifdef FAKE_DCMI_OLD
EXPORT int dcmi_get_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *info)
{
    return hbm(card_id, device_id, info, "dcmi_get_hbm_info");
}

EXPORT int dcmi_get_memory_info(int card_id, int device_id, struct dcmi_memory_info *info)
{
    return dcmi_get_device_memory_info_v2(card_id, device_id, info);
}
#else
EXPORT int dcmi_get_card_list(int *card_num, int *card_list_out, int list_len)
{
    return card_list(card_num, card_list_out, list_len);
}

EXPORT int dcmi_get_device_type(int card_id, int device_id, int *type)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_type", &rc);
    if (ch)
        *type = 0; /* NPU_TYPE */
    return rc;
}

EXPORT int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid)
{
    size_t i, j;
    json_t *c, *ch;
    json_array_foreach(json_object_get(g_scn, "cards"), i, c)
        json_array_foreach(json_object_get(c, "chips"), j, ch)
            if (num(ch, "logic_id", -1) == (long long)logicid) {
                *phyid = (unsigned int)num(ch, "phy_id", 0);
                return DCMI_OK;
            }
    return DCMI_ERR_CODE_INVALID_DEVICE_ID;
}

EXPORT int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count,
                                        unsigned int *error_code_list, unsigned int list_len)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_errorcode_v2", &rc);
    if (!ch)
        return rc;
    json_t *codes = json_object_get(ch, "error_codes");
    unsigned int n = (unsigned int)json_array_size(codes);
    if (n > list_len)
        n = list_len;
    for (unsigned int i = 0; i < n; i++)
        error_code_list[i] = (unsigned int)json_integer_value(json_array_get(codes, i));
    *error_count = (int)n;
    return DCMI_OK;
}

EXPORT int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *info)
{
    return hbm(card_id, device_id, info, "dcmi_get_device_hbm_info");
}

EXPORT int dcmi_get_device_memory_info_v3(int card_id, int device_id,
                                          struct dcmi_get_memory_info_stru *info)
{
    int rc;
    json_t *m = ddr(card_id, device_id, "dcmi_get_device_memory_info_v3", &rc);
    if (!m)
        return rc;
    memset(info, 0, sizeof *info);
    info->memory_size = (unsigned long long)num(m, "total_mb", 0);
    info->memory_available = (unsigned long long)num(m, "available_mb", 0);
    info->freq = 2933;
    info->hugepagesize = (unsigned long)num(m, "hugepagesize_kb", 2048);
    info->hugepages_total = (unsigned long)num(m, "hugepages_total", 0);
    info->hugepages_free = (unsigned long)num(m, "hugepages_free", 0);
    info->utiliza = info->memory_size
                        ? (unsigned int)((info->memory_size - info->memory_available) * 100 /
                                         info->memory_size)
                        : 0;
    return DCMI_OK;
}

EXPORT int dcmi_get_device_pcie_info_v2(int card_id, int device_id,
                                        struct dcmi_pcie_info_all *info)
{
    int rc;
    json_t *ch = chip(card_id, device_id, "dcmi_get_device_pcie_info_v2", &rc);
    unsigned int v[4];
    if (!ch)
        return rc;
    if (!bus(ch, v))
        return DCMI_ERR_CODE_NOT_SUPPORT;
    memset(info, 0, sizeof *info);
    info->venderid = 0x19e5;
    info->deviceid = 0xd802;
    info->domain = (int)v[0];
    info->bdf_busid = v[1];
    info->bdf_deviceid = v[2];
    info->bdf_funcid = v[3];
    return DCMI_OK;
}

/* Position of a chip in the scenario's list order, -1 when absent. */
static int chip_pos(int card_id, int device_id)
{
    size_t i;
    json_t *c;
    int pos = 0;
    json_array_foreach(json_object_get(g_scn, "cards"), i, c) {
        int n = (int)json_array_size(json_object_get(c, "chips"));
        if (num(c, "card_id", -1) == card_id)
            return device_id >= 0 && device_id < n ? pos + device_id : -1;
        pos += n;
    }
    return -1;
}

EXPORT int dcmi_get_topo_info_by_device_id(int card_id1, int device_id1, int card_id2,
                                           int device_id2, int *topo_type)
{
    int rc;
    if (!chip(card_id1, device_id1, "dcmi_get_topo_info_by_device_id", &rc) ||
        !chip(card_id2, device_id2, "dcmi_get_topo_info_by_device_id", &rc))
        return rc;
    json_t *m = json_object_get(g_scn, "topology");
    if (!m)
        return DCMI_ERR_CODE_NOT_SUPPORT;
    json_t *v = json_array_get(json_array_get(m, (size_t)chip_pos(card_id1, device_id1)),
                               (size_t)chip_pos(card_id2, device_id2));
    if (!json_is_integer(v))
        return DCMI_ERR_CODE_INNER_ERR;
    *topo_type = (int)json_integer_value(v);
    return DCMI_OK;
}
#endif
