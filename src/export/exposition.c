/* The metrics of one observation (docs/metrics.md). Every family is written whole (all its
 * samples together), and a fact the source did not report is left out. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hbm/export.h"
#include "hbm/verdict.h"

#define NDEV_LABELS 5

/* The label values of one device: device, chip, name, vendor, bus_id. */
typedef struct dev_labels {
    char device[24];
    char chip[24];
    hbm_export_label l[NDEV_LABELS + 4]; /* room for a few per-family labels */
} dev_labels;

static void id_text(char *buf, size_t n, int64_t v)
{
    if (v < 0)
        snprintf(buf, n, "%s", "");
    else
        snprintf(buf, n, "%lld", (long long)v);
}

static void dev_labels_fill(dev_labels *dl, const hbm_device *d)
{
    id_text(dl->device, sizeof dl->device, hbm_device_user_id(d));
    id_text(dl->chip, sizeof dl->chip, d->chip);
    dl->l[0] = (hbm_export_label){"device", dl->device};
    dl->l[1] = (hbm_export_label){"chip", dl->chip};
    dl->l[2] = (hbm_export_label){"name", d->name};
    dl->l[3] = (hbm_export_label){"vendor", hbm_vendor_name(d->vendor)};
    dl->l[4] = (hbm_export_label){"bus_id", d->bus_id};
}

typedef enum dev_fact {
    F_POWER,
    F_TEMP,
    F_UTIL,
    F_USED,
    F_TOTAL,
    F_RESERVED,
    F_FREE,
    F_UNACCOUNTED,
    F_BASELINE,
    F_HP_USED,
    F_HP_TOTAL,
    F_DDR_USED,
    F_DDR_TOTAL,
    F_HEALTHY,
    F_NPROCS,
} dev_fact;

static const struct {
    dev_fact f;
    const char *name;
    const char *help;
} dev_facts[] = {
    {F_POWER, "hbmctl_device_power_watts", "Power draw of the device."},
    {F_TEMP, "hbmctl_device_temperature_celsius", "Temperature of the device."},
    {F_UTIL, "hbmctl_device_utilization_ratio",
     "Compute utilisation, 0..1 (AICore on Ascend, SM on NVIDIA)."},
    {F_USED, "hbmctl_device_memory_used_bytes", "Device memory (HBM) in use."},
    {F_TOTAL, "hbmctl_device_memory_total_bytes", "Device memory (HBM) capacity."},
    {F_RESERVED, "hbmctl_device_memory_reserved_bytes",
     "Device memory the driver reserves (NVML v2 memory call)."},
    {F_FREE, "hbmctl_device_memory_free_bytes", "Device memory capacity minus memory in use."},
    {F_UNACCOUNTED, "hbmctl_device_memory_unaccounted_bytes",
     "Memory in use that no listed process accounts for (used minus the processes' sum)."},
    {F_BASELINE, "hbmctl_device_memory_baseline_bytes",
     "Idle memory a process-free device of this model shows (driver and firmware)."},
    {F_HP_USED, "hbmctl_device_hugepages_used_pages",
     "Device hugepages in use, as npu-smi counts them (device memory, not host hugepages)."},
    {F_HP_TOTAL, "hbmctl_device_hugepages_capacity_pages",
     "Device hugepages available, as npu-smi counts them."},
    {F_DDR_USED, "hbmctl_device_ddr_used_bytes", "DDR memory in use (first-generation 910)."},
    {F_DDR_TOTAL, "hbmctl_device_ddr_total_bytes", "DDR memory capacity (first-generation 910)."},
    {F_HEALTHY, "hbmctl_device_healthy", "1 when the vendor reports the device healthy."},
    {F_NPROCS, "hbmctl_device_processes", "Processes the driver lists on the device."},
};

