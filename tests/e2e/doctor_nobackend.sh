#!/bin/bash
# No device source at all (a broken driver, a container without the vendor libraries):
# doctor, clean and snapshot still look at the host and say first that the device checks
# were skipped and why; status and an explicitly named backend still exit 2. The host tree
# (tests/fixtures/doctor/root-broken) has an EngineCore holding /dev/davinci_manager after
# its container was removed, exhausted hugepages on node 0, THP "always" and a server whose
# --port has no listener.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
export HBMCTL_DCMI_LIB="$tmp/no-such-libdcmi.so"
export HBMCTL_NVML_LIB="$tmp/no-such-libnvidia-ml.so.1"
export HBMCTL_NPU_SMI="$tmp/no-such-npu-smi"
root="$HBM_SRC/tests/fixtures/doctor/root-broken"
width() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }

"$HBMCTL" doctor --root "$root" --json >"$tmp/d.json"
check "doctor exits 1: the host has problems" [ $? -eq 1 ]
check "backend is none" [ "$(jq -r .backend "$tmp/d.json")" = none ]
check "backend_why names every source tried" \
    bash -c "jq -r .backend_why '$tmp/d.json' | grep 'dcmi: ' | grep 'nvml: ' | grep -q 'npu-smi: '"
has() { [ "$(jq "[.findings[] | select($1)] | length" "$tmp/d.json")" -ge 1 ]; }
count() { jq "[.findings[] | select($1)] | length" "$tmp/d.json"; }
check "exhausted host hugepages are found" has '.id == "hugepages-exhausted" and .evidence.node == 0'
check "THP always is a note" has '.id == "thp-always"'
check "the server's port is checked" has '.id == "port-not-listening" and .evidence.port == 8000'
check "the device-file holder left by a removed container is an orphan" \
    has '.id == "orphan-holder" and .device == null and .evidence.process.pid == 4242 and .evidence.process.memory_bytes == null and (.evidence.process.device_files | index("/dev/davinci_manager")) and .action.kind == "kill"'
check "its reaped-never zombie sibling is not (it holds no files)" \
    [ "$(count '.evidence.process.pid == 4243')" -eq 0 ]
check "no device is called missing without device facts" \
    [ "$(count '.id == "visible-device-missing" or .id == "visible-device-busy"')" -eq 0 ]

"$HBMCTL" doctor --root "$root" >"$tmp/d.txt"
check "human output: exit 1" [ $? -eq 1 ]
check "human output says first that device checks were skipped" \
    bash -c "head -1 '$tmp/d.txt' | grep -q '^device checks skipped, host checks only: no accelerator backend found'"
check "then the verdict" grep -q '^[0-9]* problems: 1 critical (orphan-holder)' "$tmp/d.txt"
check "human output fits 100 columns (got $(width "$tmp/d.txt"))" fits_width "$tmp/d.txt"

# A host with nothing wrong: exit 0, still with the note.
scratch_root="$tmp/root"
make_root "$scratch_root" yes
"$HBMCTL" doctor --root "$scratch_root" >"$tmp/ok.txt"
check "a clean host without a device source exits 0" [ $? -eq 0 ]
check "and says the device checks were skipped" grep -q '^device checks skipped' "$tmp/ok.txt"
check "and no problems" grep -q '^no problems' "$tmp/ok.txt"

"$HBMCTL" clean --root "$root" --json >"$tmp/c.json"
check "clean (dry run) exits 1: the orphan can be ended" [ $? -eq 1 ]
check "clean says backend none" [ "$(jq -r .backend "$tmp/c.json")" = none ]
check "clean plans the kill of the device-file holder" \
    [ "$(jq '[.steps[] | select(.action == "kill" and (.text | test("pid 4242 ")))] | length' "$tmp/c.json")" -eq 1 ]
"$HBMCTL" clean --root "$root" >"$tmp/c.txt"
check "clean's human output says first that device checks were skipped" \
    bash -c "head -1 '$tmp/c.txt' | grep -q '^device checks skipped'"

"$HBMCTL" snapshot --root "$root" -o "$tmp/s.json" 2>"$tmp/s.err"
check "snapshot exits 0" [ $? -eq 0 ]
check "snapshot: backend none, no devices, host facts" \
    [ "$(jq -c '[.backend, (.devices | length), (.host != null), (.backend_why | test("no accelerator backend"))]' "$tmp/s.json")" = '["none",0,true,true]' ]
check "snapshot says on stderr that device checks were skipped" \
    grep -q '^hbmctl: device checks skipped' "$tmp/s.err"
"$HBMCTL" doctor --snapshot "$tmp/s.json" --json >"$tmp/r.json"
check "the replay gives the same findings" \
    [ "$(jq -c '[.backend, [.findings[].id]]' "$tmp/r.json")" = "$(jq -c '[.backend, [.findings[].id]]' "$tmp/d.json")" ]
"$HBMCTL" doctor --snapshot "$tmp/s.json" | head -1 >"$tmp/r.txt"
check "and the same note first" grep -q '^device checks skipped' "$tmp/r.txt"

"$HBMCTL" status --root "$root" >/dev/null 2>"$tmp/st.err"
check "status still exits 2 without a device source" [ $? -eq 2 ]
check "and says why" grep -q 'no accelerator backend found' "$tmp/st.err"
"$HBMCTL" doctor --backend nvml --root "$root" >/dev/null 2>"$tmp/nv.err"
check "an explicit --backend nvml that is unavailable is still an error (exit 2)" [ $? -eq 2 ]
check "naming the backend and why" grep -q 'nvml: HBMCTL_NVML_LIB=.*cannot open' "$tmp/nv.err"
"$HBMCTL" snapshot --backend dcmi --root "$root" >/dev/null 2>&1
check "an explicit --backend dcmi for snapshot too" [ $? -eq 2 ]
# Live: a real VLLM::EngineCor-titled process whose parent exited, holding a "device file"
# (/dev/null stands in through HBMCTL_DEVICE_PATTERNS), seen through a /proc that shows only
# it. clean --apply ends it without any device source.
orphan=$("$HBM_BUILD/doc_proc" orphan)
pids+=("$orphan")
if [ "$(sed 's/.*) //' "/proc/$orphan/stat" | cut -d' ' -f2)" != 1 ]; then
    echo "note: live part not run: orphans are adopted by a subreaper here, not by init"
else
    make_root "$tmp/live" yes
    export HBMCTL_DEVICE_PATTERNS=/dev/null
    "$HBMCTL" clean --apply --yes --root "$tmp/live" --grace 5s --settle 0 \
        --audit-log "$tmp/audit.jsonl" >"$tmp/live.txt"
    check "clean --apply without a device source exits 0" [ $? -eq 0 ]
    st=$(sed "s/.*) //" "/proc/$orphan/stat" 2>/dev/null | cut -d" " -f1)
    # Gone, or a zombie where pid 1 here does not reap: either way it holds nothing.
    check "it ended the orphan (state now: ${st:-gone})" [ "${st:-Z}" = Z ]
    check "and audited the kill" grep -q "\"pid\":$orphan," "$tmp/audit.jsonl"
    check "and says the device memory is not known" \
        grep -q '^device memory after clean: not known (no device source)' "$tmp/live.txt"
    unset HBMCTL_DEVICE_PATTERNS
fi
finish
