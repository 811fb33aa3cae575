#!/usr/bin/env python3
"""A mixed pair on the GPU out of core: `outcore matmul A.npy B.npy` with A stored as int8 and
B as float32 (numpy's result: float32), against the same product with A converted to float32
first (the reference: the bytes a product of one type moves), in the same run; with --before,
also another outcore binary on the mixed pair (the build before a change, measured beside it).

Each run is a process as a user runs it (files in, file out): its wall time, the job's own
seconds and the bytes it uploaded (--json); the median of --runs runs each, the variants
alternating. Every result is checked against the reference's file (same bytes, or the
largest difference relative to the largest element).

Usage: bench_matmul_mixed.py [--outcore build/outcore] [--before OTHER/outcore]
                             [--size M N K] [--gpu-mem 1G] [--runs 3] [--dir /dev/shm/...]
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


def run(binary, a, b, out, gpu_mem):
    cmd = [binary, "matmul", a, b, "-o", out, "--backend", "cuda", "--gpu-mem", gpu_mem, "--json", "-q"]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    j = json.loads(proc.stdout)
    return wall, j["seconds"], j["bytes_h2d"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outcore", default=os.environ.get("OUTCORE_BIN", "build/outcore"))
    ap.add_argument("--before", default=None, help="another outcore binary run on the mixed pair too")
    ap.add_argument("--size", type=int, nargs=3, default=[32768, 32768, 16384], metavar=("M", "N", "K"))
    ap.add_argument("--gpu-mem", default="1G")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/dev/shm/bench_mixed" if os.path.isdir("/dev/shm") else "/tmp/bench_mixed")
    args = ap.parse_args()
    m, n, k = args.size
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(7)
    paths = {x: os.path.join(args.dir, x + ".npy") for x in ("a8", "a32", "b")}
    a8 = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    np.save(paths["a8"], a8)
    np.save(paths["a32"], a8.astype(np.float32))
    del a8
    np.save(paths["b"], rng.standard_normal((k, n), dtype=np.float32))
    variants = [("int8 x float32", args.outcore, paths["a8"]),
                ("float32 x float32 (A converted first)", args.outcore, paths["a32"])]
    if args.before:
        variants.append(("int8 x float32, --before binary", args.before, paths["a8"]))
    outs = [os.path.join(args.dir, f"c{i}.npy") for i in range(len(variants))]
    times = {i: [] for i in range(len(variants))}
    for _ in range(args.runs):
        for i, (_, binary, a) in enumerate(variants):
            times[i].append(run(binary, a, paths["b"], outs[i], args.gpu_mem))
    ref = np.load(outs[1], mmap_mode="r")
    scale = float(np.abs(ref).max()) or 1.0
    flops = 2.0 * m * n * k
    print(f"# {m} x {n} x {k}, --gpu-mem {args.gpu_mem}, median of {args.runs} runs (wall: the process)")
    print(f"{'variant':42s} {'wall s':>8s} {'job s':>8s} {'TFLOP/s':>8s} {'GB up':>8s}  result")
    for i, (label, _, _) in enumerate(variants):
        wall = statistics.median(t[0] for t in times[i])
        job = statistics.median(t[1] for t in times[i])
        up = times[i][-1][2] / 1e9
        c = np.load(outs[i], mmap_mode="r")
        same = "same bytes" if np.array_equal(c, ref) else f"max diff {float(np.abs(c - ref).max()) / scale:.2e}"
        print(f"{label:42s} {wall:8.3f} {job:8.3f} {flops / job / 1e12:8.1f} {up:8.2f}  {same}")
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
