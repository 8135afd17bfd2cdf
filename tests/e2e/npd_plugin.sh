#!/bin/bash
# The node-problem-detector plugin: deploy/node-problem-detector/hbmctl-monitor.json obeys
# NPD's validation rules (pkg/custompluginmonitor/types), and every rule's command, run as
# NPD runs it against the fake DCMI driver, answers in NPD's protocol on every scenario:
# exit 0 OK, 1 NonOK, 2 Unknown; one line of at most 80 characters; well inside 5 s.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
fake_dcmi
CONF="$HBM_SRC/deploy/node-problem-detector/hbmctl-monitor.json"

check "monitor config passes NPD's validation" python3 - "$CONF" <<'PY'
import json, re, sys
c = json.load(open(sys.argv[1]))
def dur(s):  # Go time.ParseDuration, the units NPD configs use
    m = re.fullmatch(r"((?:\d+(?:\.\d+)?(?:ms|s|m|h))+)", s)
    assert m, f"bad duration {s}"
    return sum(float(v) * {"ms": .001, "s": 1, "m": 60, "h": 3600}[u]
               for v, u in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", s))
assert c["plugin"] == "custom"
pc = c["pluginConfig"]
timeout, interval = dur(pc.get("timeout", "5s")), dur(pc.get("invoke_interval", "30s"))
assert 0 < timeout <= 5, "plugin timeout above NPD's default"
assert interval > 0 and pc.get("max_output_length", 80) <= 80 and pc.get("concurrency", 3) > 0
assert c["source"]
conds = {x["type"] for x in c["conditions"]}
for x in c["conditions"]:
    assert x["reason"] and x["message"] and re.fullmatch(r"[A-Z][A-Za-z]+", x["type"])
for r in c["rules"]:
    assert r["type"] in ("temporary", "permanent")
    assert r["type"] == "temporary" or r["condition"] in conds, r
    assert re.fullmatch(r"[A-Z][A-Za-z]+", r["reason"]) and r["path"].startswith("/")
    assert dur(r.get("timeout", pc.get("timeout", "5s"))) <= timeout, "rule timeout > plugin"
    assert dur(r.get("invoke_interval", pc.get("invoke_interval", "30s"))) > 0
PY

check "the DaemonSet patch mounts what the rules use" python3 - "$CONF" \
    "$HBM_SRC/deploy/node-problem-detector/daemonset-patch.yaml" <<'PY'
import json, os, sys, yaml
conf, patch = json.load(open(sys.argv[1])), yaml.safe_load(open(sys.argv[2]))
spec = patch["spec"]["template"]["spec"]
assert spec["hostPID"] is True
vols = {v["name"] for v in spec["volumes"]}
for c in spec["containers"] + spec["initContainers"]:
    for m in c["volumeMounts"]:
        assert m["name"] in vols, m
npd = spec["containers"][0]
mounts = {m["mountPath"]: m for m in npd["volumeMounts"]}
paths = [r["path"] for r in conf["rules"]] + [a for r in conf["rules"] for a in r["args"] if a.startswith("/")]
for p in paths:  # every file a rule names lies in a mounted folder
    assert any(p.startswith(d + "/") for d in mounts), p
assert not mounts["/run/hbmctl"].get("readOnly"), "the leak history is written there"
for d in ("/run/containerd", "/var/log/pods", "/var/lib/docker/containers"):
    assert mounts[d]["readOnly"] is True, d
assert npd["securityContext"]["privileged"] is True
PY

orphan_in_pod
export HBMCTL_ROOT="$tmp/root"

scenario() { # USED_MB_CHIP0 PID_ON_CHIP0 USED_MB_CHIP1 HEALTH_CHIP1
    python3 - "$tmp/scenario.json" "$@" <<'PY'
import json, sys
out, used0, pid0, used1, health1 = sys.argv[1], *map(int, sys.argv[2:])
def chip(i, used, health, procs):
    return {"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": health,
            "hbm": {"total_mb": 65536, "used_mb": used}, "processes": procs}]}
json.dump({"driver_version": "24.1.rc2", "cards": [
    chip(0, used0, 0, [{"pid": pid0, "memory": (used0 - 3400) * 2**20}] if pid0 else []),
    chip(1, used1, health1, [])]}, open(out + ".new", "w"))
PY
    mv "$tmp/scenario.json.new" "$tmp/scenario.json"
}

# run_rules EXPECT...: every rule of the config in order, as NPD invokes it (path replaced by
# this build), against the current scenario; EXPECT is each rule's exit code.
# NPD kills a plugin after 5 s; a sanitizer build runs several times slower than the one
# deployed, so it gets more room (the plain build checks the real budget).
budget_ms=5000
[ "${HBM_SANITIZE:-OFF}" = ON ] && budget_ms=8000

run_rules() {
    local i=0 want line rc t0 t1 ms
    while IFS=$'\t' read -r reason args; do
        want=$1
        shift
        t0=$(date +%s%N)
        # shellcheck disable=SC2086
        line=$("$HBMCTL" $args 2>"$tmp/err")
        rc=$?
        t1=$(date +%s%N)
        ms=$(((t1 - t0) / 1000000))
        check "$label: $reason exits $want ($rc: $line)" test "$rc" -eq "$want"
        check "$label: $reason prints one line" test "$(printf '%s\n' "$line" | wc -l)" -eq 1
        check "$label: $reason line fits 80 characters (${#line})" test "${#line}" -le 80
        check "$label: $reason writes nothing to stderr" test ! -s "$tmp/err"
        check "$label: $reason within $budget_ms ms ($ms)" test "$ms" -lt "$budget_ms"
        eval "out_$i=\$line"
        i=$((i + 1))
    done < <(jq -r '.rules[] | "\(.reason)\t\(.args | map(sub("/run/hbmctl"; env.tmp)) | join(" "))"' "$CONF")
}

