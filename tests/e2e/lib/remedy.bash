# The remediation policy's tests (source after common.bash and scratch). The policy removes
# stale SysV segments and /dev/shm objects: it must never see the host's, so each test runs
# in a private IPC namespace with its own /dev/shm (remedy_private_shm, first thing).
remedy_private_shm() { # "$0" "$@"
    if [ -z "${REMEDY_IN_NS:-}" ]; then
        if ! unshare --ipc --mount --propagation private true 2>/dev/null; then
            echo "SKIP: needs root for a private IPC and mount namespace"
            exit 77
        fi
        exec unshare --ipc --mount --propagation private env REMEDY_IN_NS=1 bash "$@"
    fi
    mount -t tmpfs -o size=1m tmpfs /dev/shm || { echo "FAIL: cannot mount /dev/shm"; exit 1; }
}

# remedy_devices: "device files" $tmp/accel/davinci0..5 that HBMCTL_DEVICE_PATTERNS matches, as a
# real holder keeps /dev/davinciN open; the audit log under $tmp. Not under a directory named
# dev: the default patterns find davinci* below any .../dev/, and every test running beside
# this one would see them held and refuse its own holders (tests/e2e/suite_isolation.sh).
remedy_devices() {
    export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
    mkdir -p "$tmp/accel"
    for i in 0 1 2 3 4 5; do : >"$tmp/accel/davinci$i"; done
    export HBMCTL_DEVICE_PATTERNS="$tmp/accel/davinci*"
}

# remedy_orphan VAR N: VAR = the pid of a real orphan (VLLM::EngineCor, parent gone) holding
# device file N, in $pids. Skips the test where orphans go to a subreaper rather than init.
remedy_orphan() {
    local p
    p=$("$HBM_BUILD/doc_proc" orphan 7<"$tmp/accel/davinci$2")
    pids+=("$p")
    if [ "$(sed 's/.*) //' "/proc/$p/stat" | cut -d' ' -f2)" != 1 ]; then
        echo "SKIP: orphans are adopted by a subreaper here, not by init"
        exit 77
    fi
    printf -v "$1" %s "$p"
}

# remedy_scenario PID...: the fake DCMI lists the i-th pid on chip i (0: none), 26 GiB each.
remedy_scenario() {
    python3 - "$tmp/scenario.json" "$@" <<'PY'
import json, sys
out, ps = sys.argv[1], [int(p) for p in sys.argv[2:]]
def chip(i, pid):
    return {"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
            "hbm": {"total_mb": 65536, "used_mb": 30000 if pid else 3400},
            "processes": [{"pid": pid, "memory": 26 * 2**30}] if pid else []}]}
json.dump({"cards": [chip(i, p) for i, p in enumerate(ps)]}, open(out, "w"))
PY
}

# remedy_gone PID: ended (gone, or a zombie where nothing reaps here); waits up to 5 s.
remedy_gone() {
    local st
    for _ in $(seq 50); do
        st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
        [ "${st:-Z}" = Z ] && return 0
        sleep 0.1
    done
    return 1
}
