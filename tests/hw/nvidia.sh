#!/bin/bash
# On a machine with an NVIDIA GPU: hbmctl's NVML backend against nvidia-smi, with a real
# process holding 1 GiB of device memory through the CUDA driver API (tests/hw/cuda_hold.c),
# then the same process after its parent is killed (re-parented, still listed).
# Run by hand (not registered in ctest):   tests/hw/nvidia.sh [path/to/hbmctl]
# Prints SKIP and exits 0 where there is no NVIDIA driver.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
HBMCTL=${1:-${HBMCTL:-$src/build/hbmctl}}
. "$src/tests/e2e/common.bash"

skip() { echo "SKIP: $*"; exit 0; }
command -v nvidia-smi >/dev/null || skip "nvidia-smi not found"
if [ -z "${HBMCTL_NVML_LIB:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
    skip "libnvidia-ml.so.1 not found"
fi
nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi sees no GPU"
command -v jq >/dev/null || { echo "FAIL: jq is needed"; exit 1; }
[ -x "$HBMCTL" ] || { echo "FAIL: no hbmctl at $HBMCTL (pass its path)"; exit 1; }

tmp=$(mktemp -d)
holder=""
parent=""
cleanup() {
    [ -n "$parent" ] && kill -9 "$parent" 2>/dev/null
    [ -n "$holder" ] && kill -9 "$holder" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
MIB=1048576

# Within tolerance: |a - b| <= t.
near() { local d=$(($1 - $2)); [ "${d#-}" -le "$3" ]; }

# ---- every GPU: index, name, bus id, memory --------------------------------------------------
json=$("$HBMCTL" status --backend nvml --json)
check "hbmctl status --backend nvml exits 0" test $? -eq 0
smi=$(nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,memory.used,memory.reserved \
    --format=csv,noheader,nounits 2>/dev/null ||
    nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,memory.used --format=csv,noheader,nounits)
check "as many GPUs as nvidia-smi" test "$(jq '.devices|length' <<<"$json")" = "$(wc -l <<<"$smi")"
while IFS=, read -r idx name bus total used reserved; do
    idx=${idx// /}; name=$(sed 's/^ *//;s/ *$//' <<<"$name"); bus=${bus// /}
    total=${total// /}; used=${used// /}; reserved=${reserved// /}
    [[ "$reserved" =~ ^[0-9]+$ ]] || reserved=0
    d=$(jq ".devices[]|select(.index==$idx)" <<<"$json")
    check "GPU $idx listed" test -n "$d"
    check "GPU $idx name ($name)" test "$(jq -r .name <<<"$d")" = "$name"
    check "GPU $idx bus id ($bus)" test "$(jq -r .bus_id <<<"$d" | tr a-f A-F)" = "$(tr a-f A-F <<<"$bus")"
    ht=$(($(jq .memory_total_bytes <<<"$d") / MIB))
    hu=$(($(jq .memory_used_bytes <<<"$d") / MIB))
    check "GPU $idx memory total ($ht vs $total MiB)" near "$ht" "$total" $((reserved + 1))
    # Memory moves between two reads: 1% of the card or 256 MiB, whichever is larger.
    tol=$((total / 100 > 256 ? total / 100 : 256))
    check "GPU $idx memory used ($hu vs $used MiB)" near "$hu" "$used" "$tol"
done <<<"$smi"

# ---- a real process holding memory ------------------------------------------------------------
gpu=$(jq -r '[.devices[]|select((.mig // "") == "")][0].index // empty' <<<"$json")
if [ -z "$gpu" ]; then
    echo "SKIP: every GPU is in MIG mode, no process check"
    finish
    exit $?
fi
cc -std=c17 -O2 -o "$tmp/cuda_hold" "$here/cuda_hold.c" -ldl || { echo "FAIL: cannot build cuda_hold"; exit 1; }
mkfifo "$tmp/ready"
# The holder runs under its own parent shell, so that parent can be killed below.
bash -c 'exec 3>"$1"; "$2" "$3" 1024 >&3 & echo "$!" >"$4"; wait' _ "$tmp/ready" \
    "$tmp/cuda_hold" "$gpu" "$tmp/holder.pid" &
parent=$!
read -r -t 120 word hpid bytes <"$tmp/ready"
holder=$(cat "$tmp/holder.pid" 2>/dev/null)
check "cuda_hold allocated 1 GiB on GPU $gpu" test "${word:-} ${bytes:-}" = "ready $((1024 * MIB))"
check "the holder is the pid its parent started" test "${hpid:-x}" = "${holder:-y}"
if [ "${word:-}" != ready ]; then
    finish
    exit 1
fi

compare_process() { # label
    local apps json mem smimem bus
    bus=$(jq -r ".devices[]|select(.index==$gpu)|.bus_id" <<<"$("$HBMCTL" status --backend nvml --json)")
    apps=$(nvidia-smi --query-compute-apps=pid,used_memory,gpu_bus_id --format=csv,noheader,nounits)
    smimem=$(awk -F', *' -v p="$holder" '$1 == p {print $2}' <<<"$apps" | head -1)
    check "$1: nvidia-smi lists pid $holder" test -n "$smimem"
    json=$("$HBMCTL" status --backend nvml --json)
    mem=$(jq ".devices[]|select(.index==$gpu)|.processes[]|select(.pid==$holder)|.memory_bytes" <<<"$json")
    check "$1: hbmctl lists pid $holder on GPU $gpu" test -n "$mem"
    check "$1: at least the 1 GiB allocated" test "${mem:-0}" -ge $((1024 * MIB))
    check "$1: same memory as nvidia-smi (${mem:-?} B vs ${smimem:-?} MiB)" \
        near "$((${mem:-0} / MIB))" "${smimem:-0}" 1
    check "$1: GPU $gpu is BUSY" test "$(jq -r ".devices[]|select(.index==$gpu)|.verdict" <<<"$json")" = BUSY
    check "$1: the process is live" test \
        "$(jq -r ".devices[]|select(.index==$gpu)|.processes[]|select(.pid==$holder)|.state" <<<"$json")" = live
    last_json=$json
}
compare_process "with its parent"
check "its parent is the shell that started it" test \
    "$(jq ".host.holders[]|select(.pid==$holder)|.ppid" <<<"$last_json")" = "$parent"

old=$parent
kill -9 "$parent"
wait "$parent" 2>/dev/null
parent=""
for _ in $(seq 50); do
    [ "$(awk '{print $4}' "/proc/$holder/stat" 2>/dev/null)" != "$old" ] && break
    sleep 0.1
done
newppid=$(awk '{print $4}' "/proc/$holder/stat")
compare_process "parent killed"
check "re-parented (ppid $newppid)" test \
    "$(jq ".host.holders[]|select(.pid==$holder)|.ppid" <<<"$last_json")" = "$newppid"

kill -9 "$holder"
wait "$holder" 2>/dev/null
holder=""
finish
