"""outcore.map against numpy: random expressions over random dtypes and broadcast shapes.

Arithmetic, comparisons, bitwise operators, where/minimum/maximum/clip/abs/floor/ceil and
the reductions must be bit-identical to numpy (same dtype, same bits; NaN compared as NaN; of
+0.0 and -0.0 tied, min and max return the first, where numpy's choice follows its lanes);
the transcendental functions must be within their ulp bound of numpy over the whole float
range, special values included (docs/map.md states the bounds).
"""
import itertools
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import outcore

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64]
NAMESPACE = {"abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
             "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "arctan2": np.arctan2,
             "floor": np.floor, "ceil": np.ceil, "minimum": np.minimum, "maximum": np.maximum, "clip": np.clip,
             "where": np.where}
BINARY = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "==", "!=", "<", "<=", ">", ">="]
FUNC2 = ["minimum", "maximum"]
UNARY = ["-", "~", "abs", "floor", "ceil"]


def random_array(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -200), min(info.max, 200)
        a = rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(dt)
        if a.size and rng.random() < 0.3:  # the extremes too, where wrap-around and MIN // -1 live
            a.flat[:: max(1, a.size // 3)] = info.min if rng.random() < 0.5 else info.max
        return a
    a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)).astype(dt)
    if a.size and rng.random() < 0.3:
        a.flat[rng.integers(0, a.size)] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan])
    return a


def random_shapes(rng, count):
    """count shapes that broadcast together."""
    # At least one dimension: numpy turns 0-d results into numpy scalars, whose operators
    # (x ** 2 among them) take other paths than arrays'; test_zero_dim covers 0-d arrays.
    nd = int(rng.integers(1, 4))
    # Now and then large enough to span many blocks and threads, with broadcasting inside.
    top = 90 if rng.random() < 0.2 else 6
    full = [int(rng.integers(1, top)) for _ in range(nd)]
    shapes = []
    for _ in range(count):
        k = int(rng.integers(1, nd + 1))
        shp = full[nd - k:]
        shapes.append(tuple(1 if rng.random() < 0.3 else s for s in shp))
    return shapes


def random_expr(rng, names, depth):
    r = rng.random()
    if depth == 0 or r < 0.25:
        if rng.random() < 0.15:
            return str(rng.choice(["2", "3", "0", "1", "7", "0.5", "2.5", "True"]))
        return str(rng.choice(names))
    r = rng.random()
    if r < 0.55:
        op = str(rng.choice(BINARY))
        return f"({random_expr(rng, names, depth - 1)} {op} {random_expr(rng, names, depth - 1)})"
    if r < 0.7:
        op = str(rng.choice(UNARY))
        inner = random_expr(rng, names, depth - 1)
        return f"{op}({inner})" if op in ("-", "~") else f"{op}({inner})"
    if r < 0.8:
        f = str(rng.choice(FUNC2))
        return f"{f}({random_expr(rng, names, depth - 1)}, {random_expr(rng, names, depth - 1)})"
    if r < 0.9:
        return (f"where({random_expr(rng, names, depth - 1)} > {random_expr(rng, names, depth - 1)}, "
                f"{random_expr(rng, names, depth - 1)}, {random_expr(rng, names, depth - 1)})")
    if r < 0.95:
        # numpy's float power may come from its SIMD library (not bit-identical: see the ulp
        # test); x ** 2 is numpy.square, exact, on every type.
        return f"({random_expr(rng, names, depth - 1)}) ** 2"
    return f"clip({random_expr(rng, names, depth - 1)}, 1, 5)"


def numpy_eval(expr, env):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(eval(expr, {}, {**NAMESPACE, **env}))  # noqa: S307


def same_bits(got, ref):
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return False
    if ref.dtype.kind == "f":
        nan = np.isnan(ref)
        return bool(np.array_equal(np.isnan(got), nan) and np.array_equal(got[~nan], ref[~nan])
                    and np.array_equal(np.signbit(got[~nan]), np.signbit(ref[~nan])))
    return bool(np.array_equal(got, ref))


