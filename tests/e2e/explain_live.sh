#!/bin/bash
# explain's live checks against real processes: a server started by this test (a Python HTTP
# server whose command line says "vllm serve --port P") listens on P; the log's client used
# another port where nothing listens. Without a device backend the host facts still answer;
# with the fake NVML (a device backend) the checks run by default and name the holders.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
unset HBMCTL_CATALOG

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$tmp/bin"
cat >"$tmp/bin/vllm" <<'PY'
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
http.server.HTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler).serve_forever()
PY
# A free port for the server, and one where nothing listens for the client.
port=""
for try in 1 2 3 4 5 6 7 8 9 10; do
    p=$((20000 + RANDOM % 30000))
    listening "$p" && continue
    python3 "$tmp/bin/vllm" serve /data --port "$p" 2>/dev/null &
    srv=$!
    for _ in $(seq 300); do listening "$p" && break; kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
    if listening "$p"; then port=$p; pids+=("$srv"); break; fi
    kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
done
check "test server started" test -n "$port"
[ -n "$port" ] || { finish; exit 1; }
other=""
for try in 1 2 3 4 5 6 7 8 9 10; do
    q=$((20000 + RANDOM % 30000))
    if [ "$q" != "$port" ] && ! listening "$q"; then other=$q; break; fi
done

cat >"$tmp/slip.log" <<LOG
\$ vllm serve /data --trust-remote-code --port $port --served-model-name qwen32b
\$ curl -s --max-time 5 http://127.0.0.1:$other/v1/models
curl: (7) Failed to connect to 127.0.0.1 port $other: Connection refused
LOG

# No device backend: host facts only, on request.
nodev() { HBMCTL_NVML_LIB="$tmp/none.so" HBMCTL_DCMI_LIB="$tmp/none.so" PATH=/usr/bin:/bin "$@"; }
json=$(nodev "$HBMCTL" explain --live --json "$tmp/slip.log"); rc=$?
check "live: exit 1" test $rc -eq 1
live=$(jq '.findings[] | select(.id=="connection_refused") | .live' <<<"$json")
check "live: the client's port has no listener" test \
    "$(jq -c '.port | [.port, .listening]' <<<"$live")" = "[$other,false]"
check "live: the server process is found with its port" test \
    "$(jq -c "[.servers[] | select(.pid==$srv) | .ports[]]" <<<"$live")" = "[$port]"
check "live: its --port is read" test "$(jq ".servers[] | select(.pid==$srv) | .port_arg" <<<"$live")" = "$port"
text=$(nodev "$HBMCTL" explain --live "$tmp/slip.log")
check "words: nothing listens" grep -q "port $other: nothing listens on this host now" <<<"$text"
check "words: where vllm listens" grep -q "a vllm process (pid $srv) listens on $port" <<<"$text"
check "words: the slip" grep -q "the log's port $other is not the server's --port $port" <<<"$text"
check "words: from the log alone" grep -q "server's port as $port, but the client used $other" <<<"$text"

# The client's port is the server's: the listener is named.
sed "s/port $other:/port $port:/" "$tmp/slip.log" >"$tmp/up.log"
json=$(nodev "$HBMCTL" explain --live --json "$tmp/up.log")
live=$(jq '.findings[] | select(.id=="connection_refused") | .live' <<<"$json")
check "live: listening now" test "$(jq -c '.port | [.listening, .listeners[0].pid]' <<<"$live")" = "[true,$srv]"

# Default without a device backend: no live checks, and a note says why.
json=$(nodev "$HBMCTL" explain --json "$tmp/slip.log")
check "auto without devices: no live" test "$(jq -c '[.findings[].live] | unique' <<<"$json")" = '[null]'
check "auto without devices: a note" test "$(jq -r '.live_note | test("live checks skipped")' <<<"$json")" = true
json=$(nodev "$HBMCTL" explain --no-live --live --json "$tmp/slip.log")
check "the last of --live / --no-live wins" test "$(jq -c '.findings[0].live | type' <<<"$json")" = '"object"'

# After the server stops, the same port is free.
kill "$srv"; wait "$srv" 2>/dev/null
json=$(nodev "$HBMCTL" explain --live --json "$tmp/up.log")
check "after the server stopped: nothing listens" test \
    "$(jq -c '.findings[0].live.port.listening' <<<"$json")" = false

# With a device backend (fake NVML) live checks are the default and name the holders.
if [ -e "$HBM_FAKES/libnvidia-ml.so.1" ]; then
    sleep 600 &
    holder=$!
    pids+=("$holder")
    cat >"$tmp/scenario.json" <<JSON
{"driver_version": "550.54.15", "devices": [
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0a1b2c3d", "bus_id": "00000000:18:00.0",
   "memory_total": $((80 * 1073741824)), "memory_used": $((70 * 1073741824)),
   "temperature": 40, "power_mw": 90000, "ecc_uncorrected": 0, "mig_mode": 0,
   "compute": [{"pid": $holder, "used_memory": $((69 * 1073741824))}], "graphics": []}]}
