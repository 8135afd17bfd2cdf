#!/bin/bash
# No function in src/ is longer than 120 lines (scripts/check-function-length). The checker
# is first shown to tell a 120-line function from a 121-line one, and not to be misled by
# braces in comments, strings and initialisers.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
checker="$HBM_SRC/scripts/check-function-length"

# body LINES: a function of LINES lines in all, with a brace in a comment and a string.
body() {
    echo "static int f$1(int x)"
    echo "{"
    echo "    /* } */ const char *s = \"}{\";"
    for ((i = 4; i < $1; i++)); do echo "    x += 1;"; done
    echo "}"
}
{ echo "static const int table[] = {1, 2, 3};"; body 120; } >"$tmp/ok.c"
body 121 >"$tmp/long.c"
check "120 lines pass" "$checker" "$tmp/ok.c"
out=$("$checker" "$tmp/long.c")
check "121 lines fail" test $? -eq 1
check "the long one is named: $out" grep -q "long.c:1: f121: 121 lines" <<<"$out"

out=$("$checker" "$HBM_SRC/src")
check "no function over 120 lines in src/:
$out" test -z "$out"
finish
