"""gram's inputs and out= as a review found them wrong: an out memmap over the input file, false
overlap alarms, numpy's and Python's exceptions where InputError is due, int8 values named as
bytes, bool bytes other than 0/1, duplicate CSR entries, and explain refusing gram's arguments.
"""
import hashlib
import inspect
import os
import re

import numpy as np
import pytest

import outcore


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- out=
def test_out_memmap_over_the_input_file_is_refused_untouched(tmp_path):
    n = 200
    a = (np.random.default_rng(0).random((n, 4 * n)) < 0.5).astype(np.uint8)
    path = tmp_path / "w.npy"
    np.save(path, a)
    offset = path.stat().st_size - a.nbytes
    before = digest(path)
    out = np.memmap(path, np.int32, "r+", offset, (n, n))
    with pytest.raises(outcore.InputError, match=r"^out maps the input file of 'A' \(.*w\.npy\)"):
        outcore.gram(str(path), out=out, host_mem="2M", binarize=True)
    with pytest.raises(outcore.InputError, match=r"^out maps the input file of 'B'"):
        outcore.gram(a[:, :n], str(path), out=out[:, :n])
    del out
    assert digest(path) == before


def test_out_beside_the_input_in_one_buffer_is_accepted():
    buf = np.zeros((20, 120), np.uint8)
    a = buf[:, :37]
    a[::3, ::2] = 1
    assert np.may_share_memory(a, buf[:, 40:]) and not np.shares_memory(a, buf[:, 40:])
    out = buf[:, 40:].view(np.int32)
    result = outcore.gram(a, out=out)
    assert result is out
    ones = a.astype(np.int32)
    assert (out == ones @ ones.T).all()
    with pytest.raises(outcore.InputError, match="shares memory with A"):  # a true overlap still is refused
        outcore.gram(buf[:, :41], out=buf[:, 40:].view(np.int32))


# ---------------------------------------------------------------- what is not a matrix
def test_ragged_lists_are_an_input_error():
    with pytest.raises(outcore.InputError, match="^A: the nested lists cannot be read as a rectangular array of numbers"):
        outcore.gram([[1, 0], [1]])
    with pytest.raises(outcore.InputError, match="^B: the nested lists"):
        outcore.gram([[1, 0]], [[1, 0], [1]])


@pytest.mark.parametrize("value, shown", [(None, "NoneType"), ({}, "dict"), (5, "int")])
def test_what_is_no_matrix_is_named_by_its_type(value, shown):
    with pytest.raises(outcore.InputError, match=f"^A must be a 2-D array.*scipy.sparse matrix or a path; got {shown}$"):
        outcore.gram(value)


class FakeSparse:
    """What _is_sparse looks for, and nothing else."""
    shape, nnz = (2, 2), 1

    def tocsr(self):
        return self


def test_sparse_look_alike_is_an_input_error():
    with pytest.raises(outcore.InputError, match="^A: FakeSparse has tocsr, nnz and shape but is no scipy.sparse "
                                                 "matrix: its tocsr.. lacks data"):
        outcore.gram(FakeSparse())


# ---------------------------------------------------------------- values
def test_int8_values_are_named_as_int8(tmp_path):
    a = np.array([[1, -1]], np.int8)
    with pytest.raises(outcore.InputError, match=r"^A: value -1 at row 0, column 1 is not 0 or 1") as exc:
        outcore.gram(a)
    assert "255" not in str(exc.value)
    np.save(tmp_path / "a.npy", a)  # as the .npy reader names it
    with pytest.raises(outcore.InputError, match="value -1 at row 0, column 1"):
        outcore.gram(str(tmp_path / "a.npy"))
    with pytest.raises(outcore.InputError, match=r"^B: value -128 at row 1, column 0 is not 0 or 1"):
        outcore.gram(np.ones((2, 3), np.int8), np.array([[0, 1, 0], [-128, 1, 5]], np.int8)[:, ::-1][:, ::-1])


def test_bool_bytes_other_than_0_and_1_are_true():
    raw = np.array([[1, 2, 0, 255], [0, 7, 1, 0]], np.uint8)
    a = raw.view(bool)
    assert (outcore.gram(a) == [[3, 1], [1, 2]]).all()
    assert (outcore.gram(a, a[:1]) == [[3], [1]]).all()
    assert (outcore.gram(raw != 0) == [[3, 1], [1, 2]]).all()


