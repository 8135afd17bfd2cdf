/* The OCI poststop hook (docs/hook.md): after a container stops, end the processes that held
 * its accelerator devices and outlived it, with clean's judgement and checked kill.
 *
 * At poststop the container's processes are gone and the runtime may give no pid (podman
 * runs the hook itself with id, bundle and annotations only), so a leftover is told by what
 * the host still shows: it holds an open file on one of the devices the bundle's
 * config.json lists (the path as the container saw it and the same major:minor), and it is
 * the container's: its cgroup names the container, or, escaped from the cgroups, its root
 * directory is the container's root file system (which the runtime unmounts only after the
 * hook), outside the host's mount namespace, and it started after the config was written.
 * Anything less is kept and audited. */
#ifndef HBM_HOOK_H
#define HBM_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hbm/doctor.h"
#include "hbm/err.h"
#include "hbm/obs.h"

/* The OCI state document (runtime-spec state.md) the runtime writes to the hook's stdin. */
typedef struct hbm_hook_state {
    char id[256];
    int pid;            /* 0 when absent (podman's poststop) */
    char bundle[4096];  /* absolute path of the bundle directory */
} hbm_hook_state;

/* One accelerator device of the container (config.json linux.devices). */
typedef struct hbm_hook_device {
    char path[256];     /* as the container saw it: /dev/davinci0 */
    char type;          /* 'c' or 'b' */
    int64_t major, minor;
} hbm_hook_device;

typedef struct hbm_hook_container {
    hbm_hook_state state;
    hbm_hook_device *devs; /* owned; only paths matching the device-file patterns */
    size_t ndevs;
    dev_t root_dev;        /* its root file system (root.path) as mounted now; */
    ino_t root_ino;        /* 0: not found */
    double since;          /* config.json's mtime, unix seconds: written before any of the
                              container's processes started */
} hbm_hook_container;

/* A process that holds one of the container's devices, and what was proven of it. */
typedef struct hbm_hook_target {
    int pid;
    uint64_t starttime;
    char comm[32];
    char device[256];   /* the container's device it holds */
    bool proven;        /* the container's: handed to clean's plan */
    char why[240];      /* the proof, or why it is kept */
} hbm_hook_target;

typedef struct hbm_hook_plan {
    hbm_hook_target *targets; /* owned */
    size_t n;
    hbm_clean_plan clean;     /* the proven ones, judged by clean (finding "container-outlived") */
} hbm_hook_plan;

/* Reads the state document from fd (a pipe or FIFO from the runtime: waited for with poll,
 * at most timeout_s in all and 1 MiB). id and bundle are required; id must be a plain name. */
int hbm_hook_read_state(int fd, double timeout_s, hbm_hook_state *st, hbm_err *err);

/* The bundle's config.json (4 MiB bound): its accelerator devices and its mtime. A container
 * without one has ndevs 0: the hook has nothing to do. */
int hbm_hook_container_read(const hbm_hook_state *st, hbm_hook_container *c, hbm_err *err);
void hbm_hook_container_free(hbm_hook_container *c);

/* Scans the host (device holders only; no vendor library) into obs (initialised here). */
int hbm_hook_observe(hbm_obs *obs, hbm_err *err);

/* The targets on obs and their proofs, then clean's plan over the proven ones. */
void hbm_hook_plan_make(const hbm_obs *obs, const hbm_hook_container *c,
                        const hbm_clean_opts *o, hbm_hook_plan *plan);
void hbm_hook_plan_free(hbm_hook_plan *plan);

/* The step of clean's plan that ends pid; NULL when none does (the target was not proven). */
const hbm_clean_step *hbm_hook_step_of(const hbm_hook_plan *plan, int pid);

/* Records a failure of the hook's own in the audit log ("hook-error": the command, the
 * container id, what went wrong), best effort: a hook never fails the container's stop. */
void hbm_hook_audit_error(const hbm_clean_opts *o, const char *container, const char *detail);

/* Audits the kept targets and applies clean's plan. Nothing is written when there is no
 * target. Returns what hbm_clean_apply returns (0 when nothing to apply). */
int hbm_hook_apply(hbm_hook_plan *plan, const hbm_hook_container *c, const hbm_clean_opts *o,
                   hbm_err *err);

#endif
