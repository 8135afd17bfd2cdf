#!/bin/bash
# Every failing log under tests/fixtures/logs gives, in explain's JSON, the phase it failed in
# and its terminal error (kind, text, line). Which logs fail is decided without the structure
# reader: every log outside healthy/ (and vllm_healthy.log) fails, except a sig/ excerpt whose
# entry in expect.tsv is a warning (the server keeps running after it). A reader that misses
# one, or a loop that reads none, fails the test.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
LOGS="$HBM_SRC/tests/fixtures/logs"
unset HBMCTL_CATALOG
phases=" start weights profile_run kv_cache graph_capture warm_up serving "
warnings=" $(jq -r '[.entries[] | select(.severity == "warning") | .id] | join(" ")' \
    "$HBM_SRC/data/signatures.json") "

# expect.tsv: file<TAB>id; a sig/ file it does not list counts as failing.
declare -A sig_id
while IFS=$'\t' read -r file id _; do
    [[ $file == \#* || -z $file ]] || sig_id[$file]=$id
done <"$LOGS/sig/expect.tsv"

# "" when the JSON gives a phase and a terminal error within the log, else what is missing.
structure_gap() {
    jq -r --arg phases "$phases" '
        .lines as $n | .structure as $s
        | if $s.failed != true then "not failed"
          elif ($s.error | type) != "object" then "no terminal error"
          elif (($s.error.text // "") | length) == 0 then "terminal error without text"
          elif (($s.error.kind // "") | length) == 0 then "terminal error without kind"
          elif ($s.error.line | type) != "number" or $s.error.line < 1 or $s.error.line > $n
            then "terminal error line \($s.error.line) outside 1..\($n)"
          elif ($phases | contains(" \($s.error.phase // "none") ") | not)
            then "no phase (\($s.error.phase))"
          else empty end' "$1"
}

failing=0
quiet=0
: >"$tmp/gaps"
while IFS= read -r -d '' f; do
    rel=${f#"$LOGS"/}
    [[ $rel == healthy/* || $rel == vllm_healthy.log ]] && continue
    if [[ $rel == sig/* && -n ${sig_id[${rel#sig/}]:-} && $warnings == *" ${sig_id[${rel#sig/}]} "* ]]; then
        quiet=$((quiet + 1))
        continue
    fi
    failing=$((failing + 1))
    "$HBMCTL" explain --no-live --json "$f" >"$tmp/out.json" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 1 ]; then
        echo "$rel: exit $rc $(head -c 200 "$tmp/err")" >>"$tmp/gaps"
        continue
    fi
    gap=$(structure_gap "$tmp/out.json")
    [ -z "$gap" ] || echo "$rel: $gap" >>"$tmp/gaps"
done < <(find "$LOGS" -name '*.log' -type f -print0 | sort -z)

check "every failing fixture has a phase and a terminal error" test ! -s "$tmp/gaps"
# 3 top-level logs and the sig/ excerpts of every error entry: a loop that reads none fails.
check "failing fixtures read: $failing (warning-only left out: $quiet)" test $failing -ge 150

# The check can fail: a log whose last error the reader cannot see is caught.
printf 'INFO loading weights\nsomething went wrong\n' >"$tmp/plain.log"
"$HBMCTL" explain --no-live --json "$tmp/plain.log" >"$tmp/plain.json"
check "a log without a terminal error is reported" test -n "$(structure_gap "$tmp/plain.json")"
finish
