#!/bin/bash
# hbmctl plan end to end: exit codes, the human breakdown (100 columns), the JSON contract
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
check "100 columns" fits_width "$tmp/out"
check "bar per component" grep -Eq '^  weights +[0-9.]+ GiB +[0-9.]+%  #' "$tmp/out"

# does not fit: exit 1, vLLM's words, fixes with flag lines
hbm plan "$fix/qwen3-32b" --device H100-80G --vllm-version 0.11.0 --max-model-len 32000 >"$tmp/out"
check "no fit exits 1" test $? -eq 1
check "vLLM max_model_len text" grep -q "To serve at least one request with the models's max seq len (32000)" "$tmp/out"
check "max-model-len fix" grep -q -- '--max-model-len 18432 (the longest' "$tmp/out"
check "100 columns (advice)" fits_width "$tmp/out"

# JSON: contract names, bytes, null for unknown
hbm plan "$fix/qwen3-32b" --device H100-80G --vllm-version 0.11.0 --max-model-len 32000 --json >"$tmp/j"
check "json exit 1" test $? -eq 1
check "json fields" python3 - "$tmp/j" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
for k in ["fits", "errors", "weights_bytes", "activation_bytes", "non_torch_bytes", "graph_bytes",
          "kv_cache_bytes", "kv_bytes_per_token", "block_size", "num_blocks", "kv_cache_tokens",
          "max_concurrency", "recommendations", "launch_line", "vllm_args"]:
    assert k in j, k
# launch_line is the engine's own launch; vllm_args, its older name, says the same this release
assert j["launch_line"] == j["vllm_args"] and j["launch_line"].startswith("vllm serve ")
assert all(r["launch_line"] == r["vllm_args"] for r in j["recommendations"])
assert j["fits"] is False
assert j["errors"][0]["kind"] == "max_model_len"
assert j["kv_bytes_per_token"] == 64 * 2 * 8 * 128 * 2
assert j["memory_free_bytes"] is None
assert j["recommendations"][0]["vllm_args"].startswith("vllm serve ")
assert all(r["flags"] for r in j["recommendations"])
EOF

# planning backwards: the launch's flags, passed back to plan, serve the target
hbm plan "$fix/qwen3-32b" --device L40S --max-model-len 32768 --serve 8 --json >"$tmp/j"
check "serve exits 0" test $? -eq 0
python3 - "$tmp/j" >"$tmp/flags" <<'EOF'
import json, sys
l = json.load(open(sys.argv[1]))["launch"]
assert l["serves"] is True and l["requests"] == 8 and l["max_concurrency"] >= 8
assert l["tensor_parallel_size"] * l["pipeline_parallel_size"] > 1
print(" ".join(l["flags"]))
EOF
check "serve launch object" test -s "$tmp/flags"
# shellcheck disable=SC2046
hbm plan "$fix/qwen3-32b" --device L40S --json -- vllm serve "$fix/qwen3-32b" \
    $(cat "$tmp/flags") >"$tmp/j2"
check "launch flags fit when planned forward" test $? -eq 0
check "launch flags serve 8" python3 -c \
    'import json,sys; assert json.load(open(sys.argv[1]))["max_concurrency"] >= 8' "$tmp/j2"
hbm plan "$fix/qwen3-32b" --device L4 --max-model-len 131072 --serve 1000 >"$tmp/out"
check "nothing serves: exit 1" test $? -eq 1
check "nothing serves: closest said" grep -q "serves them; closest" "$tmp/out"
check "100 columns (serve)" fits_width "$tmp/out"
hbm plan "$fix/qwen3-32b" --device L4 --serve 4 >"$tmp/out" 2>"$tmp/err"
check "serve without --max-model-len exits 2" test $? -eq 2
check "serve names --max-model-len" grep -q -- "--max-model-len" "$tmp/err"

