/* Internals shared by the files of src/host: reading relative to directory fds (one open
 * of /proc/PID, then *at() calls: fast, and immune to the pid being reused mid-read),
 * device patterns, and the per-process reader. */
#ifndef HBM_HOST_INT_H
#define HBM_HOST_INT_H

#include <stdbool.h>
#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

#include "hbm/host.h"

/* Reads dirfd/name into buf (at most cap-1 bytes), NUL-terminated. Returns the length, or
 * -1 with errno set. Both readers open through hbm_open_regular: under a root prefix a
 * FIFO or device in place of a /proc file is refused (EINVAL), never waited on. */
ssize_t hbm_hio_read(int dirfd, const char *name, char *buf, size_t cap);
/* Reads dirfd/name whole (up to max bytes) into an owned, NUL-terminated buffer; NULL with
 * errno set on failure (EFBIG past max). */
char *hbm_hio_slurp(int dirfd, const char *name, size_t max, size_t *len);
/* Opens "<root><path>" (path starts with '/'). */
int hbm_hio_open(const char *root, const char *path, int flags);
/* Opens directory name under dirfd for readdir; NULL when it cannot. */
DIR *hbm_hio_opendir(int dirfd, const char *name);
/* A link target: readlinkat, or for fixture trees that store links as regular files, the
 * file's first line. Returns the length (NUL-terminated in buf) or -1. */
ssize_t hbm_hio_link(int dirfd, const char *name, char *buf, size_t cap, bool *real_link);

/* Compiled device patterns: the literal prefix lets most links be refused by one memcmp. */
typedef struct hbm_hpat {
    const char *glob; /* borrowed from the caller's pattern array */
    size_t lit;
} hbm_hpat;
hbm_hpat *hbm_hpat_compile(const char *const *globs, size_t *n);
bool hbm_hpat_match(const hbm_hpat *p, size_t n, const char *path, size_t len);

/* Fills out from an open /proc/PID directory (identity, cmdline, cgroup, environ, wchan;
 * not dev_paths). cg2 is the root-prefixed cgroup2 mount ("" when unknown), used to tell
 * whether the process's cgroup still exists. Returns 1 when the process is gone (or is
 * not a process), 0 on success, -1 on malformed content (err names the file). */
int hbm_hproc_read_at(int pidfd, int pid, const char *root, const char *cg2, hbm_hproc *out,
                      hbm_err *err);

/* For a zombie thread-group leader: an open /proc/PID/task/TID of a thread that is still
 * alive, else -1 (also when the process is not a zombie). *nlive, when not NULL, gets the
 * number of live threads. */
int hbm_hproc_live_thread(int pidfd, int pid, int *nlive);

/* Appends path to p->dev_paths unless already there. */
void hbm_hproc_add_dev(hbm_hproc *p, const char *path, size_t len);

/* A container runtime's state root into out (read under --root): dockerd's data root, from
 * HBMCTL_DOCKER_ROOT, else /etc/docker/daemon.json's "data-root", else /var/lib/docker;
 * containers-storage's graphroot and runroot from HBMCTL_STORAGE_ROOT and
 * HBMCTL_STORAGE_RUNROOT, else /etc/containers/storage.conf, else /var/lib/containers/storage
 * and /run/containers/storage. */
typedef enum { HBM_RT_DOCKER, HBM_RT_STORAGE, HBM_RT_STORAGE_RUN } hbm_runtime_root;
void hbm_host_runtime_root(const char *root, hbm_runtime_root which, char *out, size_t n);

/* The state of the container ci names, into out->container_state: "running", "paused",
 * "gone" (every readable runtime record store lacks the id, the cgroup's own runtime's
 * among them), "unknown" (none readable); "" when ci names no container. With Docker's
 * or containers-storage's record, also out->container_name and container_image. cg2 as
 * for hbm_hproc_read_at. */
struct hbm_cgroup_info;
void hbm_host_container_state(const char *root, const char *cg2,
                              const struct hbm_cgroup_info *ci, hbm_hproc *out);

/* For a process in a container (out->container_id, out->ppid set): whether its parent is
 * the container's init, into out->parent_container_init and out->parent_comm. */
void hbm_host_container_parent(const char *root, hbm_hproc *out);

/* A podman pod member's pod (podman pod create, kube play), into out when found: podman
 * names such a container <pod>-<container> and its pod's hostname is the pod's name (the
 * HOSTNAME of its OCI config, under containers-storage's graphroot); its namespace and uid
 * stay "" (podman has none the node records). */
void hbm_host_libpod_pod(const char *root, const char *container_id, const char *name,
                         hbm_pod *out);

/* System-wide facts (system.c): each returns -1 only on malformed content. */
int hbm_host_read_sysv(const char *root, int procfd, hbm_host *h, hbm_err *err);
int hbm_host_read_huge(const char *root, hbm_host *h, hbm_err *err);
int hbm_host_read_thp(const char *root, hbm_host *h, hbm_err *err);
int hbm_host_read_listeners(const char *root, hbm_host *h, hbm_err *err);
void hbm_host_read_devshm(const char *root, hbm_host *h);
void hbm_host_read_wsl(const char *root, hbm_host *h);

#endif
