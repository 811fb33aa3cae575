#!/usr/bin/env bash
# bench_mpi.sh - one Gram job over MPI ranks against the same job in one process, same run.
#
#   bash bench/bench_mpi.sh [BUILD] [cpu|cuda] [ROWS] [COLS]
#
# For each output (dense counts, top-10 jaccard, threshold jaccard 0.5) of A·Aᵀ, prints the
# wall time of one process and of `mpirun -np 1` and `-np 2` (cpu: the cores split between
# the ranks with --threads; cuda: two ranks sharing GPU 0, each with half of --gpu-mem), the
# job's bit-MAC/s effective rate, the ratio to one process, and checks that every file is
# byte for byte the one process's. Wall times include process start, MPI start and reading
# the input. Needs a build with MPI (outcore --version names it) and mpirun.
set -u
BUILD=${1:-build}
BACKEND=${2:-cpu}
ROWS=${3:-20000}
COLS=${4:-16384}
BIN=$BUILD/outcore
if ! "$BIN" --version | grep -q "MPI:"; then echo "bench_mpi: $BIN was built without MPI: skipped"; exit 0; fi
if ! command -v mpirun >/dev/null; then echo "bench_mpi: no mpirun: skipped"; exit 0; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export SOURCE_DATE_EPOCH=1700000000
MPIRUN=(mpirun)
mpirun --version 2>/dev/null | grep -q "Open MPI" && MPIRUN+=(--oversubscribe)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/bench_mpi.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
cores=$(nproc)
"$BIN" gen --rows "$ROWS" --cols "$COLS" --density 0.05 --plant 100 -o "$DIR/A.npy" >/dev/null 2>&1

common=(--backend "$BACKEND")
if [ "$BACKEND" = cuda ]; then
  one_opts=(--gpu-mem 8G); rank_opts=(--gpu-mem 4G)        # two ranks share the GPU's budget
else
  one_opts=(--threads "$cores"); rank_opts=(--threads $(( cores / 2 > 0 ? cores / 2 : 1 )))
fi

now() { date +%s.%N; }
calc() { awk "BEGIN { print $* }"; }   # no bc needed
echo "bench_mpi: $(uname -n), $cores cores, backend $BACKEND, A $ROWS x $COLS bits, $($BIN --version)"
echo "| output | run | wall s | effective bit-MAC/s | vs one process | bytes |"
echo "|---|---|---|---|---|---|"
for kind in dense topk threshold; do
  case $kind in
    dense) args=(-o "$DIR/C.npy"); ext=npy ;;
    topk) args=(--topk 10 --metric jaccard); ext=npz ;;
    threshold) args=(--threshold 0.5 --metric jaccard); ext=npz ;;
  esac
  [ $kind = dense ] || args+=(-o "$DIR/C.$ext")
  t0=$(now); "$BIN" gram "$DIR/A.npy" "${common[@]}" "${one_opts[@]}" "${args[@]}" -q; t1=$(now)
  mv "$DIR/C.$ext" "$DIR/one.$ext"
  one=$(calc "$t1 - $t0")
  work=$(calc "$ROWS * $ROWS * $COLS")
  printf '| %s | one process | %.3f | %.3g | 1.00 | reference |\n' "$kind" "$one" "$(calc "$work / $one")"
  for np in 1 2; do
    opts=("${rank_opts[@]}"); [ "$np" = 1 ] && opts=("${one_opts[@]}")
    t0=$(now); "${MPIRUN[@]}" -np $np "$BIN" gram "$DIR/A.npy" "${common[@]}" "${opts[@]}" "${args[@]}" -q; rc=$?; t1=$(now)
    wall=$(calc "$t1 - $t0")
    same=$(cmp -s "$DIR/one.$ext" "$DIR/C.$ext" && echo identical || echo "DIFFER (rc $rc)")
    printf '| %s | mpirun -np %d | %.3f | %.3g | %.2f | %s |\n' "$kind" "$np" "$wall" "$(calc "$work / $wall")" \
      "$(calc "$one / $wall")" "$same"
    rm -f "$DIR/C.$ext"
  done
done
t0=$(now); "${MPIRUN[@]}" -np 2 true; t1=$(now)
printf 'mpirun -np 2 true: %.3f s (the launcher alone)\n' "$(calc "$t1 - $t0")"
