# A real Prometheus on localhost for the e2e tests (source after common.bash and scratch):
# prom_start CONFIG starts one on a free port with that scrape config; prom_query and
# prom_wait ask its HTTP API.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

prom_start() { # CONFIG_FILE: sets pport and prom
    pport=$(free_port)
    prometheus --config.file="$1" --storage.tsdb.path="$tmp/tsdb" \
        --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
    prom=$!
    pids+=("$prom")
}

prom_query() { # PROMQL -> the first sample's value, or empty
    curl -s --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
        jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}

prom_wait() { # PROMQL WANT: up to 90 s
    local v=""
    for _ in $(seq 180); do
        v=$(prom_query "$1")
        [ "$v" = "$2" ] && return 0
        sleep 0.5
    done
    echo "  $1 = '$v', want $2" >&2
    return 1
}

# one_gpu USED_GIB: the fake NVML driver shows one idle H100 with that much memory used
one_gpu() {
    fake_nvml
    cat >"$tmp/scenario.json" <<EOF
{"driver_version": "550.54.15", "devices": [
 {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "bus_id": "00000000:18:00.0",
  "memory_total": $((80 << 30)), "memory_used": $(($1 << 30)), "compute": []}]}
EOF
}

# start_exporter NAME ARGS...: an exporter on a free port in the background; sets port_NAME
# and pid_NAME.
start_exporter() {
    local name=$1 p
    shift
    "$HBMCTL" exporter --listen 127.0.0.1:0 "$@" 2>"$tmp/exporter-$name.err" &
    eval "pid_$name=\$!"
    pids+=($!)
    for _ in $(seq 100); do grep -q "port [0-9]" "$tmp/exporter-$name.err" && break; sleep 0.1; done
    p=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/exporter-$name.err")
    eval "port_$name=\$p"
}
