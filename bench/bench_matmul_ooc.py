#!/usr/bin/env python3
"""outcore matmul's CPU backend out of core against the system BLAS in core, same product.

The reference is one `cblas_?gemm` call of the library outcore loads (libopenblas.so.0 first,
src/matmul/cpu/mm_blas.c) on the whole operands in memory, on every core: the rate a
program that holds A, B and C in memory gets. outcore runs as users run it, from the .npy
files to a .npy file (`outcore matmul A.npy B.npy -o C.npy --backend cpu`), in core (no
budget: one tile) and under each `--host-mem` budget given, which splits the product into
tiles and K panels; each row gives the job's seconds (`--json`), the process's wall time,
the plan, the seconds its CPU backend spent reading panels and in the BLAS (OUTCORE_TRACE's
sums), and the job's rate over the BLAS's. A host's BLAS rate can move by a fifth within
minutes, so each run of outcore is paired with a reference call just before it, and the last
column is the median of the pairs' ratios, then in brackets the best run over the reference's
best call. `--plan-calls` adds, under each row, the BLAS alone on that plan's calls (its tiles
from their K panels, the panels in memory): what the plan's call shapes allow, the reads and
the output's creation aside. The result is checked against the reference.

    python3 bench/bench_matmul_ooc.py [--outcore build/outcore] [--size M N K]
        [--dtype float64|float32] [--host-mem 256M,64M] [--runs 3] [--plan-calls]
        [--dir /dev/shm/bench_ooc]
"""
import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BLAS_NAMES = ["libopenblas.so.0", "libcblas.so.3", "libblas.so.3", "libmkl_rt.so"]
ROW_MAJOR, NO_TRANS = 101, 111


def load_blas():
    for name in BLAS_NAMES:
        try:
            lib = ctypes.CDLL(name)
            lib.cblas_dgemm
            return name, lib
        except (OSError, AttributeError):
            continue
    return None, None


def blas_gemm(lib, a, b, c):
    """c = a @ b by one cblas call (row-major, contiguous)."""
    m, k = a.shape
    n = b.shape[1]
    fn, scalar = (lib.cblas_dgemm, ctypes.c_double) if a.dtype == np.float64 else (lib.cblas_sgemm, ctypes.c_float)
    ptr = ctypes.c_void_p
    fn(ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, scalar(1.0), ptr(a.ctypes.data), k, ptr(b.ctypes.data), n,
       scalar(0.0), ptr(c.ctypes.data), n)


def blas_gemm_at(lib, a, lda, b, ldb, c_ptr, ldc, h, w, kw, beta):
    """C[h x w] at address c_ptr (row stride ldc) = a[h x kw] @ b[kw x w] + beta C, by one
    cblas call (a and b of C's dtype)."""
    fn, scalar = (lib.cblas_dgemm, ctypes.c_double) if a.dtype == np.float64 else (lib.cblas_sgemm, ctypes.c_float)
    ptr = ctypes.c_void_p
    fn(ROW_MAJOR, NO_TRANS, NO_TRANS, h, w, kw, scalar(1.0), ptr(a.ctypes.data), lda, ptr(b.ctypes.data), ldb,
       scalar(beta), ptr(c_ptr), ldc)


def plan_of(binary, a, b, budget):
    """outcore's plan for the budget (`--plan --json`): tile rows, tile columns, K panel."""
    cmd = [binary, "matmul", str(a), str(b), "--backend", "cpu", "--plan", "--json"]
    if budget:
        cmd += ["--host-mem", budget]
    p = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return p["tile_rows"], p["tile_cols"], p["k_panel"]


def blas_on_plan(lib, C, plan, k):
    """The BLAS alone on a plan's calls, its panels already in memory: every tile of C (in
    place, with C's row stride) from its K panels, as outcore's CPU backend calls it. Returns
    the seconds: what the plan's calls allow, the reads and the output's creation aside."""
    m, n = C.shape
    tm, tn, kp = plan
    a = np.ones((tm, kp), C.dtype)
    b = np.ones((kp, tn), C.dtype)
    t = time.perf_counter()
    for i0 in range(0, m, tm):
        for j0 in range(0, n, tn):
            at = C.ctypes.data + (i0 * n + j0) * C.itemsize
            for k0 in range(0, k, kp):
                blas_gemm_at(lib, a, kp, b, tn, at, n, min(tm, m - i0), min(tn, n - j0), min(kp, k - k0),
                             0.0 if k0 == 0 else 1.0)
    return time.perf_counter() - t


def best_of(runs, fn):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        r = fn()
        times.append(time.perf_counter() - t)
    return min(times), r


