"""`outcore map` on real files: results against numpy, error messages, exit codes, no output file
on failure."""
import json

import numpy as np
import pytest

from conftest import outcore_bin, run


@pytest.fixture
def arrays(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 40))
    b = rng.standard_normal((300, 40))
    v = rng.standard_normal(40).astype(np.float32)
    i = rng.integers(-50, 50, size=(300, 1), dtype=np.int16)
    for name, x in {"a": a, "b": b, "v": v, "i": i}.items():
        np.save(tmp_path / f"{name}.npy", x)
    return tmp_path, {"a": a, "b": b, "v": v, "i": i}


def test_elementwise_and_json(arrays):
    d, x = arrays
    out = d / "c.npy"
    proc = run("map", "a * v + i // 3", f"a={d/'a.npy'}", f"v={d/'v.npy'}", f"i={d/'i.npy'}", "-o", out, "--json")
    ref = x["a"] * x["v"] + x["i"] // 3
    got = np.load(out)
    assert got.dtype == ref.dtype and np.array_equal(got, ref)
    summary = json.loads(proc.stdout)
    assert summary["shape"] == [300, 40] and summary["dtype"] == "float64"
    assert summary["bytes_written"] == ref.nbytes
    assert summary["bytes_read"] == x["a"].nbytes + x["v"].nbytes + x["i"].nbytes


def test_an_empty_result_reads_nothing(tmp_path):
    """(0, 1) against (1, 5000) broadcasts to (0, 5000): no element is computed, no byte read."""
    np.save(tmp_path / "z.npy", np.zeros((0, 1), np.uint8))
    np.save(tmp_path / "r.npy", np.arange(5000, dtype=np.uint8).reshape(1, 5000))
    for extra in (["-o", tmp_path / "c.npy"], ["--reduce", "sum"]):
        proc = run("map", "a + b", f"a={tmp_path / 'z.npy'}", f"b={tmp_path / 'r.npy'}", "--json", *extra)
        summary = json.loads(proc.stdout)
        assert summary["elements"] == 0 and summary["bytes_read"] == 0, summary
    assert np.load(tmp_path / "c.npy").shape == (0, 5000)


def test_set_dtype_and_reduce(arrays):
    d, x = arrays
    out = d / "c.npy"
    run("map", "v * r", f"v={d/'v.npy'}", "--set", "r=0.2", "-o", out)
    assert np.load(out).dtype == np.float32 and np.array_equal(np.load(out), x["v"] * 0.2)
    run("map", "a * b", f"a={d/'a.npy'}", f"b={d/'b.npy'}", "--dtype", "float32", "-o", out)
    assert np.array_equal(np.load(out), (x["a"] * x["b"]).astype(np.float32))
    proc = run("map", "a * b", f"a={d/'a.npy'}", f"b={d/'b.npy'}", "--reduce", "sum", "--quiet")
    assert float(proc.stdout) == np.sum(x["a"] * x["b"])
    run("map", "a * b", f"a={d/'a.npy'}", f"b={d/'b.npy'}", "--reduce", "max", "--axis", "0", "-o", out)
    assert np.array_equal(np.load(out), np.max(x["a"] * x["b"], axis=0))


