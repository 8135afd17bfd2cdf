/* The findings engine: a pure function of one observation. Device findings come from the
 * driver's process lists joined with host facts; host findings from shared memory,
 * hugepages, THP, /dev/shm and the inference servers' own arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor_int.h"
#include "hbm/doctor.h"
#include "hbm/util.h"
#include "hbm/verdict.h"
#include "hbm/text.h"

#define CANN_SLOGD_KEY 0x474f4c46LL

/* The vendor's reset command for a device ("npu-smi set -t reset -i 6 -c 0",
 * "nvidia-smi --gpu-reset -i 0"); hbmctl prints it and never runs it. */
static void reset_command(const hbm_device *dev, char *buf, size_t n)
{
    if (dev->vendor == HBM_VENDOR_NVIDIA)
        snprintf(buf, n, "nvidia-smi --gpu-reset -i %lld", (long long)dev->index);
    else
        snprintf(buf, n, "npu-smi set -t reset -i %lld -c %lld", (long long)dev->index,
                 (long long)(dev->chip >= 0 ? dev->chip : 0));
}

static void dev_label(const hbm_device *d, char *buf, size_t n)
{
    if (d->vendor == HBM_VENDOR_ASCEND) {
        if (d->logic_id >= 0)
            snprintf(buf, n, "NPU %lld chip %lld (logic %lld)", (long long)d->index,
                     (long long)d->chip, (long long)d->logic_id);
        else
            snprintf(buf, n, "NPU %lld chip %lld", (long long)d->index, (long long)d->chip);
    } else {
        snprintf(buf, n, "GPU %lld", (long long)d->index);
    }
}

static json_t *proc_evidence(const hbm_obs *obs, const hbm_dproc *p, const hbm_hproc *hp,
                             double now)
{
    json_t *e = json_object();
    json_object_set_new(e, "pid", json_integer(p->pid));
    json_object_set_new(e, "name", json_string(p->name[0] ? p->name : hp ? hp->comm : ""));
    json_object_set_new(e, "memory_bytes", doc_jint(p->memory_bytes));
    json_object_set_new(e, "state", json_string(hbm_pid_state_name(p->state)));
    if (p->state_why[0])
        json_object_set_new(e, "why", json_string(p->state_why));
    if (hp) {
        char st[2] = {hp->state, 0};
        json_object_set_new(e, "proc_state", json_string(st));
        json_object_set_new(e, "ppid", json_integer(hp->ppid));
        json_object_set_new(e, "starttime", json_integer((json_int_t)hp->starttime));
        double age = doc_age(obs, hp, now);
        json_object_set_new(e, "age_seconds", age >= 0 ? json_real(age) : json_null());
        if (hp->wchan[0])
            json_object_set_new(e, "wchan", json_string(hp->wchan));
        if (hp->container_id[0])
            json_object_set_new(e, "container", json_string(hp->container_id));
        if (hp->container_name[0])
            json_object_set_new(e, "container_name", json_string(hp->container_name));
        if (hp->container_image[0])
            json_object_set_new(e, "container_image", json_string(hp->container_image));
        const hbm_pod *pod = p->pod.name[0] ? &p->pod : &hp->pod;
        if (pod->name[0]) {
            json_t *po = json_object();
            json_object_set_new(po, "namespace", json_string(pod->ns));
            json_object_set_new(po, "name", json_string(pod->name));
            json_object_set_new(po, "uid", pod->uid[0] ? json_string(pod->uid) : json_null());
            json_object_set_new(po, "container",
                                pod->container[0] ? json_string(pod->container) : json_null());
            json_object_set_new(e, "pod", po);
        }
        json_object_set_new(e, "cgroup_gone", json_boolean(hp->cgroup_gone));
        if (hp->cmdline && hp->cmdline[0])
            json_object_set_new(e, "cmdline", json_string(hp->cmdline));
    }
    return e;
}