def run_outcore(binary, a, b, c, budget):
    cmd = [binary, "matmul", str(a), str(b), "-o", str(c), "--backend", "cpu", "--json", "-q"]
    if budget:
        cmd += ["--host-mem", budget]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OUTCORE_TRACE="1"))
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"outcore failed: {p.stderr.strip()}")
    js = json.loads(p.stdout.strip().splitlines()[-1])
    # OUTCORE_TRACE's sums of the CPU backend: "outcore matmul cpu: PHASE   SECONDS s"
    js["spans"] = {}
    for line in p.stderr.splitlines():
        if line.startswith("outcore matmul cpu: "):
            phase, secs = line[len("outcore matmul cpu: "):].rsplit(None, 2)[:2]
            js["spans"][phase.strip()] = float(secs)
    return wall, js


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outcore", default=os.environ.get("OUTCORE_BIN", "build/outcore"))
    ap.add_argument("--size", type=int, nargs=3, default=[4096, 4096, 4096], metavar=("M", "N", "K"))
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--host-mem", default="256M,64M", help="budgets, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--plan-calls", action="store_true",
                    help="also time the BLAS alone on each plan's calls (tiles and K panels, panels in memory)")
    ap.add_argument("--dir", default="/dev/shm/bench_ooc" if os.path.isdir("/dev/shm") else "/tmp/bench_ooc")
    a = ap.parse_args()
    name, lib = load_blas()
    if lib is None:
        sys.exit("no CBLAS library found (" + ", ".join(BLAS_NAMES) + ")")
    m, n, k = a.size
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    try:
        rng = np.random.default_rng(1)
        A = rng.standard_normal((m, k)).astype(a.dtype)
        B = rng.standard_normal((k, n)).astype(a.dtype)
        np.save(d / "a.npy", A)
        np.save(d / "b.npy", B)
        C = np.empty((m, n), a.dtype)
        blas_gemm(lib, A, B, C)  # warm-up: the BLAS's threads and pages
        ref_s = float("inf")  # the best of the reference calls each outcore run is paired with
        flops = 2.0 * m * n * k
        cores = os.cpu_count()
        operands = (A.nbytes + B.nbytes + C.nbytes) / 2**20
        print(f"# {m} x {n} x {k} {a.dtype}, A + B + C = {operands:.0f} MiB, {cores} cores, {name}; "
              f"best of {a.runs}, each outcore run paired with a reference call; files in {d}")
        print("| run | plan | job s | wall s | panels read s | multiplied s | GFLOP/s "
              "| of the BLAS in core: median of pairs (best over best) |")
        print("|---|---|---|---|---|---|---|---|")
        tol = 1e-10 if a.dtype == "float64" else 1e-3
        scratch = np.zeros_like(C) if a.plan_calls else None
        if scratch is not None:
            scratch.fill(1)  # its pages faulted in before any timing, as the reference's C is
        results = []
        for budget in [""] + [x for x in a.host_mem.split(",") if x]:
            rows, ratios, calls = [], [], []
            for _ in range(a.runs):
                paired, _ = best_of(1, lambda: blas_gemm(lib, A, B, C))
                ref_s = min(ref_s, paired)
                rows.append(run_outcore(a.outcore, d / "a.npy", d / "b.npy", d / "c.npy", budget))
                ratios.append(paired / rows[-1][1]["seconds"])
                if a.plan_calls:
                    calls.append(blas_on_plan(lib, scratch, plan_of(a.outcore, d / "a.npy", d / "b.npy", budget), k))
            got = np.load(d / "c.npy", mmap_mode="r")
            err = float(np.max(np.abs(got - C)) / max(1e-30, float(np.max(np.abs(C)))))
            if err > tol:
                sys.exit(f"outcore's result differs from the BLAS's (budget {budget or 'none'}): relative {err:.2e}")
            results.append((budget, rows, statistics.median(ratios), min(calls) if calls else None))
        print(f"| {name} cblas gemm, in memory | one call | {ref_s:.3f} | | | {ref_s:.3f} | "
              f"{flops / ref_s / 1e9:.1f} | 1.00 |")
        for budget, rows, median, calls_s in results:
            wall, js = min(rows, key=lambda r: r[1]["seconds"])
            plan = f"{js['tiles']} tiles" + (f", --host-mem {budget}" if budget else ", no budget")
            sp = js["spans"]
            print(f"| outcore matmul --backend cpu | {plan} | {js['seconds']:.3f} | {wall:.3f} | "
                  f"{sp.get('panels read', float('nan')):.3f} | {sp.get('multiplied', float('nan')):.3f} | "
                  f"{flops / js['seconds'] / 1e9:.1f} | {median:.2f} ({ref_s / js['seconds']:.2f}) |")
            if calls_s is not None:
                print(f"| {name} alone on that plan's calls, panels in memory | {plan} | {calls_s:.3f} | | | "
                      f"{calls_s:.3f} | {flops / calls_s / 1e9:.1f} | ({ref_s / calls_s:.2f}) |")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
