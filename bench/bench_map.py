#!/usr/bin/env python3
"""`outcore map` on the CPU against numpy, numexpr (when installed) and the machine's STREAM
triad, on the same arrays, in the same run.

Each case is timed end to end in memory through outcore.map (arrays in, array out) and, for
the seed's job, file to file through the CLI (.npy in /dev/shm, wall time of the process).
Rates count the bytes a single pass must move (inputs read once, output written once). The
triad reference is a C STREAM triad (a = b + s*c, OpenMP over all cores) compiled here with
cc -O3 -fopenmp; without a compiler it is left out and the table says so.

With --gpu (and a usable GPU) the memory-bound cases also run with backend="cuda" under
--gpu-mem: host arrays in, host array out, every byte crossing PCIe once, from numpy's
pageable memory and from pinned memory (outcore.empty_pinned). Their reference is
the pinned PCIe limit for those bytes, both directions overlapped, from `outcore devices
--bandwidth --json` in the same run: max(in / h2d, out / d2h, (in + out) / both ways).
The reductions of `a` (sum over all elements, the last axis and axis 0; max) have in / h2d as
their limit.

--reductions-only keeps the GPU reductions' rows alone (with --gpu): the CPU cases, the
element-wise GPU rows and the file-to-file row are left out, and only `a` is pinned.

Usage: bench_map.py [--binary PATH] [--rows N] [--cols M] [--runs R] [--dir /dev/shm]
                    [--gpu] [--gpu-mem 1G] [--reductions-only]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

TRIAD_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]); int runs = atoi(argv[2]);
    double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8), best = 1e30;
    #pragma omp parallel for
    for (long i = 0; i < n; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
    for (int r = 0; r < runs; r++) {
        double t = omp_get_wtime();
        #pragma omp parallel for
        for (long i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
        t = omp_get_wtime() - t;
        if (t < best) best = t;
    }
    printf("%.6f %d %g\n", 24.0 * n / best / 1e9, omp_get_max_threads(), a[n / 2]);
    return 0;
}
"""


def find_binary(explicit):
    if explicit:
        return explicit
    for build in sorted(os.listdir(os.path.join(HERE, ".."))):
        path = os.path.join(HERE, "..", build, "outcore")
        if build.startswith("build") and os.access(path, os.X_OK):
            return os.path.normpath(path)
    sys.exit("bench_map.py: no built outcore found; pass --binary")


def triad_gbs(n):
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "triad.c"), os.path.join(d, "triad")
        open(src, "w").write(TRIAD_C)
        if subprocess.run(["cc", "-O3", "-fopenmp", src, "-o", exe], capture_output=True).returncode != 0:
            return None, 0
        out = subprocess.run([exe, str(n), "5"], capture_output=True, text=True).stdout.split()
        return float(out[0]), int(out[1])


def pcie_limits(binary):
    """Pinned GB/s (h2d, d2h, both ways) of GPU 0 measured now, or None without a GPU."""
    import json
    proc = subprocess.run([binary, "devices", "--bandwidth", "--json"], capture_output=True, text=True)
    gpus = json.loads(proc.stdout).get("gpus", []) if proc.returncode == 0 else []
    bw = gpus[0].get("bandwidth_gbps") if gpus else None
    return (bw["h2d_pinned"], bw["d2h_pinned"], bw["bidirectional_pinned"]) if bw else None


