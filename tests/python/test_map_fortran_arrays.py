"""outcore.map over numpy arrays in Fortran order (docs/map.md, "Fortran-order files";
docs/python.md): an array that is Fortran-contiguous and not C-contiguous is read in place with
oc_map_array.fortran_order when every other operand the expression names that is not a single
element is in Fortran order or in both orders with as many dimensions (arrays and .npy files
alike); the result is then a Fortran-ordered array, numpy's values, reductions counting the
axis as given. Any other mix copies the array to C order, as before, and gives numpy's values.
"""
import tracemalloc

import numpy as np
import pytest

import outcore
from outcore import _lib
from test_map_numpy import DTYPES, random_array

SHAPES = [(37, 53), (5, 6, 7)]


@pytest.fixture
def passed(monkeypatch):
    """What map hands the library, call by call: {name: (data address, fortran_order)} of
    each operand (address None for a path)."""
    calls = []
    create = _lib.lib.oc_map_create

    def spy(ctx, expr, arrays, n, *rest):
        calls.append({arrays[i].name.decode(): (arrays[i].data, arrays[i].fortran_order) for i in range(n)})
        return create(ctx, expr, arrays, n, *rest)

    monkeypatch.setattr(_lib.lib, "oc_map_create", spy)
    return calls


def in_place(seen, name, arr):
    """The library read arr itself, in Fortran order: no copy was made."""
    assert seen[name] == (arr.ctypes.data, 1), (name, seen[name], arr.ctypes.data)


def copied(seen, name, arr):
    assert seen[name][0] != arr.ctypes.data and seen[name][1] == 0, (name, seen[name])


def fortran(rng, dtype, shape):
    a = np.asfortranarray(random_array(rng, dtype, shape))
    assert a.flags.f_contiguous and not a.flags.c_contiguous
    return a


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_read_in_place(passed, dtype, shape):
    rng = np.random.default_rng(7)
    a, b = fortran(rng, dtype, shape), fortran(rng, dtype, shape)
    for expr, want in (("where(a > b, a, b) * a", np.where(a > b, a, b) * a), ("a == b", a == b),
                       ("maximum(a, b) + b", np.maximum(a, b) + b)):
        with np.errstate(all="ignore"):
            got = outcore.map(expr, a=a, b=b)
        assert got.dtype == want.dtype and got.shape == shape
        assert got.flags.f_contiguous and not got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
        in_place(passed[-1], "a", a)
        in_place(passed[-1], "b", b)


@pytest.mark.parametrize("shape", SHAPES)
def test_scalars_and_single_elements_broadcast(passed, shape):
    rng = np.random.default_rng(8)
    a = fortran(rng, np.float64, shape)
    nd = len(shape)
    ones = (1,) * nd
    for name, s in (("python", 2.5), ("numpy scalar", np.float32(2)), ("0-d", np.asarray(3.0)),
                    ("single", np.full(ones, 4.0)), ("fewer dims", np.full(ones[1:], -1.5)), ("1-D single", [0.5])):
        got = outcore.map("a * s + s", a=a, s=s)
        np.testing.assert_array_equal(got, a * np.asarray(s) + np.asarray(s), err_msg=name)
        assert got.flags.f_contiguous, name
        in_place(passed[-1], "a", a)
    # Arrays with one dimension longer than 1 are in both orders: they go with it too.
    row = np.asfortranarray(rng.standard_normal((1,) * (nd - 1) + shape[-1:]))
    col = rng.standard_normal(shape[:1] + (1,) * (nd - 1))
    got = outcore.map("a + r * c", a=a, r=row, c=col)
    np.testing.assert_array_equal(got, a + row * col)
    assert got.flags.f_contiguous
    in_place(passed[-1], "a", a)


