#!/usr/bin/env bash
# bench_devices.sh - the cost of splitting one GPU into logical devices (--devices 0:2, 0:3)
# against the same job on the whole device, measured in the same run.
#
#   bash bench/bench_devices.sh [BUILD]      (default build-gpu)
#
# The job: a packed .npy of ROWS x COLS bits (density 0.05) to its top-10 Jaccard (kernel
# bound: the output is small), and to a threshold's pairs, each run RUNS times per device
# spec; the best wall time of the job (oc_gram's seconds, load excluded) counts. Prints one
# table: spec, seconds, effective rate, rate against one device (target: 0:2 >= 95%), and
# whether the output arrays are byte-identical to one device's.
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
ROWS=${ROWS:-60000}
COLS=${COLS:-200000}
RUNS=${RUNS:-3}
DIR=${TMPDIR_BENCH:-/dev/shm}/oc_bench_devices
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
"$BUILD/outcore" gen --rows "$ROWS" --cols "$COLS" --density 0.05 --packed -o "$DIR/A.npy" >/dev/null || exit 1

best_seconds() { # spec output args... -> best seconds and rate of RUNS runs
  local spec=$1 out=$2; shift 2
  local best="" rate="" s r
  for _ in $(seq "$RUNS"); do
    local devs=()
    [ "$spec" != one ] && devs=(--devices "$spec")
    "$BUILD/outcore" gram "$DIR/A.npy" --bits "$COLS" "$@" "${devs[@]}" -o "$out" --json --quiet >"$DIR/run.json" || return 1
    read -r s r < <(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['seconds'], d['rate_effective'])" "$DIR/run.json")
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$s" "$best"; then
      best=$s rate=$r
    fi
  done
  echo "$best $rate"
}

echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); A: $ROWS x $COLS bits"
echo "| job | devices | seconds | bit-MAC/s effective | vs one device | same bytes |"
echo "|---|---|---|---|---|---|"
for job in topk threshold; do
  # The dense kernels on the GPU for every spec (auto could choose the CPU's sparse algorithm).
  if [ $job = topk ]; then args=(--metric jaccard --topk 10); else args=(--metric jaccard --threshold 0.2); fi
  args+=(--backend cuda --algorithm dense)
  ext=npz
  read -r s1 r1 < <(best_seconds one "$DIR/one.$ext" "${args[@]}") || { echo "one device failed"; exit 1; }
  printf '| %s | one | %.3f | %.3g | 100%% | - |\n' "$job" "$s1" "$r1"
  for spec in 0:2 0:3; do
    read -r s r < <(best_seconds "$spec" "$DIR/split.$ext" "${args[@]}") || { echo "| $job | $spec | failed | | | |"; continue; }
    # The .npz members, not the files: zip headers carry the time of writing.
    same=$(python3 -c "
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
print('yes' if sorted(a.files) == sorted(b.files) and all(a[k].tobytes() == b[k].tobytes() for k in a.files) else 'no')
" "$DIR/one.$ext" "$DIR/split.$ext")
    printf '| %s | %s | %.3f | %.3g | %.1f%% | %s |\n' "$job" "$spec" "$s" "$r" "$(python3 -c "print(100*$r/$r1)")" "$same"
  done
done
