#!/bin/bash
# hbmctl fleet over a real Prometheus that scrapes three exporters, each on its own fake
# NVML scenario: one clean, one whose GPU an orphaned vLLM worker of a pod holds, one down.
# fleet lists the three nodes, the orphan with its pod and the down node as stale (exit 1);
# with the orphan gone and the node back, exit 0. Then: --selector, a secured server
# (bearer token, basic auth), and what it says when Prometheus cannot be read (exit 2): no
# node matching, a token or password file that would forge a header or block, a server that
# never answers or answers slowly (one deadline for all queries), each naming the URL.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
. "$HBM_SRC/tests/e2e/lib/prometheus.bash"
fake_nvml
GIB=1073741824

orphan_in_pod

gpu() { # FILE USED_GIB [PID]: one H100, PID holding USED_GIB - 1
    local procs="[]"
    [ -n "${3:-}" ] && procs="[{\"pid\": $3, \"used_memory\": $((($2 - 1) * GIB))}]"
    cat >"$1.new" <<EOF
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": $((80 * GIB)), "memory_used": $(($2 * GIB)), "compute": $procs}]}
EOF
    mv "$1.new" "$1"
}
gpu "$tmp/clean.json" 0
gpu "$tmp/orphan.json" 27 "$orphan"

HBM_FAKE_NVML_SCENARIO="$tmp/clean.json" start_exporter clean --min-interval 500ms
HBM_FAKE_NVML_SCENARIO="$tmp/orphan.json" HBMCTL_ROOT="$tmp/root" \
    start_exporter orphan --min-interval 500ms
port_down=$(free_port) # nothing listens there yet
# shellcheck disable=SC2154
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: hbmctl
    honor_labels: true
    static_configs:
      - targets: ["127.0.0.1:$port_clean"]
        labels: {pool: a}
      - targets: ["127.0.0.1:$port_orphan", "127.0.0.1:$port_down"]
        labels: {pool: b}
EOF
prom_start "$tmp/prometheus.yml"
P="http://127.0.0.1:$pport"
check "Prometheus scrapes the orphan's node" \
    prom_wait "hbmctl_device_verdict{instance=\"127.0.0.1:$port_orphan\",verdict=\"ORPHANED\"}" 1
check "... and finds the third node down" prom_wait "up{instance=\"127.0.0.1:$port_down\"}" 0
check "... and the clean one up" prom_wait "up{instance=\"127.0.0.1:$port_clean\"}" 1

"$HBMCTL" fleet --prometheus "$P" --json >"$tmp/fleet.json"
check "fleet: exit 1 with an orphan and a stale node ($?)" test $? -eq 1
j() { jq -r "$1" "$tmp/fleet.json"; }
node() { echo ".nodes[] | select(.instance == \"127.0.0.1:$1\")"; }
check "fleet: three nodes" test "$(j '.nodes | length')" = 3
check "fleet: the prometheus it read" test "$(j .prometheus)" = "$P"
check "fleet: the down node is stale" test "$(j "$(node "$port_down") | .stale")" = true
check "fleet: ... and has no devices" test "$(j "$(node "$port_down") | .devices | length")" = 0
check "fleet: the clean node is FREE" \
    test "$(j "$(node "$port_clean") | \"\(.stale) \(.devices[0].verdict)\"")" = "false FREE"
check "fleet: the orphan's device is ORPHANED, 27 of 80 GiB" \
    test "$(j "$(node "$port_orphan") | .devices[0] | \"\(.verdict) \(.memory_used_bytes) \(.memory_total_bytes)\"")" = "ORPHANED $((27 * GIB)) $((80 * GIB))"
check "fleet: the orphan with its pod" \
    test "$(j "$(node "$port_orphan") | .devices[0].processes[0] | \"\(.pid) \(.memory_bytes) \(.pod.namespace)/\(.pod.name)/\(.pod.container)\"")" = "$orphan $((26 * GIB)) ml/vllm-0/vllm"
check "fleet: the clean node's holders: none, pod null never guessed" \
    test "$(j "$(node "$port_clean") | .devices[0].processes | length")" = 0
check "fleet: the orphan's node has its critical finding" \
    test "$(j "$(node "$port_orphan") | .findings[0] | \"\(.severity) \(.id)\"")" = "critical orphan-holder"
check "fleet: the hostname from hbmctl_source_info" \
    test "$(j "$(node "$port_clean") | .hostname")" = "$(hostname)"
check "fleet: worst node first" test "$(j '.nodes[0].instance')" = "127.0.0.1:$port_orphan"

