#!/bin/bash
# The remediation policy (docs/remediation.md) with real orphans listed by the fake DCMI and
# real stale shared memory (in the test's own IPC namespace and /dev/shm): a leftover seen as
# one for less than --min-age waits and an older one is ended or removed; the age is the first
# sighting kept in the state file, or the process's own age where no state file can be kept;
# a live holder (its parent alive) and a stuck one (state D) are never signalled, even named;
# --max-actions defers the rest (exit 1); a dry run changes nothing.
set -u
. "$HBM_SRC/tests/e2e/lib/remedy.bash"
remedy_private_shm "$0" "$@"
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
remedy_devices
state="$tmp/state/seen.json"
scenario() { remedy_scenario "$@"; }
gone() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1); [ "${st:-Z}" = Z ]; }
wait_gone() { remedy_gone "$1"; }
step() { jq -r ".steps[] | select(.text | test(\"pid $2 \")) | $3" "$1"; }

remedy_orphan old 0
sleep 300 7<"$tmp/accel/davinci2" &
live=$!
pids+=("$live")
scenario "$old" 0 "$live"
# Stale shared memory in this test's own IPC namespace and /dev/shm: a SysV segment whose
# creator died and a /dev/shm object nobody holds.
seg=$("$HBM_BUILD/doc_shm" sysv-dead 65536)
: >/dev/shm/sem.stale

"$HBMCTL" clean --backend dcmi --policy --state "$state" --json >"$tmp/first.json"
check "a dry run of the policy exits 0 when every leftover is younger than --min-age" [ $? -eq 0 ]
check "the orphan first seen now waits" [ "$(step "$tmp/first.json" "$old" .waiting)" = true ]
check "its age is its first sighting" [ "$(step "$tmp/first.json" "$old" .age_basis)" = "first seen" ]
check "the reason names --min-age" grep -q "under --min-age 600s: waits" <<<"$(step "$tmp/first.json" "$old" .why)"
check "the live holder (its parent alive) is not planned at all" \
    [ -z "$(step "$tmp/first.json" "$live" .finding)" ]
check "the state file records the orphan by pid and start time" \
    jq -e ".seen | map(.[0]) | any(startswith(\"pid:$old:\"))" "$state"
check "the stale segment and /dev/shm object wait too" \
    [ "$(jq -c '[.steps[] | select(.action != "kill") | .waiting]' "$tmp/first.json")" = "[true,true]" ]
check "the dry run wrote no audit log" [ ! -e "$tmp/audit.jsonl" ]

sleep 3
remedy_orphan young 1
scenario "$old" "$young" "$live"
# A process whose files and mappings cannot be read (some sandboxes' init) might hold the
# /dev/shm object: then it is kept, with that reason (as in e2e_clean_shm).
uninspectable=""
for d in /proc/[0-9]*; do
    if ! head -c1 "$d/maps" >/dev/null 2>&1 && [ -e "$d/maps" ]; then
        uninspectable=${d#/proc/}; break
    fi
done
"$HBMCTL" clean --backend dcmi --policy --min-age 2s --state "$state" --apply --yes --grace 2s \
    --settle 0 --json >"$tmp/apply.json"
rc=$?
if [ -z "$uninspectable" ]; then
    check "clean --policy --apply exits 0: the old leftovers ended, the young one waits" [ $rc -eq 0 ]
    check "the /dev/shm object seen for over --min-age is removed" [ ! -e /dev/shm/sem.stale ]
else
    echo "note: pid $uninspectable cannot be inspected here"
    check "clean --policy --apply exits 1: the /dev/shm object was kept" [ $rc -eq 1 ]
    check "because pid $uninspectable cannot be inspected" \
        grep -q "cannot inspect pid $uninspectable" <(jq -r '.steps[].result // empty' "$tmp/apply.json")
fi
check "the orphan seen for over --min-age is ended" wait_gone "$old"
check "the orphan seen for less is alive" kill -0 "$young"
check "and reported as waiting" [ "$(step "$tmp/apply.json" "$young" .waiting)" = true ]
check "the live holder is alive" kill -0 "$live"
check "the segment seen for over --min-age is removed" bash -c "! ipcs -m | awk '\$2 == $seg' | grep -q ."
check "the audit log has the one kill, done" \
    [ "$(jq -sc '[.[] | select(.event == "clean" and .action == "kill") | [.pid, .outcome]]' "$tmp/audit.jsonl")" = "[[$old,\"done\"]]" ]

# The young orphan's sighting was kept: three seconds on, it is old enough.
sleep 3
scenario 0 "$young" "$live"
"$HBMCTL" clean --backend dcmi --policy --min-age 2s --state "$state" --apply --yes --grace 2s \
    --settle 0 >"$tmp/again.txt"
check "the next run ends the once-young orphan" wait_gone "$young"

# No state file can be kept: the process's own age stands in, and says so.
remedy_orphan fresh 3
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
remedy_orphan a 3
remedy_orphan b 4
remedy_orphan c 5
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
all_gone() { for p in "$@"; do remedy_gone "$p" || return 1; done; }
check "the next run takes the deferred ones: all three ended" all_gone "$a" "$b" "$c"

# A stuck holder: a real orphan shown in state D through a root-prefix tree (a real D state
# needs a kernel that does not return). Never a clean step; named with --pid, refused.
remedy_orphan stuck 0
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
