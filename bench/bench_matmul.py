#!/usr/bin/env python3
"""outcore.matmul against numpy's matmul on the same machine and the same arrays.

Each case times outcore's CPU backend (its BLAS, loaded at run time), numpy's ``A @ B`` (its
own BLAS) and, where a GPU is usable, outcore's CUDA backend; every figure is the best of
--runs runs after one warm-up, and the results are checked against numpy's. One table:
case, dtype, m x n x k, then seconds and GFLOP/s (2·m·n·k per second) of each, and the ratio
of outcore's CPU rate to numpy's.

Usage: bench_matmul.py [--runs N] [--threads N] [--sizes 1000,2000] [--dtypes float64,float32,int8]
                       [--large]
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import outcore  # noqa: E402


def best(fn, runs):
    fn()  # warm-up: the BLAS's threads, the GPU's context
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cases(sizes, large, dtypes):
    sizes = [(s, s, s) for s in sizes] + ([(4000, 4000, 4000), (8000, 8000, 2000)] if large else [])
    for m, n, k in sizes:
        for dt in dtypes:
            yield f"A@B {m}", dt, m, n, k
    m = 3000 if large else 1500
    if "float32" in dtypes:
        yield f"A@A.T {m}", "float32", m, m, 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--sizes", default="1000,2000", help="edges of the square cases, comma-separated")
    ap.add_argument("--dtypes", default="float64,float32,int8",
                    help="of float64, float32, int8 (numpy multiplies int8 without a BLAS: slow past 2000)")
    ap.add_argument("--large", action="store_true", help="add 4000- and 8000-sized cases")
    args = ap.parse_args()
    gpu = outcore.cuda_device_count() > 0
    rng = np.random.default_rng(0)
    print(f"# {platform.node()} {os.cpu_count()} cores, numpy {np.__version__}, outcore {outcore.__version__}, "
          f"GPU: {'yes' if gpu else 'none'}")
    head = f"{'case':<14} {'dtype':<8} {'m x n x k':<18} {'outcore cpu':>18} {'numpy':>18} {'cpu/numpy':>9}"
    print(head + (f" {'outcore cuda':>18}" if gpu else ""))
    for name, dt, m, n, k in cases([int(x) for x in args.sizes.split(",")], args.large, args.dtypes.split(",")):
        if dt == "int8":
            a = rng.integers(-128, 128, (m, k), dtype=np.int8)
            b = rng.integers(-128, 128, (k, n), dtype=np.int8)
            ref_fn = lambda: a.astype(np.int32) @ b.astype(np.int32)  # numpy's int8 @ int8 wraps
        else:
            a = rng.standard_normal((m, k)).astype(dt)
            b = rng.standard_normal((k, n)).astype(dt)
            ref_fn = lambda: a @ b
        gram = name.startswith("A@A.T")
        operands = (a,) if gram else (a, b)
        if gram:
            ref_fn = lambda: a @ a.T
        flop = 2.0 * m * n * k
        ref = ref_fn()
        got = outcore.matmul(*operands, backend="cpu", threads=args.threads)
        assert np.allclose(got, ref, rtol=1e-3, atol=1e-2 * np.sqrt(k)), name
        t_cpu = best(lambda: outcore.matmul(*operands, backend="cpu", threads=args.threads), args.runs)
        t_np = best(ref_fn, args.runs)
        row = (f"{name:<14} {dt:<8} {f'{m}x{n}x{k}':<18} {t_cpu:8.3f} s {flop / t_cpu / 1e9:6.1f} GF "
               f"{t_np:8.3f} s {flop / t_np / 1e9:6.1f} GF {t_np / t_cpu:9.2f}")
        if gpu:
            t_gpu = best(lambda: outcore.matmul(*operands, backend="cuda"), args.runs)
            row += f" {t_gpu:8.3f} s {flop / t_gpu / 1e9:6.1f} GF"
        print(row, flush=True)


if __name__ == "__main__":
    main()
