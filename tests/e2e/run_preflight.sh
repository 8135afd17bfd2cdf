#!/bin/bash
# --preflight refuses a launch that vLLM's start-up check would refuse, with the planner's
# message, before anything starts (exit 125): the reported `docker rm -f` case, a 14B bf16 model on a
# 43.24 GiB device of which another process holds 26.66 GiB, --gpu-memory-utilization 0.85.
# Then the same launch on the freed device starts.
. "$(dirname "$0")/common.bash"
run_scratch
: "${HBM_FAKES:?HBM_FAKES must name the fake driver directory}"
: "${HBM_SRC:?}"

model=$T/model
mkdir -p "$model"
# Qwen2.5-14B's architecture (XiYanSQL-QwenCoder-14B, the reported model, is a fine-tune).
cp "$HBM_SRC/tests/fixtures/models/qwen2.5-14b/config.json" "$model/config.json"

sleep 600 &
holder=$!
BGPIDS+=("$holder")

# 43.24 GiB total, 16.58 GiB free, the rest held by $holder
dcmi_scenario() { # USED_MB PROCESSES_JSON
    cat >"$T/dcmi.json" <<JSON
{"driver_version": "24.1.rc2", "cards": [{"card_id": 0, "chips": [
 {"logic_id": 0, "phy_id": 0, "name": "310P3", "health": 0, "temperature": 40,
  "power_dw": 300, "aicore_util": 0, "bus_id": "0000:01:00.0",
  "memory": {"total_mb": 44278, "available_mb": $((44278 - $1)), "hugepagesize_kb": 2048,
             "hugepages_total": 0, "hugepages_free": 0},
  "processes": $2}]}]}
JSON
}
nvml_scenario() { # USED_BYTES PROCESSES_JSON
    cat >"$T/nvml.json" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA A40", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": 46428596470, "memory_used": $1, "utilization_gpu": 0, "compute": $2}]}
JSON
}

check_backend() { # BACKEND
    local be=$1
    LOG=$T/log.$be
    "$HBMCTL" run --backend "$be" --preflight "$model" -- \
        vllm serve "$model" --gpu-memory-utilization 0.85 --max-model-len 8192 \
        >"$T/out" 2>"$LOG"
    local rc=$?
    [ "$rc" = 125 ] || fail "$be: exit $rc, expected 125 (preflight refusal)"
    grep -q '16\.58/43\.24 GiB' "$LOG" || fail "$be: the refusal does not show 16.58/43.24 GiB"
    grep -q '0\.85, 36\.75 GiB' "$LOG" || fail "$be: the refusal does not show (0.85, 36.75 GiB)"
    grep -q "$holder" "$LOG" || fail "$be: the refusal does not name the holder pid $holder"
    grep -q 'started' "$LOG" && fail "$be: something was started despite the refusal"
    # the changes it speaks of are printed, each with its cost and a whole flag line
    grep -q '^what makes it fit, best first:$' "$LOG" || fail "$be: the refusal lists no changes"
    grep -Eq '^  1\. ' "$LOG" || fail "$be: no first change"
    grep -Eq '^     cost: ' "$LOG" || fail "$be: a change without its cost"
    grep -Eq '^     vllm serve .*--gpu-memory-utilization' "$LOG" || fail "$be: a change without its flag line"
    grep -q '(below)' "$LOG" && fail "$be: the refusal refers to text it does not print"
    # every numbered change has its cost; after vLLM's own line, all within 100 columns
    local changes costs
    changes=$(grep -Ec '^  [0-9]+\. ' "$LOG")
    costs=$(grep -Ec '^     cost: ' "$LOG")
    [ "$changes" = "$costs" ] || fail "$be: $changes changes but $costs costs"
    awk 'on && length($0) > 100 { exit 1 } /^vLLM will not start: / { on = 1 }' "$LOG" ||
        fail "$be: a line of the changes is wider than 100 columns"
    echo "ok: $be: preflight refuses with vLLM's numbers: $(grep -o 'Free memory[^)]*)[^)]*)' "$LOG" | head -n1)"
}

export HBMCTL_DCMI_LIB=$HBM_FAKES/libdcmi.so HBM_FAKE_DCMI_SCENARIO=$T/dcmi.json
dcmi_scenario 27300 "[{\"pid\": $holder, \"memory\": $((27300 * 1024 * 1024))}]"
check_backend dcmi
export HBMCTL_NVML_LIB=$HBM_FAKES/libnvidia-ml.so.1 HBM_FAKE_NVML_SCENARIO=$T/nvml.json
nvml_scenario 28625957028 "[{\"pid\": $holder, \"used_memory\": 28000000000}]"
check_backend nvml

# the same device through `plan --device auto` and `run --preflight`: the same figures. The
# framework's total for a known device is the table's (an H100 shows 79.18 GiB to torch,
# whatever NVML says), free is that less what the driver says is used.
cat >"$T/nvml.json" <<JSON
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "bus_id": "00000000:19:00.0",
  "memory_total": $((80 * 1024 ** 3)), "memory_used": $((27 * 1024 ** 3)), "utilization_gpu": 0,
  "compute": [{"pid": $holder, "used_memory": $((27 * 1024 ** 3))}]}]}
JSON
LOG=$T/log.same
"$HBMCTL" run --backend nvml --preflight "$model" -- \
    vllm serve "$model" --gpu-memory-utilization 0.85 --max-model-len 8192 >"$T/out" 2>"$LOG"
[ "$?" = 125 ] || fail "same device: preflight should refuse (exit 125)"
"$HBMCTL" plan "$model" --device auto --backend nvml --gpu-memory-utilization 0.85 \
    --max-model-len 8192 --json >"$T/plan.json" 2>"$T/plan.err"
[ "$?" = 1 ] || fail "same device: plan should say it does not start (exit 1)"
want=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["errors"][0]["message"])' "$T/plan.json")
grep -qF "vLLM will not start: $want" "$LOG" || fail "same device: preflight and plan differ; plan says: $want"
grep -qF '(52.18/79.18 GiB)' "$LOG" || fail "same device: not the framework's total 79.18 less 27 GiB used"
grep -qF '(0.85, 67.30 GiB)' "$LOG" || fail "same device: not 0.85 x 79.18 GiB"
echo "ok: run --preflight and plan --device auto give the same figures: ${want:0:80}"

# the holder gone, the device idle: the same launch passes the preflight and starts
# (a stand-in for vllm that checks it got the flags)
nvml_scenario 536870912 "[]"
mkdir -p "$T/bin"
printf '#!/bin/sh\ncase "$*" in *"--gpu-memory-utilization 0.85"*) exit 0;; esac\nexit 9\n' >"$T/bin/vllm"
chmod +x "$T/bin/vllm"
LOG=$T/log.fits
PATH=$T/bin:$PATH "$HBMCTL" run --backend nvml --preflight "$model" -- \
    vllm serve "$model" --gpu-memory-utilization 0.85 --max-model-len 8192 2>"$LOG"
rc=$?
[ "$rc" = 0 ] || fail "fits: exit $rc, expected 0 (the launch fits once the device is free)"
grep -q 'preflight: vLLM starts: .* at max-model-len 8192$' "$LOG" ||
    fail "fits: no preflight line saying it starts at max-model-len 8192"
echo "ok: on a free device the preflight passes and the command runs"