static double dev_value(const hbm_device *d, dev_fact f)
{
    switch (f) {
    case F_POWER: return d->power_watts;
    case F_TEMP: return d->temperature_celsius;
    case F_UTIL: return d->utilization_ratio;
    case F_USED: return d->memory_used_bytes < 0 ? NAN : (double)d->memory_used_bytes;
    case F_TOTAL: return d->memory_total_bytes < 0 ? NAN : (double)d->memory_total_bytes;
    case F_RESERVED:
        return d->memory_reserved_bytes < 0 ? NAN : (double)d->memory_reserved_bytes;
    case F_FREE:
        if (d->memory_used_bytes < 0 || d->memory_total_bytes < 0)
            return NAN;
        return (double)(d->memory_total_bytes - d->memory_used_bytes);
    case F_UNACCOUNTED: {
        int64_t u = d->procs_known ? d->unaccounted_bytes : HBM_UNKNOWN;
        return u < 0 ? NAN : (double)u;
    }
    case F_BASELINE: {
        return d->baseline_bytes < 0 ? NAN : (double)d->baseline_bytes;
    }
    case F_HP_USED: return d->hugepages_used < 0 ? NAN : (double)d->hugepages_used;
    case F_HP_TOTAL: return d->hugepages_total < 0 ? NAN : (double)d->hugepages_total;
    case F_DDR_USED: return d->ddr_used_bytes < 0 ? NAN : (double)d->ddr_used_bytes;
    case F_DDR_TOTAL: return d->ddr_total_bytes < 0 ? NAN : (double)d->ddr_total_bytes;
    case F_HEALTHY: return d->healthy ? 1 : 0;
    case F_NPROCS: return d->procs_known ? (double)d->nprocs : NAN;
    }
    return NAN;
}

static bool any_finite(const hbm_obs *obs, dev_fact f)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        if (isfinite(dev_value(&obs->devs[i], f)))
            return true;
    return false;
}

static void render_devices(const hbm_obs *obs, hbm_export_buf *b)
{
    dev_labels dl;
    hbm_export_family(b, "hbmctl_device_info", "gauge",
                      "Identity of each device: value 1, facts in labels (index is the vendor's "
                      "own number, NPU id on Ascend; device is the id users give).");
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        dev_labels_fill(&dl, d);
        char index[24], logic[24], phy[24];
        id_text(index, sizeof index, d->index);
        id_text(logic, sizeof logic, d->logic_id);
        id_text(phy, sizeof phy, d->phy_id);
        dl.l[5] = (hbm_export_label){"index", index};
        dl.l[6] = (hbm_export_label){"logic_id", logic};
        dl.l[7] = (hbm_export_label){"phy_id", phy};
        dl.l[8] = (hbm_export_label){"uuid", d->uuid};
        hbm_export_sample(b, "hbmctl_device_info", dl.l, NDEV_LABELS + 4, 1);
    }
    for (size_t k = 0; k < sizeof dev_facts / sizeof dev_facts[0]; k++) {
        if (!any_finite(obs, dev_facts[k].f))
            continue;
        hbm_export_family(b, dev_facts[k].name, "gauge", dev_facts[k].help);
        for (size_t i = 0; i < obs->ndevs; i++) {
            dev_labels_fill(&dl, &obs->devs[i]);
            hbm_export_sample(b, dev_facts[k].name, dl.l, NDEV_LABELS,
                              dev_value(&obs->devs[i], dev_facts[k].f));
        }
    }
    hbm_export_family(b, "hbmctl_device_health_status", "gauge",
                      "The vendor's health word for each device: value 1.");
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        if (!d->health[0])
            continue;
        dev_labels_fill(&dl, d);
        dl.l[5] = (hbm_export_label){"health", d->health};
        hbm_export_sample(b, "hbmctl_device_health_status", dl.l, NDEV_LABELS + 1, 1);
    }
    hbm_export_family(b, "hbmctl_device_verdict", "gauge",
                      "1 for the device's verdict (FREE BUSY UNACCOUNTED ORPHANED UNHEALTHY), "
                      "0 for the others.");
    static const hbm_verdict verdicts[] = {HBM_VERDICT_FREE, HBM_VERDICT_BUSY,
                                           HBM_VERDICT_UNACCOUNTED, HBM_VERDICT_ORPHANED,
                                           HBM_VERDICT_UNHEALTHY};
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *d = &obs->devs[i];
        if (d->verdict == HBM_VERDICT_NONE)
            continue;
        dev_labels_fill(&dl, d);
        for (size_t v = 0; v < sizeof verdicts / sizeof verdicts[0]; v++) {
            dl.l[5] = (hbm_export_label){"verdict", hbm_verdict_name(verdicts[v])};
            hbm_export_sample(b, "hbmctl_device_verdict", dl.l, NDEV_LABELS + 1,
                              d->verdict == verdicts[v] ? 1 : 0);
        }
    }
}