@pytest.mark.parametrize("seed", range(80))
def test_random_expressions_bit_identical(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(30):
        names = ["a", "b", "c"]
        shapes = random_shapes(rng, 3)
        env = {n: random_array(rng, DTYPES[int(rng.integers(0, len(DTYPES)))], s) for n, s in zip(names, shapes)}
        expr = random_expr(rng, names, int(rng.integers(1, 4)))
        try:
            ref = numpy_eval(expr, env)
        except (TypeError, OverflowError, ValueError, ZeroDivisionError):
            with pytest.raises(outcore.InputError):
                outcore.map(expr, **env)
            continue
        if ref.dtype == np.float16 or ref.dtype not in [np.dtype(t) for t in DTYPES]:
            continue
        got = np.asarray(outcore.map(expr, **env))
        assert same_bits(got, ref), f"{expr} with {[(k, v.dtype, v.shape) for k, v in env.items()]}: {got!r} != {ref!r}"
        checked += 1
    assert checked > 5


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("other", [np.int8, np.uint8, np.int64, np.uint64, np.float32, np.float64])
def test_promotion_table(dtype, other):
    a = np.ones((3, 2), dtype=dtype)
    b = np.ones(2, dtype=other)
    for expr in ("a + b", "a * 2", "a + 2.5", "a / b", "a < b"):
        try:
            ref = numpy_eval(expr, {"a": a, "b": b})
        except TypeError:
            with pytest.raises(outcore.InputError):
                outcore.map(expr, a=a, b=b)
            continue
        if ref.dtype == np.float16:
            continue
        assert outcore.map(expr, a=a, b=b).dtype == ref.dtype, expr


def test_clip_promotes_three_types_as_numpy():
    """numpy promotes clip's three operands as a sequence: where one type is the others' common
    type it is the result (uint16, int8, float32 give float32), not the pairwise fold (float64).
    Every triple of map's dtypes, each against np.clip's dtype and values."""
    checked = 0
    for x_type, lo_type, hi_type in itertools.product(DTYPES, repeat=3):
        x, lo, hi = (np.array(v, t) for v, t in (([0, 1, 1, 0], x_type), ([0, 0, 1, 1], lo_type),
                                                  ([1, 1, 1, 0], hi_type)))
        ref = np.clip(x, lo, hi)
        if ref.dtype == np.float16:
            continue
        got = outcore.map("clip(x, lo, hi)", x=x, lo=lo, hi=hi)
        assert got.dtype == ref.dtype and np.array_equal(got, ref), (x_type, lo_type, hi_type, got.dtype, ref.dtype)
        checked += 1
    assert checked == len(DTYPES) ** 3


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64])
def test_integer_division_semantics(dtype):
    info = np.iinfo(dtype)
    vals = np.array(sorted({0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1}
                           | ({-1, -2, -3, -7} if info.min < 0 else set())), dtype=dtype)
    a, b = np.meshgrid(vals, vals)
    for expr in ("a // b", "a % b", "a ** 3", "a * b", "a - b", "abs(a)", "-a"):
        ref = numpy_eval(expr, {"a": a, "b": b})
        assert same_bits(np.asarray(outcore.map(expr, a=a, b=b)), ref), expr


def test_float_division_semantics():
    vals = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -7.5, 1e308, -1e-308, 5e-324, np.inf, -np.inf, np.nan])
    for dt in (np.float32, np.float64):
        with np.errstate(over="ignore"):  # 1e308 is inf in float32: one more edge value there
            a, b = np.meshgrid(vals.astype(dt), vals.astype(dt))
        for expr in ("a // b", "a % b", "a / b", "a ** 2", "a ** -1", "a ** 0.5", "minimum(a, b)", "maximum(a, b)", "a < b", "a == b"):
            ref = numpy_eval(expr, {"a": a, "b": b})
            assert same_bits(np.asarray(outcore.map(expr, a=a, b=b)), ref), (dt, expr)


