#!/usr/bin/env python3
"""`outcore map` file to file on Fortran-order .npy files against the same arrays in C order,
and numpy on the Fortran files, in the same run (docs/map.md, "Fortran-order files").

Each row is the wall time of a process, files in and a file out (.npy in --dir, /dev/shm by
default): the CLI on C-order files, the CLI on Fortran-order files of the same values (read
in place as the transposes of their bytes), and numpy loading the Fortran files, computing
and saving (np.save keeps the Fortran order). Best of --runs. The results are compared with
numpy's before any time is printed.

Usage: bench_map_fortran.py [--binary PATH] [--rows N] [--cols M] [--runs R] [--dir /dev/shm]
                            [--threads T]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

EXPR = "a * 2 + b"
NUMPY = ("import numpy as np, sys; a = np.load(sys.argv[1]); b = np.load(sys.argv[2]); "
         "np.save(sys.argv[3], a * 2 + b)")


def best(cmd, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", default=os.environ.get("OUTCORE_BIN", os.path.join(here, "..", "build", "outcore")))
    p.add_argument("--rows", type=int, default=8192)
    p.add_argument("--cols", type=int, default=8192)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    p.add_argument("--threads", type=int, default=0, help="--threads for the CLI (0: all cores)")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.rows, args.cols))
    b = rng.standard_normal((args.rows, args.cols))
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        paths = {}
        for order, conv in (("c", np.ascontiguousarray), ("f", np.asfortranarray)):
            for name, x in (("a", a), ("b", b)):
                paths[order + name] = os.path.join(d, f"{order}{name}.npy")
                np.save(paths[order + name], conv(x))
        out = os.path.join(d, "out.npy")
        threads = ["--threads", str(args.threads)] if args.threads else []
        rows = []
        for label, order in (("outcore map, C-order files", "c"), ("outcore map, Fortran-order files", "f")):
            cmd = [args.binary, "map", EXPR, f"a={paths[order + 'a']}", f"b={paths[order + 'b']}", "-o", out, "-q",
                   *threads]
            subprocess.run(cmd, check=True)
            got = np.load(out)
            if not (np.array_equal(got, a * 2 + b) and got.flags.f_contiguous == (order == "f")):
                sys.exit(f"{label}: the result differs from numpy's")
            rows.append((label, best(cmd, args.runs)))
        cmd = [sys.executable, "-c", NUMPY, paths["fa"], paths["fb"], out]
        rows.append(("numpy load, compute, save (Fortran files)", best(cmd, args.runs)))
    gb = 3 * a.nbytes / 1e9
    print(f"{EXPR}, float64 {args.rows} x {args.cols} ({gb:.2f} GB moved: two inputs, one output), "
          f"files in {args.dir or tempfile.gettempdir()}, best of {args.runs}")
    print(f"{'case':44s} {'wall s':>8s} {'GB/s':>7s} {'vs C files':>10s}")
    for label, t in rows:
        print(f"{label:44s} {t:8.3f} {gb / t:7.2f} {t / rows[0][1]:10.2f}")


if __name__ == "__main__":
    main()
