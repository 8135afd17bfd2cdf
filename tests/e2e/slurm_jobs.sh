#!/bin/bash
# A real Slurm on localhost (munged, slurmctld, slurmd started here with their own config,
# ports and state) whose gres/gpu device files are served by the fake NVML, with hbmctl as
# Prolog and Epilog through deploy/slurm/ and run as the health check:
#   - a job leaves a worker that escaped it (double fork + setsid, ignores SIGTERM) holding
#     GPU 0: the epilog ends it, the memory returns, the node is idle, the audit log has it;
#   - a process outside any job holds GPU 0: the next job does not run there, the node is
#     drained with a reason naming the device and the holder (sinfo -R); after
#     `hbmctl clean --apply` the health check resumes the node and the job runs;
#   - a node an administrator drained for another reason is never resumed by hbmctl;
#   - proof before a kill: two jobs on two devices, the driver listing both jobs' workers and
#     a process of no job on the first job's device: that job's epilog (given no device
#     variable: its devices come from `scontrol show job -d`) ends its own worker only;
#   - a prolog that cannot note its refusal (state dir not writable) fails closed (exit 2)
#     and the epilog that follows ends no outsider; a job id with "/.." is refused;
#   - an administrator's DOWN ("bad PSU") and a MAINT reservation are never changed.
# Skips (77) only when the daemons cannot start here, saying why.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_nvml
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
MIB=1048576
NODE=hbmnode

