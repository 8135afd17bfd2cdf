#!/bin/bash
# deploy/ stays in step with the binary and the docs: the Kubernetes manifests parse and
# have the settings their comments promise (host PID namespace, read-only root, device and
# lease mounts, `hbmctl run` as entrypoint, `hbmctl probe` as liveness probe); every option
# they and the systemd unit pass exists in that command's --help; every metric the alert
# rules and the Grafana dashboard query is one the exporter serves; docs/metrics.md lists
# every metric family the exporter serves.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
D="$HBM_SRC/deploy"

fake_nvml
export HBMCTL_LEASE_DIR="$tmp/leases"
GIB=1073741824
sleep 600 &
pids+=($!)
cat >"$HBM_FAKE_NVML_SCENARIO" <<EOF
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": $((80 * GIB)), "memory_used": $((21 * GIB)), "temperature": 50, "power_mw": 300000,
  "utilization_gpu": 10, "compute": [{"pid": $!, "used_memory": $((20 * GIB))}]}]}
EOF

# The exposition with every optional family: --threshold adds the crossing gauge; leak
# gauges carry samples once a series has 5, so observe a few times.
for _ in 1 2 3 4 5 6; do "$HBMCTL" exporter --once --threshold 90% --min-interval 1ms >"$tmp/metrics.txt"; done
sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$tmp/metrics.txt" | sort -u >"$tmp/families"
# Families served only when the observation fails.
HBMCTL_NVML_LIB="$tmp/none.so" "$HBMCTL" exporter --once >"$tmp/failed.txt" 2>/dev/null
sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$tmp/failed.txt" >>"$tmp/families"
# Families of followed servers (written even while nothing answers there).
"$HBMCTL" exporter --once --metrics-url http://127.0.0.1:9/metrics >"$tmp/servers.txt" 2>/dev/null
sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$tmp/servers.txt" >>"$tmp/families"
sort -u -o "$tmp/families" "$tmp/families"
check "the exporter serves 40 or more families ($(wc -l <"$tmp/families"))" test "$(wc -l <"$tmp/families")" -ge 40

missing=""
while read -r fam; do
    grep -q "\`$fam\`" "$HBM_SRC/docs/metrics.md" || missing="$missing $fam"
done <"$tmp/families"
check "docs/metrics.md lists every family served (missing:$missing)" test -z "$missing"

# The manifests are checked as text (no YAML library needed): the settings their comments
# promise, in the layout they are written in.
ds="$D/kubernetes/daemonset-exporter.yaml"
dep="$D/kubernetes/inference-deployment.yaml"
check "daemonset: kind DaemonSet" grep -qx "kind: DaemonSet" "$ds"
check "daemonset: host PID namespace" grep -qx "      hostPID: true" "$ds"
check "daemonset: read-only root" grep -qx "            readOnlyRootFilesystem: true" "$ds"
check "daemonset: runs hbmctl exporter" grep -qx '          command: \["hbmctl", "exporter"\]' "$ds"
check "daemonset: /dev mounted read-only" grep -q "{name: dev, mountPath: /dev, readOnly: true}" "$ds"
check "daemonset: /run/hbmctl from the host" grep -q "hostPath: {path: /run/hbmctl" "$ds"
check "deployment: kind Deployment" grep -qx "kind: Deployment" "$dep"
# A YAML block list after "KEY:" at some indent, one item per line -> the items.
list_after() { # FILE KEY-LINE
    awk -v key="$2" '$0 == key {on = 1; next} on && /^ *- / {sub(/^ *- /, ""); print; next}
        on {exit}' "$1"
}
run_cmd=$(list_after "$dep" "          command:")
probe_cmd=$(list_after "$dep" "              command:")
check "deployment: entrypoint is hbmctl run ... --" test \
    "$(head -2 <<<"$run_cmd" | tr '\n' ' ')$(tail -1 <<<"$run_cmd")" = "hbmctl run --"
check "deployment: liveness probe is hbmctl probe" test "$(head -2 <<<"$probe_cmd" | tr '\n' ' ')" = "hbmctl probe "
check "deployment: /run/hbmctl from the host" grep -q "{name: leases, hostPath: {path: /run/hbmctl" "$dep"
check "deployment: mounted at /run/hbmctl" grep -q "{name: leases, mountPath: /run/hbmctl}" "$dep"
grace=$(sed -n 's/^ *terminationGracePeriodSeconds: \([0-9]*\)$/\1/p' "$dep")
check "deployment: grace period ($grace s) above --grace=30s" test "${grace:-0}" -gt 30
{
    list_after "$ds" "          args:" | grep -o -- '^--[a-z-]*' | sed 's/^/exporter /'
    sed -n '3,$p' <<<"$run_cmd" | grep -o -- '^--[a-z-]*' | sed 's/^/run /'
    sed -n '3,$p' <<<"$probe_cmd" | grep -o -- '^--[a-z-]*' | sed 's/^/probe /'
} >"$tmp/opts"
check "options found in the manifests ($(wc -l <"$tmp/opts"))" test "$(wc -l <"$tmp/opts")" -ge 10

# Every metric a rule or a panel queries is served.
{
    awk '/^ *expr:/ {sub(/^ *expr: *(>-)?/, ""); print; inexpr = 1; next}
         inexpr && /^ *(for|labels|annotations):/ {inexpr = 0}
         inexpr {print}' "$D/prometheus/alerts.yml"
    jq -r '.panels[].targets[]?.expr' "$D/grafana/hbmctl-dashboard.json"
} >"$tmp/exprs"
check "queries found ($(wc -l <"$tmp/exprs") lines)" test "$(wc -l <"$tmp/exprs")" -ge 25
unknown=""
for m in $(grep -o 'hbmctl_[a-z_]*' "$tmp/exprs" | sort -u); do
    grep -qx "$m" "$tmp/families" || unknown="$unknown $m"
done
check "every metric queried is served (unknown:$unknown)" test -z "$unknown"
check "dashboard has 10 or more panels" test "$(jq '.panels|length' "$D/grafana/hbmctl-dashboard.json")" -ge 10

while read -r cmd opt; do
    check "$cmd $opt exists in 'hbmctl $cmd --help'" grep -q -- "$opt" <("$HBMCTL" "$cmd" --help)
done <"$tmp/opts"
exec_start=$(sed -n 's/^ExecStart=[^ ]*hbmctl //p' "$D/systemd/hbmctl-exporter.service")
check "systemd unit runs hbmctl exporter" test "${exec_start%% *}" = exporter
for o in $(grep -o -- '--[a-z-]*' <<<"$exec_start"); do
    check "unit option $o exists" grep -q -- "$o" <("$HBMCTL" exporter --help)
done
if command -v systemd-analyze >/dev/null && systemd-analyze --version >/dev/null 2>&1; then
    out=$(systemd-analyze verify --man=no "$D/systemd/hbmctl-exporter.service" 2>&1 | grep -v "hbmctl: No such\|not executable\|Command /usr/local/bin/hbmctl")
    check "systemd-analyze verify: ${out:-clean}" test -z "$out"
fi
check "promtool check rules" promtool check rules "$D/prometheus/alerts.yml"
finish
