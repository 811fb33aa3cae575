#!/usr/bin/env python3
"""`outcore.map` reductions on the CPU against numpy, on the same array, in the same run.

Each case reduces one array in memory (`outcore.map("a", a=a, reduce=op, axis=axis)`, the
CPU backend, all of the machine's cores unless --threads) and numpy's own reduction of it
(`getattr(np, op)(a, axis=axis)`, one thread: numpy's reductions do not thread), and prints
the best of --runs for each and their ratio. The results are checked to be numpy's bits
(NaN as NaN) before they are timed.

Usage: bench_map_reduce.py [--rows N] [--cols M] [--dtype float32] [--ops sum,min,max]
                           [--axes all,1] [--runs R] [--threads T]
"""
import argparse
import os
import sys

import numpy as np

from bench_map import best_of

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def same_bits(got, ref):
    got, ref = np.asarray(got), np.asarray(ref)
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return False
    if ref.dtype.kind == "f":
        return bool(np.array_equal(got, ref, equal_nan=True))
    return bool(np.array_equal(got, ref))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--ops", default="sum,min,max")
    ap.add_argument("--axes", default="all,1", help="comma-separated: all (every element) or an axis")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int)
    args = ap.parse_args()
    import outcore

    rng = np.random.default_rng(1)
    dtype = np.dtype(args.dtype)
    shape = (args.rows, args.cols)
    if dtype.kind == "f":
        a = rng.standard_normal(shape, dtype=np.float32).astype(dtype, copy=False)
    else:
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        a = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True) if info else \
            rng.integers(0, 2, shape, dtype=np.uint8).astype(bool)
    print(f"{args.dtype} {args.rows} x {args.cols} ({a.nbytes / 2**30:.2f} GiB), best of {args.runs}, "
          f"outcore threads {args.threads or os.cpu_count()}, numpy {np.__version__}")
    print(f"{'op':>4} {'axis':>4} {'numpy s':>9} {'outcore s':>10} {'outcore/numpy':>14}")
    for op in args.ops.split(","):
        for ax in args.axes.split(","):
            axis = None if ax == "all" else int(ax)

            def ours():
                return outcore.map("a", a=a, reduce=op, axis=axis, backend="cpu", threads=args.threads)

            def theirs():
                return getattr(np, op)(a, axis=axis)

            if not same_bits(ours(), theirs()):
                print(f"{op} over {ax}: not numpy's result", file=sys.stderr)
                return 1
            tn, to = best_of(theirs, args.runs), best_of(ours, args.runs)
            print(f"{op:>4} {ax:>4} {tn:9.4f} {to:10.4f} {to / tn:14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
