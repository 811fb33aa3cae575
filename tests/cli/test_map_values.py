"""`outcore map` on the edges of its language and its printed values: a reduction without -o
prints what numpy's str() prints for the same result; numeric literals are Python's (an
underscore only between two digits); a .npy past map's 32 dimensions and an --axis of a 0-d
result behave as docs/map.md says."""
import json

import numpy as np
import pytest

from conftest import run

F64 = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1 / 3, 2 / 3, 0.1, 0.2, 0.3, 1e-4, np.nextafter(1e-4, 0),
       1.5e-7, 5e-324, 2.0**-1022, 1e15, 1e16, np.nextafter(1e16, 0), 1e22, 1e23, 1.7976931348623157e308,
       123456789012345678.0, 9007199254740993.0, -2.5, 2.0**63, 2.0**-1074 * 3]
F32 = [0.1, 0.2, 1 / 3, 1e-4, 9.9e-5, 1e-45, 2.0**-126, 3.4028235e38, 999999.0, 1e6, 16777216.0, 1.5e-7, -0.0,
       np.nan, np.inf, -np.inf, 65504.0, 0.3]
INTS = {np.int64: [0, -1, 2**63 - 1, -2**63], np.uint64: [0, 2**64 - 1], np.int32: [-2**31, 2**31 - 1],
        np.int8: [-128, 127], np.uint8: [0, 255], np.int16: [-32768, 7], np.uint16: [65535],
        np.uint32: [2**32 - 1]}


def printed(tmp_path, expr, x, op, *more):
    np.save(tmp_path / "x.npy", x)
    return run("map", expr, f"x={tmp_path / 'x.npy'}", "--reduce", op, "-q", *more).stdout.strip()


def numpy_str(x, op):
    with np.errstate(all="ignore"):
        return str(getattr(np, op)(x))


@pytest.mark.parametrize("dtype,values", [(np.float64, F64), (np.float32, F32)], ids=["float64", "float32"])
def test_float_reductions_print_as_numpy(tmp_path, dtype, values):
    """Each value alone (min of one element is the element), then sums and means of them."""
    for v in values:
        x = np.array([v], dtype=dtype)
        assert printed(tmp_path, "x", x, "min") == numpy_str(x, "min"), (dtype, v)
    x = np.array([0.1, 0.2], dtype=dtype)
    for op in ("sum", "mean", "max"):
        assert printed(tmp_path, "x", x, op) == numpy_str(x, op), (dtype, op)


def test_random_floats_print_as_numpy(tmp_path):
    """The shortest digits that read back, in float64 and in float32, over random bit patterns
    of every exponent (two values per run: max over the pair, each value once as the larger)."""
    rng = np.random.default_rng(7)
    f64 = np.frombuffer(rng.integers(0, 2**63, 60, dtype=np.uint64).tobytes(), np.float64)
    f32 = np.frombuffer(rng.integers(0, 2**31, 60, dtype=np.uint32).tobytes(), np.float32)
    for arr in (f64, f32):
        for v in arr[np.isfinite(arr)]:
            x = np.array([v, -v], dtype=arr.dtype)
            assert printed(tmp_path, "x", x, "max") == numpy_str(x, "max"), repr(v)


def test_nan_inf_and_zero_results_print_as_numpy(tmp_path):
    """0/0 is a NaN with its sign bit set on x86: numpy prints nan; a float zero is 0.0."""
    z = np.zeros(4)
    with np.errstate(all="ignore"):
        assert printed(tmp_path, "x / x", z, "max") == str(np.max(z / z)) == "nan"
        assert printed(tmp_path, "x / x", z, "mean") == str(np.mean(z / z)) == "nan"
        assert printed(tmp_path, "1 / x", z, "sum") == str(np.sum(1 / z)) == "inf"
        assert printed(tmp_path, "0 - 1 / x", z, "min") == str(np.min(-1 / z)) == "-inf"
    assert printed(tmp_path, "x * 1.0", z, "sum") == str(np.sum(z * 1.0)) == "0.0"
    assert printed(tmp_path, "x * -1", z, "max") == str(np.max(z * -1)) == "-0.0"
    assert printed(tmp_path, "x", np.zeros(0), "mean") == "nan"
    assert printed(tmp_path, "x", np.zeros(0), "sum") == "0.0"
    assert printed(tmp_path, "x", np.zeros(0, np.int32), "sum") == "0"
    third = np.full(3, 1.0)
    assert printed(tmp_path, "x / 3", third, "max") == str(np.max(third / 3)) == "0.3333333333333333"


