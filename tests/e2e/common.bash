# The end-to-end tests' harness, sourced by every tests/e2e/*.sh (and tests/hw/).
#
# Tallying tests: check NAME CMD... records a pass or a failure (a failure shows the command,
# its exit status and output, and the files it read); finish prints the tally and
# exits non-zero when anything failed; scratch gives a scratch directory and reaps what the
# test started.
# Stop-at-first-failure tests (run_*.sh): run_scratch gives a scratch directory $T and
# kills every process and segment the test recorded; fail stops with the hbmctl log.
HBM_PASSED=0
HBM_FAILED=0

check() {
    # the locals' names are the harness's own: a checked function reads the test's globals
    # (out, rc, ...), which a local of the same name would hide
    local hbm_check_name=$1 hbm_check_out hbm_check_rc
    shift
    hbm_check_out=$(mktemp)
    "$@" >"$hbm_check_out" 2>&1
    hbm_check_rc=$?
    if [ "$hbm_check_rc" -eq 0 ]; then
        HBM_PASSED=$((HBM_PASSED + 1))
    else
        HBM_FAILED=$((HBM_FAILED + 1))
        echo "FAIL: $hbm_check_name" >&2
        check_report "$hbm_check_out" "$hbm_check_rc" "$@" >&2
    fi
    rm -f "$hbm_check_out"
}

# What a failed check expected and what it got: the command (its arguments are the
# expectation: a pattern, a value, a bound), its exit status and output, and the head of every
# file it was given (what the check read).
check_report() {
    local hbm_report_out=$1 hbm_report_rc=$2 hbm_report_arg
    shift 2
    printf '  expected: %s\n' "$(printf '%q ' "$@")"
    printf '  got: exit %s\n' "$hbm_report_rc"
    [ -s "$hbm_report_out" ] && sed -n '1,20s/^/  | /p' "$hbm_report_out"
    for hbm_report_arg in "$@"; do
        [ -f "$hbm_report_arg" ] && [ -r "$hbm_report_arg" ] || continue
        printf '  got in %s:\n' "$hbm_report_arg"
        head -c 4096 "$hbm_report_arg" | sed -n '1,20s/^/  | /p'
    done
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

# run_scratch: strict mode, the scratch directory $T, the array $BGPIDS of background
# processes, and $LOG (the hbmctl log fail shows). On exit each of $BGPIDS (and its
# children) is killed, so is every pid recorded with its start time in $T/pids.*, every
# SysV segment id in $T/shmid.* is removed, and $T goes.
run_scratch() {
    set -u
    : "${HBMCTL:?HBMCTL must name the hbmctl binary}"
    : "${HBM_BUILD:?HBM_BUILD must name the build directory}"
    H=${HBM_HELPERS:-$HBM_BUILD}
    T=$(mktemp -d /tmp/hbm-run-test.XXXXXX)
    BGPIDS=()
    LOG=
    trap run_cleanup EXIT
}

run_cleanup() {
    local f p st id
    for p in "${BGPIDS[@]}"; do
        # an unshare'd hbmctl is the child of unshare: end it first (PID 1 takes its
        # namespace down with it)
        pkill -KILL -P "$p" 2>/dev/null
        kill -KILL "$p" 2>/dev/null
    done
    for f in "$T"/pids.*; do
        [ -f "$f" ] || continue
        while read -r p st; do
            if same_alive "$p" "$st"; then kill -KILL "$p" 2>/dev/null; fi
        done <"$f"
    done
    for f in "$T"/shmid.*; do
        [ -f "$f" ] || continue
        read -r id <"$f" && ipcrm -m "$id" 2>/dev/null
    done
    rm -rf "$T"
}

fail() {
    echo "FAIL: $*" >&2
    if [ -n "${LOG:-}" ] && [ -f "$LOG" ]; then
        echo "--- hbmctl log ($LOG):" >&2
        cat "$LOG" >&2
    fi
    exit 1
}

# Field 22 (start time) and field 3 (state) of /proc/PID/stat, parsed after the last ')'.
proc_start() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $20}'; }
proc_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $1}'; }

# True when pid is alive (not a zombie) and is still the process that had start time st.
same_alive() {
    local s
    s=$(proc_start "$1") || return 1
    [ -n "$s" ] && [ "$s" = "$2" ] && [ "$(proc_state "$1")" != Z ]
}

wait_file() { # FILE SECONDS
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

now() { date +%s.%N; }
elapsed_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# A writable cgroup v2: the mount from mountinfo, our own cgroup, and a trial mkdir.
cgroup2_writable() {
    local mnt path dir
    mnt=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2") print $5; break } }' /proc/self/mountinfo | head -n1)
    [ -n "$mnt" ] || { echo "no cgroup2 mount"; return 1; }
    path=$(sed -n 's/^0:://p' /proc/self/cgroup | head -n1)
    dir="$mnt$path"
    dir=${dir%/}
    if mkdir "$dir/hbm-test-probe.$$" 2>/dev/null; then
        rmdir "$dir/hbm-test-probe.$$"
        return 0
    fi
    echo "$dir is not writable"
    return 1
}

# orphan_in_pod: an orphaned vLLM worker (doc_proc orphan, in $orphan) seen under the root
# $tmp/root as a process of pod ml/vllm-0 (uid in $pod_uid) whose container is gone: only the
# kubelet's pod log directory names it. Exits 77 where a subreaper adopts orphans.
orphan_in_pod() {
    orphan=$("$HBM_BUILD/doc_proc" orphan)
    pids+=("$orphan")
    if [ "$(sed 's/.*) //' "/proc/$orphan/stat" | cut -d' ' -f2)" != 1 ]; then
        echo "SKIP: orphans are adopted by a subreaper here, not by init"
        exit 77
    fi
    pod_uid=3c7f5d84-b061-4e9d-8f40-5b0c1d2e3f44
    make_root "$tmp/root" yes
    pod_proc "$tmp/root" "$orphan" "$pod_uid"
    mkdir -p "$tmp/root/var/log/pods/ml_vllm-0_$pod_uid/vllm"
}

# pod_proc ROOT PID UID: in a root from make_root, PID's /proc entry shows a container of the
# Kubernetes pod UID (cgroup kubepods/burstable/pod<UID>/<id>), everything else as the kernel
# has it. The caller adds the runtime state or /var/log/pods entry that names the pod.
pod_proc() {
    rm "$1/proc/$2" && mkdir "$1/proc/$2"
    local f
    for f in /proc/"$2"/*; do ln -s "$f" "$1/proc/$2/"; done
    rm "$1/proc/$2/cgroup"
    echo "0::/kubepods/burstable/pod$3/$(printf '4d%.0s' $(seq 32))" >"$1/proc/$2/cgroup"
}

# fits_width FILE: every line within 100 columns, except a line that is one word (a long
# path stands whole on its own line), so the check holds wherever the checkout lies.
fits_width() {
    awk 'length($0) > 100 { w = $0; sub(/^ +/, "", w); if (w ~ / /) { print; bad = 1 } }
         END { exit bad }' "$1"
}
