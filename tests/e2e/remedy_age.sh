#!/bin/bash
# The remediation policy (docs/remediation.md) with real orphans listed by the fake DCMI:
# an orphan seen as one for less than --min-age waits and an older one is ended; the age is
# the first sighting kept in the state file, or the process's own age where no state file
# can be kept; a live holder (its parent alive) and a stuck one (state D) are never
# signalled, even named; --max-actions defers the rest (exit 1); a dry run changes nothing.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
mkdir "$tmp/dev"
for i in 0 1 2 3 4 5; do : >"$tmp/dev/davinci$i"; done
export HBMCTL_DEVICE_PATTERNS="$tmp/dev/davinci*"
state="$tmp/state/seen.json"

# scenario PID...: chip i lists the i-th pid
scenario() {
    python3 - "$tmp/scenario.json" "$@" <<'PY'
import json, sys
out, ps = sys.argv[1], [int(p) for p in sys.argv[2:]]
def chip(i, pid):
    return {"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
            "hbm": {"total_mb": 65536, "used_mb": 30000},
            "processes": [{"pid": pid, "memory": 26 * 2**30}]}]}
json.dump({"cards": [chip(i, p) for i, p in enumerate(ps)]}, open(out, "w"))
PY
}
orphan() { "$HBM_BUILD/doc_proc" orphan 7<"$tmp/dev/davinci$1"; }
gone() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1); [ "${st:-Z}" = Z ]; }
wait_gone() { for _ in $(seq 1 50); do gone "$1" && return 0; sleep 0.1; done; return 1; }
step() { jq -r ".steps[] | select(.text | test(\"pid $2 \")) | $3" "$1"; }

old=$(orphan 0)
pids+=("$old")
if [ "$(sed 's/.*) //' "/proc/$old/stat" | cut -d' ' -f2)" != 1 ]; then
    echo "SKIP: orphans are adopted by a subreaper here, not by init"
    exit 77
fi
sleep 300 7<"$tmp/dev/davinci2" &
live=$!
pids+=("$live")
scenario "$old" 0 "$live"

"$HBMCTL" clean --backend dcmi --policy --state "$state" --json >"$tmp/first.json"
check "a dry run of the policy exits 0 when every leftover is younger than --min-age" [ $? -eq 0 ]
check "the orphan first seen now waits" [ "$(step "$tmp/first.json" "$old" .waiting)" = true ]
check "its age is its first sighting" [ "$(step "$tmp/first.json" "$old" .age_basis)" = "first seen" ]
check "the reason names --min-age" grep -q "under --min-age 600s: waits" <<<"$(step "$tmp/first.json" "$old" .why)"
check "the live holder (its parent alive) is not planned at all" \
    [ -z "$(step "$tmp/first.json" "$live" .finding)" ]
check "the state file records the orphan by pid and start time" \
    jq -e ".seen | map(.[0]) | any(startswith(\"pid:$old:\"))" "$state"
check "the dry run wrote no audit log" [ ! -e "$tmp/audit.jsonl" ]

sleep 3
young=$(orphan 1)
pids+=("$young")
scenario "$old" "$young" "$live"
"$HBMCTL" clean --backend dcmi --policy --min-age 2s --state "$state" --apply --yes --grace 2s \
    --settle 0 --json >"$tmp/apply.json"
check "clean --policy --apply exits 0: the old orphan ended, the young one waits" [ $? -eq 0 ]
check "the orphan seen for over --min-age is ended" wait_gone "$old"
check "the orphan seen for less is alive" kill -0 "$young"
check "and reported as waiting" [ "$(step "$tmp/apply.json" "$young" .waiting)" = true ]
check "the live holder is alive" kill -0 "$live"
check "the audit log has the one kill, done" \
    [ "$(jq -sc '[.[] | select(.event == "clean") | [.pid, .outcome]]' "$tmp/audit.jsonl")" = "[[$old,\"done\"]]" ]

