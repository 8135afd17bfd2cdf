#!/bin/bash
# The founding case with a real dockerd (tests/e2e/containers.bash): a container whose main
# process is a shell (the reported `bash -lc`) runs a server that forks VLLM::EngineCore,
# which holds 26 GiB of GPU 0 (fake NVML, the engine's real host pid) and keeps the device
# file open. The engine leaves the container's cgroup, then `docker rm -f`: the engine
# outlives its container, ORPHANED naming it, and `clean --apply` ends it and the memory
# returns. Beside it, a healthy container on GPU 1 draws no finding, keeps its name and image
# in the host facts, is paused without becoming ORPHANED or stuck, and is never touched.
#
# Why the engine survives `docker rm -f`: a container in the host's PID namespace (--pid
# host) has no namespace whose end kills its processes, so runc (1.1, cgroupfs) ends it by
# freezing its cgroup and signalling the pids its devices hierarchy lists (libcontainer's
# signalAllProcesses, GetAllPids on the devices path). A process that moved itself out of
# the devices and freezer hierarchies is neither frozen nor signalled, and the hierarchies it
# stayed in keep /docker/<id> after the container is removed (rmdir fails while a task is
# in it): hbmctl sees a cgroup naming a container no runtime knows.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
. "$HBM_SRC/tests/e2e/containers.bash"
docker_scene
run() { # NAME GPU ARGS...: a detached container whose engine holds /dev/hbmtestGPU
    local name=$1 gpu=$2
    shift 2
    timeout 60 docker run -d --name "$name" --network none --device "$D/hbmtest$gpu:/dev/hbmtest$gpu" \
        "$@" hbm-test:1 sh -c "ctr_engine /dev/hbmtest$gpu /tmp/engine.pid ${CTR_ENGINE_ARGS:-} & wait"
}
healthy=$(run vllm-healthy 1) || { echo "FAIL: docker run"; exit 1; }
CTR_IDS+=("$healthy")
founding=$(CTR_ENGINE_ARGS=escape run vllm-qwen 0 --pid host --cap-add SYS_ADMIN \
    --security-opt seccomp=unconfined -v /sys/fs/cgroup:/sys/fs/cgroup:rw) ||
    { echo "FAIL: docker run"; exit 1; }
CTR_IDS+=("$founding")
engine0=$(ctr_pid "$founding" VLLM::EngineCor) || { echo "FAIL: no engine in vllm-qwen"; exit 1; }
engine1=$(ctr_pid "$healthy" VLLM::EngineCor) || { echo "FAIL: no engine in vllm-healthy"; exit 1; }
pids+=("$engine0" "$engine1")
check "the engine left the devices hierarchy and kept the cpu one" \
    grep -qE "^[0-9]+:devices:/\$" "/proc/$engine0/cgroup"

MIB=1048576
gpu_scenario "$engine0" "$engine1"


status
check "healthy: running, with Docker's name and image (got $(holder "$engine1" '"\(.container_state) \(.container_name) \(.container_image)"'))" \
    [ "$(holder "$engine1" '"\(.container_state) \(.container_name) \(.container_image)"')" = "running vllm-healthy hbm-test:1" ]
"$HBMCTL" exporter --backend nvml --once >"$tmp/m.txt"
check "healthy: the exporter labels its engine with Docker's name and image" \
    grep -q "^hbmctl_process_memory_bytes{.*pid=\"$engine1\",.*container_name=\"vllm-healthy\",image=\"hbm-test:1\"," \
    "$tmp/m.txt"
"$HBMCTL" status --backend nvml >"$tmp/s.txt"
check "healthy: status names the container, not its id" \
    grep -qE "^1 +$engine1 +VLLM::EngineCor +[0-9.]+ GiB +vllm-healthy " "$tmp/s.txt"
check "healthy: GPU 1 is BUSY (got $(dev 1 verdict))" [ "$(dev 1 verdict)" = BUSY ]
check "healthy: no finding names its engine (got $(about "$engine1"))" [ "$(about "$engine1")" = "[]" ]
check "before rm: the escaped engine's container still runs: GPU 0 BUSY (got $(dev 0 verdict))" \
    [ "$(dev 0 verdict)" = BUSY ]
HBMCTL_DOCKER_ROOT=$D/elsewhere "$HBMCTL" status --backend nvml --json >"$tmp/s.json"
check "Docker's records not where hbmctl looks: unknown, not gone (got $(holder "$engine1" .container_state))" \
    [ "$(holder "$engine1" .container_state)" = unknown ]

timeout 30 docker pause vllm-healthy >/dev/null
status
check "paused: container_state paused (got $(holder "$engine1" .container_state))" \
    [ "$(holder "$engine1" .container_state)" = paused ]
check "paused: GPU 1 BUSY, not ORPHANED (got $(dev 1 verdict))" [ "$(dev 1 verdict)" = BUSY ]
check "paused: the reason says paused (got $(dev 1 reason))" grep -q '^paused: ' <<<"$(dev 1 reason)"
check "paused: no finding names its engine (got $(about "$engine1"))" [ "$(about "$engine1")" = "[]" ]
timeout 30 docker unpause vllm-healthy >/dev/null

timeout 60 docker rm -f vllm-qwen >/dev/null
check "docker rm -f: the engine outlived its container" kill -0 "$engine0"
check "docker rm -f: its parent is init now" \
    [ "$(awk '/^PPid:/ { print $2 }' "/proc/$engine0/status")" = 1 ]
status
check "after rm: container_state gone (got $(holder "$engine0" .container_state))" \
    [ "$(holder "$engine0" .container_state)" = gone ]
check "after rm: GPU 0 ORPHANED (got $(dev 0 verdict))" [ "$(dev 0 verdict)" = ORPHANED ]
check "after rm: the reason names the container (got $(dev 0 reason))" \
    grep -q "outlived its container ${founding:0:12}: no container runtime knows it" <<<"$(dev 0 reason)"
check "after rm: GPU 1 still BUSY (got $(dev 1 verdict))" [ "$(dev 1 verdict)" = BUSY ]
check "after rm: doctor's orphan-holder names the engine (got $(about "$engine0"))" \
    [ "$(about "$engine0")" = '["orphan-holder"]' ]

"$HBMCTL" clean --backend nvml --only orphan-holder --apply --yes --grace 2s --settle 2s \
    --json >"$tmp/c.json"
check "clean --apply exits 0" [ $? -eq 0 ]
# gone, or a zombie until init reaps it
check "clean ended the engine (state '$(proc_state "$engine0")')" \
    bash -c "case '$(proc_state "$engine0")' in ''|Z) ;; *) false ;; esac"
check "clean left the healthy container's engine alone" kill -0 "$engine1"
check "clean killed nothing else" \
    [ "$(jq -c '[.steps[] | select(.action == "kill") | .text | test("pid '"$engine0"' ")]' "$tmp/c.json")" = '[true]' ]
status
check "the memory returned: GPU 0 FREE at 500 MiB (got $(dev 0 verdict) $(dev 0 memory_used_bytes))" \
    [ "$(dev 0 verdict) $(dev 0 memory_used_bytes)" = "FREE $((500 * MIB))" ]
check "the audit log records the kill" grep -q "\"pid\": *$engine0" "$HBMCTL_AUDIT_LOG"
finish
