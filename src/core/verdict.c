/* Verdicts (docs/verdicts.md). Step 1: processes the driver lists (joined with host facts when the
 * observation has them). Step 2: memory against the chip's idle baseline. Step 3:
 * utilisation with no process. Every verdict gets a reason naming its evidence. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hbm/verdict.h"
#include "hbm/text.h"

/* Documented idle use per chip family (research: ascend-ops.md section 6, DCMI docs: "the
 * system occupies 3 GB [32 GB parts] / 4 GB [64 GB parts] when no service is running"). */
int64_t hbm_verdict_baseline(const char *name, hbm_vendor vendor, int64_t total)
{
    if (vendor == HBM_VENDOR_NVIDIA)
        return 600 * HBM_MIB; /* driver-reserved memory counted as used on recent drivers */
    if (strncasecmp(name, "310B", 4) == 0)
        return HBM_UNKNOWN; /* SoC: memory shared with the board's OS, no fixed idle figure */
    if (strstr(name, "vir") || strstr(name, "Vir"))
        return 256 * HBM_MIB; /* vNPU slice */
    if (strncasecmp(name, "310P", 4) == 0)
        return 1536 * HBM_MIB;
    if (strcmp(name, "310") == 0)
        return 640 * HBM_MIB;
    if (strcasecmp(name, "910ProB") == 0 || strcasecmp(name, "910ProA") == 0 ||
        strcasecmp(name, "910A") == 0 || strcasecmp(name, "910B") == 0)
        return 64 * HBM_MIB; /* first-generation 910: idle HBM 0-18 MB (DDR is separate) */
    /* 910B1..B4, 910_93 (A3) and unknown parts: by size, as the DCMI documentation states. */
    if (total >= 48 * HBM_GIB)
        return 4 * HBM_GIB;
    if (total >= 24 * HBM_GIB)
        return 3 * HBM_GIB;
    if (total > 0)
        return total / 10;
    return HBM_UNKNOWN;
}

/* The margin above baseline that counts as memory nobody accounts for: max(1 GiB, 3% of
 * total). */
static int64_t margin_of(int64_t total)
{
    int64_t pct = total > 0 ? total * 3 / 100 : 0;
    return pct > HBM_GIB ? pct : HBM_GIB;
}

bool hbm_verdict_server_child(const hbm_hproc *hp)
{
    if (strncmp(hp->comm, "VLLM", 4) == 0)
        return true;
    const char *c = hp->cmdline ? hp->cmdline : "";
    return strncmp(c, "VLLM::", 6) == 0 || strstr(c, "--multiprocessing-fork") ||
           strstr(c, "multiprocessing.spawn");
}

/* A container's init that runs no server itself: a shell (an image's `bash -lc`) or a
 * minimal init. A server's worker whose parent it is was left there when its server died; a
 * server that is the container's PID 1 itself (`vllm serve` as the entrypoint) is not one. */
static bool plain_init(const char *comm)
{
    static const char *const inits[] = {"sh",         "bash",        "dash",        "ash",
                                        "zsh",        "ksh",         "tini",        "tini-static",
                                        "docker-init", "dumb-init",  "catatonit",   "s6-svscan",
                                        "runsvdir"};
    for (size_t i = 0; i < sizeof inits / sizeof inits[0]; i++)
        if (!strcmp(comm, inits[i]))
            return true;
    return false;
}

static void join_process(const hbm_obs *obs, hbm_dproc *p)
{
    if (!obs->has_host || p->pid <= 0) {
        p->state = HBM_PID_UNCHECKED;
        return;
    }
    const hbm_host *h = &obs->host;
    const hbm_hproc *hp = hbm_host_find(h, (int)p->pid);
    if (!hp) {
        if (h->sees_host_pids) {
            p->state = HBM_PID_GONE;
            snprintf(p->state_why, sizeof p->state_why,
                     "pid %lld is listed by the driver but no longer exists", (long long)p->pid);
        } else {
            p->state = HBM_PID_UNSEEN;
            hbm_text_fitf(p->state_why, sizeof p->state_why,
                          "pid %lld is not in this PID namespace (%s)", (long long)p->pid,
                     h->sees_host_pids_why[0] ? h->sees_host_pids_why
                                              : "hbmctl does not see the host's pids");
        }
        return;
    }
    if (!p->name[0])
        snprintf(p->name, sizeof p->name, "%s", hp->comm);
    if (!p->container[0] && hp->container_id[0])
        snprintf(p->container, sizeof p->container, "%.12s", hp->container_id);
    if (!p->container_name[0])
        snprintf(p->container_name, sizeof p->container_name, "%s", hp->container_name);
    if (!p->container_image[0])
        snprintf(p->container_image, sizeof p->container_image, "%s", hp->container_image);
    /* NSpid, outermost first: its last entry is the pid inside the container. */
    if (p->pid_in_container < 0 && hp->nnspid > 1)
        p->pid_in_container = hp->nspid[hp->nnspid - 1];
    if (!p->pod.name[0] && hp->pod.name[0])
        p->pod = hp->pod;
    p->state = hbm_verdict_process_state(h, hp, p->state_why, sizeof p->state_why);
}

