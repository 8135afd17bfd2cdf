#!/bin/bash
# The seed 000 scene (examples/seed000-broken-host.snapshot.json): after `docker rm -f`, a
# vLLM EngineCore outlives its container holding ~26 GB of a 310P3, and npu-smi shows
# Hugepages-Usage at 100%. doctor must say truthfully that the column counts the card's own
# memory held by that process (not host hugepages), that ending the process is the remedy
# (not ipcrm), and clean must plan exactly that kill.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snap="$HBM_SRC/examples/seed000-broken-host.snapshot.json"
pid=2871044
"$HBMCTL" doctor --snapshot "$snap" --json >"$tmp/d.json"
check "doctor exits 1 on the seed 000 scene" [ $? -eq 1 ]
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
"$HBMCTL" clean --snapshot "$snap" --json >"$tmp/c.json"
check "clean plans the kill of that pid" \
    [ "$(jq -r ".steps[] | select(.action == \"kill\") | .text" "$tmp/c.json" | grep -c "pid $pid ")" -eq 1 ]
check "no step removes the live CANN log segment" \
    [ "$(jq '[.steps[] | select(.action == "sysv-rmid" and (.text | test("0x474f4c46")))] | length' "$tmp/c.json")" -eq 0 ]
"$HBMCTL" doctor --snapshot "$snap" | head -1 >"$tmp/line"
check "the verdict comes first" grep -q "^[0-9]* problems: " "$tmp/line"
finish