skip() {
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "Slurm's daemons need root here (slurmd runs the prolog as root)"
for t in munged slurmctld slurmd scontrol sbatch sinfo squeue; do
    command -v "$t" >/dev/null || skip "$t is not installed (scripts/install-deps)"
done
mkdir -p "$tmp/accel" "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log"
chmod 700 "$tmp/munge"
# gres/gpu wants character devices: /dev/null's numbers, so nothing real is reachable.
for i in 0 1; do
    mknod "$tmp/accel/nvidia$i" c 1 3 2>/dev/null || skip "mknod is not permitted here"
done
export HBMCTL_DEVICE_PATTERNS="$tmp/accel/nvidia*"

ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
read -r ctld_port slurmd_port <<<"$ports"

# hbmctl as Slurm runs it: the deploy wrappers, with the fake driver's environment added
# (slurmd gives a prolog almost none of its own).
for m in prolog epilog healthcheck; do
    cat >"$tmp/$m" <<EOF
#!/bin/sh
export HBMCTL="$HBMCTL" HBMCTL_NVML_LIB="$HBMCTL_NVML_LIB" HBMCTL_DCMI_LIB="$HBMCTL_DCMI_LIB"
export HBM_FAKE_NVML_SCENARIO="$HBM_FAKE_NVML_SCENARIO" HBMCTL_AUDIT_LOG="$HBMCTL_AUDIT_LOG"
export HBMCTL_DEVICE_PATTERNS="$HBMCTL_DEVICE_PATTERNS" SLURM_CONF="$tmp/slurm.conf"
[ -e "$tmp/no-device-variables" ] &&
    unset SLURM_JOB_GPUS CUDA_VISIBLE_DEVICES ASCEND_RT_VISIBLE_DEVICES GPU_DEVICE_ORDINAL
exec "$HBM_SRC/deploy/slurm/hbmctl-$m" --grace 1s --settle 10s --state-dir "$tmp/hbmstate" \\
    "\$@" >>"$tmp/log/$m.out" 2>&1
EOF
    chmod +x "$tmp/$m"
done

cat >"$tmp/slurm.conf" <<EOF
ClusterName=hbmtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
GresTypes=gpu
Prolog=$tmp/prolog
Epilog=$tmp/epilog
NodeName=$NODE NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=2 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
echo "NodeName=$NODE Name=gpu File=$tmp/accel/nvidia[0-1]" >"$tmp/gres.conf"
export SLURM_CONF="$tmp/slurm.conf"

# The devices: GPU N lists the pids of the Nth argument (a space-separated list; none, or
# 0: no process), 20 GiB each; an exited process's memory returns, as a driver frees a
# context at exit. A script, so a job can call it too.
cat >"$tmp/scenario" <<'SH'
#!/bin/sh
dev() { # INDEX PIDS
    procs="" used=$((500 * 1048576))
    for p in $2; do
        [ "$p" = 0 ] && continue
        procs="$procs${procs:+, }{\"pid\": $p, \"used_memory\": $((20 * 1073741824))}"
        used=$((used + 20 * 1073741824))
    done
    echo "{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-$1\","
    echo " \"bus_id\": \"00000000:1$1:00.0\", \"memory_total\": $((80 * 1073741824)),"
    echo " \"memory_used\": $used, \"utilization_gpu\": 0, \"temperature\": 35,"
    echo " \"power_mw\": 70000, \"ecc_uncorrected\": 0, \"compute\": [$procs]}"
}
{
    echo '{"driver_version": "550.54.15", "release_on_exit": true, "devices": ['
    dev 0 "${1:-}"
    echo ","
    dev 1 "${2:-}"
    echo "]}"
} >"$HBM_FAKE_NVML_SCENARIO.new"
mv "$HBM_FAKE_NVML_SCENARIO.new" "$HBM_FAKE_NVML_SCENARIO"
SH
chmod +x "$tmp/scenario"
scenario() { "$tmp/scenario" "$@"; }
scenario 0

daemon_fail() {
    tail -n 5 "$tmp"/log/*.log "$tmp/munge/log" 2>/dev/null
    skip "$1"
}
dd if=/dev/urandom of="$tmp/munge/key" bs=1024 count=1 2>/dev/null
chmod 600 "$tmp/munge/key"
munged -F --force --key-file="$tmp/munge/key" --socket="$tmp/munge/sock" \
    --pid-file="$tmp/munge/pid" --log-file="$tmp/munge/log" --seed-file="$tmp/munge/seed" &
pids+=($!)
for _ in $(seq 1 50); do [ -S "$tmp/munge/sock" ] && break; sleep 0.1; done
[ -S "$tmp/munge/sock" ] || daemon_fail "munged did not start"
slurmctld -D -i -f "$SLURM_CONF" >/dev/null 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$NODE" >/dev/null 2>&1 &
pids+=($!)
node_state() { sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null; }
node_reason() { sinfo -R -h -N -n "$NODE" -o '%E' 2>/dev/null; }
wait_for() { # SECONDS CMD...: polls CMD until it succeeds
    local n=$(($1 * 10))
    shift
    for _ in $(seq 1 "$n"); do "$@" && return 0; sleep 0.1; done
    return 1
}
is_idle() { [ "$(node_state)" = idle ]; }
wait_for 30 is_idle ||
    daemon_fail "slurmctld and slurmd did not bring $NODE up (state: '$(node_state)')"

# 1. The job's worker escapes (double fork + setsid), ignores SIGTERM and keeps GPU 0.
cat >"$tmp/job1.sh" <<EOF
#!/bin/sh
( setsid "$HBM_BUILD/doc_shm" sysv-detached 65536 >"$tmp/shm.out.new" & )
( trap '' TERM; setsid sleep 300 3<"$tmp/accel/nvidia0" & echo \$! >"$tmp/escaped.pid.new" )
while [ ! -s "$tmp/shm.out.new" ]; do sleep 0.05; done
mv "$tmp/shm.out.new" "$tmp/shm.out"
mv "$tmp/escaped.pid.new" "$tmp/escaped.pid"
# The worker holds 20 GiB on GPU 0 until it exits (the driver lists it).
HBM_FAKE_NVML_SCENARIO="$HBM_FAKE_NVML_SCENARIO" "$tmp/scenario" "\$(cat "$tmp/escaped.pid")"
EOF
job1=$(sbatch --parsable --gres=gpu:1 -o "$tmp/job1.out" "$tmp/job1.sh")
check "job 1 submitted" test -n "$job1"
wait_for 10 test -s "$tmp/escaped.pid"
escaped=$(cat "$tmp/escaped.pid" 2>/dev/null)
read -r shmid shmpid <"$tmp/shm.out"
pids+=("${escaped:-0}" "${shmpid:-0}")
check "the worker escaped its job's session and process group: pid $escaped" \
    test "$(ps -o sid= -p "${escaped:-0}" | tr -d ' ')" = "${escaped:-x}"
job_done() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }
wait_for 30 job_done "$job1"
wait_for 30 grep -q "devices clean\|drained" "$tmp/log/epilog.out"
wait_for 10 is_idle
check "after job 1 the node is idle again: $(node_state) $(node_reason)" is_idle
gone() { [ ! -d "/proc/$1" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" = Z ]; }
check "the escaped worker is gone" gone "${escaped:-0}"
gpu0=$("$HBMCTL" status --json | jq -c '[.devices[0].verdict, .devices[0].memory_used_bytes]')
check "GPU 0's memory returned: $gpu0" test "$gpu0" = "[\"FREE\",$((500 * MIB))]"
audited() { jq -s -e --arg p "$1" --arg j "$2" 'any(.[]; .event == "slurm-epilog" and
    .action == "kill" and .pid == ($p|tonumber) and .job == $j and .outcome == "done")' \
    "$HBMCTL_AUDIT_LOG" >/dev/null; }
check "the audit log has the kill of pid $escaped in job $job1" audited "${escaped:-0}" "$job1"
check "the epilog needed SIGKILL after the grace period" \
    grep -q "SIGKILL sent" "$tmp/log/epilog.out"
check "the job's other escapee (no device; SLURM_JOB_ID in its environment) is gone" \
    gone "${shmpid:-0}"
check "it was ended as a member of job $job1" \
    grep -q "ended pid $shmpid (doc_shm, belongs to job $job1: SLURM_JOB_ID in its" \
    "$tmp/log/epilog.out"
check "the SysV segment it created and left detached is removed" \
    test -z "$(ipcs -m | awk -v id="$shmid" '$2 == id')"
check "the audit log has the removal" jq -s -e --argjson id "${shmid:-0}" \
    'any(.[]; .event == "slurm-epilog" and .action == "sysv-rmid" and .shmid == $id and
    .outcome == "done")' "$HBMCTL_AUDIT_LOG"

# 2. A process outside any job holds GPU 0: the next job asking for it must not run there.
outsider=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$outsider")
scenario "$outsider"
job2=$(sbatch --parsable --gres=gpu:2 -o "$tmp/job2.out" --wrap="touch $tmp/job2.ran")
is_drained() { case "$(node_state)" in drain*) return 0 ;; esac; return 1; }
wait_for 20 is_drained
check "the prolog drained the node: $(node_state)" is_drained
reason=$(node_reason)
check "sinfo -R names the device and the holder: $reason" \
    grep -q "^hbmctl: GPU 0 holds 20.00 GiB of pid $outsider (VLLM::EngineCor" <<<"$reason"
check "job 2 did not run" test ! -e "$tmp/job2.ran"
check "job 2 waits, requeued: $(squeue -h -j "$job2" -o '%T %r')" test -n "$(squeue -h -j "$job2")"
# Slurm runs the epilog after a failed prolog too: the holder is not that job's.
wait_for 20 grep -q "the prolog refused job $job2" "$tmp/log/epilog.out"
check "the epilog of the refused job left the outsider alone" \
    grep -q "the prolog refused job $job2" "$tmp/log/epilog.out"
check "the outsider still runs" test -d "/proc/$outsider"
"$tmp/healthcheck" --node "$NODE"
check "the health check still finds GPU 0 dirty (exit 1)" test $? -eq 1
check "and keeps the node drained" is_drained
"$HBMCTL" clean --apply --yes --grace 1s >"$tmp/clean.out" 2>&1
check "hbmctl clean --apply ended the outsider" gone "$outsider"
"$tmp/healthcheck" --node "$NODE"
check "the health check passes once GPU 0 is clean (exit 0)" test $? -eq 0
wait_for 10 is_idle
check "the health check resumed the node hbmctl drained: $(node_state)" is_idle
grep -q "node $NODE resumed" "$tmp/log/healthcheck.out"
check "it says so" test $? -eq 0
# Slurm holds a job whose prolog failed and delays its next start by two minutes.
scontrol release "$job2"
scontrol update jobid="$job2" StartTime=now
wait_for 30 test -e "$tmp/job2.ran"
check "job 2 runs once released" test -e "$tmp/job2.ran"
wait_for 30 job_done "$job2"

# 3. An administrator's drain is never lifted by hbmctl, clean devices or not.
scontrol update nodename="$NODE" state=drain reason="disk replacement"
"$tmp/healthcheck" --node "$NODE"
check "the health check on clean devices exits 0" test $? -eq 0
check "the administrator's drain stays: $(node_reason)" test "$(node_reason)" = "disk replacement"
check "and the node stays drained" is_drained
outsider2=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$outsider2")
scenario "$outsider2"
"$tmp/healthcheck" --node "$NODE"
check "the health check on a dirty device exits 1" test $? -eq 1
check "but does not overwrite the administrator's reason: $(node_reason)" \
    test "$(node_reason)" = "disk replacement"
tail -n 1 "$tmp/log/healthcheck.out" | grep -q "drained for another reason (disk replacement)"
check "and says it left the node alone" test $? -eq 0
kill -9 "$outsider2"
scenario 0
scontrol update nodename="$NODE" state=resume
wait_for 10 is_idle

# 4. Proof before a kill. Jobs A and B, one GPU each, leave a worker that escaped the job
# (setsid, ignores SIGTERM) on their GPU and keep running; the driver then lists B's worker
# on both GPUs, and a process of no job on A's GPU. A's epilog runs with no device variable.
cat >"$tmp/jobab.sh" <<EOF
#!/bin/sh
( trap '' TERM; setsid sleep 300 3<"$tmp/accel/nvidia\$SLURM_JOB_GPUS" &
  echo \$! >"$tmp/worker.\$SLURM_JOB_ID.new" )
mv "$tmp/worker.\$SLURM_JOB_ID.new" "$tmp/worker.\$SLURM_JOB_ID"
echo "\$SLURM_JOB_GPUS" >"$tmp/gpu.\$SLURM_JOB_ID"
exec sleep 300
EOF
touch "$tmp/no-device-variables"
jobA=$(sbatch --parsable --gres=gpu:1 -o /dev/null "$tmp/jobab.sh")
jobB=$(sbatch --parsable --gres=gpu:1 -o /dev/null "$tmp/jobab.sh")
wait_for 20 test -s "$tmp/gpu.$jobA" -a -s "$tmp/gpu.$jobB"
wA=$(cat "$tmp/worker.$jobA" 2>/dev/null) wB=$(cat "$tmp/worker.$jobB" 2>/dev/null)
gA=$(cat "$tmp/gpu.$jobA" 2>/dev/null) gB=$(cat "$tmp/gpu.$jobB" 2>/dev/null)
pids+=("${wA:-0}" "${wB:-0}")
check "jobs $jobA and $jobB run side by side on GPUs $gA and $gB" \
    test -n "$wA" -a -n "$wB" -a "$gA" != "$gB"
nojob=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$nojob")
if [ "$gA" = 0 ]; then scenario "$wA $nojob $wB" "$wB"; else scenario "$wB" "$wA $nojob $wB"; fi
: >"$tmp/log/epilog.out"
scancel "$jobA"
wait_for 30 grep -q "drained\|devices clean\|stays as it is" "$tmp/log/epilog.out"
rm -f "$tmp/no-device-variables"
check "A's prolog took its devices from Slurm: $(grep "^job $jobA" "$tmp/log/prolog.out")" \
    grep -q "^job $jobA: devices $gA (from scontrol show job)" "$tmp/log/prolog.out"
check "A's epilog from what the prolog learned: $(head -n 1 "$tmp/log/epilog.out")" \
    grep -q "^job $jobA: devices $gA (from scontrol show job, in the prolog)" \
    "$tmp/log/epilog.out"
check "A's escaped worker is gone" gone "${wA:-0}"
check "B's worker, listed on A's GPU too, still runs" test -d "/proc/${wB:-0}"
check "the process of no job on A's GPU still runs" test -d "/proc/$nojob"
check "the audit log names no kill but A's worker" jq -s -e --arg j "$jobA" \
    --argjson p "${wA:-0}" '[.[] | select(.event == "slurm-epilog" and .action == "kill" and
    .job == $j) | .pid] == [$p]' "$HBMCTL_AUDIT_LOG"
reason=$(node_reason)
check "the node is drained naming the process of no job: $reason" \
    grep -q "^hbmctl: GPU $gA holds 20.00 GiB of pid $nojob (.*of no job: left alone" <<<"$reason"
kill -9 "$nojob"
scenario "$wB" "$wB"
"$tmp/healthcheck" --node "$NODE"
check "the health check takes B's worker for a job's and resumes the node" test $? -eq 0
check "it says so" grep -q "node $NODE resumed" "$tmp/log/healthcheck.out"
scancel "$jobB"
wait_for 30 gone "${wB:-0}"
check "B's own epilog ended B's worker" gone "${wB:-0}"
wait_for 30 job_done "$jobB"
scenario 0
wait_for 10 is_idle

# 5. The prolog cannot note its refusal (the state dir is a file): it fails closed, exit 2,
# and says why; the epilog Slurm runs next ends no outsider (the driver's listing is no proof).
rm -rf "$tmp/hbmstate"
: >"$tmp/hbmstate"
outsider3=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$outsider3")
scenario "$outsider3"
: >"$tmp/log/epilog.out"
job5=$(sbatch --parsable --gres=gpu:2 -o /dev/null --wrap="touch $tmp/job5.ran")
wait_for 20 grep -q "cannot be noted" "$tmp/log/prolog.out"
check "the prolog says it cannot note the refusal: $(tail -n 1 "$tmp/log/prolog.out")" \
    grep -q "the refusal of job $job5 cannot be noted.*fails closed.*hbmstate" \
    "$tmp/log/prolog.out"
check "job 5 did not run" test ! -e "$tmp/job5.ran"
wait_for 20 grep -q "^job $job5" "$tmp/log/epilog.out"
sleep 1
check "the epilog of job 5 ended no outsider" test -d "/proc/$outsider3"
check "and says it left it alone: $(grep holds "$tmp/log/epilog.out")" \
    grep -q "pid $outsider3 .*of no job: left alone" "$tmp/log/epilog.out"
scancel "$job5"
kill -9 "$outsider3"
scenario 0
rm -f "$tmp/hbmstate"
scontrol update nodename="$NODE" state=resume
wait_for 10 is_idle

# 6. A job id that is not one never becomes a path or an argument.
for bad in "1/../../escape" ".." "42/.." "7;id"; do
    SLURM_JOB_ID=$bad SLURMD_NODENAME=$NODE "$HBMCTL" slurm prolog --devices 0 \
        --state-dir "$tmp/hbmstate" >"$tmp/badid.out" 2>&1
    rc=$?
    check "job id '$bad' refused, exit 2: $(head -n 1 "$tmp/badid.out")" \
        test $rc -eq 2 -a ! -e "$tmp/escape"
    check "and named as not a job id" grep -q "is not a Slurm job id" "$tmp/badid.out"
done

# 7. An administrator's DOWN, and a maintenance reservation, stay as they are.
scontrol update nodename="$NODE" state=down reason="bad PSU"
wait_for 10 test "$(node_state)" = down
outsider4=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$outsider4")
scenario "$outsider4"
"$tmp/healthcheck" --node "$NODE"
check "the health check on a dirty device of a DOWN node exits 1" test $? -eq 1
check "the administrator's reason stays: $(node_reason)" test "$(node_reason)" = "bad PSU"
check "and the node stays down: $(node_state)" test "$(node_state)" = down
check "it says why" grep -q "stays as it is: state DOWN" "$tmp/log/healthcheck.out"
kill -9 "$outsider4"
scenario 0
"$tmp/healthcheck" --node "$NODE"
check "clean again, the health check still leaves the DOWN node: $(node_state)" \
    test "$(node_state)" = down -a "$(node_reason)" = "bad PSU"
scontrol update nodename="$NODE" state=resume
wait_for 10 is_idle
scontrol create reservation reservationname=hbmmaint starttime=now duration=10 \
    nodes="$NODE" users=root flags=maint >/dev/null
in_maint() { case "$(scontrol show node -o "$NODE")" in *State=*MAINT*) return 0 ;; esac; return 1; }
wait_for 20 in_maint
outsider5=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$outsider5")
scenario "$outsider5"
"$tmp/healthcheck" --node "$NODE"
check "under a MAINT reservation a dirty device exits 1" test $? -eq 1
check "but the node is not drained: $(node_state) $(node_reason)" test -z "$(node_reason)"
check "it says why: $(tail -n 1 "$tmp/log/healthcheck.out")" \
    grep -q "stays as it is: state .*MAINT" "$tmp/log/healthcheck.out"
# FAIL, set by an administrator on top: kept too, reason and all.
scontrol update nodename="$NODE" state=fail reason="fan"
"$tmp/healthcheck" --node "$NODE"
check "with FAIL set as well the reason stays: $(node_reason)" test "$(node_reason)" = fan
check "it says why: $(tail -n 1 "$tmp/log/healthcheck.out")" \
    grep -q "stays as it is: state .*FAIL" "$tmp/log/healthcheck.out"
kill -9 "$outsider5"
scontrol delete reservationname=hbmmaint

scontrol shutdown >/dev/null 2>&1
finish