def test_weak_scalars_and_set():
    x = np.arange(10, dtype=np.float32)
    assert outcore.map("x * r", x=x, r=0.2).dtype == np.float32
    assert same_bits(outcore.map("x * r", x=x, r=0.2), x * 0.2)
    u = np.arange(10, dtype=np.uint8)
    assert same_bits(outcore.map("u + 3", u=u), u + 3)
    with pytest.raises(outcore.InputError, match="out of bounds"):
        outcore.map("u + 300", u=u)
    assert same_bits(outcore.map("u * 2.5", u=u), u * 2.5)
    assert same_bits(np.asarray(outcore.map("2 ** -1 + 7 // -2", u=u)), np.asarray(2 ** -1 + 7 // -2))
    for special in (float("inf"), float("-inf"), float("nan")):
        assert same_bits(outcore.map("minimum(x, r)", x=x, r=special), np.minimum(x, special))


def test_large_blocks_and_threads():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 1001))
    b = rng.standard_normal(1001).astype(np.float32)
    c = rng.integers(-5, 5, size=(300, 1), dtype=np.int16)
    expr = "where(a > 0, a * b - c // 2, minimum(a, c) / 3)"
    assert same_bits(outcore.map(expr, a=a, b=b, c=c), numpy_eval(expr, {"a": a, "b": b, "c": c}))
    assert same_bits(outcore.map(expr, a=a, b=b, c=c, threads=1), numpy_eval(expr, {"a": a, "b": b, "c": c}))


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_and_constant_forms(dtype):
    """The interpreter's one-pass forms against numpy: a comparison fused into its where (the
    constant on either side, or none; NaN, -0.0 and the extremes among the values), and
    binary ops with one constant operand on either side."""
    rng = np.random.default_rng(7)
    vals = random_array(rng, dtype, (64, 33))
    if np.dtype(dtype).kind == "f":
        vals.flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan]
    a, b = vals, random_array(rng, dtype, (33,))
    exprs = ["where(a > 0, a, b)", "where(0 < a, a, b)", "where(a >= b, a, b) * 2", "where(1 == a, b, a)",
             "where(a != b, 1, a)", "where(a <= 1, a, 0)", "where(2 > a, b, a)", "where(a < b, a > 0, b > 0)",
             "where(a > 0, a, b) + where(a > 0, b, a)", "2 - a", "a - 2", "3 * a", "a // 3", "3 // b", "a % 3",
             "a < 1", "1 <= a", "maximum(a, 1)", "minimum(2, a)", "a & 1", "1 ^ a"]
    checked = 0
    for expr in exprs:
        try:
            ref = numpy_eval(expr, {"a": a, "b": b})
        except TypeError:
            continue
        if ref.dtype == np.float16:
            continue
        got = np.asarray(outcore.map(expr, a=a, b=b))
        assert same_bits(got, ref), f"{expr} over {np.dtype(dtype)}: {got!r} != {ref!r}"
        checked += 1
    assert checked >= 8


def test_output_dtype_same_kind():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert same_bits(outcore.map("a * 2", a=a, dtype=np.float32), (a * 2).astype(np.float32))
    with pytest.raises(outcore.InputError, match="same_kind"):
        outcore.map("a * 2", a=a, dtype=np.int32)
    i = np.arange(6, dtype=np.int64)
    assert same_bits(outcore.map("i + 1", i=i, dtype=np.int8), (i + 1).astype(np.int8))
    with pytest.raises(outcore.InputError, match="same_kind"):
        outcore.map("i + 1", i=i, dtype=np.uint8)


# ---------------------------------------------------------------- reductions

@pytest.mark.parametrize("shape", [(1,), (7,), (8,), (129,), (4097,), (100003,), (3, 5), (257, 33), (33, 4100),
                                   (5, 1, 7), (2, 3, 4, 5), (70000, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_bit_identical(shape, dtype):
    rng = np.random.default_rng(len(shape) * 1000 + shape[0])
    a = (rng.standard_normal(shape) * 1000).astype(dtype)
    assert same_bits(np.asarray(outcore.map("a * 3", a=a, reduce="sum")), np.asarray(np.sum(a * 3)))
    assert same_bits(np.asarray(outcore.map("a", a=a, reduce="mean")), np.asarray(np.mean(a)))
    for axis in range(-len(shape), len(shape)):
        for op in ("sum", "mean", "min", "max"):
            got = np.asarray(outcore.map("a - 1", a=a, reduce=op, axis=axis))
            ref = np.asarray(getattr(np, op)(a - 1, axis=axis))
            assert same_bits(got, ref), (shape, axis, op)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint16, np.int64, np.uint64])
def test_integer_reductions(dtype):
    rng = np.random.default_rng(5)
    a = random_array(rng, dtype, (50, 301))
    for op in ("sum", "min", "max", "mean"):
        for axis in (None, 0, 1):
            ref = np.asarray(getattr(np, op)(a, axis=axis))
            got = np.asarray(outcore.map("a", a=a, reduce=op, axis=axis))
            assert same_bits(got, ref), (op, axis)


def test_reduction_with_nan_and_dtype():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    a[1, 2] = np.nan
    for op in ("sum", "min", "max", "mean"):
        assert same_bits(np.asarray(outcore.map("a", a=a, reduce=op, axis=1)), np.asarray(getattr(np, op)(a, axis=1)))
    assert outcore.map("a", a=a, reduce="sum", dtype=np.float32).dtype == np.float32


@pytest.mark.skipif(outcore.cuda_device_count() == 0, reason="no usable GPU")
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_cuda_reductions(dtype):
    """backend="cuda": numpy's bits for every op and axis (all elements of an N-D float sum:
    within the bound docs/map.md states), the same bits under every gpu_mem, from pinned
    arrays too, NaN propagating."""
    rng = np.random.default_rng(11)
    for shape in [(100003,), (2000, 300), (20, 30, 40), (3, 70000)]:
        a = random_array(rng, dtype, shape) if dtype in (np.int32, np.bool_) else \
            (rng.standard_normal(shape) * np.exp(rng.uniform(-20, 20, shape))).astype(dtype)
        if dtype == np.float64:
            a.flat[len(a.flat) // 3] = np.nan if shape[0] == 2000 else a.flat[0]
        pinned = outcore.empty_pinned(shape, dtype)
        pinned[...] = a
        for op in ("sum", "mean", "min", "max"):
            for axis in [None] + list(range(len(shape))):
                ref = np.asarray(getattr(np, op)(a, axis=axis))
                got = [np.asarray(outcore.map("a", a=x, reduce=op, axis=axis, backend="cuda", gpu_mem=mem))
                       for x, mem in ((a, None), (a, "16M"), (pinned, "4M"))]
                assert all(same_bits(g, got[0]) for g in got), (shape, op, axis)
                if axis is None and len(shape) > 1 and op in ("sum", "mean") and a.dtype.kind == "f" \
                        and not np.isnan(a).any():
                    bound = 2 * (np.log2(a.size) + 2) * np.finfo(dtype).eps * np.abs(a.astype(np.float64)).sum()
                    assert abs(float(got[0]) - float(ref)) <= bound / (a.size if op == "mean" else 1)
                else:
                    assert same_bits(got[0], ref), (shape, op, axis)


# ---------------------------------------------------------------- math functions, full range

def ordered(x):
    """Floats as integers in the order of the floats, for ulp distances."""
    bits = x.view(np.int32 if x.dtype == np.float32 else np.int64).astype(np.int64)
    top = np.int64(0x7FFFFFFF if x.dtype == np.float32 else 0x7FFFFFFFFFFFFFFF)
    return np.where(bits < 0, -(bits & top), bits)


def full_range(dtype, n, rng):
    """Random bit patterns over the whole range, and the special values."""
    it = np.uint32 if dtype == np.float32 else np.uint64
    raw = rng.integers(0, np.iinfo(it).max, size=n, dtype=it, endpoint=True).view(dtype)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, np.pi, -np.pi, 1e-30, -1e-30, 88.0, 89.0,
                        709.0, 710.0, -745.0, -1e300, 1e300], dtype=np.float64)
    with np.errstate(all="ignore"):
        special = special.astype(dtype)
    sub = np.array([np.finfo(dtype).smallest_subnormal, np.finfo(dtype).tiny, np.finfo(dtype).max], dtype=dtype)
    moderate = (rng.standard_normal(n) * 4).astype(dtype)
    return np.concatenate([raw, special, sub, -sub, moderate])


