#!/bin/bash
# Exit status contract of `hbmctl run` (docs/run.md): the child's status, 128+N when signal
# N killed it, 125 when hbmctl fails, 126 not executable, 127 not found.
. "$(dirname "$0")/common.bash"
run_scratch

expect() { # WANT DESCRIPTION COMMAND...
    local want=$1 what=$2
    shift 2
    LOG=$T/log
    "$HBMCTL" run --grace 2s "$@" 2>"$LOG" </dev/null
    local rc=$?
    [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want"
    echo "ok: $what -> $rc"
}

expect 0 "child exits 0" -- "$H/run_exit" 0
expect 3 "child exits 3" -- "$H/run_exit" 3
expect 255 "child exits 255" -- "$H/run_exit" 255
expect 137 "child killed by SIGKILL" -- "$H/run_exit" -s KILL
expect 139 "child killed by SIGSEGV" -- "$H/run_exit" -s SEGV
expect 143 "child killed by SIGTERM" -- "$H/run_exit" -s TERM
expect 3 "child exits 3 (--no-cgroup --setsid)" --no-cgroup --setsid -- "$H/run_exit" 3
expect 127 "command not found" -- "$T/no-such-command"
expect 127 "command not found in PATH" -- hbm-no-such-command-anywhere
grep -q 'not found' "$T/log" || fail "127 without saying 'not found'"
expect 126 "a directory" -- /etc
printf '#!/bin/sh\nexit 0\n' >"$T/noexec"
chmod 0644 "$T/noexec"
expect 126 "not executable" -- "$T/noexec"
expect 125 "unknown option" --no-such-option -- "$H/run_exit" 0
expect 125 "bad --grace" --grace soon -- "$H/run_exit" 0
expect 125 "bad --restart" --restart sometimes -- "$H/run_exit" 0
expect 125 "no command" --grace 1s

# the child's arguments are its own, even ones that look like hbmctl's
LOG=$T/log
"$HBMCTL" run -- sh -c 'test "$1" = --grace && exit 42' sh --grace 2>"$LOG"
rc=$?
[ "$rc" = 42 ] || fail "child arguments were eaten: exit $rc"
echo "ok: child arguments passed through"

# on-failure restarts within the budget, then gives up with the last status
LOG=$T/log.restart
"$HBMCTL" run --restart on-failure --max-restarts 2/1h --backoff 100ms -- \
    sh -c 'echo x >>"$0"; exit 4' "$T/count" 2>"$LOG"
rc=$?
[ "$rc" = 4 ] || fail "restart: exit $rc, expected 4"
[ "$(wc -l <"$T/count")" = 3 ] || fail "restart: ran $(wc -l <"$T/count") times, expected 3 (1 + 2 restarts)"
grep -q 'restart budget' "$LOG" || fail "restart: no line saying the budget is spent"
echo "ok: on-failure: 1 run + 2 restarts, then the budget stops it"

# on-failure does not restart a success; always does
rm -f "$T/count"
"$HBMCTL" run --restart on-failure --backoff 100ms -- sh -c 'echo x >>"$0"' "$T/count" 2>"$T/log"
[ "$(wc -l <"$T/count")" = 1 ] || fail "on-failure restarted a child that exited 0"
rm -f "$T/count"
"$HBMCTL" run --restart always --max-restarts 1 --backoff 100ms -- sh -c 'echo x >>"$0"' "$T/count" 2>"$T/log"
[ "$(wc -l <"$T/count")" = 2 ] || fail "always with budget 1 ran $(wc -l <"$T/count") times, expected 2"
echo "ok: on-failure leaves a success alone; always restarts it"