/* The zombie's parent, named: only it can reap the zombie (or, once it has ended, init). */
static void zombie_remedy(hbm_finding *x, const hbm_obs *obs, const hbm_dproc *p,
                          const hbm_hproc *hp, const char *reset)
{
    char after[400];
    hbm_text_fitf(after, sizeof after,
             "If the memory stays after the zombie is gone, threads may still be in the "
             "driver (see /proc/%lld/task/*/stat); then reset the device: %s (hbmctl never "
             "runs it).", (long long)p->pid, reset);
    const hbm_hproc *parent = hp ? doc_find_proc(obs, hp->ppid) : NULL;
    if (!hp || hp->ppid <= 0) {
        doc_remedy(x, "A signal cannot end a zombie; its parent must reap it, and this "
                      "observation does not say which process that is: read PPid in "
                      "/proc/%lld/status, then end or restart that parent. %s",
                   (long long)p->pid, after);
    } else if (!parent) {
        doc_remedy(x, "A signal cannot end a zombie. Its parent pid %d has not reaped it; "
                      "this observation has no facts about pid %d (it may have exited since: "
                      "look again). End or restart pid %d; init then reaps the zombie and the "
                      "driver frees the memory. %s",
                   hp->ppid, hp->ppid, hp->ppid, after);
    } else if (parent->pid == 1) {
        doc_remedy(x, "A signal cannot end a zombie. Its parent is pid 1 (%s), which should "
                      "reap it but has not: a container whose first process is not an init "
                      "never reaps. Restart that container (and run servers under an init: "
                      "`docker run --init`, or `hbmctl run` as pid 1); the driver frees the "
                      "memory when the zombie is reaped. %s",
                   parent->comm, after);
    } else {
        char cmd[96] = "";
        if (parent->cmdline && parent->cmdline[0])
            snprintf(cmd, sizeof cmd, ", `%.60s%s`", parent->cmdline,
                     strlen(parent->cmdline) > 60 ? "..." : "");
        doc_remedy(x, "A signal cannot end a zombie. pid %d (%s%s) has not reaped it: "
                      "it must wait() for its child, or end. End or restart pid %d (its "
                      "service, or kill %d); init then reaps the zombie and the driver frees "
                      "the memory. %s",
                   parent->pid, parent->comm, cmd, parent->pid, parent->pid, after);
    }
}

/* " of pod NAMESPACE/NAME" when the process runs in a Kubernetes pod, else "". */
static const char *pod_of(const hbm_pod *pod, char *buf, size_t n)
{
    buf[0] = '\0';
    if (pod->name[0])
        snprintf(buf, n, " of pod %s/%s", pod->ns, pod->name);
    return buf;
}

static json_t *parent_evidence(const hbm_obs *obs, const hbm_hproc *hp, double now)
{
    const hbm_hproc *pp = doc_find_proc(obs, hp->ppid);
    if (!pp)
        return json_null();
    json_t *e = json_object();
    char st[2] = {pp->state, 0};
    json_object_set_new(e, "pid", json_integer(pp->pid));
    json_object_set_new(e, "name", json_string(pp->comm));
    json_object_set_new(e, "proc_state", json_string(st));
    json_object_set_new(e, "starttime", json_integer((json_int_t)pp->starttime));
    double age = doc_age(obs, pp, now);
    json_object_set_new(e, "age_seconds", age >= 0 ? json_real(age) : json_null());
    if (pp->cmdline && pp->cmdline[0])
        json_object_set_new(e, "cmdline", json_string(pp->cmdline));
    return e;
}

/* A holder whose starter is gone: what ("pid N (name) holds X on Y") and the rest of the
 * summary (tail). An engine its dead server left inside a running container is engine-orphan
 * (the container may stay: end the engine, or restart the container); else orphan-holder. */
static hbm_finding *abandoned_finding(hbm_findings *out, const hbm_hproc *hp, int64_t dev,
                                      const char *what, const char *tail)
{
    hbm_finding *x;
    if (hp && !strcmp(hp->container_state, "running")) {
        const char *ctr = hp->container_name[0] ? hp->container_name : hp->container_id;
        x = doc_add(out, DOC_ENGINE_ORPHAN, HBM_SEV_CRITICAL, dev,
                    "%s and its server has exited: it is left to the init of running container "
                    "%.40s%s", what, ctr, tail);
        doc_remedy(x, "End it: clean --apply sends SIGTERM, then SIGKILL after the grace "
                      "period, and the container runs on; or restart container %.40s, which "
                      "ends it with the rest. The driver returns the memory once it has exited.",
                   ctr);
    } else {
        x = doc_add(out, DOC_ORPHAN_HOLDER, HBM_SEV_CRITICAL, dev,
                    "%s and the process that started it is gone%s", what, tail);
        doc_remedy(x, "End it: clean --apply sends SIGTERM, then SIGKILL after the grace "
                      "period; the driver returns the memory once it has exited. Start "
                      "servers under `hbmctl run` so this cannot happen again.");
    }
    if (hp)
        doc_kill_action(x, hp);
    return x;
}