/* Process labels: device, chip, vendor, bus_id, pid, name (the process), then namespace,
 * pod, container as dcgm-exporter names them: in a pod, container is the pod's container
 * name; outside one, the container id. */
typedef struct proc_labels {
    char pid[24];
    hbm_export_label l[12];
} proc_labels;

static size_t proc_labels_fill(proc_labels *pl, const dev_labels *dl, const hbm_dproc *p)
{
    snprintf(pl->pid, sizeof pl->pid, "%lld", (long long)p->pid);
    pl->l[0] = dl->l[0];
    pl->l[1] = dl->l[1];
    pl->l[2] = dl->l[3];
    pl->l[3] = dl->l[4];
    pl->l[4] = (hbm_export_label){"pid", pl->pid};
    pl->l[5] = (hbm_export_label){"name", p->name};
    pl->l[6] = (hbm_export_label){"container_name", p->container_name};
    pl->l[7] = (hbm_export_label){"image", p->container_image};
    pl->l[8] = (hbm_export_label){"namespace", p->pod.ns};
    pl->l[9] = (hbm_export_label){"pod", p->pod.name};
    pl->l[10] = (hbm_export_label){"container", p->pod.name[0] ? p->pod.container : p->container};
    return 11;
}

/* A pid the driver lists twice on one chip is written once (label sets must be unique). */
static bool seen_before(const hbm_device *d, size_t j)
{
    for (size_t k = 0; k < j; k++)
        if (d->procs[k].pid == d->procs[j].pid)
            return true;
    return false;
}

/* Walks the processes that get series: those with a known pid, each once per device. After
 * proc_next returns true, d and p are the current device and process and pl.l[0..n) are
 * its labels. */
typedef struct proc_iter {
    const hbm_obs *obs;  /* borrowed */
    size_t i, j;         /* the device and process to look at next */
    const hbm_device *d; /* borrowed: the current device */
    const hbm_dproc *p;  /* borrowed: the current process */
    dev_labels dl;
    proc_labels pl;
    size_t n;
} proc_iter;

static bool proc_next(proc_iter *it)
{
    for (; it->i < it->obs->ndevs; it->i++, it->j = 0) {
        const hbm_device *d = &it->obs->devs[it->i];
        while (it->j < d->nprocs) {
            size_t j = it->j++;
            if (d->procs[j].pid < 0 || seen_before(d, j))
                continue;
            it->d = d;
            it->p = &d->procs[j];
            dev_labels_fill(&it->dl, d);
            it->n = proc_labels_fill(&it->pl, &it->dl, it->p);
            return true;
        }
    }
    return false;
}

static void render_procs(const hbm_obs *obs, hbm_export_buf *b)
{
    hbm_export_family(b, "hbmctl_process_memory_bytes", "gauge",
                      "Device memory each process holds on each device.");
    for (proc_iter it = {.obs = obs}; proc_next(&it);)
        hbm_export_sample_i64(b, "hbmctl_process_memory_bytes", it.pl.l, it.n,
                              it.p->memory_bytes);
    hbm_export_family(b, "hbmctl_process_state", "gauge",
                      "What the host says about each listed process (live, gone, unseen, "
                      "zombie, stuck, abandoned, unchecked): value 1.");
    for (proc_iter it = {.obs = obs}; proc_next(&it);) {
        it.pl.l[it.n] = (hbm_export_label){"state", hbm_pid_state_name(it.p->state)};
        hbm_export_sample(b, "hbmctl_process_state", it.pl.l, it.n + 1, 1);
    }
}