JSON
    printf '%s\n' 'ValueError: Free memory on device cuda:0 (10.00/80.00 GiB) on startup is less than desired GPU memory utilization (0.9, 72.00 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.' >"$tmp/fm.log"
    fake_nvml
    json=$("$HBMCTL" explain --json "$tmp/fm.log")
    check "devices: live by default" test "$(jq -r '.findings[0].live.source' <<<"$json")" = "this host, nvml backend"
    check "devices: the holder and its memory" test \
        "$(jq -c ".findings[0].live.holders[] | select(.pid==$holder) | [.device, .memory_bytes]" <<<"$json")" = "[0,$((69 * 1073741824))]"
    text=$("$HBMCTL" explain "$tmp/fm.log")
    check "devices: words" grep -q "pid $holder sleep holds 69.00 GiB" <<<"$text"
    check "devices: a holder the log does not name is not marked" test \
        "$(jq -c "[.findings[0].live.holders[] | select(.pid==$holder) | .log_process]" <<<"$json")" = "[null]"
    # The log's own worker (its line prefix names the pid) holds the memory: it is marked as
    # the server's own, and the remedy is not to end it.
    printf '(VllmWorker rank=0 pid=%s) ERROR 03-19 07:27:53 [multiproc_executor.py:375] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.74 GiB. GPU 0 has a total capacity of 79.19 GiB of which 605.88 MiB is free. Process %s has 69.00 GiB memory in use. Of the allocated memory 66.21 GiB is allocated by PyTorch, and 185.98 MiB is reserved by PyTorch but unallocated.\n' \
        "$holder" "$holder" >"$tmp/own.log"
    json=$("$HBMCTL" explain --json "$tmp/own.log")
    check "own worker: marked in the holders" test \
        "$(jq -r ".findings[0].live.holders[] | select(.pid==$holder) | .log_process" <<<"$json")" = "VllmWorker rank=0"
    check "own worker: not to be ended" test \
        "$(jq -r '.findings[0].remedies[0] | startswith("Do not end pid")' <<<"$json")" = true
    check "own worker: in words" grep -q "pid $holder sleep holds 69.00 GiB (.*; the log's own VllmWorker rank=0 (line 1), not a foreign holder)" \
        <<<"$(jq -r '.findings[0].live.notes[]' <<<"$json")"
    # The same from a snapshot taken now, replayed after the holder is gone.
    "$HBMCTL" snapshot >"$tmp/snap.json" 2>/dev/null
    kill "$holder"; wait "$holder" 2>/dev/null
    json=$("$HBMCTL" explain --snapshot "$tmp/snap.json" --json "$tmp/fm.log")
    check "snapshot: live from the capture" test \
        "$(jq -r '.findings[0].live.source | startswith("snapshot ")' <<<"$json")" = true
    check "snapshot: the holder as captured" test \
        "$(jq "[.findings[0].live.holders[] | select(.pid==$holder)] | length" <<<"$json")" = 1
fi
# NCCL's "unhandled system error" with leftovers: a stale nccl-* segment in the /dev/shm of
# a root prefix (no process holds it) is named with its size; clean is the remedy.
make_root "$tmp/shmroot" yes
mkdir -p "$tmp/shmroot/dev/shm"
head -c 5967876 /dev/zero >"$tmp/shmroot/dev/shm/nccl-fjwOOB"
sig="$HBM_SRC/tests/fixtures/logs/sig"
json=$(nodev "$HBMCTL" explain --live --root "$tmp/shmroot" --json "$sig/nccl_system_error.log")
check "dev_shm: the stale nccl segment is listed" test \
    "$(jq -c '.findings[0].live.dev_shm.stale_nccl' <<<"$json")" = '[{"path":"/dev/shm/nccl-fjwOOB","size_bytes":5967876}]'
check "dev_shm: a plain directory under --root has no size (tests/e2e/clean_shm.sh mounts one)" test \
    "$(jq '.findings[0].live.dev_shm.total_bytes' <<<"$json")" = null
check "dev_shm: clean is the remedy" grep -q "leftovers of crashed runs; hbmctl clean --apply" \
    <<<"$(jq -r '.findings[0].live.notes[]' <<<"$json")"
rm "$tmp/shmroot/dev/shm/nccl-fjwOOB"
json=$(nodev "$HBMCTL" explain --live --root "$tmp/shmroot" --json "$sig/nccl_shm_failed.log")
check "dev_shm: none left" test "$(jq -c '[.findings[0].live.dev_shm.nccl_objects, .findings[0].live.notes[1]]' \
    <<<"$json")" = '[0,"no nccl-* object in /dev/shm now"]'
# A killed process: the kernel log of the root prefix is read (a regular file stands in for
# /dev/kmsg, read in chunks): the OOM killer's record names the pid; without one, none.
mkdir -p "$tmp/shmroot/dev"
printf '6,1,1,-;eth0: link up\n3,2,2,-;Out of memory: Killed process 6774 (python3) total-vm:1kB, anon-rss:1kB\n' \
    >"$tmp/shmroot/dev/kmsg"
json=$(nodev "$HBMCTL" explain --live --root "$tmp/shmroot" --json "$sig/killed_by_kernel.log")
check "kernel log: the OOM kill found" test \
    "$(jq -c '.findings[0].live.kernel_oom_kills' <<<"$json")" = '[{"pid":6774,"name":"python3"}]'
printf '6,1,1,-;eth0: link up\n' >"$tmp/shmroot/dev/kmsg"
json=$(nodev "$HBMCTL" explain --live --root "$tmp/shmroot" --json "$sig/killed_by_kernel.log")
check "kernel log: no OOM kill, said so" grep -q "shows no OOM kill" \
    <<<"$(jq -r '.findings[0].live.notes[]' <<<"$json")"
rm "$tmp/shmroot/dev/kmsg"
json=$(nodev "$HBMCTL" explain --live --root "$tmp/shmroot" --json "$sig/killed_by_kernel.log")
check "kernel log: unreadable, said so" test "$(jq -c '.findings[0].live.kernel_oom_kills' <<<"$json")" = null
finish
