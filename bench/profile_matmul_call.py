#!/usr/bin/env python3
"""Where a short outcore.matmul call spends its time in Python: cProfile over N calls on CUDA
tensors (torch) or numpy arrays, and the share inside the library's oc_matmul.

Usage: profile_matmul_call.py [--edge 512] [--calls 2000] [--host]
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import outcore  # noqa: E402
from outcore import _lib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edge", type=int, default=512)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--host", action="store_true", help="numpy arrays on the host instead of CUDA tensors")
    args = ap.parse_args()
    e = args.edge
    if args.host:
        a = np.random.default_rng(1).random((e, e), dtype=np.float32)
        b = a.copy()
        sync = lambda: None  # noqa: E731
    else:
        import torch
        a = torch.randn((e, e), device="cuda")
        b = torch.randn((e, e), device="cuda")
        sync = torch.cuda.synchronize
    lib_time = [0.0]
    real = _lib.lib.oc_matmul

    def timed_matmul(*xs):
        t = time.perf_counter()
        r = real(*xs)
        lib_time[0] += time.perf_counter() - t
        return r
    for _ in range(20):
        outcore.matmul(a, b)
    sync()
    t = time.perf_counter()
    for _ in range(args.calls):
        outcore.matmul(a, b)
    sync()
    wall = (time.perf_counter() - t) / args.calls
    _lib.lib.oc_matmul = timed_matmul
    try:
        t = time.perf_counter()
        for _ in range(args.calls):
            outcore.matmul(a, b)
        sync()
        wall2 = (time.perf_counter() - t) / args.calls
    finally:
        _lib.lib.oc_matmul = real
    print(f"edge {e}: {wall * 1e6:.1f} us a call; with oc_matmul timed {wall2 * 1e6:.1f} us, "
          f"of which oc_matmul {lib_time[0] / args.calls * 1e6:.1f} us")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        outcore.matmul(a, b)
    sync()
    prof.disable()
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