@pytest.mark.parametrize("reduce", ["sum", "mean", "min", "max"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", SHAPES + [(300, 200)])
def test_reductions_are_numpys(passed, shape, dtype, reduce):
    """numpy sums a Fortran-order array in its memory order, as map does: the same bits."""
    rng = np.random.default_rng(9)
    a = fortran(rng, dtype, shape)
    for axis in [None, *range(-len(shape), len(shape))]:
        want = getattr(np, reduce)(a, axis=axis)
        got = outcore.map("a", a=a, reduce=reduce, axis=axis)
        assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype, axis
        np.testing.assert_array_equal(got, want, err_msg=f"axis {axis}")
        if np.ndim(got) >= 2:
            assert got.flags.f_contiguous
        in_place(passed[-1], "a", a)


def test_out_arrays():
    rng = np.random.default_rng(10)
    a, b = fortran(rng, np.float64, (37, 53)), fortran(rng, np.float64, (37, 53))
    mine = np.empty(a.shape, order="F")
    assert outcore.map("a * b", a=a, b=b, out=mine) is mine
    np.testing.assert_array_equal(mine, a * b)
    c_ordered = np.full(a.shape, 7.0)
    with pytest.raises(outcore.InputError, match="out must be Fortran-contiguous"):
        outcore.map("a * b", a=a, b=b, out=c_ordered)
    assert (c_ordered == 7).all()
    sums = np.empty((5, 7), order="F")  # a 2-D reduction of a 3-D array: Fortran order too
    t = fortran(rng, np.float64, (5, 6, 7))
    assert outcore.map("t", t=t, reduce="max", axis=1, out=sums) is sums
    np.testing.assert_array_equal(sums, t.max(axis=1))


def test_beside_fortran_files(passed, tmp_path):
    rng = np.random.default_rng(11)
    a, f = fortran(rng, np.float64, (37, 53)), fortran(rng, np.float64, (37, 53))
    np.save(tmp_path / "f.npy", f)
    got = outcore.map("a - f", a=a, f=str(tmp_path / "f.npy"))
    assert got.flags.f_contiguous
    np.testing.assert_array_equal(got, a - f)
    in_place(passed[-1], "a", a)
    assert passed[-1]["f"] == (None, 0)
    out = tmp_path / "out.npy"
    outcore.map("a * f", a=a, f=tmp_path / "f.npy", out=out)
    assert np.load(out).flags.f_contiguous
    np.testing.assert_array_equal(np.load(out), a * f)
    in_place(passed[-1], "a", a)
    # A file in C order, of another number of dimensions, or one whose header does not read:
    # the array is copied to C order, and the library plans (or refuses) as before.
    np.save(tmp_path / "c.npy", np.ascontiguousarray(f))
    got = outcore.map("a - c", a=a, c=tmp_path / "c.npy")
    np.testing.assert_array_equal(got, a - f)
    assert got.flags.c_contiguous
    copied(passed[-1], "a", a)
    np.save(tmp_path / "t.npy", fortran(rng, np.float64, (2, 37, 53)))
    with pytest.raises(outcore.InputError, match=r"t.npy is in Fortran order \(2 x 37 x 53\) and input 'a' is an "
                                                 r"array in memory, read in C order \(37 x 53\)"):
        outcore.map("a + t", a=a, t=tmp_path / "t.npy")
    copied(passed[-1], "a", a)
    with pytest.raises(outcore.InputError, match="missing.npy"):
        outcore.map("a + m", a=a, m=tmp_path / "missing.npy")
    copied(passed[-1], "a", a)


def test_c_and_fortran_mixed_are_copied(passed):
    rng = np.random.default_rng(12)
    f, c = fortran(rng, np.float64, (37, 53)), rng.standard_normal((37, 53))
    got = outcore.map("f * c + f", f=f, c=c)
    with np.errstate(invalid="ignore"):  # an infinity among f's values
        np.testing.assert_array_equal(got, f * c + f)
    assert got.flags.c_contiguous
    copied(passed[-1], "f", f)
    assert passed[-1]["c"] == (c.ctypes.data, 0)
    np.testing.assert_allclose(outcore.map("f * c", f=f, c=c, reduce="sum"), np.sum(f * c), rtol=1e-12)
    np.testing.assert_allclose(outcore.map("f * c", f=f, c=c, reduce="sum", axis=0), np.sum(f * c, axis=0),
                               rtol=1e-12)
    # Fortran arrays of other numbers of dimensions: numpy broadcasts them from the last one.
    t = fortran(rng, np.float64, (2, 37, 53))
    np.testing.assert_array_equal(outcore.map("f + t", f=f, t=t), f + t)
    copied(passed[-1], "f", f)
    copied(passed[-1], "t", t)
    # An operand the expression does not name does not count.
    got = outcore.map("f * 2", f=f, c=c)
    np.testing.assert_array_equal(got, f * 2)
    in_place(passed[-1], "f", f)


def test_one_dimensional_arrays(passed):
    """A 1-D array is in both orders: read in place as it is (C order), beside arrays of one
    dimension, and lined up with the last dimension beside a Fortran array, which is copied."""
    rng = np.random.default_rng(13)
    v, w = rng.standard_normal(53), rng.standard_normal(53)
    assert v.flags.c_contiguous and v.flags.f_contiguous
    np.testing.assert_array_equal(outcore.map("v * w", v=v, w=w), v * w)
    assert passed[-1] == {"v": (v.ctypes.data, 0), "w": (w.ctypes.data, 0)}
    f = fortran(rng, np.float64, (37, 53))
    got = outcore.map("f + v", f=f, v=v)
    np.testing.assert_array_equal(got, f + v)
    copied(passed[-1], "f", f)
    np.testing.assert_allclose(outcore.map("f + v", f=f, v=v, reduce="sum", axis=-1), np.sum(f + v, axis=-1),
                               rtol=1e-12)


def test_views(passed):
    """A transposed view of a C array is Fortran-contiguous: read in place. A view in neither
    order is copied to C order, and so is a Fortran array beside it; numpy's values."""
    rng = np.random.default_rng(14)
    base, other = rng.standard_normal((53, 37)), rng.standard_normal((53, 37))
    got = outcore.map("a * b", a=base.T, b=other.T)
    np.testing.assert_array_equal(got, base.T * other.T)
    assert got.flags.f_contiguous
    in_place(passed[-1], "a", base.T)
    f = fortran(rng, np.float64, (37, 53))
    strided = np.asfortranarray(rng.standard_normal((74, 53)))[::2]
    assert not strided.flags.f_contiguous and not strided.flags.c_contiguous
    np.testing.assert_array_equal(outcore.map("f - s", f=f, s=strided), f - strided)
    copied(passed[-1], "f", f)
    np.testing.assert_array_equal(outcore.map("s * 2", s=strided), strided * 2)
    # Another byte order, or memory off its elements' alignment: copied once, in Fortran order.
    swapped = f.astype(">f8", order="F")
    raw = np.empty(f.size * 8 + 1, np.uint8)[1:].view(np.uint8)
    unaligned = np.ndarray(f.shape, np.float64, raw.data, order="F")
    unaligned[...] = f
    assert not unaligned.flags.aligned and unaligned.flags.f_contiguous
    got = outcore.map("x + y + f", x=swapped, y=unaligned, f=f)
    np.testing.assert_array_equal(got, 3 * f)
    assert got.flags.f_contiguous
    assert passed[-1]["x"][1] == passed[-1]["y"][1] == 1
    in_place(passed[-1], "f", f)


def test_no_copy_in_memory():
    """The memory the call allocates is a small part of the arrays it reads (an out= array
    given): numpy's allocations are traced by tracemalloc."""
    rng = np.random.default_rng(15)
    a = np.asfortranarray(rng.standard_normal((1000, 1500)))
    b = np.asfortranarray(rng.standard_normal((1000, 1500)))
    out = np.empty(a.shape, order="F")
    outcore.map("a * 2 + b", a=a, b=b, out=out)  # first calls' one-time set-up left out
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        outcore.map("a * 2 + b", a=a, b=b, out=out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < a.nbytes // 8, peak
    np.testing.assert_array_equal(out, a * 2 + b)


@pytest.mark.skipif(outcore.cuda_device_count() == 0, reason="no usable GPU")
@pytest.mark.parametrize("shape", SHAPES)
def test_on_the_gpu(passed, shape):
    """backend="cuda" reads the arrays in place too (the plan over the reversed shapes): an
    element-wise result in Fortran order with numpy's values, and reductions over each axis
    (min and max, and integer sums: exact on any chunking) as numpy's."""
    rng = np.random.default_rng(31)
    a, b = fortran(rng, np.float64, shape), fortran(rng, np.float64, shape)
    got = outcore.map("a * 2 + b", a=a, b=b, backend="cuda")
    in_place(passed[-1], "a", a)
    in_place(passed[-1], "b", b)
    assert got.flags.f_contiguous and got.dtype == np.float64
    assert np.array_equal(got, a * 2 + b)
    n = fortran(rng, np.int32, shape)
    for axis in [None, *range(len(shape)), -1]:
        for x, op in [(a, "min"), (a, "max"), (n, "sum"), (n, "max")]:
            want = getattr(np, op)(x, axis=axis)
            got = np.asarray(outcore.map("x", x=x, reduce=op, axis=axis, backend="cuda"))
            assert got.dtype == want.dtype and np.array_equal(got, want), (op, axis)
