#!/bin/bash
# Credentials never leave hbmctl, and nothing raw reaches a terminal (docs/safety.md). Real
# processes hold chips of the fake DCMI: a server started with a credential in every form of
# the redaction rule (and one in its environment), one whose command line is cut at the
# length limit inside a URL's password, one named with ESC/BEL/CR and C1 bytes. No output of
# any command (text and JSON), no metric, no audit record and no explain report carries a
# secret; the argument count is kept; innocuous options keep their values; no text output,
# scrape or lease listing carries a raw control byte, C1 control or invalid UTF-8.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
unset HBMCTL_CATALOG
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$tmp/bin"
cat >"$tmp/bin/vllm" <<'PY'
import ctypes, sys, time
if len(sys.argv) > 1 and sys.argv[1] == "evil":  # a process name holding ESC, BEL, CR, C1
    ctypes.CDLL(None).prctl(15, b"ev\x1b]0;pwn\x07\r\x9b\x7fx", 0, 0, 0)
time.sleep(600)
PY
py=$(python3 -c 'import sys; print(sys.executable)') # the interpreter, not a shim
port=""
for try in 1 2 3 4 5 6 7 8 9 10; do
    p=$((20000 + RANDOM % 30000))
    listening "$p" || { port=$p; break; }
done
# A worker whose parent exits at once: an orphan holder that clean ends (and audits).
(OPENAI_API_KEY=sk-envS3CR3T0 setsid "$py" "$tmp/bin/vllm" serve /models/qwen \
    --api-key sk-liveS3CR3T1 --hf-token=hf_S3CR3T2 HF_TOKEN=hf_S3CR3T3 \
    --download-url http://alice:S3CR3T4@mirror.example:8080/x --port "$port" \
    "--api-key S3CR3T5" --admin-api-key -S3CR3T6 --passphrase S3CR3T7 --auth S3CR3T8 \
    --bearer S3CR3T9 --cookie session=S3CR3Ta -H "Authorization: Bearer S3CR3Tb" \
    --webhook "https://h.example/x?token=S3CR3Tc&api_key=S3CR3Td&X-Amz-Signature=S3CR3Te&sig=S3CR3Tf&n=1" \
    --mirror http://bob:pa/S3CR3Tg@m.example/x --extra '{"api_key": "S3CR3Th"}' \
    --py "{'hf_token': 'S3CR3Ti'}" AWS_SECRET_ACCESS_KEY=S3CR3Tj \
    --max-num-batched-tokens 8192 --tokenizer /models/tok --disable-log-requests \
    --tokenizer-mode auto --multiprocessing-fork >/dev/null 2>&1 & echo $! >"$tmp/pid")
