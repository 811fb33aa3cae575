#!/usr/bin/env python3
"""trace_tiles.py - summarises an `OUTCORE_TRACE=tiles` log of a CUDA job: how many tiles,
their kernels' time summed and median, the gaps between kernels (when no tile's kernel ran)
by size, and the phase lines of the trace.

    OUTCORE_TRACE=tiles outcore gram A.npy ... 2> trace.txt; python3 bench/trace_tiles.py trace.txt
"""
import re
import statistics
import sys

TILE = re.compile(r"outcore cuda: tile (\d+) ([\d.]+)-([\d.]+) ms ([\d.]+)")


def main(path):
    spans, other = [], []
    for line in open(path, errors="replace"):
        m = TILE.search(line)
        if m:
            spans.append((float(m.group(2)), float(m.group(3)), int(m.group(1))))
        elif line.startswith("outcore"):
            other.append(line.rstrip())
    for line in other:
        print(line[:300])
    if not spans:
        print("no tile lines (run with OUTCORE_TRACE=tiles on a CUDA job)")
        return
    spans.sort()
    lengths = [e - s for s, e, _ in spans]
    gaps, end = [], spans[0][1]
    for s, e, _ in spans[1:]:
        if s > end:
            gaps.append(s - end)
        end = max(end, e)
    total = spans[-1][1] - spans[0][0]
    print(f"tiles {len(spans)}: span {total:.2f} ms, kernels summed {sum(lengths):.2f} ms, median {statistics.median(lengths):.3f} ms,"
          f" max {max(lengths):.3f} ms")
    bins = [0.01, 0.05, 0.1, 0.5, 1, 5, float("inf")]
    counts = [0] * len(bins)
    sums = [0.0] * len(bins)
    for g in gaps:
        k = next(i for i, b in enumerate(bins) if g <= b)
        counts[k] += 1
        sums[k] += g
    print(f"gaps: {len(gaps)}, {sum(gaps):.2f} ms in all; by size (ms): " +
          ", ".join(f"<={b}: {c} ({s:.2f} ms)" for b, c, s in zip(bins, counts, sums) if c))


if __name__ == "__main__":
    main(sys.argv[1])
