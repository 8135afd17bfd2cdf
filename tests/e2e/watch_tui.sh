#!/bin/bash
# hbmctl watch full screen, in a real terminal (tmux): it shows the devices of a fake-driver
# scene with their verdicts and history, the processes of the selected device, details on
# Enter, another sort on s, another device on Down and on a digit, and quits on q; without
# ncurses it says so.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
sock="hbmctl-watch-$$"
export TMUX_TMPDIR=$tmp # the server's socket goes away with the scratch directory
# watch runs under the tmux server: stop that first, then what scratch stops.
trap 'tmux -L "$sock" kill-server 2>/dev/null; scratch_cleanup' EXIT

GIB=1073741824
sleep 600 &
pids+=($!)
server=$!
cat >"$tmp/scenario.json" <<EOF
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": $((80 * GIB)), "memory_used": $((21 * GIB)), "temperature": 50, "power_mw": 300000,
  "compute": [{"pid": $server, "used_memory": $((20 * GIB))}]},
 {"name": "NVIDIA L4", "uuid": "GPU-1", "bus_id": "00000000:19:00.0",
  "memory_total": $((24 * GIB)), "memory_used": $((GIB / 2)), "temperature": 35, "power_mw": 70000,
  "compute": []},
 {"name": "NVIDIA A100", "uuid": "GPU-2", "bus_id": "00000000:1A:00.0",
  "memory_total": $((40 * GIB)), "memory_used": $((30 * GIB)), "temperature": 35, "power_mw": 70000,
  "compute": []}]}
EOF

tmux -L "$sock" -f /dev/null new-session -d -s w -x 140 -y 40 \
    "env HBMCTL_NVML_LIB='$HBM_FAKES/libnvidia-ml.so.1' HBMCTL_DCMI_LIB='$tmp/none.so' \
     HBM_FAKE_NVML_SCENARIO='$tmp/scenario.json' TERM=screen LANG=C.UTF-8 \
     '$HBMCTL' watch --interval 200ms; echo EXITED \$? >'$tmp/exit'; sleep 30"
screen() { tmux -L "$sock" capture-pane -p -t w; }
wait_screen() { # PATTERN: up to 30 s
    for _ in $(seq 150); do
        screen | grep -q -- "$1" && return 0
        sleep 0.2
    done
    echo "--- screen, waiting for '$1':" >&2
    screen >&2
    return 1
}
keys() { tmux -L "$sock" send-keys -t w "$@"; }

check "title line" wait_screen "hbmctl watch"
check "device 0 row with its memory and verdict" wait_screen "0 NVIDIA H100 .*21.00 GiB / 80.00 GiB .*BUSY"
check "device 1 row FREE" wait_screen "1 NVIDIA L4 .*FREE"
check "device 2 row UNACCOUNTED (30 GiB, no process)" wait_screen "2 NVIDIA A100 .*UNACCOUNTED"
check "history column" wait_screen "HISTORY"
check "processes of the selected device (0)" wait_screen "processes on device 0 (1)"
check "the process row with its pid" wait_screen "$server  sleep"
check "key help" wait_screen "q quit  s sort"
keys Down
check "Down picks device 1" wait_screen "processes on device 1 (0)"
keys 2
check "digit 2 picks device 2" wait_screen "processes on device 2"
keys Enter
check "Enter shows details" wait_screen "verdict UNACCOUNTED: "
check "details name the bus id" wait_screen "bus 00000000:1A:00.0"
keys s
check "s sorts by used memory" wait_screen "sort: used"
# Sorted by used memory, device 2 (30 GiB) is listed above device 0 (21 GiB).
order=$(screen | grep -E "^ +[0-9] NVIDIA" | awk '{print $1}' | tr -d '\n')
check "rows in used-memory order ($order)" test "$order" = 201
keys q
for _ in $(seq 100); do [ -s "$tmp/exit" ] && break; sleep 0.1; done
check "q quits with exit 0" grep -q "EXITED 0" "$tmp/exit"

# ncurses is loaded when the view starts (no other command maps it): without it, the view
# says which library and exits 2 instead of crashing
HBMCTL_NVML_LIB="$HBM_FAKES/libnvidia-ml.so.1" HBMCTL_DCMI_LIB="$tmp/none.so" \
    HBM_FAKE_NVML_SCENARIO="$tmp/scenario.json" HBMCTL_NCURSES_LIB="$tmp/none.so" TERM=screen \
    timeout 20 script -qec "'$HBMCTL' watch --interval 200ms" /dev/null >"$tmp/nolib.out" 2>&1
rc=$?
check "without ncurses: exit 2 ($rc)" test $rc -eq 2
check "... naming the library ($(tr -d '\r' <"$tmp/nolib.out"))" \
    grep -q "cannot load $tmp/none.so (install libncursesw6)" "$tmp/nolib.out"
finish