static void render_leaks(const hbm_obs *obs, const hbm_watch *w, bool threshold,
                         hbm_export_buf *b)
{
    static const struct {
        const char *name, *help;
        int what;
    } fams[] = {
        {"hbmctl_device_memory_leak", "1 while step growth is reported on the device "
                                      "(memory rising in steps that never return).", 0},
        {"hbmctl_device_memory_leak_steps", "Steps above the base level that have not "
                                            "returned.", 1},
        {"hbmctl_device_memory_growth_bytes", "Memory growth over the unreturned steps.", 2},
        {"hbmctl_device_memory_level_bytes", "Robust memory level (running median).", 3},
        {"hbmctl_device_memory_above_threshold", "1 while the memory level is above the "
                                                 "configured threshold.", 4},
    };
    dev_labels dl;
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        if (fams[k].what == 4 && !threshold)
            continue;
        hbm_export_family(b, fams[k].name, "gauge", fams[k].help);
        for (size_t i = 0; i < obs->ndevs; i++) {
            const hbm_device *d = &obs->devs[i];
            const hbm_watch_series *s = hbm_watch_find(w, hbm_device_user_id(d), HBM_UNKNOWN);
            if (!s || !s->det.st.ready)
                continue;
            const hbm_leak_status *st = &s->det.st;
            double v = fams[k].what == 0   ? st->leak
                       : fams[k].what == 1 ? st->steps
                       : fams[k].what == 2 ? (double)st->growth
                       : fams[k].what == 3 ? (double)st->level
                                           : st->above;
            dev_labels_fill(&dl, d);
            hbm_export_sample(b, fams[k].name, dl.l, NDEV_LABELS, v);
        }
    }
    for (int what = 0; what < 2; what++) {
        const char *name =
            what ? "hbmctl_process_memory_growth_bytes" : "hbmctl_process_memory_leak";
        hbm_export_family(b, name, "gauge",
                          what ? "Growth of a process's device memory over its unreturned steps."
                               : "1 while step growth is reported for the process's device "
                                 "memory.");
        for (proc_iter it = {.obs = obs}; proc_next(&it);) {
            const hbm_watch_series *s = hbm_watch_find(w, hbm_device_user_id(it.d), it.p->pid);
            if (!s || !s->det.st.ready)
                continue;
            hbm_export_sample(b, name, it.pl.l, it.n,
                              what ? (double)s->det.st.growth : s->det.st.leak);
        }
    }
}

/* Findings counted per (id, severity, device): several stale segments are one series. */
static bool same_series(const hbm_finding *a, const hbm_finding *b)
{
    return strcmp(a->id, b->id) == 0 && a->severity == b->severity && a->device == b->device;
}

static void render_findings(const hbm_findings *f, hbm_export_buf *b)
{
    static const hbm_severity sevs[] = {HBM_SEV_CRITICAL, HBM_SEV_WARNING, HBM_SEV_INFO};
    hbm_export_family(b, "hbmctl_findings_by_severity", "gauge",
                      "Findings of hbmctl doctor on this host, per severity.");
    for (size_t s = 0; s < 3; s++) {
        size_t n = 0;
        for (size_t i = 0; i < f->n; i++)
            n += f->items[i].severity == sevs[s];
        hbm_export_label l = {"severity", hbm_severity_name(sevs[s])};
        hbm_export_sample(b, "hbmctl_findings_by_severity", &l, 1, (double)n);
    }
    hbm_export_family(b, "hbmctl_findings", "gauge",
                      "Findings of hbmctl doctor per id, severity and device (device empty for "
                      "host findings); see docs/doctor.md for the ids.");
    for (size_t i = 0; i < f->n; i++) {
        const hbm_finding *fi = &f->items[i];
        bool dup = false;
        for (size_t k = 0; k < i && !dup; k++)
            dup = same_series(&f->items[k], fi);
        if (dup)
            continue;
        size_t n = 0;
        for (size_t k = i; k < f->n; k++)
            n += same_series(&f->items[k], fi);
        char dev[24];
        id_text(dev, sizeof dev, fi->device);
        hbm_export_label l[3] = {{"id", fi->id},
                                 {"severity", hbm_severity_name(fi->severity)},
                                 {"device", dev}};
        hbm_export_sample(b, "hbmctl_findings", l, 3, (double)n);
    }
}

