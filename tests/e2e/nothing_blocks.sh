#!/bin/bash
# Nothing blocks (docs/safety.md, "Deadlines and non-blocking reads"): a FIFO, device or
# socket where hbmctl reads a file is refused unread, naming the path; a wedged driver call
# (the fake drivers' "hang") ends the command with exit 2 naming the call, and the exporter
# then serves hbmctl_up 0 and stale 1 and still stops on SIGTERM; a hung npu-smi and what
# it started are killed at the deadline and keep no pipe of ours open. Every command runs
# under `timeout`, so a regression fails here instead of hanging the suite.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
fake_dcmi
T=20 # the bound of every command: far above what each should take
hbm() { timeout "$T" "$HBMCTL" "$@"; }
# Time bounds are stretched under the sanitizers (slower start-up, not slower deadlines).
slow=1
[ "${HBM_SANITIZE:-OFF}" = ON ] && slow=3
# took START MAX: the time since START is at most MAX seconds (times $slow)
took() { le "$(elapsed_since "$1")" "$(awk -v m="$2" -v k="$slow" 'BEGIN { print m * k }')"; }
# gone PID: PID has exited (or is a zombie) within 3s; a SIGKILLed process on a busy host
# takes a moment to run its exit
gone() {
    for _ in $(seq 60); do
        case "$(proc_state "$1")" in "" | Z) return 0 ;; esac
        sleep 0.05
    done
    return 1
}

sleep 600 &
pids+=($!)
held=$!
cat >"$tmp/ok.json" <<EOF
{"driver_version": "24.1.rc2", "cards": [{"card_id": 0, "chips": [{"logic_id": 0, "phy_id": 0,
 "name": "910B3", "health": 0, "memory": {"total_mb": 65536, "available_mb": 30000},
 "processes": [{"pid": $held, "memory": 1073741824}]}]}]}
EOF
cp "$tmp/ok.json" "$tmp/scenario.json"
# wedge CALL: the scenario with that call blocking for ever
wedge() { jq --arg c "$1" '. + {hang: {($c): -1}}' "$tmp/ok.json" >"$tmp/scenario.json"; }

# ---- files that are not regular files ------------------------------------------------------
t0=$(now)
hbm status --snapshot /dev/zero >/dev/null 2>"$tmp/err"
check "--snapshot /dev/zero: exit 2" test $? -eq 2
check "--snapshot /dev/zero: refused at once, not read" took "$t0" 3
check "--snapshot /dev/zero: says what it is" \
    grep -q "/dev/zero: a character device, not a regular file: refused unread" "$tmp/err"
mkfifo "$tmp/snap.fifo"
hbm doctor --snapshot "$tmp/snap.fifo" >/dev/null 2>"$tmp/err"
check "--snapshot FIFO: exit 2, named" grep -q "snap.fifo: a FIFO, not a regular file" "$tmp/err"
hbm status --snapshot "$tmp" >/dev/null 2>"$tmp/err"
check "--snapshot DIR: refused, named" grep -q "$tmp: a directory, not a regular file" "$tmp/err"
# stdin is what the user gave: still read, and still bounded
hbm status --snapshot - --json </dev/null >/dev/null 2>"$tmp/err"
check "--snapshot - (empty stdin): an answer, not a wait" test $? -eq 2

# The lease directory is shared by every user: a FIFO planted there.
mkdir "$tmp/leases"
mkfifo "$tmp/leases/device-0.lease"
# device 0 free, so pick comes to its lease
jq '.cards[0].chips[0].processes = [] | .cards[0].chips[0].memory.available_mb = 62000' \
    "$tmp/ok.json" >"$tmp/scenario.json"
export HBMCTL_LEASE_DIR=$tmp/leases
hbm leases >/dev/null 2>"$tmp/err"
check "leases with a FIFO in the lease dir: exit 2" test $? -eq 2
check "leases: names the FIFO" grep -q "device-0.lease: a FIFO, not a regular file" "$tmp/err"
hbm release somejob >/dev/null 2>"$tmp/err"
check "release with a FIFO in the lease dir: exit 2, named" \
    grep -q "device-0.lease: a FIFO" "$tmp/err"
hbm pick 1 --backend dcmi --lease job --format list >/dev/null 2>"$tmp/err"
rc=$?
check "pick with a FIFO as a lease file: exit 2 (got $rc)" test "$rc" -eq 2
check "pick: names the FIFO" grep -q "device-0.lease" "$tmp/err"
rm -f "$tmp/leases/.pick" "$tmp/leases/device-0.lease"
mkfifo "$tmp/leases/.pick"
hbm pick 1 --backend dcmi --lease job --format list >/dev/null 2>"$tmp/err"
rc=$?
check "pick with a FIFO as its lock file: exit 2 (got $rc)" test "$rc" -eq 2
check "pick: names its lock file" grep -q "/.pick" "$tmp/err"
rm "$tmp/leases/.pick"
unset HBMCTL_LEASE_DIR
cp "$tmp/ok.json" "$tmp/scenario.json"

