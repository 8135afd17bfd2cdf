/* Host facts read from /proc and /sys (docs/host-facts.md): processes holding accelerator
 * device files, their identity (start time, state, cgroup, container), SysV and POSIX shared memory,
 * hugepages, transparent hugepages, /dev/shm usage and TCP listeners.
 *
 * Every path is read relative to a root prefix ("" for the live host) so tests can point
 * the scanner at fixture trees. A process that vanishes mid-scan is a normal outcome.
 * Ownership: an hbm_host owns every array and string reachable from it. */
#ifndef HBM_HOST_H
#define HBM_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hbm/err.h"

/* The Kubernetes pod a process runs in, read from the node (docs/host-facts.md): names from
 * the container runtime's state or /var/log/pods. name[0] == '\0' when not known; container
 * is "" when the pod is known but not which of its containers. */
typedef struct hbm_pod {
    char ns[64];        /* namespace (a DNS label: at most 63 characters) */
    char name[256];     /* pod name (a DNS subdomain: at most 253) */
    char uid[40];
    char container[64]; /* container name within the pod */
    char image[256];    /* the container's image as the runtime's annotations name it, else "" */
} hbm_pod;

typedef struct hbm_hproc {
    int pid;
    int ppid;
    char state;          /* R S D Z T I ... from /proc/PID/stat field 3 */
    uint64_t starttime;  /* field 22, clock ticks after boot: with pid, a process identity */
    int uid;
    char comm[32];
    char *cmdline;       /* owned; arguments joined by single spaces; "" for kernel threads */
    char *cgroup;        /* owned; the cgroup v2 path ("0::/...") or the first v1 line */
    char container_id[72]; /* 64-hex id when the cgroup names one, else "" */
    char runtime[16];    /* docker, containerd, cri-o, kubepods, podman, or "" */
    int nspid[8];        /* NSpid: pid in each nested namespace, outermost first */
    int nnspid;
    char wchan[64];      /* where a D-state process sleeps, when readable */
    char **dev_paths;    /* owned; device files it holds open (matched by the patterns) */
    size_t ndev_paths;
    bool fds_read;       /* its open files were listed, so dev_paths is the whole truth */
    char *visible_devices; /* owned; ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES
                              value from /proc/PID/environ when readable, else NULL */
    char pod_uid[40];    /* Kubernetes pod uid when the cgroup names one, else "" */
    hbm_pod pod;         /* its pod, when the node's runtime state or pod logs name it */
    bool cgroup_gone;    /* its cgroup was removed (" (deleted)" or the directory is gone):
                            the container it ran in no longer exists */
    char container_state[12]; /* from the runtimes' own state (docs/host-facts.md):
                                 "running", "paused", "gone", "unknown"; "" when no container */
    char container_name[128];  /* the runtime's name of it (Docker's config.v2.json), else "" */
    char container_image[256]; /* its image, from the same record, else "" */
    bool parent_container_init; /* its parent is its container's init: PID 1 of a PID
                                   namespace below the host's */
    char parent_comm[16];        /* that parent's name (redacted), else "" */
    int zombie_live_threads; /* state Z: threads still running after their leader exited;
                                they keep the files and device (dev_paths come from them) */
} hbm_hproc;

typedef struct hbm_sysv_seg {
    int64_t key;
    int shmid;
    int perms;
    uint64_t size;
    int cpid;
    int lpid;
    uint64_t nattch;
    int uid;
    int cuid;
    int64_t atime, dtime, ctime; /* unix seconds, 0 = never */
    bool cpid_alive;             /* filled by the scan: creator still exists */
    bool lpid_alive;             /* last attach/detach pid still exists */
} hbm_sysv_seg;

typedef struct hbm_posix_shm {
    char *path;     /* owned; e.g. /dev/shm/hcclShareMem0 */
    uint64_t size;
    int uid;
    int64_t mtime;
    int *holders;   /* owned; pids that map it (maps) or hold it open (fd) */
    size_t nholders;
    char owner[16]; /* the container runtime whose live object it is ("podman"), else "":
                       never stale (docs/host-facts.md) */
} hbm_posix_shm;

typedef struct hbm_hugepages {
    int node;                 /* NUMA node, -1 for the system-wide pool of /proc/meminfo */
    uint64_t page_size_bytes;
    int64_t total, free, rsvd, surp; /* pages; HBM_UNKNOWN where not reported */
} hbm_hugepages;

typedef struct hbm_listener {
    char addr[64]; /* "127.0.0.1", "::", ... */
    int port;
    uint64_t inode;
    int pid;       /* owning pid, -1 when not found (other namespace, no permission) */
} hbm_listener;

typedef struct hbm_host {
    bool sees_host_pids;      /* hbmctl shares the host's PID namespace */
    char sees_host_pids_why[200];
    long clk_tck;             /* for turning starttime into seconds */
    double boot_time;         /* unix seconds of boot (btime), 0 unknown */

    hbm_hproc *procs;         /* processes of interest: device holders, pids asked for,
                                 inference servers, listeners' and shm holders' owners,
                                 and the parent of each of these in state Z or D */
    size_t nprocs;
    hbm_sysv_seg *sysv;
    size_t nsysv;
    hbm_posix_shm *posix;
    size_t nposix;
    hbm_hugepages *huge;      /* system pool first, then one per node and page size */
    size_t nhuge;
    char thp[16];             /* always / madvise / never, "" unknown */
    char thp_defrag[32];
    int64_t devshm_total_bytes; /* statvfs of what is mounted at /dev/shm; HBM_UNKNOWN if none */
    int64_t devshm_used_bytes;
    hbm_listener *listeners;
    size_t nlisteners;
    bool wsl2;                /* the kernel is WSL2's: /proc/sys/kernel/osrelease names
                                 microsoft or WSL2, or /dev/dxg (its GPU paravirtualization
                                 device) exists; CUDA's total there is the driver's */
} hbm_host;

