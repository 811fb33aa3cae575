#!/usr/bin/env python3
"""Runs bench_cpu and numpy float32 ``A @ A.T`` (OpenBLAS) on the same bits; prints the ratio.

bench_cpu writes each A·Aᵀ case's matrix with --dump; this script unpacks it to float32,
times ``A @ A.T`` (numpy hands that product to BLAS; each run multiplies the full n x n
result), and prints one table with the effective rates of both and their ratio.

Usage: bench_cpu.py [--binary PATH] [--large] [--runs N] [--numpy-runs N] [--threads N]
"""
import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def find_binary(explicit):
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for build in sorted(os.listdir(os.path.join(here, ".."))):
        path = os.path.join(here, "..", build, "bench", "bench_cpu")
        if build.startswith("build") and os.access(path, os.X_OK):
            return os.path.normpath(path)
    sys.exit("bench_cpu.py: no built bench_cpu found; pass --binary")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_name():
    try:
        info = np.show_config(mode="dicts")
        blas = info["Build Dependencies"]["blas"]
        return "%s %s" % (blas.get("name", "?"), blas.get("version", ""))
    except Exception:  # older numpy: no dict mode
        return "BLAS of numpy %s" % np.__version__


def time_numpy(path, n, m, runs):
    row_bytes = (m + 7) // 8
    bits = np.fromfile(path, dtype=np.uint8).reshape(n, row_bytes)
    a = np.unpackbits(bits, axis=1, count=m).astype(np.float32)
    del bits
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        c = a @ a.T
        times.append(time.perf_counter() - t0)
        del c
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary")
    ap.add_argument("--large", action="store_true", help="add n=8192, m=131072")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of bench_cpu per case")
    ap.add_argument("--numpy-runs", type=int, default=1, help="timed runs of numpy per case")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()

    binary = find_binary(args.binary)
    with tempfile.TemporaryDirectory(prefix="bench_cpu_") as tmp:
        cmd = [binary, "--runs", str(args.runs), "--threads", str(args.threads), "--dump", tmp]
        if args.large:
            cmd.append("--large")
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        print(out, end="")
        rows = re.findall(r"^(A\.At) n=(\d+) p=\d+ m=(\d+)\s+discard\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
        print()
        print("numpy %s with %s, threads %s" % (np.__version__, blas_name(),
                                                os.environ.get("OPENBLAS_NUM_THREADS", "default")))
        print("%-30s %9s %12s %12s %8s" % ("case", "numpy s", "numpy T/s", "outcore T/s", "ratio"))
        for _, n, m, _t, _raw, eff in rows:
            n, m, eff = int(n), int(m), float(eff)
            t = time_numpy(os.path.join(tmp, "A_%dx%d.bits" % (n, m)), n, m, args.numpy_runs)
            rate = n * n * m / t * 1e-12
            print("%-30s %9.3f %12.3f %12.3f %7.1fx" % ("A.At n=%d m=%d" % (n, m), t, rate, eff, eff / rate))
            sys.stdout.flush()
    print("\nmachine: %s, %d cores, %s" % (cpu_model(), os.cpu_count(), time.strftime("%Y-%m-%d")))


if __name__ == "__main__":
    main()
