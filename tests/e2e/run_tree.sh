#!/bin/bash
# The escape tree (a worker that double-forks and setsids, one that ignores SIGTERM, a plain
# one) under `hbmctl run`: after SIGTERM to hbmctl nothing survives, and hbmctl exits soon
# after the grace period, on the cgroup path and with --no-cgroup.
. "$(dirname "$0")/common.bash"
run_scratch

GRACE=2

variant() { # NAME [OPTIONS...]
    local name=$1
    shift
    local pidfile=$T/pids.$name
    LOG=$T/log.$name
    "$HBMCTL" run --grace ${GRACE}s "$@" -- "$H/run_escape" "$pidfile" 2>"$LOG" &
    local hp=$!
    BGPIDS+=("$hp")
    wait_file "$pidfile" 30 || fail "$name: the escape tree did not start"
    local p st n=0
    while read -r p st; do
        same_alive "$p" "$st" || fail "$name: worker $p is not running before the stop"
        n=$((n + 1))
    done <"$pidfile"
    [ "$n" = 4 ] || fail "$name: expected 4 processes in $pidfile, got $n"
    # the setsid worker really left the group and the session
    local esc
    esc=$(sed -n 2p "$pidfile" | cut -d' ' -f1)
    [ "$(sed 's/.*) //' /proc/$esc/stat | awk '{print $4}')" = "$esc" ] ||
        fail "$name: the double-forked worker is not a session leader"
    if [ "$name" = cgroup ]; then
        grep -q hbmctl-run "/proc/$esc/cgroup" ||
            fail "$name: the escaped worker is not in hbmctl's cgroup leaf: $(cat /proc/$esc/cgroup)"
    fi

    local t0
    t0=$(now)
    kill -TERM "$hp"
    wait "$hp"
    local rc=$?
    local took
    took=$(elapsed_since "$t0")
    local survivors=0
    while read -r p st; do
        if same_alive "$p" "$st"; then
            echo "survivor: $p $(cat /proc/$p/stat 2>/dev/null)" >&2
            survivors=$((survivors + 1))
        fi
    done <"$pidfile"
    [ "$survivors" = 0 ] || fail "$name: $survivors processes survived"
    [ "$rc" = 143 ] || fail "$name: exit status $rc, expected 143 (child killed by SIGTERM)"
    # the SIGTERM-ignoring worker holds the stop for the whole grace period, no longer
    le $((GRACE - 1)) "$took" || fail "$name: stopped in ${took}s, before the grace period"
    le "$took" $((GRACE + 20)) || fail "$name: took ${took}s, grace was ${GRACE}s"
    grep -q 'summary: .*3 ended after SIGTERM, 1 killed, 0 left' "$LOG" ||
        fail "$name: summary does not say 3 ended after SIGTERM, 1 killed, 0 left"
    [ "$(grep -c 'summary:' "$LOG")" = 1 ] || fail "$name: not exactly one summary line"
    echo "ok: $name: 0 survivors, exit $rc after ${took}s (grace ${GRACE}s)"
}

if why=$(cgroup2_writable); then
    variant cgroup
    grep -q 'in cgroup ' "$T/log.cgroup" || fail "cgroup: writable cgroup2 but hbmctl did not use it"
else
    echo "SKIP: cgroup variant: $why"
fi
variant nocgroup --no-cgroup
grep -q 'in cgroup ' "$T/log.nocgroup" && fail "nocgroup: --no-cgroup still made a cgroup"

# the child's own exit also ends the rest: the main process dies, its workers must follow
LOG=$T/log.childexit
pidfile=$T/pids.childexit
"$HBMCTL" run --grace ${GRACE}s --no-cgroup -- "$H/run_escape" "$pidfile" 2>"$LOG" &
hp=$!
BGPIDS+=("$hp")
wait_file "$pidfile" 30 || fail "childexit: the escape tree did not start"
main=$(head -n1 "$pidfile" | cut -d' ' -f1)
kill -KILL "$main"
wait "$hp"
rc=$?
[ "$rc" = 137 ] || fail "childexit: exit $rc, expected 137 (child killed by SIGKILL)"
while read -r p st; do
    same_alive "$p" "$st" && fail "childexit: $p survived the child's death"
done <"$pidfile"
echo "ok: childexit: workers ended after the main process was killed, exit $rc"

# hbmctl itself killed outright (SIGKILL cannot be caught): the child still gets SIGTERM
# (parent-death signal), so the server's own orderly shutdown runs
LOG=$T/log.hbmkilled
"$HBMCTL" run --no-cgroup -- sh -c 'trap "echo TERM >\"\$0\"; exit 0" TERM; echo up >"$1"
    while :; do sleep 0.05; done' "$T/term" "$T/up" 2>"$LOG" &
hp=$!
BGPIDS+=("$hp")
wait_file "$T/up" 30 || fail "hbmkilled: the child did not start"
kill -KILL "$hp"
wait "$hp" 2>/dev/null
wait_file "$T/term" 30 || fail "hbmkilled: the child got no SIGTERM when hbmctl was killed"
echo "ok: hbmctl killed with SIGKILL: the child got SIGTERM"
