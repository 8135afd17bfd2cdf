#!/bin/bash
# probe --metrics-url --stall against a real HTTP server serving vLLM-shaped /metrics: exit 0
# while tokens advance, 0 when idle, 1 once frozen with work for longer than --stall, 0 after
# the counters reset as a restart does; a corrupt state file, a page that is not Prometheus
# text, a 500, a server that never answers and one without engine metrics each give their
# documented exit and line. Two engines of one server are judged apart.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
. "$HBM_SRC/tests/e2e/lib/engine.bash"
scratch
control '{"running": 3, "waiting": 12, "mode": "advance"}'
start_engine
URL="http://127.0.0.1:$port/metrics"
STATE=$tmp/state/probe.json

probe() { # ARGS...: sets rc and out
    out=$("$HBMCTL" probe --no-devices --metrics-url "$URL" --stall 2s --state-file "$STATE" \
        --timeout 1s "$@")
    rc=$?
    echo "  exit $rc: $out"
}
expect() { # RC PATTERN
    [ "$rc" = "$1" ] && grep -qE "$2" <<<"$out"
}

probe
check "first sample, no state file: healthy" expect 0 'first sample: 3 running, 12 waiting'
check "state file written" test -s "$STATE"
probe
check "tokens advanced: progressing" expect 0 'healthy: progressing: .* tokens/s, 3 running'
control '{"running": 3, "waiting": 12, "mode": "freeze"}'
probe
check "frozen within --stall: still healthy" expect 0 'healthy: progressing: 3 running, 12 waiting, no token for'
sleep 2.2
probe
check "frozen past --stall: exit 1, one line" \
    expect 1 '^hbmctl probe: unhealthy: stalled: 3 running, 12 waiting, no token for [2-9]s \(m1, engine 0\)$'
probe
check "still stalled" expect 1 'stalled: 3 running, 12 waiting'
control '{"running": 0, "waiting": 0, "mode": "freeze"}'
probe
check "frozen and nothing to do: idle" expect 0 'healthy: idle: nothing running or waiting'
control '{"running": 0, "waiting": 4, "mode": "freeze"}'
probe
check "work arrives after idle: the stall clock starts now" expect 0 'progressing: 0 running, 4 waiting, no token for'
control '{"running": 3, "waiting": 12, "mode": "freeze"}'
sleep 2.2
probe
check "stalled again" expect 1 'stalled'
control '{"running": 3, "waiting": 12, "mode": "advance", "epoch": 1}'
probe
check "counters reset (restart): healthy" expect 0 'counters reset'
probe
check "advancing after the reset" expect 0 'progressing: .* tokens/s'

echo '{"schema": "hbmctl.progress/1", "url": 7' >"$STATE"
probe
check "corrupt state file: a first sample" expect 0 'first sample'
probe --json
check "json names the engine state" eval 'jq -e ".checks[0].engines[0].state == \"progressing\" and .checks[0].engines[0].model == \"m1\" and .exit == 0" <<<"$out" >/dev/null'

control '{"metrics": "garbage"}'
probe
check "garbage page: exit 2, file and line" \
    expect 2 "could not check: http://127.0.0.1:$port/metrics:1: .*not a Prometheus text page"
control '{"metrics": "500"}'
probe
check "HTTP 500: unhealthy" expect 1 "unhealthy: http://127.0.0.1:$port/metrics: HTTP 500"
control '{"metrics": "hang"}'
probe
check "no answer: unhealthy" expect 1 "unhealthy: .*no answer within 1s"
control '{"running": 1, "mode": "advance"}'
out=$("$HBMCTL" probe --no-devices --metrics-url "http://127.0.0.1:$port/health" \
    --state-file "$tmp/other.json")
rc=$?
check "no engine metrics: exit 2" expect 2 'could not check: .*no vLLM, SGLang or MindIE metric'

# two engines: the second frozen while the first advances is still a stall
rm -f "$STATE"
control '{"running": 2, "waiting": 1, "engines": 2, "frozen_engines": [1]}'
probe
probe
sleep 2.2
probe
check "multi-engine: the frozen engine is stalled" expect 1 'stalled: 2 running, 1 waiting, .*engine 1\)'
probe --json
check "engine 0 progressing, engine 1 stalled" eval 'jq -e "[.checks[0].engines[].state] == [\"progressing\",\"stalled\"]" <<<"$out" >/dev/null'
out=$("$HBMCTL" probe --no-devices --metrics-url "http://u:secret@127.0.0.1:$port/metrics" \
    --stall 2s --state-file "$tmp/cred.json" --json)
check "no password in the output" eval '! grep -q secret <<<"$out" && ! grep -q secret "$tmp/cred.json"'
# --npd stalled: node-problem-detector's protocol (exit 0 OK, 1 NonOK, 2 Unknown, one line
# of at most 80 characters) over the same state file
npd() { # sets rc and out
    out=$("$HBMCTL" probe --npd stalled --metrics-url "$URL" --stall 2s \
        --state-file "$tmp/npd.json" 2>&1)
    rc=$?
}
control '{"running": 3, "waiting": 12, "mode": "advance"}'
npd
npd
check "npd: progressing is OK" test "$rc" -eq 0
control '{"running": 3, "waiting": 12, "mode": "freeze"}'
npd
sleep 2.2
npd
check "npd: a stall is NonOK in one line of at most 80 characters" \
    eval '[ "$rc" -eq 1 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && [ "${#out}" -le 80 ] && grep -q "^server: stalled: 3 running, 12 waiting" <<<"$out"'
out=$("$HBMCTL" probe --npd stalled 2>&1)
rc=$?
check "npd: no --metrics-url is Unknown" eval '[ "$rc" -eq 2 ] && grep -q "^unknown: " <<<"$out"'
finish
