#!/usr/bin/env python3
"""`outcore matmul` out of core on .npy files as users run it, in the cases whose reads or
writes are not plain copies: float32 files as stored (the plain case), B stored as Bᵀ
(`--transpose-b`: each panel row gathered across the file's rows), A in Fortran order (the
same for A), computed as float16 (`--dtype float16`: each element rounded on the host before
its upload), A·Aᵀ from A alone (`--gram`: the upper tiles written and mirrored), and bool
files (numpy's bool result, rounded on the device, against `--dtype int32`'s counts, which
download four times the bytes; each of its elements about as likely true as not). With
--before, another outcore binary runs every case too (the build before a change), the two
alternating, so that a change to the reads or writes shows in one run.

Each run is a process as a user runs it (files in, file out): its wall time, the job's own
seconds and the bytes it uploaded (--json); the median of --runs runs. The two binaries'
results are compared byte for byte.

Usage: bench_matmul_files.py [--outcore build/outcore] [--before OTHER/outcore]
                             [--size M N K] [--gpu-mem 2G] [--backend cuda] [--runs 3] [--cases plain,...]
                             [--dir /dev/shm/...]
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

# name: (A's file, B's file, extra options)
CASES = {
    "plain": ("a", "b", []),
    "transpose-b": ("a", "bt", ["--transpose-b"]),
    "fortran-a": ("af", "b", []),
    "float16": ("a", "b", ["--dtype", "float16"]),
    "gram": ("a", None, ["--gram"]),
    "bool": ("ba", "bb", []),
    "bool-int32": ("ba", "bb", ["--dtype", "int32"]),
}
# A bool element's chance of being true: a product's element is then true with chance
# 1 - (1 - P^2)^k, about a half at k = 16384.
BOOL_TRUE = 0.0065


def run(binary, a, b, out, args, extra):
    cmd = [binary, "matmul", a, *([b] if b else []), "-o", out, "--backend", args.backend, "--gpu-mem", args.gpu_mem, "--json", "-q",
           *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    j = json.loads(proc.stdout)
    return wall, j["seconds"], j["bytes_h2d"]


def same_bytes(x, y, rows=4096):
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    return all(np.array_equal(x[r:r + rows], y[r:r + rows]) for r in range(0, x.shape[0], rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outcore", default=os.environ.get("OUTCORE_BIN", "build/outcore"))
    ap.add_argument("--before", default=None, help="another outcore binary run on every case too")
    ap.add_argument("--size", type=int, nargs=3, default=[32768, 32768, 16384], metavar=("M", "N", "K"))
    ap.add_argument("--gpu-mem", default="2G")
    ap.add_argument("--backend", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help="a comma-separated list of " + ", ".join(CASES))
    ap.add_argument("--dir", default="/dev/shm/bench_files" if os.path.isdir("/dev/shm") else "/tmp/bench_files")
    args = ap.parse_args()
    cases = args.cases.split(",")
    for c in cases:
        if c not in CASES:
            sys.exit(f"--cases: unknown case {c!r} (one of {', '.join(CASES)})")
    m, n, k = args.size
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(11)
    path = {x: os.path.join(args.dir, x + ".npy") for x in ("a", "af", "b", "bt", "ba", "bb")}
    need = {f for c in cases for f in CASES[c][:2] if f}
    a = rng.standard_normal((m, k), dtype=np.float32)
    if "a" in need:
        np.save(path["a"], a)
    if "af" in need:
        np.save(path["af"], np.asfortranarray(a))
    del a
    b = rng.standard_normal((k, n), dtype=np.float32)
    if "b" in need:
        np.save(path["b"], b)
    if "bt" in need:
        np.save(path["bt"], np.ascontiguousarray(b.T))
    del b
    if "ba" in need:
        np.save(path["ba"], rng.random((m, k), dtype=np.float32) < BOOL_TRUE)
        np.save(path["bb"], rng.random((k, n), dtype=np.float32) < BOOL_TRUE)
    binaries = [("this", args.outcore)] + ([("before", args.before)] if args.before else [])
    flops = 2.0 * m * n * k
    print(f"# {m} x {n} x {k} float32 (bool cases: bool), --gpu-mem {args.gpu_mem}, median of {args.runs} runs "
          "(wall: the process, files in and out)")
    print(f"{'case':12s} {'binary':7s} {'wall s':>8s} {'job s':>8s} {'TFLOP/s':>8s} {'GB up':>8s}  result")
    for c in cases:
        fa, fb, extra = CASES[c]
        outs = {name: os.path.join(args.dir, f"c_{name}.npy") for name, _ in binaries}
        times = {name: [] for name, _ in binaries}
        for _ in range(args.runs):
            for name, binary in binaries:
                times[name].append(run(binary, path[fa], path[fb] if fb else None, outs[name], args, extra))
        ref = np.load(outs["this"], mmap_mode="r")
        for name, _ in binaries:
            wall = statistics.median(t[0] for t in times[name])
            job = statistics.median(t[1] for t in times[name])  # A·Aᵀ: the same flops counted
            up = times[name][-1][2] / 1e9
            result = "-" if name == "this" else (
                "same bytes" if same_bytes(np.load(outs[name], mmap_mode="r"), ref) else "DIFFERENT BYTES")
            print(f"{c:12s} {name:7s} {wall:8.3f} {job:8.3f} {flops / job / 1e12:8.1f} {up:8.2f}  {result}")
        if c in ("bool", "bool-int32"):  # kept: the bool result is where the counts are not 0
            os.replace(outs["this"], os.path.join(args.dir, f"kept_{c}.npy"))
        for o in outs.values():
            if os.path.exists(o):
                os.remove(o)
    kept = [os.path.join(args.dir, f"kept_{c}.npy") for c in ("bool", "bool-int32")]
    if all(os.path.exists(p) for p in kept):
        x, y = (np.load(p, mmap_mode="r") for p in kept)
        same = all(np.array_equal(x[r:r + 4096], y[r:r + 4096] != 0) for r in range(0, x.shape[0], 4096))
        print(f"bool against the counts: {'the counts not 0' if same else 'DIFFERENT'}; "
              f"true {float(np.mean(x[:4096])):.3f} of the first rows")
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
