#!/usr/bin/env bash
# wall_targets.sh - the wall-time figures of docs/cost-model.md's "Where the time goes" on a
# GPU host, as users run the CLI (process wall time beside --json's seconds and phases):
#   1. a 2000 x 4096 dense job on one device, as is and under CUDA_VISIBLE_DEVICES=0, and on
#      every device: the CUDA start each pays;
#   2. A·Aᵀ of 200000 x 1,000,000 bits, top-10 jaccard, on one GPU and on all of them;
#   3. the driver alone, as the reference of 1.: cuInit with one and with every device
#      visible, then a primary context on each visible device, a thread each (libcuda through
#      ctypes), so that what the driver itself costs per device is measured in the same run;
#      and one process per device started at once, each seeing only its own device (what a
#      job driven by one process a GPU would pay).
#     bash bench/wall_targets.sh [BUILD] [RUNS]
# Inputs go to /dev/shm (the big one is 25 GB; skipped when /dev/shm has less free).
set -u
BUILD=${1:-build-gpu}
RUNS=${2:-3}
CLI=$BUILD/outcore
D=/dev/shm/wall_targets
mkdir -p "$D"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
all=$(seq -s, 0 $((ngpu - 1)))
echo "# $(date -u +%F) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $ngpu"

run() { # label, then the command; prints wall, job seconds and the phases of each run
  local label=$1; shift
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" --json >"$D/out.json" 2>"$D/err.txt"
    local rc=$?
    t1=$(date +%s%N)
    python3 - "$label" "$rc" "$(( (t1 - t0) / 1000000 ))" "$D/out.json" <<'PY'
import json, sys
label, rc, wall_ms, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
try:
    s = json.load(open(path))
except Exception:
    s = {}
ph = s.get("phases", {})
print(f"| {label} | rc {rc} | wall {wall_ms / 1000:.3f} s | job {s.get('seconds', float('nan')):.3f} s | "
      + " ".join(f"{k} {v:.3f}" for k, v in ph.items()) + " |")
PY
  done
}

driver() { # the driver's start alone, under the caller's CUDA_VISIBLE_DEVICES
  for _ in $(seq "$RUNS"); do
    python3 - <<'PY'
import ctypes, threading, time
t0 = time.perf_counter()
cu = ctypes.CDLL("libcuda.so.1")
if cu.cuInit(0) != 0:
    raise SystemExit("cuInit failed")
t1 = time.perf_counter()
n = ctypes.c_int()
cu.cuDeviceGetCount(ctypes.byref(n))
def retain(i):
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    cu.cuDeviceGet(ctypes.byref(dev), i)
    cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
threads = [threading.Thread(target=retain, args=(i,)) for i in range(n.value)]
for t in threads:
    t.start()
for t in threads:
    t.join()
t2 = time.perf_counter()
print(f"| driver alone, {n.value} visible | cuInit {t1 - t0:.3f} s | contexts, a thread each {t2 - t1:.3f} s | "
      f"total {t2 - t0:.3f} s |")
PY
  done
}
per_process() { # one process per device, all started at once: wall until the last is ready
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s%N)
    for d in $(seq 0 $((ngpu - 1))); do
      CUDA_VISIBLE_DEVICES=$d python3 -c '
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0' &
    done
    wait
    t1=$(date +%s%N)
    echo "| driver alone, $ngpu processes of one device each, at once | total $(( (t1 - t0) / 1000000 )) ms (python's start included) |"
  done
  t0=$(date +%s%N)
  python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")'
  t1=$(date +%s%N)
  echo "| python's start and loading libcuda, no CUDA call | $(( (t1 - t0) / 1000000 )) ms |"
}
echo "# persistence mode: $(nvidia-smi --query-gpu=persistence_mode --format=csv,noheader | tr '\n' ' ')"
CUDA_VISIBLE_DEVICES=0 driver
[ "$ngpu" -gt 1 ] && CUDA_VISIBLE_DEVICES=$all driver
[ "$ngpu" -gt 1 ] && per_process
[ -n "${WALL_DRIVER_ONLY:-}" ] && { rm -rf "$D"; exit 0; }

"$CLI" gen --rows 2000 --cols 4096 --density 0.05 -o "$D/small.npy" >/dev/null
run "2000x4096 dense, one device" "$CLI" gram "$D/small.npy" --backend cuda -o "$D/C.npy"
CUDA_VISIBLE_DEVICES=0 run "same, CUDA_VISIBLE_DEVICES=0" "$CLI" gram "$D/small.npy" --backend cuda -o "$D/C.npy"
[ "$ngpu" -gt 1 ] && run "same, --devices $all" "$CLI" gram "$D/small.npy" --backend cuda --devices "$all" -o "$D/C.npy"

free_gb=$(df --output=avail -BG /dev/shm | tail -1 | tr -dc 0-9)
if [ "$free_gb" -ge 40 ]; then
  "$CLI" gen --rows 200000 --cols 1000000 --density 0.05 --packed -o "$D/big.npy" >/dev/null
  run "200000 x 10^6 bits top-10 jaccard, one GPU" "$CLI" gram "$D/big.npy" --bits 1000000 --topk 10 --metric jaccard \
    --backend cuda -o "$D/top.npz"
  [ "$ngpu" -gt 1 ] && run "same, --devices $all" "$CLI" gram "$D/big.npy" --bits 1000000 --topk 10 --metric jaccard \
    --backend cuda --devices "$all" -o "$D/top.npz"
else
  echo "the 200000 x 10^6 job: skipped, /dev/shm has ${free_gb} GB free (40 needed)"
fi
rm -rf "$D"
