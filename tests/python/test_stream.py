"""outcore.stream without a GPU: the arrays it is given become the C spec the library checks
(bad shapes, roles and options are refused with one-line errors before any device work); a
valid call on a build or machine without CUDA says so; an output file is not left behind by a
failed call, nor a link planted beside it followed. The library's run is replaced by
FakeRun where a test needs the job to reach an output file on a machine without a GPU. The
GPU behaviour is tests/python/test_stream_numba.py's."""
import ctypes
import errno
import fcntl
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import outcore
from outcore import InputError, UnsupportedError, _lib


def nothing(chunk):
    raise AssertionError("no chunk may be launched here")


def test_chunked_arrays_must_agree():
    x = np.zeros((10, 3))
    with pytest.raises(InputError, match="'y' has 6 rows along its chunk axis 0 but 'x' has 10"):
        outcore.stream(nothing, inputs={"x": x}, outputs={"y": ((6, 3), np.float64)})


def test_axis_out_of_range():
    with pytest.raises(InputError, match="chunk axis 2 outside its 2 dimensions"):
        outcore.stream(nothing, inputs={"x": np.zeros((4, 4))}, axis=2)


def test_side_alone_cannot_be_cut():
    with pytest.raises(InputError, match="no chunked array"):
        outcore.stream(nothing, side={"k": np.zeros(3)})
    with pytest.raises(InputError, match="extent 5 differs from the 3 rows of 'x'"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, extent=5)


def test_bad_arguments():
    with pytest.raises(InputError, match="callable"):
        outcore.stream(None, inputs={"x": np.zeros(3)})
    with pytest.raises(InputError, match="named twice"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, outputs={"x": ((3,), np.float64)})
    with pytest.raises(InputError, match="in_flight"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, in_flight=1)
    with pytest.raises(InputError, match="output y"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, outputs={"y": 3})
    with pytest.raises(InputError, match="writeable C-contiguous"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, outputs={"y": np.zeros((3, 2))[:, 0]})
    with pytest.raises(InputError, match="result s must be an array"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, result={"s": ((2,), np.float64)})
    with pytest.raises(InputError, match="scratch t"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, scratch={"t": 5})


def test_without_cuda_or_gpu(tmp_path):
    if outcore.cuda_device_count() > 0:
        pytest.skip("a GPU is usable here: tests/python/test_stream_numba.py runs the job")
    out = tmp_path / "y.npy"
    with pytest.raises(UnsupportedError):
        outcore.stream(nothing, inputs={"x": np.zeros((5, 2))}, outputs={"y": (out, (5, 2), np.float64)},
                       scratch={"t": ((5,), np.float32)}, side={"k": np.ones(2)})
    assert list(tmp_path.iterdir()) == []  # neither the output nor its temporary name


def test_device_array_interface():
    a = outcore._stream.DeviceArray((4, 3), np.float32, 0x1000, 7)
    cai = a.__cuda_array_interface__
    assert cai == {"shape": (4, 3), "typestr": "<f4", "data": (0x1000, False), "version": 3, "strides": None,
                   "stream": 7}
    assert a.size == 12


class FakeRun:
    """The library, but for oc_stream_run, which calls job(spec, opts) (the structs the call
    passes) and returns its status: a job that reaches its outputs without a GPU. It notes
    oc_context_cancel (`cancelled`) where it stands for _lib.lib too."""

    def __init__(self, job):
        self.job, self.lib, self.cancelled = job, _lib.lib, False

    def __getattr__(self, name):
        return getattr(self.lib, name)

    def oc_stream_run(self, handle, spec, opts, stats):
        return self.job(spec._obj, opts._obj)

    def oc_context_cancel(self, handle):
        self.cancelled = True
        self.lib.oc_context_cancel(handle)


def fill(spec, name, values):
    """Writes values into the host array of spec named name, as the job's downloads do."""
    for k in range(spec.narrays):
        if spec.arrays[k].name == name.encode():
            ctypes.memmove(spec.arrays[k].host, values.ctypes.data, values.nbytes)
            return
    raise AssertionError(f"no array {name}")


def run_or_unsupported(call):
    """call(), which without a GPU fails with UnsupportedError once its arguments passed."""
    if outcore.cuda_device_count() > 0:
        return call()
    with pytest.raises(UnsupportedError):
        call()


