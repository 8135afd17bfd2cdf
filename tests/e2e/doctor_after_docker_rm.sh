#!/bin/bash
# The scene after `docker rm -f` (examples/310P3-after-docker-rm.snapshot.json): after `docker rm -f`, a
# vLLM EngineCore outlives its container holding ~26 GB of a 310P3, and npu-smi shows
# Hugepages-Usage at 100%. doctor must say truthfully that the column counts the card's own
# memory held by that process (not host hugepages), that ending the process is the remedy
# (not ipcrm), and clean must plan exactly that kill. The EngineCore inherited the dead API
# server's `--port 8000` in its command line: it is not the server, so no port finding blames
# it. Human output (doctor, pick's refusals) fits 100 columns.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snap="$HBM_SRC/examples/310P3-after-docker-rm.snapshot.json"
pid=2871044
"$HBMCTL" doctor --snapshot "$snap" --json >"$tmp/d.json"
check "doctor exits 1 on the scene after docker rm -f" [ $? -eq 1 ]
f() { jq -r ".findings[] | select(.id == \"$1\") | $2" "$tmp/d.json"; }
check "the Hugepages-Usage column is explained as device memory" \
    bash -c "jq -r '.findings[] | select(.id == \"device-hugepages-full\") | .summary' '$tmp/d.json' | grep -q \"card's own memory held by its processes, not host hugepages\""
check "its remedy is ending the process, not ipcrm" \
    bash -c "jq -r '.findings[] | select(.id == \"device-hugepages-full\") | .remedy' '$tmp/d.json' | grep -q '^Only ending the process that holds the card.s memory lowers it'"
check "it lists the holder pid" \
    [ "$(f device-hugepages-full '.evidence.holders[0].pid')" = "$pid" ]
check "host hugepages are not blamed" \
    [ "$(jq '[.findings[] | select(.id == "hugepages-exhausted")] | length' "$tmp/d.json")" -eq 0 ]
id=$(jq -r ".findings[] | select(.evidence.process.pid == $pid) | .id" "$tmp/d.json")
check "the EngineCore outliving its container is an orphan-holder (got '$id'; needs the host process found by pid in the snapshot)" \
    [ "$id" = orphan-holder ]
check "no port finding for the orphaned worker (its server is gone; orphan-holder covers it)" \
    [ "$(jq '[.findings[] | select(.id | startswith("port-"))] | length' "$tmp/d.json")" -eq 0 ]
check "three problems: the orphan, the card's memory pool, the stale segment" \
    [ "$(jq -c '[.findings[].id]' "$tmp/d.json")" = '["orphan-holder","device-hugepages-full","stale-sysv-shm"]' ]
"$HBMCTL" clean --snapshot "$snap" --json >"$tmp/c.json"
check "clean plans the kill of that pid" \
    [ "$(jq -r ".steps[] | select(.action == \"kill\") | .text" "$tmp/c.json" | grep -c "pid $pid ")" -eq 1 ]
check "no step removes the live CANN log segment" \
    [ "$(jq '[.steps[] | select(.action == "sysv-rmid" and (.text | test("0x474f4c46")))] | length' "$tmp/c.json")" -eq 0 ]
"$HBMCTL" doctor --snapshot "$snap" | head -1 >"$tmp/line"
check "the verdict comes first" grep -q "^[0-9]* problems: " "$tmp/line"
width() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }
"$HBMCTL" doctor --snapshot "$snap" >"$tmp/d.txt"
check "doctor's human output fits 100 columns (got $(width "$tmp/d.txt"))" fits_width "$tmp/d.txt"
check "the holders evidence is one field per line item, not a JSON blob" \
    grep -q "holders\[0\].pid=$pid" "$tmp/d.txt"
"$HBMCTL" pick 4 --snapshot "$snap" >/dev/null 2>"$tmp/p.err"
check "pick 4 exits 1 (one usable device)" [ $? -eq 1 ]
check "pick's refusals fit 100 columns (got $(width "$tmp/p.err"))" fits_width "$tmp/p.err"
check "the orphaned device is refused with its verdict" grep -q '^  device 0 *ORPHANED: ' "$tmp/p.err"
"$HBMCTL" pick 1 --snapshot "$snap" >"$tmp/p1.out" 2>"$tmp/p1.err"
check "pick 1 exits 0 and prints the variable" grep -qx 'ASCEND_RT_VISIBLE_DEVICES=1' "$tmp/p1.out"
check "pick 1 prints nothing on stderr (got '$(cat "$tmp/p1.err")')" [ ! -s "$tmp/p1.err" ]
finish
