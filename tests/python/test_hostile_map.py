"""outcore.map against hostile calls: expressions past the size and nesting limits raise
InputError (also on a thread with a small stack), an out array that overlaps an input is
refused, a shape whose element count overflows is refused, and Ctrl-C stops a running job
at once, leaving no file behind."""
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import outcore

MAX_NESTING = 256
MAX_TOKENS = 4096


def npy_header(descr, shape):
    """A .npy version 1.0 header declaring any shape (numpy refuses to make such arrays)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def one_line(exc):
    text = str(exc.value)
    assert "\n" not in text, text
    return text


HOSTILE = {
    "13,000 nested parentheses": "(" * 13000 + "a" + ")" * 13000,
    "sum of 30,000 terms": "+".join(["a"] * 30000),
    "60,000 unary minus": "-" * 60000 + "a",
    "20,000 nested abs(": "abs(" * 20000 + "a" + ")" * 20000,
    "30,000 **": "**".join(["a"] * 30000),
    "a million spaces": "a" + " " * (1 << 20),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_long_or_deep_expression_raises(case):
    a = np.arange(5.0)
    with pytest.raises(outcore.InputError) as exc:
        outcore.map(HOSTILE[case], a=a)
    text = one_line(exc)
    assert "map's limit" in text and (f"{MAX_NESTING} levels" in text or f"{MAX_TOKENS} tokens" in text
                                      or "1048576 bytes" in text), text


def test_limits_hold_on_a_small_thread_stack():
    """The deepest and longest expressions allowed, and ones past the limits, on a thread of
    256 KiB of stack (Python's threads may be that small)."""
    a = np.arange(5.0)
    cases = ["(" * MAX_NESTING + "a" + ")" * MAX_NESTING, "+".join(["a"] * (MAX_TOKENS // 2)),
             "abs(" * (MAX_NESTING - 1) + "a" + ")" * (MAX_NESTING - 1), HOSTILE["13,000 nested parentheses"]]
    results = []

    def work():
        for expr in cases:
            try:
                results.append(outcore.map(expr, a=a))
            except outcore.InputError as exc:
                results.append(exc)

    old = threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=work)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    assert len(results) == 4
    assert np.array_equal(results[0], a)
    assert np.array_equal(results[1], a * (MAX_TOKENS // 2))
    assert np.array_equal(results[2], a)
    assert isinstance(results[3], outcore.InputError) and "nests deeper" in str(results[3])


def test_out_sharing_memory_with_an_input_is_refused():
    a = np.arange(10.0)
    b = np.ones(10)
    keep = a.copy()
    with pytest.raises(ValueError, match="out shares memory with the input 'a'") as exc:
        outcore.map("a * b + 1", a=a, b=b, out=a)
    one_line(exc)
    assert np.array_equal(a, keep)
    # A view of the same buffer, shifted by one element, as numpy would compute from copies.
    x = np.arange(12.0)
    with pytest.raises(outcore.InputError, match="shares memory with the input 'b'"):
        outcore.map("b * 2", b=x[1:11], out=x[:10])
    assert np.array_equal(x, np.arange(12.0))
    # A broadcast input inside the output.
    y = np.zeros((3, 4))
    with pytest.raises(outcore.InputError, match="shares memory with the input 'r'"):
        outcore.map("r + s", r=y[0], s=np.ones((3, 4)), out=y)
    # An input that is copied before the library reads it (not C-contiguous) does not overlap.
    z = np.arange(20.0)
    out = z[:10]
    got = outcore.map("s * 2", s=z[::2], out=out)
    assert got is out and np.array_equal(out, np.arange(0.0, 20.0, 2) * 2)


def test_out_mapping_an_input_file_is_refused(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(10.0))
    before = path.read_bytes()
    out = np.load(path, mmap_mode="r+")
    with pytest.raises(outcore.InputError, match="out maps the input file of 'a'") as exc:
        outcore.map("a + 1", a=str(path), out=out)
    one_line(exc)
    del out
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]


def test_out_mapping_the_file_an_input_array_maps_is_refused(tmp_path):
    """Two mappings of one file share no memory as numpy.shares_memory sees it, yet they are
    the same bytes: an out mapping the file an input array maps is refused, for map and for
    matmul (whose panels would read what its tiles had written)."""
    path = tmp_path / "sq.npy"
    np.save(path, np.random.default_rng(1).standard_normal((300, 300)))
    before = path.read_bytes()
    a, out = np.load(path, mmap_mode="r"), np.load(path, mmap_mode="r+")
    with pytest.raises(outcore.InputError, match="out maps the input file of 'a'") as exc:
        outcore.map("a * 2", a=a, out=out)
    one_line(exc)
    with pytest.raises(outcore.InputError, match="out maps the input file of 'A'") as exc:
        outcore.matmul(a, a, out=out, backend="cpu", host_mem="200K")
    one_line(exc)
    del a, out
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sq.npy"]


@pytest.mark.parametrize("shape", [(2**62,) * 4, (2**62, 2**62, 0)])
def test_shape_whose_element_count_overflows_raises(tmp_path, shape):
    path = tmp_path / "h.npy"
    path.write_bytes(npy_header("<f8", shape) + bytes(64))
    with pytest.raises(outcore.InputError, match="more than 2\\^63 - 1 elements") as exc:
        outcore.map("a + 1", a=str(path), out=str(tmp_path / "o.npy"))
    assert one_line(exc).startswith(f"{path}: shape ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.npy"]


@pytest.mark.parametrize("ndim", [33, 64])
def test_more_than_32_dimensions_names_the_limit(tmp_path, ndim):
    """numpy allows 64 dimensions, map 32: a file or an array past that says so."""
    path = tmp_path / "d.npy"
    np.save(path, np.zeros((1,) * ndim))
    with pytest.raises(outcore.InputError) as exc:
        outcore.map("a + 1", a=str(path))
    assert one_line(exc) == f"{path}: the array has {ndim} dimensions; outcore reads at most 32 (numpy allows 64)"
    with pytest.raises(outcore.InputError) as exc:
        outcore.map("a + 1", a=np.zeros((1,) * ndim))
    assert one_line(exc) == f"input 'a': the array has {ndim} dimensions; map reads at most 32 (numpy allows 64)"


def test_axis_of_a_0d_array_as_numpy():
    """numpy.sum, min and max take axis 0 and -1 of a 0-d array; numpy.mean none."""
    s = np.asarray(2.5)
    for reduce in ("sum", "min", "max"):
        for axis in (0, -1):
            got = outcore.map("a * 2", a=s, reduce=reduce, axis=axis)
            assert got == getattr(np, reduce)(s * 2, axis=axis) and np.ndim(got) == 0, (reduce, axis)
        with pytest.raises(outcore.InputError, match="axis 1 is out of bounds"):
            outcore.map("a * 2", a=s, reduce=reduce, axis=1)
    with pytest.raises(np.exceptions.AxisError):
        np.mean(s, axis=0)
    with pytest.raises(outcore.InputError, match="axis 0 is out of bounds for a result of 0 dimensions"):
        outcore.map("a * 2", a=s, reduce="mean", axis=0)


INTERRUPTED_JOB = textwrap.dedent("""
    import sys, numpy as np, outcore
    a = np.linspace(0, 1, 8000).reshape(8000, 1)
    b = np.linspace(0, 1, 4000)
    print("started", flush=True)
    try:
        outcore.map("sin(exp(cos(a * b))) * tanh(a + b) + log1p(abs(a - b)) + sqrt(expm1(a * b + 1))"
                    " + arctan2(a, b + 1) + exp(sin(a)) * cos(tan(b))", a=a, b=b, out=sys.argv[1], threads=1,
                    backend="cpu")
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
""")


def test_ctrl_c_cancels_a_running_map_at_once(tmp_path):
    """A job of many seconds (32 M elements of transcendentals on one CPU thread: auto would give
    a GPU host's device, which finishes it within the 0.5 s) gets SIGINT 0.5 s in: the process
    ends with KeyboardInterrupt within 2.5 s and leaves no output or temporary."""
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "job.py"
    script.write_text(INTERRUPTED_JOB)
    proc = subprocess.Popen([sys.executable, str(script), str(work / "out.npy")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out.strip() == "interrupted", (out, err[-1000:])
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-1000:]
    assert took < 2.5, f"the job stopped {took:.1f} s after Ctrl-C"
    assert list(work.iterdir()) == []


def test_a_cancelled_map_computes_no_more_parts():
    """A job cancelled while it runs stops its threads where they are: the elements written
    are the parts done before the cancel and the few in flight (runs of written elements: at
    most two a thread and the prefix), not a block of every part left (each part computed its
    first block, and faulted in its stretch of the output, before it looked)."""
    from outcore import _lib
    threads, n = 2, 12_000_000
    x = np.linspace(0, 1, n)
    out = np.full(n, np.nan)
    ctx = outcore.Context()
    failure = []

    def job():
        try:
            outcore.map("sin(x) ** 2 + cos(x) * exp(x) + tanh(x) * log1p(x)", x=x, out=out, threads=threads,
                        backend="cpu", context=ctx)
        except Exception as e:  # noqa: BLE001 - the cancel's error is what is checked
            failure.append(e)

    worker = threading.Thread(target=job)
    worker.start()
    while np.isnan(out[0]) and worker.is_alive():
        time.sleep(0.001)
    _lib.lib.oc_context_cancel(ctx._handle)
    worker.join()
    ctx.close()
    assert failure and isinstance(failure[0], outcore.CancelledError), failure
    written = ~np.isnan(out)
    runs = int(written[0]) + int(np.count_nonzero(written[1:] & ~written[:-1]))
    assert 0 < np.count_nonzero(written) < n and runs <= 2 * threads + 1, runs


def test_untraced_mappings_of_an_input_file_are_refused(tmp_path):
    """Mappings numpy does not trace to a file (an as_strided view of a memmap, np.frombuffer
    of an mmap) are found by their addresses: out mapping an input file, or an input array
    mapping the file out maps, is refused as a numpy.memmap is, for matmul and map."""
    import mmap
    from numpy.lib.stride_tricks import as_strided
    path = tmp_path / "x.npy"
    s = np.arange(1600.0).reshape(40, 40)
    np.save(path, s)
    before = path.read_bytes()
    strided = as_strided(np.load(path, mmap_mode="r+"))
    with open(path, "r+b") as f:
        raw = mmap.mmap(f.fileno(), 0)
        framed = np.frombuffer(raw, "<f8", offset=128).reshape(40, 40)
        for out in (strided, framed):
            with pytest.raises(outcore.InputError, match="out maps the input file of 'A'") as exc:
                outcore.matmul(str(path), s, out=out)
            one_line(exc)
            with pytest.raises(outcore.InputError, match="out maps the input file of 'a'"):
                outcore.map("a * 2", a=str(path), out=out)
            # an input array mapping the file out maps
            with pytest.raises(outcore.InputError, match="out maps the input file of 'A'"):
                outcore.matmul(as_strided(np.load(path, mmap_mode="r")), s, out=out)
    del framed, out, strided, raw
    assert path.read_bytes() == before
    # memory that maps no file is not refused for it
    assert np.array_equal(outcore.matmul(str(path), s, out=np.empty((40, 40))), s @ s)


def test_mappings_of_files_with_unusual_names(tmp_path):
    """The process's mappings are read as bytes: a mapped file whose name is not UTF-8
    (anywhere in the process) no longer fails every out= call with a UnicodeDecodeError, and
    one whose name holds a newline (written \\012 by the kernel) is still found by its
    addresses, so that out mapping it over an input is refused."""
    import mmap
    odd = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\xff odd.npy"))
    np.save(odd, np.arange(6.0))
    held = np.load(odd, mmap_mode="r")  # a mapping whose name is not UTF-8
    x = np.arange(6.0)
    assert np.array_equal(outcore.map("x + 1", x=x, out=np.empty(6)), x + 1)
    nl = tmp_path / "new\nline.npy"
    np.save(nl, np.arange(1600.0).reshape(40, 40))
    before = nl.read_bytes()
    with open(nl, "r+b") as f:
        raw = mmap.mmap(f.fileno(), 0)
        framed = np.frombuffer(raw, "<f8", offset=128).reshape(40, 40)
        with pytest.raises(outcore.InputError, match="out maps the input file of 'a'"):
            outcore.map("a * 2", a=str(nl), out=framed)
        del framed
        raw.close()
    del held
    assert nl.read_bytes() == before


def test_out_path_naming_the_file_an_input_array_maps_is_refused(tmp_path):
    """An out= path naming the file an input memmap maps (by its name, another name or a hard
    link, through a view of the memmap too) is refused before any work by gram, map and
    matmul, as the CLI refuses an output that is an input: the finished result would be
    renamed over the input."""
    path = tmp_path / "A.npy"
    np.save(path, (np.random.default_rng(2).random((50, 64)) < 0.3).astype(np.uint8))
    os.link(path, tmp_path / "hard.npy")
    before = path.read_bytes()
    m = np.load(path, mmap_mode="r")
    calls = {
        "gram": lambda out: outcore.gram(m, out=out, backend="cpu"),
        "gram B": lambda out: outcore.gram(m[:5], m[1:], out=out, backend="cpu"),
        "map": lambda out: outcore.map("a + 1", a=m, out=out, backend="cpu"),
        "matmul": lambda out: outcore.matmul(m[:, :50], out=out, dtype=np.float64, backend="cpu"),
    }
    for what, call in calls.items():
        for out in (path, str(tmp_path / "." / "A.npy"), tmp_path / "hard.npy"):
            with pytest.raises(outcore.InputError, match=r"the output is the input file of '(A|B|a)'") as exc:
                call(out)
            text = one_line(exc)
            assert text.startswith(os.fspath(out)), (what, text)
    del m
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["A.npy", "hard.npy"]
    # Another file (new, then replaced), and a copy of the memmap, are written as before.
    m = np.load(path, mmap_mode="r")
    for _ in range(2):
        assert outcore.gram(m, out=tmp_path / "C.npy", backend="cpu").shape == (50, 50)
    assert outcore.map("a", a=np.array(m), out=str(tmp_path / "C.npy")) == str(tmp_path / "C.npy")
