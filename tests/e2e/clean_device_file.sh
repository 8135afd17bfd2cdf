#!/bin/bash
# The device-file proof (docs/safety.md, "Proof before a kill"): a process with device memory
# keeps the accelerator's device file open, so a pid the driver lists that holds none, while
# another process visibly holds one, is not the holder and is never signalled, named with
# --pid or not. Where no process on the host shows a device file, the other proofs decide.
# Two real orphans; the "device files" are files under $tmp matched by
# HBMCTL_DEVICE_PATTERNS, which the holder keeps open as a real one keeps /dev/davinciN.
# They are not under a directory named dev: the default patterns find davinci* below any
# .../dev/ (a driver container's nodes), so every test running beside this one would see
# them, and its own holders, which hold no device file, would be refused.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
mkdir "$tmp/accel"
: >"$tmp/accel/davinci0"
: >"$tmp/accel/davinci1"
export HBMCTL_DEVICE_PATTERNS="$tmp/accel/davinci*"

holder=$("$HBM_BUILD/doc_proc" orphan 7<"$tmp/accel/davinci0")
pids+=("$holder")
stranger=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$stranger")
if [ "$(sed 's/.*) //' "/proc/$holder/stat" | cut -d' ' -f2)" != 1 ]; then
    echo "SKIP: orphans are adopted by a subreaper here, not by init"
    exit 77
fi
python3 - "$tmp/scenario.json" "$holder" "$stranger" <<'PY'
import json, sys
out, holder, stranger = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def chip(i, pid):
    return {"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
            "hbm": {"total_mb": 65536, "used_mb": 30000},
            "processes": [{"pid": pid, "memory": 26 * 2**30}]}]}
json.dump({"cards": [chip(0, holder), chip(1, stranger)]}, open(out, "w"))
PY

step() { jq -r ".steps[] | select(.text | test(\"pid $2 \")) | $3" "$1"; }
"$HBMCTL" clean --backend dcmi --json >"$tmp/dry.json"
check "the orphan holding its device file is planned" [ "$(step "$tmp/dry.json" "$holder" .allowed)" = true ]
check "the listed pid holding no device file is kept" [ "$(step "$tmp/dry.json" "$stranger" .allowed)" = false ]
why=$(step "$tmp/dry.json" "$stranger" .why)
check "the reason names both pids and the file the holder has open: $why" \
    grep -q "pid $stranger holds no accelerator device file, while pid $holder holds $tmp/accel/davinci0" <<<"$why"

"$HBMCTL" clean --backend dcmi --pid "$stranger" --json >"$tmp/named.json"
check "naming it with --pid does not lift the refusal" \
    [ "$(jq "[.steps[] | select(.text | test(\"pid $stranger \")) | .allowed] | any" "$tmp/named.json")" = false ]

"$HBMCTL" snapshot --backend dcmi >"$tmp/snap.json"
check "the snapshot records that the processes' open files were read" \
    [ "$(jq "[.host.holders[] | select(.pid == $holder or .pid == $stranger) | .fds_read] | all" "$tmp/snap.json")" = true ]
"$HBMCTL" clean --snapshot "$tmp/snap.json" --json >"$tmp/replay.json"
check "a dry run from that snapshot keeps the same step" \
    [ "$(step "$tmp/replay.json" "$stranger" .allowed)" = false ]

HBMCTL_DEVICE_PATTERNS="$tmp/none*" "$HBMCTL" clean --backend dcmi --json >"$tmp/unseen.json"
check "where no process shows a device file, the other proofs decide: both planned" \
    [ "$(jq '[.steps[] | select(.action == "kill") | .allowed] | all and length == 2' "$tmp/unseen.json")" = true ]

"$HBMCTL" clean --backend dcmi --apply --yes --grace 2s --settle 1s >"$tmp/apply.txt"
check "clean --apply exits 1: the refused step stays undone" [ $? -eq 1 ]
for _ in $(seq 1 50); do [ -d "/proc/$holder" ] || break; sleep 0.1; done
check "the holder was ended" [ ! -d "/proc/$holder" ]
check "the listed pid without a device file is alive" kill -0 "$stranger"
check "the audit names the holder's kill only" \
    [ "$(jq -r 'select(.action == "kill") | .pid' "$tmp/audit.jsonl" | sort -u | tr '\n' ' ')" = "$holder " ]
finish
