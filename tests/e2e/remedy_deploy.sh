#!/bin/bash
# The remediation policy's deployments (docs/remediation.md) do what their comments say:
# hbmctl-clean.service and .timer pass systemd-analyze verify; the unit's command line, as
# systemd runs it, is a dry run until HBMCTL_CLEAN_ARGS=--apply (a real orphan stays, no
# audit record; then it is ended and audited); the DaemonSet's clean container runs the same
# policy from its shell loop, a dry run by default, and stops at once on SIGTERM; the exporter
# beside it counts the audit log it shares.
set -u
. "$HBM_SRC/tests/e2e/lib/remedy.bash"
remedy_private_shm "$0" "$@"
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
D="$HBM_SRC/deploy"
fake_dcmi
remedy_devices

# --- systemd ------------------------------------------------------------------------------
mkdir "$tmp/units"
sed "s#/usr/local/bin/hbmctl#$HBMCTL#" "$D/systemd/hbmctl-clean.service" >"$tmp/units/hbmctl-clean.service"
cp "$D/systemd/hbmctl-clean.timer" "$tmp/units/"
out=$(systemd-analyze verify --man=no "$tmp/units/hbmctl-clean.service" "$tmp/units/hbmctl-clean.timer" 2>&1)
check "systemd-analyze verify: ${out:-clean}" test -z "$out"
sed 's/^ExecStart=.*/ExecStart=\/nonexistent\/hbmctl clean/' "$tmp/units/hbmctl-clean.service" >"$tmp/units/bad.service"
check "and it would catch a unit whose binary is missing" \
    bash -c "systemd-analyze verify --man=no '$tmp/units/bad.service' 2>&1 | grep -q nonexistent"
check "the service is a oneshot" grep -qx "Type=oneshot" "$D/systemd/hbmctl-clean.service"
check "the timer starts that service (same name)" grep -q "^OnUnitInactiveSec=" "$D/systemd/hbmctl-clean.timer"
exec_line=$(sed -n 's/^ExecStart=[^ ]*hbmctl //p' "$D/systemd/hbmctl-clean.service")
check "the unit runs hbmctl clean --policy" test "${exec_line%% --settle*}" = "clean --policy"
for o in $(grep -o -- '--[a-z-]*' <<<"$exec_line"); do
    check "unit option $o exists" grep -q -- "$o" <("$HBMCTL" clean --help)
done
check "the unit sets no --apply itself, and takes HBMCTL_CLEAN_ARGS" \
    bash -c "! grep -q -- '--apply' <<<'$exec_line' && grep -q ' [$]HBMCTL_CLEAN_ARGS$' <<<'$exec_line'"