# options before --: hbmctl's own, vLLM flags the planner knows; a typo is an error that
# names the nearest known flag, and is never planned around
hbm plan "$fix/qwen3-0.6b" --devcie H100-80G >"$tmp/out" 2>"$tmp/err"
check "typo option exits 2" test $? -eq 2
check "typo named, own option suggested" grep -q 'unknown option "--devcie" (did you mean --device?)' "$tmp/err"
check "nothing planned on a typo" test ! -s "$tmp/out"
hbm plan "$fix/qwen3-0.6b" --device H100-80G --max-model-lne 8192 >"$tmp/out" 2>"$tmp/err"
check "vLLM flag typo exits 2" test $? -eq 2
check "vLLM flag suggested" grep -q 'unknown option "--max-model-lne" (did you mean --max-model-len?)' "$tmp/err"
hbm plan "$fix/qwen3-0.6b" --device H100-80G --gpu_memory_utilisation=0.5 >"$tmp/out" 2>"$tmp/err"
check "underscore typo suggested in vLLM spelling" grep -q 'did you mean --gpu-memory-utilization?' "$tmp/err"
hbm plan "$fix/qwen3-0.6b" --device H100-80G --zzqqxx >"$tmp/out" 2>"$tmp/err"
check "far-off option exits 2" test $? -eq 2
check "far-off option: no suggestion" bash -c '! grep -q "did you mean" "$1" && grep -q -- "--zzqqxx" "$1"' _ "$tmp/err"
# pasted serving flags that do not change memory pass before --, each with its value
hbm plan "$fix/qwen3-0.6b" --device H100-80G --port 8000 --host 0.0.0.0 --trust-remote-code \
    --served-model-name qwen --enable-auto-tool-choice --tool-call-parser hermes \
    --disable-log-requests --no-enable-prefix-caching --max_model_len=8192 --json >"$tmp/j" 2>"$tmp/err"
check "pasted flags accepted" test $? -eq 0
check "pasted flags: memory flag still read" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["max_model_len"] == 8192, j["max_model_len"]
assert not any("not model" in n for n in j["notes"]), j["notes"]
' "$tmp/j"
# flags that change memory but are not modelled are accepted and named in a note
hbm plan "$fix/qwen3-0.6b" --device H100-80G --cpu-offload-gb 4 -O3 --max-model-len 8192 \
    --json >"$tmp/j" 2>"$tmp/err"
check "unmodelled flags accepted" test $? -eq 0
check "unmodelled flags noted" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
n = [x for x in j["notes"] if "does not model" in x]
assert n and "--cpu-offload-gb" in n[0] and "-O" in n[0], j["notes"]
assert j["max_model_len"] == 8192
' "$tmp/j"
# after -- anything goes, as in a real serve line
hbm plan "$fix/qwen3-0.6b" --device H100-80G -- vllm serve x --some-future-flag 3 \
    --max-model-len 8192 >"$tmp/out" 2>"$tmp/err"
check "unknown flag after -- accepted" test $? -eq 0
check "the list of accepted flags" bash -c '"$HBMCTL" plan --list-flags | grep -Eq "^--tool-call-parser +yes +no device memory"'

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
# a release newer than the rules is planned with the newest rules, exit 0, and says so (text,
# JSON's rules_version and a note); the same for SGLang's and vllm-ascend's releases; only an
# older release or a word that is no version is refused (exit 2), naming the range
newest=$(hbm plan "$fix/qwen3-0.6b" --device H100-80G --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["rules_version"])')
for v in 9.9.9 1.0 0.99.1rc2; do
    hbm plan "$fix/qwen3-0.6b" --device H100-80G --vllm-version $v --json >"$tmp/j" 2>"$tmp/err"
    check "version $v plans (exit 0)" test $? -eq 0
    check "version $v: newest rules, said so" python3 - "$tmp/j" "$v" "$newest" <<'EOF2'
import json, sys
j, v, newest = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert j["rules_version"] == newest == j["vllm_version"], (j["rules_version"], newest)
assert j["engine_version"] == v and j["rules_newer"] is True
assert any(n.startswith("vLLM %s is newer than the releases the rules know" % v)
           for n in j["notes"]), j["notes"]
