#!/bin/bash
# hbmctl explain from the command line: exit codes, human and JSON output, standard input,
# container-log decoration, the catalogue's search order and its validation errors,
# --list, and output that fits 100 columns without colour codes off a terminal.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LOGS="$HBM_SRC/tests/fixtures/logs"
unset HBMCTL_CATALOG
ex() { "$HBMCTL" explain --no-live "$@"; }

out=$(ex "$LOGS/vllm_after_docker_rm.log"); rc=$?
check "known failures: exit 1" test $rc -eq 1
check "four findings" grep -q "4 known failures in 4 lines" <<<"$out"
check "free-memory numbers" grep -q "16.58 GiB free of 43.24 GiB" <<<"$out"
check "what vLLM wanted" grep -q "36.75 GiB = 0.85 x 43.24 GiB" <<<"$out"
check "the OOM's request" grep -q "only 136.00 MiB" <<<"$out"
check "the reset line" grep -q "connection_reset" <<<"$out"
check "chunking first" grep -q "1. First chunk the retrieval documents" <<<"$out"
check "fits 100 columns" fits_width <(echo "$out")
check "no colour codes off a terminal" test -z "$(grep -P '\x1b' <<<"$out")"

out=$(ex "$LOGS/vllm_healthy.log"); rc=$?
check "healthy log: exit 0" test $rc -eq 0
check "healthy log: nothing found" grep -q "no known failure found in 22 lines" <<<"$out"