remedy_orphan orphan 0
remedy_scenario "$orphan"
# The command line as systemd expands it: $HBMCTL_CLEAN_ARGS split at spaces, empty when
# unset. The state file is the test's; the policy's age is lowered for the test only.
unit_run() { # HBMCTL_CLEAN_ARGS
    local HBMCTL_CLEAN_ARGS="$1 --state $tmp/seen.json --min-age 0"
    # shellcheck disable=SC2086
    "$HBMCTL" ${exec_line//\$HBMCTL_CLEAN_ARGS/$HBMCTL_CLEAN_ARGS}
}
unit_run "" >"$tmp/dry.txt"
rc=$?
check "as installed the unit is a dry run: exit 1 (work found), which the unit counts as success" \
    bash -c "[ $rc -eq 1 ] && grep -qx 'SuccessExitStatus=1' '$D/systemd/hbmctl-clean.service'"
check "the dry run names the orphan" grep -q "would orphan-holder" "$tmp/dry.txt"
check "the orphan is alive" kill -0 "$orphan"
check "no audit record" test ! -e "$HBMCTL_AUDIT_LOG"
unit_run "--apply" >"$tmp/apply.txt"
check "HBMCTL_CLEAN_ARGS=--apply acts: exit 0" test $? -eq 0
check "the orphan was ended" remedy_gone "$orphan"
check "and audited" jq -e "select(.pid == $orphan and .outcome == \"done\")" "$HBMCTL_AUDIT_LOG"

# --- Kubernetes: the DaemonSet's clean container ------------------------------------------
python3 - "$D/kubernetes/daemonset-exporter.yaml" "$tmp" <<'PY'
import sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
cs = {c["name"]: c for c in ds["spec"]["template"]["spec"]["containers"]}
clean, exp = cs["clean"], cs["exporter"]
env = {e["name"]: e["value"] for e in clean["env"]}
mounts = lambda c: {m["mountPath"]: m.get("readOnly", False) for m in c["volumeMounts"]}
with open(sys.argv[2] + "/k8s.env", "w") as f:
    f.write("same_image=%d\n" % (clean["image"] == exp["image"]))
    f.write("clean_args='%s'\nclean_every='%s'\n" % (env["HBMCTL_CLEAN_ARGS"], env["HBMCTL_CLEAN_EVERY"]))
    f.write("audit_env='%s'\n" % env["HBMCTL_AUDIT_LOG"])
    f.write("exporter_audit='%s'\n" % [a for a in exp["args"] if a.startswith("--audit-log=")][0][12:])
    f.write("shm_rw=%d\naudit_rw=%d\nexp_audit_ro=%d\n" % (not mounts(clean)["/dev/shm"],
            not mounts(clean)["/var/log/hbmctl"], mounts(exp)["/var/log/hbmctl"]))
    f.write("host_pid=%d\nhost_ipc=%d\n" % (ds["spec"]["template"]["spec"]["hostPID"],
            ds["spec"]["template"]["spec"]["hostIPC"]))
open(sys.argv[2] + "/k8s.cmd", "w").write(clean["args"][0])
assert clean["command"] == ["/bin/sh", "-c"]
PY
check "the DaemonSet parses and has a clean container" test -s "$tmp/k8s.cmd"
. "$tmp/k8s.env"
check "same image as the exporter" test "$same_image" = 1
check "a dry run by default (HBMCTL_CLEAN_ARGS empty)" test -z "$clean_args"
check "the exporter counts the audit log the clean container writes" \
    test "$exporter_audit" = "$audit_env"
check "clean writes /dev/shm and the audit log; the exporter reads the log only" \
    test "$shm_rw$audit_rw$exp_audit_ro" = 111
check "host PID and IPC namespaces" test "$host_pid$host_ipc" = 11
check "its options exist" grep -q -- "--settle" <("$HBMCTL" clean --help)

remedy_orphan orphan2 0
remedy_scenario "$orphan2"
mkdir "$tmp/bin"
ln -s "$HBMCTL" "$tmp/bin/hbmctl"
rm -f "$HBMCTL_AUDIT_LOG"
# The shell is PID 1 of its container, which ignores a signal it has no handler for: run it
# as PID 1 of a PID namespace where one can be made, so a missing trap would show.
pid1=(unshare --pid --fork --kill-child)
"${pid1[@]}" true 2>/dev/null || pid1=()
PATH="$tmp/bin:$PATH" HBMCTL_CLEAN_ARGS="--state $tmp/seen2.json" HBMCTL_CLEAN_EVERY=1 \
    "${pid1[@]}" /bin/sh -c "$(cat "$tmp/k8s.cmd")" >"$tmp/loop.txt" 2>&1 &
loop=$!
pids+=("$loop")
for _ in $(seq 50); do [ "$(grep -c '^dry run' "$tmp/loop.txt")" -ge 2 ] && break; sleep 0.1; done
check "the loop runs the policy again and again" test "$(grep -c '^dry run' "$tmp/loop.txt")" -ge 2
check "as a dry run: the orphan is alive and nothing audited" \
    bash -c "kill -0 $orphan2 && test ! -e '$HBMCTL_AUDIT_LOG'"
sh_pid=$loop
[ ${#pid1[@]} -gt 0 ] && sh_pid=$(pgrep -P "$loop" | head -1)
[ ${#pid1[@]} -gt 0 ] || echo "note: no PID namespace here: the shell is not PID 1"
t0=$(date +%s%N)
kill -TERM "$sh_pid"
for _ in $(seq 50); do kill -0 "$loop" 2>/dev/null || break; sleep 0.1; done
ms=$((($(date +%s%N) - t0) / 1000000))
check "SIGTERM ends the loop at once, the shell as PID 1 (${ms} ms)" bash -c "! kill -0 $loop 2>/dev/null"
finish
