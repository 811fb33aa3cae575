"""`outcore map` on Fortran-order .npy files (numpy.save of a transposed array writes one):
read in place as the C-order arrays of their reversed shapes when every array input is in
Fortran order with as many dimensions, or in both orders (at most one dimension longer than
1), or a single element; the result written in Fortran order, numpy's values and shape;
--axis counted as given; any other mix refused in one line naming both files, exit 2,
nothing written (docs/map.md, "Fortran-order files")."""
import json

import numpy as np
import pytest

from conftest import require_backend, run


def save_f(path, a):
    np.save(path, np.asfortranarray(a))
    assert np.load(path).flags.f_contiguous
    return path


def header_says_fortran(path):
    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        return read(f)[1]


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {
        "a": rng.standard_normal((37, 53)),
        "b": rng.standard_normal((37, 53)),
        "i": rng.integers(-1000, 1000, size=(37, 53)).astype(np.int32),
        "t": rng.standard_normal((5, 6, 7)).astype(np.float32),
    }
    paths = {name: save_f(tmp_path / f"{name}.npy", a) for name, a in arrays.items()}
    paths["row"] = tmp_path / "row.npy"  # (1, 53): both orders; numpy.save calls it C order
    np.save(paths["row"], rng.standard_normal((1, 53)))
    paths["col"] = tmp_path / "col.npy"  # (37, 1)
    np.save(paths["col"], rng.standard_normal((37, 1)))
    paths["one"] = tmp_path / "one.npy"
    np.save(paths["one"], np.full((1, 1), 2.5))
    paths["c"] = tmp_path / "c.npy"  # C order, the shape of a
    np.save(paths["c"], arrays["a"])
    paths["v"] = tmp_path / "v.npy"  # 1-D
    np.save(paths["v"], rng.standard_normal(53))
    return tmp_path, paths


def load(paths, *names):
    return [np.load(paths[n]) for n in names]


@pytest.mark.parametrize("expr, names, want", [
    ("a * b + 1", "ab", lambda a, b: a * b + 1),
    ("where(a > 0, a, b) * 2", "ab", lambda a, b: np.where(a > 0, a, b) * 2),
    ("i // 7 + i", "i", lambda i: i // 7 + i),
    ("a > b", "ab", lambda a, b: a > b),
    ("t * t - abs(t)", "t", lambda t: t * t - np.abs(t)),
])
def test_elementwise_is_numpys_in_fortran_order(files, expr, names, want):
    tmp, paths = files
    out = tmp / "out.npy"
    run("map", expr, *[f"{n}={paths[n]}" for n in names], "-o", out, "-q")
    got, ref = np.load(out), want(*load(paths, *names))
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert header_says_fortran(out) and got.flags.f_contiguous
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("other, want", [
    ("row", lambda a, x: a + x),
    ("col", lambda a, x: a * x),
    ("one", lambda a, x: a - x),
])
def test_arrays_in_both_orders_and_single_elements_broadcast(files, other, want):
    tmp, paths = files
    out = tmp / "out.npy"
    op = {"row": "+", "col": "*", "one": "-"}[other]
    run("map", f"a {op} x", f"a={paths['a']}", f"x={paths[other]}", "-o", out, "-q")
    a, x = load(paths, "a", other)
    np.testing.assert_array_equal(np.load(out), want(a, x))
    # A scalar given with --set, too.
    run("map", "a * s", f"a={paths['a']}", "--set", "s=0.5", "-o", out, "-q")
    np.testing.assert_array_equal(np.load(out), a * 0.5)


@pytest.mark.parametrize("name, axis", [("a", 0), ("a", 1), ("a", -1), ("a", None), ("t", 0), ("t", 1), ("t", 2),
                                        ("t", -2), ("i", 0), ("i", None)])
@pytest.mark.parametrize("reduce", ["sum", "max", "min", "mean"])
def test_reductions_count_the_axis_as_given(files, name, axis, reduce):
    tmp, paths = files
    out = tmp / "out.npy"
    args = ["map", "x", f"x={paths[name]}", "--reduce", reduce, "-o", out, "-q"]
    if axis is not None:
        args += ["--axis", axis]
    run(*args)
    x = np.load(paths[name])
    ref = getattr(np, reduce)(x, axis=axis)
    got = np.load(out)
    assert got.shape == np.shape(ref) and got.dtype == ref.dtype
    if reduce in ("max", "min") or x.dtype.kind == "i" and reduce == "sum":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5 if x.dtype == np.float32 else 1e-12)
    if got.ndim >= 2:
        assert header_says_fortran(out)


@pytest.mark.parametrize("other, says", [
    ("c", "is in C order (37 x 53)"),
    ("v", "is one-dimensional (53)"),
    ("t", "is too (5 x 6 x 7)"),
])
def test_a_mix_that_needs_a_transpose_is_refused(files, other, says):
    tmp, paths = files
    out = tmp / "out.npy"
    proc = run("map", "a + x", f"a={paths['a']}", f"x={paths[other]}", "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"outcore: {paths['a']} is in Fortran order (37 x 53) and {paths[other]} {says}")
    assert "numpy.asfortranarray or numpy.ascontiguousarray" in lines[0]
    assert not out.exists()
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith("out")) == []


