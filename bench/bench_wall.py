#!/usr/bin/env python3
"""Wall time as users see it: for a ladder of Gram jobs (about 10 ms to 60 s of work on a GPU
host's CPU), the whole process's wall time beside the job's own `seconds`, its phases
(`--json`'s "phases": docs/cli.md, "Where the time goes") and the cost model's prediction
(what `--explain` prints), on the CPU, on one GPU and on all of them.

    python3 bench/bench_wall.py [--outcore build/outcore] [--runs 3] [--max-work 60]
        [--backends cpu,cuda1,cudaall,auto] [--dir /dev/shm/bench_wall] [--json]

Each job is A·Aᵀ of a packed .npy written under --dir (removed at the end); dense jobs write
an int32 .npy there, top-k jobs a top-10 jaccard .npz. Per row: the best of --runs processes
by wall time, with that run's job seconds, phases and prediction. --max-work leaves out the
rungs whose work is estimated past that many seconds on the CPU (at 1e12 bit-MACs a second
per core); GPU rows are left out without a usable GPU (the line says why). "auto" runs
`--backend auto` (the cost model's choice, on as many devices as it picks). The table's
"pred/wall" is the prediction over the process's wall time; the lines after it give, per job,
the worst of those ratios and auto's wall time over the fastest backend's.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# (rows, bits, output): from about 1e8 to 1e15 bit-MACs.
LADDER = [
    (2000, 512, "dense"),
    (4627, 216, "dense"),
    (8000, 4096, "dense"),
    (10000, 16384, "topk"),
    (20000, 65536, "topk"),
    (40000, 131072, "topk"),
    (100000, 200000, "topk"),
]
PHASES = ["cuda_start", "read", "prepare", "setup", "compute", "output", "teardown"]
SECONDS = re.compile(r"([0-9.e+-]+) (us|ms|s|min)\b")
UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}


def predicted(explain, backend):
    """The predicted seconds of the backend that ran, from the --explain paragraph."""
    if backend == "cpu":
        m = re.search(r"-> ([0-9.e+-]+ (?:us|ms|s|min)) on \d+ cores", explain)
    else:
        m = re.search(r"cuda:\d+ ([0-9.e+-]+ (?:us|ms|s|min)) \(start-up", explain)
    if not m:
        return float("nan")
    v = SECONDS.match(m.group(1))
    return float(v.group(1)) * UNIT[v.group(2)]


def make_input(path, rows, bits, seed):
    rng = np.random.default_rng(seed)
    packed = np.packbits(rng.random((rows, bits)) < 0.05, axis=1)
    np.save(path, packed)


def run_job(outcore, path, bits, output, out_dir, args):
    out = out_dir / ("c.npy" if output == "dense" else "k.npz")
    cmd = [outcore, "gram", str(path), "--bits", str(bits), "-o", str(out), "--json", "--explain", *args]
    if output == "topk":
        cmd += ["--metric", "jaccard", "--topk", "10"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall": wall, "job": s["seconds"], "phases": s["phases"], "backend": s["backend"],
            "predicted": predicted(s["backend_explain"], s["backend"])}, None


def summarize(rows_out):
    """Per job: the prediction's worst ratio to the wall time (either way) over the rows that
    ran, and auto's wall time over the fastest fixed backend's."""
    for job, by in rows_out.items():
        ratios = [max(r["predicted"] / r["wall"], r["wall"] / r["predicted"]) for r in by.values()
                  if r["predicted"] == r["predicted"] and r["predicted"] > 0]
        fixed = [r["wall"] for n, r in by.items() if n != "auto"]
        line = f"# {job}: prediction within {max(ratios):.2f}x of wall" if ratios else f"# {job}: no prediction"
        if "auto" in by and fixed:
            # auto runs one device: its pick is the cpu or the cuda1 row; that row's wall time
            # over the fastest row's is the choice's cost, free of auto's own run-to-run noise
            picked = by.get("cpu" if by["auto"]["backend"] == "cpu" else "cuda1")
            line += f"; auto ran on {by['auto']['backend']}, {by['auto']['wall'] / min(fixed):.2f}x the fastest backend"
            if picked:
                line += f" (its pick's row {picked['wall'] / min(fixed):.2f}x)"
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outcore", default=os.environ.get("OUTCORE_BIN", "build/outcore"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-work", type=float, default=60.0, help="CPU seconds of work at most per rung")
    ap.add_argument("--backends", default="cpu,cuda1,cudaall")
    ap.add_argument("--dir", default="/dev/shm/bench_wall" if os.path.isdir("/dev/shm") else "/tmp/bench_wall")
    ap.add_argument("--json", action="store_true", help="one JSON object per row instead of the table")
    a = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    work_dir = Path(a.dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    configs = {"cpu": ["--backend", "cpu"], "cuda1": ["--backend", "cuda", "--device", "0"],
               "cudaall": ["--backend", "cuda", "--devices", "all"], "auto": ["--backend", "auto"]}
    rows_out = {}
    try:
        if not a.json:
            print(f"# {a.outcore}, {cores} cores, best of {a.runs} by wall time; seconds")
            print("| job | where | ran on | predicted | job | wall | pred/wall | wall - job | " + " | ".join(PHASES) + " |")
            print("|---" * (8 + len(PHASES)) + "|")
        # A machine's first job measures the host's rates once (docs/cost-model.md): done here,
        # outside the table, so that the rows show what every later job costs.
        warm = work_dir / "warm.npy"
        make_input(warm, 64, 512, 99)
        r, why = run_job(a.outcore, warm, 512, "dense", work_dir, ["--backend", "cpu"])
        print(f"# first job (a 64 x 512 warm-up; measures the rates when none are cached): "
              f"{r['wall']:.3f} s wall, setup {r['phases']['setup']:.3f} s" if r else f"# warm-up failed: {why}")
        skipped = set()
        for i, (rows, bits, output) in enumerate(LADDER):
            if rows * rows / 2 * bits / (1e12 * cores) > a.max_work:
                continue
            path = work_dir / f"a{rows}x{bits}.npy"
            make_input(path, rows, bits, i)
            for name in a.backends.split(","):
                if name in skipped:
                    continue
                best, why = None, None
                for _ in range(a.runs):
                    r, why = run_job(a.outcore, path, bits, output, work_dir, configs[name])
                    if r is None:
                        break
                    if best is None or r["wall"] < best["wall"]:
                        best = r
                job = f"{rows}x{bits} {output}"
                if best is None:
                    print(f"# {name}: left out ({why})", file=sys.stderr)
                    skipped.add(name)
                    continue
                rows_out.setdefault(job, {})[name] = best
                if a.json:
                    print(json.dumps({"job": job, "where": name, **best}))
                    continue
                ph = " | ".join(f"{best['phases'][p]:.4f}" for p in PHASES)
                print(f"| {job} | {name} | {best['backend']} | {best['predicted']:.4f} | {best['job']:.4f} | "
                      f"{best['wall']:.4f} | {best['predicted'] / best['wall']:.2f} | {best['wall'] - best['job']:.4f} | {ph} |")
            path.unlink()
        if not a.json:
            summarize(rows_out)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
