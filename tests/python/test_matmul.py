"""outcore.matmul against numpy: arrays and files, transposes and views read in place, the
Gram product, dtypes and promotion, out= arrays and paths, and refusals."""
import json
import os
import subprocess

import numpy as np
import pytest

import outcore

rng = np.random.default_rng(11)


def close(got, ref, k, eps):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert np.abs(got.astype(np.float64) - ref.astype(np.float64)).max() <= k * eps * (np.abs(ref).max() + 1)


@pytest.mark.parametrize("dt,eps", [(np.float64, 1e-15), (np.float32, 1e-6), (np.float16, 1e-6)])
def test_against_numpy(dt, eps):
    a = rng.standard_normal((33, 57)).astype(dt)
    b = rng.standard_normal((57, 21)).astype(dt)
    # float16: float32 sums, returned as float32 (numpy's a @ b rounds them to float16)
    ref = a.astype(np.float32) @ b.astype(np.float32) if dt == np.float16 else a @ b
    close(outcore.matmul(a, b), ref, 57, eps)
    close(outcore.matmul(a.T.copy(), b, transpose_a=True), ref, 57, eps)
    close(outcore.matmul(a, b.T.copy(), transpose_b=True), ref, 57, eps)
    if dt == np.float16:
        close(outcore.matmul(a, b, dtype=np.float16), a @ b, 57, 1e-3)


def test_views_are_read_in_place():
    a = rng.standard_normal((40, 30))
    b = rng.standard_normal((30, 20))
    close(outcore.matmul(a[::3], b), a[::3] @ b, 30, 1e-15)          # a row stride
    close(outcore.matmul(np.asfortranarray(a), b), a @ b, 30, 1e-15)  # Fortran order: read as its transpose
    close(outcore.matmul(a, b.T.copy().T), a @ b, 30, 1e-15)          # a transposed view
    close(outcore.matmul(a[:, ::2], b[::2]), a[:, ::2] @ b[::2], 15, 1e-15)  # copied


def test_int8_exact_and_gram():
    a = rng.integers(-128, 128, (70, 500), dtype=np.int8)
    ref = a.astype(np.int64) @ a.T.astype(np.int64)
    g = outcore.matmul(a, host_mem="64K")
    assert g.dtype == np.int32 and np.array_equal(g, ref)
    assert np.array_equal(outcore.matmul(a, a, transpose_b=True), ref)
    f = rng.standard_normal((70, 50))
    gf = outcore.matmul(f, transpose_a=True)  # f.T @ f
    close(gf, f.T @ f, 70, 1e-15)
    assert np.array_equal(gf, gf.T)


@pytest.mark.parametrize("view", ["strided", "fortran", "contiguous"])
def test_one_array_as_both_operands_is_its_gram(view):
    """The same array as A and B with op(B) = op(A)ᵀ is A·Aᵀ whatever its layout: one copy of
    a layout the library cannot read in place (two copies were two operands, and the product
    was not exactly symmetric), the upper tiles mirrored: bytes equal to matmul(A)."""
    base = np.random.default_rng(0).standard_normal((200, 1200))
    a = {"strided": base[::2, ::2], "fortran": np.asfortranarray(base[:60, :90]),
         "contiguous": base[:70, :50]}[view]
    for ta in (False, True):
        c = outcore.matmul(a, a, transpose_a=ta, transpose_b=not ta)
        assert np.array_equal(c, c.T)
        assert np.array_equal(c, outcore.matmul(a.T if ta else a))
        ref = (a.T @ a) if ta else (a @ a.T)
        np.testing.assert_allclose(c, ref, rtol=1e-12, atol=1e-10)
    square = a[:min(a.shape), :min(a.shape)]  # A·A, not A·Aᵀ: no mirror
    np.testing.assert_allclose(outcore.matmul(square, square), square @ square, rtol=1e-12, atol=1e-10)