# The bound of each function in ulps of the result: glibc's documented maxima (libm-test-ulps,
# x86_64: at most 1-4) plus numpy's own SIMD implementations (float32: up to 4 ulps where numpy uses
# its AVX512/SVML loops), so the two may differ by the sum.
ULP_BOUND = {"power": 4, "sqrt": 0, "exp": 4, "log": 4, "log1p": 4, "expm1": 4, "sin": 4, "cos": 4, "tan": 8, "tanh": 4,
             "arctan2": 4}


@pytest.mark.parametrize("fn", sorted(ULP_BOUND))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_functions_full_range(fn, dtype):
    rng = np.random.default_rng(7)
    x = full_range(dtype, 20000, rng)
    two = fn in ("arctan2", "power")
    expr = "x ** y" if fn == "power" else f"{fn}(x, y)" if two else f"{fn}(x)"
    env = {"x": x, "y": rng.permutation(x)} if two else {"x": x}
    ref = numpy_eval(expr, env)
    got = np.asarray(outcore.map(expr, **env))
    assert got.dtype == ref.dtype
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan), f"{fn}: NaN where numpy has none, or the reverse"
    inf = np.isinf(ref)
    assert np.array_equal(got[inf], ref[inf]), f"{fn}: infinities differ"
    finite = ~nan & ~inf
    dist = np.abs(ordered(got[finite]) - ordered(ref[finite]))
    worst = int(dist.max()) if dist.size else 0
    assert worst <= ULP_BOUND[fn], f"{fn} {np.dtype(dtype)}: {worst} ulps at x={x[finite][dist.argmax()]!r}"


def test_file_inputs_and_output(tmp_path):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    b = np.linspace(0, 1, 4)
    np.save(tmp_path / "a.npy", a)
    out = tmp_path / "c.npy"
    assert outcore.map("a * b", a=tmp_path / "a.npy", b=b, out=out) == out
    assert same_bits(np.load(out), a * b)
    buf = np.empty((2, 3, 4))
    assert outcore.map("a * b", a=a, b=b, out=buf) is buf
    assert same_bits(buf, a * b)


