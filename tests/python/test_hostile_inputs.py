"""Hostile inputs from Python (docs/inputs.md): what ends a CLI run with exit 2 raises here,
and the interpreter survives it; the library lends its SIGBUS handler only while it reads
mapped inputs, and a host's own handler (pytest's faulthandler) is back afterwards.
"""
import ctypes
import os
import signal
import time

import numpy as np
import pytest

import outcore

_libc = ctypes.CDLL(None, use_errno=True)


def sigbus_handler_address():
    """The address of the C-level SIGBUS handler now installed (sa_handler / sa_sigaction)."""
    buf = ctypes.create_string_buffer(256)  # struct sigaction, with room to spare
    assert _libc.sigaction(signal.SIGBUS, None, buf) == 0
    return ctypes.c_void_p.from_buffer(buf).value


def listing(folder):
    return sorted((p.name, p.stat().st_size) for p in folder.iterdir())


@pytest.fixture
def folder(tmp_path):
    np.save(tmp_path / "a.npy", (np.arange(300 * 200).reshape(300, 200) % 3 == 0).astype(np.uint8))
    np.save(tmp_path / "f.npy", np.linspace(0, 1, 400_000))
    return tmp_path


def test_named_pipe_raises_at_once(folder):
    os.mkfifo(folder / "p.npy")
    before = listing(folder)
    start = time.monotonic()
    with pytest.raises(outcore.InputError, match="p.npy: not a regular file \\(a named pipe\\)"):
        outcore.gram(str(folder / "p.npy"))
    with pytest.raises(outcore.InputError, match="not a regular file"):
        outcore.map("a * 2", a=str(folder / "p.npy"))
    # stream reads its paths with numpy, which would wait on the pipe for ever.
    for path, kind in ((folder / "p.npy", "a named pipe"), ("/dev/zero", "a device"), (folder, "a directory")):
        with pytest.raises(outcore.InputError, match=f"input x: .*: not a regular file \\({kind}\\)"):
            outcore.stream(lambda chunk: None, inputs={"x": path}, outputs={"y": ((10,), "f8")})
    assert time.monotonic() - start < 10
    assert listing(folder) == before


def test_directory_given_to_inspect(folder):
    (folder / "kernels").mkdir()
    with pytest.raises(outcore.InputError, match="kernels: not a regular file \\(a directory\\)"):
        outcore.inspect(str(folder / "kernels"), use_gpu=False)


def test_input_cut_while_read_raises_and_the_handler_is_given_back(folder, monkeypatch):
    handler = sigbus_handler_address()
    monkeypatch.setenv("OUTCORE_FAULT_SHRINK", "1")
    before = listing(folder)
    size = (folder / "a.npy").stat().st_size
    with pytest.raises(outcore.InputError, match=f"a.npy: the file changed while being read \\(now \\d+ bytes, "
                                                 f"expected {size}\\)"):
        outcore.gram(str(folder / "a.npy"))
    with pytest.raises(outcore.InputError, match="f.npy: the file changed while being read"):
        outcore.map("a * 2", out=str(folder / "M.npy"), a=str(folder / "f.npy"))
    assert listing(folder) == before
    assert sigbus_handler_address() == handler
    monkeypatch.delenv("OUTCORE_FAULT_SHRINK")
    # The same calls read whole without the fault, and the interpreter is alive to see it.
    assert outcore.gram(str(folder / "a.npy")).shape == (300, 300)
    assert sigbus_handler_address() == handler


def test_mtx_declaring_more_rows_than_the_budget(folder):
    (folder / "big.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n130000000 130000000 2\n1 1\n2 2\n")
    with pytest.raises(outcore.InputError, match="declares 130000000 rows"):
        outcore.gram(str(folder / "big.mtx"), host_mem="256M")


def test_ptx_path_beginning_with_a_dash(folder, monkeypatch):
    """ptxas is handed ./-k.ptx, never an option -k.ptx."""
    home = folder / "cuda"
    (home / "bin").mkdir(parents=True)
    args = folder / "args.txt"
    (home / "bin" / "ptxas").write_text(
        "#!/bin/sh\n"
        f"echo \"$*\" >> {args}\n"
        "echo \"ptxas info    : Compiling entry function 'k' for 'sm_90'\"\n"
        "echo \"ptxas info    : Used 8 registers, used 0 barriers\"\n")
    (home / "bin" / "ptxas").chmod(0o755)
    (folder / "-k.ptx").write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n  ret;\n}\n")
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.chdir(folder)
    report = outcore.inspect("-k.ptx", use_gpu=False)
    assert [k["name"] for k in report["kernels"]] == ["k"]
    compiles = [line.split() for line in args.read_text().splitlines() if "--version" not in line]
    assert compiles and all(c[-1] == "./-k.ptx" and "-k.ptx" not in c for c in compiles), compiles


# ------------------------------------------------------------------ a .npy read in panels, changed

def panels_input(folder):
    """A .npy that a 2M budget leaves in its file (read in panels with pread, several of them)."""
    A = (np.random.default_rng(3).random((6000, 2048)) < 0.3).astype(np.uint8)
    np.save(folder / "P.npy", A)
    return folder / "P.npy"


def change_once(path, how):
    """A progress callback that changes path at its first report (the last one, before the
    commit, where the job is too short for one between: reports are 0.1 s apart): rewritten
    with twice its bytes of zeros, or grown by an append."""
    def progress(done, total):
        if progress.changed:
            return
        progress.changed = True
        size = path.stat().st_size
        with open(path, "r+b" if how == "appended" else "wb") as f:
            if how == "appended":
                f.seek(size)
            f.write(bytes(size if how == "appended" else 2 * size))
    progress.changed = False
    return progress


@pytest.mark.parametrize("how", ["rewritten larger", "appended"])
@pytest.mark.parametrize("out,kw", [("nn.npz", dict(topk=4)), ("C.npy", {})])
def test_npy_in_panels_changed_size_while_read_raises(folder, how, out, kw):
    """A file left in its file and read with pread shows a cut as a short read, but one that
    grows reads on: its size is checked before the result is committed, whatever the output."""
    path = panels_input(folder)
    progress = change_once(path, how)
    before, size = listing(folder), path.stat().st_size
    with pytest.raises(outcore.InputError, match=f"P.npy: the file changed while being read \\(now {2 * size} bytes, "
                                                 f"expected {size}\\)"):
        outcore.gram(str(path), out=str(folder / out), host_mem="2M", threads=1, backend="cpu", progress=progress,
                     **kw)
    assert progress.changed
    assert [name for name, _ in listing(folder)] == [name for name, _ in before]  # no output, no temporary