label=clean
scenario 3400 0 3400 0
run_rules 0 0 0 0
label=orphan
scenario 30000 "$orphan" 3400 0
run_rules 1 0 0 0
# shellcheck disable=SC2154
check "orphan: the line names the device, the pid and its pod ($out_0)" \
    grep -q "^NPU 0 ORPHANED: abandoned pid $orphan pod ml/vllm-0 holds 25.98 GiB$" <<<"$out_0"
# The same orphan's pod through the other views: status, a snapshot replayed, the
# exporter's labels, doctor's finding.
"$HBMCTL" status --json >"$tmp/status.json"
check "status --json: the orphan's pod" test "$(jq -c '.devices[0].processes[0].pod' "$tmp/status.json")" = \
    "{\"namespace\":\"ml\",\"name\":\"vllm-0\",\"uid\":\"$pod_uid\",\"container\":\"vllm\"}"
check "status --json: a chip without processes has none" test "$(jq '.devices[1].processes | length' "$tmp/status.json")" = 0
"$HBMCTL" snapshot >"$tmp/snap.json"
check "a snapshot replayed keeps the pod" test "$(HBMCTL_ROOT= "$HBMCTL" status --snapshot "$tmp/snap.json" --json |
    jq -r '.devices[0].processes[0].pod | "\(.namespace)/\(.name)/\(.container)"')" = ml/vllm-0/vllm
check "status text shows namespace/pod" grep -q " ml/vllm-0 " <("$HBMCTL" status --snapshot "$tmp/snap.json")
check "exporter labels: namespace, pod, container" \
    grep -q "^hbmctl_process_memory_bytes{.*pid=\"$orphan\",.*namespace=\"ml\",pod=\"vllm-0\",container=\"vllm\"} " \
    <("$HBMCTL" exporter --once)
check "doctor's orphan finding names the pod" \
    grep -q "pid $orphan (VLLM::EngineCor) of pod ml/vllm-0 holds" <("$HBMCTL" doctor --json | jq -r '.findings[].summary')
label=unaccounted
scenario 3400 0 30000 0
run_rules 0 1 0 0
# shellcheck disable=SC2154
check "unaccounted: the line names the device and the memory ($out_1)" \
    grep -q "^NPU 1 UNACCOUNTED: 29.30 GiB held by no process$" <<<"$out_1"
label=unhealthy
scenario 3400 0 3400 3
run_rules 0 0 1 0
# shellcheck disable=SC2154
check "unhealthy: the line names the device ($out_2)" grep -q "^NPU 1 UNHEALTHY: health" <<<"$out_2"

# The leak rule sees a staircase across runs, through its history file (the detector judges
# steps once it knows the noise: 30 samples).
rm -f "$tmp/npd-history.json"
label=steps
leak_runs() { # USED_MB RUNS
    scenario "$1" 0 3400 0
    for _ in $(seq "$2"); do
        "$HBMCTL" probe --npd leaking --history "$tmp/npd-history.json" >"$tmp/leak.out"
        rc=$?
    done
}
leak_runs 3400 32
check "leak: flat memory is OK ($rc: $(cat "$tmp/leak.out"))" test "$rc" -eq 0
for step in 1 2 3 4; do leak_runs $((3400 + step * 2048)) 6; done
check "leak: 4 steps of 2 GiB, each held 6 runs: NonOK ($rc: $(cat "$tmp/leak.out"))" test "$rc" -eq 1
check "leak: the line names the device and the growth" grep -q "^NPU 0 LEAK: memory grew" "$tmp/leak.out"
check "leak: history file kept" jq -e '.devices[0].samples | length == 56' "$tmp/npd-history.json" >/dev/null
echo '{"schema": "hbmctl.history/1", "devices": [{"device": "x"}]}' >"$tmp/bad.json"
"$HBMCTL" probe --npd leaking --history "$tmp/bad.json" >"$tmp/leak.out"
check "leak: a broken history file is Unknown (exit 2) naming it" test $? -eq 2
check "leak: ... and says where" grep -q "bad.json: devices\[0\]" "$tmp/leak.out"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$tmp/big.json"
"$HBMCTL" probe --npd leaking --history "$tmp/big.json" >"$tmp/leak.out"
check "leak: a history over 1 MiB is Unknown, not read in part" test $? -eq 2
check "leak: ... saying so" grep -q "big.json: larger than 1048576 bytes" "$tmp/leak.out"

label=nodriver
export HBMCTL_DCMI_LIB="$tmp/none.so" HBMCTL_NVML_LIB="$tmp/none.so" HBMCTL_NPU_SMI="$tmp/none"
run_rules 2 2 2 2
check "nodriver: the line says unknown ($out_0)" grep -q "^unknown: " <<<"$out_0"

# A driver that hangs (an npu-smi that never answers): Unknown on the plugin's own deadline,
# before NPD's 5 s timeout would kill it.
printf '#!/bin/sh
exec sleep 7
' >"$tmp/npu-smi"
chmod +x "$tmp/npu-smi"
export HBMCTL_NPU_SMI="$tmp/npu-smi"
label=hung
run_rules 2 2 2 2
check "hung: the line says the deadline passed ($out_0)" grep -q "^unknown: deadline passed" <<<"$out_0"
finish
