"""The binding under hostile arguments, by the rules the CLI follows (tests/cli/test_hostile_cli.py):
top-k with a minimum score against numpy, K past the columns, threads past the limit, NUL
bytes and literal names, one rule for which numbers are ones, and the library's one escaping
function for terminals and JSON."""
import ctypes
import json
import os
from pathlib import Path

import numpy as np
import pytest

import outcore
from outcore import _lib

from conftest import min_score_reference
from gram_refs import exact, random01, rng  # noqa: F401 (rng: a fixture)

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("metric, s", [("counts", 3), ("jaccard", 0.3), ("cosine", 0.45), ("hamming", 8)])
@pytest.mark.parametrize("two", [False, True])
def test_min_score_random(rng, metric, s, two):
    a = random01(rng, 70, 48, 0.2)
    b = random01(rng, 50, 48, 0.2) if two else None
    idx, sc = outcore.gram(a, b, metric=metric, topk=9, min_score=s, backend="cpu")
    want_idx, want_sc = min_score_reference(exact(a, b, metric), 9, not two, metric == "hamming", s)
    assert (want_idx == -1).any() and (want_idx >= 0).any()
    assert np.array_equal(idx, want_idx)
    assert np.array_equal(sc, want_sc, equal_nan=sc.dtype == np.float32)


def test_min_score_uint16_pads_with_65535(rng):
    a = random01(rng, 40, 30, 0.2)
    idx, sc = outcore.gram(a, topk=5, min_score=3, dtype="uint16", backend="cpu")
    want_idx, want_sc = min_score_reference(exact(a).astype(np.uint16), 5, True, False, 3)
    assert sc.dtype == np.uint16 and np.array_equal(idx, want_idx) and np.array_equal(sc, want_sc)
    assert (sc[idx == -1] == 65535).all() and (idx == -1).any()


@pytest.mark.parametrize("metric, s", [("counts", 30), ("jaccard", 0.5), ("cosine", 0.7), ("hamming", 15)])
def test_min_score_aflp(metric, s):
    """The AFLP markers: the plain top-10 lists with the pairs below S removed."""
    a = np.loadtxt(DATA / "aflp_markers.txt", dtype=np.uint8)
    idx, sc = outcore.gram(a, metric=metric, topk=10, min_score=s)
    want_idx, want_sc = min_score_reference(exact(a, metric=metric), 10, True, metric == "hamming", s)
    assert np.array_equal(idx, want_idx) and np.array_equal(sc, want_sc, equal_nan=True)
    full_idx, full_sc = outcore.gram(a, metric=metric, topk=10)
    passing = full_sc <= s if metric == "hamming" else full_sc >= full_sc.dtype.type(s)
    assert np.array_equal(np.where(passing, full_idx, -1), idx)


def test_min_score_to_a_file(tmp_path, rng):
    a = random01(rng, 30, 40, 0.2)
    out = outcore.gram(a, metric="jaccard", topk=4, min_score=0.3, out=str(tmp_path / "nn.npz"))
    with np.load(out) as f:
        want_idx, want_sc = min_score_reference(exact(a, metric="jaccard"), 4, True, False, 0.3)
        assert np.array_equal(f["indices"], want_idx) and np.array_equal(f["scores"], want_sc, equal_nan=True)


@pytest.mark.parametrize("kwargs, message", [
    (dict(min_score=1), "give topk=K too"),
    (dict(topk=3, min_score=float("nan")), "finite"),
    (dict(topk=3, min_score=10**400), r"min_score must be finite; got 1000"),  # past the largest float
    (dict(threshold=10**400), r"threshold must be finite; got 1000"),
    (dict(threshold=-10**400), r"threshold must be finite; got -1000"),
    (dict(threshold=10**5000), r"threshold must be finite; got an int of 16610 bits"),  # past repr's digits
    (dict(topk=3, min_score="x"), "must be a number"),
    (dict(topk=3, min_score="0.5"), "min_score must be a number, not str"),
    (dict(threshold=True), "threshold must be a number, not bool"),
    (dict(threshold=np.True_), "threshold must be a number, not bool"),
    (dict(threshold=b"1"), "threshold must be a number, not bytes"),
    (dict(topk=3, min_score=1.5), "min_score 1.5"),
    (dict(topk=3, min_score=2, metric="jaccard"), "min_score 2"),
])
def test_min_score_refused(rng, kwargs, message):
    with pytest.raises(outcore.InputError, match=message):
        outcore.gram(random01(rng, 10, 20), backend="cpu", **kwargs)


