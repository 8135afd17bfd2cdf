#!/bin/bash
# hbmctl over DCMI through the fake libdcmi, with real processes of this test as the pids the
# driver lists: 8 NPUs (4 free, 4 held), two-chip Duo cards, a listed pid that has exited
# (ORPHANED; UNACCOUNTED when hbmctl cannot see host pids), a process holding a device file
# the driver does not list, an old driver without the newest calls, 40 processes on one
# chip, and a live observation replayed from its snapshot.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
fake_dcmi
mkdir -p "$tmp/accel"
: >"$tmp/accel/davinci_manager"
: >"$tmp/accel/davinci4"
export HBMCTL_DEVICE_PATTERNS="$tmp/accel/davinci*"
GIB=1073741824
MIB=1048576

# A process that uses "some NPU": it holds the manager device open, as CANN programs do.
holder() {
    sleep 600 3<"$tmp/accel/davinci_manager" &
    pids+=($!)
    last=$!
}

hbm() { "$HBMCTL" "$@"; }

# ---- 8 x 910B3: chips 0-3 idle, 4-7 each held by one real process -------------------------
held=()
for i in 0 1 2 3; do holder; held+=("$last"); done
holder; unlisted=$last # holds the device file, listed by no chip

chips=""
for i in 0 1 2 3 4 5 6 7; do
    if [ "$i" -lt 4 ]; then
        used=3400; procs="[]"
    else
        used=$((3400 + 30720)); procs="[{\"pid\": ${held[$((i - 4))]}, \"memory\": $((30 * GIB))}]"
    fi
    chips+="${chips:+,}{\"card_id\": $i, \"chips\": [{\"logic_id\": $i, \"phy_id\": $((i ^ 1)),"
    chips+=" \"name\": \"910B3\", \"health\": 0, \"temperature\": $((40 + i)), \"power_dw\": 912,"
    chips+=" \"aicore_util\": $([ "$i" -lt 4 ] && echo 0 || echo 63),"
    chips+=" \"hbm\": {\"total_mb\": 65536, \"used_mb\": $used},"
    chips+=" \"bus_id\": \"0000:$(printf '%02X' $((0xC1 + i))):00.0\", \"processes\": $procs}]}"
done
topo=""
for i in 0 1 2 3 4 5 6 7; do
    row=""
    for j in 0 1 2 3 4 5 6 7; do row+="${row:+,}$([ "$i" -eq "$j" ] && echo 0 || echo 3)"; done
    topo+="${topo:+,}[$row]"
done
topo="[$topo]"
cat >"$tmp/scenario.json" <<EOF
{"driver_version": "24.1.rc2", "topology": $topo, "cards": [$chips]}
EOF

json=$(hbm status --backend dcmi --json)
check "status --backend dcmi exits 0" test $? -eq 0
check "backend is dcmi" test "$(jq -r .backend <<<"$json")" = dcmi
check "driver version" test "$(jq -r .driver_version <<<"$json")" = 24.1.rc2
check "8 devices" test "$(jq '.devices|length' <<<"$json")" = 8
check "indexes are card ids" test "$(jq -c '[.devices[].index]' <<<"$json")" = '[0,1,2,3,4,5,6,7]'
check "phy ids differ from logic ids" test "$(jq -c '[.devices[].phy_id]' <<<"$json")" = '[1,0,3,2,5,4,7,6]'
check "4 FREE then 4 BUSY" test "$(jq -c '[.devices[].verdict]' <<<"$json")" = \
    '["FREE","FREE","FREE","FREE","BUSY","BUSY","BUSY","BUSY"]'
check "the driver's pids are this test's processes" test \
    "$(jq -c '[.devices[].processes[].pid]' <<<"$json")" = "[$(IFS=,; echo "${held[*]}")]"
