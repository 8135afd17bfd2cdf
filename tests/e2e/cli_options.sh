#!/bin/bash
# Every command parses with the one option table (src/opt/opt.c): its --help is generated
# from the table (the same options `hbmctl __complete` lists, the same layout, 100 columns),
# options a command does not take are refused by the parser with the usage exit, and a bad
# value reads "hbmctl CMD: --name 'value': why".
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch

commands=$("$HBMCTL" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
check "hbmctl --help lists commands" test -n "$commands"
"$HBMCTL" __complete >"$tmp/table.bash"
check "__complete exits 0" test $? -eq 0
for c in $commands; do
    "$HBMCTL" "$c" --help >"$tmp/help" 2>&1
    check "$c --help exits 0" test $? -eq 0
    check "$c --help starts with its usage line" grep -q "^usage: hbmctl $c " <(head -1 "$tmp/help")
    check "$c --help ends its options with -h, --help" grep -qE '^  -h, --help +this text$' "$tmp/help"
    check "$c --help has an exit section" grep -qE '^exit( codes)?: ' "$tmp/help"
    check "$c --help fits 100 columns" test "$(awk 'length($0) > 100' "$tmp/help" | wc -l)" -eq 0
    # option lines: the option (and its value), two spaces or more, then its help
    opt_re='^  (-[a-zA-Z], )?--[a-z][a-z0-9-]*( [^ ]+)?  +[^ ]'
    # the options the help shows are the table's, and no others
    shown=$(grep -E -- "$opt_re" "$tmp/help" | grep -oE -- '^  (-[a-zA-Z], )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' | sort -u)
    listed=$(bash -c 'source "$1"; printf "%s\n" ${_hbmctl_opts[$2]}' _ "$tmp/table.bash" "$c" | sort -u)
    check "$c --help shows the table's options" test "$shown" = "$listed"
    # their help starts in one column
    cols=$(grep -E -- "$opt_re" "$tmp/help" | sed -E 's/^(  (-[a-zA-Z], )?--[a-z0-9-]+( [^ ]+)?  +).*/\1/' | awk '{print length($0)}' | sort -u | wc -l)
    check "$c --help aligns its option help in one column" test "$cols" -eq 1
done

# Options that are not in a command's table are refused by the parser itself.
"$HBMCTL" run --json -- true 2>"$tmp/err"
check "run --json: the usage exit 125" test $? -eq 125
check "run --json: unknown option" grep -q "hbmctl run: unknown option '--json'" "$tmp/err"
"$HBMCTL" run --snapshot x -- true 2>"$tmp/err"
check "run --snapshot: the usage exit 125" test $? -eq 125
check "run --snapshot: unknown option" grep -q "hbmctl run: unknown option '--snapshot'" "$tmp/err"
"$HBMCTL" exporter --json 2>"$tmp/err"
check "exporter --json: exit 2" test $? -eq 2
check "exporter --json: unknown option" grep -q "hbmctl exporter: unknown option '--json'" "$tmp/err"
"$HBMCTL" exporter --snapshot x 2>"$tmp/err"
check "exporter --snapshot: exit 2" test $? -eq 2
check "exporter --snapshot: unknown option" \
    grep -q "hbmctl exporter: unknown option '--snapshot'" "$tmp/err"
"$HBMCTL" release --json x 2>"$tmp/err"
check "release --json: exit 2" test $? -eq 2

# One message form for a bad value, and the nearest name for a typo.
"$HBMCTL" run --health-retries 3x -- true 2>"$tmp/err"
check "--health-retries 3x: refused (no atoi)" test $? -eq 125
check "--health-retries 3x: message" grep -q "hbmctl run: --health-retries '3x': expected 1 or more" "$tmp/err"
"$HBMCTL" watch --device 1x --count 1 2>"$tmp/err"
check "watch --device 1x: exit 2" test $? -eq 2
check "watch --device 1x: message" grep -q "hbmctl watch: --device '1x': want a device id" "$tmp/err"
"$HBMCTL" probe --device -3 2>"$tmp/err"
check "probe --device -3: exit 2" test $? -eq 2
check "probe --device -3: the same message as watch" grep -q "hbmctl probe: --device '-3': want a device id" "$tmp/err"
"$HBMCTL" status --jsno 2>"$tmp/err"
check "status --jsno: exit 2" test $? -eq 2
check "status --jsno: nearest name" grep -q "unknown option '--jsno' (did you mean --json?)" "$tmp/err"
"$HBMCTL" pick 1 --format xml 2>"$tmp/err"
check "pick --format xml: exit 2" test $? -eq 2
check "pick --format xml: the choices" grep -q "hbmctl pick: --format 'xml': want env, list or json" "$tmp/err"
finish
