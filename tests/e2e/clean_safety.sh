#!/bin/bash
# clean's safety rules with real processes listed by the fake DCMI: PID 1 and hbmctl's own
# ancestors are never signalled, even when named; a live holder with a parent is nobody's
# orphan and is ended only when named with --pid; a dry run changes nothing; --apply refuses
# to act on a snapshot; the audit log records what was done.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
sleep 300 &
worker=$!
pids+=("$worker")
python3 - "$tmp/scenario.json" $$ "$worker" <<'PY'
import json, sys
out, me, worker = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
procs = [{"pid": 1, "memory": 2**30}, {"pid": me, "memory": 2**30},
         {"pid": worker, "memory": 20 * 2**30}]
json.dump({"cards": [{"card_id": 0, "chips": [{"logic_id": 0, "phy_id": 0, "name": "910B3",
           "health": "OK", "hbm": {"total_mb": 65536, "used_mb": 30000}, "processes": procs}]}]},
          open(out, "w"))
PY

# --only orphan-holder: this test is about holders; the host's own stale shared memory, if
# any, is neither this test's to judge nor to remove.
"$HBMCTL" clean --backend dcmi --only orphan-holder --json >"$tmp/plain.json"
check "live holders with a parent are nobody's orphans: nothing planned" \
    [ "$(jq '.steps | length' "$tmp/plain.json")" -eq 0 ]

"$HBMCTL" clean --backend dcmi --only orphan-holder --pid 1 --pid $$ --pid "$worker" --json >"$tmp/dry.json"
check "a dry run naming pids exits 1 (work to do)" [ $? -eq 1 ]
check "PID 1 is kept even when named" \
    bash -c "jq -r '.steps[] | select(.text | test(\"pid 1 \")) | .why' '$tmp/dry.json' | grep -q 'init: never signalled'"
check "hbmctl's ancestor (this script) is kept even when named" \
    bash -c "jq -r '.steps[] | select(.text | test(\"pid $$ \")) | .why' '$tmp/dry.json' | grep -q 'ancestors'"
check "the named worker is planned" \
    [ "$(jq -r ".steps[] | select(.text | test(\"pid $worker \")) | .allowed" "$tmp/dry.json")" = true ]
check "the dry run left the worker alive" kill -0 "$worker"
check "the dry run wrote no audit log" [ ! -e "$tmp/audit.jsonl" ]

"$HBMCTL" clean --backend dcmi --only orphan-holder --pid 1 --pid $$ --pid "$worker" --apply --yes --grace 5s --settle 1s \
    >"$tmp/apply.txt"
check "clean --apply exits 1: the two steps it kept (PID 1, its ancestor) are left undone" [ $? -eq 1 ]
check "the output says which steps the safety rules kept" grep -q "2 kept by safety rules" "$tmp/apply.txt"
check "the audit log has the whole command line, --pid and --grace included" \
    jq -e "select(.command == \"hbmctl clean --backend dcmi --only orphan-holder --pid 1 --pid $$ --pid $worker --apply --yes --grace 5s --settle 1s\")" \
    "$tmp/audit.jsonl"
ended=0
for _ in $(seq 1 50); do
    st=$(sed 's/.*) //' "/proc/$worker/stat" 2>/dev/null | cut -d' ' -f1)
    if [ -z "$st" ] || [ "$st" = Z ]; then ended=1; break; fi
    sleep 0.1
done
check "the named worker was ended" [ "$ended" -eq 1 ]
check "the audit log names the worker's kill" \
    [ "$(jq -r "select(.pid == $worker) | .outcome" "$tmp/audit.jsonl")" = done ]
check "the audit log never names PID 1" [ "$(jq -r 'select(.pid == 1)' "$tmp/audit.jsonl" | grep -c .)" -eq 0 ]

"$HBMCTL" snapshot --backend dcmi >"$tmp/snap.json"
"$HBMCTL" clean --snapshot "$tmp/snap.json" --apply --yes 2>"$tmp/snap.err"
check "--apply refuses a snapshot (exit 2)" [ $? -eq 2 ]
check "and says why" grep -q "live host only" "$tmp/snap.err"
"$HBMCTL" clean --snapshot "$tmp/snap.json" >/dev/null
check "a dry run from a snapshot works" [ $? -le 1 ]
"$HBMCTL" clean --pid abc 2>/dev/null
check "a bad --pid is exit 2" [ $? -eq 2 ]
finish