assert j["kv_cache_tokens"] > 0
EOF2
    hbm plan "$fix/qwen3-0.6b" --device H100-80G --vllm-version $v >"$tmp/out"
    check "version $v: the text says so" bash -c 'tr -s "\n " "  " <"$1" | grep -qF "rules $2 ($3 is newer: the newest rules)"' _ "$tmp/out" "$newest" "$v"
done
# the same figures as the newest rules given by name
hbm plan "$fix/qwen3-0.6b" --device H100-80G --vllm-version 9.9.9 --json >"$tmp/j1"
hbm plan "$fix/qwen3-0.6b" --device H100-80G --vllm-version "$newest" --json >"$tmp/j2"
check "9.9.9 plans as the newest" python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); assert a["kv_cache_tokens"]==b["kv_cache_tokens"] and b["rules_newer"] is False' "$tmp/j1" "$tmp/j2"
hbm plan "$fix/qwen3-8b" --device 910B4 --vllm-version 9.1.0 >"$tmp/out" 2>"$tmp/err"
check "vllm-ascend newer plans (exit 0 or 1)" test $? -le 1
check "vllm-ascend newer: said so" grep -q "vllm-ascend 9.1.0 is newer than the releases" "$tmp/out"
# SGLang's defaults change in patch releases: a later patch is newer too
for v in 0.9.0 0.5.18; do
    hbm plan "$fix/qwen3-8b" --device H100-80G --engine sglang --engine-version $v >"$tmp/out" 2>"$tmp/err"
    check "SGLang $v plans" test $? -le 1
    check "SGLang $v: said so" grep -q "SGLang $v is newer than the releases" "$tmp/out"
done
hbm plan "$fix/qwen3-8b" --device H100-80G --engine sglang --engine-version 0.5.4 >"$tmp/out" 2>"$tmp/err"
check "SGLang 0.5.4: its own rules, no note" bash -c '! grep -q "is newer than" "$1"' _ "$tmp/out"
for v in 0.1 0.5.4; do
    hbm plan "$fix/qwen3-0.6b" --device H100-80G --vllm-version $v >"$tmp/out" 2>"$tmp/err"
    check "older version $v exits 2" test $? -eq 2
    check "older version $v: range named" grep -q "vLLM $v is older than the releases the rules know (0.6.0 to $(echo "$newest" | cut -d. -f1,2).x" "$tmp/err"
    check "older version $v: nothing planned" test ! -s "$tmp/out"
done
hbm plan "$fix/qwen3-8b" --device H100-80G --engine sglang --engine-version 0.1.9 >"$tmp/out" 2>"$tmp/err"
check "older SGLang exits 2" test $? -eq 2
hbm plan "$fix/qwen3-0.6b" --device H100-80G --vllm-version latest >"$tmp/out" 2>"$tmp/err"
check "not a version exits 2" test $? -eq 2
check "not a version: said so" grep -q '"latest" is not a version like' "$tmp/err"

# a model_type the rules do not know is planned as a generic decoder and said so; a config
# that names no transformer numbers is still refused (exit 2)
mkdir -p "$tmp/newarch" "$tmp/noarch"
python3 - "$fix/qwen3-8b/config.json" "$tmp/newarch/config.json" <<'EOF2'
import json, sys
c = json.load(open(sys.argv[1]))
c["model_type"], c["architectures"] = "zeta_next", ["ZetaNextForCausalLM"]
json.dump(c, open(sys.argv[2], "w"))
EOF2
echo '{"model_type": "zeta_next", "d_state": 16}' >"$tmp/noarch/config.json"
hbm plan "$tmp/newarch" --device H100-80G --json >"$tmp/j"
check "unknown model_type plans (exit 0)" test $? -eq 0
hbm plan "$fix/qwen3-8b" --device H100-80G --json >"$tmp/j2"
check "unknown model_type: generic, noted, same figures as its numbers" python3 - "$tmp/j" "$tmp/j2" <<'EOF2'
import json, sys
j, k = (json.load(open(f)) for f in sys.argv[1:])
assert j["model"]["generic"] is True and k["model"]["generic"] is False
assert j["model"]["model_type"] == "zeta_next"
assert j["model"]["unread_keys"] == [] == k["model"]["unread_keys"]
assert any('model_type "zeta_next" is not one the rules were checked against' in n
           for n in j["notes"]), j["notes"]