def gpu_rows(args, outcore, env, shape, nbytes):
    """The memory-bound cases with backend="cuda", beside the pinned PCIe limit: host arrays
    in numpy's (pageable) memory, then the same in pinned memory (outcore.empty_pinned),
    copied straight, and pinned but staged as pageable ones are (OUTCORE_PINNED_DIRECT=0)."""
    limits = pcie_limits(find_binary(args.binary))
    if not limits:
        print("# GPU rows: no usable GPU (or no bandwidth figures): skipped")
        return
    h2d, d2h, both = limits
    print(f"# GPU: pinned PCIe {h2d:.1f} GB/s host->device, {d2h:.1f} device->host, {both:.1f} both ways "
          f"(`outcore devices --bandwidth`, this run); --gpu-mem {args.gpu_mem}")
    t = time.perf_counter()
    wanted = {"a": env["a"]} if args.reductions_only else env
    pinned = {name: outcore.empty_pinned(arr.shape, arr.dtype) for name, arr in wanted.items()}
    pin_s = time.perf_counter() - t
    for name, arr in wanted.items():
        pinned[name][...] = arr
    pinned_out = outcore.empty_pinned(shape if not args.reductions_only else (1,))
    print(f"# pinned arrays: {sum(p.nbytes for p in pinned.values()) / 1e9 + pinned_out.nbytes / 1e9:.1f} GB "
          f"allocated in {pin_s:.2f} s (not in the times below)")
    print("| case (cuda, host arrays) | memory | outcore s | PCIe GB/s | limit s | % of limit | equal to cpu |")
    print("|---|---|---|---|---|---|---|")
    kinds = [("pageable", env, None, "1"), ("pinned", pinned, pinned_out, "1"), ("pinned, staged", pinned, pinned_out, "0")]
    elementwise = [] if args.reductions_only else [("a * b", 2), ("a * b + c", 2), ("where(a > 0, a, b) * 2", 2)]
    for expr, inputs in elementwise:
        ref = outcore.map(expr, backend="cpu", **env)
        for kind, arrays, out, direct in kinds:
            os.environ["OUTCORE_PINNED_DIRECT"] = direct
            out = np.empty(shape) if out is None else out
            outcore.map(expr, out=out, backend="cuda", gpu_mem=args.gpu_mem, **arrays)  # compile and warm up
            t = best_of(lambda: outcore.map(expr, out=out, backend="cuda", gpu_mem=args.gpu_mem, **arrays), args.runs)
            bytes_in, bytes_out = inputs * nbytes, nbytes
            limit = max(bytes_in / h2d, bytes_out / d2h, (bytes_in + bytes_out) / both) / 1e9
            print(f"| {expr} | {kind} | {t:.3f} | {(bytes_in + bytes_out) / t / 1e9:.1f} | {limit:.3f} | "
                  f"{100 * limit / t:.0f}% | {'yes' if np.array_equal(out, ref) else 'NO'} |")
    os.environ.pop("OUTCORE_PINNED_DIRECT", None)
    # Reductions: the input crosses up once, nothing of its size comes down.
    print("| reduction of a (cuda) | memory | outcore s | PCIe GB/s | limit s | % of limit | equal to cpu |")
    print("|---|---|---|---|---|---|---|")
    for op, axis in [("sum", None), ("sum", -1), ("sum", 0), ("max", None)]:
        ref = outcore.map("a", a=env["a"], reduce=op, axis=axis, backend="cpu")
        for kind, arrays, _, _ in kinds[:2]:
            def job(a=arrays["a"]):
                return outcore.map("a", a=a, reduce=op, axis=axis, backend="cuda", gpu_mem=args.gpu_mem)
            got = job()  # compile and warm up
            t = best_of(job, args.runs)
            limit = nbytes / h2d / 1e9
            # All elements of a 2-D float sum: row sums added pairwise (docs/map.md), not bit for bit.
            same = np.isclose(got, ref, rtol=1e-12) if (op, axis) == ("sum", None) else np.array_equal(got, ref)
            print(f"| {op}, axis {axis} | {kind} | {t:.3f} | {nbytes / t / 1e9:.1f} | {limit:.3f} | "
                  f"{100 * limit / t:.0f}% | {'yes' if same else 'NO'} |")
    del pinned, pinned_out