check "process memory in bytes" test "$(jq '.devices[4].processes[0].memory_bytes' <<<"$json")" = $((30 * GIB))
check "process name joined from /proc" test "$(jq -r '.devices[4].processes[0].name' <<<"$json")" = sleep
check "HBM used in bytes" test "$(jq '.devices[5].memory_used_bytes' <<<"$json")" = $(((3400 + 30720) * MIB))
check "power in watts" test "$(jq '.devices[0].power_watts' <<<"$json")" = 91.2
check "AICore utilisation ratio" test "$(jq '.devices[4].utilization_ratio' <<<"$json")" = 0.63
check "bus id" test "$(jq -r '.devices[2].bus_id' <<<"$json")" = 0000:C3:00.0
check "HCCS topology" test "$(jq -r '.topology[0][7]' <<<"$json")" = HCCS
check "the unlisted device-file holder is among the host's holders" test \
    "$(jq "[.host.holders[]|select(.pid==$unlisted)|.device_files[]]|length" <<<"$json")" -ge 1
check "the unlisted holder is on no chip" test \
    "$(jq "[.devices[].processes[]|select(.pid==$unlisted)]|length" <<<"$json")" = 0
table=$(hbm status --backend dcmi)
check "table names the unlisted holder" grep -qE "\b$unlisted\b.*sleep" <<<"$table"
check "table shows NPU 5 BUSY" grep -qE "^NPU 5 chip 0 BUSY: 1 process listed: sleep holds 30\.00 GiB" <<<"$table"

# Live and replayed from its snapshot: the same document and the same table.
check "snapshot exits 0" hbm snapshot --backend dcmi -o "$tmp/snap.json"
replay=$(hbm status --snapshot "$tmp/snap.json" --json)
check "replay is the snapshot, field for field" test \
    "$(jq -S 'del(.source)' "$tmp/snap.json")" = "$(jq -S 'del(.source)' <<<"$replay")"
check "live devices equal the replayed ones" test \
    "$(jq -S .devices <<<"$json")" = "$(jq -S .devices <<<"$replay")"
check "live table equals the replayed table" test \
    "$(tail -n +2 <<<"$table")" = "$(hbm status --snapshot "$tmp/snap.json" | tail -n +2)"
check "auto picks dcmi and says so" grep -q "^backend dcmi" <<<"$(hbm status)"

# ---- Duo cards, a listed pid that has exited ---------------------------------------------
sleep 0 &
dead=$!
wait "$dead"
holder; ctx=$last
cat >"$tmp/scenario.json" <<EOF
{"cards": [
 {"card_id": 0, "chips": [
  {"logic_id": 0, "phy_id": 0, "name": "310P3", "health": 0,
   "memory": {"total_mb": 44280, "available_mb": 14280, "hugepages_total": 15000, "hugepages_free": 0},
   "processes": [{"pid": $dead, "memory": $((28 * GIB))}]},
  {"logic_id": 1, "phy_id": 1, "name": "310P3", "health": 0,
   "memory": {"total_mb": 44280, "available_mb": 43000, "hugepages_total": 15000, "hugepages_free": 15000},
   "processes": []}]},
 {"card_id": 96, "chips": [
  {"logic_id": 2, "phy_id": 2, "name": "310P3", "health": 0,
   "memory": {"total_mb": 44280, "available_mb": 42900}, "processes": [{"pid": $ctx, "memory": $((108 * MIB))}]},
  {"logic_id": 3, "phy_id": 3, "name": "310P3", "health": 0,
   "memory": {"total_mb": 44280, "available_mb": 9000}, "processes": [{"pid": $ctx, "memory": $((33 * GIB))}]}]}]}
EOF
json=$(hbm status --backend dcmi --json)
check "Duo: 4 chips on 2 cards" test "$(jq -c '[.devices[]|[.index,.chip,.logic_id]]' <<<"$json")" = \
    '[[0,0,0],[0,1,1],[96,0,2],[96,1,3]]'
check "310P memory from the general call" test "$(jq '.devices[0].memory_used_bytes' <<<"$json")" = $((30000 * MIB))
check "310P hugepages in pages" test "$(jq -c '[.devices[0].hugepages_used,.devices[0].hugepages_total]' <<<"$json")" = '[15000,15000]'
# Live, the exited pid is ORPHANED where hbmctl sees the host's pids, UNACCOUNTED where it
# does not (the test may itself run in a container); both are then forced by root prefixes.
if [ "$(jq .host.sees_host_pids <<<"$json")" = true ]; then gone=ORPHANED; else gone=UNACCOUNTED; fi
check "live: the exited pid's chip is $gone" test "$(jq -r '.devices[0].verdict' <<<"$json")" = $gone
check "a context entry on die 0 is BUSY, pointing at die 1" grep -q "it works on NPU 96 chip 1" \
    <<<"$(jq -r '.devices[2].reason' <<<"$json")"
