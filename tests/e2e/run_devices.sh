#!/bin/bash
# `hbmctl run --devices` with the fake NVML driver: the leased devices are exported in the
# visible-device variable, held while the tree runs and free after; a child that leaves
# device memory behind is detected and reported; --restart-on-mem drains and restarts a
# child whose device memory climbs past the threshold.
. "$(dirname "$0")/common.bash"
run_scratch
: "${HBM_FAKES:?HBM_FAKES must name the fake driver directory}"

export HBMCTL_NVML_LIB=$HBM_FAKES/libnvidia-ml.so.1
export HBM_FAKE_NVML_SCENARIO=$T/scenario.json
export HBMCTL_LEASE_DIR=$T/leases
export HBMCTL_AUDIT_LOG=$T/audit.jsonl
GIB=1073741824
TOTAL=$((80 * GIB))

# scenario USED0 PROCS0 [USED1 PROCS1]: two GPUs; written whole, then renamed in place
scenario() {
    local u0=$1 p0=$2 u1=${3:-$((GIB / 2))} p1=${4:-[]}
    cat >"$T/scenario.tmp" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": $TOTAL, "memory_used": $u0, "utilization_gpu": 0, "compute": $p0},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "bus_id": "00000000:19:00.0",
  "memory_total": $TOTAL, "memory_used": $u1, "utilization_gpu": 0, "compute": $p1}]}
JSON
    mv "$T/scenario.tmp" "$T/scenario.json"
}

