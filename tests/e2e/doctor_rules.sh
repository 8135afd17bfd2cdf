#!/bin/bash
# docs/doctor.md's findings table is the rule registry (src/doctor/rules.c) as
# `hbmctl doctor --rules --json` lists it: the same ids in the same order, each cell the
# registry's words. A rule added, dropped or reworded on one side only fails here.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch

"$HBMCTL" doctor --rules --json >"$tmp/rules.json"
check "doctor --rules --json exits 0" test $? -eq 0
check "doctor --rules --json lists rules" \
    test "$(jq '.rules | length' "$tmp/rules.json")" -ge 19
check "every rule has id, severity, when, evidence, remedy and clean" \
    test "$(jq '[.rules[] | select(.id == "" or .severity == "" or .when == "" or
                 .evidence == "" or .remedy == "" or .clean == "")] | length' "$tmp/rules.json")" -eq 0
check "rule ids are unique" \
    test "$(jq -r '.rules[].id' "$tmp/rules.json" | sort | uniq -d | wc -l)" -eq 0
check "orphan-holder's clean action is kill" \
    test "$(jq -r '.rules[] | select(.id == "orphan-holder") | .action' "$tmp/rules.json")" = kill

# agree DOC: the findings table of DOC (a markdown file) against the registry.
agree() {
    python3 - "$1" "$tmp/rules.json" <<'PY'
import json, re, sys
doc, rules = open(sys.argv[1], encoding="utf-8").read(), json.load(open(sys.argv[2]))["rules"]
sec = doc[doc.index("### Findings"):]
sec = sec[:sec.index("\n\n", sec.index("| id |"))]
rows = []
for line in sec.splitlines():
    if line.startswith("| `"):
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows.append(cells)
want = [["`%s`" % r["id"], r["severity"], r["when"], r["evidence"], r["remedy"], r["clean"]]
        for r in rules]
bad = 0
for i in range(max(len(rows), len(want))):
    got = rows[i] if i < len(rows) else None
    exp = want[i] if i < len(want) else None
    if got != exp:
        print("row %d: docs/doctor.md has %r\n        the registry has %r" % (i + 1, got, exp))
        bad = 1
sys.exit(bad)
PY
}
check "docs/doctor.md's findings table is the registry" agree "$HBM_SRC/docs/doctor.md"

# The comparison fails on a table that differs from the registry in one word, one row.
sed 's/| `thp-always` | info |/| `thp-always` | warning |/' "$HBM_SRC/docs/doctor.md" >"$tmp/reworded.md"
agree "$tmp/reworded.md" >"$tmp/out" 2>&1
check "a reworded severity fails the comparison" test $? -ne 0
check "and names the row" grep -q "thp-always" "$tmp/out"
grep -v '| `thp-always` |' "$HBM_SRC/docs/doctor.md" >"$tmp/dropped.md"
agree "$tmp/dropped.md" >/dev/null 2>&1
check "a rule missing from the docs fails the comparison" test $? -ne 0

"$HBMCTL" doctor --rules >"$tmp/text"
check "doctor --rules exits 0" test $? -eq 0
check "doctor --rules names every rule" \
    test "$(grep -cE '^[a-z][a-z-]+$' "$tmp/text")" -eq "$(jq '.rules | length' "$tmp/rules.json")"
check "doctor --rules fits 100 columns" fits_width "$tmp/text"
finish
