"""Argument checks of map, Context and empty_pinned found in review: a progress callback
that calls into its own Context raises instead of hanging, byte counts past int64 and
floats where ints are due are refused instead of wrapping or truncating, map's argument
errors are outcore.Error, out= paths need .npy, the caret of a syntax error stands under
its column in expressions with newlines and tabs, and empty_pinned checks shape and dtype
before it pins anything."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import outcore


def one_line(exc):
    text = str(exc.value)
    assert "\n" not in text, text
    return text


# ---------------------------------------------------------------- 1. re-entry from a callback
# In a child process with a timeout: before the check the call hung for ever.
REENTRY = textwrap.dedent("""
    import threading, numpy as np, outcore
    big = np.random.default_rng(0).random((300, 3000)) < .5
    small = big[:3]

    def calls(ctx):
        out = []
        for name, inner in [("gram", lambda: ctx.gram(small)),
                            ("map", lambda: outcore.map("a", a=np.ones(3), context=ctx)),
                            ("close", ctx.close)]:
            try:
                ctx.gram(big, progress=lambda d, t: inner())
                out.append(name + ": no error")
            except outcore.InputError as exc:
                assert "\\n" not in str(exc) and "progress callback" in str(exc), str(exc)
                out.append(name + ": InputError")
        assert not ctx.closed and (ctx.gram(small) == outcore.gram(small)).all()  # still usable
        return out

    with outcore.Context(backend="cpu") as ctx:
        print("main", calls(ctx), flush=True)
    box = []
    with outcore.Context(backend="cpu") as ctx:
        t = threading.Thread(target=lambda: box.append(calls(ctx)))
        t.start()
        t.join()
    print("thread", box[0], flush=True)
""")


def test_progress_callback_calling_its_own_context_raises():
    try:
        run = subprocess.run([sys.executable, "-c", REENTRY], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a progress callback that calls into its own Context hung")
    assert run.returncode == 0, run.stderr
    want = "['gram: InputError', 'map: InputError', 'close: InputError']"
    assert run.stdout.split("\n")[:2] == [f"main {want}", f"thread {want}"], run.stdout


def test_other_threads_still_wait_for_the_context():
    a = np.random.default_rng(1).random((200, 2000)) < .5
    in_job, release, seen = threading.Event(), threading.Event(), []

    def progress(done, total):
        in_job.set()
        release.wait(30)

    with outcore.Context(backend="cpu") as ctx:
        first = threading.Thread(target=lambda: ctx.gram(a, progress=progress))
        first.start()
        assert in_job.wait(60)
        second = threading.Thread(target=lambda: seen.append(ctx.gram(a[:5])))
        second.start()
        second.join(0.5)
        assert second.is_alive() and not seen, "a call from another thread did not wait"
        release.set()
        first.join()
        second.join()
    assert (seen[0] == outcore.gram(a[:5])).all()


# ---------------------------------------------------------------- 2. byte counts past int64
@pytest.mark.parametrize("name,value", [("host_mem", 2**64 + 2**20), ("gpu_mem", 2**70), ("host_mem", 2**63),
                                        ("gpu_mem", np.uint64(2**63))])
def test_byte_counts_past_int64_are_refused(name, value):
    with pytest.raises(outcore.InputError, match=name) as exc:
        outcore.Context(**{name: value})
    one_line(exc)
    with pytest.raises(outcore.InputError, match=name):
        outcore.map("a", a=np.ones(3), **{name: value})
    with pytest.raises(outcore.InputError, match=name):
        outcore.gram(np.eye(3, dtype=bool), **{name: value})


def test_largest_byte_count_is_taken():
    outcore.Context(host_mem=2**63 - 1, gpu_mem=2**63 - 1).close()


@pytest.mark.parametrize("kwargs", [{"device": 2**32}, {"device": True}, {"threads": True}])
def test_int_settings_that_would_wrap_or_are_bools(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(outcore.InputError, match=name):
        outcore.Context(**kwargs)


def test_bits_past_int64_is_refused(tmp_path):
    path = tmp_path / "p.npy"
    np.save(path, np.zeros((2, 1), np.uint8))
    with pytest.raises(outcore.InputError, match="bits"):
        outcore.gram(str(path), bits=2**64 + 8)


# ---------------------------------------------------------------- 3. ints, not floats or bools
@pytest.mark.parametrize("axis", [1.9, True, 1.0, "1"])
def test_axis_must_be_an_int(axis):
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(outcore.InputError, match="axis") as exc:
        outcore.map("a", a=x, reduce="sum", axis=axis)
    one_line(exc)


def test_axis_as_numpy_int_and_one_axis_tuple():
    x = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(outcore.map("a", a=x, reduce="sum", axis=np.int64(1)), x.sum(axis=1))
    assert np.array_equal(outcore.map("a", a=x, reduce="sum", axis=(1,)), x.sum(axis=(1,)))
    assert np.array_equal(outcore.map("a", a=x, reduce="sum", axis=(-2,)), x.sum(axis=(-2,)))


# ---------------------------------------------------------------- 4. map's errors are outcore.Error
@pytest.mark.parametrize("kwargs", [{"dtype": "nope"}, {"dtype": {}}, {"reduce": "sum", "axis": (0, 1)},
                                    {"reduce": "sum", "axis": ()}, {"reduce": ["sum"]}, {"backend": ["cpu"]},
                                    {"reduce": "sum", "axis": 2**40}])
def test_map_argument_errors_are_input_errors(kwargs):
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(outcore.InputError) as exc:
        outcore.map("a", a=x, **kwargs)
    one_line(exc)


def test_dtype_of_the_other_byte_order_gives_the_native_one():
    """dtype= of either byte order is taken, as matmul and gram take it, and the result is in
    this machine's order: map reads arrays of the other order by their values too."""
    other = ">" if np.little_endian else "<"
    x = np.arange(6).reshape(2, 3)
    for given, dtype, native in (("f8", other + "f4", np.float32), ("i4", other + "i8", np.int64),
                                 ("f8", "=f8", np.float64)):
        got = outcore.map("x * 2", x=x.astype(other + given), dtype=dtype)
        assert got.dtype == np.dtype(native) and np.array_equal(got, x * 2), (dtype, got.dtype)