# The young orphan's sighting was kept: three seconds on, it is old enough.
sleep 3
scenario 0 "$young" "$live"
"$HBMCTL" clean --backend dcmi --policy --min-age 2s --state "$state" --apply --yes --grace 2s \
    --settle 0 >"$tmp/again.txt"
check "the next run ends the once-young orphan" wait_gone "$young"

# No state file can be kept: the process's own age stands in, and says so.
fresh=$(orphan 3)
pids+=("$fresh")
scenario "$fresh"
"$HBMCTL" clean --backend dcmi --policy --state /proc/no/such/seen.json --json \
    >"$tmp/nostate.json" 2>"$tmp/nostate.err"
check "without a state file the age is the process's own" \
    [ "$(step "$tmp/nostate.json" "$fresh" .age_basis)" = "process start" ]
check "and the run says why on stderr" grep -q "state file not kept" "$tmp/nostate.err"
sleep 2
"$HBMCTL" clean --backend dcmi --min-age 1s --state /proc/no/such/seen.json --json \
    >"$tmp/nostate2.json" 2>/dev/null
check "a process older than --min-age is then planned" \
    [ "$(step "$tmp/nostate2.json" "$fresh" .allowed)" = true ]

# The rate limit: three orphans, one action per run; the rest deferred, exit 1.
a=$(orphan 3); b=$(orphan 4); c=$(orphan 5)
pids+=("$a" "$b" "$c")
scenario 0 0 0 "$a" "$b" "$c"
"$HBMCTL" clean --backend dcmi --only orphan-holder --max-actions 1 --state "$tmp/rl.json" \
    --apply --yes --grace 2s --settle 0 --json >"$tmp/rl.json.out"
check "deferred steps leave work: exit 1" [ $? -eq 1 ]
check "one action, two deferred" \
    [ "$(jq -c '[([.steps[] | select(.done)] | length), ([.steps[] | select(.deferred)] | length)]' "$tmp/rl.json.out")" = "[1,2]" ]
sleep 0.5
alive=0
for p in "$a" "$b" "$c"; do gone "$p" || alive=$((alive + 1)); done
check "two of the three orphans are alive" [ "$alive" -eq 2 ]
"$HBMCTL" clean --backend dcmi --only orphan-holder --max-actions 5 --state "$tmp/rl.json" \
    --apply --yes --grace 2s --settle 0 >/dev/null
check "the next run takes the deferred ones" bash -c "sleep 1; ! kill -0 $a 2>/dev/null || ! kill -0 $b 2>/dev/null"

# A stuck holder: a real orphan shown in state D through a root-prefix tree (a real D state
# needs a kernel that does not return). Never a clean step; named with --pid, refused.
stuck=$(orphan 0)
pids+=("$stuck")
make_root "$tmp/root" yes
rm "$tmp/root/proc/$stuck" && mkdir "$tmp/root/proc/$stuck"
for f in /proc/"$stuck"/*; do ln -s "$f" "$tmp/root/proc/$stuck/"; done
rm "$tmp/root/proc/$stuck/stat"
sed 's/) [A-Z] /) D /' "/proc/$stuck/stat" >"$tmp/root/proc/$stuck/stat"
scenario "$stuck"
"$HBMCTL" clean --backend dcmi --root "$tmp/root" --policy --min-age 0 --state "$tmp/d.json" \
    --apply --yes --grace 1s --settle 0 --json >"$tmp/d.out"
check "the stuck holder is no policy step" [ -z "$(step "$tmp/d.out" "$stuck" .finding)" ]
"$HBMCTL" clean --backend dcmi --root "$tmp/root" --pid "$stuck" --apply --yes --grace 1s \
    --settle 0 --json >"$tmp/dn.out"
check "named with --pid it is refused: a signal does nothing in state D" \
    grep -q "stuck in the kernel (state D" <<<"$(step "$tmp/dn.out" "$stuck" .why)"
alive_now() { ! gone "$1"; }
check "and it was never signalled (alive, not a zombie)" alive_now "$stuck"
check "and stays out of the audit log" [ -z "$(jq -r "select(.pid == $stuck)" "$tmp/audit.jsonl")" ]
finish
