#!/bin/bash
# hbmctl over NVML through the fake libnvidia-ml, with real processes of this test as the pids
# the driver lists: several GPUs, compute and graphics entries of one process merged, the
# 32-byte process entries some drivers write, NVLink and PCIe topology, MIG, a listed pid
# that has exited (ORPHANED; UNACCOUNTED when hbmctl cannot see host pids), an unlisted
# device-file holder, an old driver, and a live observation replayed from its snapshot.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
fake_nvml
mkdir -p "$tmp/accel"
: >"$tmp/accel/nvidiactl"
: >"$tmp/accel/nvidia3"
export HBMCTL_DEVICE_PATTERNS="$tmp/accel/nvidia*"
GIB=1073741824
MIB=1048576

holder() { # a CUDA program keeps the control device open
    sleep 600 3<"$tmp/accel/nvidiactl" &
    pids+=($!)
    last=$!
}
hbm() { "$HBMCTL" "$@"; }

holder; trainer=$last
holder; migjob=$last
sleep 600 3<"$tmp/accel/nvidia3" &
pids+=($!)
unlisted=$!
sleep 0 &
dead=$!
wait "$dead"

write_scenario() { # entry size of the _v3 process calls
    cat >"$tmp/scenario.json" <<EOF
{"driver_version": "550.54.15", "process_entry_size": $1,
 "topology": [[0, 10, 40, 50], [10, 0, 40, 50], [40, 40, 0, 30], [50, 50, 30, 0]],
 "devices": [
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0a1b2c3d", "bus_id": "00000000:18:00.0",
   "memory_total": $((80 * GIB)), "memory_used": $((21 * GIB)), "memory_reserved": $((544 * MIB)),
   "utilization_gpu": 97, "temperature": 63, "power_mw": 512345, "ecc_uncorrected": 0,
   "mig_mode": 0, "nvlinks": ["00000000:19:00.0", "00000000:19:00.0"],
   "compute": [{"pid": $trainer, "used_memory": $((20 * GIB))}],
   "graphics": [{"pid": $trainer, "used_memory": $((20 * GIB))}]},
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-4e5f6a7b", "bus_id": "00000000:19:00.0",
   "memory_total": $((80 * GIB)), "memory_used": $((500 * MIB)), "memory_reserved": $((544 * MIB)),
   "utilization_gpu": 0, "temperature": 35, "power_mw": 70000, "ecc_uncorrected": 0,
   "mig_mode": 0, "nvlinks": ["00000000:18:00.0", "00000000:18:00.0"], "compute": [], "graphics": []},
  {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-8c9d0e1f", "bus_id": "00000000:3B:00.0",
   "memory_total": $((40 * GIB)), "memory_used": $((20 * GIB)), "temperature": 40, "power_mw": 90000,
   "ecc_uncorrected": 0, "mig_mode": 1, "mig_instances": 2,
   "compute": [{"pid": $migjob, "used_memory": $((4 * GIB)), "gi": 1, "ci": 0},
               {"pid": $migjob, "used_memory": $((2 * GIB)), "gi": 2, "ci": 0}]},
  {"name": "NVIDIA L4", "uuid": "GPU-2a3b4c5d", "bus_id": "00000000:AF:00.0",
   "memory_total": $((24 * GIB)), "memory_used": $((13 * GIB + 300 * MIB)), "utilization_gpu": 0,
   "temperature": 30, "power_mw": 16000, "ecc_uncorrected": 0,
   "compute": [{"pid": $dead, "used_memory": $((13 * GIB))}]}]}
EOF
}

for size in 24 32; do
    write_scenario $size
    json=$(hbm status --backend nvml --json)
    check "[$size] status --backend nvml exits 0" test $? -eq 0
    check "[$size] backend is nvml" test "$(jq -r .backend <<<"$json")" = nvml
    check "[$size] 4 GPUs" test "$(jq '.devices|length' <<<"$json")" = 4
    check "[$size] pids read right whatever the entry size" test \
        "$(jq -c '[.devices[].processes[].pid]' <<<"$json")" = "[$trainer,$migjob,$dead]"
done
check "driver version" test "$(jq -r .driver_version <<<"$json")" = 550.54.15
check "vendor and indexes" test "$(jq -c '[.devices[]|[.vendor,.index,.chip]]' <<<"$json")" = \
    '[["nvidia",0,0],["nvidia",1,0],["nvidia",2,0],["nvidia",3,0]]'
check "bus ids as nvidia-smi prints them" test "$(jq -r '.devices[2].bus_id' <<<"$json")" = 00000000:3B:00.0
check "uuid" test "$(jq -r '.devices[1].uuid' <<<"$json")" = GPU-4e5f6a7b
check "memory used and reserved apart" test \
    "$(jq -c '.devices[0]|[.memory_used_bytes,.memory_reserved_bytes,.memory_total_bytes]' <<<"$json")" = \
    "[$((21 * GIB)),$((544 * MIB)),$((80 * GIB))]"
check "power and temperature" test "$(jq -c '.devices[0]|[.power_watts,.temperature_celsius]' <<<"$json")" = '[512.345,63]'
check "utilisation unknown under MIG is null" test "$(jq '.devices[2].utilization_ratio' <<<"$json")" = null
check "compute and graphics entries of one process are one process" test \
    "$(jq '.devices[0].processes|length' <<<"$json")" = 1