def test_explain_refuses_an_int_past_the_largest_float(rng):
    """explain checks threshold= as gram does: an int no float holds is no finite threshold."""
    with pytest.raises(outcore.InputError, match="threshold must be finite"):
        outcore.explain(random01(rng, 10, 20), threshold=10**400)


def test_topk_past_the_columns_is_refused_before_allocating(rng, tmp_path):
    """K = 10**12 would be terabytes of n x K arrays: refused at once, naming the limit."""
    a, b = random01(rng, 20, 16), random01(rng, 6, 16)
    with pytest.raises(outcore.InputError, match="K may be at most 20"):
        outcore.gram(a, topk=10**12)
    with pytest.raises(outcore.InputError, match="K may be at most 6"):
        outcore.gram(a, b, topk=7)
    with pytest.raises(outcore.InputError, match="K may be at most"):
        outcore.gram(a, topk=10**40)
    with pytest.raises(outcore.InputError, match="K may be at most 20"):
        outcore.gram(a, topk=21, out=str(tmp_path / "nn.npz"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("threads", [10**9, 4097, 10**30, 0, -1])
def test_threads_out_of_range(rng, threads):
    a = random01(rng, 10, 20)
    with pytest.raises(outcore.InputError, match="threads"):
        outcore.gram(a, threads=threads)
    with pytest.raises(outcore.InputError, match="threads"):
        outcore.map("a + 1", a=a, threads=threads)
    with pytest.raises(outcore.InputError, match="threads"):
        outcore.Context(threads=threads)


def test_nul_bytes_refused(rng, tmp_path):
    """A NUL byte would end the text where the library reads it: refused, and nothing read
    or written under the shorter name."""
    a = random01(rng, 8, 12)
    np.save(tmp_path / "a.npy", a)
    cases = [
        lambda: outcore.map("a\0 + 1", a=a),
        lambda: outcore.map("a + 1", **{"a\0b": a}),
        lambda: outcore.map("a + 1", a=str(tmp_path / "a.npy") + "\0x"),
        lambda: outcore.map("a + 1", a=a, out=str(tmp_path / "c.npy") + "\0x"),
        lambda: outcore.gram(str(tmp_path / "a.npy") + "\0zz"),
        lambda: outcore.gram(a, out=str(tmp_path / "c.npy") + "\0x"),
        lambda: outcore.gram(a, metric="counts\0x"),
    ]
    for case in cases:
        with pytest.raises(outcore.InputError, match="NUL byte"):
            case()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]


@pytest.mark.parametrize("name", ["True", "False"])
def test_operand_named_like_a_literal(rng, name):
    a = random01(rng, 4, 5).astype(np.float64)
    with pytest.raises(outcore.InputError, match=f"'{name}' is not a valid name.*not True or False"):
        outcore.map(f"{name} + 1", **{name: a})


def test_one_rule_for_numbers(rng, tmp_path):
    """Arrays of any numeric dtype, lists and .npy files are read by the library's one rule:
    0/1 values of any dtype are ones and zeros; other values name binarize=True; with it any
    nonzero value is a one (the same result from a file, an array, scipy.sparse); NaN never."""
    ones = random01(rng, 25, 40, 0.3)
    want = exact(ones)
    for x in (ones.astype(np.float64), ones.astype(np.int64), ones.astype(np.float32), ones.tolist(),
              ones.astype(">i4"), ones.astype(np.uint16)[:, ::-1][:, ::-1]):
        assert np.array_equal(outcore.gram(x), want)
    values = np.where(ones == 1, rng.normal(size=ones.shape) + 3, 0.0)
    np.save(tmp_path / "v.npy", values)
    with pytest.raises(outcore.InputError, match=r"A: value .* is not 0 or 1 \(float64.*binarize=True"):
        outcore.gram(values)
    with pytest.raises(outcore.InputError, match=r"v.npy: value .* is not 0 or 1 \(float64.*binarize=True"):
        outcore.gram(tmp_path / "v.npy")
    assert np.array_equal(outcore.gram(values, binarize=True), want)
    assert np.array_equal(outcore.gram(tmp_path / "v.npy", binarize=True), want)
    assert np.array_equal(outcore.gram((-values).tolist(), binarize=True), want)
    sparse = pytest.importorskip("scipy.sparse")
    assert np.array_equal(outcore.gram(sparse.csr_matrix(values), binarize=True), want)
    values[4, 7] = np.nan
    with pytest.raises(outcore.InputError, match="value NaN at row 4, column 7"):
        outcore.gram(values, binarize=True)
    with pytest.raises(outcore.InputError, match="dtype float16"):
        outcore.gram(ones.astype(np.float16))


# ---------------------------------------------------------------- the escaping function
def escape(raw, how):
    fn = _lib.lib.oc_text_escape
    n = fn(None, 0, raw, how)
    buf = ctypes.create_string_buffer(n + 1)
    assert fn(buf, n + 1, raw, how) == n
    small = ctypes.create_string_buffer(4)  # snprintf's rule: cut, NUL-terminated
    fn(small, 4, raw, how)
    assert small.value == buf.raw[:n][:3]
    return buf.raw[:n]


def test_escape_vectors():
    assert escape(b'q"\\\n\x1b\x7f\xff\xc3\xa9\xc2\x9b', 1) == b'q\\"\\\\\\n\\u001b\\u007f\\ufffd\xc3\xa9\xc2\x9b'
    assert escape(b'q"\\\n\x1b\x7f\xff\xc3\xa9\xc2\x9b', 0) == b'q"\\\\x0A\\x1B\\x7F\\xFF\xc3\xa9\\xC2\\x9B'
    assert escape(b"\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80", 0) == b"\\xED\\xA0\\x80\\xC0\\xAF\\xF4\\x90\\x80\\x80"


def test_escape_random_bytes_always_valid():
    """Any bytes: the JSON form parses (invalid UTF-8 as U+FFFD, the rest as it was); the
    terminal form is valid UTF-8 without a control character."""
    rng = np.random.default_rng(5)
    for _ in range(2000):
        raw = bytes(rng.integers(1, 256, size=int(rng.integers(0, 24)), dtype=np.uint8))
        got = json.loads(b'"' + escape(raw, 1) + b'"')
        assert got == raw.decode("utf-8", "replace") or "\ufffd" in got
        shown = escape(raw, 0).decode("utf-8")
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown)
        if all(0x20 <= b < 0x7F for b in raw):
            assert shown == raw.decode()


