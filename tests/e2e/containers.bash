# Real container daemons for the e2e_docker_* and e2e_podman_* tests, sourced after
# common.bash and scratch: a private daemon (its own data root, socket and state under $D, no
# network, no iptables), an image built offline, and a trap that removes the containers, stops
# the daemon, the processes the test recorded in $pids and the cgroup directories an escaped
# process kept.
#
# The engines' device nodes are /dev/hbmtestN inside the containers, matched by this pattern
# alone: a test running beside these (default patterns: /dev/nvidia*, /dev/davinci* and the
# like) must not see a device file held, or its own holders, which hold none, would be refused
# by the device-file proof.
export HBMCTL_DEVICE_PATTERNS="/dev/hbmtest*"
#
# $D stays short (/tmp/hbmdk.XXXX): a unix socket path is limited to 108 bytes, and the suite
# also runs from a 150-character checkout path (e2e_long_path).

# Once per `make test`: the daemons' tests take the longest and the code they reach (runtime
# state, container verdicts, clean) runs under the sanitizers in the --root fixture tests
# (e2e_doctor_container_state, e2e_hook_input).
[ "${HBM_SANITIZE:-OFF}" = ON ] && { echo "SKIP: run by the plain build"; exit 77; }

# ctr_skip_or_fail WHAT LOG: the daemon did not come up. Skip only where the kernel refused
# it (the reason from its log), fail otherwise.
ctr_skip_or_fail() {
    local why
    why=$(grep -m1 -iE 'operation not permitted|not supported|permission denied|no such device|cgroup.*(not found|mountpoint)' "$2")
    tail -n 15 "$2" >&2
    if [ -n "$why" ]; then
        echo "SKIP: the kernel refuses $1 here: $why"
        exit 77
    fi
    echo "FAIL: $1 did not start (log above)" >&2
    exit 1
}

ctr_cleanup() {
    local c
    if [ "${CTR_CLI:-}" = podman ]; then
        timeout 60 "${CTR_CLI[@]}" pod rm -af >/dev/null 2>&1
    fi
    if [ -n "${CTR_CLI:-}" ]; then
        for c in $("${CTR_CLI[@]}" ps -aq 2>/dev/null); do
            timeout 30 "${CTR_CLI[@]}" rm -f "$c" >/dev/null 2>&1
        done
    fi
    if [ -n "${CTR_DAEMON:-}" ]; then
        kill "$CTR_DAEMON" 2>/dev/null
        for c in $(seq 100); do kill -0 "$CTR_DAEMON" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$CTR_DAEMON" 2>/dev/null
    fi
    for c in "${pids[@]}"; do kill -KILL "$c" 2>/dev/null; done
    sleep 0.2
    # a process that left the container's cgroup in some hierarchies kept the directories
    # of the others (the runtime could not remove them); empty now
    for c in "${CTR_IDS[@]}"; do
        find /sys/fs/cgroup -depth -type d -path "*$c*" -exec rmdir {} + 2>/dev/null
    done
    if [ -n "${D:-}" ]; then
        grep -o " $D[^ ]*" /proc/self/mounts | sort -r | while read -r m; do
            umount -l "$m" 2>/dev/null
        done
        rm -rf "$D"
    fi
    scratch_cleanup
}

# docker_start: dockerd with its state under $D; docker (CTR_CLI) talks to it.
docker_start() {
    D=$(mktemp -d /tmp/hbmdk.XXXX)
    CTR_IDS=()
    trap ctr_cleanup EXIT
    dockerd --iptables=false --ip6tables=false --bridge=none --data-root "$D/root" \
        --exec-root "$D/exec" -H "unix://$D/docker.sock" --pidfile "$D/pid" \
        >"$D/dockerd.log" 2>&1 &
    CTR_DAEMON=$!
    export DOCKER_HOST="unix://$D/docker.sock"
    CTR_CLI=(docker)
    local i
    for ((i = 0; i < 300; i++)); do
        timeout 5 docker info >/dev/null 2>&1 && break
        kill -0 "$CTR_DAEMON" 2>/dev/null || break
        sleep 0.1
    done
    timeout 5 docker info >/dev/null 2>&1 || ctr_skip_or_fail dockerd "$D/dockerd.log"
    # hbmctl reads this daemon's records, not /var/lib/docker's
    export HBMCTL_DOCKER_ROOT="$D/root"
}

