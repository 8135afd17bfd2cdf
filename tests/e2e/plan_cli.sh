#!/bin/bash
# hbmctl plan end to end: exit codes, the human breakdown (100 columns), the SPEC 9 JSON
# names, a whole `vllm serve` line after --, real safetensors files (a good shard set and a
# corrupt header: exit 2 naming the file), and --device auto over the fake NVML where a real
# process of this test holds memory (vLLM's pre-check text with the live numbers, the holder
# named in the advice), plus a live observation that fails (exit 2, said so).
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
GIB=1073741824
MIB=1048576
fix="$HBM_SRC/tests/fixtures/models"
hbm() { "$HBMCTL" "$@"; }

# --help and the device table
check "help" bash -c '"$HBMCTL" plan --help | grep -q -- "--device auto"'
hbm plan --list-devices >"$tmp/devs"
check "device table has 910B4 29.49" grep -q '^910B4 .*29.49 GiB' "$tmp/devs"
check "device table has H100 79.18" grep -q '^H100-80G .*79.18 GiB' "$tmp/devs"

# fits: exit 0, every line within 100 columns
hbm plan "$fix/qwen3-0.6b" --device H100-80G --max-model-len 16000 >"$tmp/out"
check "fits exits 0" test $? -eq 0
check "fits verdict" grep -q 'verdict FITS' "$tmp/out"
check "100 columns" awk 'length($0) > 100 { exit 1 }' "$tmp/out"
check "bar per component" grep -Eq '^  weights +[0-9.]+ GiB +[0-9.]+%  #' "$tmp/out"

# does not fit: exit 1, vLLM's words, fixes with flag lines
hbm plan "$fix/qwen3-32b" --device H100-80G --vllm-version 0.11.0 --max-model-len 32000 >"$tmp/out"
check "no fit exits 1" test $? -eq 1
check "vLLM max_model_len text" grep -q "To serve at least one request with the models's max seq len (32000)" "$tmp/out"
check "max-model-len fix" grep -q -- '--max-model-len 18432 (the longest' "$tmp/out"
check "100 columns (advice)" awk 'length($0) > 100 { exit 1 }' "$tmp/out"

# JSON: SPEC 9 names, bytes, null for unknown
hbm plan "$fix/qwen3-32b" --device H100-80G --vllm-version 0.11.0 --max-model-len 32000 --json >"$tmp/j"
check "json exit 1" test $? -eq 1
check "json fields" python3 - "$tmp/j" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
for k in ["fits", "errors", "weights_bytes", "activation_bytes", "non_torch_bytes", "graph_bytes",
          "kv_cache_bytes", "kv_bytes_per_token", "block_size", "num_blocks", "kv_cache_tokens",
          "max_concurrency", "recommendations", "vllm_args"]:
    assert k in j, k
assert j["fits"] is False
assert j["errors"][0]["kind"] == "max_model_len"
assert j["kv_bytes_per_token"] == 64 * 2 * 8 * 128 * 2
assert j["memory_free_bytes"] is None
assert j["recommendations"][0]["vllm_args"].startswith("vllm serve ")
assert all(r["flags"] for r in j["recommendations"])
EOF

# a whole vllm serve line after --
hbm plan --device A100-80G --vllm-version 0.10.1 --json -- vllm serve "$fix/qwen2-7b-instruct" \
    --max-model-len 16384 --gpu-memory-utilization 0.25 --tensor-parallel-size 2 --port 8081 >"$tmp/j"
check "serve line read" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["tensor_parallel_size"] == 2 and j["max_model_len"] == 16384
assert abs(j["gpu_memory_utilization"] - 0.25) < 1e-9
assert abs(j["kv_cache_tokens"] - 450192) / 450192 < 0.05, j["kv_cache_tokens"]
' "$tmp/j"

# real safetensors: measured, not estimated
st() { # FILE JSON-HEADER DATA-BYTES
    python3 - "$@" <<'EOF'
import struct, sys
h = sys.argv[2].encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(int(sys.argv[3])))
EOF
}
mkdir -p "$tmp/m"
cp "$fix/qwen3-0.6b/config.json" "$tmp/m/"
st "$tmp/m/model-00001-of-00002.safetensors" '{"model.embed_tokens.weight":{"dtype":"BF16","shape":[1000,64],"data_offsets":[0,128000]}}' 128000
st "$tmp/m/model-00002-of-00002.safetensors" '{"w":{"dtype":"F8_E4M3","shape":[4096],"data_offsets":[0,4096]}}' 4096
hbm plan "$tmp/m" --mem 80GiB --json >"$tmp/j"
check "safetensors measured" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["model"]["weights_estimated"] is False
assert j["model"]["checkpoint_bytes"] == 132096 and j["model"]["safetensors_files"] == 2
' "$tmp/j"
# corrupt header length: exit 2 naming the file and the offset
python3 -c 'import struct; open("'"$tmp/m"'/model-00002-of-00002.safetensors","wb").write(struct.pack("<Q", 1 << 33) + b"{}")'
hbm plan "$tmp/m" --mem 80GiB >"$tmp/out" 2>"$tmp/err"
check "corrupt header exits 2" test $? -eq 2
check "corrupt header named" grep -q 'model-00002-of-00002.safetensors: header length 8589934592 at offset 0' "$tmp/err"
# bad config: exit 2 naming file and line
printf '{\n "hidden_size": 4096,\n oops\n}\n' >"$tmp/m/config.json"
hbm plan "$tmp/m" --mem 80GiB >"$tmp/out" 2>"$tmp/err"
check "bad config exits 2" test $? -eq 2
check "bad config line" grep -q 'config.json:3' "$tmp/err"
hbm plan "$fix/qwen3-0.6b" >"$tmp/out" 2>"$tmp/err"
check "no device exits 2" test $? -eq 2
hbm plan "$fix/qwen3-0.6b" --device H100-80G --gpu-memory-utilization 1.7 >"$tmp/out" 2>"$tmp/err"
check "bad flag exits 2" test $? -eq 2

# --device auto over the fake NVML: a real process holds 30 GiB of an H100
fake_nvml
sleep 600 &
pids+=($!)
holder=$!
cat >"$tmp/scenario.json" <<EOF
{"driver_version": "550.54.15",
 "devices": [
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0a1b2c3d", "bus_id": "00000000:18:00.0",
   "memory_total": $((81559 * MIB)), "memory_used": $((30 * GIB)), "utilization_gpu": 0,
   "temperature": 40, "power_mw": 90000, "ecc_uncorrected": 0, "mig_mode": 0,
   "compute": [{"pid": $holder, "used_memory": $((30 * GIB))}], "graphics": []}]}
EOF
hbm plan "$fix/qwen3-14b" --device auto --max-model-len 16384 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "auto: does not start (exit 1)" test $rc -eq 1
check "auto: live numbers in vLLM's text" grep -q 'Free memory on device cuda:0 (49.18/79.18 GiB) on startup is less than desired GPU memory' "$tmp/out"
check "auto: holder named" grep -q "pid $holder" "$tmp/out"
check "auto: 0.62 passes the check" grep -q -- '--gpu-memory-utilization 0.62' "$tmp/out"
if [ "$rc" -ne 1 ]; then cat "$tmp/out" "$tmp/err"; fi
# the live observation fails: say so, exit 2
cat >"$tmp/scenario.json" <<EOF
{"init_error": 9, "devices": []}
EOF
hbm plan "$fix/qwen3-14b" --device auto >"$tmp/out" 2>"$tmp/err"
check "auto: failed observation exits 2" test $? -eq 2
check "auto: says why" grep -q 'no live observation' "$tmp/err"
finish
