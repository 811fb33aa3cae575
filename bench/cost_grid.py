#!/usr/bin/env python3
"""Validation of the cost model (docs/cost-model.md): does `--backend auto` pick the faster
backend?

Runs a grid of jobs through the real CLI, each with --backend cpu, --backend cuda and
--backend auto, and prints per job the wall time of each (best of --runs, the process's
whole life: what a user waits for, CUDA's start-up included), which backend auto ran, whether
that was the faster one, and auto's time over the best. The reference is the same run's best
backend. Summary: the share of jobs auto got right (target >= 90%) and its worst ratio to the
best (target <= 1.5x). A pick counts as right when the backend it ran was measured within
--tolerance (default 10%) of the faster one: closer than that, run-to-run noise decides.

Gram jobs go from tiny (the issue's 4627 x 216) to large (10^15 bit-MACs, top-k); `outcore
map` jobs (memory-bound to compute-bound expressions) run only when the binary has the `map`
subcommand, and are skipped with a line saying so otherwise. Without a usable GPU only cpu
and auto run, and auto must pick the CPU every time.

    python3 bench/cost_grid.py [--outcore build/outcore] [--runs 3] [--quick] [--big]
        [--dir /dev/shm/cost_grid] [--verbose] [--no-calibrate]

With a GPU it first runs `outcore devices --bandwidth`, which measures the rates and stores
them in the rate cache that auto reads (--no-calibrate: the cache as it is).

--quick keeps the jobs that take a few seconds at most on the CPU; --big adds map inputs
larger than a GPU's memory. Inputs are generated under --dir (removed at the end).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# (rows, bits, density, output): A·Aᵀ of a packed .npy; output "dense" (int32 counts .npy) or
# "topk" (top-10 jaccard .npz). 20 shapes, from 10^7 to 10^15 bit-MACs.
GRAM_GRID = [
    (300, 216, 0.1, "dense"),
    (4627, 216, 0.1, "dense"),       # the example: milliseconds on the CPU
    (2000, 2048, 0.1, "dense"),
    (5000, 4096, 0.1, "topk"),
    (8000, 1024, 0.1, "dense"),
    (10000, 8192, 0.1, "topk"),
    (10000, 16384, 0.1, "dense"),
    (20000, 4096, 0.1, "topk"),
    (20000, 32768, 0.05, "topk"),
    (30000, 2048, 0.1, "dense"),
    (40000, 65536, 0.05, "topk"),
    (50000, 16384, 0.05, "topk"),
    (20000, 65536, 0.05, "dense"),
    (100000, 200000, 0.05, "topk"),  # 10^15 bit-MACs: minutes on a CPU, seconds on a GPU
    (1000, 65536, 0.1, "dense"),
    (3000, 512, 0.1, "topk"),
    (12000, 4096, 0.1, "dense"),
    (15000, 1024, 0.1, "topk"),
    (25000, 131072, 0.05, "topk"),
    (60000, 8192, 0.05, "topk"),
]
QUICK_MAX_BITMACS = 2e12

# (expression, float64 elements per input, inputs): memory-bound to compute-bound.
MAP_GRID = [
    ("a * b", 131072, 2),                         # 1 MB inputs
    ("a * b", 16 << 20, 2),
    ("a * b", 64 << 20, 2),
    ("a + b * c", 32 << 20, 3),
    ("where(a > b, a, b)", 32 << 20, 2),
    ("sqrt(a * a + b * b)", 32 << 20, 2),
    ("exp(sin(a)) * log1p(abs(b))", 32 << 20, 2),
    ("sin(a) * cos(b) + tanh(a * b) * exp(-a * a) + arctan2(a, b)", 32 << 20, 2),
]
MAP_BIG = [("a * b", 6 << 30, 2)]  # 2 x 48 GiB of float64: past an H100's memory


def run(cmd, env=None):
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, proc


def best_of(cmd, runs):
    """(best wall seconds, the JSON summary of the last run) or (None, error text)."""
    best, summary = None, None
    while runs > 0:
        runs -= 1
        t, proc = run(cmd)
        if proc.returncode != 0:
            return None, (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        best = t if best is None else min(best, t)
        if t > 20:  # a long job's noise is small against it: one run is enough
            runs = 0
        lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
        summary = json.loads(lines[-1]) if lines else {}
    return best, summary


def gpu_usable(outcore):
    _, proc = run([outcore, "devices", "--json"])
    try:
        return len(json.loads(proc.stdout).get("gpus", [])) > 0
    except ValueError:
        return False


def has_map(outcore):
    _, proc = run([outcore, "map", "--help"])
    return proc.returncode == 0


def gram_jobs(args, outcore, work):
    for rows, bits, density, output in GRAM_GRID:
        macs = rows * (rows + 1) / 2 * bits
        if args.quick and macs > QUICK_MAX_BITMACS:
            continue
        path = work / f"A_{rows}_{bits}.npy"
        if not path.exists():
            t, proc = run([outcore, "gen", "--rows", str(rows), "--cols", str(bits), "--density", str(density),
                           "--packed", "--seed", "7", "-o", str(path)])
            if proc.returncode != 0:
                sys.exit(f"cost_grid: outcore gen failed: {proc.stderr.strip()}")
        if output == "topk":
            out, extra = work / "out.npz", ["--topk", "10", "--metric", "jaccard"]
        else:
            out, extra = work / "out.npy", []
        name = f"gram {rows}x{bits} {output}"
        base = [outcore, "gram", str(path), "--bits", str(bits), "-o", str(out), "--json", "--quiet"] + extra
        yield name, (lambda backend, base=base: base + ["--backend", backend])


def map_jobs(args, outcore, work):
    grid = MAP_GRID + (MAP_BIG if args.big else [])
    rng = np.random.default_rng(0)
    for expr, elements, ninputs in grid:
        names = "abc"[:ninputs]
        paths = []
        for name in names:
            p = work / f"{name}_{elements}.npy"
            if not p.exists():
                arr = np.lib.format.open_memmap(p, mode="w+", dtype=np.float64, shape=(elements,))
                step = 1 << 24
                for i in range(0, elements, step):
                    arr[i:i + step] = rng.random(min(step, elements - i)) + 0.5
                del arr
            paths.append(f"{name}={p}")
        out = work / "map_out.npy"
        label = f"map {expr} ({elements * 8 / 1e6:.0f} MB x {ninputs})"
        base = [outcore, "map", expr] + paths + ["-o", str(out), "--json"]
        yield label, (lambda backend, base=base: base + ["--backend", backend])


def backend_ran(summary):
    b = summary.get("backend", "") if isinstance(summary, dict) else ""
    return "cuda" if b.startswith("cuda") else "cpu" if b.startswith("cpu") else b or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outcore", default=str(Path(__file__).resolve().parent.parent / "build" / "outcore"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--dir", default="/dev/shm/cost_grid" if os.path.isdir("/dev/shm") else "/tmp/cost_grid")
    ap.add_argument("--verbose", action="store_true", help="print auto's --explain text for each job")
    ap.add_argument("--no-calibrate", action="store_true",
                    help="do not run `outcore devices --bandwidth` first (it measures and caches the rates)")
    args = ap.parse_args()
    outcore = args.outcore
    if not os.access(outcore, os.X_OK):
        sys.exit(f"cost_grid: {outcore} is not an executable outcore (--outcore)")
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    gpu = gpu_usable(outcore)
    if gpu and not args.no_calibrate:
        _, cal = run([outcore, "devices", "--bandwidth"])
        print("# rates measured by `outcore devices --bandwidth`:")
        for line in cal.stderr.splitlines():
            print(f"#   {line}")
    _, dev = run([outcore, "devices"])
    print(f"# cost_grid {time.strftime('%Y-%m-%d')}: {dev.stdout.strip().splitlines()[0] if dev.stdout else '?'}")
    print(f"# backends: cpu{', cuda' if gpu else ' (no usable GPU: auto must pick the CPU)'}; best of {args.runs} "
          f"process wall times; right = auto ran a backend within {args.tolerance:.0%} of the faster")
    jobs = list(gram_jobs(args, outcore, work))
    if has_map(outcore):
        jobs += list(map_jobs(args, outcore, work))
    else:
        print("# map jobs skipped: this outcore has no `map` subcommand")

    print(f"| {'job':<52} | {'cpu s':>8} | {'cuda s':>8} | {'auto s':>8} | auto ran | faster | right | ratio |")
    print(f"|{'-' * 54}|{'-' * 10}|{'-' * 10}|{'-' * 10}|----------|--------|-------|-------|")
    counted = right = 0
    worst = 1.0
    failures = []
    try:
        for name, cmd in jobs:
            t_cpu, s_cpu = best_of(cmd("cpu"), args.runs)
            t_gpu, s_gpu = best_of(cmd("cuda"), args.runs) if gpu else (None, "no GPU")
            t_auto, s_auto = best_of(cmd("auto"), args.runs)
            if t_cpu is None or t_auto is None or (gpu and t_gpu is None):
                why = s_cpu if t_cpu is None else s_auto if t_auto is None else s_gpu
                failures.append(f"{name}: {why}")
                print(f"| {name:<52} | failed: {why}")
                continue
            ran = backend_ran(s_auto)
            if ran not in ("cpu", "cuda"):
                failures.append(f"{name}: the --json summary names no backend ({ran})")
                print(f"| {name:<52} | auto's summary names no backend: not counted")
                continue
            times = {"cpu": t_cpu}
            if gpu:
                times["cuda"] = t_gpu
            faster = min(times, key=times.get)
            best = times[faster]
            ok = ran in times and times[ran] <= best * (1 + args.tolerance)
            ratio = t_auto / best
            counted += 1
            right += ok
            worst = max(worst, ratio)
            gpu_col = f"{t_gpu:8.3f}" if gpu else f"{'-':>8}"
            print(f"| {name:<52} | {t_cpu:8.3f} | {gpu_col} | {t_auto:8.3f} | {ran:<8} | {faster:<6} | "
                  f"{'yes' if ok else 'NO':<5} | {ratio:5.2f} |")
            if args.verbose and isinstance(s_auto, dict):
                print(f"|   {s_auto.get('backend_explain', '')}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    share = right / counted if counted else 0.0
    verdict = "met" if counted and share >= 0.9 and worst <= 1.5 else "NOT met"
    print(f"\nsummary: auto right in {right}/{counted} jobs ({share:.0%}, target >= 90%), worst ratio to the best "
          f"{worst:.2f}x (target <= 1.5x): {verdict}")
    for f in failures:
        print(f"failed: {f}")
    return 0 if counted and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
