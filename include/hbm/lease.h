/* Exclusive device leases (docs/doctor.md) and the choice of free devices (`pick`,
 * `run --devices`).
 *
 * A lease is an exclusive flock(2) on one file per device under the lease directory
 * (default /run/hbmctl, env HBMCTL_LEASE_DIR, or an explicit override). The lock lives as
 * long as some process keeps the open file description: when the holder exits or crashes
 * the kernel drops it, so a stale lease cannot exist. Files are never unlinked (unlinking a
 * locked file lets a second locker win a fresh inode); their content (name, holder pid and
 * start time, since) only describes the current holder and means nothing while unlocked.
 * Users share devices, so they share the directory: `pick` creates it mode 1777 and its
 * files 0666 (src/lease/share.c); any user can write a file's content, so it is a claim.
 *
 * Device ids are the ids users give (hbm_device_user_id): logic ids on Ascend, indexes on
 * NVIDIA. */
#ifndef HBM_LEASE_H
#define HBM_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "hbm/err.h"
#include "hbm/obs.h"

#define HBM_LEASE_DEFAULT_DIR "/run/hbmctl"
#define HBM_LEASE_NAME_MAX 64

/* The lease directory: override when non-empty, else $HBMCTL_LEASE_DIR, else the default.
 * Returns a borrowed string (override, the environment, or a literal). */
const char *hbm_lease_dir(const char *override);

/* What a lease file says about its holder. */
typedef struct hbm_lease_info {
    int64_t device;                 /* user id */
    char name[HBM_LEASE_NAME_MAX];  /* lease name given by the taker */
    int pid;                        /* process that keeps the lock (pick's holder, run) */
    uint64_t starttime;             /* its start time (clock ticks after boot), 0 unknown */
    int hold_pid;                   /* process whose exit ends the lease, 0 none */
    double since;                   /* unix seconds when taken */
    bool held;                      /* locked right now */
    char path[512];
} hbm_lease_info;

/* Tries to take the lease on one device without blocking. Returns 0 and *fd (close it, or
 * exit, to release) when taken; 1 when another process holds it (*holder filled when
 * non-NULL); -1 on error (directory not creatable, permission). The content written names
 * the calling process as holder; hbm_lease_set_holder rewrites it after handing the fd to
 * another process. */
int hbm_lease_acquire(const char *dir, const char *name, int64_t device, int *fd,
                      hbm_lease_info *holder, hbm_err *err);

/* Rewrites the description of a held lease: holder pid (with its start time read from
 * /proc) and the pid whose exit ends it (0 none). */
int hbm_lease_set_holder(int fd, const char *name, int64_t device, int pid, int hold_pid,
                         hbm_err *err);

/* Drops a lease taken by this process (closes fd; -1 is ignored). */
void hbm_lease_release(int fd);

/* Whether the device's lease is held now, without ever taking it (a probe that locked
 * even briefly could make a racing taker fail). Returns 1 held (*info filled), 0 free,
 * -1 error. */
int hbm_lease_query(const char *dir, int64_t device, hbm_lease_info *info, hbm_err *err);

/* Every lease file in dir, held or not (callers filter on .held). *out is owned by the
 * caller (free()). A missing directory is an empty list. */
int hbm_lease_list(const char *dir, hbm_lease_info **out, size_t *n, hbm_err *err);
/* `leases --json`: {dir, leases: [{device, name, pid, hold_pid, since, held}]}, the held
 * ones or (all) every one; pid, hold_pid and since null where not held or not known. */
json_t *hbm_lease_list_json(const char *dir, const hbm_lease_info *ls, size_t n, bool all);

/* Starts the small holder process that keeps the given lease fds after the caller exits:
 * it detaches (new session, standard streams on /dev/null, every other fd closed), names
 * itself in each lease file, and exits when hold_pid exits (pidfd poll, with a polling
 * fallback before Linux 5.3 that checks the start time), on SIGTERM, or when every lease
 * file is gone. Returns 0 once the holder has written the files (*holder = its pid). The
 * caller should then close its own copies of the fds. */
