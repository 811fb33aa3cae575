#!/usr/bin/env bash
# fuzz_long.sh - a long fuzzing run of every reader: each target to at least --runs
# executions (default 10,000,000), the targets side by side, one libFuzzer process per core.
#
#   bench/fuzz_long.sh                        builds the targets (tests/fuzz/fuzz.sh build) and runs
#   bench/fuzz_long.sh --prebuilt DIR         runs the fuzz_* binaries found in DIR (a build-fuzz
#                                             folder copied from another machine: no clang needed)
#   options: --runs N (per target)  --jobs P (processes at once, default nproc)
#            --workers W (processes per target; default P / number of targets, at least 1,
#                         and the cores left over to the slowest targets)
#            --out DIR (corpora, artifacts and logs; default fuzz-long-<date>)
#
# The W workers of a target share its corpus folder (libFuzzer reloads what the others found)
# and each runs ceil(N / W) executions. The seeds and dictionaries come from DIR/tests/fuzz/seeds
# (fuzz.sh copies them into the build folder) or from tests/fuzz in this checkout. It ends
# with a table: target, executions, seconds, executions per second, findings; it exits 1 when
# any target found something (the inputs are in OUT/artifacts/<target>/).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

PREBUILT="" RUNS=10000000 JOBS=$(nproc 2>/dev/null || echo 2) WORKERS="" OUT="fuzz-long-$(date +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) PREBUILT=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "fuzz_long: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [ -z "$PREBUILT" ]; then
  "$ROOT/tests/fuzz/fuzz.sh" build || exit 1
  PREBUILT="$ROOT/${FUZZ_BUILD:-build-fuzz}"
fi
BINS=$(find "$PREBUILT" -maxdepth 3 -type f -name 'fuzz_*' ! -name '*.*' -perm -u+x | sort)
[ -n "$BINS" ] || { echo "fuzz_long: no fuzz_* executables under $PREBUILT" >&2; exit 2; }
SEEDS=$(find "$PREBUILT" -maxdepth 3 -type d -name seeds | head -n 1)
[ -n "$SEEDS" ] || SEEDS="$ROOT/tests/fuzz/corpus"
DICTS=$(dirname "$SEEDS")
[ -f "$DICTS/npy.dict" ] || DICTS="$ROOT/tests/fuzz"

ntargets=$(echo "$BINS" | wc -l)
# Workers per target: an equal share of the cores; the cores left over go to the slowest
# targets first (map_expr types, generates and may evaluate each expression, fatbin runs the
# whole inspect path twice per input, cubin every launch rule).
declare -A workers
share=${WORKERS:-$((JOBS / ntargets))}
[ "$share" -ge 1 ] || share=1
for bin in $BINS; do name=$(basename "$bin"); workers[${name#fuzz_}]=$share; done
spare=$((JOBS - share * ntargets))
if [ -z "$WORKERS" ]; then
  for name in map_expr fatbin cubin text ptx mtx npy; do
    [ "$spare" -gt 0 ] && [ -n "${workers[$name]:-}" ] || continue
    workers[$name]=$((workers[$name] + 1))
    spare=$((spare - 1))
  done
fi
mkdir -p "$OUT"
echo "fuzz_long: $ntargets targets, $RUNS executions each, at most $JOBS processes at once; output in $OUT"

# One worker: its log, its wall time and its exit status.
run_worker() { # bin name index
  local bin=$1 name=$2 i=$3 dict=()
  local per_worker=$(((RUNS + workers[$name] - 1) / workers[$name]))
  [ -f "$DICTS/$name.dict" ] && dict=(-dict="$DICTS/$name.dict")
  local start end
  start=$(date +%s.%N)
  "$bin" -runs="$per_worker" "${dict[@]}" -artifact_prefix="$OUT/artifacts/$name/" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$OUT/corpus/$name" "$SEEDS/$name" >"$OUT/logs/$name.$i.log" 2>&1
  echo $? >"$OUT/logs/$name.$i.rc"
  end=$(date +%s.%N)
  echo "$start $end" >"$OUT/logs/$name.$i.time"
}

mkdir -p "$OUT/logs"
for bin in $BINS; do
  name=$(basename "$bin"); name=${name#fuzz_}
  mkdir -p "$OUT/corpus/$name" "$OUT/artifacts/$name"
done
# Workers round-robin over the targets, so that each target starts at once.
queue=()
most=0
for name in "${!workers[@]}"; do [ "${workers[$name]}" -le "$most" ] || most=${workers[$name]}; done
for ((i = 0; i < most; i++)); do
  for bin in $BINS; do
    name=$(basename "$bin")
    [ "$i" -lt "${workers[${name#fuzz_}]}" ] && queue+=("$bin $i")
  done
done
for item in "${queue[@]}"; do
  set -- $item
  name=$(basename "$1"); name=${name#fuzz_}
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  run_worker "$1" "$name" "$2" &
done
wait

printf '\n%-10s %8s %14s %10s %12s %9s\n' target workers executions seconds "exec/s" findings
status=0
for bin in $BINS; do
  name=$(basename "$bin"); name=${name#fuzz_}
  execs=0
  for ((i = 0; i < workers[$name]; i++)); do
    log="$OUT/logs/$name.$i.log"
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    # A worker stopped by a finding prints no final statistics: its last status line counts.
    [ -n "$n" ] || n=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
    execs=$((execs + ${n:-0}))
  done
  # The target's seconds: from its first worker's start to its last worker's end.
  secs=$(cat "$OUT/logs/$name".*.time | awk 'NR == 1 || $1 < s { s = $1 } $2 > e { e = $2 } END { print e - s }')
  findings=$(find "$OUT/artifacts/$name" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  rate=$(awk -v n="$execs" -v s="$secs" 'BEGIN { print (s > 0 ? n / s : 0) }')
  printf '%-10s %8d %14d %10.0f %12.0f %9d\n' "$name" "${workers[$name]}" "$execs" "$secs" "$rate" "$findings"
  [ "$findings" -eq 0 ] || status=1
done
[ $status -eq 0 ] || echo "fuzz_long: findings; inputs in $OUT/artifacts/<target>/, logs in $OUT/logs/" >&2
exit $status