def test_ragged_operand_is_an_input_error():
    with pytest.raises(outcore.InputError, match="a:") as exc:
        outcore.map("a", a=[[1], [1, 2]])
    one_line(exc)


@pytest.mark.parametrize("value, shown", [(None, "NoneType"), ({}, "dict"), ((i for i in range(3)), "generator")])
def test_operand_of_no_array_form_is_named_by_its_type(value, shown):
    """numpy makes a 0-D object array of anything; the message names what was passed, not
    that array's dtype."""
    with pytest.raises(outcore.InputError, match=f"^a must be an array .*; got {shown}$") as exc:
        outcore.map("a * 2", a=value)
    one_line(exc)


# ---------------------------------------------------------------- 5. Python ints past 64 bits
@pytest.mark.parametrize("value", [2**64, 10**30, -2**63 - 1, 10**5000], ids=["2^64", "10^30", "-2^63-1", "10^5000"])
def test_huge_python_int_says_out_of_bounds(value):
    with pytest.raises(outcore.InputError, match="x") as exc:
        outcore.map("a + x", a=np.arange(3), x=value)
    text = one_line(exc)
    assert "--set" not in text and "not a number" not in text and "out of bounds" in text, text
    assert len(text) < 300, text


def test_python_ints_at_the_edges_still_work():
    assert outcore.map("a + x", a=np.arange(3.0), x=2**64 - 1).dtype == np.float64
    assert outcore.map("a + x", a=np.arange(3), x=-2**63)[0] == -2**63


