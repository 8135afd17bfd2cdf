#!/bin/bash
# hbmctl status and snapshot on the demo scenes and on broken input: verdicts, JSON facts,
# exit 2 with file:line on malformed text.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

scene="$HBM_SRC/examples/8x910B4-half-busy.npu-smi.txt"
out=$("$HBMCTL" status --snapshot "$scene")
check "status on the half-busy 8x910B4 exits 0" test $? -eq 0
for i in 0 1 2 3; do
    check "NPU $i is FREE" grep -qE "^NPU $i chip 0 FREE: no process; 3\.37 GiB used" <<<"$out"
done
for i in 4 5 6 7; do
    check "NPU $i is BUSY with VLLMWorker_TP" grep -qE "^NPU $i chip 0 BUSY: 1 process listed: VLLMWorker_TP holds 55\.34 GiB" <<<"$out"
done

json=$("$HBMCTL" status --json --snapshot "$scene")
check "status --json parses" jq -e . <<<"$json" >/dev/null
check "schema" test "$(jq -r .schema <<<"$json")" = "hbmctl.snapshot/1"
check "8 devices" test "$(jq '.devices|length' <<<"$json")" = 8
check "verdicts" test "$(jq -c '[.devices[].verdict]' <<<"$json")" = \
    '["FREE","FREE","FREE","FREE","BUSY","BUSY","BUSY","BUSY"]'
check "memory used of NPU 4" test "$(jq '.devices[4].memory_used_bytes' <<<"$json")" = $((60037 * 1048576))
check "memory total" test "$(jq '.devices[0].memory_total_bytes' <<<"$json")" = $((65536 * 1048576))
check "pids" test "$(jq -c '[.devices[].processes[].pid]' <<<"$json")" = '[2187041,2187042,2187043,2187044]'
check "unknown logic id is null" test "$(jq '.devices[0].logic_id' <<<"$json")" = null
check "every device has a reason" test "$(jq '[.devices[]|select(.reason=="")]|length' <<<"$json")" = 0

# Replay: the JSON read back as a snapshot gives the same document.
echo "$json" >"$tmp/s.json"
again=$("$HBMCTL" status --json --snapshot "$tmp/s.json")
check "snapshot replay gives the same devices" test \
    "$(jq -S .devices <<<"$json")" = "$(jq -S .devices <<<"$again")"
check "replay renders the same table" test \
    "$("$HBMCTL" status --snapshot "$scene" | tail -n +2)" = \
    "$("$HBMCTL" status --snapshot "$tmp/s.json" | tail -n +2)"
check "stdin is accepted" test "$("$HBMCTL" status --json --snapshot - <"$scene" | jq '.devices|length')" = 8

# After docker rm -f, in the new container: 26 GB held, no process, npu-smi's Hugepages-Usage at 100 %.
after_rm="$HBM_SRC/examples/310P3-after-docker-rm.npu-smi.txt"
out=$("$HBMCTL" status --snapshot "$after_rm")
json=$("$HBMCTL" status --json --snapshot "$after_rm")
check "after docker rm chip 0 UNACCOUNTED" test "$(jq -r '.devices[0].verdict' <<<"$json")" = UNACCOUNTED
check "after docker rm reason says what a paste cannot tell" grep -q \
    "26.66 GiB used, .* with no process listed; from npu-smi text alone hbmctl cannot tell a container's partial view" \
    <<<"$(jq -r '.devices[0].reason' <<<"$json")"
check "after docker rm chip 1 FREE" grep -qE "^NPU 6 chip 1 FREE" <<<"$out"
check "after docker rm hugepages column explained as device memory" grep -q "not host hugepages" <<<"$out"

