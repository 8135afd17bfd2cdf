#!/bin/bash
# The shared libraries a command maps: `run`, a container's PID 1, maps only what it uses
# (libc, libm, jansson): not libmicrohttpd and the TLS stack it pulls in (gnutls, nettle,
# p11-kit...), libcurl, PCRE2, libcrypt, ncurses or libtinfo. Each of those is loaded by the
# command that needs it (e2e_exporter_*, e2e_explain_*, e2e_watch_tui use them), and where
# it cannot be, that command says which library and exits instead of crashing.
. "$(dirname "$0")/common.bash"
run_scratch

LOG=$T/run.log
"$HBMCTL" run --no-cgroup -- sleep 60 2>"$LOG" &
hp=$!
BGPIDS+=($hp)
for ((i = 0; i < 100; i++)); do grep -q started "$LOG" && break; sleep 0.1; done
grep -q started "$LOG" || fail "run did not start its child"
libs=$(awk '$6 ~ /\.so/ { print $6 }' "/proc/$hp/maps" | sort -u)
[ -n "$libs" ] || fail "no shared library in run's maps: the test cannot tell"
allowed='libc|libm|libjansson|ld-linux[^/]*'
# a sanitizer build maps its runtime (and the C++ runtime it is written in) into everything
if echo "$libs" | grep -qE '/lib(asan|ubsan)\.so'; then allowed="$allowed|libasan|libubsan|libgcc_s|libstdc\+\+"; fi
bad=$(echo "$libs" | grep -vE "/($allowed)\.so[^/]*\$" || true)
[ -z "$bad" ] || fail "run maps libraries it never uses: $bad"
echo "run maps $(echo "$libs" | wc -l) shared libraries: $(echo "$libs" | xargs -n1 basename | tr '\n' ' ')"
kill -TERM $hp
wait $hp 2>/dev/null

LOG=$T/exporter.err
rc=0
HBMCTL_MHD_LIB=$T/none.so timeout 20 "$HBMCTL" exporter --listen 127.0.0.1:0 2>"$LOG" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "exporter without libmicrohttpd: exit $rc"
grep -q "cannot load $T/none.so" "$LOG" || fail "exporter without libmicrohttpd did not say why"

# a web config with users needs libcrypt: said at start-up, not at the first scrape
printf 'basic_auth_users:\n  prometheus: $2b$10$%s\n' "$(printf 'x%.0s' $(seq 53))" >"$T/web.yml"
rc=0
HBMCTL_CRYPT_LIB=$T/none.so timeout 20 "$HBMCTL" exporter --listen 127.0.0.1:0 \
    --web-config "$T/web.yml" 2>"$LOG" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "exporter without libcrypt: exit $rc"
grep -q "cannot load $T/none.so (install libcrypt1)" "$LOG" ||
    fail "exporter without libcrypt did not say why: $(cat "$LOG")"

printf 'INFO 12-03 10:00:00 Starting vLLM API server\n' >"$T/short.log"
rc=0
HBMCTL_PCRE2_LIB=$T/none.so timeout 20 "$HBMCTL" explain --no-live "$T/short.log" \
    >/dev/null 2>"$LOG" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "explain without PCRE2: exit $rc"
grep -q "cannot load $T/none.so (install libpcre2-8-0)" "$LOG" ||
    fail "explain without PCRE2 did not say why: $(cat "$LOG")"
echo ok
