#!/bin/bash
# hbmctl exporter against the real tools: promtool accepts its exposition and the alert
# rules (and the rules fire on the series they are meant for); a real Prometheus server
# scrapes it and a PromQL query returns the device memory the fake driver reports, also
# after the memory changes; a scrape storm reaches the driver at most once per
# --min-interval; 1,000 concurrent connections and malformed requests do not crash it, and
# its private memory afterwards stays under a stated bound.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
. "$HBM_SRC/tests/e2e/lib/prometheus.bash"

fake_nvml
export HBMCTL_LEASE_DIR="$tmp/leases"
GIB=1073741824
sleep 600 &
pids+=($!)
server=$!

scenario() { # used-GiB-of-gpu0
    cat >"$tmp/scenario.tmp" <<EOF
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": $((80 * GIB)), "memory_used": $(($1 * GIB)), "temperature": 50, "power_mw": 300000,
  "utilization_gpu": 40, "compute": [{"pid": $server, "used_memory": $((($1 - 1) * GIB))}]},
 {"name": "NVIDIA \"H100\" 80GB\\\\HBM3", "uuid": "GPU-1", "bus_id": "00000000:19:00.0",
  "memory_total": $((80 * GIB)), "memory_used": $((GIB / 2)), "temperature": 35, "power_mw": 70000,
  "compute": []}]}
EOF
    mv "$tmp/scenario.tmp" "$tmp/scenario.json"
}
private_kib() { # Private_* of smaps_rollup: what the process alone costs
    awk '/^Private_/ {s += $2} END {print s}' "/proc/$1/smaps_rollup"
}

scenario 21

# --- promtool on the exposition (once, then as served) -------------------------------------
"$HBMCTL" exporter --once >"$tmp/once.txt"
check "exporter --once exits 0" test $? -eq 0
check "promtool check metrics accepts the exposition" promtool check metrics <"$tmp/once.txt"
check "the backend used and the driver version" grep -q '^hbmctl_source_info{backend="nvml",driver_version="550.54.15",hostname=".*"} 1$' "$tmp/once.txt"
check "device memory in the exposition" grep -q "^hbmctl_device_memory_used_bytes{device=\"0\",.*} $((21 * GIB))$" "$tmp/once.txt"
check "a name with quotes and a backslash is escaped" grep -qF 'name="NVIDIA \"H100\" 80GB\\HBM3"' "$tmp/once.txt"

# the storm below opens 1,000 connections from one address: allow them all
"$HBMCTL" exporter --listen 127.0.0.1:0 --min-interval 1s --max-per-client 1000 2>"$tmp/exporter.err" &
pids+=($!)
exporter=$!
for _ in $(seq 100); do grep -q "port [0-9]" "$tmp/exporter.err" && break; sleep 0.1; done
port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/exporter.err")
check "exporter says its port" test -n "$port"
url="http://127.0.0.1:$port"
curl -sf "$url/metrics" >"$tmp/served.txt"
check "GET /metrics answers" test $? -eq 0
check "promtool accepts what is served" promtool check metrics <"$tmp/served.txt"
check "/healthz 200" test "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz")" = 200
check "unknown path 404" test "$(curl -s -o /dev/null -w '%{http_code}' "$url/nope")" = 404
check "POST 405" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x=1 "$url/metrics")" = 405
check "content type is the text format" grep -qi "content-type: text/plain; version=0.0.4" \
    <(curl -sI "$url/metrics")

# --- a scrape storm reaches the driver at most once per --min-interval ------------------------
obs() { curl -s "$url/metrics" | sed -n 's/^hbmctl_exporter_observations_total \([0-9]*\)$/\1/p'; }
before=$(obs)
start=$(date +%s.%N)
args=()
for _ in $(seq 300); do args+=("$url/metrics"); done
curl -s "${args[@]}" >/dev/null
after=$(obs)
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
allowed=$(awk -v e="$elapsed" 'BEGIN {printf "%d", int(e) + 2}')
check "300 scrapes in ${elapsed}s made $((after - before)) observations (<= $allowed)" \
    test $((after - before)) -le "$allowed"

# --- leak state through the exporter: one observation per scrape here ----------------------
"$HBMCTL" exporter --listen 127.0.0.1:0 --min-interval 40ms 2>"$tmp/leak.err" &
pids+=($!)
leakx=$!
for _ in $(seq 100); do grep -q "port [0-9]" "$tmp/leak.err" && break; sleep 0.1; done
lurl="http://127.0.0.1:$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/leak.err")"
for k in $(seq 0 70); do
    step=0
    [ "$k" -ge 45 ] && step=$(((k - 45) / 6 + 1))
    scenario $((21 + step))
    sleep 0.05
    curl -s "$lurl/metrics" >"$tmp/leak.txt"