assert j["kv_cache_tokens"] == k["kv_cache_tokens"] > 0
EOF2
hbm plan "$tmp/noarch" --device H100-80G >"$tmp/out" 2>"$tmp/err"
check "no transformer numbers exits 2" test $? -eq 2

# given a config.json, vllm serve gets its directory, in the command and in every change
hbm plan "$fix/qwen3-32b/config.json" --device H100-80G --max-model-len 40960 --json >"$tmp/j"
check "config.json path: does not fit (exit 1)" test $? -eq 1
check "config.json path: the directory is served" python3 - "$tmp/j" "$fix/qwen3-32b" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
want = "vllm serve " + sys.argv[2] + " "
assert j["vllm_args"].startswith(want), j["vllm_args"]
assert j["recommendations"], j
for r in j["recommendations"]:
    assert r["vllm_args"].startswith(want), r["vllm_args"]
EOF

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
unset CUDA_VISIBLE_DEVICES ASCEND_RT_VISIBLE_DEVICES
hbm plan "$fix/qwen3-14b" --device auto --max-model-len 16384 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "auto: does not start (exit 1)" test $rc -eq 1
check "auto: live numbers in vLLM's text" grep -q 'Free memory on device cuda:0 (49.18/79.18 GiB) on startup is less than desired GPU memory' "$tmp/out"
check "auto: holder named" grep -q "pid $holder" "$tmp/out"
check "auto: 0.62 passes the check" grep -q -- '--gpu-memory-utilization 0.62' "$tmp/out"
if [ "$rc" -ne 1 ]; then cat "$tmp/out" "$tmp/err"; fi
check "auto: device used named" grep -q 'uses GPU 0: the first 1, CUDA_VISIBLE_DEVICES not set' "$tmp/out"

# WSL2 is a host fact a snapshot keeps: a 24 GB card that CUDA sizes at 24,564 MiB there is
# planned at the driver's total when the snapshot says WSL2, at the native table's otherwise.
sed -i "s/NVIDIA H100 80GB HBM3/NVIDIA GeForce RTX 4090/; s/$((81559 * MIB))/$((24564 * MIB))/" "$tmp/scenario.json"
"$HBMCTL" snapshot >"$tmp/s.json"
jq '.host.wsl2 = true' "$tmp/s.json" >"$tmp/wsl.json"
total() { HBMCTL_ROOT= "$HBMCTL" plan "$fix/qwen3-14b" --device auto --max-model-len 4096 \
    --snapshot "$1" --json | jq .memory_total_bytes; }
check "snapshot: not WSL2, the native 4090" test "$(total "$tmp/s.json")" -lt $((24564 * MIB))
check "snapshot: WSL2 kept, the driver's total" test "$(total "$tmp/wsl.json")" -eq $((24564 * MIB))

# CUDA_VISIBLE_DEVICES chooses the devices, in its order: four GPUs, 0 and 2 busy
dev() { # INDEX USED PID
    local c="[]"
    [ "$3" ] && c="[{\"pid\": $3, \"used_memory\": $2}]"
    printf '{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-%d1b2c3d-0000", "bus_id": "00000000:%d8:00.0", "memory_total": %d, "memory_used": %d, "utilization_gpu": 0, "temperature": 40, "power_mw": 90000, "ecc_uncorrected": 0, "mig_mode": 0, "compute": %s, "graphics": []}' \
        "$1" "$1" $((81559 * MIB)) "$2" "$c"
}
{
    printf '{"driver_version": "550.54.15", "devices": [\n'
    dev 0 $((30 * GIB)) "$holder"; printf ',\n'
    dev 1 $((1 * GIB)) ""; printf ',\n'
    dev 2 $((50 * GIB)) "$holder"; printf ',\n'
    dev 3 $((2 * GIB)) ""; printf ']}\n'
} >"$tmp/scenario.json"
CUDA_VISIBLE_DEVICES=3,1 hbm plan "$fix/qwen3-14b" --device auto --max-model-len 16384 \
    --tensor-parallel-size 2 --json >"$tmp/j" 2>"$tmp/err"
