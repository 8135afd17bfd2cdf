/* The rule registry: every finding doctor can raise, once, with what docs/doctor.md says of
 * it (a test compares the two) and the check that raises it. `hbmctl doctor --rules` lists
 * it; hbm_doctor_findings runs its checks. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor_int.h"
#include "hbm/doctor.h"

typedef struct doc_rule_entry {
    hbm_doctor_rule pub;
    doc_check *check;
} doc_rule_entry;

static const doc_rule_entry registry[] = {
    [DOC_ORPHAN_HOLDER] = {
        .pub = {
            .id = "orphan-holder",
            .severity = "critical",
            .when = "a process the driver lists on a device has lost what started it: its "
                    "container's cgroup is gone and its parent is init (verdict state `abandoned`), "
                    "or it is by construction a server's child (vLLM `VLLM::*` title, Python "
                    "multiprocessing spawn/fork child) now parented by init; with no device source, "
                    "a process holding an accelerator device file under the same rules (`device` "
                    "null)",
            .evidence = "`process`: pid, name, memory_bytes, state, ppid, starttime, age_seconds, "
                        "container, cgroup_gone, cmdline (and `device_files` with no device source)",
            .remedy = "end it; start servers under `hbmctl run`",
            .action = HBM_ACT_KILL,
            .clean = "`kill`: SIGTERM, `--grace`, SIGKILL",
        },
        .check = doc_check_holders,
    },
    [DOC_ENGINE_ORPHAN] = {
        .pub = {
            .id = "engine-orphan",
            .severity = "critical",
            .when = "a server's worker (vLLM `VLLM::*` title, Python multiprocessing spawn/fork "
                    "child) holding a device in a running container whose parent is that "
                    "container's init, a shell or a minimal init (sh, bash, tini, dumb-init, "
                    "catatonit...): its server has exited and left it there (verdict state "
                    "`abandoned`)",
            .evidence = "`process` as for orphan-holder, with container_name and "
                        "container_image where the runtime's record names them",
            .remedy = "end it, the container runs on; or restart the container",
            .action = HBM_ACT_KILL,
            .clean = "`kill`: SIGTERM, `--grace`, SIGKILL (without `--pid`: the container's "
                     "init shows its server is gone)",
        },
        .check = doc_check_holders,
    },
    [DOC_ZOMBIE_HOLDER] = {
        .pub = {
            .id = "zombie-holder",
            .severity = "critical",
            .when = "the listed process is a zombie (Z)",
            .evidence = "`process` as above; `parent`: pid, name, proc_state, starttime, age_seconds, "
                        "cmdline of the process that must reap it (`null` when the observation does not "
                        "have it)",
            .remedy = "a signal cannot end it: \"pid P (comm, `cmdline`) has not reaped it ... End or "
                      "restart pid P; init then reaps the zombie and the driver frees the memory\"; "
                      "when P is pid 1 (a container whose first process does not reap), restart the "
                      "container and run under an init; if memory stays, the device reset command",
            .action = HBM_ACT_NONE,
            .clean = "none (hbmctl never ends the parent: it may be a service that must be restarted "
                     "cleanly)",
        },
        .check = doc_check_holders,
    },
    [DOC_STUCK_HOLDER] = {
        .pub = {
            .id = "stuck-holder",
            .severity = "critical",
            .when = "the listed process is in uninterruptible sleep (D); with no device source, a "
                    "D-state process holding an accelerator device file (`device` null, no "
                    "`parent`)",
            .evidence = "`process` with `wchan`; `parent` as for zombies",
            .remedy = "wait for the kernel call, check dmesg; else reset or reboot",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_holders,
    },
    [DOC_GONE_HOLDER] = {
        .pub = {
            .id = "gone-holder",
            .severity = "critical",
            .when = "the driver lists a pid that does not exist while hbmctl sees the host's pids",
            .evidence = "`process` (pid, memory)",
            .remedy = "release is asynchronous: look again; if it stays, the vendor reset command",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_holders,
    },
    [DOC_UNACCOUNTED_MEMORY] = {
        .pub = {
            .id = "unaccounted-memory",
            .severity = "warning",
            .when = "verdict UNACCOUNTED: memory above the chip's idle baseline that no live "
                    "process accounts for",
            .evidence = "memory_used_bytes, memory_total_bytes, baseline_bytes, unaccounted_bytes, "
                        "sees_host_pids, reason",
            .remedy = "without host pids (container): run hbmctl on the host; with them: look again, "
                      "then reset",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_devices,
    },
    [DOC_DEVICE_NEEDS_RESET] = {
        .pub = {
            .id = "device-needs-reset",
            .severity = "critical",
            .when = "the device reports bad health, or it holds unaccounted memory although hbmctl "
                    "sees every host pid and no process holds any accelerator device file",
            .evidence = "health or checks_passed, unaccounted_bytes, reset_command",
            .remedy = "the vendor command, e.g. `npu-smi set -t reset -i 6 -c 0` or `nvidia-smi "
                      "--gpu-reset -i 0`; hbmctl prints it and never runs it",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_devices,
    },
    [DOC_DEVICE_HUGEPAGES_FULL] = {
        .pub = {
            .id = "device-hugepages-full",
            .severity = "warning when a holder is orphaned/zombie/stuck/gone, else info",
            .when = "npu-smi's `Hugepages-Usage(page)` is at 100%",
            .evidence = "hugepages_used, hugepages_total (pages), memory_used_bytes, holders",
            .remedy = "this column counts the card's own memory pool (310P-class cards read 100% "
                      "whenever a process holds memory), not host hugepages: only ending the holder "
                      "lowers it; `ipcrm`, `vm.nr_hugepages` and THP cannot; `ipcs -m | grep ascend` "
                      "matches nothing on a normal host and a blanket `ipcrm` deletes live segments "
                      "such as the CANN log daemon's (key `0x474f4c46`)",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_devices,
    },
    [DOC_SERVER_STALLED] = {
        .pub = {
            .id = "server-stalled",
            .severity = "critical",
            .when = "an inference server found listening here (a vLLM, SGLang or MindIE process and "
                    "the listener of its tree on its `--port`, or vLLM's 8000 / SGLang's 30000 "
                    "without one) shows work running or waiting in its `/metrics` and no token "
                    "between two reads `--progress-interval` apart (default 5 s); a snapshot keeps the "
                    "two reads, so `doctor --snapshot` replays it",
            .evidence = "pid, url, engine_kind, model, engine, running, waiting, tokens_before, "
                        "tokens_after, seconds_without_token",
            .remedy = "the server answers but does no work: read its log (`hbmctl explain`), restart "
                      "it; `hbmctl run --stall DUR` restarts it on its own",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_progress,
    },
    [DOC_SERVER_PROGRESS_UNKNOWN] = {
        .pub = {
            .id = "server-progress-unknown",
            .severity = "info",
            .when = "such a server's `/metrics` could not be read (HTTP error, timeout, not "
                    "Prometheus text) or has no engine metric, so progress could not be told",
            .evidence = "pid, url, why",
            .remedy = "serve the engine's metrics on that port (SGLang: `--enable-metrics`)",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_progress,
    },
    [DOC_STALE_SYSV_SHM] = {
        .pub = {
            .id = "stale-sysv-shm",
            .severity = "warning",
            .when = "a SysV segment with nattch 0 whose creator (cpid > 0) is dead and whose last "
                    "user is dead or never existed; only judged when hbmctl sees the host's pids. "
                    "Never decided by owner or key",
            .evidence = "key, shmid, size_bytes, nattch, cpid, lpid, uid, known_as (for `0x474f4c46`)",
            .remedy = "remove it; host memory only, no device memory",
            .action = HBM_ACT_SYSV_RMID,
            .clean = "`sysv-rmid`",
        },
        .check = doc_check_sysv,
    },
    [DOC_STALE_POSIX_SHM] = {
        .pub = {
            .id = "stale-posix-shm",
            .severity = "warning",
            .when = "a `/dev/shm` object that no process maps or holds open (only when hbmctl sees "
                    "the host's pids)",
            .evidence = "path, size_bytes, uid, mtime",
            .remedy = "remove it (a locked `sem.*` otherwise stalls the next run)",
            .action = HBM_ACT_SHM_UNLINK,
            .clean = "`shm-unlink`",
        },
        .check = doc_check_posix,
    },
    [DOC_HUGEPAGES_EXHAUSTED] = {
        .pub = {
            .id = "hugepages-exhausted",
            .severity = "warning",
            .when = "a host hugepage pool (system or one NUMA node, any page size) has no free page "
                    "left after reservations",
            .evidence = "node (null = system pool), page_size_bytes, total, free, rsvd, surp",
            .remedy = "find the hugetlbfs / SHM_HUGETLB users or raise `vm.nr_hugepages`; unrelated "
                      "to npu-smi's column",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_host_memory,
    },
    [DOC_THP_ALWAYS] = {
        .pub = {
            .id = "thp-always",
            .severity = "info",
            .when = "transparent hugepages `enabled` is `always`",
            .evidence = "enabled, defrag",
            .remedy = "`madvise` is the usual choice on inference hosts",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_host_memory,
    },
    [DOC_DEVSHM_NEARLY_FULL] = {
        .pub = {
            .id = "devshm-nearly-full",
            .severity = "warning (critical at 98%)",
            .when = "`/dev/shm` use at or above `--shm-full` (default 90%)",
            .evidence = "used_bytes, total_bytes, ratio",
            .remedy = "remove stale objects or raise `--shm-size`",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_host_memory,
    },
    [DOC_VISIBLE_DEVICE_MISSING] = {
        .pub = {
            .id = "visible-device-missing",
            .severity = "warning",
            .when = "an inference server's `ASCEND_RT_VISIBLE_DEVICES` / `CUDA_VISIBLE_DEVICES` "
                    "names a device that does not exist",
            .evidence = "pid, visible_devices, device",
            .remedy = "use the ids `hbmctl status` shows, or `hbmctl pick`",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_servers,
    },
    [DOC_VISIBLE_DEVICE_BUSY] = {
        .pub = {
            .id = "visible-device-busy",
            .severity = "warning",
            .when = "a device it names is used by a process outside the server's own process tree",
            .evidence = "pid, visible_devices, device, other_pid, other_memory_bytes",
            .remedy = "one server per device (`pick --lease`, `run --devices`)",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_servers,
    },
    [DOC_VISIBLE_DEVICES_TP_MISMATCH] = {
        .pub = {
            .id = "visible-devices-tp-mismatch",
            .severity = "warning when fewer devices than `--tensor-parallel-size` × "
                        "`--pipeline-parallel-size`, info when more",
            .when = "the count of visible devices differs from the parallel size",
            .evidence = "pid, visible_devices, visible_count, tensor_parallel_size, "
                        "pipeline_parallel_size",
            .remedy = "list as many devices as the server needs",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_servers,
    },
    [DOC_PORT_NOT_LISTENING] = {
        .pub = {
            .id = "port-not-listening",
            .severity = "warning",
            .when = "a server was started with `--port N` and nothing listens on N; not raised for "
                    "a server's worker whose server is gone (a `VLLM::*` title or multiprocessing "
                    "child, or a holder in state `abandoned`: it inherited the `--port` argument "
                    "and `orphan-holder` covers it)",
            .evidence = "pid, port, age_seconds, cmdline",
            .remedy = "a server loading weights listens only when ready; otherwise read its log "
                      "(`hbmctl explain`)",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_servers,
    },
    [DOC_PORT_HELD_BY_OTHER] = {
        .pub = {
            .id = "port-held-by-other",
            .severity = "warning",
            .when = "`--port N` is held by a process outside the server's tree",
            .evidence = "pid, port, listener_pid",
            .remedy = "stop that process or choose another port",
            .action = HBM_ACT_NONE,
            .clean = "none",
        },
        .check = doc_check_servers,
    },
};

_Static_assert(sizeof registry / sizeof *registry == DOC_NRULES,
               "every rule of enum doc_rule has its registry entry");

size_t hbm_doctor_nrules(void)
{
    return DOC_NRULES;
}

const hbm_doctor_rule *hbm_doctor_rule_at(size_t i)
{
    return i < DOC_NRULES ? &registry[i].pub : NULL;
}

json_t *hbm_doctor_rules_json(void)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < DOC_NRULES; i++) {
        const hbm_doctor_rule *r = &registry[i].pub;
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:s}", "id", r->id, "severity",
                           r->severity, "when", r->when, "evidence", r->evidence, "remedy",
                           r->remedy, "action",
                           r->action == HBM_ACT_NONE ? json_null()
                                                     : json_string(hbm_action_kind_name(r->action)),
                           "clean", r->clean));
    }
    return json_pack("{s:o}", "rules", arr);
}

static int cmp_finding(const void *a, const void *b)
{
    const hbm_finding *x = a, *y = b;
    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    int c = strcmp(x->id, y->id);
    if (c)
        return c;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return strcmp(x->summary, y->summary);
}

void hbm_doctor_findings(const hbm_obs *obs, const hbm_doctor_opts *opts, hbm_findings *out)
{
    memset(out, 0, sizeof *out);
    hbm_doctor_opts def = {0};
    const hbm_doctor_opts *o = opts ? opts : &def;
    doc_ctx c = {.obs = obs, .opts = o, .now = o->now > 0 ? o->now : obs->captured_at};
    /* each check once, though several rules name it */
    for (size_t i = 0; i < DOC_NRULES; i++) {
        bool ran = false;
        for (size_t k = 0; k < i && !ran; k++)
            ran = registry[k].check == registry[i].check;
        if (!ran)
            registry[i].check(&c, out);
    }
    for (size_t i = 0; i < out->n; i++)
        snprintf(out->items[i].id, sizeof out->items[i].id, "%s",
                 registry[out->items[i].rule].pub.id);
    if (out->n > 1)
        qsort(out->items, out->n, sizeof *out->items, cmp_finding);
}
