#!/bin/bash
# Leases on a host with several users (fake DCMI, 4 free NPUs). root's first pick creates the
# lease directory mode 1777 with one file per device mode 0666; an unprivileged user (uid
# 65534) then leases another device in it and is refused root's; a directory the user cannot
# use gives a message naming its owner and mode and --lease-dir; in an empty 1777 directory
# (tmpfiles.d) the user's file is handed to the directory's owner by root's next pick;
# release refuses to signal a pid that a lease file merely names.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: switching to an unprivileged user needs root (running as uid $(id -u))"
    exit 77
fi
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
elif command -v runuser >/dev/null && runuser -u nobody -- true 2>/dev/null; then
    as_user() { runuser -u nobody -- "$@"; }
else
    echo "SKIP: neither setpriv nor runuser can switch to uid 65534 here"
    exit 77
fi
if ! as_user test -x "$HBMCTL" || ! as_user test -r "$HBM_FAKES/libdcmi.so"; then
    echo "SKIP: uid 65534 cannot run $HBMCTL or read $HBM_FAKES (build directory permissions)"
    exit 77
fi
tmp=$(mktemp -d)
chmod 755 "$tmp"
cleanup() {
    local d p
    for d in "$tmp/run/hbmctl" "$tmp/locked" "$tmp/tmpfiles"; do
        [ -d "$d" ] || continue
        for p in $("$HBMCTL" leases --lease-dir "$d" --json 2>/dev/null |
                   jq -r '.leases[].pid // empty' | sort -u); do
            kill -9 "$p" 2>/dev/null
        done
    done
    [ -n "${guard:-}" ] && kill -9 "$guard" 2>/dev/null
    [ -n "${spoof:-}" ] && kill -9 "$spoof" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fake_dcmi
python3 - "$tmp/scenario.json" <<'PY'
import json, sys
cards = [{"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
          "hbm": {"total_mb": 65536, "used_mb": 3400}, "processes": []}]} for i in range(4)]
json.dump({"driver_version": "24.1.rc2", "cards": cards}, open(sys.argv[1], "w"))
PY
chmod 644 "$tmp/scenario.json"
dir=$tmp/run/hbmctl
export HBMCTL_LEASE_DIR=$dir
sleep 600 &
guard=$!

# root first, as the service that starts first on a host would.
"$HBMCTL" pick 1 --backend dcmi --lease rootjob --hold-pid "$guard" --format list \
    >"$tmp/root.out" 2>"$tmp/root.err"
check "root's pick succeeds ($(cat "$tmp/root.err"))" [ $? -eq 0 ]
rootdev=$(cat "$tmp/root.out")
check "the lease directory is created mode 1777 (got $(stat -c %a "$dir"))" \
    [ "$(stat -c %a "$dir")" = 1777 ]
check "its parent is created 0755 (got $(stat -c %a "$tmp/run"))" [ "$(stat -c %a "$tmp/run")" = 755 ]
for i in 0 1 2 3; do
    check "device-$i.lease exists, mode 0666, owned by root" \
        [ "$(stat -c '%a %u' "$dir/device-$i.lease" 2>/dev/null)" = "666 0" ]
done
check ".pick is mode 0666" [ "$(stat -c %a "$dir/.pick")" = 666 ]

# An unprivileged user leases another device in root's directory.
as_user "$HBMCTL" pick 1 --backend dcmi --lease userjob --hold-pid "$guard" --format list \
    >"$tmp/user.out" 2>"$tmp/user.err"
rc=$?
check "an unprivileged user's pick --lease succeeds (rc $rc: $(cat "$tmp/user.err"))" [ "$rc" -eq 0 ]
userdev=$(cat "$tmp/user.out")
check "the user got a device other than root's ($userdev vs $rootdev)" \
    bash -c "[ -n '$userdev' ] && [ '$userdev' != '$rootdev' ]"
holder=$("$HBMCTL" leases --json | jq -r '.leases[] | select(.name == "userjob") | .pid')
check "leases lists the user's lease with its holder" [ -n "$holder" ]
check "the user's holder runs as uid 65534" \
    [ "$(awk '/^Uid:/ {print $2}' "/proc/$holder/status" 2>/dev/null)" = 65534 ]
check "the user sees both leases" \
    [ "$(as_user "$HBMCTL" leases --json | jq '.leases | length')" -eq 2 ]
as_user "$HBMCTL" pick 3 --backend dcmi --lease greedy --hold-pid "$guard" >/dev/null \
    2>"$tmp/greedy.err"
check "a pick of 3 by the user is refused: 2 devices are leased" [ $? -eq 1 ]
check "the refusal names root's lease" grep -q "device $rootdev .*leased as 'rootjob'" "$tmp/greedy.err"

# A directory the user cannot create: the message says who owns what and what to do.
as_user env HBMCTL_LEASE_DIR="$tmp/run/other" "$HBMCTL" pick 1 --backend dcmi --lease x \
    --hold-pid "$guard" >/dev/null 2>"$tmp/mk.err"
