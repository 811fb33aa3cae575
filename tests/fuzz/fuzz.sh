#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer targets of the readers and runs them (docs/testing.md).
#
#   tests/fuzz/fuzz.sh build     builds every target into $FUZZ_BUILD (default build-fuzz)
#   tests/fuzz/fuzz.sh regress   builds, then runs each target once over its seed corpus
#   tests/fuzz/fuzz.sh run       builds, regresses (each target whose binary has not passed
#                                its seeds yet), then fuzzes each target in turn for
#                                FUZZ_SECONDS seconds (default 60), or FUZZ_RUNS executions
#                                when FUZZ_RUNS is set
#   tests/fuzz/fuzz.sh clang     prints the clang that links libFuzzer (nothing when none)
#
# FUZZ_PREBUILT=DIR (regress only, as make test sets it): the targets of the clang build DIR
# (configured with -DOUTCORE_FUZZ=ON: make test's ASan/UBSan build), brought up to date there,
# instead of a build of their own. Their library carries the sanitizers but not libFuzzer's
# coverage instrumentation, which a pass over the seeds does not use.
#
# FUZZ_INSTALL=0 (as make test sets it): without a clang that links libFuzzer, every target is
# reported skipped ("fuzz: SKIPPED <target>: <reason>") and the script exits 0.
#
# One target runs at a time. New inputs go to $FUZZ_BUILD/corpus/<target> (seeded from
# tests/fuzz/corpus/<target>), never into the repository; an input that crashes, leaks, trips
# a sanitizer, hangs past 10 s or breaks a reader's contract is saved in
# $FUZZ_BUILD/artifacts/<target>/ and the script exits 1 after the other targets have run.
# clang is installed with apt-get when it cannot build a libFuzzer program.
set -euo pipefail
cd "$(dirname "$0")/../.."

MODE=${1:-run}
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_RUNS=${FUZZ_RUNS:-}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
SEEDS=tests/fuzz/corpus

case "$MODE" in build | regress | run | clang) ;; *) echo "usage: $0 build|regress|run|clang" >&2; exit 2 ;; esac
if [ -n "${FUZZ_PREBUILT:-}" ] && [ "$MODE" != regress ]; then
  echo "fuzz: FUZZ_PREBUILT is for regress only" >&2
  exit 2
fi

# A C compiler that links -fsanitize=fuzzer: clang from PATH, else clang-NN, else apt-get.
links_fuzzer() {
  local dir
  dir=$(mktemp -d)
  echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n == 0; }' > "$dir/p.c"
  "$1" -fsanitize=fuzzer,address,undefined "$dir/p.c" -o "$dir/p" >/dev/null 2>&1
  local ok=$?
  rm -rf "$dir"
  return $ok
}
find_clang() {
  local cc
  for cc in ${CC_FUZZ:-} clang $(compgen -c clang- | grep -E '^clang-[0-9]+$' | sort -t- -k2 -rn | uniq); do
    if command -v "$cc" >/dev/null && links_fuzzer "$cc"; then echo "$cc"; return 0; fi
  done
  return 1
}
CLANG=$(find_clang || true)
[ "$MODE" = clang ] && { [ -z "$CLANG" ] || echo "$CLANG"; exit 0; }
TARGETS=$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
# FUZZ_INSTALL=0 (make test): no apt-get; each target is reported skipped instead.
if [ -z "$CLANG" ] && [ "${FUZZ_INSTALL:-1}" = 0 ]; then
  for t in $TARGETS; do echo "fuzz: SKIPPED $t: no clang that links libFuzzer (make fuzz installs one)"; done
  exit 0
fi
if [ -z "$CLANG" ]; then
  echo "fuzz: no clang that links libFuzzer; installing clang with apt-get" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # Debian 12 ships libFuzzer in libclang-rt-dev; elsewhere it comes with clang.
  pkgs=(clang)
  apt-cache show libclang-rt-dev >/dev/null 2>&1 && pkgs+=(libclang-rt-dev)
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"
  CLANG=$(find_clang) || { echo "fuzz: clang cannot link -fsanitize=fuzzer even after installing it" >&2; exit 1; }