static void holder_findings(const hbm_obs *obs, const hbm_device *d, double now,
                            hbm_findings *out)
{
    char label[96], sz[32], reset[96], pod[340];
    dev_label(d, label, sizeof label);
    reset_command(d, reset, sizeof reset);
    int64_t uid = hbm_device_user_id(d);
    for (size_t i = 0; i < d->nprocs; i++) {
        const hbm_dproc *p = &d->procs[i];
        const hbm_hproc *hp = doc_find_proc(obs, (int)p->pid);
        const char *name = p->name[0] ? p->name : hp ? hp->comm : "?";
        hbm_fmt_size(sz, sizeof sz, p->memory_bytes);
        hbm_finding *x = NULL;
        if (p->state == HBM_PID_ABANDONED) {
            char what[600];
            snprintf(what, sizeof what, "pid %lld (%s)%s holds %s on %s", (long long)p->pid,
                     name, pod_of(&p->pod, pod, sizeof pod), sz, label);
            x = abandoned_finding(out, hp, uid, what, "");
        } else if (p->state == HBM_PID_ZOMBIE) {
            x = doc_add(out, DOC_ZOMBIE_HOLDER, HBM_SEV_CRITICAL, uid,
                        "pid %lld (%s) on %s is a zombie; the driver still counts %s for it",
                        (long long)p->pid, name, label, sz);
            zombie_remedy(x, obs, p, hp, reset);
        } else if (p->state == HBM_PID_STUCK) {
            x = doc_add(out, DOC_STUCK_HOLDER, HBM_SEV_CRITICAL, uid,
                        "pid %lld (%s) on %s is stuck in the kernel (D state%s%s) holding %s",
                        (long long)p->pid, name, label, hp && hp->wchan[0] ? " at " : "",
                        hp ? hp->wchan : "", sz);
            doc_remedy(x, "No signal ends a process in uninterruptible sleep until its kernel "
                          "call returns. Wait, check dmesg for driver errors; if it never "
                          "returns, reset the device (%s, never run by hbmctl) or reboot.",
                       reset);
        } else if (p->state == HBM_PID_GONE) {
            x = doc_add(out, DOC_GONE_HOLDER, HBM_SEV_CRITICAL, uid,
                        "the driver lists pid %lld with %s on %s but no such process exists",
                        (long long)p->pid, sz, label);
            doc_remedy(x, "The driver frees memory asynchronously after a process exits: "
                          "check again in a few seconds. If it stays, nothing on this host "
                          "can release it except a device reset: %s (hbmctl never runs it).",
                       reset);
        }
        if (x)
            json_object_set_new(x->evidence, "process", proc_evidence(obs, p, hp, now));
        if (x && hp && (p->state == HBM_PID_ZOMBIE || p->state == HBM_PID_STUCK))
            json_object_set_new(x->evidence, "parent", parent_evidence(obs, hp, now));
    }
}

/* Without a device source (backend "none") the driver lists nobody: the processes that hold
 * accelerator device files stand in, judged by the join's rules, memory unknown. */
