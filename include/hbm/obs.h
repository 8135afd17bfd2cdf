/* The observation model: everything hbmctl knows about one host at one moment.
 * A backend fills the devices, the host scanner fills the host facts, the verdict pass
 * derives a verdict per device. A snapshot is this struct written as JSON.
 *
 * Units: bytes for every memory figure, seconds for time, 0..1 for ratios. An unknown
 * integer is HBM_UNKNOWN (-1), an unknown float is NAN: never 0.
 * Ownership: an hbm_obs owns every array and string reachable from it; hbm_obs_free
 * releases them all. */
#ifndef HBM_OBS_H
#define HBM_OBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/host.h"
#include "hbm/util.h"

typedef enum hbm_vendor {
    HBM_VENDOR_UNKNOWN = 0,
    HBM_VENDOR_ASCEND,
    HBM_VENDOR_NVIDIA,
} hbm_vendor;

/* Precedence order (docs/verdicts.md): a higher value wins when several apply. */
typedef enum hbm_verdict {
    HBM_VERDICT_NONE = 0, /* not yet judged */
    HBM_VERDICT_FREE,
    HBM_VERDICT_UNACCOUNTED,
    HBM_VERDICT_BUSY,
    HBM_VERDICT_ORPHANED,
    HBM_VERDICT_UNHEALTHY,
} hbm_verdict;

/* What the host says about a pid a driver listed (filled by the driver/host join). */
typedef enum hbm_pid_state {
    HBM_PID_UNCHECKED = 0, /* no host facts in this observation (e.g. npu-smi paste) */
    HBM_PID_LIVE,          /* exists, running or sleeping, owner alive */
    HBM_PID_GONE,          /* not in /proc while hbmctl sees host pids */
    HBM_PID_UNSEEN,        /* not in /proc, but hbmctl does not see host pids */
    HBM_PID_ZOMBIE,        /* state Z: exited, not reaped */
    HBM_PID_STUCK,         /* state D: uninterruptible, typically in the driver */
    HBM_PID_ABANDONED,     /* alive, but its container is gone / parent chain ends at init */
} hbm_pid_state;

/* Link between two devices, best (fastest) first. */
typedef enum hbm_link {
    HBM_LINK_UNKNOWN = 0,
    HBM_LINK_SELF,
    HBM_LINK_NVLINK, /* NVLink / NVSwitch */
    HBM_LINK_HCCS,   /* Ascend HCCS (and SIO / UB between dies) */
    HBM_LINK_PIX,    /* same PCIe switch */
    HBM_LINK_PXB,    /* several PCIe switches */
    HBM_LINK_PHB,    /* through the host bridge */
    HBM_LINK_NODE,   /* across host bridges inside one NUMA node */
    HBM_LINK_SYS,    /* across NUMA nodes */
} hbm_link;

typedef struct hbm_dproc {
    int64_t pid;              /* as the driver reports it: a host pid */
    char name[64];            /* "" when the tool printed none (container view) */
    int64_t memory_bytes;     /* device memory this process holds on this chip */
    char container[80];       /* container id when known, else "" */
    char container_name[128]; /* the runtime's name of the container, else "" */
    char container_image[256]; /* its image, else "" */
    hbm_pod pod;              /* its Kubernetes pod (from the host join or a snapshot) */
    int64_t pid_in_container; /* npu-smi 26.x column, else NSpid's innermost; or HBM_UNKNOWN */
    hbm_pid_state state;      /* filled by the join */
    char state_why[200];      /* evidence behind state, for the reason text */
} hbm_dproc;

typedef struct hbm_device {
    hbm_vendor vendor;
    int64_t index;    /* vendor's device number as printed: NPU (card) id or GPU index */
    int64_t chip;     /* chip within its card (Ascend), 0 on NVIDIA */
    int64_t logic_id; /* Ascend logic id (what ASCEND_RT_VISIBLE_DEVICES takes) */
    int64_t phy_id;   /* Ascend physical id */
    char name[64];
    char bus_id[32];
    char uuid[80];
    char health[32]; /* vendor word: OK, Warning, Alarm, Critical, ... ; "" unknown */
    bool healthy;    /* false only when health says so */
    double power_watts;
    double temperature_celsius;
    double utilization_ratio; /* AICore on Ascend, SM on NVIDIA */
    int64_t memory_used_bytes;
    int64_t memory_total_bytes;
    int64_t memory_reserved_bytes; /* NVML v2 memory call only */
    int64_t hugepages_used;        /* pages, as npu-smi counts them (device memory) */
    int64_t hugepages_total;
    int64_t ddr_used_bytes; /* first-generation 910: the DDR column beside HBM */
    int64_t ddr_total_bytes;
    char mig[32]; /* NVIDIA MIG mode text when present ("enabled"), "" otherwise */

    hbm_dproc *procs;
    size_t nprocs;
    bool procs_known;     /* false when the source had no process table for it */
    bool procs_truncated; /* npu-smi prints at most 8 per chip: a full list may be cut */

    /* What the verdict decided, read by every consumer (doctor, exporter, probe, Slurm)
     * instead of judging again: */
    hbm_verdict verdict;
    char reason[400];
    int64_t baseline_bytes;    /* the idle baseline it compared with (refined by idle peer
                                * chips), HBM_UNKNOWN when the chip has none */
    int64_t unaccounted_bytes; /* used minus the listed processes' memory, HBM_UNKNOWN when
                                * memory use is unknown */
} hbm_device;