# State files in /run/hbmctl: the leak history of probe --npd leaking, a FIFO.
mkfifo "$tmp/history.fifo"
out=$(hbm probe --npd leaking --history "$tmp/history.fifo")
check "probe --npd leaking, FIFO history: Unknown (exit $?), named" \
    grep -q "history.fifo" <<<"$out"
# Other readers of the same class: a web config, a log for explain, a model config.
hbm exporter --once --web-config "$tmp/history.fifo" >/dev/null 2>"$tmp/err"
check "exporter --web-config FIFO: exit 2, named" grep -q "history.fifo: a FIFO" "$tmp/err"
hbm explain "$tmp/history.fifo" >/dev/null 2>"$tmp/err"
check "explain FIFO: exit 2, named" grep -q "history.fifo: a FIFO" "$tmp/err"
mkdir "$tmp/model" && mkfifo "$tmp/model/config.json"
hbm plan "$tmp/model" --device 910B3 >/dev/null 2>"$tmp/err"
check "plan with a FIFO config.json: exit 2, named" grep -q "config.json: a FIFO" "$tmp/err"

# A pod's runtime state: config.json of the process's container is a FIFO.
pod_uid=3c7f5d84-b061-4e9d-8f40-5b0c1d2e3f44
cid=$(printf '4d%.0s' $(seq 32))
make_root "$tmp/root" yes
pod_proc "$tmp/root" "$held" "$pod_uid"
mkdir -p "$tmp/root/run/containerd/io.containerd.runtime.v2.task/k8s.io/$cid"
mkfifo "$tmp/root/run/containerd/io.containerd.runtime.v2.task/k8s.io/$cid/config.json"
mkdir -p "$tmp/root/var/log/pods/ml_vllm-0_$pod_uid/vllm"
hbm status --root "$tmp/root" --json >"$tmp/st.json" 2>"$tmp/err"
check "status with a FIFO as the pod's config.json: exit 0 (got $?)" test $? -eq 0
check "status: the pod still named, from its log directory" \
    test "$(jq -r '.devices[0].processes[0].pod.name' "$tmp/st.json")" = vllm-0

# ---- a wedged driver -------------------------------------------------------------------------
wedge dcmi_get_device_memory_info_v3
for cmd in status doctor snapshot; do
    t0=$(now)
    hbm "$cmd" --vendor-timeout 1s >/dev/null 2>"$tmp/err"
    rc=$?
    check "$cmd, wedged DCMI: exit 2 (got $rc)" test "$rc" -eq 2
    check "$cmd, wedged DCMI: within 1s and a little ($(elapsed_since "$t0")s)" took "$t0" 5
    check "$cmd, wedged DCMI: names the call" \
        grep -q "dcmi_get_device_memory_info_v3 did not return within 1s" "$tmp/err"
done
out=$(hbm status --vendor-timeout 1500ms 2>&1)
check "--vendor-timeout 1500ms: kept to the millisecond" grep -q "within 1.5s" <<<"$out"
hbm probe --vendor-timeout 1s --json >"$tmp/p.json"
check "probe, wedged DCMI: exit 2" test $? -eq 2
check "probe --json, wedged DCMI: the call in the reason" \
    grep -q "dcmi_get_device_memory_info_v3" <(jq -r .reason "$tmp/p.json")
wedge load
for backend in auto dcmi; do
    t0=$(now)
    hbm status --backend "$backend" --vendor-timeout 1s >/dev/null 2>"$tmp/err"
    rc=$?
    check "status --backend $backend, a library whose loading blocks: exit 2 (got $rc)" test "$rc" -eq 2
    check "status --backend $backend, a library whose loading blocks: within 1s and a little ($(elapsed_since "$t0")s)" \
        took "$t0" 5
    check "status --backend $backend: says the library did not load in time" \
        grep -q "dcmi: loading the library did not return within 1s" "$tmp/err"
done
wedge dcmi_init
out=$(hbm probe --npd unhealthy --vendor-timeout 1s)
check "probe --npd, wedged dcmi_init: Unknown (exit $?)" grep -q "^unknown: .*dcmi_init" <<<"$out"
# A member of the class the issue did not name: NVML.
( fake_nvml
  jq -n --argjson p "$held" '{driver_version: "550.54.15", hang: {nvmlDeviceGetMemoryInfo_v2: -1},
      devices: [{name: "H100", uuid: "GPU-1", memory_total: 85899345920, memory_used: 1,
                 compute: [{pid: $p, used_memory: 1}]}]}' >"$tmp/scenario.json"
  hbm status --vendor-timeout 1s >/dev/null 2>"$tmp/err"
  check "NVML wedged: exit 2 (got $?)" test $? -eq 2
  check "NVML wedged: names the call" grep -q "nvmlDeviceGetMemoryInfo_v2 did not return" "$tmp/err"
  finish >/dev/null ) || HBM_FAILED=$((HBM_FAILED + 1))