def test_integer_and_bool_reductions_print_as_numpy(tmp_path):
    for dtype, values in INTS.items():
        for v in values:
            x = np.array([v], dtype=dtype)
            for op in ("min", "sum", "mean"):
                assert printed(tmp_path, "x", x, op) == numpy_str(x, op), (dtype, v, op)
    b = np.array([True, False, True])
    for op in ("sum", "max", "min", "mean"):
        assert printed(tmp_path, "x", b, op) == numpy_str(b, op), op  # sum 2, max True, mean 0.666...


def test_json_value(tmp_path):
    """--json gives the printed number (valid JSON, the same digits); NaN and the infinities,
    which JSON has no number for, are null; bools true and false."""
    cases = [(np.array([0.1, 0.2]), "max", 0.2), (np.zeros(3), "sum", 0.0), (np.array([1e16]), "min", 1e16),
             (np.array([0.1], np.float32), "max", 0.1), (np.zeros(3), "mean", 0.0),
             (np.array([True, False]), "max", True), (np.array([2**64 - 1], np.uint64), "max", 2**64 - 1)]
    for x, op, want in cases:
        np.save(tmp_path / "x.npy", x)
        proc = run("map", "x", f"x={tmp_path / 'x.npy'}", "--reduce", op, "--json")
        value = json.loads(proc.stdout)["value"]
        assert value == want and type(value) is type(want), (x, op, value)
    np.save(tmp_path / "z.npy", np.zeros(3))
    for expr in ("z / z", "1 / z", "0 - 1 / z"):
        proc = run("map", expr, f"z={tmp_path / 'z.npy'}", "--reduce", "max", "--json")
        assert '"value": null' in proc.stdout and json.loads(proc.stdout)["value"] is None, proc.stdout


# Literals Python refuses (SyntaxError), each with the offset of the underscore at fault.
BAD_UNDERSCORES = {"1_000_": 5, "1__000": 1, "1_.5": 1, "1._5": 2, "1e_3": 2, "1e3_": 3, "0x1f_": 4, "0x__1f": 3,
                   "0x_": 2, "1.5_e3": 3, "1_e3": 1, "0b1__0": 3, "0o_7_": 4, "1e-_3": 3}
GOOD = ["1_000", "0x_1f", "0X_1F", "0b_1_0", "0o_7_7", "1_0.5_0", "1e1_0", "1.5E+1_0", ".5_5", "1.", "1.e5", "0_0",
        "00", "1_2_3e-1_0"]


@pytest.mark.parametrize("literal", sorted(BAD_UNDERSCORES))
def test_misplaced_underscores_are_refused(tmp_path, literal):
    with pytest.raises(SyntaxError):
        compile(literal, "<literal>", "eval")
    np.save(tmp_path / "a.npy", np.zeros(2))
    proc = run("map", f"a + {literal}", f"a={tmp_path / 'a.npy'}", "--reduce", "sum", check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    column = 5 + BAD_UNDERSCORES[literal]
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"outcore: syntax error in the expression at column {column}: an underscore in a number must "
                        f"stand between two digits"), proc.stderr
    assert lines[1:] == [f"  a + {literal}", " " * (2 + column - 1) + "^"], proc.stderr
    proc = run("map", "a + r", f"a={tmp_path / 'a.npy'}", "--set", f"r={literal}", "--reduce", "sum", check=False)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        f"outcore: --set r={literal}: the value is not a number (an underscore in a number must stand between two "
        f"digits)"), proc.stderr