static void file_holder_findings(const hbm_obs *obs, double now, hbm_findings *out)
{
    const hbm_host *h = &obs->host;
    for (size_t i = 0; i < h->nprocs; i++) {
        const hbm_hproc *hp = &h->procs[i];
        if (hp->ndev_paths == 0 || (hp->state == 'Z' && hp->zombie_live_threads == 0))
            continue;
        hbm_dproc p = {.pid = hp->pid, .memory_bytes = HBM_UNKNOWN,
                       .pid_in_container = HBM_UNKNOWN};
        snprintf(p.name, sizeof p.name, "%s", hp->comm);
        char files[160] = "", pod[340];
        for (size_t k = 0, pos = 0; k < hp->ndev_paths && pos < sizeof files; k++)
            pos += (size_t)snprintf(files + pos, sizeof files - pos, "%s%s", k ? ", " : "",
                                    hp->dev_paths[k]);
        hbm_finding *x = NULL;
        p.state = hbm_verdict_process_state(h, hp, p.state_why, sizeof p.state_why);
        if (p.state == HBM_PID_STUCK) {
            x = doc_add(out, DOC_STUCK_HOLDER, HBM_SEV_CRITICAL, HBM_UNKNOWN,
                        "pid %d (%s) holds %s and is stuck in the kernel (D state%s%s)",
                        hp->pid, hp->comm, files, hp->wchan[0] ? " at " : "", hp->wchan);
            doc_remedy(x, "No signal ends a process in uninterruptible sleep until its kernel "
                          "call returns. Wait, check dmesg for driver errors; if it never "
                          "returns, reset the device with the vendor tool or reboot.");
        } else if (p.state == HBM_PID_ABANDONED) {
            char what[600];
            snprintf(what, sizeof what, "pid %d (%s)%s holds %s", hp->pid, hp->comm,
                     pod_of(&hp->pod, pod, sizeof pod), files);
            x = abandoned_finding(out, hp, HBM_UNKNOWN, what,
                                  " (device memory unknown: no device source)");
        }
        if (!x)
            continue;
        json_t *e = proc_evidence(obs, &p, hp, now);
        json_t *df = json_array();
        for (size_t k = 0; k < hp->ndev_paths; k++)
            json_array_append_new(df, json_string(hp->dev_paths[k]));
        json_object_set_new(e, "device_files", df);
        json_object_set_new(x->evidence, "process", e);
    }
}

static bool any_host_holder(const hbm_obs *obs)
{
    for (size_t i = 0; i < obs->host.nprocs; i++)
        if (obs->host.procs[i].ndev_paths > 0 && obs->host.procs[i].state != 'Z')
            return true;
    return false;
}