# Malformed input: exit 2 and the file:line in the message.
expect_fail() { # name file pattern
    local err rc
    err=$("$HBMCTL" status --snapshot "$2" 2>&1 >/dev/null); rc=$?
    check "$1 exits 2" test "$rc" -eq 2
    check "$1 names file:line ($err)" grep -qE "$3" <<<"$err"
}
: >"$tmp/empty.txt"
expect_fail "empty file" "$tmp/empty.txt" "empty.txt:1: empty input"
# A paste cut before any device is complete is refused; one cut inside a later row is read.
head -c 700 "$scene" >"$tmp/cut.txt"
expect_fail "paste cut in the first device" "$tmp/cut.txt" "cut.txt:8: the paste ends before"
{ head -n 13 "$scene"; printf '| 0                         | 0000:81:00.0  | 0'; } >"$tmp/cut2.txt"
out=$("$HBMCTL" status --snapshot "$tmp/cut2.txt"); rc=$?
check "cut paste: exit 0 by verdict" test "$rc" -eq 0
check "cut paste: says partial with the line" \
    grep -q "^partial input: .*cut2.txt:14: the paste ends inside the rows of NPU 2" <<<"$out"
check "cut paste: two devices with their values" test \
    "$(grep -cE '^NPU [01] chip 0 UNACCOUNTED|^NPU [01] chip 0 FREE' <<<"$out")" = 2
json=$("$HBMCTL" snapshot --snapshot "$tmp/cut2.txt")
check "cut snapshot: partial true with why" test \
    "$(jq -c '[.partial, (.partial_why|test("cut2.txt:14: .*NPU 2")), [.devices[].index],
      .devices[1].memory_used_bytes]' <<<"$json")" = "[true,true,[0,1],$((3447 * 1048576))]"
dj=$("$HBMCTL" doctor --json --snapshot "$tmp/cut2.txt")
check "cut doctor --json: partial" test "$(jq -c '[.partial, (.partial_why|test("NPU 2"))]' \
    <<<"$dj")" = '[true,true]'
check "cut doctor text: partial" bash -c '"$0" doctor --snapshot "$1" | grep -q "^partial input: .*:14:"' \
    "$HBMCTL" "$tmp/cut2.txt"
pj=$("$HBMCTL" plan "$HBM_SRC/tests/fixtures/models/qwen3-14b" --device auto --snapshot \
    "$tmp/cut2.txt" --json)
check "cut plan --device auto: a note says partial" \
    test "$(jq '[.notes[]|select(test("^partial input: .*NPU 2"))]|length' <<<"$pj")" = 1
sed '8s/| 0           0    \/ 0/| 0 | 0    \/ 0/' "$scene" >"$tmp/cols.txt"
expect_fail "wrong column count" "$tmp/cols.txt" "cols.txt:8: row has 4 cells"
# Binary junk, the same bytes every run: read as a paste, and (with a leading '{') as JSON,
# whose reader names the column too.
python3 -c 'import random,sys; r=random.Random(7); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(65536)))' >"$tmp/junk.bin"
expect_fail "binary junk" "$tmp/junk.bin" "junk.bin:[0-9]+: "
{ printf '{'; cat "$tmp/junk.bin"; } >"$tmp/junk2.bin"
expect_fail "binary junk after a brace" "$tmp/junk2.bin" "junk2.bin:[0-9]+:[0-9]+: "
yes 'garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage' | head -c 100000000 >"$tmp/big.txt"
expect_fail "100 MB of garbage" "$tmp/big.txt" "big.txt:201: no npu-smi table"
expect_fail "vendor template" "$HBM_SRC/tests/fixtures/npu-smi/vendordoc-950-npu-smi-info-template-placeholders.txt" \
    "placeholders.txt:7: .*placeholder"
echo '{"schema":"hbmctl.snapshot/1","devices":[{"vendor":"ascend","index":"x"}]}' >"$tmp/bad.json"
expect_fail "bad snapshot field" "$tmp/bad.json" "bad.json: devices\[0\]\.index: must be an integer"
echo '{"schema":' >"$tmp/cutjson.json"
expect_fail "cut snapshot" "$tmp/cutjson.json" "cutjson.json:[0-9]+:[0-9]+: "

finish
