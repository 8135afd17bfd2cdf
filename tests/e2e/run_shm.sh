#!/bin/bash
# SysV shared memory at the stop: a segment the tree created and nobody attaches is removed
# (and recorded in the audit log); a segment made outside the tree at the same time, also
# unattached with a dead creator, is left alone.
. "$(dirname "$0")/common.bash"
run_scratch
export HBMCTL_AUDIT_LOG=$T/audit.jsonl

LOG=$T/log
"$HBMCTL" run --grace 2s --no-cgroup -- sh -c '"$0" "$1" & wait' "$H/run_shm" "$T/shmid.tree" 2>"$LOG" &
h=$!
BGPIDS+=("$h")
wait_file "$T/shmid.tree" 30 || fail "the segment maker did not start"
tree_id=$(cat "$T/shmid.tree")
# made outside the tree while it runs: its creator (ipcmk) is dead and nattch is 0 too
out_id=$(ipcmk -M 4096 | grep -o '[0-9]*$')
[ -n "$out_id" ] || fail "ipcmk did not make a segment"
echo "$out_id" >"$T/shmid.outside"
grep -qw "$tree_id" /proc/sysvipc/shm || fail "segment $tree_id is not there before the stop"

kill -TERM "$h"
wait "$h"
awk 'NR > 1 { print $2 }' /proc/sysvipc/shm | grep -qx "$tree_id" &&
    fail "the tree's segment $tree_id was not removed"
awk 'NR > 1 { print $2 }' /proc/sysvipc/shm | grep -qx "$out_id" ||
    fail "the segment $out_id made outside the tree was removed"
grep -q 'summary: .*SysV segments removed: 1' "$LOG" || fail "the summary does not count 1 segment"
grep -q "\"remove_sysv_shm\"" "$T/audit.jsonl" || fail "the removal is not in the audit log"
echo "ok: the tree's segment $tree_id removed, the outside segment $out_id kept"