# --deadline to the millisecond, and JSON at the deadline.
wedge dcmi_get_device_memory_info_v3
# Two deadlines a second rounding would both make 2s: they fire 0.8s apart (the difference
# holds however slow the host is to start hbmctl).
t0=$(now)
hbm probe --deadline 1100ms --json >"$tmp/p.json"
rc=$?
e1=$(elapsed_since "$t0")
t0=$(now)
hbm probe --deadline 1900ms --json >/dev/null
e2=$(elapsed_since "$t0")
check "probe --deadline 1100ms: exit 2 (got $rc)" test "$rc" -eq 2
check "probe --deadline 1100ms and 1900ms fire 0.8s apart, not both at 2s (${e1}s, ${e2}s)" \
    awk -v a="$e1" -v b="$e2" 'BEGIN { exit !(b - a >= 0.5 && b - a <= 1.3) }'
check "probe --json at its deadline: valid JSON, status unknown" \
    test "$(jq -r .status "$tmp/p.json")" = unknown

# The exporter: hbmctl_up 0, stale 1, /healthz 503, and SIGTERM still stops it at once.
# start_exporter LOG ARGS...: an exporter in the background; sets exporter and url
start_exporter() {
    local log=$1
    shift
    "$HBMCTL" exporter --listen 127.0.0.1:0 --vendor-timeout 1s --lease-dir "$tmp/leases" \
        "$@" 2>"$log" &
    exporter=$!
    pids+=("$exporter")
    for _ in $(seq 100); do grep -q "port [0-9]" "$log" && break; sleep 0.1; done
    url="http://127.0.0.1:$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$log")"
}
# term_stops WHAT: SIGTERM ends the exporter within 4s, exit 0
term_stops() {
    kill -TERM "$exporter"
    local t0
    t0=$(now)
    for _ in $(seq 100); do kill -0 "$exporter" 2>/dev/null || break; sleep 0.05; done
    check "exporter, $1: SIGTERM stops it within 4s" took "$t0" 4
    wait "$exporter" 2>/dev/null
    check "exporter, $1: exit 0 on SIGTERM" test $? -eq 0
}
start_exporter "$tmp/exporter.err"
curl -s -m "$T" "$url/metrics" >"$tmp/m.txt"
check "exporter, wedged: hbmctl_up 0" grep -q '^hbmctl_up 0$' "$tmp/m.txt"
check "exporter, wedged: stale 1" grep -q '^hbmctl_exporter_observation_stale 1$' "$tmp/m.txt"
check "exporter, wedged: no device value" \
    test "$(grep -c '^hbmctl_device_memory_used_bytes' "$tmp/m.txt")" -eq 0
check "exporter, wedged: the call in hbmctl_observe_error" \
    grep -q 'hbmctl_observe_error{error="dcmi: dcmi_get_device_memory_info_v3' "$tmp/m.txt"
check "exporter, wedged: promtool accepts it" promtool check metrics <"$tmp/m.txt"
check "exporter, wedged: /healthz 503" \
    test "$(curl -s -m "$T" -o /dev/null -w '%{http_code}' "$url/healthz")" = 503
sleep 1.1
t0=$(now)
curl -s -m "$T" "$url/metrics" >"$tmp/m2.txt"
check "exporter, still wedged: the next scrape does not wait again" took "$t0" 3
check "exporter, still wedged: says the call has not returned" \
    grep -q 'has not returned for' "$tmp/m2.txt"
term_stops wedged

# The same with a library whose loading never returns: it holds the loader's lock, which
# exit's destructors wait for; SIGTERM must still end the exporter.
wedge load
start_exporter "$tmp/exporter-load.err" --backend dcmi
curl -s -m "$T" "$url/metrics" >"$tmp/m-load.txt"
check "exporter, library loading wedged: hbmctl_up 0" grep -q '^hbmctl_up 0$' "$tmp/m-load.txt"
check "exporter, library loading wedged: says so" \
    grep -q 'hbmctl_observe_error{error="dcmi: loading the library' "$tmp/m-load.txt"
term_stops "library loading wedged"
wedge dcmi_get_device_memory_info_v3