"$HBMCTL" fleet --prometheus "$P" >"$tmp/fleet.txt"
check "fleet text: exit 1" test $? -eq 1
check "fleet text: the orphan's pod" grep -q "pid $orphan .* ml/vllm-0 vllm" "$tmp/fleet.txt"
check "fleet text: the stale node" grep -q "stale: its last scrape failed (127.0.0.1:$port_down)" "$tmp/fleet.txt"
check "fleet text fits 100 columns" test "$(awk '{ if (length > m) m = length } END { print m }' "$tmp/fleet.txt")" -le 100

"$HBMCTL" fleet --prometheus "$P" --selector 'pool="a"' --json >"$tmp/pool.json"
check "--selector pool=a: exit 0, only the clean node ($?)" test $? -eq 0
check "--selector pool=a: one node" test "$(jq '.nodes | length' "$tmp/pool.json")" = 1
"$HBMCTL" fleet --prometheus "$P" --selector 'pool="none"' >"$tmp/none.txt" 2>"$tmp/err"
check "no node matches: exit 2, never clean ($?)" test $? -eq 2
check "... says so ($(cat "$tmp/err"))" grep -q "no hbmctl exporter matches" "$tmp/err"
check "... naming the URL and the selector" grep -qF "$P: no hbmctl exporter matches --selector 'pool=\"none\"'" "$tmp/err"
check "... and prints no view" test ! -s "$tmp/none.txt"
"$HBMCTL" fleet --prometheus "$P" --selector 'job="node"' --json >"$tmp/none.json" 2>/dev/null
check "a job without hbmctl metrics is no fleet either: exit 2 ($?)" test $? -eq 2

# The orphan ends, its driver entry with it; the third node comes back.
kill -KILL "$orphan"
gpu "$tmp/orphan.json" 0
HBM_FAKE_NVML_SCENARIO="$tmp/clean.json" start_exporter back --listen "127.0.0.1:$port_down"
check "the node is back" prom_wait "up{instance=\"127.0.0.1:$port_down\"}" 1
check "the orphan's device is FREE" \
    prom_wait "hbmctl_device_verdict{instance=\"127.0.0.1:$port_orphan\",verdict=\"FREE\"}" 1
"$HBMCTL" fleet --prometheus "$P" --json >"$tmp/fleet.json"
check "fleet: exit 0 once everything is clean ($?)" test $? -eq 0
check "fleet: three nodes, none stale" test "$(j '[.nodes[] | select(.stale | not)] | length')" = 3

# A secured Prometheus API (a small server standing in for a reverse proxy), and answers
# fleet cannot read.
cat >"$tmp/api.py" <<'PY'
import base64, http.server, sys, time
UP = b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {"instance": "n:1", "job": "hbmctl"}, "value": [1, "1"]}]}}'
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        with open(sys.argv[1], "a") as log:  # every header line the server received
            log.write(str(self.headers))
        ok = self.headers.get("Authorization") in (
            "Bearer tok-123", "Basic " + base64.b64encode(b"fleet:pa ss").decode())
        if self.path.startswith("/hang/"):
            time.sleep(3600)
        if self.path.startswith("/slow/"):
            time.sleep(0.6)
        if self.path.startswith("/garbage/"):
            code, body = 200, b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": 3}]}}'
        elif self.path.startswith("/error/"):
            code, body = 400, b'{"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}'
        elif self.path.startswith("/empty/"):
            code, body = 200, b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
        elif not ok and not self.path.startswith("/slow/"):
            code, body = 401, b"Unauthorized"
        elif "query=up" in self.path:
            code, body = 200, UP
        else:
            code, body = 200, b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$tmp/api.py" "$tmp/headers" >"$tmp/api.port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$tmp/api.port" ] && break; sleep 0.1; done
A="http://127.0.0.1:$(cat "$tmp/api.port")"
printf 'tok-123\n' >"$tmp/token"
printf 'pa ss\n' >"$tmp/pass"
"$HBMCTL" fleet --prometheus "$A" --bearer-token-file "$tmp/token" --json >"$tmp/sec.json"
check "bearer token: accepted, one node, exit 0 ($?)" test "$(jq '.nodes | length' "$tmp/sec.json")" = 1
"$HBMCTL" fleet --prometheus "$A" --user fleet --password-file "$tmp/pass" >/dev/null
check "basic auth: accepted ($?)" test $? -eq 0
"$HBMCTL" fleet --prometheus "$A" 2>"$tmp/err"
check "no credentials: exit 2 ($?)" test $? -eq 2
check "... says HTTP 401 ($(cat "$tmp/err"))" grep -q "HTTP 401" "$tmp/err"
check "... and never prints the token" test -z "$(grep tok-123 "$tmp/err")"
"$HBMCTL" fleet --prometheus "$A/empty" --bearer-token-file "$tmp/token" >/dev/null 2>"$tmp/err"
check "an empty answer to the up query: exit 2 ($?)" test $? -eq 2
check "... no hbmctl exporter matches, naming the URL" grep -qF "$A/empty: no hbmctl exporter matches" "$tmp/err"

