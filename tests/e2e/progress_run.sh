#!/bin/bash
# run --stall 3s --restart on-failure: the supervised server (a real HTTP server serving
# vLLM-shaped /metrics and a /health that keeps answering 200) is restarted once its token
# counters freeze with work waiting, and only then: not while tokens advance, not while idle.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
. "$HBM_SRC/tests/e2e/lib/engine.bash"
scratch
port=$(free_port)
LOG=$tmp/log
starts() { wc -l <"$tmp/starts" 2>/dev/null || echo 0; }
control '{"running": 2, "waiting": 5, "mode": "advance"}'
"$HBMCTL" run --grace 3s --health-url "http://127.0.0.1:$port/health" --health-interval 300ms \
    --health-timeout 1s --stall 3s --restart on-failure --max-restarts 1 --backoff 100ms \
    -- python3 "$HBM_SRC/tests/helpers/fake_engine.py" "$port" "$tmp/control.json" \
    "$tmp/starts" 2>"$LOG" &
h=$!
pids+=("$h")
for ((i = 0; i < 100; i++)); do grep -q 'ready after' "$LOG" && break; sleep 0.1; done
check "ready" grep -q 'ready after' "$LOG"
sleep 4
check "advancing for 4s: not restarted" test "$(starts)" = 1
control '{"running": 0, "waiting": 0, "mode": "freeze"}'
sleep 4
check "idle for 4s: not restarted" test "$(starts)" = 1
control '{"running": 2, "waiting": 5, "mode": "freeze"}'
t0=$(date +%s.%N)
for ((i = 0; i < 150; i++)); do [ "$(starts)" -ge 2 ] && break; sleep 0.1; done
t1=$(date +%s.%N)
check "frozen with work: restarted" test "$(starts)" = 2
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "restart %.1fs after the freeze\n", b - a }'
check "restart not before --stall" awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 2.9) }'
check "the stall line" grep -qE 'unhealthy: stalled: 2 running, 5 waiting, no token for [3-4]s' "$LOG"
check "drained, then restarted" grep -q 'restarting in' "$LOG"
control '{"running": 2, "waiting": 5, "mode": "advance"}'
for ((i = 0; i < 100; i++)); do [ "$(grep -c 'ready after' "$LOG")" -ge 2 ] && break; sleep 0.1; done
check "ready again after the restart" test "$(grep -c 'ready after' "$LOG")" = 2
kill -TERM "$h"
wait "$h"
check "exit 143 on SIGTERM" test $? = 143
check "summary counts the stall" grep -q 'stalls: 1' "$LOG"
sed 's/^/  /' "$LOG"
finish
