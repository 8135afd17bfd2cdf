/* Parsers for the /proc and /sys files behind the host facts (host.h). Each takes a buffer
 * and its length (not necessarily NUL-terminated), never reads past it, and on input it
 * does not understand returns -1 with a message naming the line or field; callers prefix
 * the file's path. They are public so that each can be fuzzed on its own. */
#ifndef HBM_PROCFS_H
#define HBM_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"
#include "hbm/host.h"

/* /proc/PID/stat: comm is bounded by the LAST ')' since it may itself hold ") ". */
typedef struct hbm_pstat {
    int pid;
    char comm[32];
    char state;
    int ppid;
    uint64_t starttime; /* field 22, clock ticks after boot */
    int pgrp;           /* field 5 */
    int sid;            /* field 6, the session */
} hbm_pstat;
int hbm_procfs_parse_stat(const char *buf, size_t len, hbm_pstat *out, hbm_err *err);
/* Reads and parses <root>/proc/PID/stat alone (root NULL or "" = live host): the cheap read
 * behind identity checks and parent walks. -1 when the process does not exist, or the file
 * is malformed or names another pid. */
int hbm_host_read_stat(const char *root, int pid, hbm_pstat *out);

/* /proc/PID/status: Name, Pid, PPid, real Uid, NSpid (outermost namespace first). */
typedef struct hbm_pstatus {
    char name[32];
    int pid, ppid, uid; /* -1 where the line is missing */
    int nspid[8];
    int nnspid;
} hbm_pstatus;
int hbm_procfs_parse_status(const char *buf, size_t len, hbm_pstatus *out, hbm_err *err);

/* /proc/PID/cgroup (v1 "N:controllers:/path" lines and the v2 "0::/path" line). */
typedef struct hbm_cgroup_info {
    char *line;      /* owned; the line naming a container, else the v2 line, else the first */
    char *v2_path;   /* owned; path of the "0::" line without " (deleted)"; NULL if none */
    char *freezer_path; /* owned; path of the v1 line whose controllers hold "freezer" */
    bool deleted;    /* the kernel marked the v2 cgroup " (deleted)": it was removed */
    char container_id[72];
    char runtime[16]; /* docker, containerd, cri-o, kubepods, podman, or "" */
    char pod_uid[40]; /* Kubernetes pod uid (dashes restored) when the path names one */
} hbm_cgroup_info;
int hbm_procfs_parse_cgroup(const char *buf, size_t len, hbm_cgroup_info *out, hbm_err *err);
void hbm_cgroup_info_free(hbm_cgroup_info *c);

/* The container named by one cgroup path: /docker/<id>, docker-<id>.scope,
 * cri-containerd-<id>.scope, crio-<id>.scope, libpod-<id>.scope, /kubepods/.../pod<uid>/<id>,
 * kubepods-...-pod<uid>.slice. Fills what it finds; returns true when an id was found. */
bool hbm_procfs_container_of(const char *path, size_t len, hbm_cgroup_info *out);

/* A container runtime's config of one container: an OCI config.json ("annotations":
 * containerd's io.kubernetes.cri.*, CRI-O's io.kubernetes.pod.*) or docker's config.v2.json
 * ("Config": {"Labels": ...}, as cri-dockerd sets them). Returns 0 with out->name set when it
 * names a pod, 0 with out zeroed when it names none, -1 on malformed JSON (line, column). */
int hbm_procfs_parse_pod_config(const char *buf, size_t len, hbm_pod *out, hbm_err *err);
/* A /var/log/pods directory name, "<namespace>_<pod>_<uid>": -1 when it is not one. */
int hbm_procfs_parse_pod_logdir(const char *name, size_t len, hbm_pod *out, hbm_err *err);

/* /proc/PID/mountinfo: the mount point of the first cgroup2 file system mounted from its
 * root (field 4 "/", so /proc/PID/cgroup paths map onto it), octal escapes undone, into mnt. Returns 1 when found, 0 when there is none, -1 on malformed input. */
int hbm_procfs_cgroup2_mount(const char *buf, size_t len, char *mnt, size_t n, hbm_err *err);
/* The same for the first cgroup2 mount whatever its root, which goes into root (a container
 * with its own cgroup namespace may mount a subtree; paths then map below that root). */
int hbm_procfs_cgroup2_mount_root(const char *buf, size_t len, char *mnt, size_t n, char *root,
                                  size_t nroot, hbm_err *err);

/* One /proc/PID/fd link target. */
typedef enum hbm_fd_kind {
    HBM_FD_PATH,   /* an absolute path (a " (deleted)" suffix is stripped and flagged) */
    HBM_FD_SOCKET, /* socket:[inode] */
    HBM_FD_PIPE,   /* pipe:[inode] */
    HBM_FD_ANON,   /* anon_inode:..., or any other pseudo file */
} hbm_fd_kind;
typedef struct hbm_fdlink {
    hbm_fd_kind kind;
    uint64_t inode;  /* socket and pipe */
    size_t path_len; /* PATH: length of the path without the " (deleted)" suffix */
    bool deleted;
} hbm_fdlink;
int hbm_procfs_parse_fdlink(const char *buf, size_t len, hbm_fdlink *out, hbm_err *err);

/* /proc/sysvipc/shm: appends one segment per row to *segs (owned by the caller, free()). */
int hbm_procfs_parse_sysv_shm(const char *buf, size_t len, hbm_sysv_seg **segs, size_t *n,
                              hbm_err *err);

/* /proc/meminfo: HugePages_Total/Free/Rsvd/Surp and Hugepagesize into out (node -1). */
int hbm_procfs_parse_meminfo_huge(const char *buf, size_t len, hbm_hugepages *out, hbm_err *err);

/* A one-number sysfs file such as nr_hugepages. */
int hbm_procfs_parse_count(const char *buf, size_t len, int64_t *out, hbm_err *err);

/* "always [madvise] never" -> "madvise": the bracketed word. */
int hbm_procfs_parse_thp(const char *buf, size_t len, char *out, size_t n, hbm_err *err);

/* /proc/net/tcp or tcp6: appends the LISTEN (state 0A) sockets to *ls (caller frees). */
int hbm_procfs_parse_net_tcp(const char *buf, size_t len, bool v6, hbm_listener **ls, size_t *n,
                             hbm_err *err);

/* /proc/PID/environ: the value of ASCEND_RT_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES
 * (owned, NULL when neither is set). */
char *hbm_procfs_environ_visible(const char *buf, size_t len);

/* /proc/PID/maps: calls fn for each mapped path under prefix, with the line's inode. */
typedef void (*hbm_maps_fn)(const char *path, size_t plen, uint64_t inode, void *arg);
int hbm_procfs_parse_maps(const char *buf, size_t len, const char *prefix, hbm_maps_fn fn,
                          void *arg, hbm_err *err);

#endif