# ctr_rootfs DIR PROGRAM...: busybox (its applets as relative links) and the programs with
# the libraries they load (ldd: also a sanitizer's runtime).
ctr_rootfs() {
    local r=$1 a f
    shift
    mkdir -p "$r/bin" "$r/dev" "$r/proc" "$r/sys" "$r/tmp" "$r/out"
    cp /usr/bin/busybox "$r/bin/busybox"
    for a in $(busybox --list); do [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"; done
    for f in "$@"; do
        cp "$f" "$r/bin/"
        for a in $(ldd "$f" | grep -oE '/[^ ]+'); do
            mkdir -p "$r$(dirname "$a")"
            cp -L "$a" "$r$a"
        done
    done
}

# ctr_pid CONTAINER_ID COMM: the host pid of the process COMM whose cgroup names the
# container (in any hierarchy), waiting up to 10 s.
ctr_pid() {
    local i p
    for ((i = 0; i < 100; i++)); do
        for p in /proc/[0-9]*; do
            [ "$(cat "$p/comm" 2>/dev/null)" = "$2" ] || continue
            grep -q "$1" "$p/cgroup" 2>/dev/null && { echo "${p#/proc/}"; return 0; }
        done
        sleep 0.1
    done
    return 1
}

# ctr_image: the image hbm-test:1 (busybox and ctr_engine), and device nodes $D/hbmtest0
# and $D/hbmtest1 (null's numbers) that an engine keeps open as a driver's context keeps the
# real one: the host sees it holding /dev/hbmtestN.
ctr_image() {
    mknod "$D/hbmtest0" c 1 3
    mknod "$D/hbmtest1" c 1 3
    ctr_rootfs "$D/rootfs" "$HBM_HELPERS/ctr_engine"
    tar -C "$D/rootfs" -c . | timeout 60 "${CTR_CLI[@]}" import - hbm-test:1 >/dev/null ||
        { echo "FAIL: ${CTR_CLI[0]} import"; exit 1; }
}

# podman_start: podman with its storage, run root and temporary state under $D (CTR_CLI).
# The runtime's rlimits are set no higher than podman's own (it lowers RLIMIT_NPROC to 32768
# at start): one above them fails with "error setting rlimit type 6".
# File locks under $D, not podman's lock table /dev/shm/libpod_lock, which would outlive the
# test as a /dev/shm object no state owns.
podman_start() {
    D=$(mktemp -d /tmp/hbmpd.XXXX)
    CTR_IDS=()
    trap ctr_cleanup EXIT
    printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\nlock_type = "file"\n' \
        >"$D/containers.conf"
    export CONTAINERS_CONF="$D/containers.conf"
    CTR_CLI=(podman --root "$D/root" --runroot "$D/run" --tmpdir "$D/tmp" --cgroup-manager cgroupfs
             --events-backend file)
    timeout 60 "${CTR_CLI[@]}" info >"$D/podman.log" 2>&1 || ctr_skip_or_fail podman "$D/podman.log"
    export HBMCTL_STORAGE_ROOT="$D/root" HBMCTL_STORAGE_RUNROOT="$D/run"
}

# gpu_scenario PID0 PID1: the fake NVML's two H100s, each with one process holding 26 GiB over
# a 500 MiB baseline; an exited process's memory returns, as a driver frees it at exit.
gpu_scenario() {
    python3 - "$tmp/scenario.json" "$1" "$2" <<'PY'
import json, sys
GIB, MIB = 2**30, 2**20
def dev(i, pid):
    return {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-%d" % i,
            "bus_id": "00000000:1%d:00.0" % i, "memory_total": 80 * GIB,
            "memory_used": 500 * MIB + 26 * GIB, "utilization_gpu": 0,
            "compute": [{"pid": pid, "used_memory": 26 * GIB}]}
json.dump({"driver_version": "550.54.15", "release_on_exit": True,
           "devices": [dev(0, int(sys.argv[2])), dev(1, int(sys.argv[3]))]},
          open(sys.argv[1], "w"))
PY
}

# hbmctl on the fake NVML: status writes $tmp/s.json; holder PID JQ reads a field of PID's
# host facts there, dev N FIELD one of device N; about PID lists the ids of doctor's findings
# whose evidence names PID.
status() { "$HBMCTL" status --backend nvml --json >"$tmp/s.json"; }
holder() { jq -r "[.. | objects | select(.pid? == $1 and has(\"container_state\")) | $2] | first" \
               "$tmp/s.json"; }
dev() { jq -r ".devices[$1].$2" "$tmp/s.json"; }
about() { "$HBMCTL" doctor --backend nvml --json |
              jq -c "[.findings[] | select([.. | numbers] | index($1)) | .id]"; }

# docker_scene: the scratch directory, the fake NVML, an audit log there, the daemon and the
# image.
docker_scene() {
    scratch KILL
    fake_nvml
    export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
    docker_start
    ctr_image
}