done
check "exporter: device 0 leak reported after steps" grep -q '^hbmctl_device_memory_leak{device="0",.*} 1$' "$tmp/leak.txt"
check "exporter: steps counted" grep -qE '^hbmctl_device_memory_leak_steps\{device="0",.*\} [3-5]$' "$tmp/leak.txt"
check "exporter: the leaking process named" grep -q "^hbmctl_process_memory_leak{device=\"0\",.*pid=\"$server\".*} 1$" "$tmp/leak.txt"
check "exporter: device 1 (flat) not leaking" grep -q '^hbmctl_device_memory_leak{device="1",.*} 0$' "$tmp/leak.txt"
kill "$leakx"
scenario 21

# --- a failing driver: hbmctl_up 0, /healthz 503, never zeros ---------------------------------
HBMCTL_NVML_LIB="$tmp/none.so" "$HBMCTL" exporter --once >"$tmp/fail.txt" 2>/dev/null
check "--once with no driver exits 1" test $? -eq 1
check "no driver: hbmctl_up 0" grep -q '^hbmctl_up 0$' "$tmp/fail.txt"
check "no driver: no device metric at all (not zeros)" test "$(grep -c '^hbmctl_device_' "$tmp/fail.txt")" -eq 0
check "no driver: promtool accepts it" promtool check metrics <"$tmp/fail.txt"
HBMCTL_NVML_LIB="$tmp/none.so" "$HBMCTL" exporter --listen 127.0.0.1:0 2>"$tmp/fail.err" &
pids+=($!)
failx=$!
for _ in $(seq 100); do grep -q "port [0-9]" "$tmp/fail.err" && break; sleep 0.1; done
furl="http://127.0.0.1:$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/fail.err")"
curl -s -o /dev/null "$furl/metrics"
check "no driver: /healthz 503" test "$(curl -s -o /dev/null -w '%{http_code}' "$furl/healthz")" = 503
check "no driver: /healthz says why" grep -q "last observation failed" <(curl -s "$furl/healthz")
kill "$failx"

# --- a real Prometheus scrapes it ------------------------------------------------------------
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$HBM_SRC/deploy/prometheus/alerts.yml"]
scrape_configs:
  - job_name: hbmctl
    static_configs:
      - targets: ["127.0.0.1:$port"]
EOF
prom_start "$tmp/prometheus.yml"
query() { prom_query "$@"; }
wait_value() { prom_wait "$@"; }
check "Prometheus scrapes the exporter (up == 1)" wait_value 'up{job="hbmctl"}' 1
check "PromQL: device 0 memory as the driver reports it" \
    wait_value 'hbmctl_device_memory_used_bytes{device="0"}' $((21 * GIB))
check "PromQL: process memory with its pid" \
    wait_value "hbmctl_process_memory_bytes{pid=\"$server\"}" $((20 * GIB))
scenario 30
check "PromQL: the new memory after the driver's figure changes" \
    wait_value 'hbmctl_device_memory_used_bytes{device="0"}' $((30 * GIB))
check "PromQL: the verdict" wait_value 'hbmctl_device_verdict{device="0",verdict="BUSY"}' 1
check "Prometheus loaded the alert rules" test \
    "$(curl -s "http://127.0.0.1:$pport/api/v1/rules" | jq '[.data.groups[].rules[]]|length')" -ge 10
kill "$prom" 2>/dev/null

# --- the rules themselves ------------------------------------------------------------------
check "promtool check rules deploy/prometheus/alerts.yml" \
    promtool check rules "$HBM_SRC/deploy/prometheus/alerts.yml"