def test_error_messages_escape_names(tmp_path):
    """An exception quoting a file name shows its control bytes and invalid UTF-8 as \\xNN,
    as the CLI does."""
    path = os.fsencode(tmp_path) + b"/missing\x1b[2J\xff.npy"
    with pytest.raises(outcore.InputError) as info:
        outcore.gram(path)
    message = str(info.value)
    assert "missing\\x1B[2J\\xFF.npy" in message
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in message)


def test_map_stats_earlier_versions_still_written(rng):
    """oc_map_stats of version 1 (before threads) and 2 (before host_peak_bytes) are still
    taken, and nothing written past them; version 2 gets the threads that ran, at most one per
    block of a small result, version 3 the process's peak memory too."""
    a = random01(rng, 4, 5).astype(np.float64)
    lib = _lib.lib
    ctx, handle = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.oc_context_create(ctypes.byref(ctx)) == _lib.OC_OK
    try:
        arr = _lib.MapArray()
        arr.name, arr.data, arr.dtype, arr.ndim = b"a", a.ctypes.data, 10, 2
        shape = (ctypes.c_int64 * 2)(*a.shape)
        arr.shape = ctypes.cast(shape, _lib.c_int64_p)
        opts = _lib.MapOptions()
        opts.threads = 64
        assert lib.oc_map_create(ctx, b"a + 1", ctypes.byref(arr), 1, None, 0, ctypes.byref(opts),
                                 ctypes.byref(handle)) == _lib.OC_OK
        out = np.empty_like(a)
        v1 = _lib.MapStats()
        v1.struct_size = _lib.MapStats.threads.offset
        v1.threads = 12345
        assert lib.oc_map_run(ctx, handle, None, out.ctypes.data, ctypes.byref(v1)) == _lib.OC_OK
        assert v1.threads == 12345 and v1.elements == a.size and np.array_equal(out, a + 1)
        v2 = _lib.MapStats()
        v2.struct_size = _lib.MapStats.host_peak_bytes.offset
        v2.host_peak_bytes = 12345
        assert lib.oc_map_run(ctx, handle, None, out.ctypes.data, ctypes.byref(v2)) == _lib.OC_OK
        assert 1 <= v2.threads < 64 and v2.host_peak_bytes == 12345
        v3 = _lib.MapStats()
        assert lib.oc_map_run(ctx, handle, None, out.ctypes.data, ctypes.byref(v3)) == _lib.OC_OK
        assert 1 <= v3.threads < 64 and v3.host_peak_bytes >= a.nbytes
    finally:
        lib.oc_map_free(handle)
        lib.oc_context_free(ctx)