def test_panels_and_tiles_in_pieces():
    """Panels and tiles of more than a MiB, which the CPU backend reads, converts, rounds and
    writes in pieces of rows on several threads: every dtype path, transposes, the Gram
    product's diagonal tiles (mirrored piece by piece) and budgets that cut K."""
    a = rng.standard_normal((600, 400))
    b = rng.standard_normal((400, 500))
    for host_mem in (None, "4M"):
        close(outcore.matmul(a, b, host_mem=host_mem, backend="cpu"), a @ b, 400, 1e-15)
        close(outcore.matmul(a.T.copy(), b, transpose_a=True, host_mem=host_mem, backend="cpu"), a @ b, 400, 1e-15)
    i8 = rng.integers(-128, 128, (700, 3000), dtype=np.int8)
    ref = i8.astype(np.int64) @ i8.T.astype(np.int64)
    for host_mem in (None, "8M"):
        g = outcore.matmul(i8, host_mem=host_mem, backend="cpu")
        assert g.dtype == np.int32 and np.array_equal(g, ref)
    h = rng.standard_normal((800, 700)).astype(np.float16)
    got = outcore.matmul(h, h, transpose_b=True, dtype=np.float16, backend="cpu")
    assert got.dtype == np.float16
    close(got, (h.astype(np.float32) @ h.T.astype(np.float32)).astype(np.float16), 700, 1e-3)


def test_promotion_and_dtype():
    i8 = rng.integers(-5, 5, (10, 12), dtype=np.int8)
    f32 = rng.standard_normal((12, 7)).astype(np.float32)
    f16 = rng.standard_normal((10, 12)).astype(np.float16)
    assert outcore.matmul(i8, f32).dtype == np.float32
    assert outcore.matmul(f16, f32).dtype == np.float32
    # numpy's float16, summed and returned in float32 unless float16 is asked for
    assert outcore.matmul(i8.astype(np.uint8), f32.astype(np.float16)).dtype == np.float32
    assert outcore.matmul(i8.astype(np.uint8), f32.astype(np.float16), dtype=np.float16).dtype == np.float16
    with pytest.raises(outcore.InputError, match=r"^out has dtype float16; the result is float32 \(dtype=float16 asks for the product in float16\)"):
        outcore.matmul(f16, f32.astype(np.float16), out=np.empty((10, 7), np.float16))
    i64 = i8.astype(np.int64)
    with pytest.raises(outcore.InputError, match="int64 x int64"):
        outcore.matmul(i64, i64, transpose_b=True)
    close(outcore.matmul(i64, i64, transpose_b=True, dtype=np.float64), (i64 @ i64.T).astype(np.float64), 12, 0)
    close(outcore.matmul(f32.astype(np.float64), f32.T.astype(np.float64), dtype="float32"), f32 @ f32.T, 7, 1e-6)


