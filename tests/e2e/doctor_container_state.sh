#!/bin/bash
# The founding case as --root trees on cgroup v1, v2 and hybrid hosts: a VLLM::EngineCore
# (ppid 1) holding 26 GiB stays in its container's cgroup directory after `docker rm -f`
# removed the container (the kernel keeps a directory while a task is in it). Container
# existence comes from the runtimes' records (docs/host-facts.md), not the cgroup directory:
# with Docker's record gone it is ORPHANED and clean plans its kill; with the record present
# (or containerd's task, for a member of the class the issue did not name) it is not; with no
# runtime record readable it is "unknown" and clean does not touch it; a frozen container is
# BUSY (paused), never ORPHANED or stuck. The tree's pids are not real: reading commands only.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
fake_dcmi
id=4f1c2a9be07d3c55a1e8b6f2d90c7a41e3b5f68d2c1a0e9f7b6c5d4e3f2a1b0c
python3 - "$tmp/scenario.json" <<'PY'
import json, sys
def chip(i, used_mb, procs):
    return {"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
            "hbm": {"total_mb": 65536, "used_mb": used_mb}, "processes": procs}]}
json.dump({"cards": [chip(0, 30000, [{"pid": 4242, "memory": 26 * 2**30}]),
                     chip(1, 3400, [])]}, open(sys.argv[1], "w"))
PY

# tree LAYOUT DIR [STATE]: a host tree; LAYOUT v1, v2 or hybrid; STATE the process's D/S.
tree() {
    local r=$2 st=${3:-S} p=$2/proc/4242
    mkdir -p "$p/fd" "$r/proc/self" "$r/proc/net" "$r/dev/shm" "$r/var/lib/docker/containers"
    printf '4242 (VLLM::EngineCor) %s 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 2024 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n' \
        "$st" >"$p/stat"
    printf 'Name:\tVLLM::EngineCor\nPid:\t4242\nPPid:\t1\nUid:\t0\t0\t0\t0\nNSpid:\t4242\n' \
        >"$p/status"
    printf 'VLLM::EngineCore' >"$p/cmdline"
    echo /dev/davinci0 >"$p/fd/3"
    printf 'Name:\thbmctl\nPid:\t900\nPPid:\t800\nUid:\t0\t0\t0\t0\nNSpid:\t900\n' \
        >"$r/proc/self/status"
    mkdir -p "$r/proc/2"
    echo '2 (kthreadd) S 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0' \
        >"$r/proc/2/stat"
    : >"$r/proc/net/tcp"
    : >"$r/proc/net/tcp6"
    local mi="22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/root rw"
    local v1="4:cpu,cpuacct:/docker/$id
9:freezer:/docker/$id
1:name=systemd:/docker/$id"
    case $1 in
    v1) printf '%s\n' "$v1" >"$p/cgroup"
        mkdir -p "$r/sys/fs/cgroup/cpu/docker/$id" "$r/sys/fs/cgroup/freezer/docker/$id"
        echo THAWED >"$r/sys/fs/cgroup/freezer/docker/$id/freezer.state" ;;
    v2) printf '0::/system.slice/docker-%s.scope\n' "$id" >"$p/cgroup"
        mi="$mi
29 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw"
        mkdir -p "$r/sys/fs/cgroup/system.slice/docker-$id.scope"
        echo 0 >"$r/sys/fs/cgroup/system.slice/docker-$id.scope/cgroup.freeze" ;;
    hybrid) printf '%s\n0::/\n' "$v1" >"$p/cgroup"
        mi="$mi
30 22 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw"
        mkdir -p "$r/sys/fs/cgroup/cpu/docker/$id" "$r/sys/fs/cgroup/freezer/docker/$id"
        echo THAWED >"$r/sys/fs/cgroup/freezer/docker/$id/freezer.state" ;;
    esac
    printf '%s\n' "$mi" >"$r/proc/self/mountinfo"
}

doc() { "$HBMCTL" doctor --backend dcmi --root "$1" --json >"$tmp/d.json"; }
verdict() { "$HBMCTL" status --backend dcmi --root "$1" --json | jq -r '.devices[0].verdict'; }
kill_allowed() {
    "$HBMCTL" clean --backend dcmi --root "$1" --json |
        jq -r '[.steps[] | select(.action == "kill" and (.text | test("pid 4242 ")))
               | .allowed] | if length == 0 then "none" else (.[0] | tostring) end'
}
state() {
    "$HBMCTL" status --backend dcmi --root "$1" --json |
        jq -r '[.. | objects | select(.pid? == 4242 and has("container_state"))
               | .container_state] | first // "none"'
}