cat >"$tmp/rules_test.yml" <<EOF
rule_files: ["$HBM_SRC/deploy/prometheus/alerts.yml"]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'hbmctl_device_memory_leak{instance="n1",device="0",name="910B4"}'
        values: '0 0 1 1 1 1 1 1 1 1'
      - series: 'hbmctl_device_verdict{instance="n1",device="1",verdict="ORPHANED"}'
        values: '1 1 1 1 1'
      - series: 'hbmctl_host_hugepages_free_pages{instance="n1",node="0",page_size_bytes="2097152"}'
        values: '0x15'
      - series: 'hbmctl_host_hugepages_capacity_pages{instance="n1",node="0",page_size_bytes="2097152"}'
        values: '512x15'
      - series: 'hbmctl_device_verdict{instance="n1",device="2",verdict="UNACCOUNTED"}'
        values: '0x15'
      - series: 'hbmctl_server_stalled{instance="n1",url="http://127.0.0.1:8000/metrics",model="m1",engine="0"}'
        values: '0 0 1 1 1 1'
      - series: 'hbmctl_server_stalled{instance="n1",url="http://127.0.0.1:8001/metrics",model="m2",engine="0"}'
        values: '0 0 0 0 0 0'
    alert_rule_test:
      - eval_time: 8m
        alertname: HbmctlDeviceMemoryLeak
        exp_alerts:
          - exp_labels: {severity: warning, instance: n1, device: "0", name: 910B4}
            exp_annotations:
              summary: "Device memory leaking in steps on n1 device 0"
              description: "Memory on device 0 (910B4) rose in steps that never came back between requests. Find the process with hbmctl_process_memory_leak, or run \`hbmctl watch\` on the host; \`hbmctl run --restart-on-mem\` drains and restarts a server before it runs out."
      - eval_time: 3m
        alertname: HbmctlDeviceOrphaned
        exp_alerts:
          - exp_labels: {severity: critical, instance: n1, device: "1", verdict: ORPHANED}
            exp_annotations:
              summary: "Device 1 on n1 is held by an orphan"
              description: "A process whose owner is gone (exited, zombie, stuck in D state, or its container removed) still holds device 1. \`hbmctl doctor\` shows it with evidence; \`hbmctl clean --apply\` ends it safely."
      - eval_time: 12m
        alertname: HbmctlHostHugepagesExhausted
        exp_alerts:
          - exp_labels: {severity: warning, instance: n1, node: "0", page_size_bytes: "2097152"}
            exp_annotations:
              summary: "Host hugepages exhausted on n1 (node 0)"
              description: "Every 2097152-byte hugepage of node 0 is in use. This is the host's pool (/proc/meminfo), not npu-smi's Hugepages-Usage column, which counts the card's own memory."
      - eval_time: 12m
        alertname: HbmctlUnaccountedMemory
        exp_alerts: []
      - eval_time: 4m
        alertname: HbmctlServerStalled
        exp_alerts:
          - exp_labels: {severity: critical, instance: n1, url: "http://127.0.0.1:8000/metrics", model: m1, engine: "0"}
            exp_annotations:
              summary: "Inference server http://127.0.0.1:8000/metrics on n1 produces no token"
              description: "Requests run or wait on model m1 (engine 0) and its token counters have not advanced for longer than the exporter's --stall, although the server may still answer /health. \`hbmctl run --stall\` restarts such a server; \`hbmctl doctor\` shows the counters."
EOF
check "promtool test rules: leak, orphan, hugepage and stall alerts fire, a clear device does not" \
    promtool test rules "$tmp/rules_test.yml"

# --- 1,000 concurrent connections and malformed requests ----------------------------------------
cat >"$tmp/storm.py" <<'EOF'
import resource, socket, sys, time
port = int(sys.argv[1])
n = int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, n + 256)), hard))
bad = [b"GARBAGE\r\n\r\n", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70000 + b"\r\n\r\n",
       b"GET /metrics HTTP/9.9\r\n\r\n", b"\x00\xff\xfe binary \r\n\r\n",
       b"GET /metrics HTTP/1.1\r\nContent-Length: -5\r\n\r\n", b"GET /metr", b"",
       b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\nxx"]
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    socks.append(s)
# All n are open at once; every third asks properly, the others misbehave.
for i, s in enumerate(socks):
    try:
        if i % 3 == 0:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        else:
            s.sendall(bad[i % len(bad)])
    except OSError:
        pass
ok = 0
deadline = time.time() + 120
for i, s in enumerate(socks):
    if i % 3:
        continue
    data = b""
    try:
        while time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    if data.startswith(b"HTTP/1.1 200") and b"hbmctl_up 1" in data:
        ok += 1
for s in socks:
    s.close()
print(ok)
EOF
good=$(python3 "$tmp/storm.py" "$port" 1000)
check "1,000 connections open at once: every well-formed one answered ($good of 334)" test "$good" = 334
check "exporter alive after the storm" kill -0 "$exporter"
check "exporter still answers" test "$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics")" = 200
check "promtool still accepts it" promtool check metrics < <(curl -s "$url/metrics")
priv=$(private_kib "$exporter")
echo "exporter private memory after 1,000 connections: ${priv} KiB"
if [ "${HBM_SANITIZE:-OFF}" = ON ]; then
    echo "exporter private memory after the storm: ${priv} KiB (no bound under sanitizers)"
else
    # Bound: 16 MiB. Measured about 7 MiB (most of it shared libraries' clean pages that
    # no other process maps); 1,000 connections x 16 KiB pools are released once they close.
    check "exporter private memory after the storm ${priv} KiB <= 16384 KiB" test "$priv" -le 16384
fi
kill -TERM "$exporter"
wait "$exporter"
check "SIGTERM stops it with exit 0" test $? -eq 0
finish