hbm_pid_state hbm_verdict_process_state(const hbm_host *h, const hbm_hproc *hp, char *why,
                                        size_t n)
{
    why[0] = 0;
    if (hp->state == 'Z' && hp->zombie_live_threads > 0)
        return HBM_PID_LIVE; /* the leader exited, its threads run on (pthread_exit in main) */
    if (hp->state == 'Z') {
        snprintf(why, n, "pid %d (%s) is a zombie: it exited and its parent %d has not reaped "
                 "it", hp->pid, hp->comm, hp->ppid);
        return HBM_PID_ZOMBIE;
    }
    /* A frozen task sleeps in the freezer (state D on v1 kernels): paused, not stuck. */
    if (!strcmp(hp->container_state, "paused")) {
        snprintf(why, n, "pid %d (%s) is in paused container %.12s", hp->pid, hp->comm,
                 hp->container_id);
        return HBM_PID_LIVE;
    }
    if (hp->state == 'D') {
        snprintf(why, n, "pid %d (%s) is stuck in uninterruptible sleep (D)%s%s", hp->pid,
                 hp->comm, hp->wchan[0] ? " in " : "", hp->wchan);
        return HBM_PID_STUCK;
    }
    if (hbm_host_container_gone(hp) && hp->ppid <= 1) {
        bool by_runtime = !strcmp(hp->container_state, "gone");
        snprintf(why, n, "pid %d (%s) outlived its container %.12s: %s and its parent is init",
                 hp->pid, hp->comm, hp->container_id[0] ? hp->container_id : "(unknown)",
                 by_runtime ? "no container runtime knows it" : "the container's cgroup is gone");
        return HBM_PID_ABANDONED;
    }
    if (!strcmp(hp->container_state, "running") && hp->parent_container_init &&
        plain_init(hp->parent_comm) && hbm_verdict_server_child(hp)) {
        snprintf(why, n, "pid %d (%s) is a server's worker whose server has exited: it now "
                 "belongs to the init of running container %.40s (pid %d, %s)", hp->pid,
                 hp->comm, hp->container_name[0] ? hp->container_name : hp->container_id,
                 hp->ppid, hp->parent_comm);
        return HBM_PID_ABANDONED;
    }
    /* Only in the host's PID namespace does ppid 1 mean init: inside a container, pid 1 may
     * be the server itself. A container its runtime still runs is not abandoned. */
    if (h->sees_host_pids && hp->ppid == 1 && strcmp(hp->container_state, "running") &&
        hbm_verdict_server_child(hp)) {
        snprintf(why, n, "pid %d (%s) is a server's worker whose server has exited: it now "
                 "belongs to init (ppid 1)", hp->pid, hp->comm);
        return HBM_PID_ABANDONED;
    }
    return HBM_PID_LIVE;
}

