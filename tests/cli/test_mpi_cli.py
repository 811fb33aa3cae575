"""`mpirun -np R outcore gram ...` (docs/mpi.md): one job over R ranks on the CPU backend gives
the bytes of one process for every output (dense, top-k, threshold; A·Aᵀ and A·Bᵀ), with
row counts that no rank count divides; a failing rank fails the job on every rank with exit 1,
one line naming the rank, and no output file. Skipped when outcore was built without MPI or
no mpirun is installed."""
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import outcore_bin, run

RANKS = (1, 2, 3)
# Same member timestamps in every .npz, so that files compare byte for byte.
EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}


def mpi_build():
    proc = run("--version")
    return "MPI:" in proc.stdout


@pytest.fixture(scope="module")
def mpirun():
    if not mpi_build():
        pytest.skip("outcore was built without MPI (OUTCORE_MPI): the rank layer is absent")
    path = shutil.which("mpirun") or shutil.which("mpiexec")
    if not path:
        pytest.skip("no mpirun on PATH")
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    # Open MPI refuses more ranks than cores without --oversubscribe (CI has 2 cores); MPICH's
    # Hydra oversubscribes by itself and does not know the flag.
    extra = ["--oversubscribe"] if "Open MPI" in version or "OpenRTE" in version else []
    return [path, *extra]


def mpi_env():
    env = dict(os.environ, **EPOCH)
    # Open MPI: run as root inside CI containers, and no shared-memory single-copy mechanism
    # (containers forbid the ptrace it needs). Other MPIs ignore these.
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    return env


