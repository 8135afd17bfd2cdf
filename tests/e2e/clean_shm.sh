#!/bin/bash
# Shared memory, real objects in a private IPC namespace with its own /dev/shm (so the host's
# objects are never touched): a SysV segment whose creator died and nobody attaches is
# removed; one still attached (creator dead) and one detached whose creator lives (like the
# CANN log daemon's) are kept; a /dev/shm object mapped by a live process and one held open
# are kept, one nobody holds is removed; a nearly full /dev/shm is reported; nothing changes
# without --apply.
set -u
if [ -z "${DOC_IN_NS:-}" ]; then
    if ! unshare --ipc --mount --propagation private true 2>/dev/null; then
        echo "SKIP: needs root for a private IPC and mount namespace"
        exit 77
    fi
    exec unshare --ipc --mount --propagation private env DOC_IN_NS=1 bash "$0" "$@"
fi
. "$HBM_SRC/tests/e2e/common.bash"
mount -t tmpfs -o size=1m tmpfs /dev/shm || { echo "FAIL: cannot mount /dev/shm"; exit 1; }
scratch KILL
fake_dcmi
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
echo '{"cards": [{"card_id": 0, "chips": [{"logic_id": 0, "phy_id": 0, "name": "910B3",
      "health": "OK", "hbm": {"total_mb": 65536, "used_mb": 3400}, "processes": []}]}]}' \
    >"$tmp/scenario.json"

dead=$("$HBM_BUILD/doc_shm" sysv-dead 65536)
attached=$("$HBM_BUILD/doc_shm" sysv-dead 8192)
pids+=("$("$HBM_BUILD/doc_shm" sysv-attach "$attached")")
read -r detached creator < <("$HBM_BUILD/doc_shm" sysv-detached 4096)
pids+=("$creator")
pids+=("$("$HBM_BUILD/doc_shm" posix-map /dev/shm/hcclShareMem0)")
pids+=("$("$HBM_BUILD/doc_shm" posix-open /dev/shm/sem.held)")
: >/dev/shm/sem.stale
head -c 960k /dev/zero >/dev/shm/big
sleep 600 3</dev/shm/big &
pids+=($!)
seg() { ipcs -m | awk -v id="$1" '$2 == id' | grep -c .; }
check "setup: 3 segments exist" [ "$(ipcs -m | awk '$2 ~ /^[0-9]+$/' | grep -c .)" -eq 3 ]

"$HBMCTL" doctor --backend dcmi --json >"$tmp/doctor.json"
ids() { jq -r "$1" "$tmp/doctor.json"; }
check "the dead creator's segment is a stale-sysv-shm finding" \
    [ "$(ids '[.findings[] | select(.id == "stale-sysv-shm") | .evidence.shmid] | join(" ")')" = "$dead" ]
check "the unheld /dev/shm object is a stale-posix-shm finding" \
    [ "$(ids '[.findings[] | select(.id == "stale-posix-shm") | .evidence.path] | join(" ")')" = "/dev/shm/sem.stale" ]
check "a nearly full /dev/shm is reported" \
    [ "$(ids '[.findings[] | select(.id == "devshm-nearly-full")] | length')" -eq 1 ]

"$HBMCTL" clean --backend dcmi >"$tmp/dry.txt"
check "the dry run lists the segment removal" grep -q "would stale-sysv-shm" "$tmp/dry.txt"
check "the dry run lists the unlink" grep -q "unlink /dev/shm/sem.stale" "$tmp/dry.txt"
check "nothing changed without --apply (segment)" [ "$(seg "$dead")" -eq 1 ]
check "nothing changed without --apply (file)" [ -e /dev/shm/sem.stale ]

# A process whose files and mappings cannot be read (some sandboxes' init) might hold any
# object: then the object must be kept, with that reason.
uninspectable=""
for d in /proc/[0-9]*; do
    if ! head -c1 "$d/maps" >/dev/null 2>&1 && [ -e "$d/maps" ]; then
        uninspectable=${d#/proc/}; break
    fi
done
"$HBMCTL" clean --backend dcmi --apply --yes >"$tmp/apply.txt"
rc=$?
check "the stale segment is removed" [ "$(seg "$dead")" -eq 0 ]
check "the attached segment (creator dead) is kept" [ "$(seg "$attached")" -eq 1 ]
check "the detached segment whose creator lives is kept" [ "$(seg "$detached")" -eq 1 ]
if [ -z "$uninspectable" ]; then
    check "clean --apply exits 0" [ "$rc" -eq 0 ]
    check "the unheld /dev/shm object is removed" [ ! -e /dev/shm/sem.stale ]
else
    echo "note: pid $uninspectable cannot be inspected here"
    check "clean --apply exits 1 (an object was kept)" [ "$rc" -eq 1 ]
    check "the unheld object is kept because pid $uninspectable cannot be inspected" \
        grep -q "cannot inspect pid $uninspectable" "$tmp/apply.txt"
fi
check "the mapped /dev/shm object is kept" [ -e /dev/shm/hcclShareMem0 ]
check "the open /dev/shm object is kept" [ -e /dev/shm/sem.held ]
check "the held big file is kept" [ -e /dev/shm/big ]
check "every removal is audited as done" \
    [ "$(jq -s '[.[] | select(.event == "clean" and .outcome == "done")] | length' "$tmp/audit.jsonl")" -eq "$([ -z "$uninspectable" ] && echo 2 || echo 1)" ]

# The last check before acting: a segment that gets attached between the observation and
# the action is kept (the plan is made, then a process attaches, then apply runs).
again=$("$HBM_BUILD/doc_shm" sysv-dead 4096)
"$HBMCTL" clean --backend dcmi --json >"$tmp/plan.json"
check "a new dead segment is planned" \
    [ "$(jq "[.steps[] | select(.action == \"sysv-rmid\")] | length" "$tmp/plan.json")" -eq 1 ]
pids+=("$("$HBM_BUILD/doc_shm" sysv-attach "$again")")
"$HBMCTL" clean --backend dcmi --apply --yes >/dev/null
check "once attached it is no longer removed" [ "$(seg "$again")" -eq 1 ]
# Under --root the size of /dev/shm is that of what is mounted at DIR/dev/shm: a plain
# directory (a fixture tree) has none, not the size of the filesystem around it.
make_root "$tmp/shmroot" yes
mkdir -p "$tmp/shmroot/dev/shm"
live() {
    HBMCTL_NVML_LIB="$tmp/none.so" HBMCTL_DCMI_LIB="$tmp/none.so" "$HBMCTL" explain --live \
        --root "$tmp/shmroot" --json "$HBM_SRC/tests/fixtures/logs/sig/nccl_system_error.log" |
        jq -c '.findings[0].live.dev_shm | [.total_bytes, .used_bytes]'
}
check "a plain directory at DIR/dev/shm has no size" [ "$(live)" = "[null,null]" ]
mount -t tmpfs -o size=2m tmpfs "$tmp/shmroot/dev/shm"
head -c 1m /dev/zero >"$tmp/shmroot/dev/shm/nccl-x"
check "a tmpfs mounted at DIR/dev/shm gives its own size" [ "$(live)" = "[2097152,1048576]" ]
umount "$tmp/shmroot/dev/shm"
finish
