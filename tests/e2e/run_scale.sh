#!/bin/bash
# `run` on a host with many processes. With its cgroup leaf hbmctl knows the tree from the
# leaf and its own descendants, so it reads no other process's /proc/N/stat and its cost
# does not grow with the host (issue 28); with --no-cgroup it must read them all (the test
# tells the two apart). A descendant that moved itself out of the leaf before the child
# exited is still found and stopped.
. "$(dirname "$0")/common.bash"
run_scratch

command -v strace >/dev/null || { echo "SKIP: no strace"; exit 77; }
why=$(cgroup2_writable) || { echo "SKIP: $why"; exit 77; }
[ -x "$HBM_BUILD/bench_procs" ] || fail "no $HBM_BUILD/bench_procs"

N=300
mkfifo "$T/fill.in"
"$HBM_BUILD/bench_procs" $N <"$T/fill.in" >"$T/fill.out" &
BGPIDS+=($!)
exec 9>"$T/fill.in"
wait_file "$T/fill.out" 60 || fail "bench_procs did not start $N processes"

# LeakSanitizer cannot run under ptrace (strace below): this test goes without it.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

stat_reads() { # TRACE: distinct pids whose /proc/PID (to read its stat) hbmctl opened
    grep -oE '"/proc/[0-9]+(/stat)?"' "$1" | sort -u | wc -l
}

LOG=$T/log.cgroup
strace -f -qq -e trace=open,openat -o "$T/trace.cgroup" "$HBMCTL" run -- true 2>"$LOG" ||
    fail "run -- true failed"
grep -q 'in cgroup ' "$LOG" || fail "writable cgroup2 but hbmctl did not use it"
n=$(stat_reads "$T/trace.cgroup")
[ "$n" -lt $((N / 10)) ] || fail "with a cgroup leaf, run read $n processes' stat ($N idle ones added)"

LOG=$T/log.nocgroup
strace -f -qq -e trace=open,openat -o "$T/trace.nocgroup" "$HBMCTL" run --no-cgroup -- true \
    2>"$LOG" || fail "run --no-cgroup -- true failed"
m=$(stat_reads "$T/trace.nocgroup")
[ "$m" -gt "$N" ] || fail "--no-cgroup read only $m processes' stat: the test cannot tell"
echo "stat files read: $n with the cgroup leaf, $m without ($N idle processes added)"

# The grandchild moves itself to hbmctl's own cgroup, then the child exits.
mnt=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2") print $5; break } }' /proc/self/mountinfo | head -n1)
own=$mnt$(sed -n 's/^0:://p' /proc/self/cgroup | head -n1)
own=${own%/}
LOG=$T/log.moved
"$HBMCTL" run --grace 2s -- sh -c '
    sh -c "echo \$\$ >\"\$0/cgroup.procs\" && cat /proc/self/cgroup >\"\$1.cg\" &&
           echo \$\$ >\"\$1\"; exec sleep 600" "$0" "$1" &
    i=0; while [ ! -s "$1" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done' \
    "$own" "$T/moved" 2>"$LOG" || fail "run of the moving tree failed"
[ -s "$T/moved" ] || fail "the grandchild did not move itself out of the leaf"
p=$(cat "$T/moved")
grep -q hbmctl-run "$T/moved.cg" && fail "the grandchild is still in the leaf: $(cat "$T/moved.cg")"
if [ -d "/proc/$p" ] && [ "$(proc_state "$p")" != Z ]; then
    echo "$p $(proc_start "$p")" >"$T/pids.moved"
    fail "the grandchild $p that left the leaf survived the run"
fi
grep -q "stopping 1 process" "$LOG" || fail "hbmctl did not stop the grandchild that left the leaf"
echo "ok"