static bool is_orphan_state(hbm_pid_state s)
{
    return s == HBM_PID_GONE || s == HBM_PID_ZOMBIE || s == HBM_PID_STUCK ||
           s == HBM_PID_ABANDONED;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The table baseline, refined by the other process-free chips of the same model that sit
 * within 1.5 GiB of it (so a host whose every card holds leftovers is not learned as idle,
 * and a chip's own leftovers never become its baseline). */
static int64_t refined_baseline(const hbm_obs *obs, const hbm_device *d)
{
    int64_t base = hbm_verdict_baseline(d->name, d->vendor, d->memory_total_bytes);
    if (base < 0)
        return base;
    int64_t *seen = hbm_xcalloc(obs->ndevs, sizeof *seen);
    size_t n = 0;
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *o = &obs->devs[i];
        if (o == d || strcmp(o->name, d->name) != 0 ||
            o->memory_total_bytes != d->memory_total_bytes ||
            !o->procs_known || o->nprocs > 0 || o->memory_used_bytes < 0)
            continue;
        if (llabs(o->memory_used_bytes - base) <= 1536 * HBM_MIB)
            seen[n++] = o->memory_used_bytes;
    }
    if (n > 0) {
        qsort(seen, n, sizeof *seen, cmp_i64);
        base = seen[n / 2];
    }
    free(seen);
    return base;
}

static void set_reason(hbm_device *d, hbm_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_reason(hbm_device *d, hbm_verdict v, const char *fmt, ...)
{
    d->verdict = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason, sizeof d->reason, fmt, ap);
    va_end(ap);
}

/* A process listed on this chip with a small entry while it holds much more on another
 * chip is a context entry (e.g. 116 MB on die 0 of an A3 card). */
static const hbm_device *main_chip_of(const hbm_obs *obs, const hbm_device *d,
                                      const hbm_dproc *p)
{
    for (size_t i = 0; i < obs->ndevs; i++) {
        const hbm_device *o = &obs->devs[i];
        if (o == d)
            continue;
        for (size_t j = 0; j < o->nprocs; j++)
            if (o->procs[j].pid == p->pid && o->procs[j].memory_bytes > 4 * p->memory_bytes &&
                o->procs[j].memory_bytes > HBM_GIB)
                return o;
    }
    return NULL;
}

/* Step 1: the processes listed. Returns true when they decide the verdict; else *unseen is
 * the first one the host does not see (NULL when none). */
static bool judge_processes(const hbm_obs *obs, hbm_device *d, const hbm_dproc **unseen)
{
    char used[32];
    size_t live = 0, orphan = 0;
    const hbm_dproc *first_orphan = NULL, *biggest = NULL, *paused = NULL;
    *unseen = NULL;
    for (size_t i = 0; i < d->nprocs; i++) {
        hbm_dproc *p = &d->procs[i];
        join_process(obs, p);
        if (is_orphan_state(p->state)) {
            orphan++;
            if (!first_orphan)
                first_orphan = p;
        } else if (p->state == HBM_PID_UNSEEN) {
            if (!*unseen)
                *unseen = p;
        } else {
            live++;
            const hbm_hproc *hp = obs->has_host ? hbm_host_find(&obs->host, (int)p->pid) : NULL;
            if (!paused && hp && !strcmp(hp->container_state, "paused"))
                paused = p;
            if (!biggest || p->memory_bytes > biggest->memory_bytes)
                biggest = p;
        }
    }
    if (orphan) {
        set_reason(d, HBM_VERDICT_ORPHANED, "%s%s; memory is held for a process whose owner "
                   "is gone (hbmctl doctor / clean)", first_orphan->state_why,
                   orphan > 1 ? " (and others)" : "");
        return true;
    }
    if (!live)
        return false;
    const hbm_device *other = biggest->memory_bytes >= 0 && biggest->memory_bytes < HBM_GIB
                                  ? main_chip_of(obs, d, biggest)
                                  : NULL;
    if (other)
        set_reason(d, HBM_VERDICT_BUSY,
                   "pid %lld (%s) holds only %s here, a context entry: it works on NPU "
                   "%lld chip %lld",
                   (long long)biggest->pid, biggest->name[0] ? biggest->name : "no name",
                   hbm_fmt_size(used, sizeof used, biggest->memory_bytes),
                   (long long)other->index, (long long)other->chip);
    else if (paused)
        set_reason(d, HBM_VERDICT_BUSY, "paused: %s; it resumes with its container "
                   "(docker unpause)", paused->state_why);
    else
        set_reason(d, HBM_VERDICT_BUSY, "%zu process%s listed%s%s%s%s%s", live,
                   live > 1 ? "es" : "", biggest->name[0] ? ": " : "", biggest->name,
                   biggest->memory_bytes >= 0 ? " holds " : "",
                   biggest->memory_bytes >= 0
                       ? hbm_fmt_size(used, sizeof used, biggest->memory_bytes)
                       : "",
                   d->procs_truncated ? "; npu-smi shows at most 8 per chip, there may be "
                                        "more"
                                      : "");
    return true;
}

/* Step 2, memory above the baseline with no live process listed: why it cannot be told. */
static void judge_over_baseline(const hbm_obs *obs, hbm_device *d, const hbm_dproc *unseen,
                                const char *used, const char *extra, const char *base_s)
{
    if (unseen)
        set_reason(d, HBM_VERDICT_UNACCOUNTED,
                   "%s used, %s above the %s idle baseline; %s: a process outside "
                   "hbmctl's view may hold it, run hbmctl on the host to know",
                   used, extra, base_s, unseen->state_why);
    else if (!d->procs_known)
        set_reason(d, HBM_VERDICT_UNACCOUNTED,
                   "%s used, %s above the %s idle baseline, and the input has no process "
                   "table for this chip: busy or leaked cannot be told apart", used, extra,
                   base_s);
    else if (!obs->has_host)
        set_reason(d, HBM_VERDICT_UNACCOUNTED,
                   "%s used, %s above the %s idle baseline, with no process listed; from "
                   "npu-smi text alone hbmctl cannot tell a container's partial view "
                   "(host pids hidden) from memory left by a process that is gone: run "
                   "hbmctl status or doctor on the host", used, extra, base_s);
    else if (!obs->host.sees_host_pids)
        set_reason(d, HBM_VERDICT_UNACCOUNTED,
                   "%s used, %s above the %s idle baseline, with no process listed; "
                   "hbmctl does not see the host's pids (%s), so a process outside this "
                   "container may hold it", used, extra, base_s,
                   obs->host.sees_host_pids_why);
    else
        set_reason(d, HBM_VERDICT_UNACCOUNTED,
                   "%s used, %s above the %s idle baseline, and no live process holds "
                   "it although hbmctl sees every host pid: memory left behind (hbmctl "
                   "doctor)", used, extra, base_s);
}

/* Memory no listed process accounts for: used - the sum of the listed processes' memory. */
static int64_t unaccounted_of(const hbm_device *d)
{
    if (d->memory_used_bytes < 0)
        return HBM_UNKNOWN;
    int64_t held = 0;
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].memory_bytes > 0)
            held += d->procs[i].memory_bytes;
    return d->memory_used_bytes > held ? d->memory_used_bytes - held : 0;
}

