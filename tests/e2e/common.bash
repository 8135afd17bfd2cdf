# Shared by the end-to-end tests: check NAME CMD... records a pass or a failure;
# finish prints the tally and exits non-zero when anything failed.
HBM_PASSED=0
HBM_FAILED=0

check() {
    local name=$1
    shift
    if "$@"; then
        HBM_PASSED=$((HBM_PASSED + 1))
    else
        HBM_FAILED=$((HBM_FAILED + 1))
        echo "FAIL: $name" >&2
    fi
}

finish() {
    echo "$HBM_PASSED passed, $HBM_FAILED failed"
    [ "$HBM_FAILED" -eq 0 ]
}

# scratch [SIGNAL]: a scratch directory $tmp and an array $pids for the processes the test
# starts; on exit, failure included, each of them gets SIGNAL (default TERM), the shell's
# children are reaped and $tmp is removed.
scratch() {
    tmp=$(mktemp -d)
    pids=()
    HBM_STOP_SIGNAL=${1:-TERM}
    trap scratch_cleanup EXIT
}

scratch_cleanup() {
    local p
    for p in "${pids[@]}"; do kill -s "$HBM_STOP_SIGNAL" "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}

# fake_dcmi, fake_nvml: hbmctl reads that fake driver, whose scenario is $tmp/scenario.json
# (call scratch first). With fake_nvml the DCMI library is missing, so auto picks NVML.
fake_dcmi() {
    export HBMCTL_DCMI_LIB="$HBM_FAKES/libdcmi.so"
    export HBM_FAKE_DCMI_SCENARIO="$tmp/scenario.json"
}

fake_nvml() {
    export HBMCTL_NVML_LIB="$HBM_FAKES/libnvidia-ml.so.1"
    export HBMCTL_DCMI_LIB="$tmp/no-such-libdcmi.so"
    export HBM_FAKE_NVML_SCENARIO="$tmp/scenario.json"
}

# A /proc under a root prefix showing the processes in $pids (and hbmctl itself): with
# kthreadd, as the host's PID namespace shows it; without, as a container's does. This makes
# both judgements reproducible wherever the test itself runs.
make_root() { # DIR yes|no (with kthreadd)
    mkdir -p "$1/proc"
    for f in self stat meminfo uptime; do ln -s "/proc/$f" "$1/proc/$f"; done
    for p in "${pids[@]}"; do ln -s "/proc/$p" "$1/proc/$p"; done
    if [ "$2" = yes ]; then
        mkdir "$1/proc/2"
        echo "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 2 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0" >"$1/proc/2/stat"
    fi
}
