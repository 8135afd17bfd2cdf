# Shared by the end-to-end tests: check NAME CMD... records a pass or a failure;
# finish prints the tally and exits non-zero when anything failed.
HBM_PASSED=0
HBM_FAILED=0

check() {
    local name=$1
    shift
    if "$@"; then
        HBM_PASSED=$((HBM_PASSED + 1))
    else
        HBM_FAILED=$((HBM_FAILED + 1))
        echo "FAIL: $name" >&2
    fi
}

finish() {
    echo "$HBM_PASSED passed, $HBM_FAILED failed"
    [ "$HBM_FAILED" -eq 0 ]
}
