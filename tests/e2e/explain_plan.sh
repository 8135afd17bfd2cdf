#!/bin/bash
# explain with the planner's figures: a vLLM log whose "non-default args" line and release
# say how the server was launched, a sampler warm-up out of memory at the end of it. The
# figures must be the planner's own (hbmctl plan on the same launch says the same), each
# remedy's value re-planned, and nothing guessed when the model or the device is unknown.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LOGS="$HBM_SRC/tests/fixtures/logs"
MODEL="$HBM_SRC/tests/fixtures/models/qwen2-7b-instruct"
unset HBMCTL_CATALOG

# A real start-up's first lines (its launch and release, the model made a local directory)
# followed by a real sampler failure line; $1 the release, $2 the utilisation.
scene() {
    sed -n 1,12p "$LOGS/vllm_healthy.log" |
        sed "s#'Qwen/Qwen2.5-7B-Instruct'#'$MODEL'#g; s/0\.10\.1/$1/g; s/'gpu_memory_utilization': 0\.9}/'gpu_memory_utilization': $2}/"
    tail -n 1 "$LOGS/sig/vllm_sampler_warmup_oom.variant.log"
}
scene 0.10.1 0.9 >"$tmp/room.log"
scene 0.8.5 0.98 | sed "s/'max_model_len': 32768, 'tensor_parallel_size': 2/'max_model_len': 8192/" \
    >"$tmp/short.log"
ex() { "$HBMCTL" explain --no-live "$@"; }
plan() { jq -c ".findings[] | select(.id==\"vllm_sampler_warmup_oom\") | .plan" "$1"; }

ex --json "$tmp/room.log" --device A100-80G >"$tmp/room.json"
check "sampler failure: exit 1" test $? -eq 1
p=$(plan "$tmp/room.json")
check "the log's model, release and dummy requests" \
    test "$(jq -r '[.model, .vllm_version, .sampler_rows] | join(" ")' <<<"$p")" = "$MODEL 0.10.1 256"
ref=$("$HBMCTL" plan "$MODEL" --device A100-80G --vllm-version 0.10.1 --max-model-len 32768 \
    --tensor-parallel-size 2 --gpu-memory-utilization 0.9 --max-num-seqs 256 --json)
check "the sampler's need is the planner's" \
    test "$(jq .sampler_bytes <<<"$p")" = "$(jq .sampler_bytes <<<"$ref")"
check "so are the KV cache tokens" \
    test "$(jq .kv_cache_tokens <<<"$p")" = "$(jq .kv_cache_tokens <<<"$ref")"
check "room left: not predicted" test "$(jq .predicted <<<"$p")" = false
m=$(jq .max_num_seqs_fix.max_num_seqs <<<"$p")
need() {
    "$HBMCTL" plan "$MODEL" --device A100-80G --vllm-version 0.10.1 --max-model-len 32768 \
        --tensor-parallel-size 2 --gpu-memory-utilization 0.9 --max-num-seqs "$1" --json |
        jq .sampler_bytes
}
half=$(($(jq .sampler_bytes <<<"$p") / 2))
check "the max-num-seqs fix halves the sampler's need" test "$(need "$m")" -le $half
check "one more request would not" test "$(need $((m + 1)))" -gt $half
check "the utilisation fix is lower" \
    test "$(jq '.gpu_memory_utilization_fix.gpu_memory_utilization < 0.9' <<<"$p")" = true

out=$(ex "$tmp/short.log" --device L4)
check "graphs outside the budget: the plan predicts it" grep -q "the plan predicts this failure" <<<"$out"
check "text names the fix with its value" grep -qE -- "--max-num-seqs [0-9]+: the sampler needs" <<<"$out"
check "fits 100 columns" fits_width <(echo "$out")
ex --json "$tmp/short.log" --device L4 >"$tmp/short.json"
p=$(plan "$tmp/short.json")
m=$(jq .max_num_seqs_fix.max_num_seqs <<<"$p")
u=$(jq .gpu_memory_utilization_fix.gpu_memory_utilization <<<"$p")
# re-planned through the log itself, with the fix after '--'
fixed() { ex --json "$tmp/short.log" --device L4 -- "$@" | jq -c '.findings[0].plan'; }
check "the max-num-seqs fix, re-planned, is not short" \
    test "$(fixed --max-num-seqs "$m" | jq .predicted)" = false
