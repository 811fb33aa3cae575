#!/bin/sh
# tests/link/check_elf.sh - what the built library shows the dynamic loader (ctest
# test_link_exports, label "unit"). Exit 0: as it should be; 1: a difference, each named;
# 77: nm (binutils) is not installed (skipped).
#
#   check_elf.sh exports LIBRARY HEADER
#       The symbols LIBRARY exports (nm -D --defined-only) are exactly the OC_API functions that
#       HEADER (include/outcore.h) declares: nothing internal is exported (docs/abi.md: the
#       library is built with hidden visibility, C and CUDA code alike, and the static CUDA
#       runtime's symbols stay inside it), and no declared function is missing.
set -u

say() { printf 'check_elf: %s\n' "$*"; }
need_tool() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "SKIPPED: $1 (binutils) is not installed" # the harness's form (tests/harness.c)
        exit 77
    fi
}

exports() {
    lib=$1
    header=$2
    need_tool nm
    [ -f "$lib" ] || { say "no library at $lib"; exit 1; }
    [ -f "$header" ] || { say "no header at $header"; exit 1; }
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    # A declaration is `OC_API <type> oc_name(...`, its name on the line that begins it.
    sed -n 's/^OC_API[^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$header" | sort -u >"$tmp/declared"
    nm -D --defined-only "$lib" >"$tmp/nm" || { say "nm -D $lib failed"; exit 1; }
    awk 'NF >= 3 { print $3 }' "$tmp/nm" | sed 's/@.*//' | sort -u >"$tmp/exported"
    if [ ! -s "$tmp/declared" ]; then
        say "found no OC_API function in $header"
        exit 1
    fi
    extra=$(comm -13 "$tmp/declared" "$tmp/exported")
    missing=$(comm -23 "$tmp/declared" "$tmp/exported")
    rc=0
    if [ -n "$extra" ]; then
        say "$lib exports symbols that $header does not declare OC_API:"
        printf '  %s\n' $extra
        rc=1
    fi
    if [ -n "$missing" ]; then
        say "$lib does not export these OC_API functions of $header:"
        printf '  %s\n' $missing
        rc=1
    fi
    [ $rc -eq 0 ] && say "$lib exports the $(wc -l <"$tmp/declared") OC_API functions, nothing else"
    exit $rc
}

case ${1:-} in
exports) [ $# -eq 3 ] && exports "$2" "$3" ;;
esac
say "usage: check_elf.sh exports LIBRARY HEADER"
exit 2