# The alert on it (deploy/prometheus/alerts.yml) fires on the stale gauge, not before 2m.
cat >"$tmp/rules_test.yml" <<EOF
rule_files: ["$HBM_SRC/deploy/prometheus/alerts.yml"]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'hbmctl_exporter_observation_stale{instance="n1"}'
        values: '0 1 1 1 1'
      - series: 'hbmctl_exporter_observation_stale{instance="n2"}'
        values: '0 0 0 0 0'
    alert_rule_test:
      - eval_time: 1m
        alertname: HbmctlDriverNotAnswering
        exp_alerts: []
      - eval_time: 4m
        alertname: HbmctlDriverNotAnswering
        exp_alerts:
          - exp_labels: {severity: critical, instance: n1}
            exp_annotations:
              summary: "The accelerator driver on n1 does not answer"
              description: "A driver call (or npu-smi) has not returned within the exporter's --vendor-timeout (hbmctl_observe_error names it): the device is likely wedged and its metrics are withheld, not stale values. Check the device with the vendor tool; a reset or a reboot usually follows."
EOF
check "promtool test rules: HbmctlDriverNotAnswering fires on a stale exporter only" \
    promtool test rules "$tmp/rules_test.yml"

# A driver call that comes back: the exporter serves fresh values again.
jq '. + {hang: {dcmi_get_device_memory_info_v3: 1.5}}' "$tmp/ok.json" >"$tmp/scenario.json"
start_exporter "$tmp/exporter2.err" --min-interval 100ms
curl -s -m "$T" "$url/metrics" >"$tmp/m.txt"
check "exporter, slow call: stale while it hangs" \
    grep -q '^hbmctl_exporter_observation_stale 1$' "$tmp/m.txt"
cp "$tmp/ok.json" "$tmp/scenario.json"
for _ in $(seq 60); do
    curl -s -m "$T" "$url/metrics" >"$tmp/m.txt"
    grep -q '^hbmctl_up 1$' "$tmp/m.txt" && break
    sleep 0.1
done
check "exporter, the call returned: hbmctl_up 1 again" grep -q '^hbmctl_up 1$' "$tmp/m.txt"
check "exporter, the call returned: stale 0" grep -q '^hbmctl_exporter_observation_stale 0$' "$tmp/m.txt"
kill -TERM "$exporter"
wait "$exporter" 2>/dev/null

# ---- a hung npu-smi that starts a child holding its stdout -----------------------------------
cat >"$tmp/npu-smi" <<EOS
#!/bin/bash
sleep 600 &
echo \$! >"$tmp/grandchild"
sleep 600
EOS
chmod +x "$tmp/npu-smi"
export HBMCTL_NPU_SMI=$tmp/npu-smi
t0=$(now)
# $(...) returns only when every holder of the pipe has closed it, as NPD waits for EOF.
out=$(hbm probe --npd unhealthy --backend npu-smi --deadline 1500ms)
rc=$?
e=$(elapsed_since "$t0")
check "probe --npd, hung npu-smi: Unknown (exit $rc)" test "$rc" -eq 2
check "probe --npd, hung npu-smi: our stdout closed at the deadline (${e}s, not 600s)" \
    took "$t0" 5
check "probe --npd, hung npu-smi: says the deadline passed" grep -q "^unknown: deadline" <<<"$out"
check "probe --npd, hung npu-smi: npu-smi's own child was killed" gone "$(cat "$tmp/grandchild")"
# Without the probe's deadline, --vendor-timeout ends npu-smi and names it.
t0=$(now)
# (under the small root: the host scan of a busy machine is not what is measured)
hbm status --backend npu-smi --vendor-timeout 1s --root "$tmp/root" >/dev/null 2>"$tmp/err"
check "status, hung npu-smi: exit 2 (got $?)" test $? -eq 2
check "status, hung npu-smi: within 1s and a little" took "$t0" 5
check "status, hung npu-smi: named" grep -q "npu-smi info did not finish within 1s" "$tmp/err"
check "status, hung npu-smi: npu-smi's own child was killed" gone "$(cat "$tmp/grandchild")"
# An npu-smi that answers but leaves a child holding its stdout: its answer counts.
cat >"$tmp/npu-smi" <<EOS
#!/bin/bash
[ "\$*" = info ] || exit 1
sleep 600 &
cat "$HBM_SRC/tests/fixtures/npu-smi/01-910B3-8card-npusmi25.2-1proc.txt"
EOS
t0=$(now)
hbm status --backend npu-smi --root "$tmp/root" >/dev/null 2>"$tmp/err"
check "status, npu-smi exits but its child keeps stdout: answered (exit $?)" test $? -le 1
check "status, npu-smi exits but its child keeps stdout: no wait for the child" took "$t0" 8
unset HBMCTL_NPU_SMI
finish