@pytest.mark.parametrize("backend", ["cpu", "auto"])
def test_bool_as_numpy_promotes_it(tmp_path, backend):
    """bool meets a float as that float and int8 as int8 (int32 sums, exact); a byte other than
    0 is true, as numpy reads it (bytes 2 and 255 among the trues); bool x bool is numpy's
    bool (any of the ANDs), or int32 counts or a float when asked; .npy files of bool read too."""
    raw = rng.choice(np.array([0, 0, 1, 2, 255], np.uint8), size=(41, 67))
    m = raw.view(bool)
    f32 = rng.standard_normal((67, 23)).astype(np.float32)
    ones = m.astype(np.float64)
    close(outcore.matmul(m, f32, backend=backend), (ones @ f32).astype(np.float32), 67, 1e-6)
    f16 = f32.astype(np.float16)
    got = outcore.matmul(m, f16, backend=backend)  # numpy's float16: summed and returned in float32
    assert got.dtype == np.float32
    close(got, (ones @ f16.astype(np.float64)).astype(np.float32), 67, 1e-6)
    close(outcore.matmul(m, f16, dtype=np.float16, backend=backend), m @ f16, 67, 1e-3)
    i8 = rng.integers(-128, 128, (67, 23), dtype=np.int8)
    got = outcore.matmul(m, i8, backend=backend)
    assert got.dtype == np.int32 and np.array_equal(got, m.astype(np.int64) @ i8.astype(np.int64))
    counts = m.astype(np.int64) @ m.T.astype(np.int64)
    for b in (m.T, None):
        got = outcore.matmul(m, b, backend=backend)
        assert got.dtype == np.bool_ and np.array_equal(got, m @ m.T)
        assert np.array_equal(outcore.matmul(m, b, dtype=bool, backend=backend), m @ m.T)
        got = outcore.matmul(m, b, dtype=np.int32, backend=backend)
        assert got.dtype == np.int32 and np.array_equal(got, counts)
    close(outcore.matmul(m, m.T, dtype=np.float32, backend=backend), counts.astype(np.float32), 67, 0)
    with pytest.raises(outcore.InputError, match="int8 or bool inputs alone"):
        outcore.matmul(m, f32, dtype=np.int32, backend=backend)
    np.save(tmp_path / "m.npy", m)
    np.save(tmp_path / "f.npy", f32)
    got = outcore.matmul(tmp_path / "m.npy", tmp_path / "f.npy", backend=backend)
    close(got, (ones @ f32).astype(np.float32), 67, 1e-6)
    assert np.array_equal(outcore.matmul(tmp_path / "m.npy", dtype="int32", backend=backend), counts)
    sparse = rng.random((300, 200)) < 0.01  # both values in the result
    got = outcore.matmul(sparse, sparse.T, backend=backend, host_mem="64K")
    assert got.dtype == np.bool_ and np.array_equal(got, sparse @ sparse.T) and 0 < got.mean() < 1
    out = np.ones((300, 300), bool)
    assert outcore.matmul(sparse, out=out, backend=backend) is out and np.array_equal(out, sparse @ sparse.T)


def test_vectors_as_numpy_reads_them():
    """A 1-D A is a row and a 1-D B a column, and the result drops their dimension, as numpy's
    matmul does (a vector's transpose is itself): matrix-vector, vector-matrix, a vector with
    itself (numpy's scalar; A·Aᵀ of a vector too), strided and reversed vectors, int8 exactly,
    out= arrays of numpy's shape; a vector product to a path, and an out= of another shape, are
    refused."""
    a = rng.standard_normal((37, 23))
    v, w = rng.standard_normal(23), rng.standard_normal(37)
    close(outcore.matmul(a, v), a @ v, 23, 1e-15)
    close(outcore.matmul(w, a), w @ a, 37, 1e-15)
    close(outcore.matmul(a, w, transpose_a=True), a.T @ w, 37, 1e-15)
    close(outcore.matmul(a, v, transpose_b=True), a @ v, 23, 1e-15)
    close(outcore.matmul(a[:, ::2], v[::2]), a[:, ::2] @ v[::2], 12, 1e-15)
    close(outcore.matmul(w[::-1], a), w[::-1] @ a, 37, 1e-15)
    for got in (outcore.matmul(v, v), outcore.matmul(v)):
        assert isinstance(got, np.float64) and abs(got - v @ v) <= 23 * 1e-15 * (np.abs(v) @ np.abs(v))
    i8 = rng.integers(-128, 128, (9, 300), dtype=np.int8)
    x8 = rng.integers(-128, 128, 300, dtype=np.int8)
    got = outcore.matmul(i8, x8)
    assert got.dtype == np.int32 and np.array_equal(got, i8.astype(np.int64) @ x8.astype(np.int64))
    out = np.empty(37)
    assert outcore.matmul(a, v, out=out) is out
    close(out, a @ v, 23, 1e-15)
    scalar = np.empty(())
    assert outcore.matmul(v, v, out=scalar) is scalar and abs(scalar - v @ v) <= 1e-12
    with pytest.raises(outcore.InputError, match=r"shape \(37,\)"):
        outcore.matmul(a, v, out=np.empty((37, 1)))
    with pytest.raises(outcore.InputError, match="not written to a .npy path"):
        outcore.matmul(a, v, out="never.npy")
    with pytest.raises(outcore.InputError, match="inner dimensions differ"):
        outcore.matmul(a, w)
    # The transposes that make a pair multiply are named by their keywords.
    x = np.ones((3, 4))
    with pytest.raises(outcore.InputError, match=r"\(4 != 3; they multiply with transpose_a, or with transpose_b\)$"):
        outcore.matmul(x, x)
    # A transposed view is read as its transpose; the advice is still of the caller's flags.
    with pytest.raises(outcore.InputError, match=r"\(3 != 4; they multiply with transpose_a\)$"):
        outcore.matmul(np.ones((3, 4)).T, np.ones((4, 5)))
    with pytest.raises(outcore.InputError, match=r"\(4 != 3; they multiply without transpose_a\)$"):
        outcore.matmul(np.ones((3, 4)).T, np.ones((3, 5)), transpose_a=True)
    assert outcore.matmul(np.ones((3, 4)).T, np.ones((3, 5))).shape == (4, 5)


