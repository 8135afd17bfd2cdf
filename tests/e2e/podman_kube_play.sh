#!/bin/bash
# Podman's names with real podman (tests/e2e/containers.bash): `podman kube play` starts pod
# vllm-pod whose container engine runs a server and its VLLM::EngineCore holding GPU 0 (fake
# NVML); podman names that container vllm-pod-engine. hbmctl tells the pod and the container
# apart (pod vllm-pod, container engine) and reads the name and image from containers-storage,
# in status, doctor and the exporter's labels; a plain `podman run` container on GPU 1 is
# named and in no pod. Both are healthy: running, BUSY, no finding.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
. "$HBM_SRC/tests/e2e/containers.bash"
scratch KILL
fake_nvml
podman_start
ctr_image

cat >"$D/pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: vllm-pod
spec:
  containers:
  - name: engine
    image: localhost/hbm-test:1
    command: ["/bin/sh", "-c", "/bin/ctr_engine /dev/hbmtest0 /tmp/engine.pid; while :; do sleep 1; done"]
    volumeMounts:
    - {name: gpu, mountPath: /dev/hbmtest0}
  volumes:
  - {name: gpu, hostPath: {path: $D/hbmtest0, type: CharDevice}}
EOF
timeout 120 "${CTR_CLI[@]}" kube play --network none "$D/pod.yaml" >"$D/play.log" 2>&1 ||
    { cat "$D/play.log"; echo "FAIL: podman kube play"; exit 1; }
inpod=$(timeout 10 "${CTR_CLI[@]}" inspect -f '{{.Id}}' vllm-pod-engine)
CTR_IDS+=("$inpod")
plain=$(timeout 60 "${CTR_CLI[@]}" run -d --name vllm-plain --network none \
    --device "$D/hbmtest1:/dev/hbmtest1" localhost/hbm-test:1 /bin/sh -c \
    '/bin/ctr_engine /dev/hbmtest1 /tmp/engine.pid; while :; do sleep 1; done') ||
    { echo "FAIL: podman run"; exit 1; }
CTR_IDS+=("$plain")
engine0=$(ctr_pid "$inpod" VLLM::EngineCor) || { echo "FAIL: no engine in vllm-pod"; exit 1; }
engine1=$(ctr_pid "$plain" VLLM::EngineCor) || { echo "FAIL: no engine in vllm-plain"; exit 1; }
pids+=("$engine0" "$engine1")
gpu_scenario "$engine0" "$engine1"

status
names() { holder "$1" '"\(.container_state) \(.container_name) \(.container_image) \(.pod.name) \(.pod.container)"'; }
check "kube play: pod vllm-pod, container engine, podman's name and image (got $(names "$engine0"))" \
    [ "$(names "$engine0")" = "running vllm-pod-engine localhost/hbm-test:1 vllm-pod engine" ]
check "podman run: named, in no pod (got $(names "$engine1"))" \
    [ "$(names "$engine1")" = "running vllm-plain localhost/hbm-test:1 null null" ]
check "both BUSY (got $(dev 0 verdict) $(dev 1 verdict))" [ "$(dev 0 verdict) $(dev 1 verdict)" = "BUSY BUSY" ]
check "no finding names the pod's engine (got $(about "$engine0"))" [ "$(about "$engine0")" = "[]" ]
check "no finding names the plain container's engine (got $(about "$engine1"))" [ "$(about "$engine1")" = "[]" ]
"$HBMCTL" status --backend nvml >"$tmp/s.txt"
check "status shows the pod by its name, no empty namespace" \
    bash -c "grep -q ' vllm-pod ' '$tmp/s.txt' && ! grep -q '/vllm-pod' '$tmp/s.txt'"
"$HBMCTL" exporter --backend nvml --once >"$tmp/m.txt"
check "exporter: the pod's engine labelled with podman's name and image, pod and container" \
    grep -q "^hbmctl_process_memory_bytes{.*pid=\"$engine0\",name=\"VLLM::EngineCor\",container_name=\"vllm-pod-engine\",image=\"localhost/hbm-test:1\",namespace=\"\",pod=\"vllm-pod\",container=\"engine\"} " \
    "$tmp/m.txt"
check "exporter: the plain container's engine with its name, no pod" \
    grep -q "^hbmctl_process_memory_bytes{.*pid=\"$engine1\",.*container_name=\"vllm-plain\",image=\"localhost/hbm-test:1\",namespace=\"\",pod=\"\",container=\"${plain:0:12}\"} " \
    "$tmp/m.txt"
finish
