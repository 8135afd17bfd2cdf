/* Shared inside src/slurm/ only. */
#ifndef HBM_SLURM_INT_H
#define HBM_SLURM_INT_H

#include "hbm/obs.h"
#include "hbm/slurm.h"
#include "hbm/util.h"

/* node.c */
int slurm_node_read(const hbm_slurm_opts *o, hbm_slurm_node *node, hbm_err *err);
int slurm_node_drain(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err);
int slurm_node_resume_own(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err);

/* node.c: the job's devices on this node from `scontrol show job -d ID`. */
int slurm_job_devices(const hbm_slurm_opts *o, int64_t *ids, size_t max, size_t *n,
                      hbm_err *err);

/* member.c: the proof that pid belongs to the job (its cgroup, or SLURM_JOB_ID in its
 * environment while it is in no other job's cgroup) as words for a record, or NULL when
 * there is none; job_id NULL: any job. */
const char *slurm_is_member(const char *root, int pid, const char *job_id);
/* Appends every live process of the job (cgroup or environ, identity read twice so the
 * environ read belongs to that start time) that is not already listed. */
void slurm_find_members(const char *root, const char *job_id, hbm_slurm_result *res);
/* Adds one target unless listed already, it is PID 1 or hbmctl or one of its ancestors. */
void slurm_add_target(hbm_slurm_result *res, int pid, uint64_t starttime, const char *comm,
                      const char *why);
/* SIGTERM to every target, grace, SIGKILL to the survivors; each through a pidfd after a
 * start-time check; one audit record each. -1 only when the audit log cannot be written. */
int slurm_end_targets(const hbm_slurm_opts *o, hbm_slurm_result *res, hbm_err *err);

/* "GPU 3" / "NPU 3" */
void slurm_dev_name(const hbm_device *d, char *buf, size_t n);

#endif