def expect_error(d, *args, message):
    out = d / "bad.npy"
    proc = run("map", *args, "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert not out.exists()
    assert [p.name for p in d.iterdir() if "bad" in p.name] == []  # no temporary file either
    return proc.stderr


def test_errors(arrays, tmp_path):
    d, _ = arrays
    a, b = f"a={d/'a.npy'}", f"b={d/'b.npy'}"
    err = expect_error(d, "a * * b", a, b, message="syntax error in the expression at column 5")
    lines = err.splitlines()
    assert lines[1] == "  a * * b" and lines[2] == "      ^"
    assert len(expect_error(d, "a * q", a, message="unknown name 'q'").splitlines()) == 1
    np.save(tmp_path / "big.npy", np.zeros((301, 40)))
    assert expect_error(d, "a * b", a, f"b={tmp_path/'big.npy'}",
                        message="shapes do not broadcast: a is 300 x 40, b is 301 x 40").count("\n") == 1
    expect_error(d, "a * b", a, b, "--dtype", "int32", message="cannot be written as int32")
    expect_error(d, "a * b", a, f"b={d/'missing.npy'}", message="missing.npy")
    expect_error(d, "a * b", a, message="unknown name 'b'")
    expect_error(d, "a", a, "--reduce", "sum", "--axis", "2", message="axis 2 is out of bounds")
    expect_error(d, "a ** b", f"a={d/'i.npy'}", "--set", "b=-1", message="negative integer powers")
    # numpy's spellings that map does not take, and its arguments in the wrong order, named so.
    for expr, column in (("np.sqrt(a)", 3), ("a.sum()", 2), ("numpy.abs(a)", 6)):
        expect_error(d, expr, a, message=f"column {column}: a name takes no '.': write functions without a module")
    err = expect_error(d, a, "a * 2", message=f"'a * 2' is not an input, and the expression '{a}' is one: the "
                       "expression goes first")
    assert len(err.splitlines()) == 1
    expect_error(d, "a == 2", "q", message="'q' is not an input: write NAME=FILE.npy")


def gpus():
    return len(json.loads(run("devices", "--json").stdout)["gpus"])


def test_cuda_backend_without_a_gpu(arrays):
    """--backend cuda where no GPU can run it: one line, exit 1 (as gram), no file; auto runs on
    the CPU and --explain says so."""
    if gpus():
        pytest.skip("a GPU is usable here")
    d, x = arrays
    out = d / "c.npy"
    proc = run("map", "a + 1", f"a={d/'a.npy'}", "-o", out, "--backend", "cuda", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "backend cuda:" in proc.stderr and not out.exists()
    summary = json.loads(run("map", "a + 1", f"a={d/'a.npy'}", "-o", out, "--backend", "auto", "--json").stdout)
    assert summary["backend"] == "cpu" and np.array_equal(np.load(out), x["a"] + 1)
    info = json.loads(run("map", "a + 1", f"a={d/'a.npy'}", "--explain", "--json").stdout)
    assert info["backend"] == "cpu" and "cuda" in info["reason"]


def test_cuda_reductions(tmp_path):
    """--backend cuda reduces on the GPU: numpy's values for every op and axis, the same bytes
    under every --gpu-mem (several chunks), NaN propagating. Without a GPU: one line, exit 1."""
    rng = np.random.default_rng(7)
    f64 = rng.standard_normal((3000, 70)) * np.exp(rng.uniform(-20, 20, (3000, 70)))
    nan = f64.copy()
    nan[1234, 56] = np.nan
    inputs = {"f64": f64, "f32": f64.astype(np.float32), "nan": nan,
              "i32": rng.integers(-10**5, 10**5, (3000, 70), dtype=np.int32), "bool": rng.random((3000, 70)) < 0.5}
    for name, a in inputs.items():
        np.save(tmp_path / f"{name}.npy", a)
    if not gpus():
        a = f"a={tmp_path / 'f64.npy'}"
        proc = run("map", "a * 2", a, "--reduce", "sum", "--backend", "cuda", check=False)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "backend cuda:" in proc.stderr, proc.stderr
        assert run("map", "a * 2", a, "--reduce", "sum", "--backend", "auto").returncode == 0
        return
    for name, a in inputs.items():
        expr, x = ("a", a) if a.dtype == np.bool_ else ("a * 3 - 1", a * 3 - 1)
        for op in ("sum", "mean", "min", "max"):
            for axis in (None, 0, 1):
                got = []
                for mem in (None, "1M", "64K"):
                    out = tmp_path / "r.npy"
                    args = ["map", expr, f"a={tmp_path / f'{name}.npy'}", "--reduce", op, "-o", out, "--backend", "cuda"]
                    args += ["--axis", str(axis)] if axis is not None else []
                    args += ["--gpu-mem", mem] if mem else []
                    got.append(np.load(out) if run(*args).returncode == 0 else None)
                ref = getattr(np, op)(x, axis=axis)
                what = (name, op, axis)
                assert all(g.dtype == ref.dtype and g.tobytes() == got[0].tobytes() for g in got), what
                if axis is None and op in ("sum", "mean") and a.dtype.kind == "f" and name != "nan":
                    # All elements of a 2-D array: row sums added pairwise (docs/map.md).
                    bound = 2 * (np.log2(x.size) + 2) * np.finfo(a.dtype).eps * np.abs(x.astype(np.float64)).sum()
                    assert abs(float(got[0]) - float(ref)) <= bound / (x.size if op == "mean" else 1), what
                else:
                    assert np.array_equal(got[0], ref, equal_nan=a.dtype.kind == "f"), what


def test_cuda_backend_equals_numpy(arrays):
    """On a GPU: broadcast and mixed dtypes through several chunks equal numpy bit for bit."""
    if not gpus():
        pytest.skip("no usable GPU")
    d, x = arrays
    out = d / "c.npy"
    proc = run("map", "a * v + i // 3", f"a={d/'a.npy'}", f"v={d/'v.npy'}", f"i={d/'i.npy'}", "-o", out,
               "--backend", "cuda", "--gpu-mem", "64K", "--json")
    summary = json.loads(proc.stdout)
    assert summary["backend"] == "cuda" and summary["backend_desc"].startswith("cuda:0")
    ref = x["a"] * x["v"] + x["i"] // 3
    got = np.load(out)
    assert got.dtype == ref.dtype and np.array_equal(got, ref)


def test_output_is_not_an_input(arrays):
    d, _ = arrays
    proc = run("map", "a + 1", f"a={d/'a.npy'}", "-o", d / "a.npy", check=False)
    assert proc.returncode == 2 and "is the input" in proc.stderr


def test_explain(arrays):
    d, _ = arrays
    proc = run("map", "a * b", f"a={d/'a.npy'}", f"b={d/'b.npy'}", "--explain", "--json")
    info = json.loads(proc.stdout)
    assert info["backend"] == "cpu" and info["elements"] == 12000


def test_inputs_larger_than_host_mem(tmp_path):
    """Inputs past --host-mem are read through the mapping and their pages dropped behind the
    parts (and the output's): same result."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((700, 1000))
    b = rng.standard_normal((700, 1000)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / "c.npy"
    run("map", "a * b - 1", f"a={tmp_path/'a.npy'}", f"b={tmp_path/'b.npy'}", "-o", out, "--host-mem", "1M")
    assert np.array_equal(np.load(out), a * b - 1)
    proc = run("map", "a * b - 1", f"a={tmp_path/'a.npy'}", f"b={tmp_path/'b.npy'}", "--reduce", "sum", "--host-mem", "1M",
               "--json")
    assert json.loads(proc.stdout)["value"] == float(np.sum(a * b - 1))
    run("map", "a * b", f"a={tmp_path/'a.npy'}", f"b={tmp_path/'b.npy'}", "--reduce", "min", "--axis", "-1",
        "--host-mem", "1M", "-o", out)
    assert np.array_equal(np.load(out), np.min(a * b, axis=-1))


def test_wide_python_ints_and_odd_bools(tmp_path):
    """--set takes Python ints from -2^63 to 2^64 - 1 under numpy's bounds; a .npy bool file
    whose bytes are not 0 or 1 reads as numpy reads it; uint64 against int64 compares exactly."""
    u = np.array([0, 1, 2**63, 2**64 - 1], np.uint64)
    i = np.array([-2**63, -1, 2**62, 2**63 - 1])
    x = np.array([0, 2, 1, 255], np.uint8).view(np.bool_)
    for name, arr in {"u": u, "i": i, "x": x}.items():
        np.save(tmp_path / f"{name}.npy", arr)
    out = tmp_path / "c.npy"
    files = [f"u={tmp_path/'u.npy'}", f"i={tmp_path/'i.npy'}", f"x={tmp_path/'x.npy'}"]
    run("map", "u + s", *files, "--set", "s=18446744073709551615", "-o", out)
    assert np.array_equal(np.load(out), u + (2**64 - 1)) and np.load(out).dtype == np.uint64
    run("map", "i - 1 - r", *files, "--set", "r=-9223372036854775808", "-o", out)
    assert np.array_equal(np.load(out), i - 1 - (-2**63))
    run("map", "(u == i + 1) | (u > i)", *files, "-o", out)
    assert np.array_equal(np.load(out), (u == i + 1) | (u > i))
    run("map", "x * 1", *files, "-o", out)
    assert np.array_equal(np.load(out), x * 1)
    proc = run("map", "x", *files, "--reduce", "sum", "--quiet")
    assert int(proc.stdout) == 3
    expect_error(tmp_path, "i + s", *files, "--set", "s=18446744073709551615",
                 message="Python integer 18446744073709551615 is out of bounds for int64")
    expect_error(tmp_path, "i + s", *files, "--set", "s=-9223372036854775809", message="below -2^63")


@pytest.mark.parametrize("value, want", [("+5", 5.0), ("-(5)", -5.0), ("+-5", -5.0)])
def test_set_takes_a_signed_literal(tmp_path, value, want):
    """--set values are Python literals: a leading + (unary +, since map reads it as Python
    does) is the literal itself, as -(5) is its negation."""
    np.save(tmp_path / "x.npy", np.arange(3.0))
    run("map", "x + s", f"x={tmp_path / 'x.npy'}", "--set", f"s={value}", "-o", tmp_path / "o.npy", "-q")
    assert np.array_equal(np.load(tmp_path / "o.npy"), np.arange(3.0) + want)


def test_ctrl_c_stops_a_reduction_over_a_leading_axis(tmp_path):
    """A reduction over axis 0 of a tall broadcast runs as one part of strided blocks; SIGINT
    stops it within moments (exit 130, nothing written), not after every element."""
    import signal
    import subprocess
    import time
    np.save(tmp_path / "col.npy", np.ones((1000000, 1)))
    np.save(tmp_path / "row.npy", np.ones(4096))
    # the CPU backend's strided reduction (auto may take a GPU, whose start and end the
    # timing below would count)
    args = [outcore_bin(), "map", "c * r", f"c={tmp_path / 'col.npy'}", f"r={tmp_path / 'row.npy'}", "--reduce",
            "sum", "--axis", "0", "--backend", "cpu", "-q"]
    out = tmp_path / "ax.npy"
    start = time.monotonic()
    subprocess.run([*args, "-o", str(out)], check=True, capture_output=True)
    whole = time.monotonic() - start
    out.unlink()
    if whole < 0.5:
        pytest.skip(f"the reduction takes {whole:.2f} s here: too short to interrupt")
    job = subprocess.Popen([*args, "-o", str(out)], stderr=subprocess.PIPE, text=True)
    time.sleep(whole * 0.3)
    sent = time.monotonic()
    job.send_signal(signal.SIGINT)
    err = job.communicate(timeout=120)[1]
    after = time.monotonic() - sent
    assert job.returncode == 130, (job.returncode, err)
    assert after < whole * 0.5, (after, whole)
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith("ax.npy")] == []


def test_host_mem_holds_over_inputs_many_times_it(tmp_path):
    """Inputs 6 times --host-mem are read through their mappings, whose pages the threads drop
    behind them (those that two threads' ranges share too, and those of a reduction over an axis
    before the last): the peak resident memory stays within the budget plus the fixed cost of
    docs/memory.md (16 MiB plus 4 MiB per thread), for an element-wise job and for sums over all
    elements and each axis, whose values are numpy's, bit for bit. Rows of 1000 float32 are
    shorter than a page; a sum over axis 0 runs in bands of rows, over axis 1 a part per run of
    outer indices."""
    rng = np.random.default_rng(12)
    a = rng.random((500, 50, 1000), dtype=np.float32)  # 100 MB each
    b = rng.random((500, 50, 1000), dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    inputs = [f"a={tmp_path / 'a.npy'}", f"b={tmp_path / 'b.npy'}"]
    out = tmp_path / "c.npy"

    def bounded(expr, *args):
        # two threads on every machine: the allowance grows with them, and so does the job
        proc = run("map", expr, *inputs, *args, "--backend", "cpu", "--threads", "2", "--host-mem", "16M", "--json")
        info = json.loads(proc.stdout)
        allowance = (16 << 20) + (16 << 20) + info["threads"] * (4 << 20)
        assert info["host_peak_bytes"] <= allowance, (expr, args, info["host_peak_bytes"] >> 20, allowance >> 20)
        return info

    bounded("a * b + 1", "-o", out)
    assert np.array_equal(np.load(out, mmap_mode="r"), a * b + 1)
    out.unlink()
    product = a * b
    assert bounded("a * b", "--reduce", "sum")["value"] == float(np.sum(product))
    for axis in range(3):
        bounded("a * b", "--reduce", "sum", "--axis", str(axis), "-o", out)
        assert np.array_equal(np.load(out), np.sum(product, axis=axis)), axis
