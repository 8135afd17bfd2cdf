#!/bin/bash
# The exporter and watch follow a real HTTP server serving vLLM-shaped /metrics: tokens/s
# while it advances, hbmctl_server_stalled 1 and the seconds since the last token once its
# counters freeze with work waiting (promtool accepts the exposition; the alert rule is tested
# with the others in exporter_prometheus.sh); watch prints the server line and a STALL event
# and exits 1.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
. "$HBM_SRC/tests/e2e/lib/engine.bash"
scratch
fake_nvml
export HBMCTL_LEASE_DIR="$tmp/leases"
cat >"$tmp/scenario.json" <<EOF
{"driver_version": "550.54.15", "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0",
 "bus_id": "00000000:18:00.0", "memory_total": 85899345920, "memory_used": 1073741824,
 "compute": []}]}
EOF
control '{"running": 3, "waiting": 12, "mode": "advance"}'
start_engine
URL="http://127.0.0.1:$port/metrics"

# --- exporter ------------------------------------------------------------------------------
"$HBMCTL" exporter --listen 127.0.0.1:0 --min-interval 200ms --metrics-url "$URL" --stall 1s \
    2>"$tmp/exporter.err" &
pids+=($!)
for _ in $(seq 100); do grep -q "port [0-9]" "$tmp/exporter.err" && break; sleep 0.1; done
xurl="http://127.0.0.1:$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/exporter.err")/metrics"
value() { # METRIC -> its value for this server (first sample line)
    curl -s "$xurl" >"$tmp/m.txt"
    awk -v m="$1" -v u="url=\"$URL\"" '$1 ~ "^" m "\\{" && index($1, u) {print $2; exit}' "$tmp/m.txt"
}
curl -s -o /dev/null "$xurl"
sleep 0.3
tps=$(value hbmctl_server_tokens_per_second)
echo "  advancing: tokens/s $tps"
check "advancing: tokens/s above 0" awk -v v="${tps:-0}" 'BEGIN { exit !(v > 0) }'
check "advancing: not stalled" test "$(value hbmctl_server_stalled)" = 0
check "labels url, model, engine" \
    grep -q "hbmctl_server_stalled{url=\"$URL\",model=\"m1\",engine=\"0\"} 0" "$tmp/m.txt"
check "promtool accepts the exposition" promtool check metrics <"$tmp/m.txt"
control '{"running": 3, "waiting": 12, "mode": "freeze"}'
for _ in $(seq 50); do [ "$(value hbmctl_server_stalled)" = 1 ] && break; sleep 0.1; done
check "frozen: hbmctl_server_stalled 1" test "$(value hbmctl_server_stalled)" = 1
since=$(value hbmctl_server_seconds_since_progress)
echo "  frozen: seconds since progress $since"
check "frozen: seconds since progress >= 1" awk -v v="${since:-0}" 'BEGIN { exit !(v >= 1) }'
check "state series says stalled" \
    grep -q 'hbmctl_server_progress_state{.*state="stalled"} 1' "$tmp/m.txt"
control '{"metrics": "500"}'
for _ in $(seq 50); do [ "$(value hbmctl_server_up)" = 0 ] && break; sleep 0.1; done
check "HTTP 500: hbmctl_server_up 0" test "$(value hbmctl_server_up)" = 0
check "HTTP 500: no stale stall series" test -z "$(value hbmctl_server_stalled)"

# --- watch ---------------------------------------------------------------------------------
control '{"running": 3, "waiting": 12, "mode": "advance"}'
(sleep 1.2; control '{"running": 3, "waiting": 12, "mode": "freeze"}') &
"$HBMCTL" watch --plain --interval 300ms --count 12 --metrics-url "$URL" --stall 1s \
    >"$tmp/watch.txt"
rc=$?
grep -E 'server|STALL' "$tmp/watch.txt" | sed 's/^/  /' | sed -n '1p;$p'
check "watch: progressing line" \
    grep -q "server $URL  progressing: .* tokens/s, 3 running, 12 waiting" "$tmp/watch.txt"
check "watch: stalled line" \
    grep -qE "server $URL  stalled: 3 running, 12 waiting, no token for [0-9]+s" "$tmp/watch.txt"
check "watch: one STALL event" test "$(grep -cE "^[0-9:]+ STALL $URL: stalled" "$tmp/watch.txt")" = 1
check "watch: exit 1 after a stall" test "$rc" = 1
"$HBMCTL" watch --json --interval 200ms --count 2 --metrics-url "$URL" --stall 1s \
    >"$tmp/watch.json"
check "watch --json: servers with engines" jq -e -s \
    '.[1].servers[0].url == "'"$URL"'" and .[1].servers[0].engines[0].model == "m1"' \
    "$tmp/watch.json"
finish
