#!/bin/bash
# Real device holders behind the fake DCMI: an orphan (its parent exited; it ignores
# SIGTERM), a zombie (its parent never reaps it) and a process in D state (a vfork parent). doctor names both with evidence; a dry
# run changes nothing; clean --apply ends the orphan (SIGTERM, grace, SIGKILL through a
# pidfd), leaves the zombie and its parent alone, audits, waits for the driver to release
# the memory and reports it per device.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
export HBMCTL_AUDIT_LOG="$tmp/log/audit.jsonl"
GIB=1073741824

orphan=$("$HBM_BUILD/doc_proc" orphan ignore-term)
pids+=("$orphan")
read -r zombie zparent < <("$HBM_BUILD/doc_proc" zombie)
pids+=("$zparent")
read -r dpid dchild < <("$HBM_BUILD/doc_proc" dstate)
pids+=("$dpid" "$dchild")
state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
ppid() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f2; }
for _ in $(seq 1 50); do [ "$(state "$zombie")" = Z ] && break; sleep 0.1; done
if [ "$(ppid "$orphan")" != 1 ]; then
    echo "SKIP: orphans are adopted by subreaper pid $(ppid "$orphan") here, not by init"
    exit 77
fi

scenario() { # FILE ORPHAN ZOMBIE DSTATE: the orphan's chip lists it while ORPHAN is not 0
python3 - "$@" <<'PY'
import json, sys
out, orphan, zombie, dstate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def chip(i, used_mb, procs):
    return {"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
            "hbm": {"total_mb": 65536, "used_mb": used_mb}, "processes": procs}]}
json.dump({"driver_version": "24.1.rc2", "cards": [
    chip(0, 30000, [{"pid": orphan, "memory": 26 * 2**30}]) if orphan else chip(0, 3400, []),
    chip(1, 4500, [{"pid": zombie, "memory": 1 * 2**30}]),
    chip(2, 8000, [{"pid": dstate, "memory": 4 * 2**30}]),
    chip(3, 3400, [])]}, open(out + ".new", "w"))
PY
mv "$1.new" "$1"
}
scenario "$tmp/scenario.json" "$orphan" "$zombie" "$dpid"

