#!/usr/bin/env bash
# profile_topk.sh - where the GPU's time goes in a fused top-k or threshold job: every kernel
# of bench_topk_cuda's mode MODE (and of its reference, counts discarded) timed by Nsight
# Compute, summed per kernel name, beside the same mode run plainly with OUTCORE_TRACE=1
# (phases, the GPU's busy spans and its longest idle gaps).
#
#   bash bench/profile_topk.sh [BUILD]   (BUILD defaults to build-gpu, made by gpu_check.sh)
#
# MODE (default 2, top-10 jaccard) is an index of bench_topk_cuda's --modes; TOPK_N (default
# 100000) its --n. Nsight Compute runs the kernels one at a time, so the sums are each
# kernel's own time without the overlap the streams give; the trace shows the overlap.
# Logs go to $OUT (or /tmp).
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
LOGS=${OUT:-/tmp}
MODE=${MODE:-2}
bin="$BUILD/bench/bench_topk_cuda"
args=(--quick --runs 1 --modes "$MODE" --n "${TOPK_N:-100000}")
OUTCORE_TRACE=1 timeout 300 "$bin" "${args[@]}" >"$LOGS/profile_topk_trace.log" 2>&1
rc=$?
grep -E "^\||outcore cuda" "$LOGS/profile_topk_trace.log" | head -60
timeout 400 ncu --metrics gpu__time_duration.sum --csv --page raw "$bin" "${args[@]}" >"$LOGS/profile_topk_ncu.csv" 2>"$LOGS/profile_topk_ncu.err"
nrc=$?
python3 - "$LOGS/profile_topk_ncu.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if r]
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r and "gpu__time_duration.sum" in r), None)
if head is None:
    sys.exit("profile_topk: no kernel rows in the Nsight Compute output")
h = rows[head]
name, dur = h.index("Kernel Name"), h.index("gpu__time_duration.sum")
unit = rows[head + 1][dur] if head + 1 < len(rows) else ""
scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}.get(unit, None)
body = rows[head + 2:] if scale is not None else rows[head + 1:]
scale = scale or 1e-6
tot = collections.defaultdict(lambda: [0, 0.0])
for r in body:
    try:
        v = float(r[dur].replace(",", ""))
    except (ValueError, IndexError):
        continue
    k = r[name]
    if k.endswith(")"):
        k = k[: k.rfind("(")]
    k = k.replace("(anonymous namespace)::", "").replace("void ", "")
    tot[k][0] += 1
    tot[k][1] += v * scale
print("| kernel | launches | ms | ms each |")
print("|---|---:|---:|---:|")
for k, (c, ms) in sorted(tot.items(), key=lambda x: -x[1][1]):
    print(f"| {k[:70]} | {c} | {ms:.2f} | {ms / c:.4f} |")
PY
[ $nrc -ne 0 ] && tail -5 "$LOGS/profile_topk_ncu.err"
# One steady launch (past the seeding tiles) of the mode's Gram kernel and of the dense one:
# instructions, stall reasons, and the SASS lines where the warps' stall samples fall.
src=0
if [ -n "${PROFILE_SASS:-}" ]; then
  for k in "$PROFILE_SASS" 0; do
    timeout 300 ncu --kernel-name-base demangled --kernel-name "regex:gram_wgmma_kernel<.int.$k>" --launch-skip 60 --launch-count 1 \
      --section WarpStateStats --section SourceCounters --section SchedulerStats --section ComputeWorkloadAnalysis \
      --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_active.avg \
      -o "$LOGS/profile_topk_k$k" -f "$bin" "${args[@]}" >"$LOGS/profile_topk_k$k.log" 2>&1 || src=1
    ncu -i "$LOGS/profile_topk_k$k.ncu-rep" --page details >"$LOGS/profile_topk_k$k.txt" 2>&1
    grep -E "gram_wgmma|Duration|Executed Instructions |SM Active Cycles|Stall|Issued Warp|No Eligible|Warp Cycles Per Issued" \
      "$LOGS/profile_topk_k$k.txt" | head -30
    ncu -i "$LOGS/profile_topk_k$k.ncu-rep" --page source --csv --print-source sass >"$LOGS/profile_topk_k$k.sass.csv" 2>&1
    python3 - "$LOGS/profile_topk_k$k.sass.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if r]
head = next((i for i, r in enumerate(rows) if "Source" in r and any("Sampling" in c for c in r)), None)
if head is None:
    sys.exit("profile_topk: no SASS rows")
h = rows[head]
src = h.index("Source")
col = next(i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All"))
data = []
for r in rows[head + 1:]:
    try:
        data.append((float(r[col]), r[src], r[h.index("Address")] if "Address" in h else ""))
    except (ValueError, IndexError):
        pass
total = sum(d[0] for d in data) or 1
print(f"SASS lines by stall samples (of {total:.0f}):")
for v, s, a in sorted(data, reverse=True)[:25]:
    print(f"  {100 * v / total:5.1f}%  {a} {s[:90]}")
PY
  done
fi
exit $(( rc || nrc || src ))
