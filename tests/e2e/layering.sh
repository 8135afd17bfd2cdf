#!/bin/bash
# The folders of src/ are one-way layers: scripts/layering.py reads the build's object files
# (who defines and who uses each function), the #include lines and CMakeLists.txt, and
# fails on an upward or undeclared use, an unused declared link, a cycle between folders,
# files calling each other round a cycle of any length, or an ARCHITECTURE.md table that disagrees with CMake;
# and two files under src/ sharing a name.
# First the real tree, then small synthetic trees, each with one violation planted.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
# The source's structure is the same in every build: once per `make test`.
[ "${HBM_SANITIZE:-OFF}" = ON ] && { echo "SKIP: run by the plain build"; exit 77; }
scratch
checker="$HBM_SRC/scripts/layering.py"

check "the source tree is layered" python3 "$checker" "$HBM_SRC" "$HBM_BUILD"

# A file name says which file it is: no two files under src/ share one (a debugger's
# backtrace, a grep hit or a review comment names only the file).
shared_names() { find "$1/src" -name '*.[ch]' -printf '%f\n' | sort | uniq -d; }
check "no two files under src/ share a name ($(shared_names "$HBM_SRC" | tr '\n' ' '))" \
    test -z "$(shared_names "$HBM_SRC")"
mkdir -p "$tmp/names/src/a" "$tmp/names/src/b"
touch "$tmp/names/src/a/scan.c" "$tmp/names/src/b/scan.c"
check "two folders' scan.c are caught" test "$(shared_names "$tmp/names")" = scan.c

# tree DIR: a two-module tree (low below high) that passes; cases then change one thing.
tree() {
    local d=$1
    mkdir -p "$d/src/low" "$d/src/high" "$d/include/hbm" "$d/docs"
    echo 'int low_f(void);' >"$d/include/hbm/low.h"
    echo 'int high_f(void);' >"$d/include/hbm/high.h"
    printf '#include "hbm/low.h"\nint low_f(void) { return 1; }\n' >"$d/src/low/low.c"
    printf '#include "hbm/high.h"\n#include "hbm/low.h"\nint high_f(void) { return low_f(); }\n' \
        >"$d/src/high/high.c"
    printf 'hbm_module(low m)\nhbm_module(high hbm_low)\n' >"$d/CMakeLists.txt"
    printf '| folder | what | depends on |\n|---|---|---|\n' >"$d/docs/ARCHITECTURE.md"
    printf '| `src/low/` | l | libm |\n| `src/high/` | h | low |\n' >>"$d/docs/ARCHITECTURE.md"
}

# build DIR: compiles every src/<module>/*.c where CMake would put its object.
build() {
    local d=$1 c m
    for c in "$d"/src/*/*.c; do
        m=$(basename "$(dirname "$c")")
        mkdir -p "$d/build/CMakeFiles/hbm_$m.dir/src/$m"
        cc -c -I "$d/include" -o "$d/build/CMakeFiles/hbm_$m.dir/src/$m/$(basename "$c").o" "$c" ||
            return 1
    done
}

# fails CASE EXPECTED: the checker exits 1 on tree $tmp/CASE and says EXPECTED.
fails() {
    local d="$tmp/$1" out rc
    build "$d" || return 1
    out=$(python3 "$checker" "$d" "$d/build")
    rc=$?
    [ "$rc" -eq 1 ] && grep -qF -- "$2" <<<"$out" && return 0
    echo "case $1: exit $rc, expected '$2' in: $out" >&2
    return 1
}

tree "$tmp/clean"
build "$tmp/clean"
check "a layered synthetic tree passes" python3 "$checker" "$tmp/clean" "$tmp/clean/build"

tree "$tmp/upcall"
printf 'int high_f(void);\nint low_f(void) { return high_f(); }\n' >"$tmp/upcall/src/low/low.c"
check "a call to a module above fails" \
    fails upcall "src/low/ uses high without declaring it: src/low/low.c calls high_f"
check "that call is a cycle between folders" \
    fails upcall "cycle between folders: high -> low -> high"

tree "$tmp/upinclude"
printf '#include "hbm/high.h"\nint low_f(void) { return 1; }\n' >"$tmp/upinclude/src/low/low.c"
check "an include of a module above fails" \
    fails upinclude "src/low/ uses high without declaring it: src/low/low.c includes include/hbm/h"

tree "$tmp/undeclared"
sed -i 's/hbm_module(high hbm_low)/hbm_module(high)/' "$tmp/undeclared/CMakeLists.txt"
check "a use CMake does not declare fails" \
    fails undeclared "src/high/ uses low without declaring it"

tree "$tmp/unused"
printf 'int high_f(void) { return 2; }\n' >"$tmp/unused/src/high/high.c"
check "a declared link the code does not use fails" \
    fails unused "src/high/ declares low in CMakeLists.txt but does not use it"

tree "$tmp/cmakecycle"
printf 'hbm_module(low m hbm_high)\nhbm_module(high hbm_low)\n' >"$tmp/cmakecycle/CMakeLists.txt"
check "a cycle of CMake links fails" fails cmakecycle "cycle in CMakeLists.txt links"

tree "$tmp/pair"
printf 'int b_f(void);\nint a_f(int n) { return n ? b_f() : 0; }\n' >"$tmp/pair/src/low/a.c"
printf 'int a_f(int);\nint b_f(void) { return a_f(0); }\n' >"$tmp/pair/src/low/b.c"
check "two files calling each other fail" \
    fails pair "src/low/a.c and src/low/b.c call each other: src/low/a.c calls b_f"

tree "$tmp/ring"
printf 'int b_f(void);\nint a_f(int n) { return n ? b_f() : 0; }\n' >"$tmp/ring/src/low/a.c"
printf 'int c_f(void);\nint b_f(void) { return c_f(); }\n' >"$tmp/ring/src/low/b.c"
printf 'int a_f(int);\nint c_f(void) { return a_f(0); }\n' >"$tmp/ring/src/low/c.c"
check "three files calling round a cycle fail" fails ring \
    "files call each other round a cycle: src/low/a.c -> src/low/b.c -> src/low/c.c -> src/low/a.c"

tree "$tmp/chain"
printf 'int b_f(void);\nint a_f(void) { return b_f(); }\n' >"$tmp/chain/src/low/a.c"
printf 'int c_f(void);\nint b_f(void) { return c_f(); }\n' >"$tmp/chain/src/low/b.c"
printf 'int c_f(void) { return 3; }\n' >"$tmp/chain/src/low/c.c"
build "$tmp/chain"
check "a chain of calls without a cycle passes" \
    python3 "$checker" "$tmp/chain" "$tmp/chain/build"

tree "$tmp/doc"
sed -i 's/| h | low |/| h | low, libm |/' "$tmp/doc/docs/ARCHITECTURE.md"
check "an ARCHITECTURE.md row unlike CMake fails" \
    fails doc "src/high/ depends on libm, low, CMake says low"

finish
