#!/bin/bash
# Remediations seen from outside (docs/remediation.md): a real orphan ended by the policy
# (clean --policy --apply) is counted by the exporter from the audit log,
# hbmctl_remediations_total{action="kill",result="done"}, with the last remediation's time,
# and a real Prometheus scrapes both; a record appended later is counted once (the log is
# read on by offset), a rotated log is counted on top, a FIFO in its place is refused;
# promtool accepts the exposition; the policy's last run (dry runs included) is served; the
# fleet view shows the node's last remediation; node-problem-detector's orphaned check
# clears once the node is clean; the alert rules fire on kept and repeated remediations and
# on a policy that stopped running, not on one clean-up.
set -u
. "$HBM_SRC/tests/e2e/lib/remedy.bash"
remedy_private_shm "$0" "$@"
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
. "$HBM_SRC/tests/e2e/lib/prometheus.bash"
fake_dcmi
remedy_devices
export HBMCTL_AUDIT_LOG="$tmp/log/audit.jsonl"
remedy_orphan orphan 0
remedy_scenario "$orphan"
kill_done='hbmctl_remediations_total{action="kill",result="done"}'

start_exporter x --min-interval 100ms --clean-state "$tmp/seen.json"
check "the exporter started (port ${port_x:-none})" test -n "$port_x"
curl -s "http://127.0.0.1:$port_x/metrics" >"$tmp/m0.txt"
check "before any action the series are served at 0" grep -qxF "$kill_done 0" "$tmp/m0.txt"
check "no last remediation time before one" bash -c "! grep -q '^hbmctl_last_remediation_timestamp_seconds ' '$tmp/m0.txt'"
check "the audit log is readable (it does not exist yet)" grep -qx 'hbmctl_remediation_audit_log_readable 1' "$tmp/m0.txt"

cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: hbmctl
    static_configs:
      - targets: ["127.0.0.1:$port_x"]
EOF
prom_start "$tmp/prometheus.yml"
check "Prometheus sees 0 kills before the run" prom_wait "$kill_done" 0

# node-problem-detector's rule for AcceleratorMemoryDirty (deploy/node-problem-detector) as
# NPD runs it: NonOK (exit 1) while the orphan holds memory.
npd_args=$(jq -r '.rules[] | select(.reason == "OrphanedAcceleratorMemory") | .args | join(" ")' \
    "$HBM_SRC/deploy/node-problem-detector/hbmctl-monitor.json")
# shellcheck disable=SC2086
"$HBMCTL" $npd_args --backend dcmi >"$tmp/npd1.txt"
check "NPD's orphaned check is NonOK while the orphan holds memory" test $? -eq 1

before=$(date +%s)
"$HBMCTL" clean --backend dcmi --policy --min-age 0 --state "$tmp/seen.json" --apply --yes \
    --grace 2s --settle 0 >"$tmp/clean.txt"
check "clean --policy --apply exits 0" [ $? -eq 0 ]
curl -s "http://127.0.0.1:$port_x/metrics" >"$tmp/m1.txt"
check "the exporter counts the kill" grep -qxF "$kill_done 1" "$tmp/m1.txt"
check "promtool check metrics accepts it" promtool check metrics <"$tmp/m1.txt"
last=$(sed -n 's/^hbmctl_last_remediation_timestamp_seconds \(.*\)$/\1/p' "$tmp/m1.txt")
check "the last remediation's time is this run's ($last >= $before)" \
    awk -v t="${last:-0}" -v b="$before" 'BEGIN {exit !(t >= b && t <= b + 60)}'
check "and the last run's time" grep -q '^hbmctl_last_remediation_run_timestamp_seconds [0-9]' "$tmp/m1.txt"
check "no policy run before it" bash -c "! grep -q '^hbmctl_remediation_policy_last_run_timestamp_seconds' '$tmp/m0.txt'"
run=$(sed -n 's/^hbmctl_remediation_policy_last_run_timestamp_seconds \(.*\)$/\1/p' "$tmp/m1.txt")
check "the policy's last run ($run >= $before)" test "${run:-0}" -ge "$before"
check "Prometheus scrapes the kill" prom_wait "$kill_done" 1
check "Prometheus has the last remediation's time" \
    prom_wait "hbmctl_last_remediation_timestamp_seconds >= $before" "$last"

"$HBMCTL" fleet --prometheus "http://127.0.0.1:$pport" --json >"$tmp/fleet.json"
check "the fleet view shows the node's last remediation" \
    test "$(jq -r '.nodes[0].last_remediation' "$tmp/fleet.json")" = "$last"
"$HBMCTL" fleet --prometheus "http://127.0.0.1:$pport" >"$tmp/fleet.txt"
check "and says it in its table" grep -q "last clean-up $(date -u -d "@$last" +%Y-%m-%dT%H:%M:%SZ)" "$tmp/fleet.txt"

# The driver drops a process once its memory is freed: then the condition clears.
remedy_scenario 0
# shellcheck disable=SC2086
"$HBMCTL" $npd_args --backend dcmi >"$tmp/npd2.txt"
check "NPD's orphaned check is OK (exit 0) once the node is clean: the condition clears" test $? -eq 0

# A dry run writes no audit record, but it is a run of the policy: seen too.
sleep 1.1
"$HBMCTL" clean --backend dcmi --policy --state "$tmp/seen.json" >/dev/null
run2=$(curl -s "http://127.0.0.1:$port_x/metrics" | sed -n 's/^hbmctl_remediation_policy_last_run_timestamp_seconds \(.*\)$/\1/p')
check "a dry run of the policy moves its last run on ($run2 > $run)" test "${run2:-0}" -gt "${run:-0}"