def test_output_file_follows_no_link_planted_beside_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "victim.txt").write_text("precious\n")
    os.symlink("victim.txt", f"out.npy.{os.getpid()}.tmp")  # the name of the temporary before
    x = np.arange(100.0)
    run_or_unsupported(lambda: outcore.stream(lambda c: None, inputs={"x": x},
                                              outputs={"y": ("out.npy", x.shape, x.dtype)}))
    assert (tmp_path / "victim.txt").read_text() == "precious\n"
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names in (["out.npy", f"out.npy.{os.getpid()}.tmp", "victim.txt"],
                     [f"out.npy.{os.getpid()}.tmp", "victim.txt"])


def test_output_file_written_under_an_exclusive_locked_temporary(tmp_path, monkeypatch):
    """The temporary is PATH.tmp-PID-RANDOM, locked while the job runs, as the library's
    (docs/write-failures.md); the replaced file keeps its mode; a failed job leaves the old
    file as it was and no temporary."""
    out = tmp_path / "out.npy"
    np.save(out, np.zeros(3))
    os.chmod(out, 0o640)
    before = out.read_bytes()
    x = np.arange(100.0)
    seen = []

    def job(spec, opts):
        temps = [p.name for p in tmp_path.iterdir() if p.name != "out.npy"]
        assert len(temps) == 1 and re.fullmatch(rf"out\.npy\.tmp-{os.getpid()}-[A-Za-z0-9]{{8}}", temps[0]), temps
        fd = os.open(tmp_path / temps[0], os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):  # held by the job: not a dead process's leftover
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        fill(spec, "y", 2 * x)
        seen.append(temps[0])
        return status

    monkeypatch.setattr(outcore._stream, "lib", FakeRun(job))
    status = _lib.OC_ERR_IO
    with pytest.raises(outcore.Error):
        outcore.stream(nothing, inputs={"x": x}, outputs={"y": (out, x.shape, x.dtype)})
    assert len(seen) == 1 and out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]
    status = _lib.OC_OK

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    with monkeypatch.context() as m:  # a flush that fails at commit: the old file stays
        m.setattr(os, "fsync", full)
        with pytest.raises(outcore.IOFailure, match=f"^disk full writing {re.escape(str(out))}$"):
            outcore.stream(nothing, inputs={"x": x}, outputs={"y": (out, x.shape, x.dtype)})
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]
    ran = len(seen)
    with monkeypatch.context() as m:  # no room for its blocks: refused before the job, not SIGBUS in it
        m.setattr(os, "posix_fallocate", lambda fd, offset, length: full(fd))
        with pytest.raises(outcore.IOFailure, match=f"^disk full writing {re.escape(str(out))}$"):
            outcore.stream(nothing, inputs={"x": x}, outputs={"y": (out, x.shape, x.dtype)})
    assert out.read_bytes() == before and len(seen) == ran
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]
    got = outcore.stream(nothing, inputs={"x": x}, outputs={"y": (out, x.shape, x.dtype)})["y"]
    assert np.array_equal(got, 2 * x) and np.array_equal(np.load(out), 2 * x)
    assert os.stat(out).st_mode & 0o7777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]


@pytest.mark.parametrize("shape", [(2**62, 2**62), (2**61, 2), (2**40, 2**20)])
def test_output_file_past_the_largest_file_is_refused_before_it_is_made(tmp_path, shape):
    """An output file whose bytes pass what a file offset reaches is an InputError naming it,
    counted exactly (numpy's int64 product wraps some such shapes to a small size), before
    any temporary is created."""
    with pytest.raises(InputError, match=r"^output y: a \.npy of float64 of shape .* more than a file can hold"):
        outcore.stream(nothing, inputs={"x": np.ones((4, 4))}, outputs={"y": (tmp_path / "o.npy", shape, "f8")})
    assert list(tmp_path.iterdir()) == []


def test_output_in_memory_past_the_machine_is_refused_before_allocating():
    """An output given as (shape, dtype) larger than the machine's memory is an InputError
    naming it and the way to a file, not numpy's MemoryError."""
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    with pytest.raises(InputError) as info:
        outcore.stream(nothing, inputs={"x": np.ones((4, 4))}, outputs={"y": ((4, 2 * memory), "f8")})
    assert str(info.value) == (f"output y: the 4 x {2 * memory} float64 array needs {64 * memory} bytes in memory, "
                               f"more than this machine's {memory}: give it as (path.npy, shape, dtype) to write it "
                               "to a file")


