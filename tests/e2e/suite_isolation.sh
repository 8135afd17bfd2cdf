#!/bin/bash
# Tests run side by side (ctest -j, and the whole suite again inside e2e_long_path). A fake
# device file that the default device patterns match (/dev/davinci*, /dev/nvidia* and the
# like, also below any .../dev/, as a driver container shows them) and that a test process
# holds open is seen by every other test's hbmctl: the device-file proof (docs/safety.md)
# then refuses their holders, which hold none. Fake device files live under $tmp/accel/ with
# HBMCTL_DEVICE_PATTERNS, or, inside a container, at /dev/hbmtestN.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
# a path a test builds below a directory named dev, ending in a default pattern's name
leaks() {
    grep -nE '/dev/(davinci|nvidia|svm|hisi_hdc|devmm_svm|asdrv_svm)' "$@" |
        grep -vE '^[^:]*:[0-9]+:[[:space:]]*#' |
        grep -E '\$\{?(tmp|T|D|dir|root)\}?/dev/|--device [^ ]*:/dev/(davinci|nvidia)|mknod "?/dev/'
}
found=$(leaks $(ls "$HBM_SRC"/tests/e2e/*.sh "$HBM_SRC"/tests/e2e/*.bash "$HBM_SRC"/tests/e2e/lib/*.bash |
    grep -v '/suite_isolation\.sh$'))
check "no test holds a fake device file the default patterns match${found:+: $found}" test -z "$found"
cat >"$tmp/planted.sh" <<'EOS'
: >"$tmp/dev/davinci0"
docker run --device "$D/x:/dev/nvidia0" img
EOS
check "a planted \$tmp/dev/davinci0 and a container's /dev/nvidia0 are caught" \
    test "$(leaks "$tmp/planted.sh" | wc -l)" -eq 2
finish
