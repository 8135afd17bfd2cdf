#!/bin/bash
# Credentials never leave hbmctl: a real server process started with --api-key, --hf-token=,
# HF_TOKEN=..., a user:password URL (and a key in its environment) holds a chip of the fake
# DCMI; no output of any command, no metric and no audit record carries a secret, and the
# argument count of its command line is kept.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
unset HBMCTL_CATALOG
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$tmp/bin"
cat >"$tmp/bin/vllm" <<'PY'
import time
time.sleep(600)
PY
py=$(python3 -c 'import sys; print(sys.executable)') # the interpreter, not a shim
port=""
for try in 1 2 3 4 5 6 7 8 9 10; do
    p=$((20000 + RANDOM % 30000))
    listening "$p" || { port=$p; break; }
done
# A worker whose parent exits at once: an orphan holder that clean ends (and audits).
(OPENAI_API_KEY=sk-envSECRET5 setsid "$py" "$tmp/bin/vllm" serve /models/qwen \
    --api-key sk-liveSECRET1 --hf-token=hf_SECRET2 HF_TOKEN=hf_SECRET3 \
    --download-url http://alice:SECRET4@mirror.example:8080/x --port "$port" \
    --max-num-batched-tokens 8192 --multiprocessing-fork >/dev/null 2>&1 & echo $! >"$tmp/pid")
srv=$(cat "$tmp/pid")
pids+=("$srv")
for _ in $(seq 50); do grep -q api-key "/proc/$srv/cmdline" 2>/dev/null && break; sleep 0.1; done
nargs=$(tr -cd '\0' <"/proc/$srv/cmdline" | wc -c)
cat >"$tmp/scenario.json" <<JSON
{"driver_version": "24.1.rc2", "cards": [
 {"card_id": 0, "chips": [{"logic_id": 0, "phy_id": 0, "name": "910B3", "health": "OK",
  "hbm": {"total_mb": 65536, "used_mb": 30000},
  "processes": [{"pid": $srv, "memory": 27917287424}]}]}]}
JSON

secret='SECRET[1-5]'
clean_of_secrets() { # NAME FILE
    check "$1: no secret" bash -c '! grep -qE "$0" "$1"' "$secret" "$2"
}
"$HBMCTL" status >"$tmp/status.txt"
clean_of_secrets "status" "$tmp/status.txt"
"$HBMCTL" status --json >"$tmp/status.json"
clean_of_secrets "status --json" "$tmp/status.json"
cmd=$(jq -r ".host.holders[] | select(.pid==$srv) | .cmdline" "$tmp/status.json")
check "the command line is there: $cmd" grep -q -- "--api-key <redacted> --hf-token=<redacted> HF_TOKEN=<redacted> --download-url http://<redacted>@mirror.example:8080/x --port $port --max-num-batched-tokens 8192 --multiprocessing-fork" <<<"$cmd"
check "argument count kept ($nargs)" test "$(wc -w <<<"$cmd")" = "$nargs"
"$HBMCTL" snapshot >"$tmp/snap.json"
clean_of_secrets "snapshot" "$tmp/snap.json"
"$HBMCTL" doctor >"$tmp/doctor.txt"
clean_of_secrets "doctor" "$tmp/doctor.txt"
"$HBMCTL" doctor --json >"$tmp/doctor.json"
clean_of_secrets "doctor --json" "$tmp/doctor.json"
check "findings evidence carries the redacted command line" \
    test "$(jq "[.. | objects | .cmdline? // empty | select(test(\"api-key <redacted>\"))] | length" \
        "$tmp/doctor.json")" -ge 1
"$HBMCTL" clean >"$tmp/clean.txt"
clean_of_secrets "clean (dry run)" "$tmp/clean.txt"
echo "curl: (7) Failed to connect to 127.0.0.1 port $port: Connection refused" >"$tmp/app.log"
"$HBMCTL" explain --live --json "$tmp/app.log" >"$tmp/explain.json"
clean_of_secrets "explain --live --json" "$tmp/explain.json"
check "explain names the server" test \
    "$(jq "[.. | objects | select(.pid? == $srv)] | length" "$tmp/explain.json")" -ge 1
"$HBMCTL" exporter --once >"$tmp/metrics.txt"
clean_of_secrets "exporter --once" "$tmp/metrics.txt"
"$HBMCTL" exporter --listen 127.0.0.1:0 2>"$tmp/exporter.err" &
exporter=$!
pids+=("$exporter")
for _ in $(seq 100); do grep -q "port [0-9]" "$tmp/exporter.err" && break; sleep 0.1; done
eport=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/exporter.err")
curl -sf "http://127.0.0.1:$eport/metrics" >"$tmp/scrape.txt"
check "scrape has the process" grep -q "pid=\"$srv\"" "$tmp/scrape.txt"
clean_of_secrets "exporter scrape" "$tmp/scrape.txt"
kill "$exporter"

# A snapshot written before redaction existed is redacted when read back.
jq --arg c "python3 vllm serve --api-key sk-oldSECRET1 --port 1" \
    '(.host.holders[] | select(.cmdline|test("api-key"))).cmdline = $c' "$tmp/snap.json" >"$tmp/old.json"
"$HBMCTL" status --json --snapshot "$tmp/old.json" >"$tmp/replay.json"
clean_of_secrets "old snapshot replayed" "$tmp/replay.json"

if [ "$(sed 's/.*) //' "/proc/$srv/stat" | cut -d' ' -f2)" = 1 ]; then
    "$HBMCTL" clean --apply >"$tmp/apply.txt" 2>&1
    clean_of_secrets "clean --apply" "$tmp/apply.txt"
    check "audit log written" test -s "$tmp/audit.jsonl"
    clean_of_secrets "audit log" "$tmp/audit.jsonl"
fi
finish
