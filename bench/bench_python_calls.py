#!/usr/bin/env python3
"""Per-call wall time of repeated outcore.gram calls from Python: what the first call pays
for set-up (CUDA start-up, pinning the host staging) and the following calls no longer pay.

For a bool array A (default 10000 x 100000) and its numpy.packbits form, it times `calls`
calls of outcore.gram(A) -> int32 counts in each of two ways:

  default  every call on the module's default context (the binding's behaviour): the first
           call sets up, the following ones reuse its pinned staging;
  fresh    every call on a Context of its own, closed after the call: each call pins its
           staging again (the binding's behaviour before the default context). The CUDA
           runtime itself stays initialised in the process, so this isolates the staging.

and prints one row per call (seconds, effective bit-MAC/s) and per way the first call, the
median of the following ones and their difference. Every result is checked: each call
against the first, and the first against exact counts of sampled rows computed with numpy.
It runs on whatever backend "auto" picks (the GPU when one is usable, else the CPU) and
prints that device.

Usage: bench_python_calls.py [--rows N] [--cols M] [--calls K] [--backend auto|cpu|cuda]
                             [--forms bool,packed] [--ways default,fresh] [--out-array]
Run from the tree: OUTCORE_LIBRARY=build/liboutcore.so PYTHONPATH=python python3 bench/bench_python_calls.py
"""
import argparse
import platform
import statistics
import sys
import time

import numpy as np

import outcore

POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def device_name(backend):
    """What backend `backend` runs on here, in words."""
    if backend != "cpu" and outcore.cuda_device_count() > 0:
        gpu = outcore.devices()["gpus"][0]
        return f"cuda:0 {gpu.get('name', '?')}"
    if backend == "cuda":
        return "cuda (no usable device: every call will fail)"
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"cpu {model} ({outcore.cpu_isa()}, {outcore._lib.lib.oc_cpu_cores()} cores)"


def sampled_rows_exact(packed, rows):
    """Exact counts of the sampled rows against every row, from the packed bits."""
    return np.stack([POPCOUNT8[np.bitwise_and(packed[i], packed)].sum(1, dtype=np.int64) for i in rows]).astype(np.int32)


def time_calls(call, calls, out_array):
    """(seconds per call, first result) of `calls` calls; every result equals the first."""
    seconds, first = [], None
    for k in range(calls):
        t0 = time.perf_counter()
        got = call(out_array)
        seconds.append(time.perf_counter() - t0)
        if first is None:
            first = got if out_array is None else got.copy()
        elif not np.array_equal(got, first):
            sys.exit(f"call {k + 1} gave a result different from the first call's")
    return seconds, first


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--cols", type=int, default=100000)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--forms", default="bool,packed", help="bool, packed or both")
    ap.add_argument("--ways", default="default,fresh", help="default, fresh or both")
    ap.add_argument("--out-array", action="store_true",
                    help="write every call into one preallocated result (no fresh result pages per call)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    forms = [f for f in args.forms.split(",") if f]
    ways = [w for w in args.ways.split(",") if w]
    if not set(forms) <= {"bool", "packed"} or not set(ways) <= {"default", "fresh"} or args.calls < 2:
        ap.error("forms are bool and packed, ways default and fresh, and --calls at least 2")

    n, m = args.rows, args.cols
    rng = np.random.default_rng(args.seed)
    # Random bits drawn packed, then unpacked: no float temporary of n x m.
    A = np.unpackbits(rng.integers(0, 256, (n, (m + 7) // 8), dtype=np.uint8), axis=1, count=m).view(np.bool_)
    packed = np.packbits(A, axis=1)
    out_array = np.empty((n, n), np.int32) if args.out_array else None
    bit_macs = float(n) * n * m

    print(f"outcore {outcore.__version__}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"device: {device_name(args.backend)} (backend {args.backend})")
    print(f"input: {n} x {m} bool ({A.nbytes / 1e9:.2f} GB), packed {packed.nbytes / 1e6:.0f} MB; "
          f"result int32 {n} x {n} ({4 * n * n / 1e6:.0f} MB{', one preallocated array' if args.out_array else ', new per call'})")
    print(f"{'form':<7} {'way':<8} {'call':>4} {'seconds':>9} {'bit-MAC/s':>10}")

    summary = []
    sample = rng.choice(n, size=min(n, 8), replace=False)
    want = sampled_rows_exact(packed, sample)
    for way in ways:
        for form in forms:
            x, kw = (A, {}) if form == "bool" else (packed, {"bits": m})

            def call(out):
                if way == "default":
                    return outcore.gram(x, backend=args.backend, out=out, **kw)
                with outcore.Context(backend=args.backend) as ctx:
                    return ctx.gram(x, out=out, **kw)

            seconds, first = time_calls(call, args.calls, out_array)
            if not np.array_equal(first[sample], want):
                sys.exit(f"{form} {way}: sampled rows differ from numpy's exact counts")
            for k, s in enumerate(seconds):
                print(f"{form:<7} {way:<8} {k + 1:>4} {s:>9.4f} {bit_macs / s / 1e12:>8.2f} T")
            later = statistics.median(seconds[1:])
            summary.append((form, way, seconds[0], later))
            del first

    print("\nfirst call against the median of the following ones (their difference: set-up the first paid)")
    print(f"{'form':<7} {'way':<8} {'first s':>9} {'later s':>9} {'first-later':>11}")
    for form, way, first, later in summary:
        print(f"{form:<7} {way:<8} {first:>9.4f} {later:>9.4f} {first - later:>11.4f}")


if __name__ == "__main__":
    main()