for layout in v1 v2 hybrid; do
    r="$tmp/$layout"
    tree "$layout" "$r"
    check "$layout: runtime record gone: container_state gone (got $(state "$r"))" \
        [ "$(state "$r")" = gone ]
    check "$layout: the EngineCore outliving its container is ORPHANED (got $(verdict "$r"))" \
        [ "$(verdict "$r")" = ORPHANED ]
    doc "$r"
    check "$layout: orphan-holder says no runtime knows the container" \
        jq -e '.findings[] | select(.id == "orphan-holder" and .evidence.process.pid == 4242)' \
        "$tmp/d.json"
    check "$layout: clean plans its kill, allowed (got $(kill_allowed "$r"))" \
        [ "$(kill_allowed "$r")" = true ]

    mkdir -p "$r/var/lib/docker/containers/$id"
    check "$layout: Docker's record present: running (got $(state "$r"))" \
        [ "$(state "$r")" = running ]
    check "$layout: Docker's record present: not ORPHANED (got $(verdict "$r"))" \
        [ "$(verdict "$r")" = BUSY ]
    check "$layout: Docker's record present: clean kills nothing (got $(kill_allowed "$r"))" \
        [ "$(kill_allowed "$r")" != true ]
    echo '{"Name": "/vllm-qwen", "Config": {"Image": "vllm/vllm-ascend:v0.9"}}' \
        >"$r/var/lib/docker/containers/$id/config.v2.json"
    names() { "$HBMCTL" status --backend dcmi --root "$1" --json |
                  jq -r '[.. | objects | select(.pid? == 4242 and has("container_state"))
                         | "\(.container_name)|\(.container_image)"] | first'; }
    check "$layout: Docker's name and image in the host facts (got $(names "$r"))" \
        [ "$(names "$r")" = "vllm-qwen|vllm/vllm-ascend:v0.9" ]
    echo '{"Name": ' >"$r/var/lib/docker/containers/$id/config.v2.json"
    check "$layout: a malformed config.v2.json names nothing and the container still runs" \
        [ "$(names "$r")|$(state "$r")" = "null|null|running" ]
    rm -r "$r/var/lib/docker/containers/$id"
done

r="$tmp/v1"
mkdir -p "$r/run/containerd/io.containerd.runtime.v2.task/moby/$id"
check "v1: containerd's task (moby namespace) alone also keeps it running (got $(state "$r"))" \
    [ "$(state "$r")" = running ]
rm -rf "$r/run"

rm -rf "$r/var/lib/docker"
check "v1: no runtime record readable: unknown, not gone (got $(state "$r"))" \
    [ "$(state "$r")" = unknown ]
check "v1: unknown: clean does not kill it (got $(kill_allowed "$r"))" \
    [ "$(kill_allowed "$r")" = false ]
"$HBMCTL" clean --backend dcmi --root "$r" --json >"$tmp/c.json"
check "v1: unknown: the refusal says no runtime record tells" \
    jq -e '.steps[] | select(.why | test("no readable runtime record"))' "$tmp/c.json"
"$HBMCTL" clean --backend dcmi --root "$r" >/dev/null
check "v1: unknown: clean exits 1 when it keeps the orphan" [ $? -eq 1 ]

