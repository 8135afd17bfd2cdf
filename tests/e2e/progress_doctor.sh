#!/bin/bash
# doctor finds a local inference server by itself (a process named vllm with --port N and a
# listener of its own on N), reads its /metrics twice --progress-interval apart and reports
# server-stalled with the counters as evidence when work waits and no token came; nothing
# when tokens advance; server-progress-unknown when the page cannot be read. With no server
# to ask it does not wait. The two samples are part of the observation: `hbmctl snapshot`
# keeps them, and `doctor --snapshot` gives the findings the live doctor gave. The host is a
# root prefix showing only this test's processes.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
. "$HBM_SRC/tests/e2e/lib/engine.bash"
scratch
fake_nvml
echo '{"driver_version": "550.54.15", "devices": []}' >"$tmp/scenario.json"
control '{"running": 3, "waiting": 12, "mode": "freeze"}'
start_engine vllm
URL="http://127.0.0.1:$port/metrics"
make_root "$tmp/root" yes
ln -s /proc/net "$tmp/root/proc/net" # the listeners, as the host shows them
doctor() { # ARGS...: JSON findings into $tmp/d.json, exit in rc
    "$HBMCTL" doctor --root "$tmp/root" --json "$@" >"$tmp/d.json"
    rc=$?
}
has() { [ "$(jq "[.findings[] | select($1)] | length" "$tmp/d.json")" -ge 1 ]; }

doctor --progress-interval 1s
check "frozen with work: server-stalled, exit 1" has \
    '.id == "server-stalled" and .evidence.url == "'"$URL"'" and .evidence.pid == '"$engine_pid"
check "exit 1" test "$rc" = 1
check "evidence: the counters" has '.id == "server-stalled" and .evidence.running == 3 and
    .evidence.waiting == 12 and .evidence.tokens_before == .evidence.tokens_after and
    .evidence.model == "m1" and .evidence.seconds_without_token >= 0.9'
jq -r '.findings[] | select(.id == "server-stalled") | .summary' "$tmp/d.json" | sed 's/^/  /'
"$HBMCTL" doctor --root "$tmp/root" --progress-interval 1s >"$tmp/d.txt"
check "human output names the stall" grep -q "server-stalled" "$tmp/d.txt"

# The same observation written down, then judged anywhere: the same findings, the stall
# included (doctor reads the samples the snapshot carries; it asks no server).
"$HBMCTL" snapshot --root "$tmp/root" --progress-interval 1s -o "$tmp/s.json"
check "snapshot keeps the server's two samples" \
    test "$(jq '[.servers[] | select(.pid == '"$engine_pid"' and .up and
                 .engines[0].state == "stalled")] | length' "$tmp/s.json")" = 1
check "snapshot records the interval" test "$(jq '.servers_interval_seconds' "$tmp/s.json")" = 1
"$HBMCTL" doctor --root "$tmp/root" --json --progress-interval 1s >"$tmp/live.json"
kill -STOP "$engine_pid" # a replay must not ask the server: stopped, it could not answer
"$HBMCTL" doctor --snapshot "$tmp/s.json" --json >"$tmp/replay.json"
kill -CONT "$engine_pid"
ids() { jq -c '[.findings[] | {id, severity, device, summary: (.summary | sub("[0-9]+s"; "Ns"))}]' "$1"; }
check "doctor --snapshot: server-stalled replayed" \
    test "$(jq '[.findings[] | select(.id == "server-stalled")] | length' "$tmp/replay.json")" = 1
check "doctor --snapshot: the live doctor's findings" test "$(ids "$tmp/live.json")" = "$(ids "$tmp/replay.json")"
ev() { jq -c '.findings[] | select(.id == "server-stalled") | .evidence | del(.seconds_without_token)' "$1"; }
check "replayed evidence: the live doctor's counters" test "$(ev "$tmp/live.json")" = "$(ev "$tmp/replay.json")"

control '{"running": 3, "waiting": 12, "mode": "advance"}'
doctor --progress-interval 1s
check "advancing: no server finding" \
    test "$(jq '[.findings[] | select(.id | startswith("server-"))] | length' "$tmp/d.json")" = 0

control '{"metrics": "garbage"}'
doctor --progress-interval 1s
check "garbage page: could not tell (info)" has \
    '.id == "server-progress-unknown" and .severity == "info" and (.evidence.why | test(":1: "))'

control '{"running": 3, "waiting": 12, "mode": "freeze"}'
doctor --progress-interval 0
check "--progress-interval 0: not asked" \
    test "$(jq '[.findings[] | select(.id | startswith("server-"))] | length' "$tmp/d.json")" = 0

# no server on the host: no wait, even with a long interval
sleep 600 &
pids=("$!")
rm -rf "$tmp/root2"
make_root "$tmp/root2" yes
ln -s /proc/net "$tmp/root2/proc/net"
t0=$(date +%s.%N)
"$HBMCTL" doctor --root "$tmp/root2" --progress-interval 30s >/dev/null
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "  doctor without a server: %.2fs\n", b - a }'
check "no server found: doctor does not wait" awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 10) }'
kill "${pids[0]}" "$engine_pid" 2>/dev/null
finish