def open_fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("error", [OverflowError, KeyboardInterrupt])
def test_output_file_failing_after_it_is_made_leaves_nothing(tmp_path, monkeypatch, error):
    """A failure other than an OSError once the temporary exists is raised as it is, with the
    temporary removed and its descriptor (and lock) released."""
    def fails(fd, length):
        raise error("no")
    monkeypatch.setattr(os, "ftruncate", fails)
    before = open_fds()
    with pytest.raises(error):
        outcore.stream(nothing, inputs={"x": np.ones((4, 4))}, outputs={"y": (tmp_path / "o.npy", (4, 4), "f8")})
    assert list(tmp_path.iterdir()) == []
    assert open_fds() == before


def test_output_paths_are_checked_as_the_library_checks_them(tmp_path):
    x = np.arange(10.0)
    os.mkdir(tmp_path / "adir")
    os.mkfifo(tmp_path / "pipe.npy")
    np.save(tmp_path / "ro.npy", x)
    os.chmod(tmp_path / "ro.npy", 0o444)
    np.save(tmp_path / "in.npy", x)
    os.link(tmp_path / "in.npy", tmp_path / "hard.npy")
    listing = sorted(p.name for p in tmp_path.iterdir())
    mapped = np.load(tmp_path / "in.npy", mmap_mode="r")
    cases = [
        ({"x": x}, tmp_path / "adir", "is a folder"),
        ({"x": x}, tmp_path / "pipe.npy", "it is a named pipe, not a regular file"),
        ({"x": x}, tmp_path / "ro.npy", r"cannot replace the output: it is read-only \(mode 0444\)"),
        ({"x": x}, tmp_path / "no" / "y.npy", "folder .*no does not exist"),
        ({"x": tmp_path / "in.npy"}, tmp_path / "in.npy", "the output is the input file of 'x'"),
        ({"x": mapped}, tmp_path / "hard.npy", "the output is the input file of 'x'"),
    ]
    for inputs, out, message in cases:
        with pytest.raises(InputError, match=message) as exc:
            outcore.stream(nothing, inputs=inputs, outputs={"y": (out, (10,), np.float64)})
        assert "\n" not in str(exc.value) and str(exc.value).startswith(str(out)), str(exc.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert np.array_equal(np.load(tmp_path / "ro.npy"), x) and np.array_equal(np.load(tmp_path / "in.npy"), x)


def test_two_outputs_under_one_name_are_refused(tmp_path):
    """Two output files of one call naming one file (by another spelling too) are refused
    before any work: each would be renamed over the other."""
    x = np.arange(10.0)
    os.mkdir(tmp_path / "sub")
    os.symlink(tmp_path / "sub", tmp_path / "link")
    for second in (tmp_path / "sub" / "y.npy", tmp_path / "sub" / "." / "y.npy", tmp_path / "link" / "y.npy"):
        with pytest.raises(InputError, match="outputs 'y' and 'z' both name the file"):
            outcore.stream(nothing, inputs={"x": x}, outputs={"y": (tmp_path / "sub" / "y.npy", (10,), np.float64),
                                                               "z": (second, (10,), np.float64)})
        assert os.listdir(tmp_path / "sub") == []


KILLED = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    import outcore
    from test_stream import FakeRun
    outcore._stream.lib = FakeRun(lambda spec, opts: os.kill(os.getpid(), signal.SIGKILL))
    x = np.arange(10.0)
    outcore.stream(print, inputs={"x": x}, outputs={"y": (sys.argv[1], x.shape, x.dtype)})
""")


def test_killed_job_leaves_a_temporary_outcore_clean_removes(tmp_path):
    cli = os.environ.get("OUTCORE_BIN")
    if not cli:
        pytest.skip("OUTCORE_BIN is not set")
    out = tmp_path / "y.npy"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", KILLED, str(out)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == -9, run.stderr
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith("y.npy.tmp-"), left
    clean = subprocess.run([cli, "clean", str(out)], capture_output=True, text=True, timeout=60)
    assert clean.returncode == 0, clean.stderr
    assert left[0] in clean.stdout + clean.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("error", [RuntimeError("stop here"), KeyboardInterrupt()])
def test_progress_that_raises_cancels_the_job_and_is_raised(monkeypatch, error):
    """As gram's: the exception cancels the library's job (oc_context_cancel), which stops,
    and stream raises it; ctypes does not swallow it."""
    seen = []

    def job(spec, opts):
        opts.progress(None, 5.0, 10.0)  # the library's call, through ctypes
        if not fake.cancelled:
            fill(spec, "y", np.ones(10))
            opts.progress(None, 10.0, 10.0)
        return _lib.OC_ERR_CANCELLED if fake.cancelled else _lib.OC_OK

    def progress(done, total):
        seen.append((done, total))
        raise error

    fake = FakeRun(job)
    monkeypatch.setattr(outcore._stream, "lib", fake)
    monkeypatch.setattr(_lib, "lib", fake)
    with pytest.raises(type(error)) as exc:
        outcore.stream(nothing, inputs={"x": np.zeros(10)}, outputs={"y": ((10,), np.float64)}, progress=progress)
    assert exc.value is error and fake.cancelled and seen == [(5.0, 10.0)]


def test_progress_must_be_callable():
    with pytest.raises(InputError, match=r"^progress must be a callable progress\(done, total\); got 5$"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, progress=5)


@pytest.mark.parametrize("name", ["index", "count", "start", "rows", "stream", "device", "arrays", "__class__",
                                  "__getitem__"])
def test_array_named_as_a_chunk_attribute_is_refused(name):
    """chunk.<name> is the array's view: a name that chunk.<name> gives something else by (the
    chunk's own attributes) is refused before any work, whatever the array's role."""
    for given in ({"inputs": {name: np.zeros(3)}}, {"inputs": {"x": np.zeros(3)}, "scratch": {name: ((3,), np.int8)}},
                  {"inputs": {"x": np.zeros(3)}, "outputs": {name: ((3,), np.float64)}}):
        with pytest.raises(InputError, match=rf"^array {re.escape(repr(name))}: the name clashes with "
                                             rf"chunk\.{re.escape(name)}, the chunk's own "):
            outcore.stream(nothing, **given)


def test_chunk_gives_arrays_by_attribute_and_item():
    views = {"x": "view of x", "rowz": "view of rowz"}
    chunk = outcore._stream.Chunk(2, 5, 40, 20, 7, 0, views)
    assert (chunk.x, chunk["x"], chunk.rowz, chunk["rowz"]) == ("view of x", "view of x", "view of rowz", "view of rowz")
    assert (chunk.index, chunk.count, chunk.start, chunk.rows, chunk.stream, chunk.device) == (2, 5, 40, 20, 7, 0)
    with pytest.raises(AttributeError):
        chunk.y


class FakeRunWithStats(FakeRun):
    """FakeRun whose oc_stream_run also fills the statistics, as the library's run does."""

    def oc_stream_run(self, handle, spec, opts, stats):
        s = stats._obj
        s.chunks, s.chunk_rows, s.in_flight, s.bytes_h2d, s.bytes_d2h, s.seconds = 3, 4, 2, 80, 80, 0.25
        return super().oc_stream_run(handle, spec, opts, stats)


def test_stats_is_filled_as_return_stats_returns_it(monkeypatch):
    """stats={} is filled with the statistics return_stats=True returns (oc_stream_stats's
    fields by name), as gram, map and matmul fill theirs; both may be given at once."""
    def job(spec, opts):
        fill(spec, "y", np.arange(10.0))
        return _lib.OC_OK

    fake = FakeRunWithStats(job)
    monkeypatch.setattr(outcore._stream, "lib", fake)
    x = np.zeros(10)
    stats = {"kept": 1}
    got = outcore.stream(nothing, inputs={"x": x}, outputs={"y": ((10,), np.float64)}, stats=stats)
    assert list(got) == ["y"] and (got["y"] == np.arange(10.0)).all()
    fields = [f for f, *_ in _lib.StreamStats._fields_ if f != "struct_size"]
    assert list(stats) == ["kept"] + fields, stats
    assert (stats["chunks"], stats["chunk_rows"], stats["in_flight"], stats["seconds"]) == (3, 4, 2, 0.25)
    both = {}
    got, returned = outcore.stream(nothing, inputs={"x": x}, outputs={"y": ((10,), np.float64)}, stats=both,
                                   return_stats=True)
    assert returned == both == {f: stats[f] for f in fields}
    # every field is named in the docstring, which docs/stream.md follows
    assert all(f in " ".join(outcore.stream.__doc__.split()) for f in fields)


def test_stats_and_return_stats_are_checked_before_any_work():
    for kwargs, message in ((dict(stats=[]), "stats must be a dict to fill; got list"),
                            (dict(return_stats="no"), "return_stats")):
        with pytest.raises(InputError, match=message):
            outcore.stream(nothing, inputs={"x": np.zeros(3)}, **kwargs)


def test_stats_left_as_it_was_when_the_job_fails():
    stats = {}
    run_or_unsupported(lambda: outcore.stream(lambda chunk: None, inputs={"x": np.zeros(3)}, stats=stats))
    if not outcore.cuda_device_count():
        assert stats == {}
