"""A threshold result past 4 GiB: the .npz's ZIP64 fields, read back by zipfile and numpy.

Every pair i < j of a 33000-row matrix passes counts >= 0: 544,483,500 pairs, so the rows and
cols entries are 4.36 GB each and the values entry starts 8.7 GB into the file. The sizes and
offsets then live only in the ZIP64 extra fields and end records, which the small outputs of
the other tests never need. The job writes 11 GB and the check reads all of it (about a
minute and 12 GB of memory on a 2-core machine), so it runs only when OUTCORE_LARGE_TESTS=1;
otherwise it is reported skipped.
"""
import os
import shutil
import zipfile

import numpy as np
import pytest

from conftest import run, summary_json

N, WORDS = 33000, 1  # rows, 64-bit words per row
PAIRS = N * (N - 1) // 2
FOUR_GIB = 1 << 32

pytestmark = pytest.mark.skipif(os.environ.get("OUTCORE_LARGE_TESTS") != "1",
                                reason="writes an 11 GB file: set OUTCORE_LARGE_TESTS=1 to run it")


def test_threshold_npz_past_four_gib(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    assert free > 24e9, f"{tmp_path} has {free / 1e9:.1f} GB free; the output and its side files need 24 GB"
    rng = np.random.default_rng(20261121)
    packed = rng.integers(0, 256, size=(N, 8 * WORDS), dtype=np.uint8)
    np.save(tmp_path / "a.npy", packed)
    out = tmp_path / "all.npz"
    proc = run("gram", tmp_path / "a.npy", "--bits", 64 * WORDS, "--threshold", 0, "-o", out, "--json")
    assert summary_json(proc)["pairs"] == PAIRS

    with zipfile.ZipFile(out) as z:
        info = {i.filename: i for i in z.infolist()}
        assert sorted(info) == ["cols.npy", "rows.npy", "values.npy"]
        assert info["rows.npy"].file_size > FOUR_GIB and info["values.npy"].header_offset > FOUR_GIB
        assert all(i.compress_type == zipfile.ZIP_STORED for i in info.values())
        assert z.testzip() is None  # every entry's CRC-32 matches its bytes

    popcount = np.array([bin(v).count("1") for v in range(256)], dtype=np.int32)
    with np.load(out) as f:
        rows, cols, values = f["rows"], f["cols"], f["values"]
    assert rows.dtype == cols.dtype == np.int64 and values.dtype == np.int32
    assert len(rows) == len(cols) == len(values) == PAIRS
    start = 0
    for i in range(N):  # row i's pairs: (i, j) for j > i, in order, with popcount(a_i & a_j)
        end = start + N - 1 - i
        assert (rows[start:end] == i).all(), f"row {i}: a pair of another row among its pairs"
        assert np.array_equal(cols[start:end], np.arange(i + 1, N)), f"row {i}: columns out of order"
        want = popcount[packed[i + 1:] & packed[i]].sum(axis=1)
        assert np.array_equal(values[start:end], want), f"row {i}: a count differs"
        start = end
