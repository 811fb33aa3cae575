#!/usr/bin/env python3
"""What a slow progress callback costs a job whose calling thread does the work: the CPU
product (outcore.matmul on the CPU, its BLAS called from the calling thread in bands).

For n x n float64 A and B it times outcore.matmul(A, B) on the CPU with the given tile, without
a callback and with callbacks that sleep each given number of seconds, best of `repeat` runs,
and prints per row the seconds, the calls and the seconds spent in the callback. Reports are
due a tenth of a second after the previous one returned, or nine times as long as it took
(docs/python.md), so the callback's share stays near a tenth of the job's time. Every result
is checked against numpy's product.

Usage: bench_progress.py [--n N] [--tile T] [--threads K] [--sleeps 0,0.05,0.2] [--repeat R]
Run from the tree: OUTCORE_LIBRARY=build/liboutcore.so PYTHONPATH=python python3 bench/bench_progress.py
"""
import argparse
import platform
import time

import numpy as np

import outcore


def run(a, b, tile, threads, sleep):
    calls, inside = [0], [0.0]

    def report(done, total):
        entered = time.perf_counter()
        calls[0] += 1
        if sleep:
            time.sleep(sleep)
        inside[0] += time.perf_counter() - entered

    start = time.perf_counter()
    c = outcore.matmul(a, b, backend="cpu", tile=tile, threads=threads, host_mem="2G",
                       progress=None if sleep is None else report)
    seconds = time.perf_counter() - start
    return seconds, calls[0], inside[0], c


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=3000)
    p.add_argument("--tile", type=int, default=512)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--sleeps", default="0,0.05,0.2")
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((args.n, args.n)), rng.standard_normal((args.n, args.n))
    want = a @ b
    print(f"{platform.node()}: outcore.matmul {args.n}^2 float64 on the CPU, tile {args.tile}")
    print(f"{'callback':>10} {'seconds':>8} {'calls':>6} {'in callback':>12}")
    for sleep in [None] + [float(s) for s in args.sleeps.split(",")]:
        best = None
        for _ in range(args.repeat):
            seconds, calls, inside, c = run(a, b, args.tile, args.threads, sleep)
            assert np.allclose(c, want, rtol=1e-10, atol=1e-9 * args.n), "wrong product"
            if best is None or seconds < best[0]:
                best = (seconds, calls, inside)
        label = "none" if sleep is None else f"{sleep:g} s"
        print(f"{label:>10} {best[0]:8.2f} {best[1]:6d} {best[2]:11.2f}s")


if __name__ == "__main__":
    main()
