#!/usr/bin/env python3
"""What a Python call costs besides its work: outcore.matmul, outcore.gram and outcore.map on
tiny inputs on the CPU, many calls each from the main thread (the binding's usual path: the
call runs on its worker thread while the main thread waits, so that Ctrl-C can cancel it) and
from another thread (the call runs where it is), the median per call of --rounds rounds.

Usage: bench_call_overhead.py [--calls 2000] [--rounds 5]
Run from the tree: OUTCORE_LIBRARY=build/liboutcore.so PYTHONPATH=python python3 bench/bench_call_overhead.py
"""
import argparse
import statistics
import sys
import threading
import time

import numpy as np

import outcore


def per_call(fn, calls, rounds):
    fn()  # warm-up: the context, the BLAS, the worker thread
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls)
    return statistics.median(times)


def on_other_thread(fn, calls, rounds):
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("s", per_call(fn, calls, rounds)))
    worker.start()
    worker.join()
    return box["s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    x = np.ones((4, 4))
    bits = np.ones((4, 64), dtype=np.uint8)
    cases = [("matmul 4 x 4 float64", lambda: outcore.matmul(x, x, backend="cpu")),
             ("gram 4 x 64 bits", lambda: outcore.gram(bits, backend="cpu")),
             ("map x * 2, 4 x 4", lambda: outcore.map("x * 2", backend="cpu", x=x))]
    print(f"{'call':<24} {'main thread us':>15} {'other thread us':>16}")
    for name, fn in cases:
        main_s, other_s = per_call(fn, args.calls, args.rounds), on_other_thread(fn, args.calls, args.rounds)
        print(f"{name:<24} {main_s * 1e6:15.1f} {other_s * 1e6:16.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