def test_errors():
    a = np.zeros((4, 3))
    with pytest.raises(outcore.InputError, match="column 7") as e:
        outcore.map("a + (b", a=a, b=a)
    assert "\n  a + (b\n" in str(e.value) and str(e.value).endswith("^")
    with pytest.raises(outcore.InputError, match="unknown name 'z'") as e:
        outcore.map("a + z", a=a)
    assert "pass it as a keyword argument" in str(e.value) and "--set" not in str(e.value)
    with pytest.raises(outcore.InputError, match=r"shapes do not broadcast: a is 4 x 3, b is 5 x 3"):
        outcore.map("a + b", a=a, b=np.zeros((5, 3)))
    with pytest.raises(outcore.InputError, match="negative integer powers"):
        outcore.map("i ** j", i=np.arange(3), j=np.array([1, -1, 2]))
    with pytest.raises(outcore.InputError, match="float16"):
        outcore.map("sqrt(u)", u=np.arange(3, dtype=np.uint8))
    assert math.isnan(outcore.map("a", a=np.zeros(0), reduce="mean"))


def test_zero_dim():
    a = np.array(2.5)
    assert same_bits(np.asarray(outcore.map("a * 3 + 1", a=a)), np.asarray(a * 3 + 1))
    assert outcore.map("a * 3 + 1", a=a).shape == ()


def test_explain_and_backends():
    a = np.zeros((4, 3))
    text = outcore.map("a * 2", a=a, explain=True)
    assert "cpu" in text and "4 x 3" in text
    if outcore.cuda_device_count() == 0:
        with pytest.raises(outcore.UnsupportedError, match="backend cuda: "):
            outcore.map("a * 2", a=a, backend="cuda")
    else:
        assert same_bits(np.asarray(outcore.map("a * 2 + a", a=a, backend="cuda", gpu_mem="50%")), a * 2 + a)
    assert same_bits(np.asarray(outcore.map("a * 2", a=a, backend="auto", gpu_mem="1M")), a * 2)
    with pytest.raises(outcore.InputError, match="gpu_mem"):
        outcore.map("a * 2", a=a, gpu_mem="lots")
    if outcore.cuda_device_count() == 0:
        with pytest.raises(outcore.UnsupportedError, match="backend cuda: "):
            outcore.map("a * 2", a=a, reduce="sum", backend="cuda")
    assert "map" not in outcore.__all__ and callable(outcore.map)


# ---------------------------------------------------------------- exactness at the edges

SIGNED = [np.int8, np.int16, np.int32, np.int64]
COMPARISONS = ["==", "!=", "<", "<=", ">", ">="]


