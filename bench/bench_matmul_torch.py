#!/usr/bin/env python3
"""outcore.matmul on the GPU host to host against torch (upload, torch.matmul, download).

Both start from the same numpy arrays on the host and end with the product in a new numpy
array: torch uploads A and B (torch.from_numpy(...).cuda()), multiplies with torch.matmul and
downloads the result (.cpu().numpy()); outcore.matmul(A, B, backend="cuda") streams tiles.
Each is timed from pageable arrays and from pinned ones (torch's pin_memory(); outcore's
empty_pinned()), and outcore also into a pinned result made before the timing (out=; torch's
pinned result comes from its caching host allocator), best of --runs after a warm-up, and
the results are compared; last, both from CUDA tensors already on the device (outcore.matmul
on the tensors against torch.matmul). TF32 is off for both (IEEE FP32 products).

With --tensors-only EDGES (say "1024,4096,8192"), only the CUDA-tensor comparison runs, on
square products of each edge: 20 calls of each paired and alternated, each call synchronised,
printing the best of each side and the median of the pairs' ratios (torch / outcore), so that
what a Python call costs around a short product shows.

Usage: bench_matmul_torch.py [--m 32768] [--k 8192] [--n 32768] [--runs 3] [--dtype float32]
                             [--tensors-only EDGES]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import outcore  # noqa: E402


def best(fn, runs):
    out = fn()  # warm-up: contexts, handles, pinned staging
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
        del out
        out = None
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=32768)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--n", type=int, default=32768)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--tensors-only", default=None, metavar="EDGES")
    args = ap.parse_args()
    if outcore.cuda_device_count() == 0:
        print("SKIPPED: no usable CUDA device")
        return 0
    try:
        import torch
    except ImportError:
        print("SKIPPED: torch is not installed")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.tensors_only:
        return tensors_only(torch, [int(e) for e in args.tensors_only.split(",")], args.dtype)
    rng = np.random.default_rng(1)
    dt = np.dtype(args.dtype)
    A = rng.standard_normal((args.m, args.k), dtype=np.float32).astype(dt)
    B = rng.standard_normal((args.k, args.n), dtype=np.float32).astype(dt)
    flop = 2.0 * args.m * args.n * args.k

    def torch_run(a, b, pinned):
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        if pinned:
            ta, tb = ta.pin_memory(), tb.pin_memory()
        c = torch.matmul(ta.cuda(non_blocking=pinned), tb.cuda(non_blocking=pinned))
        if pinned:
            out = torch.empty(c.shape, dtype=c.dtype, pin_memory=True)
            out.copy_(c, non_blocking=True)
            torch.cuda.synchronize()
            return out.numpy()
        return c.cpu().numpy()

    rows = []
    ours = outcore.matmul(A, B, backend="cuda")
    ref = torch_run(A, B, False)
    scale = float(np.abs(A).sum(axis=1).max()) * float(np.abs(B).max())
    err = float(np.abs(ours - ref).max()) / scale
    del ours, ref
    print(f"outcore vs torch: largest difference {err:.2e} of max|A| row sum x max|B|")
    rows.append(("pageable", best(lambda: outcore.matmul(A, B, backend="cuda"), args.runs),
                 best(lambda: torch_run(A, B, False), args.runs)))
    # Pinned inputs: outcore's own pinned arrays, torch's pin_memory() inside its timing (what
    # a caller holding pageable data pays) and with the arrays pinned before (the best case).
    Ap, Bp = outcore.empty_pinned(A.shape, dt), outcore.empty_pinned(B.shape, dt)
    Ap[...] = A
    Bp[...] = B
    ta, tb = torch.from_numpy(A).pin_memory(), torch.from_numpy(B).pin_memory()

    def torch_prepinned():
        c = torch.matmul(ta.cuda(non_blocking=True), tb.cuda(non_blocking=True))
        out = torch.empty(c.shape, dtype=c.dtype, pin_memory=True)
        out.copy_(c, non_blocking=True)
        torch.cuda.synchronize()
        return out.numpy()

    rows.append(("pinned", best(lambda: outcore.matmul(Ap, Bp, backend="cuda"), args.runs),
                 best(torch_prepinned, args.runs)))
    # The result into a pinned array too (outcore's made once, before the timing, as torch's
    # caching host allocator keeps its pinned result's memory from the warm-up on).
    Cp = outcore.empty_pinned((args.m, args.n), outcore.matmul(A[:2], B[:, :2], backend="cpu").dtype)
    rows.append(("pinned, out pinned", best(lambda: outcore.matmul(Ap, Bp, out=Cp, backend="cuda"), args.runs),
                 best(torch_prepinned, args.runs)))
    assert np.array_equal(Cp, outcore.matmul(Ap, Bp, backend="cuda")), "the pinned result differs"
    # Both operands already CUDA tensors: outcore.matmul reads them where they are (one
    # cuBLASLt call into a new tensor) against torch.matmul, each synchronised.
    da, db = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()

    def on_gpu(fn):
        def run():
            c = fn()
            torch.cuda.synchronize()
            return c
        return run

    rows.append(("CUDA tensors", best(on_gpu(lambda: outcore.matmul(da, db)), args.runs),
                 best(on_gpu(lambda: torch.matmul(da, db)), args.runs)))
    gpu_err = float((outcore.matmul(da, db) - torch.matmul(da, db)).abs().max()) / scale
    print(f"CUDA tensors: largest difference to torch.matmul {gpu_err:.2e} of max|A| row sum x max|B|")
    del da, db
    print(f"\n{'inputs':<20} {'m x k x n':<22} {'outcore s':>10} {'TFLOP/s':>8} {'torch s':>10} {'TFLOP/s':>8} "
          f"{'outcore/torch':>14}")
    for name, o, t in rows:
        print(f"{name:<20} {f'{args.m} x {args.k} x {args.n}':<22} {o:10.3f} {flop / o / 1e12:8.1f} {t:10.3f} "
              f"{flop / t / 1e12:8.1f} {t / o:13.2f}x")
    return 0


def tensors_only(torch, edges, dtype, pairs=20):
    """outcore.matmul on CUDA tensors against torch.matmul, square products, paired calls."""
    print(f"{'edge':>6} {'outcore s':>11} {'torch s':>11} {'torch/outcore best':>19} {'median of pairs':>16}")
    for e in edges:
        g = torch.Generator(device="cuda").manual_seed(e)
        da = torch.randn((e, e), device="cuda", dtype=getattr(torch, dtype), generator=g)
        db = torch.randn((e, e), device="cuda", dtype=getattr(torch, dtype), generator=g)

        def timed(fn):
            torch.cuda.synchronize()
            t = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            return time.perf_counter() - t

        ours_fn, theirs_fn = (lambda: outcore.matmul(da, db)), (lambda: torch.matmul(da, db))
        ours_fn(), theirs_fn()  # warm-up: handles, the algorithms' choice, the kept workspace
        ours, theirs, ratio = [], [], []
        for i in range(pairs):
            first, second = (ours_fn, theirs_fn) if i % 2 == 0 else (theirs_fn, ours_fn)
            a, b = timed(first), timed(second)
            o, t = (a, b) if i % 2 == 0 else (b, a)
            ours.append(o), theirs.append(t), ratio.append(t / o)
        err = float((outcore.matmul(da, db) - torch.matmul(da, db)).abs().max())
        print(f"{e:6d} {min(ours):11.6f} {min(theirs):11.6f} {min(theirs) / min(ours):19.3f} "
              f"{sorted(ratio)[pairs // 2]:16.3f}   largest difference {err:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