# Real healthy start-ups (tests/fixtures/logs/healthy/SOURCES): warnings about Ray placement,
# custom all-reduce, FlashInfer and TORCH_CUDA_ARCH_LIST are not failures.
for f in "$LOGS"/healthy/*.log; do
    n=$(basename "$f")
    ex --json "$f" >"$tmp/h.json"; rc=$?
    check "$n: exit 0" test $rc -eq 0
    check "$n: no finding" test "$(jq '.findings | length' "$tmp/h.json")" = 0
    check "$n: no terminal error" test "$(jq -c '[.structure.failed, .structure.error]' "$tmp/h.json")" = '[false,null]'
done

# A failure no catalogue entry knows is still a failure: where and how it ended.
out=$(ex "$LOGS/unknown.log"); rc=$?
check "unknown log: exit 1" test $rc -eq 1
check "unknown log: phase and terminal error" grep -q "^failed in phase start-up: ZeroDivisionError: division by zero (line 5)" <<<"$out"
check "unknown log: generic next steps" grep -q "^next steps for a failure in this phase:" <<<"$out"
check "unknown log: last error lines" grep -q "^  5: ZeroDivisionError: division by zero" <<<"$out"

out=$(ex "$tmp/missing.log" 2>&1); rc=$?
check "unreadable log: exit 2" test $rc -eq 2
check "unreadable log: names the file" grep -q "$tmp/missing.log" <<<"$out"
out=$(ex "$tmp" 2>&1); rc=$?
check "a directory: exit 2, refused unread, named" \
    test $rc -eq 2 -a -n "$(grep -F "$tmp: a directory, not a regular file" <<<"$out")"

out=$(ex - <"$LOGS/vllm_after_docker_rm.log"); rc=$?
check "standard input: exit 1" test $rc -eq 1
check "standard input named" grep -q "^(stdin): 4 known failures" <<<"$out"
out=$(cat "$LOGS/cri_ansi.log" | ex); rc=$?
check "stdin without '-' when piped" test $rc -eq 1

json=$(ex --json "$LOGS/cri_ansi.log")
check "json parses" jq -e . <<<"$json" >/dev/null
check "json: CRI and ANSI decoration removed" test \
    "$(jq -r '.findings[] | select(.id=="vllm_startup_free_memory") | .text[0:20]' <<<"$json")" = "(EngineCore pid=344)"
check "json: split CRI record joined" test \
    "$(jq -r '.findings[] | select(.id=="npu_oom") | .numbers.want' <<<"$json")" = $((136 * 1048576))
check "json: contract fields" test "$(jq -c '.findings[0] | [has("id"), has("line"), has("text"), has("cause"), has("remedies"), has("live")]' <<<"$json")" = '[true,true,true,true,true,true]'
check "json: lines" test "$(jq '[.findings[].line]' -c <<<"$json")" = '[2,3,5]'
check "json: live null with --no-live" test "$(jq '[.findings[].live] | unique' -c <<<"$json")" = '[null]'

# A summary error points at its root cause, or at the error lines before it.
out=$(ex "$LOGS/sig/vllm_startup_free_memory.log")
check "wrapper: root cause named" grep -q "root cause: see \[1\] vllm_startup_free_memory at line 1 above" <<<"$out"
printf 'loading\nKeyError: model_type qwen9\n(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n' >"$tmp/wrap.log"
out=$(ex "$tmp/wrap.log")
check "wrapper alone: the error line before it" grep -q "^      2: KeyError: model_type qwen9" <<<"$out"

# Repeats are grouped with first and last line.
for i in 1 2 3; do echo "INFO step $i"; echo "RuntimeError: NPU out of memory. Tried to allocate ${i}2.00 MiB"; done >"$tmp/rep.log"
json=$(ex --json "$tmp/rep.log")
check "repeats grouped" test "$(jq -c '.findings[0] | [.count, .line, .last_line, .numbers.want]' <<<"$json")" = "[3,2,6,$((12 * 1048576))]"
out=$(ex "$tmp/rep.log")
check "repeats in words" grep -q "line 2 (3 times, last at line 6)" <<<"$out"

# A line far longer than the limit is read up to the limit, and the next line is still read.
python3 -c 'import sys; sys.stdout.write("x" * 300000 + " NPU out of memory. Tried to allocate 1.00 GiB\nOSError: [Errno 98] Address already in use\n")' >"$tmp/long.log"
json=$(ex --json "$tmp/long.log")
check "long line cut" test "$(jq -c '[.cut_lines, .lines, [.findings[].id]]' <<<"$json")" = '[1,2,["address_in_use"]]'

# --list: every catalogue entry, as text and JSON.
list=$(ex --list); rc=$?
check "--list exits 0" test $rc -eq 0
for id in $(jq -r '.entries[].id' "$HBM_SRC/data/signatures.json"); do
    grep -q "^$id " <<<"$list" || { check "--list shows $id" false; }
done
check "--list fits 100 columns" fits_width <(echo "$list")
check "--list --json" test "$(ex --list --json | jq '.entries | length')" = "$(jq '.entries | length' "$HBM_SRC/data/signatures.json")"

# The catalogue's search order and errors.
out=$(ex --catalog "$tmp/nope.json" "$LOGS/vllm_after_docker_rm.log" 2>&1); rc=$?
check "--catalog missing: exit 2" test $rc -eq 2
check "--catalog missing: says so" grep -q -- "--catalog $tmp/nope.json" <<<"$out"
printf '{"schema": "hbmctl.signatures/1",\n "entries": [\n' >"$tmp/broken.json"
out=$(HBMCTL_CATALOG="$tmp/broken.json" ex "$LOGS/vllm_after_docker_rm.log" 2>&1); rc=$?
check "broken catalogue: exit 2" test $rc -eq 2
check "broken catalogue: file:line" grep -q "$tmp/broken.json:3:" <<<"$out"
jq '.entries[5].patterns = ["(unclosed"]' "$HBM_SRC/data/signatures.json" >"$tmp/badre.json"
bad_id=$(jq -r '.entries[5].id' "$HBM_SRC/data/signatures.json")
out=$(ex --catalog "$tmp/badre.json" "$LOGS/vllm_after_docker_rm.log" 2>&1); rc=$?
check "bad pattern: exit 2 naming the entry" test $rc -eq 2 -a -n "$(grep -F "entry '$bad_id'" <<<"$out")"
# An installed layout: <prefix>/bin/hbmctl finds <prefix>/share/hbmctl/signatures.json.
mkdir -p "$tmp/inst/bin" "$tmp/inst/share/hbmctl"
cp "$HBMCTL" "$tmp/inst/bin/hbmctl"
jq '.entries[5].title = "INSTALLED COPY"' "$HBM_SRC/data/signatures.json" >"$tmp/inst/share/hbmctl/signatures.json"
cp "$HBM_SRC/data/codes.json" "$tmp/inst/share/hbmctl/"
out=$("$tmp/inst/bin/hbmctl" explain --list)
check "installed catalogue found next to the binary" grep -q "INSTALLED COPY" <<<"$out"
out=$(HBMCTL_CATALOG="$HBM_SRC/data/signatures.json" "$tmp/inst/bin/hbmctl" explain --list)
check "HBMCTL_CATALOG before the installed one" test -z "$(grep "INSTALLED COPY" <<<"$out")"

# The code tables the catalogue names must be next to it: a missing one is an error.
mkdir -p "$tmp/nocodes"
cp "$HBM_SRC/data/signatures.json" "$tmp/nocodes/"
out=$(ex --catalog "$tmp/nocodes/signatures.json" "$LOGS/unknown.log" 2>&1); rc=$?
check "code tables missing: exit 2 naming them" test $rc -eq 2 -a -n "$(grep -F "$tmp/nocodes/codes.json" <<<"$out")"

out=$("$HBMCTL" explain --help); rc=$?
check "--help" test $rc -eq 0 -a -n "$(grep -F -- '--no-live' <<<"$out")"
"$HBMCTL" explain --bogus >/dev/null 2>&1
check "unknown option: exit 2" test $? -eq 2
# CUDA and NCCL entries: what other processes held, graph capture, the watchdog's numbers
SIG="$LOGS/sig"
out=$(ex "$SIG/cuda_oom.nonpytorch.variant.log")
check "OOM: other processes computed" grep -q "Other processes held about 12.07 GiB" <<<"$out"
check "OOM: would have fit without them" grep -q "Without the other processes' 12.07 GiB the 1.50 GiB would have fit" <<<"$out"
out=$(ex "$SIG/cuda_oom.nonpytorch.log")
check "OOM: small outside share, no blame" bash -c '! grep -q "Without the other processes" <<<"$1"' _ "$out"
check "OOM: this process's non-PyTorch part" grep -q "365.00 MiB CUDA context" <<<"$out"
out=$(ex "$SIG/cuda_error_oom.log")
check "CUDA error OOM: graph capture named" grep -q "The log shows CUDA graph capture (capture_end)" <<<"$out"
printf 'RuntimeError: CUDA error: out of memory\n' >"$tmp/plain_oom.log"
out=$(ex "$tmp/plain_oom.log")
check "CUDA error OOM without capture: found" grep -q "cuda_error_oom" <<<"$out"
check "CUDA error OOM without capture: no graph note" bash -c '! grep -q "graph capture (" <<<"$1"' _ "$out"
out=$(ex "$SIG/nccl_watchdog_timeout.variant.log")
check "watchdog: seconds and op" grep -q "Rank 3 waited 5402 s for ALLREDUCE number 4211 (timeout 1800 s)" <<<"$out"
out=$(ex "$SIG/nccl_watchdog_timeout.log")
check "watchdog: no hang note within 2x" bash -c '! grep -q "times the timeout" <<<"$1"' _ "$out"
# the shared-memory warning is the root cause of NCCL's summary error that follows it
cat "$SIG/nccl_shm_failed.log" "$SIG/nccl_system_error.log" >"$tmp/nccl.log"
out=$(ex --json "$tmp/nccl.log")
check "NCCL: shm and system error both found" python3 -c '
import json, sys
ids = [f["id"] for f in json.loads(sys.argv[1])["findings"]]
assert "nccl_shm_failed" in ids and "nccl_system_error" in ids, ids
' "$out"
check "help names NCCL" bash -c '"$HBMCTL" explain --help | grep -q "NCCL)"'

printf 'INFO starting\nINFO ok\n\0\001\002binary' >"$tmp/binary.log"
out=$("$HBMCTL" explain --no-live "$tmp/binary.log" 2>&1); rc=$?
check "binary input: exit 2" test $rc -eq 2
check "binary input: file:line says not a text log ($out)" grep -q "binary.log:3: binary data" <<<"$out"
finish
