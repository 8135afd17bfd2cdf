#!/bin/bash
# pick through the npu-smi backend (a stand-in `npu-smi` printing real captures): logic ids
# come from `npu-smi info -m`, topology from `npu-smi info -t topo`; without `-m` a 910B host
# has no logic ids and pick says so instead of guessing. Each command runs npu-smi only for
# what it needs: `info` always, `-m` when the table lacks logic ids, `-t topo` for pick and
# snapshots.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fx="$HBM_SRC/tests/fixtures"
# Two HCCS domains (NPU0-3, NPU4-7) joined through SYS, in npu-smi's layout.
python3 - "$tmp/topo.txt" <<'PY'
import sys
n = 8
rows = ["".ljust(11) + "".join(f"NPU{j}".ljust(11) for j in range(n)) + "CPU Affinity"]
for i in range(n):
    cells = ["X" if i == j else ("HCCS" if i // 4 == j // 4 else "SYS") for j in range(n)]
    rows.append(f"NPU{i}".ljust(11) + "".join(c.ljust(11) for c in cells) + "0-23")
open(sys.argv[1], "w").write("\n".join(rows) + "\n\nLegend:\n  X    = Self\n")
PY
cat >"$tmp/npu-smi" <<EOS
#!/bin/bash
echo "\$*" >>"$tmp/calls"
case "\$*" in
"info") cat "$fx/npu-smi/\${TABLE:-01-910B3-8card-npusmi25.2-1proc.txt}" ;;
"info -m") [ -n "\${NO_MAP:-}" ] && { echo "Error: not supported" >&2; exit 1; }
           cat "$fx/doctor/npu-smi/map-constructed-910B3-8card.txt" ;;
"info -t topo") cat "$tmp/topo.txt" ;;
*) echo "unknown command" >&2; exit 1 ;;
esac
EOS
chmod +x "$tmp/npu-smi"
export HBMCTL_NPU_SMI="$tmp/npu-smi"

out=$("$HBMCTL" pick 3 --backend npu-smi --json)
check "pick 3 exits 0" [ $? -eq 0 ]
check "pick 3 stays in the first HCCS domain" [ "$(echo "$out" | jq -c .devices)" = "[0,1,2]" ]
check "the placement names the domain" [ "$(echo "$out" | jq -r .placement)" = "one HCCS domain" ]
out=$("$HBMCTL" pick 4 --backend npu-smi --json)
check "pick 4 takes the first domain" [ "$(echo "$out" | jq -c .devices)" = "[0,1,2,3]" ]
out=$("$HBMCTL" pick 6 --backend npu-smi --json)
check "pick 6 crosses SYS and says so" \
    bash -c "echo '$out' | jq -r .placement | grep -q 'slowest link SYS'"
check "NPU 4, which holds a process, is refused with its verdict" \
    bash -c "echo '$out' | jq -r '.refused[] | select(.device == 4) | .why' | grep -Eq '^(BUSY|ORPHANED|UNACCOUNTED)'"
check "and never chosen" [ "$(echo "$out" | jq '[.devices[] | select(. == 4)] | length')" -eq 0 ]
NO_MAP=1 "$HBMCTL" pick 1 --backend npu-smi >/dev/null 2>"$tmp/nomap.err"
check "without npu-smi info -m, pick 1 fails (exit 1)" [ $? -eq 1 ]
check "and says the logic ids are unknown" grep -q "no logic id known" "$tmp/nomap.err"
NO_MAP=1 "$HBMCTL" pick 2 --backend npu-smi --json >"$tmp/nomap.json" 2>/dev/null
check "without logic ids, NPU 4 (which holds a process) is refused for its verdict first" \
    bash -c "jq -r '.refused[].why' '$tmp/nomap.json' | grep -Eq '^npu 4 chip 0: (BUSY|ORPHANED|UNACCOUNTED)'"
check "the missing logic id is given only for the otherwise usable chips" \
    [ "$(jq '[.refused[] | select(.why | test("no logic id known"))] | length' "$tmp/nomap.json")" -eq 7 ]
"$HBMCTL" pick 1 --backend npu-smi >"$tmp/one.out" 2>"$tmp/one.err"
check "pick 1 prints only the variable (stderr: '$(cat "$tmp/one.err")')" \
    bash -c "grep -qx 'ASCEND_RT_VISIBLE_DEVICES=0' '$tmp/one.out' && [ ! -s '$tmp/one.err' ]"
"$HBMCTL" pick 3 --backend npu-smi 2>"$tmp/three.err" >/dev/null
check "pick 3 names the placement on stderr" grep -qx 'hbmctl: one HCCS domain' "$tmp/three.err"

runs() { # COMMAND...: the npu-smi invocations it made, joined by commas
    : >"$tmp/calls"
    "$@" >/dev/null 2>&1
    paste -sd, "$tmp/calls"
}
check "pick runs info, -m and -t topo once each" \
    [ "$(runs "$HBMCTL" pick 1 --backend npu-smi)" = "info,info -m,info -t topo" ]
check "status needs no topology: info and -m" \
    [ "$(runs "$HBMCTL" status --backend npu-smi)" = "info,info -m" ]
check "probe: info and -m (it names devices by logic id)" \
    [ "$(runs "$HBMCTL" probe --backend npu-smi)" = "info,info -m" ]
check "status --json, a snapshot, records the topology" \
    [ "$(runs "$HBMCTL" status --backend npu-smi --json)" = "info,info -m,info -t topo" ]
"$HBMCTL" snapshot --backend npu-smi -o "$tmp/snap.json" 2>/dev/null
check "and the snapshot holds it" [ "$(jq '.topology | length' "$tmp/snap.json")" -eq 8 ]
# A layout whose table carries the logic ids (Device column; a 300I Duo card, NPU id 1792,
# two chips): no -m at all.
export TABLE=14-310P3-300IDuo-1card2chip-npusmi24.1rc2-npuid1792-noproc.txt
check "status on a table with logic ids runs npu-smi once" \
    [ "$(runs "$HBMCTL" status --backend npu-smi)" = "info" ]
check "and probe too" [ "$(runs "$HBMCTL" probe --backend npu-smi)" = "info" ]
out=$("$HBMCTL" status --backend npu-smi --json 2>/dev/null)
check "the logic ids still come from the table" \
    [ "$(echo "$out" | jq -c '[.devices[] | .logic_id]')" = "[0,1]" ]
finish
