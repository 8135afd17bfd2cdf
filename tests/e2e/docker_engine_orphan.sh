#!/bin/bash
# An engine left by its dead server inside a live container, with a real dockerd
# (tests/e2e/containers.bash): in vllm-left the container's init is a shell (the reported
# `bash -lc`) that runs a server which forks VLLM::EngineCore holding 26 GiB of GPU 0, then
# the server exits; the engine now belongs to the shell, PID 1 of the container's PID
# namespace, and the container keeps running. It is engine-orphan (ORPHANED, its remedy: end
# it or restart the container), and clean ends it without --pid while the container runs on.
# In vllm-pid1 the server is the container's PID 1 itself (its entrypoint), so its engine's
# parent is the container's init too, but a server: no finding, and clean keeps it.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
. "$HBM_SRC/tests/e2e/containers.bash"
docker_scene

dev_args() { echo --network none --device "$D/hbmtest$1:/dev/hbmtest$1"; }
# a loop, so the shell stays PID 1 (a shell may exec its last command)
left=$(timeout 60 docker run -d --name vllm-left $(dev_args 0) hbm-test:1 sh -c \
    'ctr_engine /dev/hbmtest0 /tmp/engine.pid server-exits; while :; do sleep 1; done') ||
    { echo "FAIL: docker run"; exit 1; }
CTR_IDS+=("$left")
pid1=$(timeout 60 docker run -d --name vllm-pid1 $(dev_args 1) hbm-test:1 \
    ctr_engine /dev/hbmtest1 /tmp/engine.pid) || { echo "FAIL: docker run"; exit 1; }
CTR_IDS+=("$pid1")
engine0=$(ctr_pid "$left" VLLM::EngineCor) || { echo "FAIL: no engine in vllm-left"; exit 1; }
engine1=$(ctr_pid "$pid1" VLLM::EngineCor) || { echo "FAIL: no engine in vllm-pid1"; exit 1; }
pids+=("$engine0" "$engine1")
init0=$(timeout 10 docker inspect -f '{{.State.Pid}}' vllm-left)
for ((i = 0; i < 50; i++)); do
    [ "$(awk '/^PPid:/ { print $2 }' "/proc/$engine0/status")" = "$init0" ] && break
    sleep 0.1
done
check "the engine's server exited: its parent is the container's init, pid $init0" \
    [ "$(awk '/^PPid:/ { print $2 }' "/proc/$engine0/status")" = "$init0" ]
MIB=1048576
gpu_scenario "$engine0" "$engine1"

status
check "the host facts: parent_container_init, parent_comm sh (got $(holder "$engine0" '"\(.parent_container_init) \(.parent_comm)"'))" \
    [ "$(holder "$engine0" '"\(.parent_container_init) \(.parent_comm)"')" = "true sh" ]
check "the container still runs (got $(holder "$engine0" .container_state))" \
    [ "$(holder "$engine0" .container_state)" = running ]
check "GPU 0 ORPHANED (got $(dev 0 verdict))" [ "$(dev 0 verdict)" = ORPHANED ]
check "the reason names the container and its init (got $(dev 0 reason))" \
    grep -q "belongs to the init of running container vllm-left (pid $init0, sh)" <<<"$(dev 0 reason)"
check "vllm-pid1: its server is the container's init: GPU 1 BUSY (got $(dev 1 verdict))" \
    [ "$(dev 1 verdict)" = BUSY ]
check "vllm-pid1: no finding names its engine (got $(about "$engine1"))" [ "$(about "$engine1")" = "[]" ]

"$HBMCTL" doctor --backend nvml --json >"$tmp/d.json"
f() { jq -r "[.findings[] | select(.evidence.process.pid? == $engine0)] | first | $1" "$tmp/d.json"; }
check "doctor: engine-orphan (got $(f .id))" [ "$(f .id)" = engine-orphan ]
check "its remedy: end it, or restart the container (got $(f .remedy))" \
    grep -q "container runs on; or restart container vllm-left" <<<"$(f .remedy)"
check "its evidence names the container and its image (got $(f '.evidence.process | "\(.container_name) \(.container_image)"'))" \
    [ "$(f '.evidence.process | "\(.container_name) \(.container_image)"')" = "vllm-left hbm-test:1" ]
"$HBMCTL" doctor --backend nvml >"$tmp/d.txt"
check "doctor's human output fits 100 columns" fits_width "$tmp/d.txt"

"$HBMCTL" clean --backend nvml --json >"$tmp/dry.json"
kills() { jq -c "[.steps[] | select(.action == \"kill\") | {pid: (.text | capture(\"pid (?<p>[0-9]+) \").p), allowed}]" "$1"; }
check "clean plans the engine's kill without --pid, and nothing of vllm-pid1 (got $(kills "$tmp/dry.json"))" \
    [ "$(kills "$tmp/dry.json")" = "[{\"pid\":\"$engine0\",\"allowed\":true}]" ]
"$HBMCTL" clean --backend nvml --only engine-orphan --apply --yes --grace 2s --settle 2s \
    >"$tmp/apply.txt"
check "clean --apply exits 0" [ $? -eq 0 ]
check "clean ended the engine (state '$(proc_state "$engine0")')" \
    bash -c "case '$(proc_state "$engine0")' in ''|Z) ;; *) false ;; esac"
check "vllm-left runs on" [ "$(timeout 10 docker inspect -f '{{.State.Running}}' vllm-left)" = true ]
check "vllm-pid1's engine is untouched" kill -0 "$engine1"
status
check "the memory returned: GPU 0 FREE at 500 MiB (got $(dev 0 verdict) $(dev 0 memory_used_bytes))" \
    [ "$(dev 0 verdict) $(dev 0 memory_used_bytes)" = "FREE $((500 * MIB))" ]
finish