# how many lease files are locked right now (flock -n fails on a held one)
held_leases() {
    local f n=0
    for f in "$T"/leases/*; do
        [ -f "$f" ] || continue
        flock -n "$f" true || n=$((n + 1))
    done
    echo "$n"
}

scenario $((GIB / 2)) "[]"

# 1. leased, exported, held while running, free after; a second run gets the other
#    device, a third finds none free and fails with 125
LOG=$T/log.lease
"$HBMCTL" run --backend nvml --devices 1 --grace 2s --release-timeout 5s -- \
    sh -c 'echo "$CUDA_VISIBLE_DEVICES" >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 600' "$T/env1" 2>"$LOG" &
h1=$!
BGPIDS+=("$h1")
wait_file "$T/env1" 30 || fail "lease: the child did not start"
[ "$(cat "$T/env1")" = 0 ] || fail "lease: CUDA_VISIBLE_DEVICES='$(cat "$T/env1")', expected 0"
[ "$(held_leases)" = 1 ] || fail "lease: $(held_leases) leases held while running, expected 1"
"$HBMCTL" run --backend nvml --devices 1 -- sh -c 'echo "$CUDA_VISIBLE_DEVICES"' >"$T/env2" 2>"$T/log.second"
[ "$(cat "$T/env2")" = 1 ] || fail "lease: the second run got '$(cat "$T/env2")', expected device 1"
"$HBMCTL" run --backend nvml --devices 2 -- true 2>"$T/log.third"
rc=$?
[ "$rc" = 125 ] || fail "lease: asking for 2 with one leased: exit $rc, expected 125"
grep -q 'device 0' "$T/log.third" || fail "lease: the refusal does not say why device 0 was refused"
kill -TERM "$h1"
wait "$h1"
rc=$?
[ "$rc" = 143 ] || fail "lease: exit $rc, expected 143"
[ "$(held_leases)" = 0 ] || fail "lease: $(held_leases) leases still held after the stop"
grep -q 'leases released' "$LOG" || fail "lease: no 'leases released' line"
echo "ok: lease: exported CUDA_VISIBLE_DEVICES=0, held while running, free after; others refused"

# 2. a child that leaves device memory behind after it exits: the driver keeps charging
#    its (dead) pid; hbmctl waits --release-timeout and reports it
scenario $((GIB / 2)) "[]"
LOG=$T/log.leak
"$HBMCTL" run --backend nvml --devices 0, --release-timeout 2s -- sh -c '
    pid=$$
    sed -e "0,/\"memory_used\": [0-9]*/s//\"memory_used\": 21474836480/" \
        -e "0,/\"compute\": \[\]/s//\"compute\": [{\"pid\": $pid, \"used_memory\": 20937965568}]/" \
        "$0" >"$0.tmp" && mv "$0.tmp" "$0"' "$T/scenario.json" 2>"$LOG"
rc=$?
[ "$rc" = 0 ] || fail "leak: exit $rc, expected the child's 0"
grep -q 'device 0: still 20.00 GiB used' "$LOG" || fail "leak: the memory left on device 0 is not reported"
grep -q 'of this tree, exited' "$LOG" || fail "leak: the dead holder is not named as this tree's"
grep -q 'summary: .*device 0 NOT released' "$LOG" || fail "leak: the summary does not say NOT released"
echo "ok: leak: $(grep -o 'device 0: still.*' "$LOG" | head -n1)"

# ... and memory that does come back is reported as released
scenario $((GIB / 2)) "[]"
LOG=$T/log.release
"$HBMCTL" run --backend nvml --devices 0, --grace 2s --release-timeout 20s -- sh -c '
    sed -e "0,/\"memory_used\": [0-9]*/s//\"memory_used\": 21474836480/" "$1" >"$1.tmp" && mv "$1.tmp" "$1"
    echo up >"$0"; exec sleep 600' "$T/up" "$T/scenario.json" 2>"$LOG" &
h=$!
BGPIDS+=("$h")
wait_file "$T/up" 30 || fail "release: child did not start"
sleep 1
kill -TERM "$h"
# the driver frees the memory a moment after the process is gone, as a real one does
sleep 1
scenario $((GIB / 2)) "[]"
wait "$h"
grep -q 'device 0: 19.50 GiB released' "$LOG" || fail "release: 19.50 GiB released not reported"
echo "ok: release: $(grep -o 'device 0: 19.50 GiB released.*' "$LOG")"

# 3. --restart-on-mem: memory climbs past 50% and stays: drain (SIGTERM) and restart
scenario $((GIB / 2)) "[]"
LOG=$T/log.mem
rm -f "$T/starts"
"$HBMCTL" run --backend nvml --devices 0, --restart-on-mem 50% --mem-window 1s \
    --mem-interval 200ms --grace 3s --release-timeout 20s --backoff 100ms -- \
    sh -c 'echo $$ >>"$0"; exec sleep 600' "$T/starts" 2>"$LOG" &
h=$!
BGPIDS+=("$h")
wait_file "$T/starts" 30 || fail "mem: the child did not start"
first=$(head -n1 "$T/starts")
sleep 1
[ "$(wc -l <"$T/starts")" = 1 ] || fail "mem: restarted while memory was low"
scenario $((48 * GIB)) "[{\"pid\": $first, \"used_memory\": $((47 * GIB))}]"
for ((i = 0; i < 300; i++)); do
    [ -d "/proc/$first" ] || break
    sleep 0.1
done
[ -d "/proc/$first" ] && fail "mem: the child was not drained at 60% for over the window"
scenario $((GIB / 2)) "[]"
for ((i = 0; i < 300; i++)); do
    [ "$(wc -l <"$T/starts")" -ge 2 ] && break
    sleep 0.1
done
[ "$(wc -l <"$T/starts")" = 2 ] || fail "mem: not restarted after the drain"
grep -q 'draining and restarting' "$LOG" || fail "mem: no drain line"
kill -TERM "$h"
wait "$h"
rc=$?
[ "$rc" = 143 ] || fail "mem: exit $rc, expected 143"
grep -q 'summary: .*restarts: 1' "$LOG" || fail "mem: the summary does not count 1 restart"
echo "ok: restart-on-mem: drained at 60% > 50% and restarted once"

# 3b. without --devices (devices assigned by an orchestrator): the guard watches the
#     devices the visible-device variable names, and only those
scenario $((GIB / 2)) "[]"
LOG=$T/log.memvis
rm -f "$T/starts"
CUDA_VISIBLE_DEVICES=1 "$HBMCTL" run --backend nvml --restart-on-mem 50% --mem-window 1s \
    --mem-interval 200ms --grace 3s --release-timeout 20s --backoff 100ms --max-restarts 1 -- \
    sh -c 'echo $$ >>"$0"; exec sleep 600' "$T/starts" 2>"$LOG" &
h=$!
BGPIDS+=("$h")
wait_file "$T/starts" 30 || fail "memvis: the child did not start"
scenario $((70 * GIB)) "[]"   # device 0 is not watched: no drain
sleep 2.5
[ "$(wc -l <"$T/starts")" = 1 ] || fail "memvis: drained for a device outside CUDA_VISIBLE_DEVICES"
scenario $((GIB / 2)) "[]" $((70 * GIB)) "[]"
for ((i = 0; i < 100; i++)); do grep -q 'draining and restarting' "$LOG" && break; sleep 0.1; done
grep -q 'device 1: memory 87.5% above 50%' "$LOG" || fail "memvis: device 1 over the threshold not seen"
scenario $((GIB / 2)) "[]"
for ((i = 0; i < 300; i++)); do [ "$(wc -l <"$T/starts")" -ge 2 ] && break; sleep 0.1; done
[ "$(wc -l <"$T/starts")" = 2 ] || fail "memvis: not restarted"
kill -TERM "$h"
wait "$h"
echo "ok: restart-on-mem without --devices watches CUDA_VISIBLE_DEVICES=1 only"

# 4. Ascend (fake DCMI): the variable is ASCEND_RT_VISIBLE_DEVICES and takes logic ids,
#    which differ from the NPU (card) ids npu-smi prints
cat >"$T/dcmi.json" <<JSON
{"driver_version": "24.1.rc2", "cards": [
 {"card_id": 32768, "chips": [{"logic_id": 5, "phy_id": 0, "name": "910B4", "health": 0,
   "temperature": 40, "power_dw": 900, "aicore_util": 0, "bus_id": "0000:C1:00.0",
   "hbm": {"total_mb": 32768, "used_mb": 3400}, "processes": []}]},
 {"card_id": 32769, "chips": [{"logic_id": 6, "phy_id": 1, "name": "910B4", "health": 0,
   "temperature": 40, "power_dw": 900, "aicore_util": 0, "bus_id": "0000:C2:00.0",
   "hbm": {"total_mb": 32768, "used_mb": 3400}, "processes": []}]}]}
JSON
LOG=$T/log.ascend
HBMCTL_DCMI_LIB=$HBM_FAKES/libdcmi.so HBM_FAKE_DCMI_SCENARIO=$T/dcmi.json \
    "$HBMCTL" run --backend dcmi --devices 6, --release-timeout 5s -- \
    sh -c 'echo "${ASCEND_RT_VISIBLE_DEVICES:-unset} ${CUDA_VISIBLE_DEVICES:-unset}"' >"$T/env.ascend" 2>"$LOG"
rc=$?
[ "$rc" = 0 ] || fail "ascend: exit $rc"
[ "$(cat "$T/env.ascend")" = "6 unset" ] ||
    fail "ascend: got '$(cat "$T/env.ascend")', expected ASCEND_RT_VISIBLE_DEVICES=6 (the logic id)"
echo "ok: ascend: ASCEND_RT_VISIBLE_DEVICES=6 (logic id of NPU 32769)"

# every kill hbmctl did is in the audit log
[ -s "$T/audit.jsonl" ] || fail "audit: nothing recorded in $T/audit.jsonl"
grep -q '"command": *"run"' "$T/audit.jsonl" || fail "audit: no run record"
echo "ok: audit: $(wc -l <"$T/audit.jsonl") records"