fi

# The library is built with the coverage instrumentation and the sanitizers (fuzzer-no-link),
# without CUDA and zlib (the readers use neither), with asserts on: a broken invariant is a
# finding too.
if [ -n "${FUZZ_PREBUILT:-}" ]; then
  cmake --build "$FUZZ_PREBUILT" --target fuzz_targets -j "$JOBS"
  BIN="$FUZZ_PREBUILT/tests/fuzz"
  mkdir -p "$FUZZ_BUILD"
else
  CC="$CLANG" cmake -S . -B "$FUZZ_BUILD" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-O2 -gline-tables-only" \
    -DOUTCORE_CUDA=OFF -DOUTCORE_FUZZ=ON -DOUTCORE_SANITIZE=fuzzer-no-link,address,undefined \
    -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON >/dev/null
  cmake --build "$FUZZ_BUILD" --target fuzz_targets -j "$JOBS"
  BIN="$FUZZ_BUILD/tests/fuzz"
fi
# The seeds and dictionaries travel with the binaries (bench/fuzz_long.sh --prebuilt).
rm -rf "$BIN/seeds"
cp -r "$SEEDS" "$BIN/seeds"
cp tests/fuzz/*.dict "$BIN/"
[ "$MODE" = build ] && { echo "fuzz: targets in $BIN: $(echo $TARGETS)"; exit 0; }

failed=()
for t in $TARGETS; do
  name=${t#fuzz_}
  [ -d "$SEEDS/$name" ] || { echo "fuzz: $t has no seed corpus $SEEDS/$name" >&2; exit 1; }
  artifacts="$FUZZ_BUILD/artifacts/$name"
  mkdir -p "$artifacts"
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  log="$FUZZ_BUILD/$t.log"

  # Regression: every seed once (the committed findings among them). `run` leaves it out
  # where this very binary passed these very seeds already (make test's regress, before
  # .ci/run's make fuzz); `regress` always runs it.
  stamp="$FUZZ_BUILD/$t.seeds-passed"
  sum=$({ ls "$SEEDS/$name"; cat "$BIN/$t" "$SEEDS/$name"/*; } | sha256sum | cut -d' ' -f1)
  if [ "$MODE" = run ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
    echo "fuzz: $t: $(ls "$SEEDS/$name" | wc -l) seeds passed already with this binary"
  else
    rm -f "$stamp"
    if ! "$BIN/$t" -artifact_prefix="$artifacts/" -timeout=10 "$SEEDS/$name"/* >"$log" 2>&1; then
      echo "fuzz: $t FAILED on its seed corpus; see $log" >&2
      tail -n 40 "$log" >&2
      failed+=("$t (seeds)")
      continue
    fi
    echo "$sum" >"$stamp"
    echo "fuzz: $t: $(ls "$SEEDS/$name" | wc -l) seeds pass"
  fi
  [ "$MODE" = regress ] && continue

  work="$FUZZ_BUILD/corpus/$name"
  mkdir -p "$work"
  limit=(-max_total_time="$FUZZ_SECONDS")
  [ -n "$FUZZ_RUNS" ] && limit=(-runs="$FUZZ_RUNS")
  if "$BIN/$t" "${limit[@]}" "${dict[@]}" -artifact_prefix="$artifacts/" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "$work" "$SEEDS/$name" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    echo "fuzz: $t: ${runs:-?} executions, ${rate:-?}/s, no findings"
  else
    echo "fuzz: $t FAILED; input in $artifacts/, log $log" >&2
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz contract broken|.*runtime error)' "$log" | head -n 5 >&2 || true
    tail -n 40 "$log" >&2
    failed+=("$t")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all targets pass"
