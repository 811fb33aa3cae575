"""resume=True from Python: a job killed in a child process (OUTCORE_RESUME_KILL_AFTER) is
finished by the same call with resume=True, with the bytes of an uninterrupted run."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import outcore

CHILD = """
import sys, numpy as np, outcore
kind, path = sys.argv[1], sys.argv[2]
A = np.load(sys.argv[3])
kw = dict(topk=4, metric="jaccard") if kind == "topk" else dict(threshold=0.2, metric="jaccard") if kind == "pairs" else {}
outcore.gram(A, out=path, resume=True, threads=1, backend="cpu", **kw)
"""


@pytest.mark.parametrize("kind,name", [("dense", "C.npy"), ("topk", "nn.npz"), ("pairs", "p.npz")])
def test_killed_then_resumed(tmp_path, kind, name):
    rng = np.random.default_rng(5)
    A = (rng.random((900, 500)) < 0.1).astype(np.uint8)
    np.save(tmp_path / "A.npy", A)
    out, ref = tmp_path / name, tmp_path / ("ref_" + name)
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000", OUTCORE_RESUME_INTERVAL="0",
               OUTCORE_RESUME_KILL_AFTER="2")
    child = subprocess.run([sys.executable, "-c", CHILD, kind, str(out), str(tmp_path / "A.npy")], env=env,
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert (tmp_path / (name + ".outcore-journal")).exists() and not out.exists()
    kw = dict(topk=4, metric="jaccard") if kind == "topk" else dict(threshold=0.2, metric="jaccard") if kind == "pairs" else {}
    kw["backend"] = "cpu"  # the tiles the journal counts are the CPU's
    with pytest.raises(outcore.InputError, match="resume=True"):
        outcore.gram(A, out=str(out), **kw)
    os.environ["SOURCE_DATE_EPOCH"] = "1700000000"
    try:
        outcore.gram(A, out=str(out), resume=True, **kw)
        outcore.gram(A, out=str(ref), **kw)
    finally:
        del os.environ["SOURCE_DATE_EPOCH"]
    assert out.read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["A.npy", name, "ref_" + name])


def test_resume_needs_a_file(tmp_path):
    with pytest.raises(outcore.Error, match="resume"):
        outcore.gram(np.eye(4, dtype=np.uint8), resume=True)


CHILD_FROM_FILE = """
import sys, outcore
kw = dict(topk=4, metric="jaccard") if sys.argv[1] == "topk" else {}
outcore.gram("./A.npy", out="./" + sys.argv[2], resume=True, threads=1, backend="cpu", **kw)
"""


@pytest.mark.parametrize("kind,name", [("dense", "C.npy"), ("topk", "nn.npz")])
def test_resumed_under_other_spellings_of_the_paths(tmp_path, kind, name):
    """A job on files started as ./A.npy, out=./C.npy in their folder, killed, and resumed by
    absolute paths from another folder: the same job, with the bytes of an uninterrupted run."""
    rng = np.random.default_rng(6)
    np.save(tmp_path / "A.npy", (rng.random((900, 500)) < 0.1).astype(np.uint8))
    env = dict(os.environ, OUTCORE_RESUME_INTERVAL="0", OUTCORE_RESUME_KILL_AFTER="2",
               PYTHONPATH=os.pathsep.join(os.path.abspath(p) for p in sys.path if p))
    child = subprocess.run([sys.executable, "-c", CHILD_FROM_FILE, kind, name], env=env, cwd=tmp_path,
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert (tmp_path / (name + ".outcore-journal")).exists()
    kw = dict(topk=4, metric="jaccard") if kind == "topk" else {}
    a, out, ref = tmp_path / "A.npy", tmp_path / name, tmp_path / ("ref_" + name)
    assert os.getcwd() != str(tmp_path)
    os.environ["SOURCE_DATE_EPOCH"] = "1700000000"  # the .npz's member times
    try:
        outcore.gram(str(a), out=str(out), resume=True, backend="cpu", **kw)
        outcore.gram(str(a), out=str(ref), backend="cpu", **kw)
    finally:
        del os.environ["SOURCE_DATE_EPOCH"]
    assert out.read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["A.npy", name, "ref_" + name])


@pytest.mark.parametrize("kind,name", [("dense", "C.npy"), ("topk", "nn.npz"), ("pairs", "p.npz")])
def test_no_tile_read_after_an_input_changed_goes_on_record(tmp_path, monkeypatch, kind, name):
    """A .npy left in its file (read in panels) and rewritten twice as large past the middle of a
    resumable job: the checkpoint after the change records nothing and the job raises, its
    journal kept for the tiles recorded before. With the file put back as it was (bytes and
    time), the same call resumes from those with the bytes of an uninterrupted run."""
    a = tmp_path / "A.npy"
    rows = 3000 if kind == "dense" else 10000  # long enough for reports between its row blocks
    np.save(a, (np.random.default_rng(8).random((rows, 4096)) < 0.3).astype(np.uint8))
    original, stat = a.read_bytes(), a.stat()
    kw = dict(topk=4, metric="jaccard") if kind == "topk" else dict(threshold=0.45, metric="jaccard") \
        if kind == "pairs" else {}
    kw.update(host_mem="2M", threads=1, backend="cpu")
    out, ref = tmp_path / name, tmp_path / ("ref_" + name)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the .npz's member times
    monkeypatch.setenv("OUTCORE_RESUME_INTERVAL", "0")  # a checkpoint after every group of tiles
    outcore.gram(str(a), out=str(ref), **kw)

    # Past the first row panel, whose threshold pairs are then on record, and before the end:
    # the checkpoint after the change, not the commit, must be what refuses it.
    def progress(done, total):
        if not progress.changed and 0.6 * total <= done < total:
            progress.changed = True
            a.write_bytes(bytes(2 * len(original)))
    progress.changed = False
    with pytest.raises(outcore.InputError, match=f"A.npy: the file changed while being read \\(now {2 * len(original)} "
                                                 f"bytes, expected {len(original)}\\)"):
        outcore.gram(str(a), out=str(out), resume=True, progress=progress, **kw)
    assert progress.changed and not out.exists()
    assert (tmp_path / (name + ".outcore-journal")).exists()
    a.write_bytes(original)
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    outcore.gram(str(a), out=str(out), resume=True, **kw)
    assert out.read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["A.npy", name, "ref_" + name])