static void judge(const hbm_obs *obs, hbm_device *d)
{
    char used[32], base_s[32], extra[32];
    d->baseline_bytes = d->memory_total_bytes > 0 ? refined_baseline(obs, d) : HBM_UNKNOWN;
    d->unaccounted_bytes = unaccounted_of(d);
    if (!d->healthy) {
        set_reason(d, HBM_VERDICT_UNHEALTHY, "health is %s: do not schedule work here",
                   d->health[0] ? d->health : "not OK");
        return;
    }
    const hbm_dproc *unseen;
    if (judge_processes(obs, d, &unseen))
        return;

    /* Step 2: memory against the baseline. */
    if (d->memory_used_bytes < 0 || d->memory_total_bytes <= 0) {
        set_reason(d, d->procs_known ? HBM_VERDICT_FREE : HBM_VERDICT_UNACCOUNTED,
                   d->procs_known ? "no process listed; memory use unknown"
                                  : "neither processes nor memory are known for this chip");
        return;
    }
    int64_t base = d->baseline_bytes;
    int64_t margin = margin_of(d->memory_total_bytes);
    int64_t over = base >= 0 ? d->memory_used_bytes - base : 0;
    hbm_fmt_size(used, sizeof used, d->memory_used_bytes);
    hbm_fmt_size(base_s, sizeof base_s, base);
    hbm_fmt_size(extra, sizeof extra, over);
    if (base >= 0 && over > margin) {
        judge_over_baseline(obs, d, unseen, used, extra, base_s);
        return;
    }
    if (unseen) {
        set_reason(d, HBM_VERDICT_UNACCOUNTED, "%s; memory %s is at the idle baseline",
                   unseen->state_why, used);
        return;
    }
    /* Step 3: utilisation with no process and idle memory. */
    if (!isnan(d->utilization_ratio) && d->utilization_ratio >= 0.10) {
        set_reason(d, HBM_VERDICT_UNACCOUNTED,
                   "no process listed and memory at baseline (%s), but utilisation is %.0f%%: "
                   "something runs here that the driver does not attribute", used,
                   d->utilization_ratio * 100);
        return;
    }
    if (base < 0)
        set_reason(d, HBM_VERDICT_FREE,
                   "no process listed; %s used (this chip shares memory with its OS: no idle "
                   "baseline to compare with)", used);
    else if (!d->procs_known)
        set_reason(d, HBM_VERDICT_FREE,
                   "%s used is within %s of the %s idle baseline; the input has no process "
                   "table, so this is judged on memory alone", used,
                   hbm_fmt_size(extra, sizeof extra, margin), base_s);
    else
        set_reason(d, HBM_VERDICT_FREE, "no process; %s used is the idle baseline (%s)", used,
                   base_s);
}

void hbm_verdict_apply(hbm_obs *obs)
{
    for (size_t i = 0; i < obs->ndevs; i++)
        judge(obs, &obs->devs[i]);
}