def fortran_header_file(path, a):
    """a saved with 'fortran_order': True whatever its shape (numpy.save writes False for an
    array in both orders; other writers may not)."""
    np.save(path, np.asfortranarray(a))
    raw = bytearray(path.read_bytes())
    if b"'fortran_order': False" in raw:
        at = raw.index(b"'fortran_order': False")
        raw[at:at + 23] = b"'fortran_order': True, "
        path.write_bytes(bytes(raw))
    with open(path, "rb") as f:
        np.lib.format.read_magic(f)
        assert np.lib.format.read_array_header_1_0(f)[1]
    return path


def test_arrays_in_both_orders_go_with_either(files):
    """An empty array (numpy.save calls it C order) beside a Fortran one, and a Fortran-headed
    array with one dimension longer than 1 beside a C-order one: the same bytes in either
    order, accepted, numpy's result."""
    tmp, paths = files
    out = tmp / "out.npy"
    f517 = save_f(tmp / "f517.npy", np.arange(35.0).reshape(5, 1, 7))
    np.save(tmp / "e.npy", np.zeros((5, 0, 7)))
    run("map", "a + b", f"a={f517}", f"b={tmp / 'e.npy'}", "-o", out, "-q")
    assert np.load(out).shape == (5, 0, 7)
    row = fortran_header_file(tmp / "row_f.npy", np.arange(53.0).reshape(1, 53))
    run("map", "a + b", f"a={row}", f"b={paths['c']}", "-o", out, "-q")
    np.testing.assert_array_equal(np.load(out), np.load(row) + np.load(paths["c"]))
    assert not header_says_fortran(out)  # the C-order array decides


def test_an_unused_input_does_not_count(files):
    tmp, paths = files
    out = tmp / "out.npy"
    run("map", "a * 3", f"a={paths['a']}", f"c={paths['c']}", "-o", out, "-q")
    np.testing.assert_array_equal(np.load(out), np.load(paths["a"]) * 3)


def test_json_and_explain_name_the_shapes_as_given(files):
    tmp, paths = files
    out = tmp / "out.npy"
    shown = json.loads(run("map", "x", f"x={paths['t']}", "--reduce", "sum", "--axis", "0", "-o", out,
                           "--json", "-q").stdout)
    assert shown["shape"] == [6, 7]
    text = run("map", "x * 2", f"x={paths['t']}", "-o", out, "--explain").stderr
    assert "over 5 x 6 x 7 " in text and "of float32 5 x 6 x 7" in text, text
    bad = run("map", "x", f"x={paths['t']}", "--reduce", "sum", "--axis", "3", "-o", out, check=False)
    assert bad.returncode == 2 and "axis 3 is out of bounds for a result of 3 dimensions" in bad.stderr


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_each_backend_runs_the_reversed_plan(files, backend):
    """The backends receive a C-order plan over the reversed shapes: the GPU's element-wise
    pass and its reductions give numpy's values as the CPU's do (skipped without a GPU)."""
    tmp, paths = files
    require_backend(backend, tmp)
    out = tmp / "out.npy"
    a, b, t = load(paths, "a", "b", "t")
    run("map", "a * b - a", f"a={paths['a']}", f"b={paths['b']}", "--backend", backend, "-o", out, "-q")
    np.testing.assert_array_equal(np.load(out), a * b - a)
    assert header_says_fortran(out)
    for axis, reduce in ((0, "max"), (2, "min"), (None, "max")):
        args = ["map", "t", f"t={paths['t']}", "--backend", backend, "--reduce", reduce, "-o", out, "-q"]
        run(*args, *(["--axis", axis] if axis is not None else []))
        np.testing.assert_array_equal(np.load(out), getattr(np, reduce)(t, axis=axis))


def test_python_returns_such_a_result_in_fortran_order(files):
    """Python: the result of Fortran-order files is a Fortran-ordered array (new, or an out=
    array in that order; a C-ordered one is refused, untouched), or the .npy file out names."""
    outcore = pytest.importorskip("outcore")
    tmp, paths = files
    out = tmp / "py.npy"
    outcore.map("a - b", a=str(paths["a"]), b=str(paths["b"]), out=str(out))
    a, b = load(paths, "a", "b")
    np.testing.assert_array_equal(np.load(out), a - b)
    assert header_says_fortran(out)
    got = outcore.map("a - b", a=str(paths["a"]), b=str(paths["b"]))
    assert got.flags.f_contiguous and got.shape == a.shape
    np.testing.assert_array_equal(got, a - b)
    mine = np.empty(a.shape, order="F")
    assert outcore.map("a * b", a=str(paths["a"]), b=str(paths["b"]), out=mine) is mine
    np.testing.assert_array_equal(mine, a * b)
    c_ordered = np.full(a.shape, 7.0)
    with pytest.raises(outcore.InputError, match="out must be Fortran-contiguous"):
        outcore.map("a * b", a=str(paths["a"]), b=str(paths["b"]), out=c_ordered)
    assert (c_ordered == 7).all()
    # An array in memory in C order is named as such; one in Fortran order goes with the file.
    with pytest.raises(outcore.InputError, match=r"and input 'b' is an array in memory, read in C order \(37 x 53\)"):
        outcore.map("a - b", a=str(paths["a"]), b=np.ascontiguousarray(b), out=str(out))
    outcore.map("a - b", a=str(paths["a"]), b=np.asfortranarray(b), out=str(out))
    np.testing.assert_array_equal(np.load(out), a - b)
    assert header_says_fortran(out)
    # A 1-D result is the same in either order: returned.
    np.testing.assert_allclose(outcore.map("a", a=str(paths["a"]), reduce="sum", axis=1), a.sum(axis=1), rtol=1e-12)