check "one more request is short again" \
    test "$(fixed --max-num-seqs $((m + 1)) | jq .predicted)" = true
check "the utilisation fix, re-planned, is not short" \
    test "$(fixed --gpu-memory-utilization "$u" | jq .predicted)" = false
check "0.01 more is short again" \
    test "$(fixed --gpu-memory-utilization "$(awk -v u="$u" 'BEGIN { printf "%.2f", u + 0.01 }')" | jq .predicted)" = true

ex --json "$LOGS/sig/vllm_sampler_warmup_oom.log" --device H100-80G >"$tmp/nomodel.json"
check "no model known: no figures, and why" \
    grep -q "give --model DIR" <<<"$(plan "$tmp/nomodel.json" | jq -r .skipped)"
ex --json "$tmp/room.log" >"$tmp/nodevice.json"
check "no device known: no figures, and why" \
    grep -q "give --device NAME or --mem SIZE" <<<"$(plan "$tmp/nodevice.json" | jq -r .skipped)"
ex --json "$LOGS/sig/vllm_sampler_warmup_oom.log" --model "$MODEL" --mem 24GiB \
    -- vllm serve x --max-num-seqs lots >"$tmp/bad.json"
check "a bad flag after '--': named, no figures" \
    grep -q -- "--max-num-seqs" <<<"$(plan "$tmp/bad.json" | jq -r .skipped)"
# On a host with a device backend (the fake NVML), this host's card is the device.
if [ -e "$HBM_FAKES/libnvidia-ml.so.1" ]; then
    cat >"$tmp/scenario.json" <<JSON
{"driver_version": "550.54.15", "devices": [
  {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-0a1b2c3d", "bus_id": "00000000:18:00.0",
   "memory_total": $((80 * 1073741824)), "memory_used": $((1 * 1073741824)),
   "temperature": 40, "power_mw": 90000, "ecc_uncorrected": 0, "mig_mode": 0,
   "compute": [], "graphics": []}]}
JSON
    live=$(fake_nvml && "$HBMCTL" explain --json "$tmp/room.log" | jq -c '.findings[0].plan')
    check "live: this host's card planned" \
        test "$(jq -r .device <<<"$live")" = "NVIDIA A100-SXM4-80GB"
    check "live: the same figures as that card from the table" \
        test "$(jq .kv_cache_tokens <<<"$live")" = "$(jq .kv_cache_tokens <<<"$(plan "$tmp/room.json")")"
    off=$(fake_nvml && "$HBMCTL" explain --no-live --json "$tmp/room.log" | jq -r '.findings[0].plan.skipped')
    check "--no-live: no device, no figures" grep -q "give --device NAME" <<<"$off"
fi
# The log's sampler line (a real 0.10.1 line from an image without FlashInfer) is planned
# as that sampler: the torch one, as `plan --sampler torch` says.
{ sed -n 1,12p "$tmp/room.log"
  echo "(VllmWorker TP0 pid=1384) WARNING 09-03 04:38:28 [topk_topp_sampler.py:61] FlashInfer is not available. Falling back to the PyTorch-native implementation of top-p & top-k sampling. For the best performance, please install FlashInfer."
  tail -n 1 "$tmp/room.log"; } >"$tmp/torch.log"
p=$(ex --json "$tmp/torch.log" --device A100-80G | jq -c '.findings[] | select(.id=="vllm_sampler_warmup_oom") | .plan')
ref=$("$HBMCTL" plan "$MODEL" --device A100-80G --vllm-version 0.10.1 --max-model-len 32768 \
    --tensor-parallel-size 2 --gpu-memory-utilization 0.9 --max-num-seqs 256 --sampler torch --json)
check "the log's torch sampler: the planner's need for it" \
    test "$(jq .sampler_bytes <<<"$p")" = "$(jq .sampler_bytes <<<"$ref")"
check "which is more than FlashInfer's" \
    test "$(jq .sampler_bytes <<<"$p")" -gt "$(plan "$tmp/room.json" | jq .sampler_bytes)"
ex --json "$LOGS/vllm_healthy.log" --device A100-80G >"$tmp/healthy.json"
check "a healthy start-up: nothing planned, exit 0" \
    test "$(jq '.findings | length' "$tmp/healthy.json")" = 0
finish