@pytest.mark.parametrize("value, shown", [(None, "NoneType"), ({}, "dict"), ((i for i in range(3)), "generator")])
def test_operand_of_no_array_form_is_named_by_its_type(value, shown):
    """numpy makes a 0-D object array of anything; the message names what was passed, while
    a number or a 0-D array is still told its dimensions."""
    a = np.ones((3, 3))
    with pytest.raises(outcore.InputError, match=f"^A must be an array .*; got {shown}$"):
        outcore.matmul(value, a)
    if value is not None:  # B=None is A·Aᵀ
        with pytest.raises(outcore.InputError, match=f"^B must be an array .*; got {shown}$"):
            outcore.matmul(a, value)
    for number in (5, np.float64(5), np.array(5.0)):
        with pytest.raises(outcore.InputError, match="^A: a 0-dimensional array; matmul takes 2-D matrices$"):
            outcore.matmul(number, a)


def test_refused_vector_out_is_told_numpys_shape():
    """An out= of a vector product refused for its dtype or for being read-only is told what
    is wrong, never the 2-D view the library writes (out= takes the shape numpy's matmul gives
    the product); a numpy scalar, which would receive the product in a copy, is refused."""
    a, v = np.ones((7, 5)), np.ones(5)
    read_only = np.empty(7)
    read_only.flags.writeable = False
    for args, out, shape in (((a, v), np.empty(7, np.float32), "(7,)"), ((v, a.T), np.empty(7, np.float32), "(7,)"),
                             ((v, v), np.empty((), np.float32), "()"), ((a, v), read_only, "(7,)")):
        with pytest.raises(outcore.InputError) as err:
            outcore.matmul(*args, out=out)
        message = err.value.message
        assert ("has dtype float32; the result is float64" in message or message == "out is read-only") \
            and "(7, 1)" not in message and "(1, 7)" not in message and "(1, 1)" not in message, message
    with pytest.raises(outcore.InputError, match=r"of shape \(\) "):
        outcore.matmul(v, v, out=np.float64(0))


def test_vector_files_as_numpy_reads_them(tmp_path):
    """1-D .npy paths as 1-D arrays are read: into a new array, an out= array and a .npy path
    (written with numpy's shape), beside a matrix in memory or in a file; a vector in memory
    to a path stays refused, with the way to write it."""
    a = rng.standard_normal((37, 23))
    v, w = rng.standard_normal(23), rng.standard_normal(37)
    for name, x in (("a", a), ("v", v), ("w", w)):
        np.save(tmp_path / f"{name}.npy", x)
    p = {name: tmp_path / f"{name}.npy" for name in "avw"}
    close(outcore.matmul(p["a"], p["v"]), a @ v, 23, 1e-15)
    close(outcore.matmul(a, p["v"]), a @ v, 23, 1e-15)
    close(outcore.matmul(p["w"], a), w @ a, 37, 1e-15)
    got = outcore.matmul(p["v"], p["v"])
    assert isinstance(got, np.float64) and abs(got - v @ v) <= 1e-12
    assert abs(outcore.matmul(p["v"]) - v @ v) <= 1e-12
    out = np.empty(37)
    assert outcore.matmul(p["a"], p["v"], out=out) is out
    close(out, a @ v, 23, 1e-15)
    for args, ref in (((p["a"], p["v"]), a @ v), ((p["w"], p["a"]), w @ a), ((p["v"], None), v @ v)):
        path = tmp_path / "c.npy"
        assert outcore.matmul(*args, out=path) == path
        close(np.load(path), np.asarray(ref), 37, 1e-15)
    with pytest.raises(outcore.InputError, match="in memory is returned, not written to a .npy path"):
        outcore.matmul(p["a"], v, out=tmp_path / "never.npy")
    assert not (tmp_path / "never.npy").exists()


