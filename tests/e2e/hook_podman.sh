#!/bin/bash
# hbmctl hook poststop under a real podman (docs/hook.md), with the hooks.d file of
# deploy/oci-hooks/ (its path and environment pointed at this build and scratch audit log).
#
# The leftover is made the way one really outlives its container: the runtime ends a stopped
# container by signalling what its cgroups hold (runc kill --all) and, with a private PID
# namespace, by the namespace's init dying; a worker in the host's PID namespace (--pid host)
# that left the container's cgroups is missed by both and keeps the device open. Here a child
# opens the fake /dev/hbmtest0 (a character device mapped in with --device), writes itself to
# the root cgroup of every v1 hierarchy and sleeps; the fake DCMI driver lists it on chip 0
# with memory it frees when the process exits. The hook must end such a child at podman rm -f,
# at podman stop and when the container exits by itself, and keep what a running container
# holds on the same device; a container without devices runs it for nothing, and a failing
# hook never fails the stop.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
command -v podman >/dev/null || { echo "SKIP: podman is not installed"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (rootful podman, mknod)"; exit 77; }
scratch KILL
fake_dcmi
# The containers' device is /dev/hbmtest0, matched by this pattern alone: a test running beside
# this one (default patterns: /dev/davinci* and the like) must not see it held, or its own
# holders, which hold no device file, would be refused by the device-file proof.
export HBMCTL_DEVICE_PATTERNS="/dev/hbmtest*"
audit=$tmp/audit.jsonl
# podman's runroot holds sockets: a short path
D=$(mktemp -d /tmp/hbmpm.XXXX)
pm() {
    CONTAINERS_CONF=$D/containers.conf podman --root "$D/root" --runroot "$D/run" \
        --cgroup-manager cgroupfs --events-backend file --hooks-dir "${HOOKS:-$D/hooks}" "$@"
}
cleanup() {
    pm rm -af -t 0 >/dev/null 2>&1
    local f
    for f in "$D"/share/*; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
    scratch_cleanup
    umount "$D/root/overlay" 2>/dev/null # the overlay driver's private mount of its home
    rm -rf "$D"
}
trap cleanup EXIT

printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\nlock_type = "file"\n' \
    >"$D/containers.conf"
mkdir -p "$D/rootfs/bin" "$D/rootfs/dev" "$D/rootfs/proc" "$D/rootfs/sys" "$D/share" \
    "$D/hooks" "$D/hooks-bad" "$D/hooks-ann"
cp "$(command -v busybox)" "$D/rootfs/bin/busybox"
chroot "$D/rootfs" /bin/busybox --install -s /bin
tar -C "$D/rootfs" -cf "$D/rootfs.tar" .
pm import "$D/rootfs.tar" hbmtest >/dev/null || { echo "FAIL: podman import"; exit 1; }
mknod "$D/hbmtest0" c 1 3
: >"$D/notadir"

# The hook as the runtime runs it, recording the state it was given.
cat >"$D/hook.sh" <<EOF
#!/bin/sh
tee -a "$D/states" | HBMCTL_DEVICE_PATTERNS='$HBMCTL_DEVICE_PATTERNS' "$HBMCTL" "\$@" >>"$D/hook.out" 2>>"$D/hook.err"
EOF
chmod +x "$D/hook.sh"
hooks() { # DEPLOY-FILE AUDIT-LOG DIR
    jq --arg p "$D/hook.sh" --arg a "$2" '.hook.path = $p | .hook.env = ["HBMCTL_AUDIT_LOG=" + $a]' \
        "$HBM_SRC/deploy/oci-hooks/$1" >"$3/hbmctl.json"
}
hooks hbmctl-poststop.json "$audit" "$D/hooks"
hooks hbmctl-poststop.json "$D/notadir/audit.jsonl" "$D/hooks-bad"
hooks hbmctl-poststop-annotated.json "$audit" "$D/hooks-ann"

OPTS=(--network none --pid host --cap-add SYS_ADMIN --security-opt seccomp=unconfined
      -v /sys/fs/cgroup:/sys/fs/cgroup:rw -v "$D/share:/share")
DEV=(--device "$D/hbmtest0:/dev/hbmtest0")
# NAME: the main process holds the device (NAME.main); a child escapes the cgroups (NAME.child)
SCRIPT='sh -c "exec 7</dev/hbmtest0; for f in /sys/fs/cgroup/*/cgroup.procs; do echo \$\$ >\$f; done 2>/dev/null; echo \$\$ >/share/$0.child; exec sleep 1000" & exec 7</dev/hbmtest0; echo $$ >/share/$0.main; exec sleep ${MAINSLEEP:-1000}'
start() { # NAME [podman options]
    local n=$1
    shift
    pm run -d --name "$n" "${OPTS[@]}" "$@" hbmtest sh -c "$SCRIPT" "$n" >"$D/$n.id" ||
        { echo "FAIL: podman run $n"; exit 1; }
    wait_file "$D/share/$n.child" 10 && wait_file "$D/share/$n.main" 10
    pids+=("$(cat "$D/share/$n.child")")
}
gone() { # PID: exited within 10 s
    for _ in $(seq 1 100); do [ -d "/proc/$1" ] || return 0; sleep 0.1; done
    return 1
}
# running, not a zombie (a killed child of a live container's conmon stays one)
alive() { [ -d "/proc/$1" ] && [ "$(proc_state "$1")" != Z ]; }
escaped() { grep -q ':/$' "/proc/$1/cgroup" && ! grep -qv ':/$' "/proc/$1/cgroup"; }

# b, with the same device, stays running; its child escaped the cgroups like a's
start a "${DEV[@]}"
start b "${DEV[@]}"
a=$(cat "$D/share/a.child") b=$(cat "$D/share/b.child") bmain=$(cat "$D/share/b.main")
check "the child left every cgroup of its container" escaped "$a"
python3 - "$tmp/scenario.json" "$a" <<'PY'
import json, sys
out, pid = sys.argv[1], int(sys.argv[2])
json.dump({"cards": [{"card_id": 0, "chips": [{"logic_id": 0, "phy_id": 0, "name": "910B3",
    "health": "OK", "hbm": {"total_mb": 65536, "used_mb": 30000},
    "processes": [{"pid": pid, "memory": 26 * 2**30, "freed_on_exit": True}]}]}]}, open(out, "w"))
PY
"$HBMCTL" status --backend dcmi --json >"$tmp/before.json"
check "before: the driver lists the escaped child on chip 0" \
    [ "$(jq '[.devices[0].processes[].pid]' -c "$tmp/before.json")" = "[$a]" ]

t0=$(now)
pm rm -f a >"$tmp/rm.out" 2>&1
check "podman rm -f succeeds" [ $? -eq 0 ]
echo "podman rm -f with the hook: $(elapsed_since "$t0") s"
check "the hook ended the escaped child" gone "$a"
check "the hook was given container a's state" grep -q "\"id\":\"$(cat "$D/a.id")\"" "$D/states"
kill_rec() { jq -c "select(.event == \"clean\" and .pid == $1 and .finding == \"container-outlived\")" "$audit"; }
check "the audit has its kill, done" [ "$(kill_rec "$a" | jq -r .outcome)" = done ]
"$HBMCTL" status --backend dcmi --json >"$tmp/after.json"
check "the memory returned: chip 0 lists no process" \
    [ "$(jq '.devices[0].processes | length' "$tmp/after.json")" -eq 0 ]
check "the memory returned: used fell by the child's 26 GiB" \
    [ "$(jq '(.devices[0].memory_used_bytes) / 1048576 | floor' "$tmp/after.json")" -le 3376 ]
check "live container b's main process holding the same device is alive" alive "$bmain"
check "b's escaped child is alive" alive "$b"
kept() { jq -r "select(.event == \"hook\" and .pid == $1) | .detail" "$audit"; }
check "the audit keeps b's main: its cgroup names b" grep -q "cgroup names container" <<<"$(kept "$bmain")"
check "the audit keeps b's child: its root is not a's root file system" \
    grep -q "its root is not this container's root file system" <<<"$(kept "$b")"

# The proofs as the hook would judge b's own processes (a dry run on b's state while it runs).
bid=$(cat "$D/b.id")
printf '{"ociVersion":"1.0.2","id":"%s","status":"stopped","bundle":"%s"}' "$bid" \
    "$D/root/overlay-containers/$bid/userdata" |
    "$HBMCTL" hook poststop --dry-run >"$tmp/dry.out" 2>&1
check "b's main would be b's: its cgroup names the container" \
    grep -q "^pid $bmain (sleep) holds /dev/hbmtest0: its cgroup names the container; to end (dry run)" "$tmp/dry.out"
check "b's escaped child would be b's: its root is b's root file system" \
    grep -q "^pid $b (sleep) holds /dev/hbmtest0: left the container's cgroups; its root is the container's root file system" "$tmp/dry.out"
check "a dry run ends nothing" alive "$b"

start c "${DEV[@]}"
c=$(cat "$D/share/c.child")
pm stop -t 1 c >/dev/null 2>&1
check "podman stop succeeds" [ $? -eq 0 ]
check "at podman stop the hook ended c's escaped child" gone "$c"
check "the audit has it" [ "$(kill_rec "$c" | jq -r .outcome)" = done ]

start d "${DEV[@]}" -e MAINSLEEP=1
d=$(cat "$D/share/d.child")
check "when the container exits by itself (its server died), the hook ends d's escaped child" gone "$d"
check "the audit has it" [ "$(kill_rec "$d" | jq -r .outcome)" = done ]

lines=$(wc -l <"$audit")
pm run -d --name n "${OPTS[@]}" hbmtest sleep 1000 >"$D/n.id"
pm rm -f n >/dev/null 2>&1
check "a container without devices: podman rm -f succeeds" [ $? -eq 0 ]
check "the hook ran for it (the config has no device condition)" \
    grep -q "\"id\":\"$(cat "$D/n.id")\"" "$D/states"
check "and did nothing: no audit line" [ "$(wc -l <"$audit")" -eq "$lines" ]

HOOKS=$D/hooks-ann pm run -d --name y "${OPTS[@]}" "${DEV[@]}" hbmtest sleep 1000 >"$D/y.id"
HOOKS=$D/hooks-ann pm run -d --name x "${OPTS[@]}" "${DEV[@]}" \
    --annotation hbmctl.io/accelerator=true hbmtest sleep 1000 >"$D/x.id"
HOOKS=$D/hooks-ann pm rm -f x y >/dev/null 2>&1
check "the annotated hook config runs for the annotated container" \
    grep -q "\"id\":\"$(cat "$D/x.id")\"" "$D/states"
check "and not for the other" bash -c "! grep -q '\"id\":\"$(cat "$D/y.id")\"' '$D/states'"

check "no hook so far wrote to stderr (no error, no sanitizer report)" [ ! -s "$D/hook.err" ]
HOOKS=$D/hooks-bad start e "${DEV[@]}"
e=$(cat "$D/share/e.child")
t0=$(now)
HOOKS=$D/hooks-bad pm rm -f e >"$tmp/rm-e.out" 2>&1
check "a hook error (the audit log cannot be written) never fails podman rm -f" [ $? -eq 0 ]
check "the hook logged its error" grep -q "the container's stop goes on" "$D/hook.err"
check "nothing is ended without its audit record" alive "$e"
check "podman rm -f with a failing hook returned at once ($(elapsed_since "$t0") s)" \
    le "$(elapsed_since "$t0")" 5
finish
