#!/usr/bin/env bash
# bench_io.sh - the host side of a job beside its physical references, measured in one run.
#
#   bash bench/bench_io.sh [DIR] [ROWS] [COLS] [OUT_ROWS] [CALLS] [PACKED_ROWS] [PACKED_COLS]
#
# DIR (default /dev/shm) receives the test files. Prints:
#   1. bench_io (C): reading a packed .npy (--bits) and a uint8 0/1 .npy into a matrix,
#      oc_matrix_from_dense, and writing an OUT_ROWS^2 int32 .npy, each with its GB/s and one
#      thread's memcpy rate of the same bytes;
#   1b. the packed read alone at the seed's size, PACKED_ROWS x PACKED_COLS bits (default
#      100000 x 200000, 2.5 GB; 0 skips it), beside memcpy and cat of the same file;
#   2. the references of other processes on the same files: `cat FILE > /dev/null` (the page
#      cache's read rate) and `dd if=/dev/zero bs=8M conv=fdatasync` of the dense output's
#      size into DIR (the file system's sequential write rate);
#   3. Python: seconds per outcore.gram call on a bool array and on its packbits form
#      (bench_python_calls.py, the module's default context), and torch's `_int_mm`
#      host -> device -> host on the same 0/1 data as int8 when torch is importable (skipped
#      otherwise).
# Defaults are the issue's sizes (10000 x 100000; a 20000^2 int32 output, 1.6 GB); on a
# small machine pass smaller ones. BUILD (default build) is the CMake build folder.
set -u
cd "$(dirname "$0")/.."
DIR=${1:-/dev/shm}
ROWS=${2:-10000}
COLS=${3:-100000}
OUT_ROWS=${4:-20000}
CALLS=${5:-5}
PACKED_ROWS=${6:-100000}
PACKED_COLS=${7:-200000}
BUILD=${BUILD:-build}
[ -x "$BUILD/bench/bench_io" ] || { echo "bench_io.sh: build $BUILD/bench/bench_io first (BUILD=...)"; exit 2; }

echo "== bench_io: $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, $DIR ($(stat -f -c %T "$DIR"))"
"$BUILD/bench/bench_io" "$DIR" --rows "$ROWS" --cols "$COLS" --out-rows "$OUT_ROWS" --keep 1 || exit 1

rate() { # bytes seconds -> GB/s
  awk -v b="$1" -v s="$2" 'BEGIN { printf "%.2f", (s > 0 ? b / s / 1e9 : 0) }'
}
seconds() { # command... -> wall seconds of the best of 3
  local best="" t0 t1 s
  for _ in 1 2 3; do
    t0=$(date +%s%N); "$@"; t1=$(date +%s%N)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
    if [ -z "$best" ] || awk -v s="$s" -v b="$best" 'BEGIN { exit !(s < b) }'; then best=$s; fi
  done
  echo "$best"
}
echo
echo "| reference | bytes | best s | GB/s |"
echo "|---|---:|---:|---:|"
for f in bench_io_packed.npy bench_io_bool.npy; do
  bytes=$(stat -c %s "$DIR/$f")
  s=$(seconds sh -c "cat '$DIR/$f' > /dev/null")
  echo "| cat $f > /dev/null | $bytes | $s | $(rate "$bytes" "$s") |"
done
out_bytes=$((OUT_ROWS * OUT_ROWS * 4))
count=$(( (out_bytes + 8388607) / 8388608 ))
s=$(seconds sh -c "rm -f '$DIR/bench_io_dd'; dd if=/dev/zero of='$DIR/bench_io_dd' bs=8M count=$count conv=fdatasync status=none")
echo "| dd bs=8M conv=fdatasync into $DIR | $((count * 8388608)) | $s | $(rate $((count * 8388608)) "$s") |"
rm -f "$DIR/bench_io_dd" "$DIR/bench_io_packed.npy" "$DIR/bench_io_bool.npy"

if [ "$PACKED_ROWS" -gt 0 ]; then
  echo
  "$BUILD/bench/bench_io" "$DIR" --rows "$PACKED_ROWS" --cols "$PACKED_COLS" --packed-only 1 --keep 1 || exit 1
  bytes=$(stat -c %s "$DIR/bench_io_packed.npy")
  s=$(seconds sh -c "cat '$DIR/bench_io_packed.npy' > /dev/null")
  echo "| reference: cat bench_io_packed.npy > /dev/null | $bytes | $s | $(rate "$bytes" "$s") |"
  rm -f "$DIR/bench_io_packed.npy"
fi

echo
if ! python3 -c "import numpy" 2>/dev/null; then echo "python: numpy is not importable, skipped"; exit 0; fi
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export OUTCORE_LIBRARY=${OUTCORE_LIBRARY:-$BUILD/liboutcore.so}
python3 bench/bench_python_calls.py --rows "$ROWS" --cols "$COLS" --calls "$CALLS" --ways default
python3 - "$ROWS" "$COLS" "$CALLS" <<'PY'
import sys, time
import numpy as np
rows, cols, calls = (int(a) for a in sys.argv[1:4])
try:
    import torch
except ImportError:
    print("torch: not importable, the _int_mm reference is skipped")
    sys.exit(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
A = (np.random.default_rng(1).random((rows, cols)) < 0.5).astype(np.int8)
times = []
try:
    for _ in range(calls):
        t = time.perf_counter()
        a = torch.from_numpy(A).to(dev)
        c = torch._int_mm(a, a.t().contiguous()).cpu().numpy()
        times.append(time.perf_counter() - t)
except Exception as exc:  # _int_mm's shape rules or a build without it
    print(f"torch _int_mm on {dev}: skipped ({type(exc).__name__}: {exc})")
    sys.exit(0)
later = sorted(times[1:])[len(times[1:]) // 2] if len(times) > 1 else times[0]
print(f"torch {torch.__version__} _int_mm host->{dev}->host, {rows} x {cols} int8: first {times[0]:.4f} s, "
      f"median of the rest {later:.4f} s per call")
PY
