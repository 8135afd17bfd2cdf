# Sourced by the bench scripts (not a bench: not executable). Medians, timing of one
# command (wall or CPU), and filling the host with idle processes at the sizes every bench uses.
# The caller sets BENCH_BUILD (the build directory) and BENCH_TMP (its scratch directory).

# Host sizes, in processes the bench adds: HBM_BENCH_SIZES="1000 5000 20000" by default.
bench_sizes() { echo "${HBM_BENCH_SIZES:-1000 5000 20000}"; }

bench_median() { # FILE: the median of the numbers in it, one a line
    sort -n "$1" | awk '{ v[NR] = $1 }
        END { if (!NR) print 0; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

bench_ratio() { # A B: A / B with two decimals, "-" when B is 0
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'
}

bench_time() { # CMD...: its wall time in milliseconds (its output and status ignored)
    # $EPOCHREALTIME: no clock program forked inside the timed span
    local t0 t1
    t0=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 </dev/null || true
    t1=$EPOCHREALTIME
    awk -v a="${t0/,/.}" -v b="${t1/,/.}" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
}

bench_cpu_time() { # CMD...: its CPU time, user + system, in milliseconds (bench/cpu_time.c)
    "$BENCH_BUILD/bench_cpu_time" "$@"
}

# bench_fill N [bench_procs options]: N more idle processes (bench/procs.c), held until
# bench_unfill or the script's exit (the helper ends them when its stdin closes). Returns 1,
# saying why, when the host has no room: the pids (pid_max less the tasks already running,
# 4,096 kept free for everyone else) or the memory (200 KiB each, 1 GiB kept free).
bench_fill() {
    local n=$1
    shift
    local max tasks avail_kib
    max=$(cat /proc/sys/kernel/pid_max)
    tasks=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
    avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    if ((tasks + n + 4096 > max)); then
        echo "skipped $n processes: $tasks tasks run and pid_max is $max"
        return 1
    fi
    if ((n * 200 + 1048576 > avail_kib)); then
        echo "skipped $n processes: only $((avail_kib / 1024)) MiB available"
        return 1
    fi
    rm -f "$BENCH_TMP/fill.in"
    mkfifo "$BENCH_TMP/fill.in"
    "$BENCH_BUILD/bench_procs" "$n" "$@" <"$BENCH_TMP/fill.in" >"$BENCH_TMP/fill.out" &
    BENCH_FILL_PID=$!
    exec {BENCH_FILL_FD}>"$BENCH_TMP/fill.in"
    # a fork takes up to 20 ms on a loaded 2-core machine
    local t
    for ((t = 0; t < 600 + n / 5; t++)); do
        grep -q '^ready' "$BENCH_TMP/fill.out" 2>/dev/null && return 0
        kill -0 "$BENCH_FILL_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench_procs did not start $n processes" >&2
    bench_unfill
    return 2
}

bench_unfill() {
    [ -n "${BENCH_FILL_FD:-}" ] || return 0
    exec {BENCH_FILL_FD}>&-
    wait "$BENCH_FILL_PID" 2>/dev/null
    BENCH_FILL_FD=
}
