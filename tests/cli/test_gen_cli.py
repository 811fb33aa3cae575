"""outcore gen: rows from per-row random streams, streamed to the file in blocks on threads.

The bytes must not depend on the thread count or the block size (OUTCORE_GEN_BLOCK_ROWS); the
packed file is numpy.packbits of the unpacked one; the density is the asked one within a few
standard deviations; each planted copy's nearest row is its source, and differs from it in
exactly round(F x M) distinct bits; a file that cannot be written gives one line, a nonzero
exit and no file, at once, before the planted pairs are picked.
"""
import os
import resource
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import outcore_bin, run

GEN = ["gen", "--rows", 300, "--cols", 1001, "--density", 0.3, "--plant", 12, "--flip", 0.02, "--seed", 11]


def gen_bytes(path, *extra, env=None, args=GEN):
    proc = run(*args, *extra, "-o", path, env=env)
    # no progress bar off a terminal: the summary line alone, as other commands print it
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and proc.stderr.startswith("outcore: gen "), proc.stderr
    assert proc.stderr.rstrip().endswith(f"-> {path}") and "planted pair" in proc.stderr
    return path.read_bytes()


@pytest.mark.parametrize("packed", [[], ["--packed"]], ids=["bytes", "packed"])
@pytest.mark.parametrize("flip", [0.02, 0.7], ids=["flip-0.02", "flip-0.7"])
def test_same_bytes_for_any_threads_and_blocks(tmp_path, packed, flip):
    """Past half the columns the copies draw the columns that stay (flip 0.7): the same bytes."""
    def gen_with_flip(path, *extra, env=None):
        return gen_bytes(path, *extra, env=env, args=[*GEN[:GEN.index("--flip") + 1], flip, "--seed", 11])

    one = gen_with_flip(tmp_path / "t1.npy", "--threads", 1, *packed)
    assert gen_with_flip(tmp_path / "t3.npy", "--threads", 3, *packed) == one
    for rows in (1, 5, 299):
        small = gen_with_flip(tmp_path / f"b{rows}.npy", "--threads", 3, *packed,
                              env={"OUTCORE_GEN_BLOCK_ROWS": str(rows)})
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