static void render_host(const hbm_host *h, hbm_export_buf *b)
{
    hbm_export_family(b, "hbmctl_host_sees_host_pids", "gauge",
                      "1 when hbmctl shares the host's PID namespace (process attribution is "
                      "complete).");
    hbm_export_sample(b, "hbmctl_host_sees_host_pids", NULL, 0, h->sees_host_pids ? 1 : 0);

    static const struct {
        const char *name, *help;
        int field;
    } huge[] = {
        {"hbmctl_host_hugepages_capacity_pages", "Host hugepages in the pool.", 0},
        {"hbmctl_host_hugepages_free_pages", "Host hugepages free.", 1},
        {"hbmctl_host_hugepages_reserved_pages", "Host hugepages reserved, not yet faulted.", 2},
        {"hbmctl_host_hugepages_surplus_pages", "Host hugepages above the pool size.", 3},
    };
    for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++) {
        if (h->nhuge == 0)
            break;
        hbm_export_family(b, huge[k].name, "gauge", huge[k].help);
        for (size_t i = 0; i < h->nhuge; i++) {
            const hbm_hugepages *hp = &h->huge[i];
            char node[16], size[24];
            if (hp->node < 0)
                snprintf(node, sizeof node, "all");
            else
                snprintf(node, sizeof node, "%d", hp->node);
            snprintf(size, sizeof size, "%llu", (unsigned long long)hp->page_size_bytes);
            hbm_export_label l[2] = {{"node", node}, {"page_size_bytes", size}};
            int64_t v = huge[k].field == 0   ? hp->total
                        : huge[k].field == 1 ? hp->free
                        : huge[k].field == 2 ? hp->rsvd
                                             : hp->surp;
            hbm_export_sample_i64(b, huge[k].name, l, 2, v);
        }
    }
    if (h->thp[0]) {
        hbm_export_family(b, "hbmctl_host_thp_mode", "gauge",
                          "Transparent hugepage mode (always, madvise, never): value 1.");
        hbm_export_label l = {"mode", h->thp};
        hbm_export_sample(b, "hbmctl_host_thp_mode", &l, 1, 1);
    }
    if (h->devshm_total_bytes >= 0) {
        hbm_export_family(b, "hbmctl_host_devshm_size_bytes", "gauge", "Size of /dev/shm.");
        hbm_export_sample_i64(b, "hbmctl_host_devshm_size_bytes", NULL, 0, h->devshm_total_bytes);
        hbm_export_family(b, "hbmctl_host_devshm_used_bytes", "gauge", "Space used in /dev/shm.");
        hbm_export_sample_i64(b, "hbmctl_host_devshm_used_bytes", NULL, 0, h->devshm_used_bytes);
    }

    uint64_t sysv_n = 0, sysv_b = 0, stale_n = 0, stale_b = 0;
    for (size_t i = 0; i < h->nsysv; i++) {
        const hbm_sysv_seg *s = &h->sysv[i];
        sysv_n++;
        sysv_b += s->size;
        if (s->nattch == 0 && !s->cpid_alive && !s->lpid_alive) {
            stale_n++;
            stale_b += s->size;
        }
    }
    uint64_t posix_n = 0, posix_b = 0, unheld_n = 0, unheld_b = 0;
    for (size_t i = 0; i < h->nposix; i++) {
        posix_n++;
        posix_b += h->posix[i].size;
        if (h->posix[i].nholders == 0) {
            unheld_n++;
            unheld_b += h->posix[i].size;
        }
    }
    static const char *shm_names[8][2] = {
        {"hbmctl_host_sysv_segments", "SysV shared memory segments."},
        {"hbmctl_host_sysv_bytes", "Size of all SysV shared memory segments."},
        {"hbmctl_host_sysv_stale_segments",
         "SysV segments nobody attaches whose creator and last user are dead."},
        {"hbmctl_host_sysv_stale_bytes", "Size of the stale SysV segments."},
        {"hbmctl_host_posix_shm_objects", "POSIX shared memory objects in /dev/shm."},
        {"hbmctl_host_posix_shm_bytes", "Size of the POSIX shared memory objects in /dev/shm."},
        {"hbmctl_host_posix_shm_unheld_objects",
         "Objects in /dev/shm that no process maps or holds open."},
        {"hbmctl_host_posix_shm_unheld_bytes", "Size of the unheld objects in /dev/shm."},
    };
    uint64_t vals[8] = {sysv_n, sysv_b, stale_n, stale_b, posix_n, posix_b, unheld_n, unheld_b};
    for (size_t k = 0; k < 8; k++) {
        hbm_export_family(b, shm_names[k][0], "gauge", shm_names[k][1]);
        hbm_export_sample(b, shm_names[k][0], NULL, 0, (double)vals[k]);
    }
}

