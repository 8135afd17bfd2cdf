#!/bin/bash
# hbmctl hook poststop on what a runtime may hand it (docs/hook.md): every error of its own is
# logged and exits 0, so a container's stop never fails on it; stdin is waited for under the
# deadline and bounded; the bundle's config.json is read only when it is a regular file; a
# container without an accelerator device is left at once, without an audit line.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch KILL
export HBMCTL_AUDIT_LOG="$tmp/audit.jsonl"
mkdir "$tmp/plain" "$tmp/fifo" "$tmp/acc"
jq -n '{ociVersion: "1.0.2", linux: {devices: [{path: "/dev/fuse", type: "c", major: 10, minor: 229}]}}' \
    >"$tmp/plain/config.json"
jq -n '{linux: {devices: [{path: "/dev/davinci0", type: "c", major: 236, minor: 0}]}}' \
    >"$tmp/acc/config.json"
mkfifo "$tmp/fifo/config.json" "$tmp/stdin"
state() { printf '{"ociVersion":"1.0.2","id":"%s","status":"stopped","bundle":"%s"}' "$1" "$2"; }
hook() { timeout 20 "$HBMCTL" hook "$@" >"$tmp/out" 2>"$tmp/err"; }
# exit 0 and PATTERN on stderr (rc: the hook's exit status)
said() { [ "$rc" -eq 0 ] && grep -q "$1" "$tmp/err"; }
silent() { [ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ]; }
errors() { jq -r 'select(.event == "hook-error") | .detail' "$tmp/audit.jsonl" 2>/dev/null; }

state c1 "$tmp/plain" | hook poststop
rc=$?
check "a container without an accelerator device: exit 0, nothing said" silent
check "no audit line" [ ! -e "$tmp/audit.jsonl" ]

state c2 "$tmp/acc" | hook poststop
rc=$?
check "a container with a device and no leftover: exit 0, nothing said" silent
check "and no audit line" [ ! -e "$tmp/audit.jsonl" ]

echo 'not json' | hook poststop
rc=$?
check "garbage on stdin: exit 0, the error on stderr" said "no JSON object.*the container's stop goes on"
check "and in the audit log" grep -q "no JSON object" <<<"$(errors)"

state c3 "relative/dir" | hook poststop
rc=$?
check "a relative bundle is refused, exit 0" said 'no absolute "bundle"'
state ../x "$tmp/acc" | hook poststop
rc=$?
check "an id that is a path is refused, exit 0" said 'no usable "id"'

head -c 2000000 /dev/zero | tr '\0' ' ' | hook poststop
rc=$?
check "2 MB on stdin: refused past 1 MiB, exit 0" said "over 1048576 bytes"

state c4 "$tmp/fifo" | hook poststop
rc=$?
check "a FIFO as config.json is refused unread, exit 0" said "not a regular file"

sleep 30 >"$tmp/stdin" &
pids+=($!)
t0=$(now)
hook poststop --deadline 2s <"$tmp/stdin"
rc=$?
check "within the deadline (2 s, stdin waited for 1 s; took $(elapsed_since "$t0") s)" le "$(elapsed_since "$t0")" 3.5
check "a stdin that never ends: exit 0, saying so" said "no end of the state on stdin within 1.0s"

state c5 "$tmp/acc" | hook poststop --bogus
rc=$?
check "a bad option: exit 0 all the same, named" said "bogus"
hook </dev/null
rc=$?
check "no stage: exit 0, named" said "needs the stage: poststop"
finish