static void device_findings(const hbm_obs *obs, const hbm_device *d, hbm_findings *out)
{
    char label[96], reset[96], a[32], b[32];
    dev_label(d, label, sizeof label);
    reset_command(d, reset, sizeof reset);
    int64_t uid = hbm_device_user_id(d);

    if (!d->healthy) {
        hbm_finding *x = doc_add(out, DOC_DEVICE_NEEDS_RESET, HBM_SEV_CRITICAL, uid,
                                 "%s reports health %s", label,
                                 d->health[0] ? d->health : "not OK");
        json_object_set_new(x->evidence, "health", json_string(d->health));
        json_object_set_new(x->evidence, "reset_command", json_string(reset));
        doc_remedy(x, "Move work off it, stop every process using it, then reset it: %s "
                      "(hbmctl never runs it). If health stays bad, the card needs service.",
                   reset);
    }

    if (d->verdict == HBM_VERDICT_UNACCOUNTED) {
        int64_t base = d->baseline_bytes;
        int64_t unacc = d->unaccounted_bytes;
        bool sees = obs->has_host && obs->host.sees_host_pids;
        hbm_finding *x = doc_add(out, DOC_UNACCOUNTED_MEMORY, HBM_SEV_WARNING, uid,
                                 "%s: %s used, %s not accounted for by any live process",
                                 label, hbm_fmt_size(a, sizeof a, d->memory_used_bytes),
                                 hbm_fmt_size(b, sizeof b, unacc));
        json_t *e = x->evidence;
        json_object_set_new(e, "memory_used_bytes", doc_jint(d->memory_used_bytes));
        json_object_set_new(e, "memory_total_bytes", doc_jint(d->memory_total_bytes));
        json_object_set_new(e, "baseline_bytes", doc_jint(base));
        json_object_set_new(e, "unaccounted_bytes", doc_jint(unacc));
        json_object_set_new(e, "sees_host_pids",
                            obs->has_host ? json_boolean(obs->host.sees_host_pids) : json_null());
        json_object_set_new(e, "reason", json_string(d->reason));
        if (!obs->has_host)
            doc_remedy(x, "This input has no host facts, so a container's partial view and "
                          "leaked memory look the same: run `hbmctl doctor` on the host.");
        else if (!sees)
            doc_remedy(x, "hbmctl cannot see the host's pids here (%s): the memory is "
                          "probably held by a process in another container or on the host. "
                          "Run hbmctl on the host (or with --pid=host) to name it.",
                       obs->host.sees_host_pids_why);
        else {
            bool holders = any_host_holder(obs);
            doc_remedy(x, "hbmctl sees every host pid and none accounts for it. A process "
                          "that just exited is freed asynchronously: check again in a few "
                          "seconds. If it stays%s, reset the device: %s (never run by hbmctl).",
                       holders ? " and the processes that hold device files are stopped" : "",
                       reset);
            if (!holders) {
                hbm_finding *r = doc_add(out, DOC_DEVICE_NEEDS_RESET, HBM_SEV_CRITICAL, uid,
                                         "%s holds %s that no process on this host can "
                                         "release", label, b);
                json_t *c = json_array();
                json_array_append_new(c, json_string("hbmctl sees the host's pids"));
                json_array_append_new(c, json_string("no process holds an accelerator device "
                                                     "file"));
                json_array_append_new(c, json_string("the driver lists no live process on "
                                                     "this device"));
                json_object_set_new(r->evidence, "checks_passed", c);
                json_object_set_new(r->evidence, "unaccounted_bytes", doc_jint(unacc));
                json_object_set_new(r->evidence, "reset_command", json_string(reset));
                doc_remedy(r, "Re-check once (release is asynchronous). Then reset it: %s. "
                              "hbmctl prints the command and never runs it.", reset);
            }
        }
    }

    /* npu-smi's Hugepages-Usage column counts the card's own memory pool (docs/verdicts.md). */
    if (d->hugepages_total > 0 && d->hugepages_used >= d->hugepages_total) {
        bool bad = false;
        json_t *holders = json_array();
        for (size_t i = 0; i < d->nprocs; i++) {
            const hbm_dproc *p = &d->procs[i];
            bad |= p->state == HBM_PID_ABANDONED || p->state == HBM_PID_ZOMBIE ||
                   p->state == HBM_PID_STUCK || p->state == HBM_PID_GONE;
            json_array_append_new(holders, json_pack("{s:I, s:s, s:o, s:s}", "pid",
                                                     (json_int_t)p->pid, "name", p->name,
                                                     "memory_bytes", doc_jint(p->memory_bytes),
                                                     "state", hbm_pid_state_name(p->state)));
        }
        hbm_finding *x = doc_add(out, DOC_DEVICE_HUGEPAGES_FULL, bad ? HBM_SEV_WARNING : HBM_SEV_INFO,
                                 uid,
                                 "%s: npu-smi Hugepages-Usage %lld/%lld pages (100%%) is the "
                                 "card's own memory held by its processes, not host hugepages",
                                 label, (long long)d->hugepages_used, (long long)d->hugepages_total);
        json_t *e = x->evidence;
        json_object_set_new(e, "hugepages_used", json_integer(d->hugepages_used));
        json_object_set_new(e, "hugepages_total", json_integer(d->hugepages_total));
        json_object_set_new(e, "memory_used_bytes", doc_jint(d->memory_used_bytes));
        json_object_set_new(e, "holders", holders);
        doc_remedy(x, "Only ending the process that holds the card's memory lowers it%s. "
                      "Host-side cleanup (ipcrm, vm.nr_hugepages, THP) cannot change it; "
                      "`ipcs -m | grep ascend` matches nothing on a normal host, and a blanket "
                      "ipcrm deletes live segments such as the CANN log daemon's (key "
                      "0x474f4c46).",
                   bad ? " (see the orphan/zombie finding for this device)" : "");
    }
}