# /dev/shm: podman's lock table, mapped by nobody between podman commands, is podman's while
# podman's state exists (/run/libpod; rootless: /run/user/UID/libpod), stale once it does not.
r="$tmp/shm"
tree v2 "$r"
u=$(id -u)
lock=libpod_lock
[ "$u" -ne 0 ] && lock=libpod_rootless_lock_$u
head -c 4096 /dev/zero >"$r/dev/shm/$lock"
head -c 4096 /dev/zero >"$r/dev/shm/sem.leftover"
mkdir -p "$r/run/libpod" "$r/run/user/$u/libpod"
stale() { doc "$r"; jq -r '[.findings[] | select(.id == "stale-posix-shm") | .evidence.path]
                        | sort | join(",")' "$tmp/d.json"; }
check "shm: podman's $lock is not stale while podman's state exists (got $(stale))" \
    [ "$(stale)" = /dev/shm/sem.leftover ]
"$HBMCTL" status --backend dcmi --root "$r" --json >"$tmp/s.json"
check "shm: its owner is podman in the host facts" \
    jq -e ".. | objects | select(.path? == \"/dev/shm/$lock\") | select(.owner == \"podman\")" \
    "$tmp/s.json"
rm -rf "$r/run"
check "shm: without podman's state the same object is stale (got $(stale))" \
    [ "$(stale)" = "/dev/shm/$lock,/dev/shm/sem.leftover" ]
touch "$r/dev/shm/libpod_rootless_lock_99999"
mkdir -p "$r/run/libpod" "$r/run/user/99999/libpod"
check "shm: a lock named for another uid than its owner's is not podman's" \
    bash -c "doc() { '$HBMCTL' doctor --backend dcmi --root '$r' --json; }; doc | jq -e '.findings[] | select(.evidence.path? == \"/dev/shm/libpod_rootless_lock_99999\")' >/dev/null"

# clean --only: the shm tree has the orphan (no Docker record) and a stale /dev/shm object.
r="$tmp/shm"
mkdir -p "$r/var/lib/docker/containers"
plan() { "$HBMCTL" clean --backend dcmi --root "$r" --only "$1" --json |
             jq -r '[.steps[].finding] | unique | join(",")'; }
check "clean --only orphan-holder plans only the kill (got $(plan orphan-holder))" \
    [ "$(plan orphan-holder)" = orphan-holder ]
check "clean --only stale-posix-shm plans only the unlinks (got $(plan stale-posix-shm))" \
    [ "$(plan stale-posix-shm)" = stale-posix-shm ]
check "clean --only with both plans both (got $(plan stale-posix-shm,orphan-holder))" \
    [ "$(plan stale-posix-shm,orphan-holder)" = orphan-holder,stale-posix-shm ]
for bad in bogus "" orphan-holder, port-not-listening; do
    "$HBMCTL" clean --backend dcmi --root "$r" --only "$bad" >/dev/null 2>"$tmp/only.err"
    check "clean --only '$bad' exits 2" [ $? -eq 2 ]
done
check "the error names the id" grep -q "'port-not-listening' is not a finding id" "$tmp/only.err"

# Ports in the server's own network namespace (--network none, a bridge): its listener is
# in its /proc/PID/net/tcp{,6}, not the host's.
r="$tmp/net"
tree v2 "$r"
q=$r/proc/4300
mkdir -p "$q/fd" "$q/ns" "$r/proc/self/ns"
echo '4300 (vllm) S 1 4300 4300 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 2030 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0' >"$q/stat"
printf 'Name:\tvllm\nPid:\t4300\nPPid:\t1\nUid:\t0\t0\t0\t0\nNSpid:\t4300\n' >"$q/status"
printf 'python3\0/usr/bin/vllm\0serve\0/models/q\0--port\08000' >"$q/cmdline"
echo /dev/davinci1 >"$q/fd/3"
echo 'net:[4026531840]' >"$r/proc/self/ns/net"
echo 'net:[4026532999]' >"$q/ns/net"
hdr='  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode'
notlist() { doc "$r"; jq '[.findings[] | select(.id == "port-not-listening" and .evidence.pid == 4300)] | length' "$tmp/d.json"; }
check "netns: nothing listens in the server's namespace: port-not-listening (got $(notlist))" \
    [ "$(notlist)" -eq 1 ]
mkdir -p "$q/net"
printf '%s\n   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7001 1 0 100 0 0 10 0\n' "$hdr" >"$q/net/tcp"
check "netns: a listener on 8000 in its own namespace (tcp) is no port-not-listening (got $(notlist))" \
    [ "$(notlist)" -eq 0 ]
rm "$q/net/tcp"
printf '%s\n   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7002 1 0 100 0 0 10 0\n' "$hdr" >"$q/net/tcp6"
check "netns: nor one on tcp6 (got $(notlist))" [ "$(notlist)" -eq 0 ]
echo 'net:[4026531840]' >"$q/ns/net"
check "netns: the host's namespace is not read twice: the host's empty table counts (got $(notlist))" \
    [ "$(notlist)" -eq 1 ]

# pid_in_container from NSpid (outermost first): the innermost pid.
sed -i 's/^NSpid:.*/NSpid:\t4242\t57/' "$tmp/v2/proc/4242/status"
pic() { "$HBMCTL" status --backend dcmi --root "$1" --json | jq -r '.devices[0].processes[0].pid_in_container'; }
check "pid_in_container is NSpid's innermost pid (got $(pic "$tmp/v2"))" [ "$(pic "$tmp/v2")" = 57 ]
check "pid_in_container stays null with one NSpid level (got $(pic "$tmp/v1"))" \
    [ "$(pic "$tmp/v1")" = null ]

# Paused: the freezer holds the task in D on v1 kernels. A member the issue did not name:
# v2's cgroup.events "frozen 1" alone.
for layout in v1 v2; do
    r="$tmp/p$layout"
    tree "$layout" "$r" D
    mkdir -p "$r/var/lib/docker/containers/$id"
    if [ "$layout" = v1 ]; then
        echo FROZEN >"$r/sys/fs/cgroup/freezer/docker/$id/freezer.state"
    else
        printf 'populated 1\nfrozen 1\n' >"$r/sys/fs/cgroup/system.slice/docker-$id.scope/cgroup.events"
    fi
    check "$layout paused: container_state paused (got $(state "$r"))" [ "$(state "$r")" = paused ]
    check "$layout paused: BUSY (got $(verdict "$r"))" [ "$(verdict "$r")" = BUSY ]
    "$HBMCTL" status --backend dcmi --root "$r" --json >"$tmp/s.json"
    check "$layout paused: the reason says paused" \
        jq -e '.devices[0].reason | test("^paused: ")' "$tmp/s.json"
    doc "$r"
    check "$layout paused: no stuck-holder nor orphan-holder" \
        [ "$(jq '[.findings[] | select(.id == "stuck-holder" or .id == "orphan-holder")] | length' "$tmp/d.json")" -eq 0 ]
    "$HBMCTL" pick 2 --backend dcmi --root "$r" >/dev/null 2>"$tmp/p.err"
    check "$layout paused: pick does not call it stuck" bash -c "! grep -qi stuck '$tmp/p.err'"
done
finish
