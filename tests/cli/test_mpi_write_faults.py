"""A dense result written by MPI ranks meets a failing disk as one process does
(docs/write-failures.md): its file is sized and reserved before any rank writes, every write
asks the fault plan (OUTCORE_FAULT_*), and a failure is one "disk full" or "I/O error" line,
exit 1, no output and no temporary; a short write is finished and the bytes are those of one
process. Skipped where outcore has no MPI or no mpirun is installed."""
import numpy as np
import pytest

from conftest import run
from test_mpi_cli import inputs, mpirun, run_ranks  # noqa: F401  (fixtures)


def leftovers(d):
    return sorted(p.name for p in d.iterdir() if ".tmp-" in p.name or p.name.startswith("C."))


@pytest.mark.parametrize("args", [["A.npy", "--metric", "jaccard"], ["A.npy", "B.npy", "--host-mem", "64K"]],
                         ids=["aat", "abt_chunks"])
@pytest.mark.parametrize("fault,words", [
    ("TRUNCATE", "1:enospc"), ("WRITE", "2:enospc"), ("WRITE", "5:eio"),
])
def test_a_failing_disk_fails_the_job(mpirun, inputs, tmp_path, args, fault, words):  # noqa: F811
    files = [inputs / a if a.endswith(".npy") else a for a in args]
    out = tmp_path / "C.npy"
    proc = run_ranks(mpirun, 2, *files, "--backend", "cpu", "-q", "-o", out, env={f"OUTCORE_FAULT_{fault}": words})
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(lines) == 1, proc.stderr
    expect = "disk full" if "enospc" in words else "I/O error"
    assert expect in lines[0] and "C.npy" in lines[0], lines[0]
    assert leftovers(tmp_path) == []


def test_a_short_write_is_finished(mpirun, inputs, tmp_path):  # noqa: F811
    one, two = tmp_path / "C.one.npy", tmp_path / "C.two.npy"
    run("gram", inputs / "A.npy", "--backend", "cpu", "-q", "-o", one)
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--backend", "cpu", "-q", "-o", two,
                     env={"OUTCORE_FAULT_WRITE": "1:short,3:short"})
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(one), np.load(two)) and one.read_bytes() == two.read_bytes()


@pytest.mark.parametrize("ext", ["npz", "tsv", "mtx"])
def test_threshold_pairs_say_what_failed(mpirun, inputs, tmp_path, ext):  # noqa: F811
    """Rank 0 writes the pairs of every rank: a write of its file that fails is named as one
    process names it, not as "the pairs callback asked to stop"."""
    out = tmp_path / f"C.{ext}"
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--threshold", "0", "--backend", "cpu", "-q", "-o", out,
                     env={"OUTCORE_FAULT_WRITE": "1:enospc,2:enospc,3:enospc,4:enospc"})
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(lines) == 1 and "disk full" in lines[0] and "asked to stop" not in lines[0], proc.stderr
    assert leftovers(tmp_path) == []