srv=$(cat "$tmp/pid")
pids+=("$srv")
# A command line longer than hbmctl reads (64 KiB), cut inside a URL's password.
lead="$py"$'\n'"$tmp/bin/vllm"$'\n'serve$'\n'--filler$'\n'
fill=$((65535 - 25 - ${#lead} - 10)) # the URL starts 25 bytes before the cut
filler=$(head -c "$fill" /dev/zero | tr '\0' f)
setsid "$py" "$tmp/bin/vllm" serve --filler "$filler" --mirror \
    "http://carol:S3CR3Tcut$(head -c 64 /dev/zero | tr '\0' S)@m.example/x" >/dev/null 2>&1 &
cut=$!
pids+=("$cut")
setsid "$py" "$tmp/bin/vllm" evil $'--title=\e]0;owned\a\rX\x9bY' >/dev/null 2>&1 &
evil=$!
pids+=("$evil")
for _ in $(seq 50); do
    grep -q api-key "/proc/$srv/cmdline" 2>/dev/null && grep -q ']0;pwn' "/proc/$evil/comm" &&
        break
    sleep 0.1
done
check "the long command line passes 64 KiB" test "$(wc -c <"/proc/$cut/cmdline")" -gt 65536
cat >"$tmp/scenario.json" <<JSON
{"driver_version": "24.1.rc2", "cards": [
 {"card_id": 0, "chips": [
  {"logic_id": 0, "phy_id": 0, "name": "910B3", "health": "OK",
   "hbm": {"total_mb": 65536, "used_mb": 30000},
   "processes": [{"pid": $srv, "memory": 27917287424}]},
  {"logic_id": 1, "phy_id": 1, "name": "910B3", "health": "OK",
   "hbm": {"total_mb": 65536, "used_mb": 30000},
   "processes": [{"pid": $cut, "memory": 27917287424}]},
  {"logic_id": 2, "phy_id": 2, "name": "910B3", "health": "OK",
   "hbm": {"total_mb": 65536, "used_mb": 30000},
   "processes": [{"pid": $evil, "memory": 27917287424}]}]}]}
JSON

secret='S3CR3T'
clean_of_secrets() { # NAME FILE
    check "$1: no secret" bash -c '! grep -aq "$0" "$1" || { grep -ao ".\{30\}$0.\{10\}" "$1" >&2; false; }' \
        "$secret" "$2"
}
# raw_free NAME FILE: no byte below 0x20 but newline and tab, no DEL, valid UTF-8 with no C1.
raw_free() {
    check "$1: nothing raw for a terminal" python3 - "$2" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
bad = sorted({c for c in b if (c < 0x20 and c not in (9, 10)) or c == 0x7f})
try:
    c1 = sorted({hex(ord(ch)) for ch in b.decode('utf-8') if 0x80 <= ord(ch) <= 0x9f})
except UnicodeDecodeError as e:
    sys.exit(f"{sys.argv[1]}: invalid UTF-8 at byte {e.start}")
if bad or c1:
    sys.exit(f"{sys.argv[1]}: raw control bytes {bad} {c1}")
PY
}
both() { clean_of_secrets "$1" "$2"; raw_free "$1" "$2"; }

"$HBMCTL" status >"$tmp/status.txt" 2>&1
both "status" "$tmp/status.txt"
check "status shows the escaped name" grep -q 'ev\\x1b\]0;pwn\\x07\\x0d' "$tmp/status.txt"
"$HBMCTL" status --json >"$tmp/status.json"
both "status --json" "$tmp/status.json"
check "status --json is JSON" jq -e . "$tmp/status.json" >/dev/null
check "the process name stays in JSON, escaped as JSON" \
    grep -qi 'ev\\u001b\]0;pwn\\u0007\\r' "$tmp/status.json"
cmd=$(jq -r ".host.holders[] | select(.pid==$srv) | .cmdline" "$tmp/status.json")
want="--api-key <redacted> --hf-token=<redacted> HF_TOKEN=<redacted> --download-url"
want+=" http://<redacted>@mirror.example:8080/x --port $port --api-key <redacted>"
want+=" --admin-api-key <redacted> --passphrase <redacted> --auth <redacted> --bearer <redacted>"
want+=" --cookie <redacted> -H Authorization: Bearer <redacted> --webhook"
want+=" https://h.example/x?token=<redacted>&api_key=<redacted>&X-Amz-Signature=<redacted>"
want+="&sig=<redacted>&n=1 --mirror http://<redacted>@m.example/x --extra {\"api_key\":"
want+=" \"<redacted>\"} --py {'hf_token': '<redacted>'} AWS_SECRET_ACCESS_KEY=<redacted>"
want+=" --max-num-batched-tokens 8192 --tokenizer /models/tok --disable-log-requests"
want+=" --tokenizer-mode auto --multiprocessing-fork"
check "the command line is there, innocuous options whole: $cmd" grep -qF -- "$want" <<<"$cmd"
check "argument count kept" \
    test "$(wc -w <<<"$cmd")" = "$(tr '\0' ' ' <"/proc/$srv/cmdline" | wc -w)"
cutcmd=$(jq -r ".host.holders[] | select(.pid==$cut) | .cmdline" "$tmp/status.json")
check "the cut URL shows no user info: ${cutcmd: -40}" \
    test "${cutcmd: -26}" = "--mirror http://<redacted>"

"$HBMCTL" snapshot >"$tmp/snap.json"
both "snapshot" "$tmp/snap.json"
"$HBMCTL" doctor >"$tmp/doctor.txt" 2>&1
both "doctor" "$tmp/doctor.txt"
"$HBMCTL" doctor --json >"$tmp/doctor.json"
both "doctor --json" "$tmp/doctor.json"
check "findings evidence carries the redacted command line" \
    test "$(jq "[.. | objects | .cmdline? // empty | select(test(\"api-key <redacted>\"))] | length" \
        "$tmp/doctor.json")" -ge 1
"$HBMCTL" clean >"$tmp/clean.txt" 2>&1
both "clean (dry run)" "$tmp/clean.txt"
"$HBMCTL" pick 1 >"$tmp/pick.txt" 2>&1
both "pick" "$tmp/pick.txt"

# explain over a log: vLLM's non-default args line, an error line with a header, escapes
{
    echo "(APIServer pid=1) INFO 08-14 16:13:22 [utils.py:326] non-default args: {'model_tag': 'm', 'model': '/models/m', 'api_key': ['S3CR3Tk'], 'hf_token': 'S3CR3Tl', 'max_num_batched_tokens': 8192, 'tokenizer_mode': 'auto'}"
    printf 'ERROR 08-14 16:13:30 request failed: Authorization: Bearer S3CR3Tm \e]0;pwn\a\r\x9b\n'
    echo "ERROR 08-14 16:13:31 fetch https://h/m?X-Amz-Signature=S3CR3Tn failed with HF_TOKEN=S3CR3To"
    echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.14 GiB of which 1.00 GiB is free. --api-key S3CR3Tp"
    echo "curl: (7) Failed to connect to 127.0.0.1 port $port: Connection refused"
} >"$tmp/app.log"
"$HBMCTL" explain "$tmp/app.log" >"$tmp/explain.txt" 2>&1
both "explain" "$tmp/explain.txt"
check "explain still reads the launch" grep -q "max_num_batched_tokens\|OutOfMemory\|out of memory" \
    "$tmp/explain.txt"
"$HBMCTL" explain --json "$tmp/app.log" >"$tmp/explain.json"
both "explain --json" "$tmp/explain.json"
check "explain --json echoes the redacted launch" \
    grep -q "'hf_token': '<redacted>'" "$tmp/explain.json"
"$HBMCTL" explain --live --json "$tmp/app.log" >"$tmp/explain-live.json"
both "explain --live --json" "$tmp/explain-live.json"
check "explain names the server" test \
    "$(jq "[.. | objects | select(.pid? == $srv)] | length" "$tmp/explain-live.json")" -ge 1
"$HBMCTL" explain --live "$tmp/app.log" >"$tmp/explain-live.txt" 2>&1
both "explain --live" "$tmp/explain-live.txt"

"$HBMCTL" exporter --once >"$tmp/metrics.txt"
both "exporter --once" "$tmp/metrics.txt"
"$HBMCTL" exporter --listen 127.0.0.1:0 2>"$tmp/exporter.err" &
exporter=$!
pids+=("$exporter")
for _ in $(seq 100); do grep -q "port [0-9]" "$tmp/exporter.err" && break; sleep 0.1; done
eport=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/exporter.err")
curl -sf "http://127.0.0.1:$eport/metrics" >"$tmp/scrape.txt"
check "scrape has the process" grep -q "pid=\"$srv\"" "$tmp/scrape.txt"
both "exporter scrape" "$tmp/scrape.txt"
check "the escaped name is a valid label value" grep -q 'name="ev\\\\x1b\]0;pwn' "$tmp/scrape.txt"
kill "$exporter"

# A forged lease file whose name holds escapes (as JSON), held by a real lock.
mkdir -p "$tmp/leases"
printf '{"name": "job\\u001b]0;pwn\\u0007\\r\\u009b", "pid": %d, "hold_pid": %d}\n' "$evil" \
    "$evil" >"$tmp/leases/device-0.lease"
"$py" -c 'import fcntl, sys, time
f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); time.sleep(600)' \
    "$tmp/leases/device-0.lease" >/dev/null 2>&1 &
pids+=("$!")
for _ in $(seq 50); do
    "$HBMCTL" leases --lease-dir "$tmp/leases" | grep -q " held$" && break
    sleep 0.1
done
"$HBMCTL" leases --lease-dir "$tmp/leases" --all >"$tmp/leases.txt" 2>&1
raw_free "leases --all" "$tmp/leases.txt"
check "leases lists the forged name, escaped" grep -q 'job\\x1b' "$tmp/leases.txt"
# an error naming a path from outside is escaped too
"$HBMCTL" explain "$tmp/no"$'\e[2J\a'"such.log" >"$tmp/err.txt" 2>&1
raw_free "an error naming a path" "$tmp/err.txt"

# A snapshot written before redaction existed is redacted when read back.
jq --arg c "python3 vllm serve --api-key sk-oldS3CR3T1 --url http://u:S3CR3T@h --port 1" \
    '(.host.holders[] | select(.cmdline|test("api-key"))).cmdline = $c' "$tmp/snap.json" >"$tmp/old.json"
"$HBMCTL" status --json --snapshot "$tmp/old.json" >"$tmp/replay.json"
clean_of_secrets "old snapshot replayed" "$tmp/replay.json"

if [ "$(sed 's/.*) //' "/proc/$srv/stat" | cut -d' ' -f2)" = 1 ]; then
    "$HBMCTL" clean --apply >"$tmp/apply.txt" 2>&1
    both "clean --apply" "$tmp/apply.txt"
    check "audit log written (clean --apply said what it did in $tmp/apply.txt)" \
        bash -c "test -s '$tmp/audit.jsonl' || { cat '$tmp/apply.txt'; false; }"
    clean_of_secrets "audit log" "$tmp/audit.jsonl"
fi
finish
