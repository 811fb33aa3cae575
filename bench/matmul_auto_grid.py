#!/usr/bin/env python3
"""`outcore matmul --backend auto` against both backends on a grid of square products, as users
run the CLI (.npy files in, a .npy out, the process's wall time).

    python3 bench/matmul_auto_grid.py [--outcore build/outcore] [--sizes 256,...,32768]
        [--dtype float32] [--runs 2] [--cpu-limit 60] [--dir /dev/shm/matmul_grid]

For each size n: A and B of n x n random values are written under --dir, then `outcore matmul
A B -o C --json` runs with --backend cpu, cuda and auto, best of --runs by wall time. The CPU
row is left out where the CPU's rate on the size before puts it past --cpu-limit seconds, the
CUDA row without a usable GPU. Per size: the wall times, what auto ran on, and auto's pick's wall time over the
faster backend's (the choice's cost, free of auto's own run-to-run noise), beside auto's own
wall time over it.
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


def run(outcore, a, b, c, backend):
    t0 = time.perf_counter()
    p = subprocess.run([outcore, "matmul", str(a), str(b), "-o", str(c), "--backend", backend, "--json"],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
    s = json.loads(p.stdout)
    return {"wall": wall, "seconds": s["seconds"], "backend": s["backend"], "explain": s.get("backend_explain", "")}, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outcore", default=os.environ.get("OUTCORE_BIN", "build/outcore"))
    ap.add_argument("--sizes", default="256,512,1024,2048,4096,8192,16384,32768")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--cpu-limit", type=float, default=60.0, help="seconds a CPU row may be expected to take")
    ap.add_argument("--dir", default="/dev/shm/matmul_grid" if os.path.isdir("/dev/shm") else "/tmp/matmul_grid")
    a = ap.parse_args()
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"# {a.outcore}, {a.dtype}, {cores} cores, best of {a.runs} by wall time; seconds")
    print("| n | cpu wall | cuda wall | auto wall | auto ran on | pick / fastest | auto / fastest |")
    print("|---|---|---|---|---|---|---|")
    cpu_rate = None  # flop/s of the last CPU row, to leave out CPU rows past --cpu-limit
    worst = 1.0
    rng = np.random.default_rng(5)
    try:
        for n in (int(s) for s in a.sizes.split(",")):
            A, B, C = d / "a.npy", d / "b.npy", d / "c.npy"
            for path in (A, B):
                m = np.lib.format.open_memmap(path, mode="w+", dtype=a.dtype, shape=(n, n))
                for r in range(0, n, 4096):
                    m[r:r + 4096] = rng.standard_normal((min(4096, n - r), n), dtype=np.float32)
                del m
            flops = 2.0 * n * n * n
            rows = {}
            for backend in ("cpu", "cuda", "auto"):
                if backend == "cpu" and cpu_rate and flops / cpu_rate > a.cpu_limit:
                    continue
                best, why = None, None
                for _ in range(a.runs):
                    r, why = run(a.outcore, A, B, C, backend)
                    if r is None:
                        break
                    if best is None or r["wall"] < best["wall"]:
                        best = r
                if best is None:
                    print(f"# n={n} {backend}: left out ({why})", file=sys.stderr)
                    continue
                rows[backend] = best
            if "cpu" in rows:
                cpu_rate = flops / rows["cpu"]["seconds"]
            fixed = [rows[k]["wall"] for k in ("cpu", "cuda") if k in rows]
            cell = lambda k: f"{rows[k]['wall']:.3f}" if k in rows else "-"  # noqa: E731
            pick = auto = "-"
            ran = rows["auto"]["backend"] if "auto" in rows else "-"
            if "auto" in rows and fixed:
                picked = rows.get("cpu" if ran == "cpu" else "cuda")
                if picked:
                    ratio = picked["wall"] / min(fixed)
                    worst = max(worst, ratio)
                    pick = f"{ratio:.2f}"
                auto = f"{rows['auto']['wall'] / min(fixed):.2f}"
            print(f"| {n} | {cell('cpu')} | {cell('cuda')} | {cell('auto')} | {ran} | {pick} | {auto} |", flush=True)
            for path in (A, B, C):
                path.unlink(missing_ok=True)
        print(f"# auto's pick at worst {worst:.2f}x the faster backend's wall time")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
