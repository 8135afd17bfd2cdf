#!/bin/bash
# hbmctl run as PID 1 of a new PID namespace (as in a container): orphaned zombies are
# reaped and signals reach the child.
. "$(dirname "$0")/common.bash"
run_scratch

if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
    echo "SKIP: cannot create a PID namespace here (unshare --pid needs root or user namespaces)"
    exit 0
fi

# Control: the zombie factory as PID 1 itself never reaps its adopted orphans, so the
# check it makes must fail there; otherwise the real test below would prove nothing.
unshare --pid --fork --mount-proc "$H/run_zombies" 3 2 >"$T/control" 2>&1
[ $? = 1 ] || fail "control: zombies were not detected without a reaping init: $(cat "$T/control")"
echo "ok: control: without a reaping PID 1 zombies stay ($(cat "$T/control"))"

LOG=$T/log.zombies
unshare --pid --fork --mount-proc "$HBMCTL" run -- "$H/run_zombies" 5 >"$T/out" 2>"$LOG"
rc=$?
[ "$rc" = 0 ] || fail "zombies left with hbmctl as PID 1: $(cat "$T/out")"
echo "ok: hbmctl as PID 1 reaps orphaned zombies ($(cat "$T/out"))"

# Signals: USR1, HUP, WINCH reach the child (forwarded), then TERM ends it with its status.
LOG=$T/log.signals
mark=$T/mark
# job control, so the background job does not start with SIGINT and SIGQUIT ignored
set -m
unshare --pid --fork --mount-proc "$HBMCTL" run --grace 5s -- bash -c '
    for s in USR1 HUP WINCH QUIT USR2 INT; do trap "echo $s >>$0" $s; done
    trap "echo TERM >>$0; exit 7" TERM
    echo ready >>$0
    while :; do sleep 0.05 & wait $!; done' "$mark" 2>"$LOG" &
up=$!
BGPIDS+=("$up")
wait_file "$mark" 30 || fail "the child did not start"
hp=
for ((i = 0; i < 100; i++)); do
    hp=$(pgrep -P "$up" | head -n1)
    [ -n "$hp" ] && break
    sleep 0.1
done
[ -n "$hp" ] || fail "cannot find hbmctl (child of unshare $up)"
[ "$(sed -n 's/^NSpid:\t//p' /proc/$hp/status | awk '{print $NF}')" = 1 ] ||
    fail "hbmctl is not PID 1 in its namespace"
for s in USR1 HUP WINCH QUIT USR2; do
    kill -"$s" "$hp"
    for ((i = 0; i < 100; i++)); do grep -qx "$s" "$mark" && break; sleep 0.1; done
    grep -qx "$s" "$mark" || fail "SIG$s did not reach the child: $(tr '\n' ' ' <"$mark")"
done
kill -TERM "$hp"
wait "$up"
rc=$?
grep -qx TERM "$mark" || fail "SIGTERM did not reach the child"
[ "$rc" = 7 ] || fail "exit $rc, expected the child's 7"
echo "ok: USR1 HUP WINCH QUIT USR2 TERM forwarded to the child; exit $rc"