# ---------------------------------------------------------------- 6. out= names a .npy file
@pytest.mark.parametrize("name", ["c.txt", "c", ".npy", "c.npy.tmp"])
def test_out_path_without_npy_is_refused(tmp_path, name):
    out = tmp_path / name
    with pytest.raises(outcore.InputError, match="out") as exc:
        outcore.map("a * 2", a=np.arange(3.0), out=out)
    one_line(exc)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["c.npy", "C.NPY", "d.tar.Npy"])
def test_out_path_with_npy_is_written(tmp_path, name):
    out = os.fsencode(tmp_path / name) if name == "C.NPY" else tmp_path / name
    assert outcore.map("a * 2", a=np.arange(3.0), out=out) == out
    assert np.array_equal(np.load(out), np.arange(3.0) * 2)


# ---------------------------------------------------------------- 7. the caret
@pytest.mark.parametrize("expr", ["a +\n* b", "a +\t\t* b", "a\r\n+\n\n * b", "(a +\n\tb) *\n* b"])
def test_caret_under_the_column_with_newlines_and_tabs(expr):
    x = np.ones(3)
    with pytest.raises(outcore.InputError) as exc:
        outcore.map(expr, a=x, b=x)
    lines = str(exc.value).split("\n")
    assert len(lines) == 3 and lines[0].startswith("syntax error"), lines
    shown, caret = lines[1], lines[2]
    assert shown.startswith("  ") and not any(c in shown for c in "\t\r"), lines
    assert caret.strip() == "^" and shown[caret.index("^")] == "*", lines
    # the second '*' is the bad one where there are two
    assert shown[:caret.index("^")].count("*") == expr.count("*") - 1


# ---------------------------------------------------------------- 8. empty_pinned checks first
@pytest.fixture
def pin_calls(monkeypatch):
    calls = []
    real = outcore._lib.lib.oc_pinned_alloc

    def counted(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setattr(outcore._lib.lib, "oc_pinned_alloc", counted)
    return calls


@pytest.mark.parametrize("shape,dtype", [((2**62 + 1, 4), np.float64), ((2**61, 8), np.uint8), (3, object),
                                         ((2, 2), np.dtype([("a", np.int64), ("b", object)])), (2.0, np.float64),
                                         ((2, True), np.float64), ((2, 1.5), np.float64), ((3, -1), np.float64),
                                         ((1,) * 65, np.float64), (3, "nope")])
def test_empty_pinned_refuses_before_pinning(pin_calls, shape, dtype):
    with pytest.raises(outcore.InputError) as exc:
        outcore.empty_pinned(shape, dtype)
    one_line(exc)
    assert pin_calls == []


def test_empty_pinned_valid_shape_reaches_the_library(pin_calls):
    try:
        a = outcore.empty_pinned((2, np.int64(3)), np.float32)
    except outcore.UnsupportedError:
        assert len(pin_calls) == 1  # no CUDA here: the library says so
    else:
        assert a.shape == (2, 3) and a.dtype == np.float32


def test_matmul_out_path_needs_the_npy_extension(tmp_path):
    """matmul writes .npy files, as map does: another name is refused before anything is
    written."""
    a = np.ones((3, 3))
    for name in ("m.txt", "m", ".npy"):
        with pytest.raises(outcore.InputError, match="matmul writes .npy files"):
            outcore.matmul(a, a, out=str(tmp_path / name))
    assert list(tmp_path.iterdir()) == []
    outcore.matmul(a, a, out=str(tmp_path / "m.NPY"))
    assert np.array_equal(np.load(tmp_path / "m.NPY"), a @ a)


@pytest.mark.parametrize("value", [2.7, True, 2**40, 0])
def test_inspect_integer_options_not_truncated(value):
    """inspect's integer options are integers in the C field's range: a float, a bool or a
    value past the field is refused rather than truncated or wrapped."""
    with pytest.raises(outcore.InputError, match="block"):
        outcore.inspect(b"not a kernel image", block=value)


def test_unary_plus_is_pythons_and_numpys():
    """+x is x; +True is Python's int 1 (so bool + +True promotes as bool + 1 does); numpy has
    no positive for bool arrays, so +b is an error naming the column."""
    b = np.array([True, False, True, True])
    got = outcore.map("a + +True", a=b)
    assert got.dtype == (b + +True).dtype and np.array_equal(got, b + +True)
    assert outcore.map("+True") == 1 and outcore.map("+True").dtype == np.int64
    x = np.arange(-3, 4, dtype=np.int8)
    assert outcore.map("+x", x=x).dtype == np.int8 and np.array_equal(outcore.map("-+x * +2", x=x), -+x * +2)
    with pytest.raises(outcore.InputError, match=r"boolean positive, the \+ operator, is not supported \(column 5\)"):
        outcore.map("1 + +b", b=b)


@pytest.mark.parametrize("expr, dtype", [
    ("clip(x, -1, 2)", np.uint32), ("clip(x, -5, 300)", np.uint8), ("clip(x, -200, 50)", np.int8),
    ("clip(x, -200, 2.5)", np.int8), ("clip(x, -1, 2**63)", np.int64), ("clip(x, 0, 18446744073709551615)", np.uint64),
])
def test_clip_drops_a_python_bound_past_the_type(expr, dtype):
    """numpy.clip of an integer array drops a Python int bound past the type's range on its
    side (numpy's _clip), where the ufuncs would raise OverflowError."""
    x = np.array([0, 1, 3, 100, 127], dtype=dtype)
    want = eval(expr.replace("clip", "np.clip"))
    got = outcore.map(expr, x=x)
    assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)


