#!/usr/bin/env bash
# engine_compare.sh - the engine's benchmarks on a base revision and on this tree, one after
# the other on one machine: the before and after of a change to the engine.
#
#   git archive --format=tar.gz -o .base/base.tar.gz REV      # here, the base to compare with
#   bash bench/engine_compare.sh [build] [check] [ROUNDS]      # on the GPU machine
#
# build: configures and builds both trees (Release) side by side, the base in $BASE_BUILD.
# check: the one-row top-1 job (the smallest selection) under compute-sanitizer memcheck on
#        both builds. ROUNDS (default 1) rounds of, base first then this tree:
#   bench_gram_cuda $GRAM_PARTS (default: kernel kernel-200k ooc dense)
#   bench_topk_cuda --quick --runs 3 (top-k and threshold against counts discarded)
#   bench_cpu --quick (CPU A·Aᵀ) and bench_topk_cpu --quick (CPU top-k), when CPU=1
# Logs go to $OUT (or /tmp/engine_compare); the tables are printed last, under their names.
set -u
cd "$(dirname "$0")/.."
BASE_TAR=${BASE_TAR:-.base/base.tar.gz}
BASE_SRC=${BASE_SRC:-/tmp/oc-base-src}
BASE_BUILD=${BASE_BUILD:-/tmp/oc-base-build}
NEW_BUILD=${BUILD:-build-gpu}
LOGS=${OUT:-/tmp/engine_compare}
GRAM_PARTS=${GRAM_PARTS:-kernel kernel-200k ooc dense}
mkdir -p "$LOGS"
rounds=1 build=0 check=0
for arg in "$@"; do
  case "$arg" in
    build) build=1 ;;
    check) check=1 ;;
    *) rounds=$arg ;;
  esac
done

if [ $build -eq 1 ]; then
  rm -rf "$BASE_SRC" && mkdir -p "$BASE_SRC" && tar xzf "$BASE_TAR" -C "$BASE_SRC" || exit 1
  start=$(date +%s)
  ( cmake -S "$BASE_SRC" -B "$BASE_BUILD" -DCMAKE_BUILD_TYPE=Release >"$LOGS/base_configure.log" 2>&1 &&
    cmake --build "$BASE_BUILD" -j8 >"$LOGS/base_build.log" 2>&1; echo "base build rc $?" ) &
  ( cmake -S . -B "$NEW_BUILD" -DCMAKE_BUILD_TYPE=Release >"$LOGS/new_configure.log" 2>&1 &&
    cmake --build "$NEW_BUILD" -j8 >"$LOGS/new_build.log" 2>&1; echo "new build rc $?" ) &
  wait
  echo "builds took $(( $(date +%s) - start )) s"
fi

if [ $check -eq 1 ]; then
  for v in base new; do
    b=$BASE_BUILD; [ $v = new ] && b=$NEW_BUILD
    python3 -c "import numpy as np; np.save('/tmp/one_row.npy', np.array([[1,0,1,1,0,0,0,1,1]], dtype=np.uint8))"
    compute-sanitizer --tool memcheck --error-exitcode 99 "$b/outcore" gram /tmp/one_row.npy --topk 1 \
      --backend cuda -o /tmp/one_row_$v.npz --quiet >"$LOGS/one_row_$v.log" 2>&1
    echo "one-row top-1 under memcheck, $v: rc $? $(grep -E 'ERROR SUMMARY' "$LOGS/one_row_$v.log")"
  done
fi

for r in $(seq 1 "$rounds"); do
  for v in base new; do
    b=$BASE_BUILD; [ $v = new ] && b=$NEW_BUILD
    # shellcheck disable=SC2086 # GRAM_PARTS is a list of parts
    timeout 300 "$b/bench/bench_gram_cuda" $GRAM_PARTS >"$LOGS/gram_${v}_$r.log" 2>&1
    echo "round $r $v bench_gram_cuda rc $?"
    if [ "${TOPK:-1}" = 1 ]; then
      timeout 300 "$b/bench/bench_topk_cuda" --quick --runs 3 >"$LOGS/topk_${v}_$r.log" 2>&1
      echo "round $r $v bench_topk_cuda rc $?"
    fi
    if [ "${CPU:-0}" = 1 ]; then
      timeout 200 "$b/bench/bench_cpu" --quick >"$LOGS/cpu_${v}_$r.log" 2>&1
      timeout 200 "$b/bench/bench_topk_cpu" --quick >"$LOGS/topkcpu_${v}_$r.log" 2>&1
    fi
  done
done

echo
echo "== engine_compare ($(date -u +%F) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
for f in "$LOGS"/gram_*.log "$LOGS"/topk_*.log "$LOGS"/cpu_*.log "$LOGS"/topkcpu_*.log; do
  [ -f "$f" ] || continue
  echo "-- $(basename "$f" .log)"
  grep -E '^\|' "$f" | grep -v -- '---'
done
exit 0