static void render_leases(const hbm_export_input *in, hbm_export_buf *b)
{
    size_t held = 0;
    hbm_export_family(b, "hbmctl_lease_held", "gauge",
                      "Device leases held now (pick --lease, run --devices): value 1.");
    for (size_t i = 0; i < in->nleases; i++) {
        const hbm_lease_info *li = &in->leases[i];
        if (!li->held)
            continue;
        bool dup = false;
        for (size_t k = 0; k < i && !dup; k++)
            dup = in->leases[k].held && in->leases[k].device == li->device;
        if (dup)
            continue;
        held++;
        char dev[24], pid[24];
        id_text(dev, sizeof dev, li->device);
        snprintf(pid, sizeof pid, "%d", li->pid);
        hbm_export_label l[3] = {{"device", dev}, {"name", li->name}, {"pid", pid}};
        hbm_export_sample(b, "hbmctl_lease_held", l, 3, 1);
    }
    hbm_export_family(b, "hbmctl_leases_held", "gauge", "Number of device leases held now.");
    hbm_export_sample(b, "hbmctl_leases_held", NULL, 0, (double)held);
}

void hbm_export_render(const hbm_export_input *in, hbm_export_buf *out)
{
    hbm_export_family(out, "hbmctl_up", "gauge",
                      "1 when the last observation of the devices succeeded; 0 means the "
                      "device metrics are missing, not idle.");
    hbm_export_sample(out, "hbmctl_up", NULL, 0, in->obs ? 1 : 0);
    if (!in->obs) {
        hbm_export_family(out, "hbmctl_observe_error", "gauge",
                          "Why the last observation failed: value 1.");
        hbm_export_label l = {"error", in->obs_error ? in->obs_error : ""};
        hbm_export_sample(out, "hbmctl_observe_error", &l, 1, 1);
        return;
    }
    const hbm_obs *obs = in->obs;
    hbm_export_family(out, "hbmctl_source_info", "gauge",
                      "Where the observation came from: backend used (nvml, dcmi, npu-smi, "
                      "snapshot), driver version and hostname; value 1.");
    hbm_export_label src[3] = {{"backend", obs->backend},
                               {"driver_version", obs->driver_version},
                               {"hostname", obs->hostname}};
    hbm_export_sample(out, "hbmctl_source_info", src, 3, 1);
    hbm_export_family(out, "hbmctl_devices", "gauge", "Devices observed.");
    hbm_export_sample(out, "hbmctl_devices", NULL, 0, (double)obs->ndevs);
    render_devices(obs, out);
    render_procs(obs, out);
    if (in->watch)
        render_leaks(obs, in->watch, in->threshold_set, out);
    if (in->findings)
        render_findings(in->findings, out);
    if (obs->has_host)
        render_host(&obs->host, out);
    if (in->leases_known)
        render_leases(in, out);
}

void hbm_export_render_servers(const hbm_progress_servers *set, hbm_export_buf *out)
{
    if (!set->n)
        return;
    hbm_export_family(out, "hbmctl_server_up", "gauge",
                      "1 when the server's /metrics was read at the last sample.");
    for (size_t i = 0; i < set->n; i++) {
        hbm_export_label l = {"url", set->s[i].safe};
        hbm_export_sample(out, "hbmctl_server_up", &l, 1, set->s[i].up ? 1 : 0);
    }
    static const struct {
        const char *name, *help;
    } fam[] = {
        {"hbmctl_server_stalled", "1 when work runs or waits and no token came for --stall."},
        {"hbmctl_server_seconds_since_progress", "Seconds since the token counters advanced."},
        {"hbmctl_server_tokens_per_second", "Prompt and generation tokens per second between "
                                            "the last two samples."},
        {"hbmctl_server_requests_running", "Requests running, as the engine reports."},
        {"hbmctl_server_requests_waiting", "Requests waiting (vLLM V0: swapped included)."},
        {"hbmctl_server_progress_state", "Progress state (progressing, idle, stalled, "
                                         "unknown): value 1."},
    };
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        hbm_export_family(out, fam[f].name, "gauge", fam[f].help);
        for (size_t i = 0; i < set->n; i++) {
            const hbm_progress_server *v = &set->s[i];
            for (size_t k = 0; v->up && k < v->track.n; k++) {
                const hbm_progress_engine *e = &v->track.e[k];
                hbm_export_label l[4] = {{"url", v->safe}, {"model", e->model},
                                         {"engine", e->engine},
                                         {"state", hbm_progress_state_name(e->state)}};
                bool known = e->state != HBM_PROGRESS_UNKNOWN;
                double val[] = {known ? (e->state == HBM_PROGRESS_STALLED) : NAN,
                                e->since_token_s, e->tokens_per_s, e->running, e->waiting, 1};
                hbm_export_sample(out, fam[f].name, l, f == 5 ? 4 : 3, val[f]);
            }
        }
    }
}