@pytest.mark.parametrize("expr, x, lo", [
    ("clip(x, lo, 65535)", np.array([-5, 7, 30000], np.int16), np.array([40000, 3, 2], np.uint16)),
    ("clip(x, lo, 40000)", np.array([-5, 7], np.int16), np.array([1e6, 2], np.float32)),
    ("clip(x, 1000.5, 300)", np.array([1, 2], np.uint8), None),
    ("clip(x, -1, 18446744073709551615)", np.array([0, 9], np.uint64), None),
    ("clip(x, -2**63, 9223372036854775807)", np.array([-4, 9], np.int64), None),
])
def test_clip_drops_the_bound_before_promotion(expr, x, lo):
    """The bound numpy drops takes no part in the promotion either: clip(int16, uint16 lo,
    65535) is maximum(x, lo) in int32, not clipped at int16's 32767."""
    env = {"x": x} if lo is None else {"x": x, "lo": lo}
    want = eval(expr.replace("clip", "np.clip"), {"np": np}, env)
    got = outcore.map(expr, **env)
    assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)


def test_clip_bound_past_the_other_side_still_raises():
    with pytest.raises(outcore.InputError, match="Python integer 300 is out of bounds for int8"):
        outcore.map("clip(x, 300, 400)", x=np.arange(3, dtype=np.int8))
    with pytest.raises(OverflowError):
        np.clip(np.arange(3, dtype=np.int8), 300, 400)


def test_python_float_power_overflow_raises_as_python():
    with pytest.raises(outcore.InputError, match=r"Python float \*\* overflows"):
        outcore.map("10.0 ** 400")
    with pytest.raises(OverflowError):
        10.0 ** 400
    assert outcore.map("1e308 * 10") == np.inf  # Python's * gives inf
    assert outcore.map("0." + "0" * 200 + "1") == 1e-201  # a literal of any length


def test_a_negative_constant_power_of_an_empty_integer_array_is_empty():
    """numpy refuses an integer to a negative power as it computes the elements: an empty
    array's is empty, a constant exponent's too (it was refused before any element)."""
    for expr, env in (("x ** -1", {}), ("x ** r", {"r": -1})):
        got = outcore.map(expr, x=np.arange(0), **env)
        want = np.arange(0) ** -1
        assert got.dtype == want.dtype and got.shape == want.shape == (0,)
        with pytest.raises(outcore.InputError, match="negative integer powers"):
            outcore.map(expr, x=np.arange(1, 4), **env)
        with pytest.raises(ValueError):
            np.arange(1, 4) ** -1