typedef struct hbm_host_opts {
    const char *root;            /* prefix for /proc, /sys, /dev; NULL or "" = live host */
    const char *const *dev_patterns; /* NULL-terminated fnmatch patterns on the fd link
                                        target; NULL = hbm_host_patterns_from_env(), else
                                        the defaults */
    const int *want_pids;        /* extra pids to record (e.g. driver-listed); may be NULL */
    size_t nwant_pids;
} hbm_host_opts;

/* Default device-file patterns (docs/host-facts.md), NULL-terminated. */
extern const char *const hbm_host_default_dev_patterns[];

/* The root prefix from the environment (HBMCTL_ROOT), or "" for the live host. */
const char *hbm_host_env_root(void);

int hbm_host_scan(hbm_host *host, const hbm_host_opts *opts, hbm_err *err);
void hbm_host_free(hbm_host *host);

/* Reads one process's facts; returns -1 (ESRCH in err text) when it does not exist. */
int hbm_host_read_proc(const char *root, int pid, hbm_hproc *out, hbm_err *err);
void hbm_hproc_free(hbm_hproc *p);

const hbm_hproc *hbm_host_find(const hbm_host *host, int pid);

/* True when a process with this pid and start time exists right now (identity check
 * before any signal: a recycled pid has another start time). */
bool hbm_host_pid_matches(const char *root, int pid, uint64_t starttime);

/* Start time (field 22 of /proc/PID/stat) and, when state is not NULL, state (field 3) of
 * one process, without the rest of hbm_host_read_proc. -1 when the process is gone. */
int hbm_host_starttime(const char *root, int pid, uint64_t *starttime, char *state);

/* Device-file patterns from HBMCTL_DEVICE_PATTERNS (colon-separated fnmatch patterns), or
 * NULL when unset or empty. The array is built once and lives until exit. */
const char *const *hbm_host_patterns_from_env(void);

/* The pod of a container (container_id, may be "") in a pod (pod_uid, may be "") from the
 * node under root: containerd's task bundle, CRI-O's container config, cri-dockerd's labels,
 * then /var/log/pods/<namespace>_<pod>_<uid>/. A runtime file naming another pod uid than
 * the cgroup is refused. Leaves out zeroed when nothing names the pod. */
void hbm_host_pod_lookup(const char *root, const char *container_id, const char *pod_uid,
                         hbm_pod *out);

/* Whether the container of p no longer exists: every runtime whose state is readable
 * forgot its id, or (no runtime state readable) the kernel removed its cgroup. */
bool hbm_host_container_gone(const hbm_hproc *p);

/* The cgroup2 mount point from <root>/proc/self/mountinfo, root prefix included (hybrid
 * hosts mount it at /sys/fs/cgroup/unified). -1 with a message when there is none. */
int hbm_host_cgroup2_mount(const char *root, char *buf, size_t n, hbm_err *err);

/* ---- signals that never hit a recycled pid --------------------------------------------- */

typedef enum hbm_kill_outcome {
    HBM_KILL_SENT = 0,   /* delivered to the process observed */
    HBM_KILL_GONE,       /* no such process any more: nothing sent */
    HBM_KILL_MISMATCH,   /* the pid now belongs to another process (start time differs) */
} hbm_kill_outcome;

/* Sends sig to pid only if it is still the process that started at starttime: pidfd_open,
 * compare the start time in /proc/PID/stat, pidfd_send_signal. Where pidfd is missing
 * (ENOSYS, Linux < 5.3) it re-checks right before kill() and sets *raced (when non-NULL)
 * because a tiny window remains. Returns 0 with *outcome filled, -1 on error (EPERM...). */
int hbm_host_kill_checked(int pid, uint64_t starttime, int sig, hbm_kill_outcome *outcome,
                          bool *raced, hbm_err *err);

/* Waits up to timeout_s for that process to exit (a zombie counts as exited: it holds no
 * memory or files). Returns 1 exited (or gone/recycled), 0 still there at the timeout. */
int hbm_host_wait_exit(int pid, uint64_t starttime, double timeout_s);

/* True when pid is this process or one of its ancestors (walked live through /proc). */
bool hbm_host_is_self_or_ancestor(int pid);

/* Whether the host backs a driver's listing of hp as a device holder (docs/safety.md): a
 * process with device memory keeps the accelerator's device file open, the driver's context
 * lives on it. 1: it holds one (why names it); 0: its open files were read, it holds none,
 * and other processes on this host visibly hold device files, so the listing names another
 * process (a reused pid, another PID namespace's number); -1: the host does not tell. */
int hbm_host_device_file_proof(const hbm_host *h, const hbm_hproc *hp, char *why, size_t n);

/* 1 when the SysV segment is stale now (exists, nattch 0, creator and last user dead);
 * 0 with why filled otherwise. */
int hbm_host_sysv_stale_now(int shmid, int64_t key, char *why, size_t n);

#endif