static void sysv_findings(const hbm_obs *obs, hbm_findings *out)
{
    const hbm_host *h = &obs->host;
    if (!h->sees_host_pids)
        return; /* creator liveness cannot be judged from inside another PID namespace */
    for (size_t i = 0; i < h->nsysv; i++) {
        const hbm_sysv_seg *s = &h->sysv[i];
        bool creator_dead = s->cpid > 0 && !s->cpid_alive;
        bool last_dead = s->lpid <= 0 || !s->lpid_alive;
        if (s->nattch != 0 || !creator_dead || !last_dead)
            continue;
        char sz[32];
        hbm_finding *x = doc_add(out, DOC_STALE_SYSV_SHM, HBM_SEV_WARNING, HBM_UNKNOWN,
                                 "SysV segment key 0x%08llx id %d (%s): nobody attaches it "
                                 "and its creator pid %d is gone",
                                 (unsigned long long)(s->key & 0xffffffffLL), s->shmid,
                                 hbm_fmt_size(sz, sizeof sz, (int64_t)s->size), s->cpid);
        char key[16];
        snprintf(key, sizeof key, "0x%08llx", (unsigned long long)(s->key & 0xffffffffLL));
        json_t *e = x->evidence;
        json_object_set_new(e, "key", json_string(key));
        json_object_set_new(e, "shmid", json_integer(s->shmid));
        json_object_set_new(e, "size_bytes", json_integer((json_int_t)s->size));
        json_object_set_new(e, "nattch", json_integer((json_int_t)s->nattch));
        json_object_set_new(e, "cpid", json_integer(s->cpid));
        json_object_set_new(e, "lpid", json_integer(s->lpid));
        json_object_set_new(e, "uid", json_integer(s->uid));
        if (s->key == CANN_SLOGD_KEY)
            json_object_set_new(e, "known_as", json_string("CANN log daemon (slogd) segment; "
                                                           "slogd recreates it when it starts"));
        doc_remedy(x, "Remove it (clean --apply: IPC_RMID, after checking again that nattch is "
                      "0 and creator and last user are dead). It is host memory, not device "
                      "memory: removing it frees %s and no accelerator memory.", sz);
        x->action.kind = HBM_ACT_SYSV_RMID;
        x->action.shmid = s->shmid;
        x->action.key = s->key;
        snprintf(x->action.text, sizeof x->action.text, "remove SysV segment id %d (key %s)",
                 s->shmid, key);
    }
}

static void posix_findings(const hbm_obs *obs, hbm_findings *out)
{
    const hbm_host *h = &obs->host;
    if (!h->sees_host_pids)
        return; /* holders in other PID namespaces would be invisible */
    for (size_t i = 0; i < h->nposix; i++) {
        const hbm_posix_shm *s = &h->posix[i];
        if (s->nholders > 0 || s->owner[0] || !s->path)
            continue; /* in use, or a live container runtime's own object */
        char sz[32];
        hbm_finding *x = doc_add(out, DOC_STALE_POSIX_SHM, HBM_SEV_WARNING, HBM_UNKNOWN,
                                 "%s (%s): no process maps it or holds it open", s->path,
                                 hbm_fmt_size(sz, sizeof sz, (int64_t)s->size));
        json_object_set_new(x->evidence, "path", json_string(s->path));
        json_object_set_new(x->evidence, "size_bytes", json_integer((json_int_t)s->size));
        json_object_set_new(x->evidence, "uid", json_integer(s->uid));
        json_object_set_new(x->evidence, "mtime", json_integer(s->mtime));
        doc_remedy(x, "Remove it (clean --apply unlinks it after checking again that no "
                      "process maps or holds it). A semaphore left locked (sem.*) otherwise "
                      "makes the next run wait.");
        x->action.kind = HBM_ACT_SHM_UNLINK;
        snprintf(x->action.path, sizeof x->action.path, "%s", s->path);
        snprintf(x->action.text, sizeof x->action.text, "unlink %s", s->path);
    }
}

