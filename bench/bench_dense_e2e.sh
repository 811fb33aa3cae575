#!/usr/bin/env bash
# bench_dense_e2e.sh - a dense Gram job file to file, as a user runs it, beside dd's
# sequential write rate of the same bytes in the same folder.
#
#   bash bench/bench_dense_e2e.sh [DIR] [ROWS] [BITS]
#
# DIR (default /tmp) holds the packed input and the int32 ROWS x ROWS result (default 40000
# rows of 65536 bits: a 6.4 GB result). Wall times are those of the whole process (start-up,
# reading, the GPU or CPU work, writing and the final flush and rename); dd runs with
# conv=fdatasync, the job's commit flushes its file too. BUILD (default build-gpu).
set -u
cd "$(dirname "$0")/.."
DIR=${1:-/tmp}
ROWS=${2:-40000}
BITS=${3:-65536}
BUILD=${BUILD:-build-gpu}
BIN="$BUILD/outcore"
[ -x "$BIN" ] || { echo "bench_dense_e2e.sh: build $BIN first (BUILD=...)"; exit 2; }
work="$DIR/bench_dense_e2e.$$"
mkdir -p "$work" || exit 1
trap 'rm -rf "$work"' EXIT
bytes=$((ROWS * ROWS * 4))
echo "== bench_dense_e2e: $(date -u +%FT%TZ), $ROWS x $BITS bits -> int32 $ROWS^2 ($bytes bytes) in $DIR ($(stat -f -c %T "$DIR"))"
"$BIN" gen --rows "$ROWS" --cols "$BITS" --density 0.1 --packed -o "$work/A.npy" >/dev/null || exit 1
wall() { # prints the wall seconds of the command
  local t0 t1
  t0=$(date +%s%N); "$@" >/dev/null || return 1; t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}
rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.2f", (s > 0 ? b / s / 1e9 : 0) }'; }
echo "| run | seconds | GB/s of result |"
echo "|---|---:|---:|"
s=$(wall "$BIN" gram "$work/A.npy" --bits "$BITS" -o "$work/C.npy" -q) || { echo "| gram | failed | |"; exit 1; }
echo "| outcore gram -> dense .npy | $s | $(rate $bytes "$s") |"
rm -f "$work/C.npy"
count=$((bytes / 8388608))
s=$(wall dd if=/dev/zero of="$work/dd" bs=8M count=$count conv=fdatasync status=none)
echo "| dd bs=8M conv=fdatasync, same bytes | $s | $(rate $((count * 8388608)) "$s") |"
