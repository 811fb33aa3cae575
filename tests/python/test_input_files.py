"""The Python binding on inputs given as files and packed bits: packbits arrays and their
errors, .npy paths, the real markers file, text files as numpy and pandas write them, and the
warning of an index column read under binarize=True.

Run by ctest with PYTHONPATH=<repo>/python and OUTCORE_LIBRARY=<build>/liboutcore.so, as
test_binding.py is.
"""
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import outcore

from gram_refs import exact, random01, rng  # noqa: F401 (rng: a fixture)

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
DATA_DIR = SOURCE_DIR / "tests" / "data"


@pytest.mark.parametrize("m", [1, 8, 1001, 1024])
def test_packed_input(rng, m):
    a = random01(rng, 33, m)
    b = random01(rng, 21, m)
    pa, pb = np.packbits(a, axis=1), np.packbits(b, axis=1)
    assert np.array_equal(outcore.gram(pa, pb, bits=m, metric="jaccard"), exact(a, b, "jaccard"))
    if m % 8:
        # A bit past column m-1 is a column bits=m would drop: an error, never a silent loss.
        pb[4, -1] |= 1
        with pytest.raises(outcore.InputError,
                           match=rf"B: row 4 has bit {8 * pb.shape[1] - 1} set but cols {m} \(Python: bits={m}\)"):
            outcore.gram(pa, pb, bits=m)
    # Every other row of the packed array: read in place through its row stride.
    assert np.array_equal(outcore.gram(pa[::2], bits=m), exact(a[::2]))


def test_packed_input_errors(rng):
    packed = np.packbits(random01(rng, 10, 100), axis=1)
    with pytest.raises(outcore.InputError, match="bytes per row"):
        outcore.gram(packed, bits=200)
    with pytest.raises(outcore.InputError, match="uint8"):
        outcore.gram(packed.astype(np.int8), bits=100)
    with pytest.raises(outcore.InputError, match="bits"):
        outcore.gram(packed, bits=0)


def test_npy_paths(tmp_path, rng):
    a = random01(rng, 40, 300, dtype=np.bool_)
    b = random01(rng, 25, 300, dtype=np.int8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "packed.npy", np.packbits(a, axis=1))
    assert np.array_equal(outcore.gram(str(tmp_path / "a.npy"), metric="cosine"), exact(a, metric="cosine"))
    assert np.array_equal(outcore.gram(tmp_path / "a.npy", tmp_path / "b.npy"), exact(a, b))
    assert np.array_equal(outcore.gram(tmp_path / "a.npy", b), exact(a, b))  # a file and an array
    assert np.array_equal(outcore.gram(tmp_path / "packed.npy", bits=300), exact(a))


def test_real_markers_file():
    path = DATA_DIR / "aflp_markers.txt"
    assert path.exists(), f"{path} is missing from the repository"
    a = np.loadtxt(path, dtype=np.uint8, ndmin=2)
    got = outcore.gram(path, metric="jaccard")
    assert got.shape == (a.shape[0], a.shape[0])
    assert np.array_equal(got, exact(a, metric="jaccard"))
    assert np.array_equal(got, outcore.gram(a, metric="jaccard"))



def test_text_files_as_numpy_and_pandas_write_them(tmp_path, rng):
    """np.savetxt's floats (1.000000000000000000e+00) are ones, as in a float .npy; pandas'
    header line and index column are refused naming them, binarize=True never suggested."""
    a = random01(rng, 12, 9)
    np.savetxt(tmp_path / "a.txt", a.astype(np.float64))
    assert np.array_equal(outcore.gram(tmp_path / "a.txt"), exact(a))
    header = ",".join(f"c{j}" for j in range(9))
    rows = [",".join(map(str, row)) for row in a]
    (tmp_path / "header.csv").write_text("\n".join([header, *rows]) + "\n")  # to_csv(index=False)
    with pytest.raises(outcore.InputError, match=r"'c0' at row 0, column 0 is not a number.*header line"):
        outcore.gram(tmp_path / "header.csv", binarize=True)
    (tmp_path / "index.csv").write_text("\n".join(f"{i},{row}" for i, row in enumerate(rows)) + "\n")
    with pytest.raises(outcore.InputError, match=r"'2' at row 2, column 0 is not 0 or 1.*counts up the rows") as exc:
        outcore.gram(tmp_path / "index.csv")
    assert "binarize" not in str(exc.value)


def test_an_index_column_under_binarize_warns_at_the_callers_line(tmp_path, rng):
    """binarize=True reads an index column as data, as asked: the call returns the result and
    a RuntimeWarning names the file at the caller's line (the job runs on a worker thread);
    under a filter that makes it an error the call raises it, and the next call, of 0/1 data,
    warns of nothing; an explicit Context warns the same."""
    a = random01(rng, 12, 9)
    rows = [",".join(map(str, row)) for row in a]
    (tmp_path / "index.csv").write_text("\n".join(f"{i},{row}" for i, row in enumerate(rows)) + "\n")
    (tmp_path / "plain.csv").write_text("\n".join(rows) + "\n")
    with_index = np.hstack([(np.arange(12) != 0)[:, None], a]).astype(np.uint8)
    with pytest.warns(RuntimeWarning, match=r"index\.csv: the first column counts up the rows \(0, 1, 2, \.\.\.\)") \
            as seen:
        got = outcore.gram(tmp_path / "index.csv", binarize=True)
    assert len(seen) == 1 and seen[0].filename == __file__, [(w.filename, str(w.message)) for w in seen]
    assert np.array_equal(got, exact(with_index))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="counts up the rows"):
            outcore.gram(tmp_path / "index.csv", binarize=True)
        assert np.array_equal(outcore.gram(tmp_path / "plain.csv", binarize=True), exact(a))
    with outcore.Context() as ctx, pytest.warns(RuntimeWarning, match="counts up the rows"):
        ctx.gram(tmp_path / "index.csv", binarize=True)
