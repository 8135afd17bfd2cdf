#!/bin/bash
# hbmctl watch in line mode, against a fake driver whose memory this test changes between
# samples: a device whose memory climbs in 1 GiB steps (each held for 8 samples) is reported
# as leaking within 3 steps, and so is the process that holds it; a device with noise of
# +-2% and one with a sawtooth that returns to its baseline never are; a threshold crossing
# is reported; the exit code says a leak was seen. The test reads watch's output as it comes,
# stops watch after each sample while it rewrites the scenario, and names the scenario's
# sample in device 2's name, so the checks count the samples watch was shown, whatever the
# timing of the machine.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch

fake_nvml
GIB=1073741824
MIB=1048576
sleep 600 &
pids+=($!)
leaker=$!

LEAD=45  # flat samples before the staircase (the detector needs ~35 to know the noise)
HOLD=8   # samples each step is held
STEPS=5

scenario() { # sample-number
    local k=$1 step=0
    [ "$k" -ge "$LEAD" ] && step=$(((k - LEAD) / HOLD + 1))
    [ "$step" -gt "$STEPS" ] && step=$STEPS
    local used0=$(((20 + step) * GIB))
    # +-2% noise around 30 GiB, from a fixed sequence
    local noise=$(((k * 7919 % 41) - 20))
    local used1=$((30 * GIB + noise * 30 * GIB / 1000))
    # sawtooth: ramps 0..4 GiB over 4 samples, back to 10 GiB on the 5th
    local used2=$((10 * GIB + (k % 5) * GIB))
    cat >"$tmp/scenario.tmp" <<EOF
{"driver_version": "550.54.15", "devices": [
 {"name": "leaky", "uuid": "GPU-0", "bus_id": "00000000:18:00.0", "memory_total": $((80 * GIB)),
  "memory_used": $used0, "compute": [{"pid": $leaker, "used_memory": $((used0 - 512 * MIB))}]},
 {"name": "noisy", "uuid": "GPU-1", "bus_id": "00000000:19:00.0", "memory_total": $((80 * GIB)),
  "memory_used": $used1, "compute": []},
 {"name": "sawtooth-$k", "uuid": "GPU-2", "bus_id": "00000000:1A:00.0", "memory_total": $((16 * GIB)),
  "memory_used": $used2, "compute": []}]}
EOF
    mv "$tmp/scenario.tmp" "$tmp/scenario.json"
}

total=$((LEAD + HOLD * STEPS + 5))
scenario 0
coproc WATCH { exec "$HBMCTL" watch --plain --interval 250ms --count "$total" --threshold 24GiB 2>&1; }
watch_pid=$WATCH_PID
exec {wfd}<&"${WATCH[0]}" # bash drops WATCH when the coprocess ends
pids+=("$watch_pid")
samples=0
: >"$tmp/out"
while IFS= read -r -t 60 line <&"$wfd"; do
    echo "$line" >>"$tmp/out"
    # A sample ends with the line of its last device: change the memory for the next one.
    if [[ "$line" == *"dev 2 "* ]]; then
        samples=$((samples + 1))
        kill -STOP "$watch_pid" 2>/dev/null
        scenario "$samples"
        kill -CONT "$watch_pid" 2>/dev/null
    fi
done
wait "$watch_pid"
rc=$?
check "watch ran all $total samples ($samples)" test "$samples" -eq "$total"
check "exit 1: a leak was reported" test "$rc" -eq 1
check "one line per device and sample" test "$(grep -c '  dev [0-9]' "$tmp/out")" -eq $((3 * total))
leak_line=$(grep -n "LEAK device 0:" "$tmp/out" | head -1)
check "leak reported for device 0" test -n "$leak_line"
check "leak line says 3 steps" grep -q "LEAK device 0: memory grew 3.00 GiB in 3 steps" <<<"$leak_line"
# The scenario sample watch was shown when it reported: device 2's name in the line before.
at=$(head -n "${leak_line%%:*}" "$tmp/out" | grep '  dev 2 ' | tail -1 | grep -o 'sawtooth-[0-9]*')
at=${at#sawtooth-}
at=$((at + 1)) # the sample after it, as counted from 1
first_step=$((LEAD + 1))
within=$((first_step + 3 * HOLD))
check "reported within 3 steps (sample $at, steps start at $first_step, 3 steps end at $within)" \
    test "$at" -ge $((first_step + 2 * HOLD)) -a "$at" -le "$within"
check "the leaking process is reported too" grep -q "LEAK device 0 pid $leaker (sleep)" "$tmp/out"
check "the noisy device is never reported" test "$(grep -c 'LEAK device 1' "$tmp/out")" -eq 0
check "the sawtooth device is never reported" test "$(grep -c 'LEAK device 2' "$tmp/out")" -eq 0
check "threshold crossing reported once" test "$(grep -c 'device 0: memory .* crossed the threshold' "$tmp/out")" -eq 1
check "the device line says LEAK after it" grep -q "dev 0 .*LEAK: grew" "$tmp/out"

# JSON lines: one object per sample with the detector's state.
scenario 0
"$HBMCTL" watch --json --interval 50ms --count 3 --device 1 >"$tmp/json"
check "--json exits 0" test $? -eq 0
check "--json: 3 lines" test "$(wc -l <"$tmp/json")" -eq 3
check "--json: only device 1" test "$(jq -c '[.devices[].device]' <"$tmp/json" | sort -u)" = "[1]"
check "--json: leak state present" test "$(jq -r '.devices[0].leak.leak' <"$tmp/json" | sort -u)" = false

# Bad input and no backend: exit 2 with a message.
"$HBMCTL" watch --interval 0 --count 1 2>/dev/null
check "--interval 0 refused" test $? -eq 2
HBMCTL_NVML_LIB="$tmp/none.so" "$HBMCTL" watch --plain --count 1 >/dev/null 2>"$tmp/err"
check "no backend: exit 2" test $? -eq 2
check "no backend: says why" grep -q "hbmctl:" "$tmp/err"
finish