def start_ranks(mpirun, ranks, *args, env=None):
    """`mpirun -np ranks outcore gram args` started, not waited for (Popen, text mode). Each
    gets a temporary folder of its own (TMPDIR): mpiruns started at once otherwise race to
    create Open MPI's one session folder of the user ("mkdir ... File exists")."""
    full = mpi_env()
    if env:
        full.update(env)
    full["TMPDIR"] = tempfile.mkdtemp(prefix="outcore-mpirun-")
    cmd = [*mpirun, "-np", str(ranks), outcore_bin(), "gram", *map(str, args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full)
    proc.session_dir = full["TMPDIR"]
    return proc


def finish(proc):
    """Waits for a started job; returns it with its stdout and stderr (as subprocess.run)."""
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        shutil.rmtree(proc.session_dir, ignore_errors=True)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_ranks(mpirun, ranks, *args, env=None):
    return finish(start_ranks(mpirun, ranks, *args, env=env))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    rng = np.random.default_rng(17)
    a = (rng.random((301, 200)) < 0.2).astype(np.uint8)
    a[150:170] = a[10:30]                  # duplicates: ties in top-k and threshold
    a[200] = 0                             # an empty row (jaccard 0/0)
    b = (rng.random((157, 200)) < 0.25).astype(np.uint8)
    np.save(d / "A.npy", a)
    np.save(d / "B.npy", b)
    return d


CASES = [
    # name, extension, arguments
    ("dense_aat_jaccard", "npy", ["A.npy", "--metric", "jaccard"]),
    ("dense_abt_counts", "npy", ["A.npy", "B.npy"]),
    ("dense_aat_chunks", "npy", ["A.npy", "--metric", "hamming", "--dtype", "uint16", "--host-mem", "64K"]),
    ("dense_abt_chunks", "npy", ["A.npy", "B.npy", "--metric", "cosine", "--host-mem", "64K"]),
    ("topk_aat", "npz", ["A.npy", "--topk", "5", "--metric", "jaccard"]),
    ("topk_abt", "npz", ["A.npy", "B.npy", "--topk", "7", "--metric", "cosine"]),
    ("topk_aat_k_is_n", "npz", ["A.npy", "--topk", "301"]),  # every column: one slot past the n - 1 candidates
    ("topk_aat_min_score", "npz", ["A.npy", "--topk", "6", "--min-score", "9"]),
    ("topk_abt_min_score_all", "npz", ["A.npy", "B.npy", "--topk", "157", "--metric", "jaccard", "--min-score", "0.2"]),
    ("topk_aat_tsv", "tsv", ["A.npy", "--topk", "3", "--metric", "hamming"]),
    ("pairs_aat", "npz", ["A.npy", "--threshold", "0.3", "--metric", "jaccard"]),
    ("pairs_abt", "mtx", ["A.npy", "B.npy", "--threshold", "12"]),
    ("pairs_aat_tsv", "tsv", ["A.npy", "--threshold", "70", "--metric", "hamming"]),
]


@pytest.mark.parametrize("name,ext,args", CASES, ids=[c[0] for c in CASES])
def test_ranks_give_the_bytes_of_one_process(mpirun, inputs, name, ext, args):
    files = [inputs / a if a.endswith(".npy") else a for a in args]
    # The jobs of every rank count run at once: each waits on mpirun's start more than it computes.
    started = {ranks: start_ranks(mpirun, ranks, *files, "--backend", "cpu", "-q", "-o",
                                  inputs / f"{name}.{ranks}.{ext}") for ranks in RANKS}
    try:
        one = inputs / f"{name}.one.{ext}"
        run("gram", *files, "--backend", "cpu", "-q", "-o", one, env=EPOCH)
    finally:
        done = {ranks: finish(proc) for ranks, proc in started.items()}
    expected = one.read_bytes()
    for ranks in RANKS:
        assert done[ranks].returncode == 0, done[ranks].stderr
        assert (inputs / f"{name}.{ranks}.{ext}").read_bytes() == expected, f"{ranks} ranks differ from one process"


def test_json_lists_every_rank(mpirun, inputs):
    out = inputs / "json.npy"
    proc = run_ranks(mpirun, 3, inputs / "A.npy", "--backend", "cpu", "--json", "-o", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)          # one JSON object: rank 0 alone prints
    ranks = summary["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1, 2]
    rows = [tuple(r["rows"]) for r in ranks]
    assert rows[0][0] == 0 and rows[-1][1] == 301
    assert all(rows[i][1] == rows[i + 1][0] for i in range(2))
    assert sum(r["tiles"] for r in ranks) == summary["tiles"] > 0
    assert all(r["bytes_written"] > 0 for r in ranks)
    # The whole matrix is written once: header plus 301 x 301 int32.
    assert sum(r["bytes_written"] for r in ranks) == out.stat().st_size


def leftovers(directory, stem):
    return sorted(p.name for p in Path(directory).iterdir() if p.name.startswith(stem))


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("kind", [["-o", "fail.npy"], ["--topk", "4", "-o", "fail.npz"],
                                  ["--threshold", "0.3", "--metric", "jaccard", "-o", "fail.npz"]],
                         ids=["dense", "topk", "threshold"])
def test_a_failing_rank_fails_the_job(mpirun, inputs, kind, rank):
    args = [inputs / "A.npy", *kind[:-1], inputs / kind[-1]]
    proc = run_ranks(mpirun, 3, *args, "--backend", "cpu", "-q", env={"OUTCORE_MPI_FAIL_RANK": str(rank)})
    assert proc.returncode == 1, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and f"rank {rank} of 3" in ours[0] and "OUTCORE_MPI_FAIL_RANK" in ours[0], proc.stderr
    assert leftovers(inputs, "fail.") == [], "no output and no temporary file may be left"


def test_a_killed_rank_leaves_no_output(mpirun, inputs):
    out = inputs / "killed.npy"
    proc = run_ranks(mpirun, 3, inputs / "A.npy", "--backend", "cpu", "-q", "-o", out,
                     env={"OUTCORE_MPI_FAIL_RANK": "2:kill"})
    assert proc.returncode != 0
    assert not out.exists()                    # the launcher ends the job before any rename


def test_bad_input_is_one_line_on_rank_0(mpirun, inputs):
    proc = run_ranks(mpirun, 2, inputs / "A.npy", inputs / "missing.npy", "-q", "-o", inputs / "bad.npy")
    assert proc.returncode == 2, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and "missing.npy" in ours[0], proc.stderr
    assert not (inputs / "bad.npy").exists()


def cuda_devices():
    found = re.search(r"(\d+) CUDA device", run("--version").stdout)
    return int(found.group(1)) if found else 0


GPU_CASES = [c for c in CASES if c[0] in ("dense_aat_jaccard", "dense_abt_counts", "topk_aat", "topk_abt",
                                          "pairs_aat", "pairs_abt")]


@pytest.mark.parametrize("name,ext,args", GPU_CASES, ids=["cuda_" + c[0] for c in GPU_CASES])
def test_two_ranks_sharing_one_gpu(mpirun, inputs, name, ext, args):
    """Two ranks on GPU 0, each with its own budget, give the bytes of one process on it
    and of the CPU (run by ctest as gpu_cli_test_mpi on a machine with a GPU)."""
    if cuda_devices() < 1:
        pytest.skip("no usable CUDA device")
    files = [inputs / a if a.endswith(".npy") else a for a in args]
    cpu, one, two = (inputs / f"cuda_{name}.{tag}.{ext}" for tag in ("cpu", "one", "two"))
    run("gram", *files, "--backend", "cpu", "-q", "-o", cpu, env=EPOCH)
    run("gram", *files, "--backend", "cuda", "-q", "-o", one, env=EPOCH)
    proc = run_ranks(mpirun, 2, *files, "--backend", "cuda", "--gpu-mem", "2G", "-q", "-o", two)
    assert proc.returncode == 0, proc.stderr
    assert one.read_bytes() == cpu.read_bytes()
    assert two.read_bytes() == one.read_bytes(), "two ranks on one GPU differ from one process"


def test_resume_is_refused_under_ranks(mpirun, inputs):
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--resume", "-q", "-o", inputs / "resume.npy")
    assert proc.returncode == 2, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and "--resume" in ours[0], proc.stderr
    assert leftovers(inputs, "resume.") == []
