/* Internals of the supervisor, shared by the files of src/run/. */
#ifndef HBM_RUN_INT_H
#define HBM_RUN_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hbm/err.h"
#include "hbm/obs.h"
#include "hbm/progress.h"
#include "hbm/run.h"

/* Logging through the caller's callback, printf style. */
void run_log(const hbm_run_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- cgroup v2 leaf (cgroup.c) ------------------------------------------------------- */

typedef struct run_cgroup {
    bool active;        /* the leaf exists and the child is started into it */
    bool has_kill;      /* cgroup.kill exists (Linux >= 5.14) */
    char dir[4096];     /* the leaf directory */
    int procs_fd;       /* O_WRONLY|O_CLOEXEC on the leaf's cgroup.procs, -1 when inactive */
} run_cgroup;

/* Makes a leaf under hbmctl's own cgroup on the cgroup2 mount named by mountinfo.
 * Returns 0 when made, -1 with the reason when it cannot (read-only, no cgroup2, ...). */
int run_cgroup_create(run_cgroup *cg, hbm_err *err);
/* Pids in the leaf (cgroup.procs); *pids owned by the caller. */
int run_cgroup_pids(const run_cgroup *cg, int **pids, size_t *n);
/* Writes 1 to cgroup.kill; -1 when the kernel has none. */
int run_cgroup_kill(const run_cgroup *cg);
/* Removes the (empty) leaf. */
void run_cgroup_remove(run_cgroup *cg);

/* The mount point and root of the first cgroup2 line of mountinfo text; 1 found, else 0. */
int run_mountinfo_cgroup2(const char *text, char *mnt, size_t nmnt, char *root, size_t nroot);
/* The leaf's parent directory from a mount point, the mount's root and the "0::" path. */
int run_cgroup_dir(const char *mnt, const char *root, const char *path, char *out, size_t n);

/* ---- the process tree (tree.c) ------------------------------------------------------- */

typedef struct run_proc {
    int pid, ppid, pgrp, sid;
    char state;
    uint64_t start; /* /proc/PID/stat field 22: with pid, the identity */
    char comm[32];
} run_proc;

typedef struct run_seen {
    int pid;
    uint64_t start;
    char comm[32];
    int last_sig;    /* strongest signal sent in its stop: 0, SIGTERM or SIGKILL */
    int stop_gen;    /* the stop it was last seen in */
    bool alive_now;  /* a member at the last scan of that stop */
} run_seen;

typedef struct run_tree {
    int self;           /* hbmctl's pid */
    bool proc_usable;   /* /proc belongs to our PID namespace */
    bool has_children;  /* /proc/PID/task/TID/children exists (CONFIG_PROC_CHILDREN) */
    int *ancestors;     /* owned: hbmctl's ancestors, never signalled */
    size_t nancestors;
    pid_t child_pgid;   /* the child's group (= session with --setsid), 0 before start */
    bool by_session;    /* members of the child's session count too */
    const run_cgroup *cg; /* borrowed */
    run_seen *seen;     /* owned: every process seen in the tree, for shm creators and counts */
    size_t nseen, capseen;
} run_tree;

void run_tree_init(run_tree *t, const run_cgroup *cg);
void run_tree_free(run_tree *t);
/* Current members (alive, not zombies); *out owned by the caller. Records them as seen. */
int run_tree_members(run_tree *t, run_proc **out, size_t *n);
/* Signals one member through a pidfd after checking its start time (doctor's checked
 * kill); 0 sent, 1 gone or no longer the same process. */
int run_signal_proc(const run_proc *p, int sig);
run_seen *run_tree_seen(run_tree *t, int pid, uint64_t start);
bool run_tree_was_member(const run_tree *t, int pid);
/* Records a pid hbmctl reaped (adopted orphans included). */
void run_tree_note_reaped(run_tree *t, int pid);
/* One scan within stop number gen: marks who is alive now; returns the members (owned). */
size_t run_tree_scan(run_tree *t, int gen, run_proc **m);

/* ---- the child (spawn.c) ------------------------------------------------------------- */

typedef struct run_sigstate {
    sigset_t orig_mask;
    struct sigaction orig_ttin, orig_ttou;
    int nfwd;
    int fwd[8];                  /* the forwarded signals */
    struct sigaction orig_fwd[8]; /* their dispositions as hbmctl got them */
} run_sigstate;

/* Starts argv as the child. Returns its pid; on failure to exec, returns -1 with *code set
 * to 125/126/127 and err filled (the child has already been reaped). */
pid_t run_spawn(const hbm_run_opts *o, const run_cgroup *cg, int tty_fd,
                const run_sigstate *ss, int *code, hbm_err *err);

/* ---- devices (devmem.c) -------------------------------------------------------------- */

typedef struct run_devmem {
    int64_t id;          /* user id */
    int64_t total;
    int64_t baseline;    /* used before the child started */
    int64_t used;        /* last sample */
    int64_t held;        /* largest sample of the current run */
    double over_since;   /* monotonic time the threshold was first crossed, 0 none */
    bool seen;
} run_devmem;

typedef struct run_devices {
    run_devmem *d;       /* owned */
    size_t n;
    bool disabled;       /* no backend: stop sampling, said once */
} run_devices;

void run_devices_init(run_devices *dv, const hbm_run_opts *o);
void run_devices_free(run_devices *dv);
/* Observes and updates used/held (and baseline when set_baseline). Returns 0, -1 when
 * the devices cannot be observed. With obs_out non-NULL the observation is handed over. */
int run_devices_sample(run_devices *dv, const hbm_run_opts *o, bool set_baseline,
                       hbm_obs *obs_out, hbm_err *err);

/* ---- the supervisor's state (supervise.c, signals.c, stop.c) ------------------------- */

typedef struct run_shmid {
    int shmid;
    int64_t ctime;
} run_shmid;

typedef struct run_state {
    const hbm_run_opts *o; /* borrowed */
    hbm_run_result *res;   /* borrowed */
    run_cgroup cg;
    run_tree tree;
    run_devices dv;
    run_sigstate ss;
    sigset_t waitset;      /* signals hbmctl takes with sigtimedwait */
    int tty_fd;            /* controlling terminal when hbmctl is in its foreground, else -1 */
    pid_t child;           /* the main child, 0 before the first start */
    bool child_done;
    int child_status;      /* wait(2) status once child_done */
    bool stop_requested;   /* SIGTERM or SIGINT arrived */
    int stop_gen;          /* numbers the stops, so counts are per stop */
    bool stop_prepared;    /* the tree was listed for the coming stop before any signal */
    run_shmid *shm_at_start; /* owned: segments that existed before the first start */
    size_t nshm_at_start;
    bool baseline_taken;
    hbm_progress progress;   /* the last /metrics sample of the current start */
} run_state;

/* ---- signals (signals.c) ------------------------------------------------------------- */

/* Blocks the signals hbmctl takes (forwarded ones included) and sets their dispositions;
 * restore gives the terminal signals back. */
void run_signals_setup(run_state *s);
void run_signals_restore(run_state *s);
/* "SIGTERM", or "signal 70" for one without a name (static buffer). */
const char *run_signame(int sig);
/* Sends sig to the child's process group (the child alone when the group is gone). */
void run_forward(run_state *s, int sig);
/* Waits up to timeout_s for one signal and handles it (reap, forward, job control).
 * Returns the signal, 0 on timeout. */
int run_wait_signal(run_state *s, double timeout_s);
/* Reaps every child that has exited (adopted orphans included). */
void run_reap(run_state *s);
/* Lists the tree for the coming stop before the first signal goes out, so a process
 * that dies of the forwarded signal at once is still counted. */
void run_stop_prepare(run_state *s);

/* ---- the stop sequence (stop.c) ------------------------------------------------------ */

/* The stop sequence over the whole tree; group_signalled: the child's group already got
 * the stop signal (forwarded), so its members are not signalled twice. */
void run_stop_tree(run_state *s, bool group_signalled);
/* Waits for the watched devices' memory to return to baseline; logs per device and adds
 * the released figures to *text (owned, appended). */
void run_release_wait(run_state *s, char **text);
/* Records the SysV segments present now (before the first start). */
void run_shm_record(run_state *s);
/* Removes the segments the tree created that nobody attaches; returns how many. */
size_t run_shm_cleanup(run_state *s);
void run_audit(const run_state *s, const char *action, int pid, const char *comm,
               const char *detail);

/* ---- health (health.c) --------------------------------------------------------------- */

/* One GET; 0 when it answered 2xx, -1 with why. */
int run_health_get(const char *url, double timeout_s, hbm_err *err);
/* One /metrics sample judged against the previous one in track: 0 healthy (err empty),
 * 1 stalled (err holds the stall line), -1 the page could not be read (err says why). */
int run_progress_check(const hbm_run_opts *o, hbm_progress *track, hbm_err *err);

#endif
