#!/bin/bash
# The shared libraries a command maps (issue 28): `run`, a container's PID 1, maps neither
# libmicrohttpd nor the TLS stack it pulls in (gnutls, nettle, p11-kit...); the exporter
# loads libmicrohttpd when it starts (e2e_exporter_* serve through it) and, when it cannot,
# says which library and exits instead of crashing.
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
bad=$(echo "$libs" | grep -E 'libmicrohttpd|libgnutls|libnettle|libhogweed|libp11-kit|libtasn1' || true)
[ -z "$bad" ] || fail "run maps libraries it never uses: $bad"
echo "run maps $(echo "$libs" | wc -l) shared libraries: $(echo "$libs" | xargs -n1 basename | tr '\n' ' ')"
kill -TERM $hp
wait $hp 2>/dev/null

LOG=$T/exporter.err
rc=0
HBMCTL_MHD_LIB=$T/none.so timeout 20 "$HBMCTL" exporter --listen 127.0.0.1:0 2>"$LOG" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "exporter without libmicrohttpd: exit $rc"
grep -q "cannot load $T/none.so" "$LOG" || fail "exporter without libmicrohttpd did not say why"
echo ok
