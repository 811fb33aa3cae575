"""outcore gen: rows from per-row random streams, streamed to the file in blocks on threads.

The bytes must not depend on the thread count or the block size (OUTCORE_GEN_BLOCK_ROWS); the
packed file is numpy.packbits of the unpacked one; the density is the asked one within a few
standard deviations; each planted copy's nearest row is its source; a file that cannot be
written gives one line, a nonzero exit and no file.
"""
import os

import numpy as np
import pytest

from conftest import run

GEN = ["gen", "--rows", 300, "--cols", 1001, "--density", 0.3, "--plant", 12, "--flip", 0.02, "--seed", 11]


def gen_bytes(path, *extra, env=None):
    proc = run(*GEN, *extra, "-o", path, env=env)
    assert proc.stdout == "" and proc.stderr == ""  # no progress bar off a terminal
    return path.read_bytes()


@pytest.mark.parametrize("packed", [[], ["--packed"]], ids=["bytes", "packed"])
def test_same_bytes_for_any_threads_and_blocks(tmp_path, packed):
    one = gen_bytes(tmp_path / "t1.npy", "--threads", 1, *packed)
    assert gen_bytes(tmp_path / "t3.npy", "--threads", 3, *packed) == one
    for rows in (1, 5, 299):
        small = gen_bytes(tmp_path / f"b{rows}.npy", "--threads", 3, *packed, env={"OUTCORE_GEN_BLOCK_ROWS": str(rows)})
        assert small == one, f"block of {rows} rows"
    assert sorted(os.listdir(tmp_path)) == sorted(["t1.npy", "t3.npy", "b1.npy", "b5.npy", "b299.npy"])


def test_packed_is_packbits_of_bytes(tmp_path):
    gen_bytes(tmp_path / "u.npy")
    gen_bytes(tmp_path / "p.npy", "--packed")
    u, p = np.load(tmp_path / "u.npy"), np.load(tmp_path / "p.npy")
    assert u.shape == (300, 1001) and u.dtype == np.uint8 and set(np.unique(u)) <= {0, 1}
    assert p.shape == (300, 126) and p.dtype == np.uint8
    assert np.array_equal(p, np.packbits(u, axis=1))
    # gram reads the packed file back with --bits as the byte file.
    run("gram", tmp_path / "u.npy", "-o", tmp_path / "cu.npy", "--quiet")
    run("gram", tmp_path / "p.npy", "--bits", 1001, "-o", tmp_path / "cp.npy", "--quiet")
    assert np.array_equal(np.load(tmp_path / "cu.npy"), np.load(tmp_path / "cp.npy"))


@pytest.mark.parametrize("density", [0.0, 0.01, 0.05, 0.5, 0.9, 1.0])
def test_density(tmp_path, density):
    rows, cols = 200, 5003
    run("gen", "--rows", rows, "--cols", cols, "--density", density, "--seed", 3, "-o", tmp_path / "d.npy")
    a = np.load(tmp_path / "d.npy")
    p = round(density * 4096) / 4096  # the density resolved to 1/4096, as gen --help says
    n = rows * cols
    sigma = np.sqrt(p * (1 - p) / n)
    assert abs(a.mean() - p) <= 6 * sigma + 1e-12, (a.mean(), p, sigma)


def test_planted_copies_are_nearest_to_their_sources(tmp_path):
    plant, cols, flip = 15, 2000, 0.02
    run("gen", "--rows", 400, "--cols", cols, "--density", 0.2, "--plant", plant, "--flip", flip, "--seed", 21,
        "-o", tmp_path / "a.npy")
    a = np.load(tmp_path / "a.npy").astype(np.int32)
    # Hamming distances between all rows; a row's nearest other row.
    ones = a.sum(axis=1)
    dist = ones[:, None] + ones[None, :] - 2 * (a @ a.T)
    np.fill_diagonal(dist, cols + 1)
    nearest = dist.argmin(axis=1)
    # A copy differs from its source in at most flips columns; two unrelated rows of density
    # 0.2 in about 0.32 * cols. So the close pairs are the planted ones.
    close = {tuple(sorted((i, int(nearest[i])))) for i in range(len(a)) if dist[i, nearest[i]] <= flip * cols}
    assert len(close) == plant
    rows_in_pairs = [r for pair in close for r in pair]
    assert len(set(rows_in_pairs)) == 2 * plant  # disjoint pairs
    for i, j in close:
        assert nearest[i] == j and nearest[j] == i


def test_bad_output_path_one_line_no_file(tmp_path):
    proc = run(*GEN, "-o", tmp_path / "missing" / "a.npy", check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and "a.npy" in lines[0] and "does not exist" in lines[0]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fault", ["OUTCORE_FAULT_WRITE=2:enospc", "OUTCORE_FAULT_WRITE=1:eio",
                                   "OUTCORE_FAULT_TRUNCATE=1:enospc", "OUTCORE_FAULT_FSYNC=1:eio",
                                   "OUTCORE_FAULT_RENAME=1:eio"])
def test_write_failure_one_line_no_file(tmp_path, fault):
    name, value = fault.split("=")
    proc = run(*GEN, "--packed", "--threads", 2, "-o", tmp_path / "a.npy", check=False,
               env={name: value, "OUTCORE_GEN_BLOCK_ROWS": "16"})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "a.npy" in lines[0], proc.stderr
    assert ("disk full" if "enospc" in value else "I/O error") in lines[0]
    assert os.listdir(tmp_path) == []


def test_usage_errors(tmp_path):
    for extra in (["--threads", 0], ["--threads", "x"]):
        proc = run(*GEN, *extra, "-o", tmp_path / "a.npy", check=False)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    proc = run(*GEN, "-o", tmp_path / "a.npy", check=False, env={"OUTCORE_GEN_BLOCK_ROWS": "0"})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []
