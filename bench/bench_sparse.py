#!/usr/bin/env python3
"""End-to-end benchmark of the sparse Gram path: file in, .npz out.

For each job it times, in fresh processes (start-up, reading and writing included):
  outcore --algorithm sparse, outcore --algorithm dense (the packed-bit kernels), and the
  scipy pipeline (scipy.io.mmread, A @ A.T, then the same top-k or threshold selection
  vectorised with numpy, written with numpy.savez),
prints each one's wall time and peak memory (the child's ru_maxrss), and checks that the
three results are the same arrays (the scipy one is the reference of the semantics:
docs/topk.md). Jobs:
  debian_depends.mtx   top-10 jaccard; threshold jaccard >= 0.5
  reuters_docterm.mtx  top-10 jaccard
  generated            155,287 x 117,659 with 206,941 ones (uniform), top-5 jaccard
  --powerlaw           1,000,000 x 1,000,000 with 10,000,000 ones (Zipf columns), top-10

usage: bench/bench_sparse.py [--outcore build/outcore] [--skip-dense] [--powerlaw] [--only NAME]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")

SCIPY_JOB = r'''
import sys, time, resource
import numpy as np, scipy.io, scipy.sparse as sp
path, mode, value, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
t0 = time.perf_counter()
A = scipy.io.mmread(path).tocsr().astype(np.int32)
A.data[:] = 1
A.sum_duplicates(); A.data[:] = 1
n = A.shape[0]
pop = np.diff(A.indptr).astype(np.int64)
t1 = time.perf_counter()
C = (A @ A.T).tocsr()
C.sort_indices()
t2 = time.perf_counter()
stored = C.nnz
empty = np.flatnonzero(pop == 0)

def scores_of(rows, cols, c):
    # metric.h: c / (|a| + |b| - c) in double, rounded once to float32 (c > 0 here)
    return (c / (pop[rows] + pop[cols] - c).astype(np.float64)).astype(np.float32)

if mode == "topk":
    k = int(value)
    idx = np.full((n, k), -1, np.int64); sc = np.zeros((n, k), np.float32)
    step = 4096
    short = []
    for r0 in range(0, n, step):
        sub = C[r0:r0 + step]
        counts = np.diff(sub.indptr)
        rows = np.repeat(np.arange(r0, r0 + sub.shape[0]), counts)
        cols = sub.indices.astype(np.int64); c = sub.data.astype(np.int64)
        keep = rows != cols
        rows, cols, c = rows[keep], cols[keep], c[keep]
        s = scores_of(rows, cols, c)
        order = np.lexsort((cols, -s, rows))
        rows, cols, s = rows[order], cols[order], s[order]
        first = np.searchsorted(rows, np.arange(r0, r0 + sub.shape[0]))
        rank = np.arange(len(rows)) - first[rows - r0]
        take = rank < k
        idx[rows[take], rank[take]] = cols[take]; sc[rows[take], rank[take]] = s[take]
        have = np.bincount(rows[take] - r0, minlength=sub.shape[0])
        short.extend((r0 + np.flatnonzero(have < k)).tolist())
    # rows with fewer than k candidates: the columns of count 0 by column (for an empty row
    # under jaccard the other empty rows first, which score 1), vectorised over those rows:
    # the first 2k + 1 columns of a pool always hold enough that are neither taken nor the row
    short = np.array(short, np.int64)
    if len(short):
        have = (idx[short] >= 0).sum(1)
        is_empty = pop == 0
        w = 2 * k + 1
        nonempty_first = np.flatnonzero(~is_empty)[:w] if len(empty) else np.arange(min(w, n))
        plain = np.arange(min(w, n))
        for group in (short[~is_empty[short]], short[is_empty[short]]) if len(empty) else (short,):
            if not len(group):
                continue
            g_have = (idx[group] >= 0).sum(1)
            if is_empty[group[0]] and len(empty):
                ones = np.tile(empty[:w + 1], (len(group), 1))
                ones = np.where(ones == group[:, None], n, ones)              # the row itself
                ones.sort(1); ones = ones[:, :k]
                pool = np.concatenate([ones, np.tile(nonempty_first, (len(group), 1))], 1)
                val = np.concatenate([np.ones(ones.shape, np.float32), np.zeros((len(group), len(nonempty_first)), np.float32)], 1)
                pool = np.where(pool >= n, -1, pool)
            else:
                pool = np.tile(plain, (len(group), 1))
                val = np.zeros(pool.shape, np.float32)
                taken = idx[group]
                bad = (pool[:, :, None] == taken[:, None, :]).any(2) | (pool == group[:, None])
                pool = np.where(bad, -1, pool)
            ok = pool >= 0
            rank = np.cumsum(ok, 1) - 1 + g_have[:, None]
            sel = ok & (rank < k)
            r, c = np.nonzero(sel)
            idx[group[r], rank[r, c]] = pool[r, c]
            sc[group[r], rank[r, c]] = val[r, c]
    np.savez(out, indices=idx, scores=sc)
else:
    T = np.float32(value)
    parts_r, parts_c, parts_v = [], [], []
    step = 4096
    for r0 in range(0, n, step):
        sub = C[r0:r0 + step]
        rows = np.repeat(np.arange(r0, r0 + sub.shape[0]), np.diff(sub.indptr))
        cols = sub.indices.astype(np.int64); c = sub.data.astype(np.int64)
        keep = cols > rows
        rows, cols, c = rows[keep], cols[keep], c[keep]
        s = scores_of(rows, cols, c)
        ok = s >= T
        parts_r.append(rows[ok]); parts_c.append(cols[ok]); parts_v.append(s[ok])
    # two empty rows score 1 under jaccard
    ei, ej = np.triu_indices(len(empty), 1)
    parts_r.append(empty[ei].astype(np.int64)); parts_c.append(empty[ej].astype(np.int64))
    parts_v.append(np.ones(len(ei), np.float32))
    rows = np.concatenate(parts_r); cols = np.concatenate(parts_c); vals = np.concatenate(parts_v)
    order = np.lexsort((cols, rows))
    np.savez(out, rows=rows[order], cols=cols[order], values=vals[order])
t3 = time.perf_counter()
print(f"read {t1 - t0:.3f} s, A @ A.T {t2 - t1:.3f} s ({stored} stored entries), selection and write {t3 - t2:.3f} s",
      file=sys.stderr)
'''


def run(cmd):
    """Wall time and peak resident memory of one child process (GNU time's %M: the child's own
    high-water mark, which the parent's rusage does not give once it has forked big children)."""
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "PEAK_KB %M", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = proc.stderr.strip().splitlines()
    peak = int(lines[-1].split()[1]) * 1024 if lines and lines[-1].startswith("PEAK_KB") else 0
    err = "\n".join(l for l in lines if not l.startswith("PEAK_KB") and not l.startswith("Command exited"))
    if proc.returncode != 0:
        return wall, peak, f"FAILED ({proc.returncode}): {err.strip()[-300:]}"
    return wall, peak, err.strip()


def same(a, b):
    x, y = np.load(a), np.load(b)
    return sorted(x.files) == sorted(y.files) and all(
        x[k].dtype == y[k].dtype and x[k].shape == y[k].shape and np.array_equal(x[k], y[k]) for k in x.files)


def generate(path, rows, cols, ones, zipf, seed):
    rng = np.random.default_rng(seed)
    r = rng.integers(0, rows, ones)
    if zipf:
        w = 1.0 / np.arange(1, cols + 1)
        c = rng.choice(cols, ones, p=w / w.sum())
    else:
        c = rng.integers(0, cols, ones)
    key = np.unique(r.astype(np.int64) * cols + c)
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n")
        f.write(f"{rows} {cols} {len(key)}\n")
        np.savetxt(f, np.stack([key // cols + 1, key % cols + 1], 1), fmt="%d")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--outcore", default=os.path.join(HERE, "..", "build", "outcore"))
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--skip-scipy", action="store_true")
    ap.add_argument("--powerlaw", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--repeat", type=int, default=1, help="outcore runs per job (the best is shown)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_sparse_")
    gen = os.path.join(tmp, "generated_155k.mtx")
    generate(gen, 155287, 117659, 206941, False, 1)
    jobs = [
        # the last field: whether the dense path runs (the generated matrices would take it
        # hours: n^2 m / 2 is 1.4e15 bit-MACs for the 155k one; --explain gives its prediction)
        ("debian top-10 jaccard", os.path.join(DATA, "debian_depends.mtx"), "topk", 10, True),
        ("debian threshold jaccard >= 0.5", os.path.join(DATA, "debian_depends.mtx"), "threshold", 0.5, True),
        ("reuters top-10 jaccard", os.path.join(DATA, "reuters_docterm.mtx"), "topk", 10, True),
        ("generated 155k x 118k top-5 jaccard", gen, "topk", 5, False),
    ]
    if args.powerlaw:
        pl = os.path.join(tmp, "powerlaw_1m.mtx")
        generate(pl, 1000000, 1000000, 10000000, True, 2)
        jobs.append(("power-law 1M x 1M top-10 jaccard", pl, "topk", 10, False))
    print(f"{'job':38} {'run':14} {'seconds':>9} {'peak MB':>9}  note")
    for name, path, mode, value, with_dense in jobs:
        if args.only and args.only not in name:
            continue
        results = {}
        flag = ["--topk", str(int(value))] if mode == "topk" else ["--threshold", str(value)]
        runs = [("outcore sparse", "sparse")] + ([] if args.skip_dense or not with_dense else [("outcore dense", "dense")])
        for label, algo in runs:
            out = os.path.join(tmp, f"{algo}.npz")
            cmd = [args.outcore, "gram", path, "--metric", "jaccard", *flag, "-o", out, "--algorithm", algo,
                   "--quiet", "--json"]
            wall, peak, note = min(run(cmd) for _ in range(args.repeat))
            results[label] = (wall, out)
            print(f"{name:38} {label:14} {wall:9.3f} {peak / 1e6:9.1f}  {note[:100]}", flush=True)
        if not args.skip_scipy:
            out = os.path.join(tmp, "scipy.npz")
            wall, peak, note = run([sys.executable, "-c", SCIPY_JOB, path, mode, str(value), out])
            results["scipy"] = (wall, out)
            print(f"{name:38} {'scipy':14} {wall:9.3f} {peak / 1e6:9.1f}  {note[:140]}", flush=True)
        ref = results["outcore sparse"]
        for label, (wall, out) in results.items():
            if label == "outcore sparse" or not os.path.exists(out):
                continue
            print(f"{name:38} {'':14} sparse is {wall / ref[0]:.1f}x faster than {label}; same result: "
                  f"{'yes' if same(ref[1], out) else 'NO'}", flush=True)
        for _, out in results.values():
            if os.path.exists(out):
                os.remove(out)


if __name__ == "__main__":
    main()