check "visible: idle pair fits (exit 0)" test $? -eq 0
check "visible: devices and variable in JSON" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["devices"] == [3, 1], j["devices"]
assert j["visible_devices"] == "CUDA_VISIBLE_DEVICES=3,1", j["visible_devices"]
# the least free of the two: GPU 3 with 2 GiB used
assert abs(j["memory_free_bytes"] - (j["memory_total_bytes"] - 2 * 1024**3)) < 1024**2, j
' "$tmp/j"
CUDA_VISIBLE_DEVICES=1,2 hbm plan "$fix/qwen3-14b" --device auto --max-model-len 16384 \
    --tensor-parallel-size 2 >"$tmp/out" 2>"$tmp/err"
check "visible: busy GPU 2 among them (exit 1)" test $? -eq 1
check "visible: named in the output" grep -q 'uses GPU 1, 2: as CUDA_VISIBLE_DEVICES=1,2 leaves them' "$tmp/out"
check "visible: least free counts" grep -q 'Free memory on device cuda:0 (29.18/79.18 GiB)' "$tmp/out"
CUDA_VISIBLE_DEVICES=GPU-31b2c3d hbm plan "$fix/qwen3-14b" --device auto --json >"$tmp/j" 2>"$tmp/err"
check "visible: UUID prefix" python3 -c '
import json, sys; assert json.load(open(sys.argv[1]))["devices"] == [3]' "$tmp/j"
# CUDA stops at an entry it cannot use: only the devices before it are visible
CUDA_VISIBLE_DEVICES=1,7,3 hbm plan "$fix/qwen3-14b" --device auto --tensor-parallel-size 2 \
    >"$tmp/out" 2>"$tmp/err"
check "visible: too few after an invalid id exits 2" test $? -eq 2
check "visible: says how many and why" grep -q 'TP x PP needs 2 devices but CUDA_VISIBLE_DEVICES="1,7,3" leaves 1 (CUDA stops at "7": no such device here)' "$tmp/err"
CUDA_VISIBLE_DEVICES= hbm plan "$fix/qwen3-14b" --device auto >"$tmp/out" 2>"$tmp/err"
check "visible: empty variable leaves none (exit 2)" test $? -eq 2
unset CUDA_VISIBLE_DEVICES

# ASCEND_RT_VISIBLE_DEVICES takes logic ids (here the reverse of the card order) and must be
# ascending and on the host, as the Ascend runtime requires
export HBMCTL_DCMI_LIB="$HBM_FAKES/libdcmi.so"
export HBM_FAKE_DCMI_SCENARIO="$tmp/dcmi.json"
cards=""
for i in 0 1 2 3; do
    used=3400
    [ "$i" -eq 3 ] && used=$((3400 + 30720))
    cards+="${cards:+,}{\"card_id\": $i, \"chips\": [{\"logic_id\": $((3 - i)), \"phy_id\": $i,"
    cards+=" \"name\": \"910B3\", \"health\": 0, \"temperature\": 40, \"power_dw\": 912,"
    cards+=" \"aicore_util\": 0, \"hbm\": {\"total_mb\": 65536, \"used_mb\": $used},"
    cards+=" \"bus_id\": \"0000:$(printf '%02X' $((0xC1 + i))):00.0\", \"processes\": []}]}"
done
printf '{"driver_version": "24.1.rc2", "cards": [%s]}\n' "$cards" >"$tmp/dcmi.json"
ASCEND_RT_VISIBLE_DEVICES=0,2 hbm plan "$fix/qwen3-14b" --device auto --backend dcmi \
    --tensor-parallel-size 2 --max-model-len 16384 --json >"$tmp/j" 2>"$tmp/err"