@pytest.mark.parametrize("literal", GOOD)
def test_python_literals_evaluate_as_python(tmp_path, literal):
    value = eval(literal)
    np.save(tmp_path / "a.npy", np.zeros(1, np.float64))
    got = run("map", f"a + {literal}", f"a={tmp_path / 'a.npy'}", "--reduce", "sum", "-q").stdout.strip()
    assert got == str(np.sum(np.zeros(1) + value)), (literal, got)
    got = run("map", "a + r", f"a={tmp_path / 'a.npy'}", "--set", f"r={literal}", "--reduce", "sum", "-q").stdout
    assert got.strip() == str(np.sum(np.zeros(1) + value)), (literal, got)


def test_integers_out_of_range_say_so(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros(2, np.uint64))
    a = f"a={tmp_path / 'a.npy'}"
    for value, bound in [("18446744073709551616", "above 2^64 - 1"), ("0x1_0000_0000_0000_0000", "above 2^64 - 1"),
                         ("-18446744073709551616", "below -2^63"), ("-9223372036854775809", "below -2^63")]:
        proc = run("map", "a + r", a, "--set", f"r={value}", "--reduce", "sum", check=False)
        assert proc.returncode == 2 and proc.stderr.strip() == (
            f"outcore: --set r={value}: the integer is out of range: {bound}, outside int64 and uint64"), proc.stderr
    proc = run("map", "a + 18446744073709551616", a, "--reduce", "sum", check=False)
    assert proc.returncode == 2 and proc.stderr.splitlines()[0] == (
        "outcore: syntax error in the expression at column 5: the integer is out of range: above 2^64 - 1, outside "
        "int64 and uint64"), proc.stderr
    assert run("map", "a + r", a, "--set", "r=18446744073709551615", "--reduce", "max", "-q").stdout.strip() == \
        str(np.max(np.zeros(2, np.uint64) + np.uint64(2**64 - 1)))


def npy_of_ndim(path, ndim):
    np.save(path, np.zeros((1,) * ndim))


@pytest.mark.parametrize("ndim", [33, 40, 64])
def test_npy_past_32_dimensions_names_the_limit(tmp_path, ndim):
    npy_of_ndim(tmp_path / "d.npy", ndim)
    proc = run("map", "a + 1", f"a={tmp_path / 'd.npy'}", "-o", tmp_path / "out.npy", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"outcore: {tmp_path / 'd.npy'}: the array has {ndim} dimensions; outcore reads at most 32 (numpy allows 64)")
    assert not (tmp_path / "out.npy").exists()


def test_npy_of_32_dimensions_is_read(tmp_path):
    npy_of_ndim(tmp_path / "d.npy", 32)
    assert run("map", "a + 1", f"a={tmp_path / 'd.npy'}", "--reduce", "sum", "-q").stdout.strip() == "1.0"


def test_axis_of_a_0d_result_as_numpy(tmp_path):
    """numpy.sum, min and max take axis 0 and -1 of a 0-d array (and no other); numpy.mean
    takes none. map does as numpy does."""
    s = np.asarray(2.5)
    np.save(tmp_path / "s.npy", s)
    a = f"s={tmp_path / 's.npy'}"
    for op in ("sum", "min", "max", "mean"):
        for axis in (0, -1, 1, -2):
            try:
                want = str(getattr(np, op)(s, axis=axis))
            except np.exceptions.AxisError:
                want = None
            proc = run("map", "s * 2", a, "--reduce", op, "--axis", str(axis), "-q", check=False)
            if want is None:
                assert proc.returncode == 2 and f"axis {axis} is out of bounds for a result of 0 dimensions" in \
                    proc.stderr, (op, axis, proc.stderr)
            else:
                assert proc.returncode == 0 and proc.stdout.strip() == str(getattr(np, op)(s * 2, axis=axis)), \
                    (op, axis, proc.stdout, proc.stderr)
            out = tmp_path / "out.npy"
            proc = run("map", "s * 2", a, "--reduce", op, "--axis", str(axis), "-o", out, check=False)
            if want is not None:
                got = np.load(out)
                assert got.shape == () and got == getattr(np, op)(s * 2, axis=axis), (op, axis)
                out.unlink()
