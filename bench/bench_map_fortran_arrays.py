#!/usr/bin/env python3
"""outcore.map on numpy arrays in Fortran order against the same arrays in C order, and numpy
on both, in one process (docs/map.md, "Fortran-order files"; docs/python.md).

Each row is the best wall time of --runs calls of `a * 2 + b` over two float64 arrays, a new
result array each time: outcore.map on C-ordered arrays (read in place), outcore.map on
Fortran-ordered arrays of the same values (read in place with oc_map_array.fortran_order, the
result in Fortran order; a binding that copies them to C order first shows it here), and numpy
on each. The results are compared with numpy's before any time is printed; the last column
says the order of the result.

Usage: bench_map_fortran_arrays.py [--rows N] [--cols M] [--runs R] [--backend cpu]
                                   [--threads T]
(the library: OUTCORE_LIBRARY, or the binding's own search; PYTHONPATH=python)
"""
import argparse
import sys
import time

import numpy as np

import outcore

EXPR = "a * 2 + b"


def best(call, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=8192)
    p.add_argument("--cols", type=int, default=8192)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--threads", type=int, default=None, help="threads= for outcore.map (default: all cores)")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    c = {"a": rng.standard_normal((args.rows, args.cols)), "b": rng.standard_normal((args.rows, args.cols))}
    f = {name: np.asfortranarray(x) for name, x in c.items()}
    want = c["a"] * 2 + c["b"]
    rows = []
    for label, arrays in (("outcore.map, C-ordered arrays", c), ("outcore.map, Fortran-ordered arrays", f),
                          ("numpy, C-ordered arrays", c), ("numpy, Fortran-ordered arrays", f)):
        if label.startswith("numpy"):
            def call(arrays=arrays):
                return arrays["a"] * 2 + arrays["b"]
        else:
            def call(arrays=arrays):
                return outcore.map(EXPR, backend=args.backend, threads=args.threads, **arrays)
        got = call()
        if not np.array_equal(got, want):
            sys.exit(f"{label}: the result differs from numpy's")
        order = "F" if got.flags.f_contiguous and not got.flags.c_contiguous else "C"
        del got
        rows.append((label, best(call, args.runs), order))
    gb = 3 * c["a"].nbytes / 1e9
    print(f"{EXPR}, float64 {args.rows} x {args.cols} ({gb:.2f} GB moved: two inputs, one output), "
          f"backend {args.backend}, best of {args.runs}")
    print(f"{'case':40s} {'wall s':>8s} {'GB/s':>7s} {'vs C arrays':>11s} {'result':>6s}")
    for label, t, order in rows:
        print(f"{label:40s} {t:8.3f} {gb / t:7.2f} {t / rows[0][1]:11.2f} {order:>6s}")


if __name__ == "__main__":
    main()
