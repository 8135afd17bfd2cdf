#!/bin/bash
# The exporter with --web-config (the exporter toolkit's format): TLS from a certificate this
# test makes with openssl, basic auth against a bcrypt hash (libcrypt); curl scrapes over
# TLS, a wrong password gets 401, a real Prometheus scrapes with basic_auth and tls_config;
# a bad config is exit 2 naming the key.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
. "$HBM_SRC/tests/e2e/lib/prometheus.bash"
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
GIB=1073741824
one_gpu 7
mkdir "$tmp/web"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$tmp/web/server.key" -out "$tmp/web/server.crt" -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>"$tmp/openssl.err"
check "openssl made a certificate" test -s "$tmp/web/server.crt"
# bcrypt through the same libcrypt, by Python's binding to it (gone from Python 3.13).
hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("s3cret pass", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 8)))' 2>/dev/null)
[ -n "$hash" ] || { echo "SKIP: no bcrypt generator (python3 crypt)"; exit 77; }
cat >"$tmp/web/web.yml" <<EOF
# as node-exporter's --web.config.file takes it; paths relative to this file
tls_server_config:
  cert_file: server.crt
  key_file: 'server.key'
basic_auth_users:
  prometheus: "$hash"   # bcrypt
EOF

bad() { # NAME WANT_TEXT: the config in $tmp/bad.yml must give exit 2 and name what is wrong
    "$HBMCTL" exporter --once --web-config "$tmp/bad.yml" >/dev/null 2>"$tmp/bad.err"
    local rc=$?
    check "bad config ($1): exit 2 ($rc)" test "$rc" -eq 2
    check "bad config ($1): says '$2' ($(cat "$tmp/bad.err"))" grep -qF -- "$2" "$tmp/bad.err"
}
printf 'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_ca_file: ca.crt\n' >"$tmp/bad.yml"
bad "unsupported key" "bad.yml:4: tls_server_config.client_ca_file: not supported"
printf 'http_server_config:\n  http2: true\n' >"$tmp/bad.yml"
bad "unknown section" "bad.yml:1: http_server_config: not supported"
printf 'basic_auth_users:\n  alice: plaintext\n' >"$tmp/bad.yml"
bad "not a hash" "bad.yml:2: basic_auth_users.alice: not a bcrypt hash"
printf 'tls_server_config:\n  cert_file: server.crt\n' >"$tmp/bad.yml"
bad "key file missing" "tls_server_config.key_file: missing"
printf 'tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n' >"$tmp/bad.yml"
bad "certificate not there" "tls_server_config.cert_file"
printf 'tls_server_config:\n\tcert_file: x\n' >"$tmp/bad.yml"
bad "tab indentation" "bad.yml:2: tabs are not allowed"

start_exporter tls --web-config "$tmp/web/web.yml"
# shellcheck disable=SC2154
url="https://127.0.0.1:$port_tls"
code() { curl -s -o "$tmp/body" -w '%{http_code}' --cacert "$tmp/web/server.crt" "$@"; }
check "TLS scrape with the password: 200" test "$(code -u 'prometheus:s3cret pass' "$url/metrics")" = 200
check "... and the metrics" grep -q "^hbmctl_device_memory_used_bytes{device=\"0\",.*} $((7 * GIB))$" "$tmp/body"
check "wrong password: 401" test "$(code -u 'prometheus:wrong' "$url/metrics")" = 401
check "unknown user: 401" test "$(code -u 'root:s3cret pass' "$url/metrics")" = 401
check "no credentials: 401" test "$(code "$url/metrics")" = 401
check "401 asks for basic auth" grep -qi '^www-authenticate: basic realm="hbmctl"' \
    <(curl -sI --cacert "$tmp/web/server.crt" "$url/metrics")
check "plain HTTP to the TLS port gets no metrics" \
    test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port_tls/metrics")" != 200
check "the certificate is verified (no --cacert: refused)" \
    test "$(curl -s -o /dev/null -w '%{http_code}' -u 'prometheus:s3cret pass' "$url/metrics")" = 000

cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: secured
    scheme: https
    basic_auth: {username: prometheus, password: "s3cret pass"}
    tls_config: {ca_file: "$tmp/web/server.crt"}
    static_configs: [{targets: ["127.0.0.1:$port_tls"]}]
  - job_name: wrongpass
    scheme: https
    basic_auth: {username: prometheus, password: "nope"}
    tls_config: {ca_file: "$tmp/web/server.crt"}
    static_configs: [{targets: ["127.0.0.1:$port_tls"]}]
EOF
prom_start "$tmp/prometheus.yml"
check "Prometheus scrapes with basic_auth and tls_config (up == 1)" prom_wait 'up{job="secured"}' 1
check "... and reads the device memory" \
    prom_wait 'hbmctl_device_memory_used_bytes{job="secured",device="0"}' $((7 * GIB))
check "with a wrong password it cannot (up == 0)" prom_wait 'up{job="wrongpass"}' 0
finish