check "a lease directory the user cannot create is an error (exit 2)" [ $? -eq 2 ]
check "the message names the parent's owner and mode: $(cat "$tmp/mk.err")" \
    grep -q "$tmp/run is owned by root (uid 0), mode 0755" "$tmp/mk.err"
check "the message says how to configure another directory" \
    grep -q -- "--lease-dir DIR or HBMCTL_LEASE_DIR=DIR" "$tmp/mk.err"

# A directory an administrator keeps for root (0755, files 0644): refused, and said why.
install -d -m 0755 "$tmp/locked"
for i in 0 1 2 3; do install -m 0644 /dev/null "$tmp/locked/device-$i.lease"; done
install -m 0644 /dev/null "$tmp/locked/.pick"
as_user "$HBMCTL" pick 1 --backend dcmi --lease-dir "$tmp/locked" --lease y \
    --hold-pid "$guard" >/dev/null 2>"$tmp/locked.err"
check "a root-only lease directory is an error for the user (exit 2)" [ $? -eq 2 ]
check "the message names the file, its owner and mode: $(cat "$tmp/locked.err")" \
    grep -q "cannot open lease file $tmp/locked/.pick: Permission denied .*owned by root (uid 0), mode 0644" "$tmp/locked.err"
check "modes of an existing directory are left alone" [ "$(stat -c %a "$tmp/locked")" = 755 ]

# A directory made empty at boot (tmpfiles.d `d DIR 1777 root root -`): the user's pick
# creates its device's file; root's next pick hands that file to the directory's owner (so
# fs.protected_regular cannot lock others out of it) and the user's lease stays held.
install -d -m 1777 "$tmp/tmpfiles"
as_user "$HBMCTL" pick 1 --backend dcmi --lease-dir "$tmp/tmpfiles" --lease early \
    --hold-pid "$guard" --format list >"$tmp/early.out" 2>"$tmp/early.err"
check "the user leases first in an empty 1777 directory ($(cat "$tmp/early.err"))" [ $? -eq 0 ]
early=$tmp/tmpfiles/device-$(cat "$tmp/early.out").lease
check "the user's pick made the file, mode 0666 (got $(stat -c '%a %u' "$early"))" \
    [ "$(stat -c '%a %u' "$early")" = "666 65534" ]
"$HBMCTL" pick 1 --backend dcmi --lease-dir "$tmp/tmpfiles" --lease late --hold-pid "$guard" \
    >/dev/null 2>"$tmp/late.err"
check "root picks another device there ($(cat "$tmp/late.err"))" [ $? -eq 0 ]
check "root's pick handed the user's file to the directory's owner (got $(stat -c '%a %u' "$early"))" \
    [ "$(stat -c '%a %u' "$early")" = "666 0" ]
check "the user's lease is still held" \
    [ "$("$HBMCTL" leases --lease-dir "$tmp/tmpfiles" --json | jq -r '.leases[] | select(.name == "early") | .held')" = true ]

# Lease files are writable by everyone: one that names a process which does not hold it
# must not make release signal that process.
gst=$(sed 's/.*) //' "/proc/$guard/stat" | cut -d' ' -f20)
spooffile=$(ls "$dir"/device-*.lease | grep -v -e "device-$rootdev\." -e "device-$userdev\." | head -1)
# One process (sh, then sleep by exec) keeps the lock on fd 9 and has written the claim.
as_user sh -c 'exec 9<>"$1"; flock -x 9 || exit 1
printf "{\"name\":\"spoof\",\"device\":9,\"pid\":%s,\"starttime\":%s,\"hold_pid\":0,\"since\":1}\n" "$2" "$3" >"$1"
echo $$; exec sleep 600' sh "$spooffile" "$guard" "$gst" >"$tmp/spoof.pid" &
for _ in $(seq 1 100); do [ -s "$tmp/spoof.pid" ] && break; sleep 0.1; done
spoof=$(cat "$tmp/spoof.pid")
for _ in $(seq 1 100); do
    [ "$("$HBMCTL" leases --json | jq -r '.leases[] | select(.name == "spoof") | .held')" = true ] && break
    sleep 0.1
done
"$HBMCTL" release spoof --timeout 2s >/dev/null 2>"$tmp/spoof.err"
check "release refuses a lease whose named pid does not hold the file (exit 2)" [ $? -eq 2 ]
check "the refusal says so: $(cat "$tmp/spoof.err")" grep -q "does not have the file open" "$tmp/spoof.err"
check "the process the file named is alive" kill -0 "$guard"

"$HBMCTL" release userjob --timeout 10s >/dev/null 2>"$tmp/rel.err"
check "root releases the user's lease ($(cat "$tmp/rel.err"))" [ $? -eq 0 ]
gone() { # PID: exited (a zombie until init reaps it counts as exited)
    local st
    for _ in $(seq 1 100); do
        st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
        [ -z "$st" ] || [ "$st" = Z ] && return 0
        sleep 0.1
    done
    return 1
}
check "the user's holder has exited" gone "$holder"
finish
