#!/bin/bash
# deploy/ stays in step with the binary and the docs: the Kubernetes manifests parse and
# have the settings their comments promise (host PID namespace, read-only root, device and
# lease mounts, `hbmctl run` as entrypoint, `hbmctl probe` as liveness probe); every option
# they and the systemd unit pass exists in that command's --help; every metric the alert
# rules and the Grafana dashboard query is one the exporter serves; docs/metrics.md lists
# every metric family the exporter serves.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
D="$HBM_SRC/deploy"

export HBMCTL_NVML_LIB="$HBM_FAKES/libnvidia-ml.so.1"
export HBMCTL_DCMI_LIB="$tmp/no-such-libdcmi.so"
export HBM_FAKE_NVML_SCENARIO="$tmp/scenario.json"
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
sort -u -o "$tmp/families" "$tmp/families"
check "the exporter serves 40 or more families ($(wc -l <"$tmp/families"))" test "$(wc -l <"$tmp/families")" -ge 40

missing=""
while read -r fam; do
    grep -q "\`$fam\`" "$HBM_SRC/docs/metrics.md" || missing="$missing $fam"
done <"$tmp/families"
check "docs/metrics.md lists every family served (missing:$missing)" test -z "$missing"

cat >"$tmp/check.py" <<'EOF'
import json, re, sys, yaml
deploy, families_file = sys.argv[1], sys.argv[2]
families = set(open(families_file).read().split())
errors = []

ds = yaml.safe_load(open(f"{deploy}/kubernetes/daemonset-exporter.yaml"))
spec = ds["spec"]["template"]["spec"]
c = spec["containers"][0]
if ds["kind"] != "DaemonSet": errors.append("daemonset kind")
if spec.get("hostPID") is not True: errors.append("daemonset hostPID")
if c["securityContext"].get("readOnlyRootFilesystem") is not True: errors.append("daemonset read-only root")
if c["command"][:2] != ["hbmctl", "exporter"]: errors.append("daemonset command")
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
for p in ["/dev", "/run/hbmctl"]:
    if p not in mounts: errors.append(f"daemonset mount {p}")
if not mounts.get("/dev", {}).get("readOnly"): errors.append("daemonset /dev read-only")

dep = yaml.safe_load(open(f"{deploy}/kubernetes/inference-deployment.yaml"))
dspec = dep["spec"]["template"]["spec"]
v = dspec["containers"][0]
if dep["kind"] != "Deployment": errors.append("deployment kind")
if v["command"][:2] != ["hbmctl", "run"] or v["command"][-1] != "--": errors.append("deployment entrypoint is not hbmctl run ... --")
probe = v["livenessProbe"]["exec"]["command"]
if probe[:2] != ["hbmctl", "probe"]: errors.append("liveness probe is not hbmctl probe")
vols = {x["name"]: x for x in dspec["volumes"]}
lease = [m for m in v["volumeMounts"] if m["mountPath"] == "/run/hbmctl"]
if not lease or vols[lease[0]["name"]].get("hostPath", {}).get("path") != "/run/hbmctl":
    errors.append("deployment /run/hbmctl from the host")
if dspec["terminationGracePeriodSeconds"] <= 30: errors.append("grace period must exceed --grace")

# Options each manifest passes, per command, for the shell to look up in --help.
def opts(argv):
    return [a.split("=")[0] for a in argv if a.startswith("--") and a != "--"]
with open(sys.argv[3], "w") as f:
    for cmd, argv in [("exporter", c.get("args", [])), ("run", v["command"][2:]), ("probe", probe[2:])]:
        for o in opts(argv):
            f.write(f"{cmd} {o}\n")

alerts = yaml.safe_load(open(f"{deploy}/prometheus/alerts.yml"))
exprs = [r["expr"] for g in alerts["groups"] for r in g["rules"]]
dash = json.load(open(f"{deploy}/grafana/hbmctl-dashboard.json"))
exprs += [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
for e in exprs:
    for m in re.findall(r"\bhbmctl_[a-z_]+", e):
        if m not in families: errors.append(f"query uses {m}, which the exporter does not serve")
if len(dash["panels"]) < 10: errors.append("dashboard panels")
print("\n".join(errors))
EOF
errors=$(python3 "$tmp/check.py" "$D" "$tmp/families" "$tmp/opts")
check "manifests, rules and dashboard consistent: ${errors:-ok}" test -z "$errors"

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