check "the idle die is FREE" test "$(jq -r '.devices[1].verdict' <<<"$json")" = FREE
check "no topology on 310P" test "$(jq -r '.topology' <<<"$json")" = null

make_root "$tmp/host" yes
json=$(hbm status --backend dcmi --json --root "$tmp/host")
check "host view: hbmctl sees host pids" test "$(jq .host.sees_host_pids <<<"$json")" = true
check "host view: exited pid is ORPHANED" test "$(jq -r '.devices[0].verdict' <<<"$json")" = ORPHANED
check "ORPHANED names the pid and why" grep -q "pid $dead is listed by the driver but no longer exists" \
    <<<"$(jq -r '.devices[0].reason' <<<"$json")"
check "its process entry says gone" test "$(jq -r '.devices[0].processes[0].state' <<<"$json")" = gone

make_root "$tmp/ctr" no
json=$(hbm status --backend dcmi --json --root "$tmp/ctr")
check "container view: hbmctl says it does not see host pids" test "$(jq .host.sees_host_pids <<<"$json")" = false
check "outside the view: UNACCOUNTED, not ORPHANED" test "$(jq -r '.devices[0].verdict' <<<"$json")" = UNACCOUNTED
check "UNACCOUNTED says why" grep -q "pid $dead is not in this PID namespace" \
    <<<"$(jq -r '.devices[0].reason' <<<"$json")"
check "live pids are still BUSY" test "$(jq -r '.devices[3].verdict' <<<"$json")" = BUSY

# ---- an old driver: deprecated calls only ------------------------------------------------
json=$(HBMCTL_DCMI_LIB="$HBM_FAKES/old/libdcmi.so" hbm status --backend dcmi --json --root "$tmp/host")
check "old driver: 4 chips" test "$(jq '.devices|length' <<<"$json")" = 4
check "old driver: phy id unknown is null, not 0" test "$(jq -c '[.devices[].phy_id]' <<<"$json")" = '[null,null,null,null]'
check "old driver: memory from the percentage call" test "$(jq '.devices[3].memory_total_bytes' <<<"$json")" = $((44280 * MIB))
check "old driver: hugepages unknown" test "$(jq '.devices[0].hugepages_total' <<<"$json")" = null
check "old driver: still ORPHANED" test "$(jq -r '.devices[0].verdict' <<<"$json")" = ORPHANED

# ---- 40 processes on one chip ------------------------------------------------------------
list=""
many=()
for i in $(seq 40); do holder; many+=("$last"); list+="${list:+,}{\"pid\": $last, \"memory\": $((i * 256 * MIB))}"; done
cat >"$tmp/scenario.json" <<EOF
{"cards": [{"card_id": 32768, "chips": [{"logic_id": 0, "name": "910B4",
  "hbm": {"total_mb": 32768, "used_mb": 30000}, "processes": [$list]}]}]}
EOF
json=$(hbm status --backend dcmi --json)
check "40 processes on one chip, all shown" test "$(jq '.devices[0].processes|length' <<<"$json")" = 40
check "every one of them" test "$(jq -c '[.devices[0].processes[].pid]|sort' <<<"$json")" = \
    "$(printf '%s\n' "${many[@]}" | sort -n | jq -sc .)"
check "card id 32768" test "$(jq '.devices[0].index' <<<"$json")" = 32768
check "BUSY with 40" grep -q "^40 processes listed" <<<"$(jq -r '.devices[0].reason' <<<"$json")"

# ---- no driver -----------------------------------------------------------------------------
err=$(HBMCTL_DCMI_LIB=/nonexistent/libdcmi.so hbm status --backend dcmi 2>&1 >/dev/null)
check "a missing library exits 2" test $? -eq 2
check "and names the variable" grep -q HBMCTL_DCMI_LIB <<<"$err"

finish
