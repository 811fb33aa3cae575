#!/usr/bin/env python3
"""`outcore gram` on a Fortran-order uint8 .npy against the same array in C order: the time
to read (map and pack) the input, and the job's wall time, best of --runs each (docs/design.md,
"Inputs").

The array (--rows x --cols, 0/1 bytes of density 0.1) is written in both orders into --dir
(/dev/shm by default, so that the disk is not measured). Each run is `outcore gram FILE
--backend cpu --topk 1 --json`: the job's "read" phase is the packing of the input into bits
(a Fortran-order file is transposed as it is packed), the rest the top-k job, the same for
both. The two results are compared before any time is printed. --host-mem leaves the input
in its file (read in panels during the job: then only the wall time tells, and the read
columns show "-"). --backend cuda runs the job on the GPU (a file left in it is read by the
upload threads).

Usage: bench_gram_fortran.py [--binary PATH] [--rows N] [--cols M] [--runs R] [--dir /dev/shm]
                             [--threads T] [--host-mem SIZE] [--backend cpu|cuda]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def run_once(cmd):
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return json.loads(proc.stdout)["phases"]["read"], wall


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", default=os.environ.get("OUTCORE_BIN", os.path.join(here, "..", "build", "outcore")))
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--cols", type=int, default=40000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    p.add_argument("--threads", type=int, default=0, help="--threads for the CLI (0: all cores)")
    p.add_argument("--host-mem", default=None, help="--host-mem for the CLI (a small one reads in panels)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    args = p.parse_args()
    x = (np.random.default_rng(0).random((args.rows, args.cols), dtype=np.float32) < 0.1).astype(np.uint8)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        outs = {}
        for label, order, conv in (("C order", "c", np.ascontiguousarray), ("Fortran order", "f", np.asfortranarray)):
            path, out = os.path.join(d, f"{order}.npy"), os.path.join(d, f"{order}.npz")
            np.save(path, conv(x))
            cmd = [args.binary, "gram", path, "--backend", args.backend, "--topk", "1", "--json", "-o", out]
            cmd += ["--threads", str(args.threads)] if args.threads else []
            cmd += ["--host-mem", args.host_mem] if args.host_mem else []
            times = [run_once(cmd) for _ in range(args.runs)]
            with np.load(out) as z:
                outs[order] = {k: z[k] for k in z.files}
            os.remove(path)
            rows.append((label, min(t[0] for t in times), min(t[1] for t in times)))
        if any(not np.array_equal(outs["c"][k], outs["f"][k]) for k in outs["c"]):
            sys.exit("the Fortran-order file's result differs from the C-order file's")
    gb = x.nbytes / 1e9
    print(f"outcore gram --topk 1 --backend {args.backend}, uint8 {args.rows} x {args.cols} ({gb:.2f} GB), files in "
          f"{args.dir or tempfile.gettempdir()}{', --host-mem ' + args.host_mem if args.host_mem else ''}, "
          f"best of {args.runs}")
    print(f"{'input':16s} {'read s':>8s} {'read GB/s':>10s} {'read vs C':>10s} {'wall s':>8s} {'wall vs C':>10s}")
    # A read under a millisecond is the header's alone (the input stayed in its file).
    in_memory = rows[0][1] >= 1e-3
    for label, read, wall in rows:
        speed = f"{gb / read:10.2f}" if in_memory else f"{'-':>10s}"
        ratio = f"{read / rows[0][1]:10.2f}" if in_memory else f"{'-':>10s}"
        read_s = f"{read:8.3f}" if in_memory else f"{'-':>8s}"
        print(f"{label:16s} {read_s} {speed} {ratio} {wall:8.3f} {wall / rows[0][2]:10.2f}")


if __name__ == "__main__":
    main()
