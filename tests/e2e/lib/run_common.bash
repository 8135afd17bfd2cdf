# Shared by tests/e2e/run_*.sh: a scratch directory, cleanup of every process and segment
# a test made (also on failure), and small checks on /proc.
set -u
: "${HBMCTL:?HBMCTL must name the hbmctl binary}"
: "${HBM_BUILD:?HBM_BUILD must name the build directory}"
H=${HBM_HELPERS:-$HBM_BUILD}
T=$(mktemp -d /tmp/hbm-run-test.XXXXXX)
BGPIDS=()
LOG=

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
trap run_cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    if [ -n "$LOG" ] && [ -f "$LOG" ]; then
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
