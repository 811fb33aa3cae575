#!/usr/bin/env python3
"""A matrix-vector product from .npy files as users run it: `outcore matmul M.npy v.npy -o
y.npy` (v 1-D, y numpy's (m,)) on each backend and on `auto`, beside numpy on the same files
(`np.load(M, mmap_mode="r") @ np.load(v)`, then `np.save`), each a process of its own timed
from start to end. Such a product reads every byte of M once for two flops a byte pair: the
rate of reading M bounds it, wherever it runs, so `auto` should keep it where M's bytes are.

Each run's wall time and the job's own seconds (--json); the median of --runs runs; the
results compared with numpy's within float32's bound.

Usage: bench_matmul_vector.py [--outcore build/outcore] [--size M K] [--runs 3]
                              [--backends auto,cpu,cuda] [--dir /dev/shm/...]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

NUMPY = ("import numpy as np, sys; m = np.load(sys.argv[1], mmap_mode='r'); v = np.load(sys.argv[2]); "
         "np.save(sys.argv[3], m @ v)")


def timed(cmd):
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return wall, proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outcore", default=os.environ.get("OUTCORE_BIN", "build/outcore"))
    ap.add_argument("--size", type=int, nargs=2, default=[65536, 16384], metavar=("M", "K"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--backends", default="auto,cpu,cuda")
    ap.add_argument("--dir", default="/dev/shm/bench_vector" if os.path.isdir("/dev/shm") else "/tmp/bench_vector")
    args = ap.parse_args()
    m, k = args.size
    os.makedirs(args.dir, exist_ok=True)
    path = {x: os.path.join(args.dir, x + ".npy") for x in ("m", "v", "y", "ref")}
    rng = np.random.default_rng(3)
    np.save(path["m"], rng.standard_normal((m, k), dtype=np.float32))
    np.save(path["v"], rng.standard_normal(k, dtype=np.float32))
    print(f"# {m} x {k} float32 (M {m * k * 4 / 1e9:.2f} GB) times a vector of {k}, files in {args.dir}, "
          f"median of {args.runs} runs (wall: the process, files in and out)")
    print(f"{'how':8s} {'wall s':>8s} {'job s':>8s} {'GB/s of M':>10s}  backend")
    walls = [timed([sys.executable, "-c", NUMPY, path["m"], path["v"], path["ref"]])[0] for _ in range(args.runs)]
    ref = np.load(path["ref"])
    wall = statistics.median(walls)
    print(f"{'numpy':8s} {wall:8.3f} {'':>8s} {m * k * 4 / wall / 1e9:10.1f}  numpy {np.__version__}")
    bound = 2 * k * np.finfo(np.float32).eps * (np.abs(np.load(path["m"], mmap_mode="r")) @ np.abs(np.load(path["v"])))
    for backend in args.backends.split(","):
        runs = []
        for _ in range(args.runs):
            w, out = timed([args.outcore, "matmul", path["m"], path["v"], "-o", path["y"], "--backend", backend,
                            "--json", "-q"])
            runs.append((w, json.loads(out)))
        y = np.load(path["y"])
        ok = y.shape == ref.shape and bool((np.abs(y - ref) <= bound).all())
        wall = statistics.median(r[0] for r in runs)
        job = statistics.median(r[1]["seconds"] for r in runs)
        print(f"{backend:8s} {wall:8.3f} {job:8.3f} {m * k * 4 / wall / 1e9:10.1f}  {runs[-1][1]['backend_desc']}"
              f"{'' if ok else '  RESULT OFF NUMPY'}")
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