def test_csr_duplicates_are_summed_as_scipy_does():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.csr_matrix(([1.0, 1.0], [1, 1], [0, 2, 2, 2]), shape=(3, 4))
    assert m.toarray()[0, 1] == 2
    for form in (m, m.tocoo(), m.toarray()):
        with pytest.raises(outcore.InputError, match="value 2.* at row 0, column 1 is not 0 or 1"):
            outcore.gram(form)
    assert m.nnz == 2 and not m.has_canonical_format  # the caller's matrix is left as it was
    expected = np.zeros((3, 3), np.int32)
    expected[0, 0] = 1
    assert (outcore.gram(m, binarize=True) == expected).all()
    # Duplicates that sum to 0 are a zero, as scipy reads them.
    z = sp.csr_matrix(([1.0, -1.0, 1.0], [1, 1, 2], [0, 3, 3, 3]), shape=(3, 4))
    assert (outcore.gram(z) == expected).all()


# ---------------------------------------------------------------- explain
@pytest.fixture
def no_rate_cache(monkeypatch):
    monkeypatch.setenv("OUTCORE_COST_CACHE", "off")


def test_explain_takes_every_gram_argument(no_rate_cache, tmp_path):
    gram_params = list(inspect.signature(outcore.gram).parameters.values())
    explain_params = list(inspect.signature(outcore.explain).parameters.values())
    def shown(params):
        return [(p.name, p.kind, p.default) for p in params]
    assert shown(explain_params[:len(gram_params)]) == shown(gram_params)
    # The same types, but plan's: explain's answer is text, so it takes no plan="json".
    assert {p.name: p.annotation for p in explain_params[:len(gram_params)] if p.name != "plan"} == \
        {p.name: p.annotation for p in gram_params if p.name != "plan"}
    assert inspect.signature(outcore.explain).parameters["plan"].annotation == "Flag"
    assert inspect.signature(outcore.gram).parameters["plan"].annotation == "Plan"
    assert [p.name for p in explain_params[len(gram_params):]] == ["dense_output"]

    a = np.random.default_rng(3).random((60, 100)) < 0.3
    text = outcore.explain(a, topk=3, min_score=1)
    assert text.startswith("backend: gram 60x60x100 (top-k)")
    stats = {}
    assert outcore.explain(a, progress=lambda done, total: None, stats=stats, resume=False,
                           out=np.empty((60, 60), np.int32)).startswith("backend: ")
    assert stats == {}  # nothing ran
    assert outcore.explain(a, out=str(tmp_path / "C.npy")).startswith("backend: ")
    assert not any(tmp_path.iterdir())
    with pytest.raises(outcore.InputError, match="runs on no device"):
        outcore.explain(a, devices="0,1", backend="cpu")
    try:
        assert outcore.explain(a, devices="0,1").startswith("backend: ")
    except outcore.Error as exc:  # as gram refuses it on this machine
        with pytest.raises(type(exc), match=str(exc).split(":")[0]):
            outcore.gram(a, devices="0,1")
    # As gram checks them:
    with pytest.raises(outcore.InputError, match="progress must be a callable"):
        outcore.explain(a, progress=3)
    buf = np.zeros((60, 240), np.uint8)
    buf[:, :100] = a
    with pytest.raises(outcore.InputError, match="shares memory with A"):
        outcore.explain(buf[:, :100], out=buf.view(np.int32))
    with pytest.raises(outcore.InputError, match="dense_output=False"):
        outcore.explain(a, out=str(tmp_path / "C.npy"), dense_output=False)


def test_explain_of_an_out_file_on_the_input_is_refused(no_rate_cache, tmp_path):
    a = (np.random.default_rng(4).random((30, 120)) < 0.5).astype(np.uint8)
    path = tmp_path / "w.npy"
    np.save(path, a)
    out = np.memmap(path, np.int32, "r+", os.path.getsize(path) - a.nbytes, (30, 30))
    with pytest.raises(outcore.InputError, match="out maps the input file of 'A'"):
        outcore.explain(str(path), out=out)


@pytest.mark.parametrize("kw,out,words", [
    ({}, "E.txt", "a dense result is written as .npy; got '.txt'"),
    ({}, ".npy", "got a name with no extension"),
    ({"topk": 2}, "E.npy", ".npy holds a dense result"),
    ({"topk": 2}, "E.mtx", "a top-k result is written as"),
])
def test_explain_checks_the_out_path_as_gram_does(tmp_path, kw, out, words):
    """explain refuses the out= paths gram refuses, with the same words, before anything runs."""
    a = np.eye(4, dtype=np.uint8)
    for fn in (outcore.explain, outcore.gram):
        with pytest.raises(outcore.InputError, match=re.escape(words)):
            fn(a, out=str(tmp_path / out), **kw)
    assert list(tmp_path.iterdir()) == []
