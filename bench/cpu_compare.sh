#!/usr/bin/env bash
# cpu_compare.sh - the CPU Gram benchmarks on an old source tree and on this one, built alike
# and run in turns on one machine: the before and after of a change, on the CPU.
#
#   bash bench/cpu_compare.sh OLD_SRC
#
# OLD_SRC is a source tree of outcore (a checkout, or `git archive REV | tar x -C DIR`). Both
# trees are built CPU-only (Release, -DOUTCORE_CUDA=OFF -DOUTCORE_MPI=OFF
# -DOUTCORE_EXAMPLES=OFF; the benchmarks' targets only) in $OUT/old and $OUT/new. Then ROUNDS
# rounds, old first then new in each, of:
#   bench_topk_cpu --n N --m M --topk-only   A·Aᵀ of random bits: counts discarded (the dense
#                                            count), top-10 of counts, top-10 of jaccard
#   bench_cpu --quick                        (BENCH_CPU=1) A·Aᵀ and A·Bᵀ of n=4096 m=65536,
#                                            discarded and into memory
# each figure the median of RUNS runs. The table, printed last, gives every job's seconds in
# each round and new / old of the best round of each (below 1: the new tree is faster).
#
# Environment: N (default 16384) and M (65536, a multiple of 8): the top-k case, a few seconds
# a job on a many-core host; RUNS (3); ROUNDS (2); THREADS (default: every core); BENCH_CPU
# (1); JOBS (build jobs, default: every core); OUT (/tmp/cpu_compare), which keeps the builds
# and the logs (logs/<bench>_<old|new>_<round>.log).
set -u
if [ $# -ne 1 ] || [ ! -f "$1/CMakeLists.txt" ]; then
  echo "usage: bash bench/cpu_compare.sh OLD_SRC (a source tree of outcore: its CMakeLists.txt)" >&2
  exit 2
fi
OLD_SRC=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 1
NEW_SRC=$PWD
N=${N:-16384} M=${M:-65536} RUNS=${RUNS:-3} ROUNDS=${ROUNDS:-2} BENCH_CPU=${BENCH_CPU:-1}
JOBS=${JOBS:-$(nproc)} OUT=${OUT:-/tmp/cpu_compare}
THREAD_ARGS=()
[ -n "${THREADS:-}" ] && THREAD_ARGS=(--threads "$THREADS")
LOGS=$OUT/logs
mkdir -p "$LOGS" || exit 1
BENCHES=(bench_topk_cpu)
[ "$BENCH_CPU" = 1 ] && BENCHES+=(bench_cpu)

for v in old new; do
  src=$OLD_SRC
  [ $v = new ] && src=$NEW_SRC
  echo "building $v ($src) in $OUT/$v"
  if ! { cmake -S "$src" -B "$OUT/$v" -DCMAKE_BUILD_TYPE=Release -DOUTCORE_CUDA=OFF -DOUTCORE_MPI=OFF \
           -DOUTCORE_EXAMPLES=OFF >"$LOGS/configure_$v.log" 2>&1 &&
         cmake --build "$OUT/$v" -j"$JOBS" --target "${BENCHES[@]}" >"$LOGS/build_$v.log" 2>&1; }; then
    echo "the $v build failed: $LOGS/configure_$v.log, $LOGS/build_$v.log" >&2
    exit 1
  fi
done

# One round of one tree; a benchmark that fails stops the comparison, its log named.
run_round() {
  local v=$1 r=$2 log
  log=$LOGS/bench_topk_cpu_${v}_$r.log
  if ! "$OUT/$v/bench/bench_topk_cpu" --n "$N" --m "$M" --runs "$RUNS" --topk-only "${THREAD_ARGS[@]}" >"$log" 2>&1; then
    echo "bench_topk_cpu failed on the $v tree: $log" >&2
    exit 1
  fi
  [ "$BENCH_CPU" = 1 ] || return 0
  log=$LOGS/bench_cpu_${v}_$r.log
  if ! "$OUT/$v/bench/bench_cpu" --quick --runs "$RUNS" "${THREAD_ARGS[@]}" >"$log" 2>&1; then
    echo "bench_cpu failed on the $v tree: $log" >&2
    exit 1
  fi
}

for r in $(seq 1 "$ROUNDS"); do
  for v in old new; do
    echo "round $r: $v"
    run_round "$v" "$r"
  done
done

# "job<TAB>seconds" per line of one log: bench_topk_cpu's rows (case, mode, seconds in fixed
# columns) and bench_cpu's (case, output, time).
jobs_of() {
  case $(basename "$1") in
    bench_topk_cpu_*) awk '/^n=/ { c = substr($0, 1, 18); m = substr($0, 20, 22); gsub(/ +$/, "", c);
                                   gsub(/ +$/, "", m); printf "%s, %s\t%s\n", c, m, substr($0, 43, 9) + 0 }' "$1" ;;
    bench_cpu_*) awk 'NF >= 3 && $0 !~ /^(case|device|ceiling)/ && substr($0, 41, 8) + 0 > 0 {
                        c = substr($0, 1, 30); o = substr($0, 32, 8); gsub(/ +$/, "", c); gsub(/ +$/, "", o);
                        printf "%s, %s\t%s\n", c, o, substr($0, 41, 8) + 0 }' "$1" ;;
  esac
}

echo
echo "CPU Gram benchmarks, seconds (median of $RUNS runs) per round; new / old of each's best round"
echo "old: $OLD_SRC"
echo "new: $NEW_SRC"
header="%-52s"
for v in old new; do for r in $(seq 1 "$ROUNDS"); do header+=" %9s"; done; done
# shellcheck disable=SC2046 # one column title per word
printf "$header %9s\n" job $(for v in old new; do for r in $(seq 1 "$ROUNDS"); do echo "$v$r"; done; done) "new/old"
for bench in "${BENCHES[@]}"; do
  for v in old new; do
    for r in $(seq 1 "$ROUNDS"); do
      jobs_of "$LOGS/${bench}_${v}_$r.log" | awk -v col="$v$r" -F '\t' '{ print $1 "\t" col "\t" $2 }'
    done
  done
done | awk -F '\t' -v rounds="$ROUNDS" '
  !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
  { t[$1, $2] = $3 }
  END {
    for (i = 1; i <= n; ++i) {
      job = order[i]; line = sprintf("%-52s", job); best["old"] = best["new"] = 0
      for (v = 0; v < 2; ++v) {
        name = v ? "new" : "old"
        for (r = 1; r <= rounds; ++r) {
          s = t[job, name r]
          line = line sprintf(" %9s", s == "" ? "-" : sprintf("%.4f", s))
          if (s != "" && (best[name] == 0 || s + 0 < best[name])) best[name] = s + 0
        }
      }
      ratio = best["old"] > 0 && best["new"] > 0 ? sprintf("%.3f", best["new"] / best["old"]) : "-"
      print line sprintf(" %9s", ratio)
    }
  }'