static void memory_findings(const hbm_obs *obs, const hbm_doctor_opts *o, hbm_findings *out)
{
    const hbm_host *h = &obs->host;
    for (size_t i = 0; i < h->nhuge; i++) {
        const hbm_hugepages *g = &h->huge[i];
        if (g->total <= 0 || g->free < 0)
            continue;
        int64_t avail = g->free - (g->rsvd > 0 ? g->rsvd : 0);
        if (avail > 0)
            continue;
        char where[48], psz[32];
        if (g->node < 0)
            snprintf(where, sizeof where, "system pool");
        else
            snprintf(where, sizeof where, "NUMA node %d", g->node);
        hbm_finding *x = doc_add(out, DOC_HUGEPAGES_EXHAUSTED, HBM_SEV_WARNING, HBM_UNKNOWN,
                                 "host hugepages exhausted (%s, %s pages): %lld of %lld free, "
                                 "%lld reserved", where,
                                 hbm_fmt_size(psz, sizeof psz, (int64_t)g->page_size_bytes),
                                 (long long)g->free, (long long)g->total,
                                 (long long)(g->rsvd > 0 ? g->rsvd : 0));
        json_t *e = x->evidence;
        json_object_set_new(e, "node", g->node < 0 ? json_null() : json_integer(g->node));
        json_object_set_new(e, "page_size_bytes", json_integer((json_int_t)g->page_size_bytes));
        json_object_set_new(e, "total", json_integer(g->total));
        json_object_set_new(e, "free", json_integer(g->free));
        json_object_set_new(e, "rsvd", doc_jint(g->rsvd));
        json_object_set_new(e, "surp", doc_jint(g->surp));
        doc_remedy(x, "Find the mappings (grep -l huge /proc/*/numa_maps; hugetlbfs files; "
                      "SHM_HUGETLB segments) and end their owners, or raise vm.nr_hugepages. "
                      "This is host memory: npu-smi's Hugepages-Usage column is unrelated.");
    }
    if (strcmp(h->thp, "always") == 0) {
        hbm_finding *x = doc_add(out, DOC_THP_ALWAYS, HBM_SEV_INFO, HBM_UNKNOWN,
                                 "transparent hugepages are 'always': every large anonymous or "
                                 "shared mapping is backed by 2 MiB pages");
        json_object_set_new(x->evidence, "enabled", json_string(h->thp));
        json_object_set_new(x->evidence, "defrag", json_string(h->thp_defrag));
        doc_remedy(x, "Inference hosts usually want 'madvise' (runtimes that benefit ask for "
                      "it): echo madvise > /sys/kernel/mm/transparent_hugepage/enabled. "
                      "'always' pins memory in huge pages and adds compaction stalls; it "
                      "does not touch device memory.");
    }
    double limit = o->devshm_full_ratio > 0 ? o->devshm_full_ratio : 0.90;
    if (h->devshm_total_bytes > 0 && h->devshm_used_bytes >= 0) {
        double r = (double)h->devshm_used_bytes / (double)h->devshm_total_bytes;
        if (r >= limit) {
            char a[32], b[32];
            hbm_finding *x = doc_add(out, DOC_DEVSHM_NEARLY_FULL,
                                     r >= 0.98 ? HBM_SEV_CRITICAL : HBM_SEV_WARNING, HBM_UNKNOWN,
                                     "/dev/shm is %.0f%% full (%s of %s)", r * 100,
                                     hbm_fmt_size(a, sizeof a, h->devshm_used_bytes),
                                     hbm_fmt_size(b, sizeof b, h->devshm_total_bytes));
            json_object_set_new(x->evidence, "used_bytes", json_integer(h->devshm_used_bytes));
            json_object_set_new(x->evidence, "total_bytes", json_integer(h->devshm_total_bytes));
            json_object_set_new(x->evidence, "ratio", json_real(r));
            doc_remedy(x, "Inference servers pass tensors between processes through /dev/shm "
                          "and fail when it is full: remove stale objects (see stale-posix-shm) "
                          "or give the container a larger --shm-size.");
        }
    }
}

void doc_check_holders(const doc_ctx *c, hbm_findings *out)
{
    for (size_t i = 0; i < c->obs->ndevs; i++)
        holder_findings(c->obs, &c->obs->devs[i], c->now, out);
    if (c->obs->has_host && strcmp(c->obs->backend, "none") == 0)
        file_holder_findings(c->obs, c->now, out);
}

void doc_check_devices(const doc_ctx *c, hbm_findings *out)
{
    for (size_t i = 0; i < c->obs->ndevs; i++)
        device_findings(c->obs, &c->obs->devs[i], out);
}

void doc_check_sysv(const doc_ctx *c, hbm_findings *out)
{
    if (c->obs->has_host)
        sysv_findings(c->obs, out);
}

void doc_check_posix(const doc_ctx *c, hbm_findings *out)
{
    if (c->obs->has_host)
        posix_findings(c->obs, out);
}

void doc_check_host_memory(const doc_ctx *c, hbm_findings *out)
{
    if (c->obs->has_host)
        memory_findings(c->obs, c->opts, out);
}

void hbm_findings_free(hbm_findings *f)
{
    for (size_t i = 0; i < f->n; i++)
        json_decref(f->items[i].evidence);
    free(f->items);
    memset(f, 0, sizeof *f);
}
