# Shared by the progress tests: a fake inference server (tests/helpers/fake_engine.py) on a
# free loopback port, driven through its control file. Needs scratch (common.bash) first.
command -v python3 >/dev/null || { echo "SKIP: python3 is needed for the HTTP server"; exit 77; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# control JSON: what the server serves from the next request on (written atomically)
control() {
    printf '%s\n' "$1" >"$tmp/control.tmp" && mv "$tmp/control.tmp" "$tmp/control.json"
}

# start_engine [NAME]: sets port and engine_pid; waits until /health answers. With NAME the
# command line ends in "NAME serve m1 --port N", as a server started that way reads.
start_engine() {
    port=$(free_port)
    local extra=()
    [ $# -gt 0 ] && extra=("$1" serve m1 --port "$port")
    python3 "$HBM_SRC/tests/helpers/fake_engine.py" "$port" "$tmp/control.json" \
        "$tmp/engine.ready" "${extra[@]}" &
    engine_pid=$!
    pids+=("$engine_pid")
    local i
    for ((i = 0; i < 100; i++)); do
        python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" \
            2>/dev/null && return 0
        sleep 0.1
    done
    echo "FAIL: the fake engine never answered" >&2
    exit 1
}