int hbm_lease_spawn_holder(const char *name, const int *fds, const int64_t *devices,
                           size_t n, int hold_pid, pid_t *holder, hbm_err *err);

/* Whether info->pid has info->path open right now (same inode among its fds). Lease files
 * are writable by every user, so their content is a claim: check it before signalling the
 * pid it names. */
bool hbm_lease_pid_holds(const hbm_lease_info *info);
/* hbm_lease_pid_holds over every held lease named name in dir (pids above 1): 0 when each
 * holds its file, 1 with the first that does not in *bad, -1 when dir cannot be listed. */
int hbm_lease_claim_check(const char *dir, const char *name, hbm_lease_info *bad,
                          hbm_err *err);

/* ---- pick: choosing devices ------------------------------------------------------------ */

/* Pointers are borrowed. */
typedef struct hbm_pick_opts {
    size_t n;                /* devices wanted, >= 1 */
    int64_t min_free_bytes;  /* refuse devices with less free memory; HBM_UNKNOWN = none */
    const char *lease_name;  /* take leases under this name; NULL = choose only */
    const char *lease_dir;   /* NULL = hbm_lease_dir(NULL) */
    const int64_t *only;     /* restrict to these user ids (run --devices LIST); NULL = all */
    size_t nonly;
} hbm_pick_opts;

typedef struct hbm_pick_refusal {
    int64_t device;  /* user id (HBM_UNKNOWN when the device has none, e.g. no logic id) */
    char why[240];
} hbm_pick_refusal;

typedef struct hbm_pick_result {
    hbm_vendor vendor;
    size_t n;            /* chosen */
    int64_t *devices;    /* owned; user ids in ascending order (the variable wants that) */
    size_t *dev_index;   /* owned; index into obs->devs of each chosen device */
    int *lease_fds;      /* owned array; -1 per device when not leased */
    hbm_pick_refusal *refused; /* owned; every device not chosen, with the reason */
    size_t nrefused;
    size_t nusable;      /* FREE devices that qualified and were not lost to a racing taker */
    char env_name[40];   /* ASCEND_RT_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES */
    char env_value[512]; /* "0,1,2" */
    char placement[200]; /* why this set: one HCCS domain, hops, ... */
} hbm_pick_result;

/* Chooses opts->n FREE devices of one vendor from obs: devices that are not FREE, below
 * --min-free, without a usable id, or leased by someone else are refused with a reason;
 * among the rest it prefers a set inside one interconnect domain with the fewest and
 * cheapest hops (hbm_obs_link), then the most free memory, then the lowest ids. With a
 * lease name, the set is leased; a device lost to a racing taker is refused and the
 * choice is made again. Returns 0 when n were chosen (and leased), 1 when not enough
 * devices qualify (res->refused says why, nothing is held), -1 on error. */
int hbm_pick(const hbm_obs *obs, const hbm_pick_opts *opts, hbm_pick_result *res,
             hbm_err *err);

/* Closes any lease fds still open in res and frees its arrays. */
void hbm_pick_result_free(hbm_pick_result *res);
/* `pick --json`: {devices, env, refused, placement (null when none chosen)}, and with a
 * lease name and devices chosen, lease {name, holder_pid, hold_pid, dir} (docs/doctor.md). */
json_t *hbm_pick_result_json(const hbm_pick_result *r, const char *lease, int holder,
                             int hold_pid, const char *dir);

/* Ends every held lease named name (hbm/lease.h) by sending SIGTERM to its holder through
 * the start-time-checked path, then waits up to timeout_s for the locks to drop. *ended
 * counts the holders signalled. Returns 0 when all dropped, 1 when no lease of that name
 * is held, -1 on error (err says which holder did not let go). */
int hbm_lease_end(const char *lease_dir, const char *name, double timeout_s, size_t *ended,
                  hbm_err *err);

#endif