check "ascend visible: plans (exit 0 or 1)" test $? -le 1
check "ascend visible: logic ids, least free" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["devices"] == [0, 2], j["devices"]
assert j["platform"] == "ascend"
assert j["visible_devices"] == "ASCEND_RT_VISIBLE_DEVICES=0,2"
# logic id 0 is card 3, the one with 30 GiB more in use
assert j["memory_total_bytes"] - j["memory_free_bytes"] > 30 * 1024**3, j
' "$tmp/j"
ASCEND_RT_VISIBLE_DEVICES=2,1 hbm plan "$fix/qwen3-14b" --device auto --backend dcmi \
    --tensor-parallel-size 2 >"$tmp/out" 2>"$tmp/err"
check "ascend visible: out of order exits 2" test $? -eq 2
check "ascend visible: says the order" grep -q 'ASCEND_RT_VISIBLE_DEVICES=2,1: "1" breaks the ascending order' "$tmp/err"
ASCEND_RT_VISIBLE_DEVICES=1,9 hbm plan "$fix/qwen3-14b" --device auto --backend dcmi >"$tmp/out" 2>"$tmp/err"
check "ascend visible: unknown id exits 2" test $? -eq 2
check "ascend visible: names the id" grep -q '"9" is not a logic id of this host' "$tmp/err"
unset ASCEND_RT_VISIBLE_DEVICES
hbm plan "$fix/qwen3-14b" --device auto --backend dcmi --json >"$tmp/j" 2>"$tmp/err"
check "ascend unset: the first in backend order" python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); assert j["devices"] == [3] and j["visible_devices"] is None, j["devices"]
' "$tmp/j"
export HBMCTL_DCMI_LIB="$tmp/no-such-libdcmi.so"

# the live observation fails: say so, exit 2
cat >"$tmp/scenario.json" <<EOF
{"init_error": 9, "devices": []}
EOF
hbm plan "$fix/qwen3-14b" --device auto >"$tmp/out" 2>"$tmp/err"
check "auto: failed observation exits 2" test $? -eq 2
check "auto: says why" grep -q 'no live observation' "$tmp/err"
# MindIE: its keys as flags, its config.json after '--', its words
hbm plan --engine mindie --device 910B3 -- /opt/mindie/bin/mindieservice_daemon \
    "$HBM_SRC/tests/fixtures/mindie/config.json" >"$tmp/out" 2>"$tmp/err"
check "mindie config: exits 0" test $? -eq 0
check "mindie config: starts" grep -q 'verdict FITS: MindIE starts' "$tmp/out"
check "mindie config: its keys back" grep -q -- '--npuMemSize 8 --maxSeqLen 8192' "$tmp/out"
check "mindie: 100 columns" fits_width "$tmp/out"
hbm plan "$fix/qwen3-14b" --engine mindie --device 910B3 --maxSeqLn 4096 >"$tmp/out" 2>"$tmp/err"
check "mindie typo: exits 2" test $? -eq 2
check "mindie typo: suggests" grep -q 'did you mean --maxSeqLen?' "$tmp/err"
# Python's vllm.LLM(...) batches more tokens than vllm serve; the sampler named is planned
q=$(hbm plan "$fix/qwen2-7b-instruct" --device A100-80G --vllm-version 0.10.1 --json | jq .max_num_batched_tokens)
o=$(hbm plan "$fix/qwen2-7b-instruct" --device A100-80G --vllm-version 0.10.1 --offline --json | jq .max_num_batched_tokens)
check "--offline: vLLM's offline batch (8192 against 2048)" test "$q $o" = "2048 8192"
a=$(hbm plan "$fix/qwen2-7b-instruct" --device A100-80G --vllm-version 0.10.1 --json | jq .kv_cache_tokens)
b=$(hbm plan "$fix/qwen2-7b-instruct" --device A100-80G --vllm-version 0.10.1 --sampler torch --json | jq .kv_cache_tokens)
check "--sampler torch: fewer KV tokens than FlashInfer's" test "$b" -lt "$a"
hbm plan "$fix/qwen2-7b-instruct" --device A100-80G --sampler fast >/dev/null 2>"$tmp/err"
check "--sampler fast: exits 2 with the choices" grep -q "want flashinfer or torch" "$tmp/err"
finish
