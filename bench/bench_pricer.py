#!/usr/bin/env python3
"""bench_pricer.py - the pricer example (examples/pricer, outcore's streaming API) against the
textbook numba version in the same run, with the ratio of their Msteps/s.

The textbook version is numba's pricer_cuda_overlap example: the paths matrix (paths x
steps + 1, Fortran order, pinned) is computed column by column, the paths split over two
streams, each column uploaded, stepped by a kernel from the previous column and a column of
normals, and downloaded, with device buffers recycled through a freelist guarded by events.
(numbapro's cuRAND is gone: numba's xoroshiro128p normals take its place, drawn per column.)

    python3 bench/bench_pricer.py [--build build-gpu] [--sizes 500000,100000000]
                                  [--numba-sizes 500000] [--paths-out-size 5000000]

For each size: outcore with the paths in registers (only price and standard error come back);
at --paths-out-size, outcore streaming the full paths matrix to /dev/shm, and returning it to
pinned host memory (the D2H-bound mode: its rate is compared with the pinned device-to-host
limit of `outcore devices --bandwidth`, 8 bytes per step); numba at --numba-sizes
(the textbook version holds the whole paths matrix in pinned host memory: 1.6 KB per path).
"""
import argparse
import math
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_map import pcie_limits  # noqa: E402  (GPU 0's pinned rates, measured now)

# numpy 2.5 removed np.row_stack, which numba-cuda's compiler still names: the alias is
# what numpy documented as its replacement.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

STEPS = 200
S0, K, SIGMA, R, T = 20.83, 21.50, 0.021, 0.20, 5.0 / 12.0