@pytest.mark.parametrize("dtype", SIGNED)
def test_uint64_signed_comparisons_exact(dtype):
    """numpy compares uint64 with a signed type exactly, not in their result_type, float64."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(21)
    s_edges = [info.min, -1, 0, 1, info.max, 2**53 if info.max > 2**53 else info.max]
    u_edges = [0, 1, 2**53 + 1, 2**62 + 1, 2**63 - 1, 2**63, 2**64 - 1] + [int(v) % 2**64 for v in s_edges]
    u = np.array(u_edges + list(rng.integers(0, 2**64 - 1, 20, dtype=np.uint64, endpoint=True)), dtype=np.uint64)
    s = np.array(s_edges + list(rng.integers(info.min, info.max, 10, dtype=dtype, endpoint=True)), dtype=dtype)
    env = {"u": u[:, None], "s": s[None, :], "v": (u[:, None] + np.uint64(1)) // np.uint64(2)}
    env["t"] = (env["v"].astype(dtype) if dtype != np.int64 else (env["v"] >> np.uint64(1)).astype(np.int64))
    for op in COMPARISONS:
        for expr in (f"u {op} s", f"s {op} u", f"v {op} t", f"where(u {op} s, u, v)", f"(s {op} u) & (u > 3)"):
            ref = numpy_eval(expr, env)
            assert same_bits(np.asarray(outcore.map(expr, **env)), ref), expr
        expr = f"u {op} s"
        assert outcore.map(expr, u=env["u"], s=env["s"], reduce="sum") == np.sum(numpy_eval(expr, env)), expr
    # the cases the float64 path got wrong
    assert not outcore.map("u == i", u=np.array([2**62 + 1], np.uint64), i=np.array([2**62], np.int64))[0]
    assert outcore.map("u != i", u=np.array([2**63, 2**64 - 1], np.uint64), i=np.array([-1, -1], dtype)).all()


def odd_bools(rng, shape):
    """bool arrays whose bytes are not all 0 or 1, as a uint8 array's view or a file's bytes."""
    return rng.choice(np.array([0, 1, 2, 127, 128, 255], np.uint8), size=shape).view(np.bool_)


def test_bool_bytes_read_as_truth(tmp_path):
    rng = np.random.default_rng(22)
    x, y = odd_bools(rng, (40, 30)), odd_bools(rng, (30,))
    assert x.view(np.uint8).max() > 1
    env = {"x": x, "y": y, "f": rng.standard_normal(30), "i": rng.integers(-5, 5, 30, dtype=np.int16)}
    for expr in ("x * 1", "x + y", "x * y", "x == True", "x != y", "x < y", "x >= True", "x & y", "x | y", "x ^ y",
                 "~x", "x // y", "x % y", "x ** 2", "where(x, f, i)", "where(y, 1, 2)", "minimum(x, y)",
                 "maximum(x, y)", "clip(x, False, True)", "x * f", "x + i", "abs(x)", "floor(x)", "x"):
        ref = numpy_eval(expr, env)
        assert same_bits(np.asarray(outcore.map(expr, **env)), ref), expr
    for dtype in (np.int8, np.uint16, np.float32, np.float64):
        assert same_bits(outcore.map("x", x=x, dtype=dtype), x.astype(dtype)), dtype
    for op in ("sum", "mean", "min", "max"):
        for axis in (None, 0, 1):
            ref = np.asarray(getattr(np, op)(x, axis=axis))
            assert same_bits(np.asarray(outcore.map("x", x=x, reduce=op, axis=axis)), ref), (op, axis)
    assert outcore.map("x", x=np.array([0, 2, 1, 255], np.uint8).view(np.bool_), reduce="sum") == 3
    np.save(tmp_path / "x.npy", x)
    assert np.load(tmp_path / "x.npy").view(np.uint8).max() > 1
    assert same_bits(outcore.map("x * 1", x=tmp_path / "x.npy"), x * 1)
    assert outcore.map("x", x=tmp_path / "x.npy", reduce="sum") == np.sum(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_min_max_of_negative_zeros(dtype):
    """The result of min and max is an element: -0.0 for an array of -0.0."""
    for shape in [(1,), (7,), (5000,), (3, 4), (20000, 3)]:
        z = np.full(shape, -0.0, dtype)
        for op in ("min", "max"):
            for axis in [None] + list(range(len(shape))):
                ref = np.asarray(getattr(np, op)(z, axis=axis))
                assert same_bits(np.asarray(outcore.map("z", z=z, reduce=op, axis=axis)), ref), (shape, op, axis)


MIN_MAX_LENGTHS = (1, 7, 15, 17, 1000003)


def min_max_cases(dtype, n):
    """(what, array, first) triples of n elements of dtype for min and max: random values, the
    type's extremes, NaN and the infinities at the start, the middle and the end, all NaN, and
    +0.0 and -0.0 tied (first: which of min and max ties, "min" or "max"; None for the others)
    at positions a vector lane, a block or a thread's share would take apart."""
    rng = np.random.default_rng(n)
    dt = np.dtype(dtype)
    base = random_array(rng, dt, n)
    yield "random", base, None
    places = sorted({0, n // 2, n - 1})
    specials = [np.nan, np.inf, -np.inf] if dt.kind == "f" else \
        [True, False] if dt == np.bool_ else [np.iinfo(dt).min, np.iinfo(dt).max]
    for v, p in itertools.product(specials, places):
        a = base.copy()
        a[p] = v
        yield f"{v} at {p}", a, None
    if dt.kind != "f":
        return
    a = base.copy()
    a[places] = np.nan
    yield "NaN at the start, middle and end", a, None
    yield "all NaN", np.full(n, np.nan, dt), None
    for first, second in ((0.0, -0.0), (-0.0, 0.0)):
        for p, q in {(0, n - 1), (1, 16), (3, 4096 + 5), (n // 2, n // 2 + 1), (n - 2, n - 1)}:
            if p < q < n:
                for op, sign in (("max", -1), ("min", 1)):
                    a = (sign * (1 + rng.random(n))).astype(dt)
                    a[p], a[q] = first, second
                    yield f"{first} at {p}, {second} at {q}", a, op


def check_min_max(isa):
    """min and max of min_max_cases on the CPU path outcore.cpu_isa() names: numpy's value, and of
    +0.0 and -0.0 tied the first in index order; whole, along the last axis and axis 0, on 1 and
    3 threads. Returns the failures."""
    failures = []
    for dtype, n in itertools.product(DTYPES, MIN_MAX_LENGTHS):
        for what, a, tie in min_max_cases(dtype, n):
            both = np.stack([a, a[::-1]])
            for op, threads in itertools.product(("min", "max"), (1, 3)):
                runs = [(a, None), (both, 1)] + ([(both, 0)] if tie is None else [])
                for x, axis in runs:
                    got = np.asarray(outcore.map("x", x=x, reduce=op, axis=axis, threads=threads, backend="cpu"))
                    ref = np.asarray(getattr(np, op)(x, axis=axis))
                    if op == tie:  # numpy's choice of zero varies with its lanes and the length
                        ref = x[np.flatnonzero(x == 0)[0]] if axis is None else \
                            np.array([row[np.flatnonzero(row == 0)[0]] for row in x])
                    if not same_bits(got, np.asarray(ref, dtype=a.dtype)):
                        failures.append(f"{isa}: {op} of {np.dtype(dtype).name}[{n}] {what}, axis {axis}, "
                                        f"{threads} threads: {got} where {ref} was expected")
    return failures


@pytest.mark.parametrize("isa", ["ref", "avx2", "avx512"])
def test_min_max_on_every_cpu_path(isa):
    """min and max on each CPU kernel path (OUTCORE_CPU_ISA, in a process of its own: the path is
    chosen once per process) give numpy's values, NaN propagating, and the first in index order of
    +0.0 and -0.0 tied, whatever the length, the lanes, the blocks and the threads."""
    env = dict(os.environ, OUTCORE_CPU_ISA=isa, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = ("import sys, outcore, test_map_numpy as t\n"
            f"if outcore.cpu_isa() != {isa!r}: sys.exit(77)\n"
            f"failures = t.check_min_max({isa!r})\n"
            "print('\\n'.join(failures[:20]))\n"
            "sys.exit(1 if failures else 0)\n")
    child = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(__file__), env=env,
                           capture_output=True, text=True)
    if child.returncode == 77:
        pytest.skip(f"this CPU has no {isa} path")
    assert child.returncode == 0, child.stdout + child.stderr


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_float_function_types(dtype):
    """arctan2's loop is the smallest float both operands cast to safely (int8 and uint8:
    float16; int16 and uint16: float32), not their common type's float."""
    a = np.arange(1, 4).astype(dtype)
    for other in DTYPES:
        b = np.arange(2, 5).astype(other)
        for expr in ("arctan2(a, b)", "arctan2(b, a)", "arctan2(a, 2)", "arctan2(a, 2.5)", "arctan2(a, 70000)"):
            ref = numpy_eval(expr, {"a": a, "b": b})
            if ref.dtype == np.float16:
                with pytest.raises(outcore.InputError, match="float16"):
                    outcore.map(expr, a=a, b=b)
            else:
                got = np.asarray(outcore.map(expr, a=a, b=b))
                assert got.dtype == ref.dtype, (expr, a.dtype, b.dtype)
                assert np.allclose(got, ref, rtol=1e-6), (expr, a.dtype, b.dtype)


def test_python_ints_beyond_int64():
    """Python ints from -2^63 to 2^64 - 1 (literals and scalars), with numpy's NEP 50 bounds:
    one that the other operand's type cannot hold is an error where numpy raises OverflowError,
    and compares exactly where numpy does. Two cases vary with numpy's version and are left
    out of the comparison: numpy.where casts a Python int its array type cannot hold (map's
    documented rule, numpy 2.4's) where numpy 2.5 raises OverflowError; and arctan2, a
    transcendental function, is bit-identical only where both use the same libm (its ulp
    bound is test_math_functions_full_range's)."""
    big, top, low = 2**64 - 1, 2**63, -2**63
    env = {"u": np.array([0, 1, 2**63, 2**64 - 1], np.uint64), "i": np.array([low, -1, 0, 2**63 - 1]),
           "i8": np.array([-128, -1, 0, 127], np.int8), "b": np.array([True, False, True, False]),
           "f": np.array([0.5, -1.0, 1e19, 2e19]), "g": np.array([0.5, -1.0, 1e19, 2e19], np.float32)}
    exprs = ["u + s", "u - s", "u * s", "u // s", "u % s", "u & s", "u ^ s", "u == s", "u < s", "i < s", "i8 >= s",
             "i == s", "i + s", "i8 + s", "b + s", "b == s", "f + s", "g > s", "u / s", "i / s", "where(b, u, s)",
             "where(b, i8, s)", "minimum(u, s)", "clip(u, 0, s)", "u ** s", "i ** s", "f ** s", "arctan2(f, s)",
             "minimum(s, 1)", "minimum(s, 2.5)", "arctan2(s, 1)", "abs(s)", "floor(s)", "s", "where(b, s, 1)",
             "s - 1 + u", "-s + u", "~s + i", "s // 7 + u", "s % 1000", "i < -(s // 2)"]
    for value in (big, top, low, big - 1, top - 1, low + 1):
        for expr in exprs:
            try:
                ref = numpy_eval(expr, {**env, "s": value})
            except (OverflowError, TypeError, ValueError):
                if expr.startswith("where("):
                    continue  # numpy 2.5 and later: see the docstring
                with pytest.raises(outcore.InputError):
                    outcore.map(expr, **env, s=value)
                continue
            got = np.asarray(outcore.map(expr, **env, s=value))
            if "arctan2" in expr:
                assert got.dtype == ref.dtype and np.allclose(got, ref, rtol=1e-15, atol=0), (expr, value)
                continue
            assert same_bits(got, ref), (expr, value)
            literal = expr.replace("s", f"({value})") if "abs" not in expr else None
            if literal:
                assert same_bits(np.asarray(outcore.map(literal, **env)), ref), literal
    assert same_bits(outcore.map("u + 18446744073709551615", u=env["u"]), env["u"] + big)
    assert same_bits(outcore.map("i + -9223372036854775808", i=env["i"]), env["i"] + low)
    for bad in ("u + 18446744073709551616", "u + -9223372036854775809 + 1", "u * 0 + 2 ** 64"):
        with pytest.raises(outcore.InputError):
            outcore.map(bad, u=env["u"])


def test_unaligned_array_is_copied():
    """An array off its elements' alignment (numpy.frombuffer at an odd offset), which the
    library refuses to read in place, is copied aligned first: numpy's result."""
    raw = bytearray(1) + bytearray(np.arange(10.0).tobytes())
    u = np.frombuffer(raw, dtype=np.float64, count=10, offset=1)
    assert not u.flags.aligned
    assert np.array_equal(outcore.map("a * 2 + 1", a=u), u * 2 + 1)


def test_python_scalars_fold_exactly():
    """Python ints past 2^53 against floats compare exactly, and int / int rounds once, as
    Python computes them (converting the int to a double first rounds it)."""
    import random
    a = np.zeros(2)
    big = "18446744073709551615"
    cases = ["(2**53+1) / 3", f"{big} / 3", "-(2**63) / 7", "(2**53+1) / 2", f"{big} / (2**63+1)", "-5 / 2",
             "2**53+1 == 9007199254740992.0", "2**53+1 > 9007199254740992.0", "9007199254740992.0 < 2**53+1",
             f"{big} >= 1.8446744073709552e19", "2**63 != 9.223372036854775808e18", "-3 < -2.5", "0 == -0.0"]
    rng = random.Random(7)
    for _ in range(200):
        x, y = rng.randint(-2**63, 2**64 - 1), rng.randint(-2**63, 2**64 - 1) or 1
        cases.append(f"({x}) / ({y})")
        f = float(x) + rng.choice([0.0, 0.5, -1.0]) * rng.choice([1, 2**11])
        cases.append(f"({x}) < ({f!r})")
    for e in cases:
        got = outcore.map(f"a + ({e})", a=a)[0]
        assert got == eval(e), (e, got, eval(e))


def test_numpy_corners_of_reductions_and_powers(tmp_path):
    """float32 mean divides by its count in float64 (numpy's intp count), once rounded: past
    2^24 elements the count is no float32. A 0-d input (np.load gives an ndarray) and where()
    take numpy's ** shortcuts (sqrt(-inf) is nan, sqrt(-0.0) -0.0), an operation on 0-d
    operands (a numpy scalar) plain pow. A call takes a trailing comma, and a form feed is
    white space, as in Python."""
    a, b = np.ones((4097, 1), np.float32), np.zeros(4097, np.float32)
    assert outcore.map("a + b", a=a, b=b, reduce="mean") == (a + b).mean()
    assert np.array_equal(outcore.map("a + b", a=a[None], b=b[None], reduce="mean", axis=1),
                          (a[None] + b[None]).mean(axis=1))
    for v in (-np.inf, -0.0, 4.0):
        path = tmp_path / "s.npy"
        np.save(path, np.float64(v))
        x = np.load(path)
        with np.errstate(invalid="ignore"):
            refs = (("x ** 0.5", x ** 0.5), ("(x + 0) ** 0.5", (x + 0) ** 0.5),
                    ("where(x < 1, x, x) ** 0.5", np.where(x < 1, x, x) ** 0.5))
        for expr, ref in refs:
            got = outcore.map(expr, x=str(path))
            assert np.array_equal(got, ref, equal_nan=True) and np.signbit(got) == np.signbit(ref), (expr, v, got)
    x = np.arange(4.0)
    assert np.array_equal(outcore.map("sqrt(x,)", x=x), np.sqrt(x))
    assert np.array_equal(outcore.map("where(x > 1, x, 0,)", x=x), np.where(x > 1, x, 0))
    assert np.array_equal(outcore.map("x\f+ 1", x=x), x + 1)
