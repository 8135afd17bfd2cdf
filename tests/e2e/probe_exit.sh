#!/bin/bash
# hbmctl probe: exit 0 healthy, 1 unhealthy, 2 could not check, with one line saying why,
# for each check: memory against a percentage and a size, device selection, device health
# from the driver (fake NVML), and an HTTP endpoint this test serves (2xx, 500, a server
# that never answers, nothing listening), plus the overall deadline.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch

fake_nvml
GIB=1073741824
sleep 600 &
pids+=($!)
server=$!

scenario() { # used-GiB-of-gpu0 ecc-of-gpu1
    cat >"$tmp/scenario.tmp" <<EOF
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": $((80 * GIB)), "memory_used": $(($1 * GIB)), "temperature": 50, "power_mw": 300000,
  "compute": [{"pid": $server, "used_memory": $((($1 - 1) * GIB))}]},
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "bus_id": "00000000:19:00.0",
  "memory_total": $((80 * GIB)), "memory_used": $((GIB / 2)), "temperature": 35, "power_mw": 70000,
  "ecc_uncorrected": $2, "compute": []}]}
EOF
    mv "$tmp/scenario.tmp" "$tmp/scenario.json"
}

# probe ARGS...: sets rc and out (the one line, or the JSON)
probe() {
    out=$("$HBMCTL" probe "$@" 2>"$tmp/err")
    rc=$?
}
lines() { [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]; }

scenario 40 0
probe --max-mem 80%
check "healthy: exit 0" test "$rc" -eq 0
check "healthy: one line" lines
check "healthy line says healthy" grep -q "^hbmctl probe: healthy: " <<<"$out"
probe --max-mem 40%
check "40 GiB of 80 is 50%: above 40%: exit 1 ($out)" test "$rc" -eq 1
check "unhealthy line names the device and the limit" grep -q "unhealthy: device 0 memory 40.00 GiB of 80.00 GiB (50%) above --max-mem 40%" <<<"$out"
check "unhealthy: one line" lines
probe --max-mem 0.1%
check "a fractional limit is echoed as given ($out)" grep -q "above --max-mem 0.1%" <<<"$out"
probe --max-mem 0.6
check "ratio 0.6: exit 0" test "$rc" -eq 0
probe --max-mem 30GiB
check "size limit below use: exit 1" test "$rc" -eq 1
probe --max-mem 50GiB
check "size limit above use: exit 0" test "$rc" -eq 0
probe --device 1 --max-mem 10%
check "--device 1 only (0.5 GiB): exit 0" test "$rc" -eq 0
probe --device 0 --max-mem 10%
check "--device 0 only (40 GiB): exit 1" test "$rc" -eq 1
probe --device 7
check "unknown device: exit 2" test "$rc" -eq 2
check "unknown device: says not found" grep -q "could not check: device 7 not found" <<<"$out"
probe --max-mem lots
check "bad --max-mem: exit 2" test "$rc" -eq 2
probe --max-mem 40% --json
check "--json exit 1" test "$rc" -eq 1
check "--json status" test "$(jq -r .status <<<"$out")" = unhealthy
check "--json one max-mem check per device" test "$(jq '[.checks[]|select(.check=="max-mem")]|length' <<<"$out")" = 2
check "--json used bytes" test "$(jq '[.checks[]|select(.check=="max-mem")][0].memory_used_bytes' <<<"$out")" = $((40 * GIB))

# The memory grows between probes: the scenario is read again at every call.
scenario 75 0
probe --max-mem 95%
check "75 of 80 GiB (94%) under 95%: exit 0" test "$rc" -eq 0
probe --max-mem 80%
check "75 of 80 GiB over 80%: exit 1" test "$rc" -eq 1

# Device health from the driver: uncorrected ECC errors make GPU 1 unhealthy.
scenario 40 7
probe
check "unhealthy device: exit 1 ($out)" test "$rc" -eq 1
check "unhealthy device named" grep -q "device 1" <<<"$out"
probe --device 0
check "the healthy device alone: exit 0" test "$rc" -eq 0

# No driver at all: could not check.
HBMCTL_NVML_LIB="$tmp/none.so" PATH=/usr/bin:/bin probe --max-mem 80%
check "no backend: exit 2" test "$rc" -eq 2
check "no backend: says could not check" grep -q "could not check" <<<"$out"

# HTTP: a real server on loopback, with a healthy path, a failing path and a path that
# never answers.
cat >"$tmp/server.py" <<'EOF'
import http.server, socketserver, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/slow":
            time.sleep(30)
        code = 200 if self.path == "/health" else 500
        self.send_response(code)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    def handle_error(self, request, address):
        pass  # a client that hung up (the timeout cases) is expected
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$tmp/server.py" >"$tmp/port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
scenario 40 0
probe --max-mem 80% --url "http://127.0.0.1:$port/health"
check "2xx and memory fine: exit 0 ($out)" test "$rc" -eq 0
check "healthy line names the URL and status" grep -q "/health: HTTP 200" <<<"$out"
probe --no-devices --url "http://127.0.0.1:$port/health"
check "--no-devices, 2xx: exit 0" test "$rc" -eq 0
probe --max-mem 80% --url "http://127.0.0.1:$port/broken"
check "HTTP 500: exit 1" test "$rc" -eq 1
check "HTTP 500 named" grep -q "HTTP 500" <<<"$out"
start=$(date +%s.%N)
probe --no-devices --url "http://127.0.0.1:$port/slow" --timeout 1s
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
check "no answer within --timeout: exit 1" test "$rc" -eq 1
check "timeout named" grep -q "no answer within 1s" <<<"$out"
check "gave up near the timeout (took $took s)" awk -v t="$took" 'BEGIN {exit !(t < 10)}'
probe --no-devices --url "http://127.0.0.1:$port/slow" --timeout 60s --deadline 1s
check "deadline passed: exit 2" test "$rc" -eq 2
check "deadline named" grep -q "deadline passed" <<<"$out"
# A port nothing listens on (take one and close it).
free=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
probe --no-devices --url "http://127.0.0.1:$free/health"
check "nothing listening: exit 1" test "$rc" -eq 1
probe --no-devices --url "notascheme://x"
check "unusable URL: exit 2" test "$rc" -eq 2
probe --no-devices
check "--no-devices without --url: exit 2" test "$rc" -eq 2

# Unhealthy beats could-not-check; --help exits 0.
probe --device 0 --device 9 --max-mem 10%
check "device 0 over the limit and device 9 unknown: 1" test "$rc" -eq 1
# an npu-smi paste without logic ids (no `npu-smi info -m`): chips are named by card and
# chip, never "device -1", and a --device id says why it cannot be found
paste="$HBM_SRC/tests/fixtures/npu-smi/04-Ascend910-1stgen-name910B-8card-npusmi24.1-noproctable.txt"
out=$("$HBMCTL" probe --snapshot "$paste" --max-mem 1% 2>&1)
check "no logic ids: the chip by card and chip ($out)" \
    grep -q "unhealthy: npu 0 chip 0 memory 1.33 GiB of 32.00 GiB" <<<"$out"
out=$("$HBMCTL" probe --snapshot "$paste" 2>&1)
check "no logic ids: never device -1 ($out)" test -n "${out##*device -1*}"
out=$("$HBMCTL" probe --snapshot "$paste" --device 0 2>&1)
check "no logic ids: --device says the source has none ($out)" \
    grep -q "this source gives no logic ids: npu-smi info -m lists them" <<<"$out"

"$HBMCTL" probe --help >/dev/null
check "--help exits 0" test $? -eq 0
finish
