#!/bin/bash
# The operator documentation stays in step with the binary: the man page has a section for
# every command `hbmctl --help` lists and names every long option of each command's --help
# in that section, it renders without warnings, bash completion offers the commands and
# each command's options, and `cmake --install` (what `make install PREFIX=...` runs) puts
# the man page and the completion where man and bash-completion look.
set -u
. "$HBM_SRC/tests/e2e/common.bash"
scratch
man1="$HBM_SRC/docs/hbmctl.1"
comp="$HBM_BUILD/hbmctl.bash-completion" # generated from the option tables at build time

commands=$("$HBMCTL" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
check "hbmctl --help lists commands" test -n "$commands"
for c in $commands; do
    # The section of this command: from its .SS line to the next .SS or .SH.
    awk -v c="$c" '/^\.S[SH] /{on = index($0, "\"hbmctl " c) > 0} on' "$man1" >"$tmp/sec"
    check "man page has a section for $c" test -s "$tmp/sec"
    sed 's/\\-/-/g; s/\\f[BIRP]//g' "$tmp/sec" >"$tmp/sec.txt"
    common=$(awk '/^\.SH COMMON OPTIONS/{on = 1; next} /^\.SH/{on = 0} on' "$man1" | sed 's/\\-/-/g')
    for o in $("$HBMCTL" "$c" --help | grep -E -- '^ +(-[a-zA-Z], )?--[a-z]' | grep -oE -- '(^|[ ,])--[a-z][a-z0-9-]*' | sed 's/^[ ,]*//' | sort -u); do
        if ! grep -q -- "$o" "$tmp/sec.txt" && ! grep -q -- "$o" <<<"$common"; then
            check "man page names $c $o" false
        fi
    done
done
if command -v groff >/dev/null; then
    warn=$(groff -man -ww -z "$man1" 2>&1)
    check "man page renders without warnings: ${warn:-none}" test -z "$warn"
fi

# Completion, driven the way bash drives it.
complete_words() { # WORDS... -> the candidates for the last word
    bash -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _hbmctl
        printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@"
}
mkdir -p "$tmp/bin"
ln -s "$(readlink -f "$HBMCTL")" "$tmp/bin/hbmctl"
export PATH="$tmp/bin:$PATH"
got=$(complete_words hbmctl "" | sort | tr '\n' ' ')
for c in $commands; do
    check "completion offers $c" grep -qw -- "$c" <<<"$got"
done
check "completion: exporter options" grep -qx -- "--min-interval" <(complete_words hbmctl exporter --mi)
check "completion: probe options" grep -qx -- "--max-mem" <(complete_words hbmctl probe --max)
check "completion: watch options" grep -qx -- "--interval" <(complete_words hbmctl watch --int)
check "completion: backend names" test "$(complete_words hbmctl status --backend n | tr '\n' ' ')" = "nvml npu-smi "
check "completion: after run --, commands" grep -qx "bash" <(complete_words hbmctl run --devices 1 -- bas)

# Installation into a prefix, as `make install PREFIX=...` does.
cmake --install "$HBM_BUILD" --prefix "$tmp/prefix" >/dev/null 2>"$tmp/install.err"
check "cmake --install succeeds" test $? -eq 0
check "binary installed" test -x "$tmp/prefix/bin/hbmctl"
check "man page installed in share/man/man1" cmp -s "$man1" "$tmp/prefix/share/man/man1/hbmctl.1"
check "completion installed as share/bash-completion/completions/hbmctl" \
    cmp -s "$comp" "$tmp/prefix/share/bash-completion/completions/hbmctl"
if command -v man >/dev/null; then
    check "man finds the installed page" test -n "$(MANPATH="$tmp/prefix/share/man" man -w hbmctl 2>/dev/null)"
fi
finish
