#!/bin/bash
# --health-url: hbmctl waits for readiness (a real HTTP server on loopback that answers
# only after a start-up delay), then checks periodically; when the server keeps failing
# it is drained and restarted under --restart on-failure. (Builds without libcurl use their
# own plain-HTTP client: the same test covers both.)
. "$(dirname "$0")/common.bash"
run_scratch
command -v python3 >/dev/null || { echo "SKIP: python3 is needed for the HTTP server"; exit 0; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$T/server.py" <<'PY'
import http.server, os, sys, time
port, sick, starts = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(starts, "a") as f:
    f.write("%d\n" % os.getpid())
time.sleep(1.0)  # start-up: not ready yet
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 500 if os.path.exists(sick) else 200
        self.send_response(code)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer.allow_reuse_address = True
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY

LOG=$T/log
"$HBMCTL" run --grace 3s --health-url "http://127.0.0.1:$port/health" --health-interval 300ms \
    --health-timeout 1s --health-retries 2 --restart on-failure --max-restarts 1 --backoff 100ms \
    -- python3 "$T/server.py" "$port" "$T/sick" "$T/starts" 2>"$LOG" &
h=$!
BGPIDS+=("$h")
for ((i = 0; i < 300; i++)); do grep -q 'ready after' "$LOG" && break; sleep 0.1; done
grep -q 'ready after' "$LOG" || fail "readiness never reported"
echo "ok: $(grep -o 'ready after.*' "$LOG" | head -n1)"
touch "$T/sick"
for ((i = 0; i < 300; i++)); do [ "$(wc -l <"$T/starts")" -ge 2 ] && break; sleep 0.1; done
[ "$(wc -l <"$T/starts")" = 2 ] || fail "the unhealthy server was not restarted"
grep -q 'unhealthy: 2 checks failed' "$LOG" || fail "no unhealthy line"
rm -f "$T/sick"
for ((i = 0; i < 300; i++)); do [ "$(grep -c 'ready after' "$LOG")" -ge 2 ] && break; sleep 0.1; done
[ "$(grep -c 'ready after' "$LOG")" = 2 ] || fail "the restarted server was not seen ready"
kill -TERM "$h"
wait "$h"
rc=$?
[ "$rc" = 143 ] || fail "exit $rc, expected 143"
echo "ok: unhealthy after 2 failed checks, drained, restarted, ready again; exit $rc"
