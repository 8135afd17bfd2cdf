#!/bin/bash
# hbmctl fleet over a real Prometheus that scrapes three exporters, each on its own fake
# NVML scenario: one clean, one whose GPU an orphaned vLLM worker of a pod holds, one down.
# fleet lists the three nodes, the orphan with its pod and the down node as stale (exit 1);
# with the orphan gone and the node back, exit 0. Then: --selector, a secured server
# (bearer token, basic auth), and what it says when Prometheus cannot be read (exit 2).
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
import base64, http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        ok = self.headers.get("Authorization") in (
            "Bearer tok-123", "Basic " + base64.b64encode(b"fleet:pa ss").decode())
        if self.path.startswith("/garbage/"):
            code, body = 200, b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": 3}]}}'
        elif self.path.startswith("/error/"):
            code, body = 400, b'{"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}'
        elif not ok:
            code, body = 401, b"Unauthorized"
        else:
            code, body = 200, b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$tmp/api.py" >"$tmp/api.port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$tmp/api.port" ] && break; sleep 0.1; done
A="http://127.0.0.1:$(cat "$tmp/api.port")"
printf 'tok-123\n' >"$tmp/token"
printf 'pa ss\n' >"$tmp/pass"
"$HBMCTL" fleet --prometheus "$A" --bearer-token-file "$tmp/token" --json >"$tmp/sec.json"
check "bearer token: accepted, no nodes, exit 0 ($?)" test "$(jq '.nodes | length' "$tmp/sec.json")" = 0
"$HBMCTL" fleet --prometheus "$A" --user fleet --password-file "$tmp/pass" >/dev/null
check "basic auth: accepted ($?)" test $? -eq 0
"$HBMCTL" fleet --prometheus "$A" 2>"$tmp/err"
check "no credentials: exit 2 ($?)" test $? -eq 2
check "... says HTTP 401 ($(cat "$tmp/err"))" grep -q "HTTP 401" "$tmp/err"
check "... and never prints the token" test -z "$(grep tok-123 "$tmp/err")"
"$HBMCTL" fleet --prometheus "$A/garbage" 2>"$tmp/err"
check "unreadable answer: exit 2 ($?)" test $? -eq 2
check "... names what is wrong ($(cat "$tmp/err"))" grep -q "data.result\[0\]" "$tmp/err"
"$HBMCTL" fleet --prometheus "$A/error" 2>"$tmp/err"
check "Prometheus error answer: exit 2 ($?)" test $? -eq 2
check "... passes its message on" grep -q "Prometheus says: parse error at char 3" "$tmp/err"
"$HBMCTL" fleet --prometheus "http://127.0.0.1:$(free_port)" 2>"$tmp/err"
check "unreachable: exit 2 ($?)" test $? -eq 2
"$HBMCTL" fleet --prometheus "http://fleet:secret@127.0.0.1:9090" 2>"$tmp/err"
check "credentials in the URL refused: exit 2 ($?)" test $? -eq 2
finish