@pytest.mark.parametrize("blas", ["", "none"])
def test_non_finite_values_pass_through(monkeypatch, blas):
    """NaN and infinities go through the products as numpy's A @ B has them (Inf x 0 is NaN),
    on the BLAS and the reference loops, in one tile and in many."""
    monkeypatch.setenv("OUTCORE_BLAS", blas)
    for dt in (np.float64, np.float32):
        a = rng.standard_normal((60, 50)).astype(dt)
        b = rng.standard_normal((50, 40)).astype(dt)
        a[0, 0], a[1, 1], a[2, 2] = np.nan, np.inf, -np.inf
        b[1, 3], b[2, 0] = 0, np.inf
        with np.errstate(invalid="ignore"):
            ref = a @ b
        for host_mem in (None, "16K"):
            got = outcore.matmul(a, b, backend="cpu", host_mem=host_mem)
            assert got.dtype == dt
            assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.array_equal(np.isinf(got), np.isinf(ref))
            assert np.array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
            fin = np.isfinite(ref)
            assert np.abs(got[fin] - ref[fin]).max() <= 50 * np.finfo(dt).eps * (np.abs(ref[fin]).max() + 1)


def test_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = rng.standard_normal((16, 24)).astype(ml_dtypes.bfloat16)
    ref = a.astype(np.float32) @ a.astype(np.float32).T
    c = outcore.matmul(a, a, transpose_b=True)  # float32 sums, returned as float32
    assert c.dtype == np.float32
    assert np.abs(c - ref).max() <= 24 * 1e-6 * (np.abs(ref).max() + 1)
    c = outcore.matmul(a, a, transpose_b=True, dtype=ml_dtypes.bfloat16)
    assert c.dtype == ml_dtypes.bfloat16
    assert np.abs(c.astype(np.float32) - ref).max() <= 24 * 8e-3 * (np.abs(ref).max() + 1)