# Read on by offset: a record appended now is counted once, however many scrapes follow.
echo '{"event":"clean","action":"shm-unlink","outcome":"kept","unix_time":'"$(date +%s)"'}' >>"$HBMCTL_AUDIT_LOG"
for _ in 1 2 3; do curl -s "http://127.0.0.1:$port_x/metrics" >"$tmp/m2.txt"; done
check "an appended record is counted once" grep -qxF 'hbmctl_remediations_total{action="shm-unlink",result="kept"} 1' "$tmp/m2.txt"
check "the kill still counts 1" grep -qxF "$kill_done 1" "$tmp/m2.txt"
mv "$HBMCTL_AUDIT_LOG" "$HBMCTL_AUDIT_LOG.1"
echo '{"event":"clean","action":"kill","outcome":"done","unix_time":'"$(date +%s)"'}' >"$HBMCTL_AUDIT_LOG"
curl -s "http://127.0.0.1:$port_x/metrics" >"$tmp/m3.txt"
check "a rotated log is counted on top" grep -qxF "$kill_done 2" "$tmp/m3.txt"
# A log longer than one scrape reads (4 MiB): its counts are left out until it is read to
# the end, never served low (Prometheus would see a reset, then a burst).
python3 - "$tmp/big.jsonl" <<'PY'
import json, sys
rec = {"event": "clean", "action": "kill", "outcome": "done", "finding": "orphan-holder",
       "detail": "SIGTERM sent to pid 2871044; it exited" + " " * 200}
with open(sys.argv[1], "w") as f:
    for i in range(20000):
        f.write(json.dumps(dict(rec, unix_time=1796395000 + i)) + "\n")
PY
start_exporter big --audit-log "$tmp/big.jsonl"
curl -s "http://127.0.0.1:$port_big/metrics" >"$tmp/big1.txt"
check "a log longer than one read: no count served at first" \
    bash -c "! grep -q '^hbmctl_remediations_total' '$tmp/big1.txt'"
check "but the family is" grep -q '^# TYPE hbmctl_remediations_total counter' "$tmp/big1.txt"
for _ in 1 2 3; do curl -s "http://127.0.0.1:$port_big/metrics" >"$tmp/big2.txt"; done
check "read to the end, the whole count ($(du -k "$tmp/big.jsonl" | cut -f1) KiB log)" \
    grep -qxF "$kill_done 20000" "$tmp/big2.txt"

mkfifo "$tmp/fifo"
start_exporter fifo --audit-log "$tmp/fifo"
check "a FIFO in the audit log's place is refused, not waited on" \
    grep -qx 'hbmctl_remediation_audit_log_readable 0' <(curl -s -m 5 "http://127.0.0.1:$port_fifo/metrics")

# The expected alerts carry the rules' own annotations, filled for these labels.
python3 - "$HBM_SRC/deploy/prometheus/alerts.yml" >"$tmp/rules_test.yml" <<'PY'
import json, re, sys
import yaml
path = sys.argv[1]
rules = {r["alert"]: r for g in yaml.safe_load(open(path))["groups"] for r in g["rules"]}
def expect(name, at, labels):
    ann = {k: re.sub(r"{{ \$labels\.(\w+) }}", lambda m: labels[m.group(1)], v)
           for k, v in rules[name]["annotations"].items()}
    return {"eval_time": at, "alertname": name, "exp_alerts":
            [{"exp_labels": dict(rules[name]["labels"], **labels), "exp_annotations": ann}]}
series = lambda inst, res, vals: {"series": 'hbmctl_remediations_total{instance="%s",action="kill",'
                                            'result="%s"}' % (inst, res), "values": vals}
print(json.dumps({"rule_files": [path], "evaluation_interval": "1m", "tests": [{
    "interval": "1m",
    "input_series": [series("n1", "kept", "0 0 1 1 1"), series("n1", "done", "0 1 1 1 1"),
                     series("n2", "done", "0 4 8 12 16"), series("n2", "kept", "0 0 0 0 0"),
                     # n3's policy ran at time 0 and never again; n4's runs every minute
                     {"series": 'hbmctl_remediation_policy_last_run_timestamp_seconds{instance="n3"}',
                      "values": "0x45"},
                     {"series": 'hbmctl_remediation_policy_last_run_timestamp_seconds{instance="n4"}',
                      "values": "0+60x45"}],
    "alert_rule_test": [
        {"eval_time": "1m", "alertname": "HbmctlRemediationFailed", "exp_alerts": []},
        expect("HbmctlRemediationFailed", "3m", {"instance": "n1", "action": "kill", "result": "kept"}),
        {"eval_time": "1m", "alertname": "HbmctlRemediationRepeated", "exp_alerts": []},
        expect("HbmctlRemediationRepeated", "4m", {"instance": "n2"}),
        {"eval_time": "30m", "alertname": "HbmctlRemediationPolicyNotRunning", "exp_alerts": []},
        expect("HbmctlRemediationPolicyNotRunning", "40m", {"instance": "n3"})]}]}))
PY
check "promtool test rules: a kept action alerts, one clean-up does not, repeated ones do, a policy that stopped running does" \
    promtool test rules "$tmp/rules_test.yml"
finish