def best_of(fn, runs):
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    ap.add_argument("--gpu", action="store_true", help="also the memory-bound cases on the GPU")
    ap.add_argument("--gpu-mem", default="1G")
    ap.add_argument("--reductions-only", action="store_true", help="with --gpu: the GPU reductions' rows alone")
    args = ap.parse_args()
    os.environ.setdefault("OUTCORE_LIBRARY", os.path.join(os.path.dirname(find_binary(args.binary)), "liboutcore.so"))
    import outcore
    try:
        import numexpr
        numexpr.set_num_threads(os.cpu_count())  # all cores, as outcore uses
    except ImportError:
        numexpr = None

    rng = np.random.default_rng(0)
    shape = (args.rows, args.cols)
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape)
    c = rng.standard_normal(shape[1])
    nbytes = a.nbytes
    triad, threads = triad_gbs(a.size)
    print(f"# bench_map: {shape[0]} x {shape[1]} float64 ({nbytes / 1e9:.2f} GB per array), "
          f"{os.cpu_count()} cores, outcore {outcore.__version__} cpu {outcore.cpu_isa()}")
    print(f"# STREAM triad (C, OpenMP, {threads} threads): " + (f"{triad:.1f} GB/s" if triad else "no C compiler"))
    print("# numexpr " + (f"{numexpr.__version__}, {numexpr.get_num_threads()} threads" if numexpr else
                          "not installed (pip install numexpr; or PYTHONPATH to a folder holding it)"))
    cases = [("a * b", 3), ("a * b + c", 3), ("where(a > 0, a, b) * 2", 3), ("sqrt(abs(a)) * b + 1", 3),
             ("exp(a) + sin(b)", 3)]
    env = {"a": a, "b": b, "c": c}
    if args.reductions_only:
        if args.gpu:
            gpu_rows(args, outcore, env, shape, nbytes)
        return
    print("| case | outcore s | GB/s | % triad | numpy s | numexpr s | vs numpy | vs numexpr |")
    print("|---|---|---|---|---|---|---|---|")
    npfuncs = {"where": np.where, "sqrt": np.sqrt, "abs": np.abs, "exp": np.exp, "sin": np.sin}
    for expr, arrays in cases:
        out = np.empty(shape)
        t_oc = best_of(lambda: outcore.map(expr, out=out, **env), args.runs)
        t_np = best_of(lambda: eval(expr, {}, {**npfuncs, **env}), args.runs)  # noqa: S307
        t_ne = best_of(lambda: numexpr.evaluate(expr, local_dict=env, out=out), args.runs) if numexpr else None
        moved = nbytes * arrays
        gbs = moved / t_oc / 1e9
        ne = f"{t_ne:.3f}" if t_ne else "-"
        vs_ne = f"{t_ne / t_oc:.2f}x" if t_ne else "-"
        pct = f"{100 * gbs / triad:.0f}%" if triad else "-"
        print(f"| {expr} | {t_oc:.3f} | {gbs:.1f} | {pct} | {t_np:.3f} | {ne} | {t_np / t_oc:.2f}x | {vs_ne} |")

    if args.gpu:
        gpu_rows(args, outcore, env, shape, nbytes)

    # The seed's job end to end: two .npy files to a .npy, one process.
    pa, pb, pc = (os.path.join(args.dir, f"bench_map_{n}.npy") for n in "abc")
    np.save(pa, a)
    np.save(pb, b)
    walls = []
    for _ in range(args.runs):
        t = time.perf_counter()
        subprocess.run([find_binary(args.binary), "map", "a * b", f"a={pa}", f"b={pb}", "-o", pc, "--quiet"], check=True)
        walls.append(time.perf_counter() - t)
    t_np = best_of(lambda: a * b, args.runs)
    print(f"| file a * b (CLI, {args.dir}) | {min(walls):.3f} | {3 * nbytes / min(walls) / 1e9:.1f} | "
          f"{100 * 3 * nbytes / min(walls) / 1e9 / triad:.0f}% | {t_np:.3f} (in memory) | - | {t_np / min(walls):.2f}x | - |"
          if triad else f"| file a * b | {min(walls):.3f} | | | {t_np:.3f} | | {t_np / min(walls):.2f}x | |")
    assert np.array_equal(np.load(pc, mmap_mode="r")[:1000], (a * b)[:1000])
    for p in (pa, pb, pc):
        os.remove(p)


if __name__ == "__main__":
    main()
