#!/bin/bash
# Proof before a kill, without the Slurm daemons: `hbmctl slurm epilog` for job 42, the fake
# NVML listing four real processes on the job's GPU 0, each ignoring SIGTERM:
#   - SLURM_JOB_ID=42 in its environment, in no job's cgroup: the job's, ended;
#   - in a real cgroup .../slurm/uid_0/job_42/step_0, no SLURM_JOB_ID: the job's, ended;
#   - SLURM_JOB_ID=42 in its environment but in job 99's cgroup: job 99's (the cgroup only
#     slurmstepd writes outweighs an environment any process can set), left alone;
#   - neither: of no job, left alone and named, the node not cleaned (exit 1).
# Also: with no device variable and scontrol failing, nothing is ended (exit 2); job ids
# with '/', '..' or a control byte are refused before anything is done (exit 2), and the
# control byte is not echoed. Skips (77) only when no cgroup can be created here.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_nvml
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"

cg=""
for c in /sys/fs/cgroup/freezer /sys/fs/cgroup/unified /sys/fs/cgroup; do
    d="$c/hbmctl-slurm-proof.$$"
    if mkdir -p "$d/slurm/uid_0/job_42/step_0" "$d/slurm/uid_0/job_99/step_0" 2>/dev/null &&
        [ -e "$d/slurm/uid_0/job_42/step_0/cgroup.procs" ]; then
        cg=$d
        break
    fi
    rmdir "$d/slurm/uid_0/job_42/step_0" "$d/slurm/uid_0/job_99/step_0" \
        "$d/slurm/uid_0/job_42" "$d/slurm/uid_0/job_99" "$d/slurm/uid_0" "$d/slurm" "$d" \
        2>/dev/null
done
if [ -z "$cg" ]; then
    echo "SKIP: no cgroup can be created here (a job's cgroup is what is tested)"
    exit 77
fi
remove_cgroups() {
    scratch_cleanup
    for _ in $(seq 1 50); do
        rmdir "$cg/slurm/uid_0/job_42/step_0" "$cg/slurm/uid_0/job_99/step_0" \
            "$cg/slurm/uid_0/job_42" "$cg/slurm/uid_0/job_99" "$cg/slurm/uid_0" "$cg/slurm" \
            "$cg" 2>/dev/null
        [ -d "$cg" ] || return
        sleep 0.1
    done
}
trap remove_cgroups EXIT

env_job=$(env SLURM_JOB_ID=42 "$HBM_BUILD/doc_proc" orphan ignore-term)
cg_job=$("$HBM_BUILD/doc_proc" orphan ignore-term)
other=$(env SLURM_JOB_ID=42 "$HBM_BUILD/doc_proc" orphan ignore-term)
nojob=$("$HBM_BUILD/doc_proc" orphan ignore-term)
pids+=("$env_job" "$cg_job" "$other" "$nojob")
echo "$cg_job" >"$cg/slurm/uid_0/job_42/step_0/cgroup.procs"
echo "$other" >"$cg/slurm/uid_0/job_99/step_0/cgroup.procs"
check "the cgroups took the processes" grep -q "/job_42/step_0" "/proc/$cg_job/cgroup"

procs=""
for p in "$env_job" "$cg_job" "$other" "$nojob"; do
    procs="$procs${procs:+, }{\"pid\": $p, \"used_memory\": 1073741824}"
done
cat >"$tmp/scenario.json" <<EOF
{"driver_version": "550.54.15", "release_on_exit": true, "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": 85899345920, "memory_used": $((4 * 1073741824 + 524288000)),
  "utilization_gpu": 0, "temperature": 35, "power_mw": 70000, "ecc_uncorrected": 0,
  "compute": [$procs]}]}
EOF
alive() { [ -d "/proc/$1" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
epilog() { # JOB_ID [OPTIONS]: hbmctl slurm epilog as slurmd runs it, no device variable
    local job=$1
    shift
    env -u SLURM_JOB_GPUS -u CUDA_VISIBLE_DEVICES -u ASCEND_RT_VISIBLE_DEVICES \
        SLURM_JOB_ID="$job" SLURMD_NODENAME=n1 "$HBMCTL" slurm epilog --no-drain --grace 1s \
        --settle 1s --state-dir "$tmp/state" "$@"
}

# No device variable, and Slurm cannot say: nothing is ended.
epilog 42 --scontrol /bin/false >"$tmp/nodev.out" 2>&1
check "no devices known: exit 2" test $? -eq 2
check "it says so: $(cat "$tmp/nodev.out")" \
    grep -q "job 42's devices: no device variable is set, and Slurm does not say" "$tmp/nodev.out"
check "and ended nothing" alive "$env_job"

# Job ids that are not one.
for bad in "42/../../x" ".." "42/.." $'42\e[31m' "42 43"; do
    epilog "$bad" --devices 0 >"$tmp/bad.out" 2>&1
    rc=$?
    check "job id $(printf %q "$bad") refused, exit 2" test $rc -eq 2
    check "named as not a job id" grep -q "is not a Slurm job id" "$tmp/bad.out"
    check "no control byte echoed" test -z "$(tr -d '[:print:]\n' <"$tmp/bad.out")"
done
check "nothing ended by them" alive "$env_job"

epilog 42 --devices 0 --json >"$tmp/out.json" 2>"$tmp/err"
check "the epilog exits 1: the process of no job stays on GPU 0" test $? -eq 1
check "the job's process by its environment is ended" test ! -d "/proc/$env_job" -o \
    "$(alive "$env_job" && echo y)" != y
check "the job's process by its cgroup is ended" test "$(alive "$cg_job" && echo y)" != y
check "job 99's process (SLURM_JOB_ID=42 in its environment) still runs" alive "$other"
check "the process of no job still runs" alive "$nojob"
check "exactly those two were ended: $(jq -c '[.ended[].pid]' "$tmp/out.json")" \
    test "$(jq -c '[.ended[].pid] | sort' "$tmp/out.json")" = \
    "$(printf '%s\n' "$env_job" "$cg_job" | sort -n | jq -sc .)"
check "each with its proof" jq -e --argjson e "$env_job" --argjson c "$cg_job" \
    '(.ended[] | select(.pid == $e) | .why | test("SLURM_JOB_ID")) and
     (.ended[] | select(.pid == $c) | .why | test("cgroup"))' "$tmp/out.json"
check "the problem names the process of no job: $(jq -r .problem "$tmp/out.json")" \
    jq -e --arg p "pid $nojob " '.problem | contains($p) and contains("of no job: left alone")' \
    "$tmp/out.json"
check "the audit log has no kill of the others" jq -s -e --argjson o "$other" --argjson n "$nojob" \
    'all(.[]; .action != "kill" or (.pid != $o and .pid != $n))' "$HBMCTL_AUDIT_LOG"
finish