def test_bfloat16_result_rounds_to_nearest_even():
    """float32 operands asked for a bfloat16 product are rounded to nearest, ties to even, bit
    for bit as ml_dtypes rounds: a column of probes times [[1]] (its products and sums exact)
    gives each probe's bfloat16: ties either way, a float32 ulp off them, both signs,
    subnormals, rounding up into the next binade and to infinity, infinities; a NaN stays a
    NaN. A zero's sign is the sum's (which starts at +0), not the rounding's."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    one = np.ones((1, 1), np.float32)
    a = np.array([[1 + 2**-8], [1 + 3 * 2**-8]], np.float32)  # ties: down to 1, up to 1 + 2^-6
    c = outcore.matmul(a, one, dtype=ml_dtypes.bfloat16, backend="cpu")
    assert c.dtype == ml_dtypes.bfloat16 and c.astype(np.float32).ravel().tolist() == [1.0, 1.015625]

    b = np.arange(0x7F80, dtype=np.uint32)  # every finite bfloat16 >= 0
    value = (b << 16).view(np.float32)
    mid = ((b << 16) | 0x8000).view(np.float32)  # halfway to the next one (for 0x7f7f: to 2^128)
    probes = np.concatenate([value, mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(np.inf)),
                             np.array([np.inf, np.nan], np.float32),
                             np.array([0x7F800001, 0x7FBFFFFF, 0xFFA5A5A5], np.uint32).view(np.float32)])
    probes = np.concatenate([probes, -probes]).reshape(-1, 1)
    got = outcore.matmul(probes, one, dtype=ml_dtypes.bfloat16, backend="cpu").view(np.uint16).ravel()
    with np.errstate(invalid="ignore"):  # the NaNs
        want = probes.astype(ml_dtypes.bfloat16).view(np.uint16).ravel()
    nan, zero = np.isnan(probes.ravel()), want & 0x7FFF == 0
    bits = ~nan & ~zero
    assert np.array_equal(got[bits], want[bits]), probes.ravel()[bits][got[bits] != want[bits]][:5]
    assert np.all(got[zero] & 0x7FFF == 0)
    assert np.isnan(got[nan].view(ml_dtypes.bfloat16).astype(np.float32)).all()


def test_out_array_and_path(tmp_path):
    a = rng.standard_normal((20, 30))
    b = rng.standard_normal((30, 10))
    out = np.zeros((20, 10))
    assert outcore.matmul(a, b, out=out) is out
    close(out, a @ b, 30, 1e-15)
    big = np.zeros((20, 16))
    outcore.matmul(a, b, out=big[:, 3:13])  # rows with a stride
    close(big[:, 3:13], a @ b, 30, 1e-15)
    assert not big[:, :3].any() and not big[:, 13:].any()
    np.save(tmp_path / "a.npy", a)
    path = tmp_path / "c.npy"
    assert outcore.matmul(tmp_path / "a.npy", b, out=path) == path
    close(np.load(path), a @ b, 30, 1e-15)
    with pytest.raises(outcore.InputError, match="out"):
        outcore.matmul(a, b, out=np.zeros((20, 10), np.float32))
    with pytest.raises(outcore.InputError, match="shares memory"):
        sq = rng.standard_normal((10, 10))
        outcore.matmul(sq, sq, out=sq)
    # Column blocks of one buffer share no element: the product is written beside its operand.
    buf = np.zeros((4, 8))
    left, right = buf[:, :4], buf[:, 4:]
    left[:] = np.arange(16.0).reshape(4, 4)
    outcore.matmul(left, np.eye(4) * 2, out=right)
    assert np.array_equal(right, left * 2) and np.array_equal(left, np.arange(16.0).reshape(4, 4))
    with pytest.raises(outcore.InputError, match="shares memory"):
        outcore.matmul(buf[:, :4], np.eye(4), out=buf[:, 2:6])
    # A one-row or one-column result's stride along its single element is never used: numpy's
    # y[None, :] and x[:, None] have 0 there.
    row, col = np.zeros(10), np.zeros(20)
    outcore.matmul(a[:1], b, out=row[None, :])
    close(row[None, :], a[:1] @ b, 30, 1e-15)
    outcore.matmul(a, b[:, :1], out=col[:, None])
    close(col[:, None], a @ b[:, :1], 30, 1e-15)
    # A dtype in the other byte order names the same type; the result is in this machine's.
    other = ">f8" if np.little_endian else "<f8"
    assert outcore.matmul(a, b, dtype=other).dtype == np.float64


def test_refusals(tmp_path):
    a = rng.standard_normal((5, 4))
    with pytest.raises(outcore.InputError, match="inner dimensions differ"):
        outcore.matmul(a, a)
    with pytest.raises(outcore.InputError, match="missing.npy"):
        outcore.matmul(tmp_path / "missing.npy", a)
    with pytest.raises(outcore.InputError, match="dtype bool is the product of bool inputs alone"):
        outcore.matmul(a > 0, a.T, dtype=bool)
    with pytest.raises(outcore.InputError, match="2-D"):
        outcore.matmul(np.zeros((2, 2, 2)), a)
    with pytest.raises(outcore.InputError, match="no B to transpose"):
        outcore.matmul(a, transpose_b=True)
    with pytest.raises(outcore.InputError, match="dtype='foo'"):
        outcore.matmul(a, a.T, dtype="foo")
    with pytest.raises(outcore.InputError, match="context: expected an outcore.Context, not int"):
        outcore.matmul(a, a.T, context=3)
    np.save(tmp_path / "a.npy", a)
    with pytest.raises(outcore.InputError, match="the output is the input file"):
        outcore.matmul(tmp_path / "a.npy", a.T, out=tmp_path / "a.npy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]


def test_resume(tmp_path):
    """A product killed after 3 tiles (in a child process) resumed with resume=True: the bytes of
    an uninterrupted run; an array input is identified by its content; memory cannot resume."""
    import os
    import sys
    a = rng.standard_normal((200, 300))
    np.save(tmp_path / "b.npy", rng.standard_normal((300, 150)))
    np.save(tmp_path / "a.npy", a)
    opts = dict(host_mem="40K", backend="cpu", threads=1)
    ref = tmp_path / "ref.npy"
    outcore.matmul(a, tmp_path / "b.npy", out=ref, **opts)
    out = tmp_path / "c.npy"
    child = ("import numpy as np, outcore, sys; d = sys.argv[1]; "
             f"outcore.matmul(np.load(d + '/a.npy'), d + '/b.npy', out=d + '/c.npy', resume=True, **{opts!r})")
    env = dict(os.environ, OUTCORE_RESUME_INTERVAL="0", OUTCORE_RESUME_KILL_AFTER="3")
    proc = subprocess.run([sys.executable, "-c", child, str(tmp_path)], env=env, capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    assert not out.exists() and (tmp_path / "c.npy.outcore-journal").exists()
    with pytest.raises(outcore.InputError, match="resume=True"):
        outcore.matmul(a, tmp_path / "b.npy", out=out, **opts)
    with pytest.raises(outcore.InputError, match="input changed"):
        outcore.matmul(a + 1, tmp_path / "b.npy", out=out, resume=True, **opts)
    assert outcore.matmul(a, tmp_path / "b.npy", out=out, resume=True, **opts) == out
    assert out.read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy", "c.npy", "ref.npy"]
    with pytest.raises(outcore.InputError, match="resume"):
        outcore.matmul(a, tmp_path / "b.npy", resume=True)


def test_ragged_lists_are_an_input_error():
    """Nested lists numpy cannot make a rectangle of are refused as bad input naming the
    operand, as gram refuses them (numpy's own ValueError said neither)."""
    with pytest.raises(outcore.InputError, match=r"^A: the nested lists cannot be read as a rectangular array"):
        outcore.matmul([[1.0, 2.0], [3.0]], [[1.0], [2.0]])
    with pytest.raises(outcore.InputError, match=r"^B: the nested lists"):
        outcore.matmul([[1.0, 2.0]], [[1.0], [2.0, 3.0]])


def test_explain_returns_the_clis_text(tmp_path):
    """explain=True returns what `outcore matmul --explain` prints for the same files, and runs
    nothing (no output written)."""
    rng = np.random.default_rng(3)
    np.save(tmp_path / "a.npy", rng.standard_normal((200, 150)))
    np.save(tmp_path / "b.npy", rng.standard_normal((150, 120)))
    out = tmp_path / "c.npy"
    # A budget given: the default follows the host's available memory, which moves between calls.
    text = outcore.matmul(tmp_path / "a.npy", tmp_path / "b.npy", out=out, explain=True, backend="cpu",
                          host_mem="64M")
    assert isinstance(text, str) and text.startswith("backend: ") and not out.exists(), text
    cli = os.environ.get("OUTCORE_BIN")
    if cli:
        proc = subprocess.run([cli, "matmul", tmp_path / "a.npy", tmp_path / "b.npy", "--backend", "cpu", "--explain",
                               "--host-mem", "64M"], capture_output=True, text=True, check=True)
        assert proc.stdout == text, (proc.stdout, text)
    with pytest.raises(outcore.InputError, match="explain"):
        outcore.matmul(np.ones((2, 2)), explain="yes")


def test_tile_plan_and_stats_as_the_cli_gives_them(tmp_path):
    """tile= is --tile, plan=True returns --plan's text (before --explain's when both are
    given), and a stats dict is filled with the run's keys of --json, their values the CLI's."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 250))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    paths = (tmp_path / "a.npy", tmp_path / "b.npy")
    kw = dict(backend="cpu", host_mem="64M", tile=64)
    plan = outcore.matmul(*paths, plan=True, **kw)
    both = outcore.matmul(*paths, plan=True, explain=True, **kw)
    explained = outcore.matmul(*paths, explain=True, **kw)
    assert "20 tiles" in plan and both == plan + explained, (plan, both)
    stats = {}
    got = outcore.matmul(a, b, stats=stats, **kw)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)
    assert (stats["m"], stats["n"], stats["k"], stats["tiles"], stats["dtype"]) == (300, 250, 200, 20, "float64")
    assert stats["backend"] == "cpu" and stats["seconds"] >= 0 and stats["flops"] == 2 * 300 * 250 * 200
    cli = os.environ.get("OUTCORE_BIN")
    if cli:
        base = [cli, "matmul", *paths, "--backend", "cpu", "--host-mem", "64M", "--tile", "64"]
        assert subprocess.run(base + ["--plan"], capture_output=True, text=True, check=True).stdout == plan
        run = subprocess.run(base + ["-o", tmp_path / "c.npy", "--json", "-q"], capture_output=True, text=True,
                             check=True)
        shown = json.loads(run.stdout)
        assert set(shown) - {"command", "a", "b", "output"} == set(stats), (sorted(shown), sorted(stats))
        for key in ("m", "n", "k", "tiles", "dtype", "backend", "bytes_written", "host_budget_bytes"):
            assert shown[key] == stats[key], key
    for bad in (0, -1, 2.5, "64"):
        with pytest.raises(outcore.InputError, match="tile"):
            outcore.matmul(a, b, backend="cpu", tile=bad)
    with pytest.raises(outcore.InputError, match="stats"):
        outcore.matmul(a, b, backend="cpu", stats=[])


def test_plan_json_is_the_clis_object(tmp_path):
    """plan="json" returns the object of `outcore matmul --plan --json` as a dict, for paths
    and arrays alike; not with explain, whose reasons are text."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 250))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    kw = dict(backend="cpu", host_mem="64M", tile=64, threads=2)
    got = outcore.matmul(tmp_path / "a.npy", tmp_path / "b.npy", plan="json", **kw)
    assert isinstance(got, dict) and (got["m"], got["n"], got["k"], got["tiles"]) == (300, 250, 200, 20), got
    # Arrays in memory: the same plan; host_budget differs (what the budget leaves for the
    # product: files' mapped inputs count in it, the caller's arrays do not).
    in_memory = outcore.matmul(a, b, plan="json", **kw)
    assert 0 < in_memory.pop("host_budget") <= 64 << 20
    assert in_memory == {key: value for key, value in got.items() if key != "host_budget"}
    cli = os.environ.get("OUTCORE_BIN")
    if cli:
        args = [cli, "matmul", tmp_path / "a.npy", tmp_path / "b.npy", "--backend", "cpu", "--host-mem", "64M",
                "--tile", "64", "--threads", "2", "--plan", "--json"]
        assert json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout) == got
    with pytest.raises(outcore.InputError, match='plan="json" returns the plan alone'):
        outcore.matmul(a, b, plan="json", explain=True, **kw)
    with pytest.raises(outcore.InputError, match='plan must be True, False or "json"'):
        outcore.matmul(a, b, plan="yes", **kw)
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "b.npy"]


def test_progress_reaches_the_total_and_an_exception_cancels():
    """progress= as gram's and map's: reports that grow to the total, the last equal to it; an
    exception it raises cancels the product, raised once it has stopped, with no file left."""
    import tempfile
    a = rng.standard_normal((600, 500))
    reports = []
    c = outcore.matmul(a, a.T, backend="cpu", tile=128, host_mem="64M", progress=lambda d, t: reports.append((d, t)))
    close(c, a @ a.T, 500, 1e-15)
    assert reports and reports[-1][0] == reports[-1][1] > 0, reports
    assert all(d1 <= d2 for (d1, _), (d2, _) in zip(reports, reports[1:])), reports

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop("enough")

    with tempfile.TemporaryDirectory() as folder:
        with pytest.raises(Stop, match="enough"):
            outcore.matmul(a, a.T, out=os.path.join(folder, "c.npy"), backend="cpu", tile=64, host_mem="64M",
                           progress=stop)
        assert os.listdir(folder) == []
    with pytest.raises(outcore.InputError, match="progress"):
        outcore.matmul(a, a.T, progress=3)
