#include "hbm/obs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/snapshot.h"

void hbm_obs_init(hbm_obs *obs)
{
    memset(obs, 0, sizeof *obs);
    snprintf(obs->schema, sizeof obs->schema, "%s", HBM_SNAPSHOT_SCHEMA);
    snprintf(obs->tool_version, sizeof obs->tool_version, "%s", HBM_VERSION);
    obs->servers_interval_s = NAN;
}

void hbm_obs_free(hbm_obs *obs)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        free(obs->devs[i].procs);
    free(obs->devs);
    free(obs->topo);
    if (obs->has_host)
        hbm_host_free(&obs->host);
    for (size_t i = 0; i < obs->nservers; i++)
        free(obs->servers[i].engines);
    free(obs->servers);
    memset(obs, 0, sizeof *obs);
}

hbm_device *hbm_obs_add_device(hbm_obs *obs, hbm_vendor vendor)
{
    hbm_grow((void **)&obs->devs, &obs->cap_devs, obs->ndevs, sizeof *obs->devs);
    hbm_device *d = &obs->devs[obs->ndevs++];
    memset(d, 0, sizeof *d);
    d->vendor = vendor;
    d->index = d->chip = d->logic_id = d->phy_id = HBM_UNKNOWN;
    d->power_watts = d->temperature_celsius = d->utilization_ratio = NAN;
    d->memory_used_bytes = d->memory_total_bytes = d->memory_reserved_bytes = HBM_UNKNOWN;
    d->hugepages_used = d->hugepages_total = HBM_UNKNOWN;
    d->ddr_used_bytes = d->ddr_total_bytes = HBM_UNKNOWN;
    d->baseline_bytes = d->unaccounted_bytes = HBM_UNKNOWN;
    d->healthy = true;
    /* A topology matrix sized for fewer devices no longer fits. */
    free(obs->topo);
    obs->topo = NULL;
    return d;
}

hbm_dproc *hbm_device_add_proc(hbm_device *dev)
{
    dev->procs = hbm_xrealloc(dev->procs, (dev->nprocs + 1) * sizeof *dev->procs);
    hbm_dproc *p = &dev->procs[dev->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = HBM_UNKNOWN;
    p->memory_bytes = HBM_UNKNOWN;
    p->pid_in_container = HBM_UNKNOWN;
    dev->procs_known = true;
    return p;
}

void hbm_obs_set_topo(hbm_obs *obs, const hbm_link *links, size_t n)
{
    free(obs->topo);
    obs->topo = NULL;
    if (!links || n != obs->ndevs || n == 0)
        return;
    obs->topo = hbm_xmalloc(n * n * sizeof *links);
    memcpy(obs->topo, links, n * n * sizeof *links);
}

hbm_link hbm_obs_link(const hbm_obs *obs, size_t i, size_t j)
{
    if (i == j)
        return HBM_LINK_SELF;
    if (!obs->topo || i >= obs->ndevs || j >= obs->ndevs)
        return HBM_LINK_UNKNOWN;
    return obs->topo[i * obs->ndevs + j];
}

int64_t hbm_device_user_id(const hbm_device *dev)
{
    if (dev->vendor == HBM_VENDOR_ASCEND)
        return dev->logic_id;
    return dev->index;
}

void hbm_device_label(const hbm_device *dev, char *buf, size_t len)
{
    int64_t id = hbm_device_user_id(dev);
    if (id >= 0)
        snprintf(buf, len, "device %lld", (long long)id);
    else
        snprintf(buf, len, "npu %lld chip %lld", (long long)dev->index, (long long)dev->chip);
}

hbm_device *hbm_obs_find_device(hbm_obs *obs, int64_t user_id)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        if (hbm_device_user_id(&obs->devs[i]) == user_id)
            return &obs->devs[i];
    return NULL;
}

const hbm_dproc *hbm_obs_find_proc(const hbm_obs *obs, int pid)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        for (size_t j = 0; j < obs->devs[i].nprocs; j++)
            if (obs->devs[i].procs[j].pid == pid)
                return &obs->devs[i].procs[j];
    return NULL;
}

const char *hbm_vendor_name(hbm_vendor v)
{
    switch (v) {
    case HBM_VENDOR_ASCEND: return "ascend";
    case HBM_VENDOR_NVIDIA: return "nvidia";
    default: return "unknown";
    }
}

const char *hbm_vendor_visible_env(hbm_vendor v)
{
    return v == HBM_VENDOR_NVIDIA ? "CUDA_VISIBLE_DEVICES" : "ASCEND_RT_VISIBLE_DEVICES";
}

const char *hbm_verdict_name(hbm_verdict v)
{
    switch (v) {
    case HBM_VERDICT_FREE: return "FREE";
    case HBM_VERDICT_UNACCOUNTED: return "UNACCOUNTED";
    case HBM_VERDICT_BUSY: return "BUSY";
    case HBM_VERDICT_ORPHANED: return "ORPHANED";
    case HBM_VERDICT_UNHEALTHY: return "UNHEALTHY";
    default: return "UNKNOWN";
    }
}

hbm_verdict hbm_verdict_parse(const char *name)
{
    for (hbm_verdict v = HBM_VERDICT_FREE; v <= HBM_VERDICT_UNHEALTHY; v++)
        if (!strcmp(hbm_verdict_name(v), name))
            return v;
    return HBM_VERDICT_NONE;
}

static const struct {
    hbm_link link;
    const char *name;
} link_names[] = {
    {HBM_LINK_SELF, "X"},   {HBM_LINK_NVLINK, "NVLINK"}, {HBM_LINK_HCCS, "HCCS"},
    {HBM_LINK_PIX, "PIX"},  {HBM_LINK_PXB, "PXB"},       {HBM_LINK_PHB, "PHB"},
    {HBM_LINK_NODE, "NODE"}, {HBM_LINK_SYS, "SYS"},      {HBM_LINK_UNKNOWN, "NA"},
};

const char *hbm_link_name(hbm_link l)
{
    for (size_t i = 0; i < sizeof link_names / sizeof link_names[0]; i++)
        if (link_names[i].link == l)
            return link_names[i].name;
    return "NA";
}

hbm_link hbm_link_parse(const char *word)
{
    for (size_t i = 0; i < sizeof link_names / sizeof link_names[0]; i++)
        if (strcmp(link_names[i].name, word) == 0)
            return link_names[i].link;
    /* Die-to-die (SIO) and unified-bus (UB) links are on-package interconnects, as fast as
     * HCCS for placement; NVIDIA prints NV1..NV18 for bonded NVLinks. */
    if (strcmp(word, "SIO") == 0 || strcmp(word, "UB") == 0 || strncmp(word, "HCCS", 4) == 0)
        return HBM_LINK_HCCS;
    if (word[0] == 'N' && word[1] == 'V')
        return HBM_LINK_NVLINK;
    return HBM_LINK_UNKNOWN;
}

const char *hbm_pid_state_name(hbm_pid_state s)
{
    switch (s) {
    case HBM_PID_LIVE: return "live";
    case HBM_PID_GONE: return "gone";
    case HBM_PID_UNSEEN: return "unseen";
    case HBM_PID_ZOMBIE: return "zombie";
    case HBM_PID_STUCK: return "stuck";
    case HBM_PID_ABANDONED: return "abandoned";
    default: return "unchecked";
    }
}
