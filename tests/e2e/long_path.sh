#!/bin/bash
# The suite passes wherever the checkout lies: the working tree (tracked and new files) is
# copied to a directory whose path is 150 characters long, built there from nothing, and
# every other test is run from it (human output that carries a path must still fit, see
# fits_width in common.bash). Once per `make test`: the sanitizer build skips it.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
[ "${HBM_SANITIZE:-OFF}" = ON ] && { echo "SKIP: run by the plain build"; exit 77; }
[ "${HBM_LONG_PATH_INNER:-}" ] && { echo "SKIP: already inside the long path"; exit 77; }
git -C "$HBM_SRC" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: not a git tree"; exit 77; }
[ ${#HBM_SRC} -ge 150 ] && { echo "SKIP: the checkout is already ${#HBM_SRC} characters long: the suite around this test runs there"; exit 77; }
scratch
dir=$tmp
while [ ${#dir} -lt 140 ]; do dir="$dir/$(printf 'p%.0s' $(seq 1 $((140 - ${#dir} < 40 ? 140 - ${#dir} : 40))))"; done
dir="$dir/$(printf 'r%.0s' $(seq 1 $((150 - ${#dir} - 1))))"
check "the checkout path is 150 characters (${#dir})" test ${#dir} -eq 150
mkdir -p "$dir"
(cd "$HBM_SRC" && git ls-files -z -co --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$dir"
check "the tree is copied" test -f "$dir/CMakeLists.txt"
if cmake -S "$dir" -B "$dir/build" -DHBM_WERROR=ON >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$dir/build" -j2 >>"$tmp/cmake.log" 2>&1; then
    check "builds there" true
    # Left to the outer suite: the container daemons' tests, which keep their state in short
    # /tmp directories (a socket path's limit); the tests that spend their time on daemons,
    # deadlines and clocks, where the checkout path reaches nothing but the binary, the
    # fakes and files read by name (CI's time budget); and the layering check, which reads
    # the tree with Python and is the same at any path.
    slow='exporter_auth|exporter_prometheus|fleet_prometheus|nothing_blocks|watch_leak|redact_secrets'
    slow+='|npd_plugin|pick_lease_race|progress_.*|remedy_age|remedy_metrics|layering'
    (cd "$dir/build" && HBM_LONG_PATH_INNER=1 ctest -j2 --output-on-failure \
        -E "^(e2e_(long_path|docker_.*|podman_.*|hook_podman|$slow)|unit_test_watch_leak)\$") \
        >"$tmp/ctest.log" 2>&1
    rc=$?
    grep "tests passed" "$tmp/ctest.log"
    check "the whole suite passes there" test $rc -eq 0
    [ $rc -eq 0 ] || grep -E "FAIL|Failed|\*\*\*" "$tmp/ctest.log" | head -40
else
    check "builds there" false
    tail -20 "$tmp/cmake.log"
fi
finish
