#!/bin/sh
# tests/link/check_elf.sh - what the built library and CLI show the dynamic loader (ctests
# test_link_exports and test_link_needed, label "unit"). Exit 0: as it should be; 1: a
# difference, each named; 77: the binutils tool it needs (nm, readelf) is not installed
# (skipped).
#
#   check_elf.sh exports LIBRARY HEADER
#       The symbols LIBRARY exports (nm -D --defined-only) are exactly the OC_API functions that
#       HEADER (include/outcore.h) declares: nothing internal is exported (docs/abi.md: the
#       library is built with hidden visibility, C and CUDA code alike, and the static CUDA
#       runtime's symbols stay inside it), and no declared function is missing.
#
#   check_elf.sh needed [--allow=PREFIX]... FILE...
#       Each FILE's NEEDED entries (readelf -d) are system libraries (the C and C++ runtimes,
#       libm, libpthread, libdl, librt, zlib, the loader), liboutcore itself, or begin with a
#       PREFIX (CMake allows the MPI libraries of an MPI build, docs/mpi.md, and the sanitizer
#       runtimes of a sanitized one). Never libcuda (the driver is dlopen()ed: the library must
#       load where no driver is installed), the CUDA runtime (linked statically), cuBLAS,
#       NVRTC, NVML or a BLAS (each dlopen()ed when present): docs/design-notes.md.
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

needed() {
    also=""
    while [ $# -gt 0 ]; do
        case $1 in
        --allow=*) also="$also ${1#--allow=}" ;;
        *) break ;;
        esac
        shift
    done
    [ $# -gt 0 ] || usage
    need_tool readelf
    rc=0
    for file in "$@"; do
        [ -f "$file" ] || { say "no file at $file"; rc=1; continue; }
        entries=$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
        bad=""
        for soname in $entries; do
            case $soname in
            libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libz.so.* | libgcc_s.so.* | \
                libstdc++.so.* | ld-linux*.so.* | liboutcore.so.*)
                continue
                ;;
            esac
            allowed=0
            for prefix in $also; do
                case $soname in "$prefix"*) allowed=1 ;; esac
            done
            [ $allowed -eq 1 ] || bad="$bad $soname"
        done
        if [ -n "$bad" ]; then
            say "$file needs$bad: a CUDA, BLAS or GPU library is loaded at run time (dlopen), never linked"
            rc=1
        else
            say "$file needs" $entries
        fi
    done
    exit $rc
}

usage() {
    say "usage: check_elf.sh exports LIBRARY HEADER | check_elf.sh needed [--allow=PREFIX]... FILE..."
    exit 2
}

case ${1:-} in
exports) [ $# -eq 3 ] && exports "$2" "$3" ;;
needed) shift && needed "$@" ;;
esac
usage