"$HBMCTL" doctor --backend dcmi --json >"$tmp/doctor.json"
check "doctor exits 1 on problems" [ $? -eq 1 ]
j() { jq -r "$1" "$tmp/doctor.json"; }
check "orphan-holder names the orphan" \
    [ "$(j ".findings[] | select(.id == \"orphan-holder\") | .evidence.process.pid")" = "$orphan" ]
check "orphan-holder is critical on device 0" \
    [ "$(j '.findings[] | select(.id == "orphan-holder") | "\(.severity) \(.device)"')" = "critical 0" ]
check "orphan-holder's action is a kill of that pid" \
    [ "$(j '.findings[] | select(.id == "orphan-holder") | "\(.action.kind) \(.action.pid)"')" = "kill $orphan" ]
check "zombie-holder names the zombie" \
    [ "$(j ".findings[] | select(.id == \"zombie-holder\") | .evidence.process.pid")" = "$zombie" ]
zremedy=$(j '.findings[] | select(.id == "zombie-holder") | .remedy')
has() { grep -q -- "$2" <<<"$1"; }
check "zombie-holder's remedy names the parent that must reap it: $zremedy" \
    has "$zremedy" "pid $zparent (doc_proc, .*) has not reaped it"
check "zombie-holder's remedy says to end or restart that parent" \
    has "$zremedy" "End or restart pid $zparent"
check "zombie-holder's evidence has the parent's pid, name and start time" \
    [ "$(j '.findings[] | select(.id == "zombie-holder") | .evidence.parent | "\(.pid) \(.name) \(.starttime)"')" = \
      "$zparent doc_proc $(sed 's/.*) //' "/proc/$zparent/stat" | cut -d' ' -f20)" ]
# The parent is one more host holder in a snapshot: a replay names it the same way.
"$HBMCTL" snapshot --backend dcmi -o "$tmp/snap.json"
check "the snapshot carries the zombie's parent as a holder" \
    [ "$(jq "[.host.holders[] | select(.pid == $zparent)] | length" "$tmp/snap.json")" -eq 1 ]
"$HBMCTL" doctor --snapshot "$tmp/snap.json" --json >"$tmp/replay.json"
check "doctor --snapshot gives the same zombie remedy" \
    [ "$(jq -r '.findings[] | select(.id == "zombie-holder") | .remedy' "$tmp/replay.json")" = "$zremedy" ]
check "stuck-holder names the D-state process and where it waits" \
    [ "$(j '.findings[] | select(.id == "stuck-holder") | "\(.evidence.process.pid) \(.evidence.process.proc_state)"')" = "$dpid D" ]
check "stuck-holder's evidence has the wait channel and the age" \
    [ "$(j '.findings[] | select(.id == "stuck-holder") | (.evidence.process.wchan != null and .evidence.process.age_seconds >= 0)')" = true ]
check "stuck-holder has no action" \
    [ "$(j '.findings[] | select(.id == "stuck-holder") | .action')" = "null" ]
check "zombie-holder has no action" \
    [ "$(j '.findings[] | select(.id == "zombie-holder") | .action')" = "null" ]
check "the verdict line comes first" \
    bash -c "'$HBMCTL' doctor --backend dcmi | head -1 | grep -q '^[0-9]* problems*: .*critical'"

"$HBMCTL" clean --backend dcmi --json >"$tmp/dry.json"
check "a dry run with work to do exits 1" [ $? -eq 1 ]
check "the dry run plans the kill" \
    [ "$(jq -r ".steps[] | select(.action == \"kill\") | .allowed" "$tmp/dry.json")" = "true" ]
check "the dry run leaves the orphan alive" [ "$(state "$orphan")" = S ]
check "the dry run writes no audit record" [ ! -e "$tmp/log/audit.jsonl" ]

# The driver releases the memory once the orphan has exited (as a real one does, a moment
# later): clean must wait for that (--settle) and report it.
(
    for _ in $(seq 1 600); do
        st=$(state "$orphan")
        if [ -z "$st" ] || [ "$st" = Z ]; then
            scenario "$tmp/scenario.json" 0 "$zombie" "$dpid"
            break
        fi
        sleep 0.05
    done
) &
watcher=$!
pids+=("$watcher")
"$HBMCTL" clean --backend dcmi --apply --yes --grace 1s --settle 10s --json >"$tmp/apply.json"
rc=$?
check "clean --apply finishes (rc $rc)" [ "$rc" -eq 0 ]
st=$(state "$orphan")
check "the orphan is gone (state '$st')" bash -c "[ -z '$st' ] || [ '$st' = Z ]"
check "the step says SIGKILL followed the ignored SIGTERM" \
    bash -c "jq -r '.steps[] | select(.action == \"kill\") | .result' '$tmp/apply.json' | grep -q 'SIGKILL sent, it exited'"
check "the zombie's parent is untouched" [ "$(state "$zparent")" = S ]
check "memory is reported per device after clean" \
    [ "$(jq '.released | length' "$tmp/apply.json")" -eq 4 ]
check "device 0's memory before clean is in the report" \
    [ "$(jq '.released[] | select(.device == 0) | .before_bytes' "$tmp/apply.json")" -eq $((30000 * 1048576)) ]
check "device 0's released memory is reported" \
    [ "$(jq '.released[] | select(.device == 0) | .released_bytes' "$tmp/apply.json")" -eq $(((30000 - 3400) * 1048576)) ]
check "device 3 released nothing" \
    [ "$(jq '.released[] | select(.device == 3) | .released_bytes' "$tmp/apply.json")" -eq 0 ]
check "the D-state process was not touched" [ "$(state "$dpid")" = D ]
check "the audit log has a start record with the whole command line" \
    [ "$(jq -r 'select(.event == "clean-start") | .command' "$tmp/log/audit.jsonl")" = "hbmctl clean --backend dcmi --apply --yes --grace 1s --settle 10s --json" ]
check "the audit log records the kill as done" \
    [ "$(jq -r "select(.event == \"clean\" and .pid == $orphan) | .outcome" "$tmp/log/audit.jsonl")" = "done" ]
check "every audit line is one JSON object with a time" \
    bash -c "jq -e -s 'all(.[]; has(\"time\") and has(\"host\") and has(\"uid\"))' '$tmp/log/audit.jsonl' >/dev/null"

"$HBMCTL" doctor --backend dcmi --json >"$tmp/after.json"
check "afterwards no orphan is left" \
    [ "$(jq '[.findings[] | select(.id == "orphan-holder")] | length' "$tmp/after.json")" -eq 0 ]
check "and the zombie is still reported" \
    [ "$(jq '[.findings[] | select(.id == "zombie-holder")] | length' "$tmp/after.json")" -eq 1 ]
finish