def run_outcore(binary, paths, extra):
    cmd = [binary, "--paths", str(paths), "--check", "0"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 77:
        return None, "no GPU"
    if p.returncode != 0:
        return None, f"rc {p.returncode}: {p.stderr.strip()[:300]}"
    m = re.search(r"([\d.]+) Msteps/s", p.stdout)
    price = re.search(r"price ([\d.]+), standard error ([\d.]+)", p.stdout)
    return float(m.group(1)), f"price {price.group(1)} +- {price.group(2)}"


def numba_textbook(paths_n):
    """numba's pricer_cuda_overlap, returning (seconds, price)."""
    from numba import cuda
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_normal_float64

    @cuda.jit
    def step(last, paths, dt, c0, c1, normdist):
        i = cuda.grid(1)
        if i >= paths.shape[0]:
            return
        paths[i] = last[i] * math.exp(c0 * dt + c1 * normdist[i])

    @cuda.jit
    def normals(states, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = xoroshiro128p_normal_float64(states, i)

    class FreeList:
        """Device buffers reused once the stream that last used them has passed an event."""

        def __init__(self, shape):
            self.shape, self.free, self.busy = shape, [], []

        def get(self, stream):
            for k, (buf, ev) in enumerate(self.busy):
                if ev.query():
                    self.busy.pop(k)
                    self.free.append(buf)
                    break
            return self.free.pop() if self.free else cuda.device_array(self.shape, np.float64, stream=stream)

        def release(self, buf, stream):
            ev = cuda.event(timing=False)
            ev.record(stream)
            self.busy.append((buf, ev))

    paths = cuda.pinned_array((paths_n, STEPS + 1), dtype=np.float64, order="F")
    paths[:, 0] = S0
    dt = T / STEPS
    c0, c1 = R - 0.5 * SIGMA ** 2, SIGMA * math.sqrt(dt)
    nstreams = 2
    width = (paths_n + nstreams - 1) // nstreams
    parts = [(s, min(s + width, paths_n)) for s in range(0, paths_n, width)]
    streams = [cuda.stream() for _ in parts]
    mm = FreeList(width)
    blk = 256
    states = [create_xoroshiro128p_states(e - s, seed=k + 1, stream=st) for k, ((s, e), st) in enumerate(zip(parts, streams))]
    norms = [cuda.device_array(e - s, np.float64, stream=st) for (s, e), st in zip(parts, streams)]
    cuda.synchronize()
    t0 = time.perf_counter()
    last = []
    for (s, e), st in zip(parts, streams):
        d = mm.get(st)[: e - s]
        d.copy_to_device(paths[s:e, 0], stream=st)
        last.append(d)
    for j in range(1, STEPS + 1):
        cur = []
        for k, ((s, e), st) in enumerate(zip(parts, streams)):
            grid = (e - s + blk - 1) // blk
            normals[grid, blk, st](states[k], norms[k])
            d = mm.get(st)[: e - s]
            d.copy_to_device(paths[s:e, j], stream=st)
            step[grid, blk, st](last[k], d, dt, c0, c1, norms[k])
            d.copy_to_host(paths[s:e, j], stream=st)
            mm.release(last[k], st)
            cur.append(d)
        last = cur
    for st in streams:
        st.synchronize()
    seconds = time.perf_counter() - t0
    payoff = np.maximum(paths[:, -1] - K, 0)
    return seconds, math.exp(-R * T) * payoff.mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("BUILD", "build-gpu"))
    ap.add_argument("--sizes", default="500000,100000000")
    ap.add_argument("--numba-sizes", default="500000")
    ap.add_argument("--paths-out-size", type=int, default=5000000)
    args = ap.parse_args()
    binary = os.path.join(args.build, "examples", "pricer")
    if not os.path.exists(binary):
        sys.exit(f"bench_pricer: {binary} not found (build with CUDA and the examples, which are on by default)")

    numba_rates, why_no_numba = {}, None
    try:
        from numba import cuda
        if not cuda.is_available():
            why_no_numba = "numba sees no GPU"
    except Exception as error:
        why_no_numba = f"numba unavailable: {error}"
    for n in [int(s) for s in args.numba_sizes.split(",") if s]:
        if why_no_numba:
            break
        try:
            numba_textbook(min(n, 20000))  # compile and warm up
            sec, price = numba_textbook(n)
            numba_rates[n] = (n * STEPS / sec / 1e6, f"price {price:.6f}")
        except Exception as error:  # numba that does not fit numpy 2, out of pinned memory, ...
            why_no_numba = f"numba textbook failed: {type(error).__name__}: {str(error)[:200]}"

    print(f"| case | paths | outcore Msteps/s | numba textbook Msteps/s | ratio | notes |")
    print(f"| --- | --- | --- | --- | --- | --- |")
    for n in [int(s) for s in args.sizes.split(",") if s]:
        rate, note = run_outcore(binary, n, [])
        nb = numba_rates.get(n)
        ratio = f"{rate / nb[0]:.1f}x" if rate and nb else "-"
        print(f"| price only (paths in registers) | {n} | {rate or '-'} | {nb[0] if nb else '-'} | {ratio} | {note}"
              f"{'; numba ' + nb[1] if nb else ''} |")
    if args.paths_out_size:
        out = "/dev/shm/oc_bench_pricer_paths.npy"
        rate, note = run_outcore(binary, args.paths_out_size, ["--paths-out", out, "--gpu-mem", "2G"])
        try:
            os.unlink(out)
        except OSError:
            pass
        gbs = rate * 8e6 / 1e9 if rate else 0
        print(f"| full paths to /dev/shm (--gpu-mem 2G) | {args.paths_out_size} | {rate or '-'} | - | - | {note}; "
              f"{gbs:.1f} GB/s of paths device to host (compare: pinned D2H of `outcore devices --bandwidth`) |")
    if args.paths_out_size:
        limits = pcie_limits(os.path.join(args.build, "outcore"))
        limit = limits[1] if limits else None
        rate, note = run_outcore(binary, args.paths_out_size, ["--paths-host", "--gpu-mem", "2G"])
        gbs = rate * 8e6 / 1e9 if rate else 0
        vs = f"{100 * gbs / limit:.0f}% of the pinned D2H limit {limit:.1f} GB/s (this run)" if limit and gbs else \
            "no D2H figure"
        print(f"| full paths to pinned host memory (--gpu-mem 2G) | {args.paths_out_size} | {rate or '-'} | - | - | "
              f"{note}; {gbs:.1f} GB/s of paths device to host: {vs} |")
    if why_no_numba:
        print(f"numba: {why_no_numba}")


if __name__ == "__main__":
    main()
