"""scipy.sparse inputs are checked before scipy touches them: its routines trust their
arrays, so an edited CSR crashed the process (sum_duplicates over an indptr past the data),
an out-of-range COO row was dropped without a word, and a stale has_canonical_format hid a
duplicate (a 2 read as a 1). Values of a dtype refused for arrays are refused here too."""
import numpy as np
import pytest

import outcore

sp = pytest.importorskip("scipy.sparse")


def base():
    return sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 0, 1]], np.int8))


def refused(a, *words):
    with pytest.raises(outcore.InputError) as exc:
        outcore.gram(a, backend="cpu")
    text = str(exc.value)
    assert "\n" not in text and all(w in text for w in words), text


def test_an_indptr_past_the_data_is_refused_not_a_crash():
    a = base()
    a.indptr = np.array([0, 100000000, 3, 6], a.indptr.dtype)
    refused(a, "indptr", "do not make a compressed matrix")


def test_a_decreasing_indptr_is_refused():
    a = base()
    a.indptr = np.array([0, 2, 1, 6], a.indptr.dtype)
    refused(a, "indptr")


@pytest.mark.parametrize("fmt, field, value, words", [
    ("coo", "row", 5, ("row holds 5", "outside 0..2")),
    ("coo", "row", -100000000, ("row holds -100000000",)),
    ("coo", "col", 100000000, ("col holds 100000000",)),
    ("csc", "indices", 5, ("indices holds 5",)),
    ("csr", "indices", 9, ("indices holds 9", "outside 0..3")),
])
def test_an_index_past_the_shape_is_refused(fmt, field, value, words):
    a = sp.coo_matrix(np.eye(3, dtype=np.int8)).asformat(fmt) if fmt != "csr" else base()
    getattr(a, field)[0] = value
    refused(a, *words)


def test_float_indices_are_refused():
    a = base()
    a.indices = a.indices.astype(np.float64)
    refused(a, "indices must be a 1-D array of integers")


def test_a_stale_canonical_flag_does_not_hide_a_duplicate():
    a = base()
    assert a.has_canonical_format
    a.indices[1] = 0  # row 0 now holds column 0 twice: scipy reads the value 2
    assert a.toarray()[0, 0] == 2
    refused(a, "value 2 at row 0, column 0")
    np.testing.assert_array_equal(outcore.gram(a, binarize=True, backend="cpu"),
                                  outcore.gram((a.toarray() != 0).astype(np.uint8), backend="cpu"))


@pytest.mark.parametrize("dtype", [np.complex128, np.float16, np.longdouble])
def test_value_dtypes_refused_for_arrays_are_refused(dtype):
    a = sp.csr_matrix((np.ones(2, dtype), [0, 1], [0, 1, 2]), shape=(2, 3))
    refused(a, str(np.dtype(dtype)), "expected bool, integers, float32 or float64")


def test_inputs_are_left_as_they_were():
    a = base()
    a.indices[1] = 0
    before = (a.data.copy(), a.indices.copy(), a.indptr.copy())
    outcore.gram(a, binarize=True, backend="cpu")
    for x, y in zip(before, (a.data, a.indices, a.indptr)):
        np.testing.assert_array_equal(x, y)


def test_lil_and_dok_still_read():
    dense = np.array([[1, 0, 1], [0, 1, 1]], np.uint8)
    want = outcore.gram(dense, backend="cpu")
    for fmt in ("lil", "dok", "dia", "bsr"):
        np.testing.assert_array_equal(outcore.gram(sp.csr_matrix(dense).asformat(fmt), backend="cpu"), want)


def test_a_wide_matrix_keeps_to_the_dense_path_within_its_budget():
    """The sparse path's plan holds tables of every column: a matrix of 10^6 columns and four
    ones under a 10 MB budget runs dense under auto (the tables would take 24 MB), and the
    sparse algorithm asked for is refused naming the tables, the budget and the way out."""
    m = 10**6
    a = sp.coo_matrix((np.ones(4, np.int8), ([0, 0, 1, 2], [0, m - 1, m - 1, 7])), shape=(3, m)).tocsr()
    stats = {}
    got = outcore.gram(a, backend="cpu", metric="jaccard", host_mem="10M", stats=stats)
    assert "sparse" not in stats["backend_desc"], stats  # the dense kernels ran
    np.testing.assert_allclose(got, [[1, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])
    with pytest.raises(outcore.InputError, match="sparse algorithm's tables of 1000000 columns"):
        outcore.gram(a, backend="cpu", metric="jaccard", host_mem="10M", algorithm="sparse")


def test_an_edited_bsr_is_refused_not_a_crash():
    """BSR holds the same arrays as CSR, over blocks: an indptr past its blocks crashed the
    process in scipy's conversion (a double free)."""
    a = sp.bsr_matrix(np.eye(4, dtype=np.int8), blocksize=(2, 2))
    np.testing.assert_array_equal(outcore.gram(a, backend="cpu"), np.eye(4, dtype=np.int32))
    a.indptr[1] = 100
    refused(a, "indptr")