# Secret files that would forge a header, or block: refused before any request is made.
: >"$tmp/headers"
secret_refused() { # NAME OPTION FILE WHY
    local t0=$SECONDS
    timeout 10 "$HBMCTL" fleet --prometheus "$A" "$2" "$3" ${4:+--user fleet} >/dev/null 2>"$tmp/err"
    check "$1: exit 2 ($?)" test $? -eq 2
    check "... within a second, says why ($(cat "$tmp/err"))" test $((SECONDS - t0)) -le 1
}
printf 'tok-123\r\nX-Injected: 1\n' >"$tmp/crlf"
secret_refused "token with CR/LF" --bearer-token-file "$tmp/crlf"
check "... the control byte named" grep -q "control byte (0x0d)" "$tmp/err"
check "... the token never printed" test -z "$(grep tok-123 "$tmp/err")"
printf 'tok-123\nX-Injected: 1' >"$tmp/lf"
secret_refused "token with a bare LF inside" --bearer-token-file "$tmp/lf"
printf 'tok\x1b[2J-123\n' >"$tmp/esc"
secret_refused "token with ESC" --bearer-token-file "$tmp/esc"
printf 'tok-123\0junk\n' >"$tmp/nul"
secret_refused "token with a NUL and junk after it" --bearer-token-file "$tmp/nul"
printf 'tok 123\n' >"$tmp/space"
secret_refused "token with a space" --bearer-token-file "$tmp/space"
printf 'pa ss\r\nX-Injected: 1\n' >"$tmp/pass-crlf"
secret_refused "password with CR/LF" --password-file "$tmp/pass-crlf" user
mkfifo "$tmp/fifo"
secret_refused "token file a FIFO (nobody writes)" --bearer-token-file "$tmp/fifo"
check "... not a regular file" grep -q "not a regular file" "$tmp/err"
secret_refused "token file /dev/zero" --bearer-token-file /dev/zero
head -c 100000 /dev/zero | tr '\0' a >"$tmp/big"
secret_refused "token file of 100 kB" --bearer-token-file "$tmp/big"
check "... larger than" grep -q "larger than" "$tmp/err"
check "no request carried a forged header" test -z "$(grep -i x-injected "$tmp/headers")"
"$HBMCTL" fleet --prometheus "$A" --user 'fle:et' --password-file "$tmp/pass" 2>/dev/null
check "a user name with ':' refused: exit 2 ($?)" test $? -eq 2

# One deadline for all queries: a server that never answers, and one that answers each
# query in 0.6 s (nine queries: 5.4 s, past the 2 s given for all of them).
for path in hang slow; do
    t0=$(date +%s.%N)
    timeout 30 "$HBMCTL" fleet --prometheus "$A/$path" --bearer-token-file "$tmp/token" \
        --timeout 2s 2>"$tmp/err" >/dev/null
    rc=$?
    took=$(echo "$(date +%s.%N) - $t0" | bc)
    check "$path: exit 2 ($rc)" test $rc -eq 2
    check "$path: back within the 2 s deadline + 1 s ($took s)" test "$(echo "$took < 3" | bc)" = 1
    check "$path: names the URL and the deadline ($(cat "$tmp/err"))" \
        grep -qF "$A/$path: no answer within --timeout 2s (all queries together)" "$tmp/err"
done

"$HBMCTL" fleet --prometheus "$A/garbage" 2>"$tmp/err"
check "unreadable answer: exit 2 ($?)" test $? -eq 2
check "... names what is wrong ($(cat "$tmp/err"))" grep -q "data.result\[0\]" "$tmp/err"
check "... and the URL" grep -qF "$A/garbage, query up{" "$tmp/err"
"$HBMCTL" fleet --prometheus "$A/error" 2>"$tmp/err"
check "Prometheus error answer: exit 2 ($?)" test $? -eq 2
check "... passes its message on" grep -q "Prometheus says: parse error at char 3" "$tmp/err"
U="http://127.0.0.1:$(free_port)"
"$HBMCTL" fleet --prometheus "$U" 2>"$tmp/err"
check "unreachable: exit 2 ($?)" test $? -eq 2
check "... names the URL ($(cat "$tmp/err"))" grep -qF "$U:" "$tmp/err"
for url in "http://fleet:secret@127.0.0.1:9090" "http://fleet:se/cret@127.0.0.1:9090" \
    "http://127.0.0.1:9090/?token=secret" "ftp://fleet:secret@127.0.0.1"; do
    "$HBMCTL" fleet --prometheus "$url" 2>"$tmp/err"
    check "$url refused: exit 2 ($?)" test $? -eq 2
    check "... the secret never printed ($(cat "$tmp/err"))" test -z "$(grep -e secret -e cret "$tmp/err")"
done
finish