def flips(flip, cols):
    """The bits gen --help says a planted copy has flipped: F x M rounded, halves up, F as
    written in decimal (0.29 x 50 is 14.5, though 14.499999999999998 in binary)."""
    from decimal import ROUND_HALF_UP, Decimal
    return int((Decimal(str(flip)) * cols).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@pytest.mark.parametrize("cols, flip", [(c, f) for c in (3, 8, 64, 1001, 4099) for f in (0.01, 0.2, 0.5, 0.77, 1.0)] +
                         [(50, 0.29), (50, 0.57), (1000, 0.0045), (1000, 0.0035)])  # decimal halves
def test_flip_flips_exactly_that_many_distinct_bits(tmp_path, cols, flip):
    """With density 0 every row is zero but the copies: each holds its flipped bits, so a
    copy has exactly round(F x M) ones (a column drawn twice would flip back); with density 1
    as many zeros."""
    rows, plant = 60, 25
    want = flips(flip, cols)
    for density, bit in ((0, 1), (1, 0)):
        run("gen", "--rows", rows, "--cols", cols, "--density", density, "--plant", plant, "--flip", flip,
            "--seed", 4, "-o", tmp_path / "f.npy")
        a = np.load(tmp_path / "f.npy")
        changed = (a == bit).sum(axis=1)
        if want == 0:
            assert not changed.any()
            continue
        assert sorted(changed) == [0] * (rows - plant) + [want] * plant, (density, sorted(changed))


def test_flip_one_makes_the_complement(tmp_path):
    """--flip 1: each copy is its source with every bit flipped; the example of 4 rows of 8."""
    run("gen", "--rows", 4, "--cols", 8, "--density", 1, "--plant", 2, "--flip", 1, "-o", tmp_path / "c.npy")
    a = np.load(tmp_path / "c.npy")
    assert sorted(a.sum(axis=1)) == [0, 0, 8, 8], a
    run("gen", "--rows", 300, "--cols", 77, "--density", 0.4, "--plant", 40, "--flip", 1, "--seed", 8,
        "-o", tmp_path / "d.npy")
    a = np.load(tmp_path / "d.npy")
    rows = {r.tobytes(): i for i, r in enumerate(a)}
    complements = {i for i, r in enumerate(a) if (1 - r).tobytes() in rows}
    assert len(complements) == 80  # the 40 copies and their 40 sources


def test_flipped_columns_are_spread_over_the_row(tmp_path):
    """The flipped columns of the copies are drawn uniformly: over 500 copies of 200 columns
    with 10 flips each, every column is flipped about 25 times."""
    run("gen", "--rows", 1000, "--cols", 200, "--density", 0, "--plant", 500, "--flip", 0.05, "--seed", 12,
        "-o", tmp_path / "s.npy")
    per_column = np.load(tmp_path / "s.npy").sum(axis=0)
    assert per_column.sum() == 500 * 10
    assert per_column.min() >= 5 and per_column.max() <= 55, (per_column.min(), per_column.max())


def test_seed_default_is_one(tmp_path):
    """gen --help states --seed's default, 1, and leaving --seed out gives --seed 1's file."""
    help_text = run("gen", "--help").stdout
    seed = help_text[help_text.index("  --seed S"):]
    assert "(default 1)" in " ".join(seed.split("\n  --")[0].split()), seed
    base = ["gen", "--rows", 50, "--cols", 300, "--density", 0.3, "--plant", 5, "-q"]
    run(*base, "-o", tmp_path / "none.npy")
    run(*base, "--seed", 1, "-o", tmp_path / "one.npy")
    run(*base, "--seed", 2, "-o", tmp_path / "two.npy")
    none = (tmp_path / "none.npy").read_bytes()
    assert none == (tmp_path / "one.npy").read_bytes() != (tmp_path / "two.npy").read_bytes()


# A job whose planted-pair table alone takes seconds and gigabytes (20 million pairs): a
# refusal of its output must come before the table is built.
HUGE = ["gen", "--rows", 100_000_000, "--cols", 10, "--density", 0.5, "--plant", 20_000_000, "-q"]


def refused_at_once(cwd, *args):
    """Runs outcore in cwd, killed past 5 s; returns (exit status, stderr lines, seconds)."""
    start = time.monotonic()
    try:
        proc = subprocess.run([outcore_bin(), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=5)
    except subprocess.TimeoutExpired:
        pytest.fail(f"outcore {' '.join(map(str, args))} still ran after 5 s: the refusal came late")
    return proc.returncode, proc.stderr.strip().splitlines(), time.monotonic() - start


@pytest.mark.parametrize("output, code, words", [
    ("nofolder/x.npy", 2, ["nofolder/x.npy", "folder nofolder does not exist"]),
    ("x.txt", 2, ["x.txt", ".npy"]),
    ("adir", 2, ["adir", "is a folder"]),
    ("ro.npy", 2, ["ro.npy", "read-only"]),
], ids=["missing-folder", "extension", "folder", "read-only"])
def test_bad_output_refused_before_the_planted_pairs(tmp_path, output, code, words):
    (tmp_path / "adir").mkdir()
    (tmp_path / "ro.npy").write_bytes(b"old")
    (tmp_path / "ro.npy").chmod(0o444)
    before = sorted(os.listdir(tmp_path))
    rc, lines, seconds = refused_at_once(tmp_path, *HUGE, "-o", output)
    assert rc == code and len(lines) == 1 and all(w in lines[0] for w in words), (rc, lines)
    assert seconds < 3, seconds
    assert sorted(os.listdir(tmp_path)) == before and (tmp_path / "ro.npy").read_bytes() == b"old"


def test_output_past_the_free_space_refused_before_the_planted_pairs(tmp_path):
    """10^8 x 10^8 bytes (10 PB) fit no file system: refused with both figures, at once."""
    args = list(HUGE)
    args[args.index("--cols") + 1] = 100_000_000
    rc, lines, seconds = refused_at_once(tmp_path, *args, "-o", "big.npy")
    assert rc == 1 and len(lines) == 1, (rc, lines)
    assert "big.npy" in lines[0] and "needs 10.0 PB" in lines[0] and "free" in lines[0], lines
    assert seconds < 3, seconds
    assert os.listdir(tmp_path) == []


def test_planted_pairs_past_memory_one_line_no_file(tmp_path):
    """An output that fits, with planted pairs whose table does not fit in the memory the
    process may take (ulimit -v 300M): one line, exit 1, no file."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))

    proc = subprocess.run([outcore_bin(), "gen", "--rows", "10000000", "--cols", "8", "--density", "0.5", "--plant",
                           "4000000", "--packed", "-o", str(tmp_path / "m.npy")],
                          capture_output=True, text=True, preexec_fn=limit, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and lines == ["outcore: gen: out of memory for 4000000 planted pairs"], proc.stderr
    assert os.listdir(tmp_path) == []


def test_interrupt_while_the_pairs_are_picked(tmp_path):
    """SIGINT once the output is reserved, while 8 million planted pairs are picked (seconds):
    the job ends at once (exit 130, one line) and leaves no file."""
    job = subprocess.Popen([outcore_bin(), "gen", "--rows", "16000000", "--cols", "1", "--density", "0.5",
                            "--plant", "8000000", "--packed", "-q", "-o", "i.npy"], cwd=tmp_path,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not os.listdir(tmp_path) and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert job.poll() is None and os.listdir(tmp_path), "the temporary output never appeared"
    time.sleep(0.3)
    start = time.monotonic()
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=30)
    assert time.monotonic() - start < 3, time.monotonic() - start
    assert job.returncode == 130 and err.strip().splitlines() == ["outcore: cancelled"], (job.returncode, err)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("packed", [[], ["--packed"]], ids=["bytes", "packed"])
def test_row_too_large_names_the_file_and_the_row(tmp_path, packed):
    """A row of 2^63 - 1 columns cannot be made of 64-bit words: one line naming the file and
    the row's size, not the writer's internal fields."""
    proc = run("gen", "--rows", 2, "--cols", 2**63 - 1, "--density", 0.5, *packed, "-o", tmp_path / "t.npy",
               check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, (proc.returncode, proc.stderr)
    assert "t.npy" in lines[0] and "too large" in lines[0] and str(2**63 - 1) in lines[0], lines
    assert "block_rows" not in lines[0] and "threads" not in lines[0], lines
    assert os.listdir(tmp_path) == []


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