/* One engine of an inference server between two samples of the server's /metrics. */
typedef struct hbm_server_engine {
    char kind[16];   /* "vllm", "sglang", "mindie" */
    char model[160]; /* "" when the page does not say */
    char engine[32]; /* vLLM V1's engine index; "" when absent */
    char state[16];  /* "progressing", "idle", "stalled", "unknown" */
    char why[64];    /* unknown: why progress could not be told; else "" */
    char line[400];  /* what the samples showed, in words ("stalled: 3 running, ...") */
    double running, waiting;             /* requests at the second sample; NAN unknown */
    double tokens_before, tokens_after;  /* tokens so far at each sample; NAN unknown */
    double stalled_for_s;                /* seconds of work without a token */
} hbm_server_engine;

/* An inference server found listening on this host (the outermost process of its tree and a
 * listener of that tree on its port) and what two samples of its /metrics, interval_s apart,
 * showed. Observed live when asked (doctor, snapshot), carried by a snapshot. */
typedef struct hbm_server {
    int pid;
    char comm[32];
    char url[512];   /* its /metrics, without credentials */
    bool up;         /* both samples were read */
    char error[512]; /* why not */
    hbm_server_engine *engines; /* owned */
    size_t nengines;
} hbm_server;

typedef struct hbm_obs {
    char schema[32];   /* "hbmctl.snapshot/1" */
    char backend[32];  /* nvml, dcmi, npu-smi, snapshot; "none": no device source */
    char source[256];  /* file the text or snapshot came from, "" when live */
    char hostname[128];
    char tool_version[32];
    char driver_version[64];
    double captured_at; /* unix seconds */

    hbm_device *devs;
    size_t ndevs;
    size_t cap_devs;

    /* Link kind between devs[i] and devs[j] at topo[i * ndevs + j]; NULL when unknown. */
    hbm_link *topo;

    bool partial;          /* the source was a fragment: read as far as it went */
    char partial_why[512];

    bool has_host; /* host facts present (live scan or snapshot with host) */
    hbm_host host;

    /* backend "none": why no device source could be used (host facts only); else "". */
    char backend_why[1024];

    /* The inference servers' progress (hbm_server); servers_interval_s is the time between
     * their two samples, NAN when progress was not observed. */
    hbm_server *servers; /* owned */
    size_t nservers;
    double servers_interval_s;
    /* Set by hbm_observe for the backend: fetch the interconnect topology too. The npu-smi
     * backend pays a program run for it; the libraries get it at no cost and ignore this. */
    bool want_topology;
} hbm_obs;

void hbm_obs_init(hbm_obs *obs);
void hbm_obs_free(hbm_obs *obs);

/* Appends a zeroed device with every fact unknown; the pointer is valid until the next add. */
hbm_device *hbm_obs_add_device(hbm_obs *obs, hbm_vendor vendor);
hbm_dproc *hbm_device_add_proc(hbm_device *dev);

/* Sets the topology matrix (copies it); n must equal obs->ndevs. */
void hbm_obs_set_topo(hbm_obs *obs, const hbm_link *links, size_t n);
hbm_link hbm_obs_link(const hbm_obs *obs, size_t i, size_t j);

/* Finds a device by the id a user gives: logic id on Ascend when known, index otherwise. */
hbm_device *hbm_obs_find_device(hbm_obs *obs, int64_t user_id);
/* The first listing of pid among the devices' processes (the driver's); NULL when none. */
const hbm_dproc *hbm_obs_find_proc(const hbm_obs *obs, int pid);
/* The id a user and the visible-device variable use for this device (docs/snapshot.md). */
int64_t hbm_device_user_id(const hbm_device *dev);
/* How a message names the device: "device N" by its user id, or "npu N chip C" when it has
 * none (an npu-smi paste without logic ids). */
void hbm_device_label(const hbm_device *dev, char *buf, size_t len);

const char *hbm_vendor_name(hbm_vendor v);
const char *hbm_verdict_name(hbm_verdict v);
/* The verdict a name gives (hbm_verdict_name's inverse); HBM_VERDICT_NONE for any other. */
hbm_verdict hbm_verdict_parse(const char *name);
const char *hbm_link_name(hbm_link l);
hbm_link hbm_link_parse(const char *word);
const char *hbm_pid_state_name(hbm_pid_state s);
/* The visible-device variable of a vendor: ASCEND_RT_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES. */
const char *hbm_vendor_visible_env(hbm_vendor v);

#endif
