#!/bin/bash
# doctor on a host tree (--root tests/fixtures/doctor/root-broken) behind the fake DCMI: an
# orphan whose container's cgroup is gone, a zombie and its parent, per-node hugepages, THP
# mode, a server whose visible devices are missing/busy/short of its TP size and whose port
# has no listener. The tree's pids are not real, so only reading commands run here.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
fake_dcmi
root="$HBM_SRC/tests/fixtures/doctor/root-broken"
python3 - "$tmp/scenario.json" <<'PY'
import json, sys
def chip(i, used_mb, procs):
    return {"card_id": i, "chips": [{"logic_id": i, "phy_id": i, "name": "910B3", "health": "OK",
            "hbm": {"total_mb": 65536, "used_mb": used_mb}, "processes": procs}]}
json.dump({"cards": [chip(0, 30000, [{"pid": 4242, "memory": 26 * 2**30}]),
                     chip(1, 4500, [{"pid": 4243, "memory": 2**30}]),
                     chip(2, 3400, []), chip(3, 3400, [])]}, open(sys.argv[1], "w"))
PY
"$HBMCTL" doctor --backend dcmi --root "$root" --json >"$tmp/d.json"
check "doctor exits 1" [ $? -eq 1 ]
has() { [ "$(jq "[.findings[] | select($1)] | length" "$tmp/d.json")" -ge 1 ]; }
check "the orphan in a removed container is found" \
    has '.id == "orphan-holder" and .evidence.process.pid == 4242 and .evidence.process.cgroup_gone'
check "the zombie names its parent shell" \
    has '.id == "zombie-holder" and (.remedy | test("pid 4250 \\(bash, .*\\) has not reaped it")) and .evidence.parent.pid == 4250'
check "node 0's exhausted hugepages are found" \
    has '.id == "hugepages-exhausted" and .evidence.node == 0'
check "node 1 and the system pool are not" \
    [ "$(jq '[.findings[] | select(.id == "hugepages-exhausted")] | length' "$tmp/d.json")" -eq 1 ]
check "THP always is a note" has '.id == "thp-always" and .severity == "info"'
check "visible device 5 does not exist" has '.id == "visible-device-missing" and .device == 5'
check "visible device 0 is busy with the orphan" \
    has '.id == "visible-device-busy" and .device == 0 and .evidence.other_pid == 4242'
check "3 visible devices for TP 4" \
    has '.id == "visible-devices-tp-mismatch" and .evidence.tensor_parallel_size == 4 and .evidence.visible_count == 3'
check "port 8000 has no listener" has '.id == "port-not-listening" and .evidence.port == 8000'
check "the orphan's clean action is a kill" \
    has '.id == "orphan-holder" and .action.kind == "kill" and .action.pid == 4242'
"$HBMCTL" doctor --backend dcmi --root "$root" >"$tmp/d.txt"
check "human output: verdict line first" bash -c "head -1 '$tmp/d.txt' | grep -q '^[0-9]* problems: [0-9]* critical'"
check "human output fits 100 columns" fits_width "$tmp/d.txt"
"$HBMCTL" doctor --snapshot /nonexistent.json 2>/dev/null
check "doctor exits 2 when it cannot look" [ $? -eq 2 ]
finish