check "its memory is counted once" test "$(jq '.devices[0].processes[0].memory_bytes' <<<"$json")" = $((20 * GIB))
check "MIG shown" test "$(jq -r '.devices[2].mig' <<<"$json")" = "enabled, 2 instances"
check "one process in two MIG instances: summed" test \
    "$(jq ".devices[2].processes[]|select(.pid==$migjob)|.memory_bytes" <<<"$json")" = $((6 * GIB))
# The exited pid: ORPHANED where hbmctl sees the host's pids, else UNACCOUNTED (the test may
# run in a container); both are then forced by root prefixes below.
if [ "$(jq .host.sees_host_pids <<<"$json")" = true ]; then gone=ORPHANED; else gone=UNACCOUNTED; fi
check "verdicts" test "$(jq -c '[.devices[].verdict]' <<<"$json")" = "[\"BUSY\",\"FREE\",\"BUSY\",\"$gone\"]"
check "NVLink between GPU 0 and 1" test "$(jq -r '.topology[0][1]' <<<"$json")" = NVLINK
check "PCIe levels" test "$(jq -c '[.topology[0][2],.topology[0][3],.topology[2][3]]' <<<"$json")" = \
    '["NODE","SYS","PHB"]'
check "unlisted holder of a GPU device file is among the host's holders" test \
    "$(jq "[.host.holders[]|select(.pid==$unlisted)]|length" <<<"$json")" = 1
table=$(hbm status)
check "auto falls through to nvml and says so" grep -q "^backend nvml" <<<"$table"
check "table names the unlisted holder" grep -qE "\b$unlisted\b.*sleep" <<<"$table"

# Live and replayed from its snapshot.
check "snapshot exits 0" hbm snapshot --backend nvml -o "$tmp/snap.json"
replay=$(hbm status --snapshot "$tmp/snap.json" --json)
check "replay is the snapshot, field for field" test \
    "$(jq -S 'del(.source)' "$tmp/snap.json")" = "$(jq -S 'del(.source)' <<<"$replay")"
check "live devices equal the replayed ones" test \
    "$(jq -S '[.devices, .topology]' <<<"$json")" = "$(jq -S '[.devices, .topology]' <<<"$replay")"
check "live table equals the replayed table" test \
    "$(tail -n +2 <<<"$table")" = "$(hbm status --snapshot "$tmp/snap.json" | tail -n +2)"

make_root "$tmp/host" yes
json=$(hbm status --backend nvml --json --root "$tmp/host")
check "host view: sees host pids" test "$(jq .host.sees_host_pids <<<"$json")" = true
check "host view: ORPHANED" test "$(jq -r '.devices[3].verdict' <<<"$json")" = ORPHANED
check "ORPHANED names the exited pid" grep -q "pid $dead is listed by the driver but no longer exists" \
    <<<"$(jq -r '.devices[3].reason' <<<"$json")"
check "the exited pid's entry says gone" test \
    "$(jq -r ".devices[3].processes[]|select(.pid==$dead)|.state" <<<"$json")" = gone

make_root "$tmp/ctr" no
json=$(hbm status --backend nvml --json --root "$tmp/ctr")
check "container view: does not see host pids" test "$(jq .host.sees_host_pids <<<"$json")" = false
check "outside the view: UNACCOUNTED" test "$(jq -r '.devices[3].verdict' <<<"$json")" = UNACCOUNTED
check "UNACCOUNTED says why" grep -q "pid $dead is not in this PID namespace" \
    <<<"$(jq -r '.devices[3].reason' <<<"$json")"
check "live pids are still BUSY" test "$(jq -c '[.devices[0,2].verdict]' <<<"$json")" = '["BUSY","BUSY"]'

# An old driver: no memory v2 (reserved unknown, counted in used), 16-byte process entries,
# no MIG call, the oldest PCI struct.
json=$(HBMCTL_NVML_LIB="$HBM_FAKES/old/libnvidia-ml.so.1" hbm status --backend nvml --json)
check "old driver: 4 GPUs" test "$(jq '.devices|length' <<<"$json")" = 4
check "old driver: reserved is null, not 0" test "$(jq '.devices[0].memory_reserved_bytes' <<<"$json")" = null
check "old driver: used includes reserved" test "$(jq '.devices[0].memory_used_bytes' <<<"$json")" = $((21 * GIB + 544 * MIB))
check "old driver: pids" test "$(jq -c '[.devices[].processes[].pid]' <<<"$json")" = "[$trainer,$migjob,$dead]"
check "old driver: bus id from the PCI numbers" test "$(jq -r '.devices[3].bus_id' <<<"$json")" = 00000000:AF:00.0
check "old driver: no MIG text" test "$(jq -r '.devices[2].mig // ""' <<<"$json")" = ""
check "old driver: NVLink from link state" test "$(jq -r '.topology[1][0]' <<<"$json")" = NVLINK

# A failing driver.
echo '{"init_error": 9, "devices": []}' >"$tmp/scenario.json"
err=$(hbm status --backend nvml 2>&1 >/dev/null)
check "init failure exits 2" test $? -eq 2
check "and says why" grep -q "Driver Not Loaded" <<<"$err"
err=$(HBMCTL_NVML_LIB="$tmp/none.so" hbm status 2>&1 >/dev/null)
check "no backend at all exits 2" test $? -eq 2
check "and names both libraries' variables" grep -q "HBMCTL_NVML_LIB" <<<"$err"

finish
