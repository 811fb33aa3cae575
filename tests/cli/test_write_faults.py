"""outcore gram and matmul when writing fails: every write-side system call of every writer
fails once.

For each output (gram's dense .npy, top-k .npz/.tsv, threshold .npz/.mtx/.tsv, and threshold
jobs whose pairs spill to the temporary file; matmul's .npy of A·Bᵀ and of A·Aᵀ) and each kind
of call (OUTCORE_FAULT_OPEN, _WRITE,
_TRUNCATE, _MMAP, _FSYNC, _CLOSE, _RENAME), the k-th call fails for k = 1, 2, ... until the job
succeeds. Every failed run must exit 1 with one line on stderr that names the file and the
cause, and leave nothing in the output directory (which is also TMPDIR, where the spill file
goes); the run that succeeds must write what a run without faults writes. The folder's flush
after the rename failing leaves the job done. Short writes are
retried; a short write followed by a full disk fails the job. The same runs on the CUDA
backend where a GPU is usable (skipped elsewhere). Last, where this process may mount a
1 MiB tmpfs (root, or a user namespace), real full disks.
"""
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import outcore_bin, require_backend, run

CALLS = ["OPEN", "WRITE", "TRUNCATE", "MMAP", "FSYNC", "CLOSE", "RENAME"]
WAYS = {"enospc": "disk full", "eio": "I/O error"}

# name, output file, options, spill
CASES = [
    ("dense", "C.npy", [], False),
    ("topk-npz", "nn.npz", ["--topk", 5], False),
    ("topk-tsv", "nn.tsv", ["--topk", 5], False),
    ("threshold-npz", "pairs.npz", ["--threshold", 0.25, "--metric", "jaccard"], False),
    ("threshold-mtx", "pairs.mtx", ["--threshold", 0.25, "--metric", "jaccard"], False),
    ("threshold-tsv", "pairs.tsv", ["--threshold", 0.25, "--metric", "jaccard"], False),
    ("threshold-npz-spilled", "pairs.npz", ["--threshold", 0.25, "--metric", "jaccard"], True),
    ("threshold-tsv-spilled", "pairs.tsv", ["--threshold", 0.25, "--metric", "jaccard"], True),
    ("matmul", "C.npy", ["--transpose-b"], False),
    ("matmul-gram", "C.npy", ["--gram"], False),
]

def read_output(path):
    """What the output says, in a form two runs can be compared in (a .npz holds write times)."""
    if path.suffix == ".npz":
        with np.load(path) as f:
            return {name: f[name].copy() for name in f.files}
    return path.read_bytes()


def same_output(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)
    return a == b


class Job:
    def __init__(self, tmp_path, backend, case):
        self.name, self.file, self.options, self.spill = case
        self.indir = tmp_path / "in"
        self.outdir = tmp_path / "out"
        self.indir.mkdir()
        self.outdir.mkdir()
        rng = np.random.default_rng(7)
        np.save(self.indir / "A.npy", (rng.random((150, 64)) < 0.3).astype(np.uint8))
        np.save(self.indir / "F.npy", rng.standard_normal((150, 64)))
        self.output = self.outdir / self.file
        self.backend = backend
        self.env = {"TMPDIR": str(self.outdir)}
        if self.spill:
            self.env["OUTCORE_PAIRS_BUFFER"] = "1"
        # --tile: several row blocks on the CPU, so that several chunks spill
        tile = ["--tile", 48] if backend == "cpu" else []
        if self.name.startswith("matmul"):
            b = [] if "--gram" in self.options else [self.indir / "F.npy"]
            self.args = ["matmul", self.indir / "F.npy", *b, *self.options, "--backend", backend, "--threads", 1,
                         *tile, "-o", self.output, "-q"]
        else:
            self.args = ["gram", self.indir / "A.npy", *self.options, "--backend", backend, "--threads", 1, *tile,
                         "-o", self.output, "-q"]

    def run(self, **faults):
        env = dict(self.env)
        env.update({f"OUTCORE_FAULT_{call}": spec for call, spec in faults.items()})
        return run(*self.args, check=False, env=env)

    def left(self):
        return sorted(p.name for p in self.outdir.iterdir())

    def check_failed(self, proc, cause, what):
        lines = proc.stderr.splitlines()
        assert proc.returncode == 1, f"{what}: exit {proc.returncode}: {proc.stderr}"
        assert len(lines) == 1, f"{what}: stderr is not one line: {proc.stderr!r}"
        spill_name = f"temporary file of threshold pairs in {self.outdir}"
        assert lines[0].startswith(f"outcore: {cause} "), f"{what}: {lines[0]}"
        assert str(self.output) in lines[0] or spill_name in lines[0], f"{what}: names no file: {lines[0]}"
        assert self.left() == [], f"{what}: left behind: {self.left()}"
        return spill_name in lines[0]

    def check_succeeded(self, proc, reference, what):
        assert proc.returncode == 0, f"{what}: exit {proc.returncode}: {proc.stderr}"
        assert self.left() == [self.file], f"{what}: the directory holds {self.left()}"
        assert same_output(read_output(self.output), reference), f"{what}: the output differs"
        self.output.unlink()


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_write_call_fails_cleanly(tmp_path, backend, case):
    require_backend(backend, tmp_path)
    job = Job(tmp_path, backend, case)
    proc = job.run()
    assert proc.returncode == 0, proc.stderr
    reference = read_output(job.output)
    job.output.unlink()

    failed = {}
    spilled = False
    for call in CALLS:
        for way, cause in WAYS.items():
            for k in range(1, 10000):
                what = f"OUTCORE_FAULT_{call}={k}:{way}"
                proc = job.run(**{call: f"{k}:{way}"})
                if proc.returncode == 0:
                    job.check_succeeded(proc, reference, what)
                    break
                spilled |= job.check_failed(proc, cause, what)
            failed.setdefault(call, k - 1)
            assert failed[call] == k - 1, f"{call}: {k - 1} calls fail with {way}, {failed[call]} with enospc"

    # The calls each writer makes: a mapped dense file is sized and mapped, never written.
    assert failed["OPEN"] >= 1 and failed["CLOSE"] == 1 and failed["RENAME"] == 1, failed
    # The flushes: a mapped file's msync, then the commit's fsync, whose failure names it.
    if job.file.endswith(".npy"):
        assert failed["TRUNCATE"] >= 1 and failed["MMAP"] == 1 and failed["WRITE"] == 0, failed
        assert failed["FSYNC"] == 2, failed
    else:
        assert failed["WRITE"] >= 1 and failed["FSYNC"] == 1, failed
    proc = job.run(FSYNC=f"{failed['FSYNC']}:eio")
    job.check_failed(proc, "I/O error", "the commit's fsync")
    assert proc.stderr.startswith(f"outcore: I/O error flushing {job.output}"), proc.stderr
    # The folder's flush after the rename is best effort: its failure leaves the job done.
    job.check_succeeded(job.run(FLUSH_FOLDER="1:eio"), reference, "OUTCORE_FAULT_FLUSH_FOLDER=1:eio")
    if job.spill:
        assert spilled, "no failure reached the spill file"

    # A short write is retried to the end; a full disk after it fails the job.
    for k in range(1, failed["WRITE"] + 1):
        job.check_succeeded(job.run(WRITE=f"{k}:short"), reference, f"OUTCORE_FAULT_WRITE={k}:short")
        what = f"OUTCORE_FAULT_WRITE={k}:short,{k + 1}:enospc"
        job.check_failed(job.run(WRITE=f"{k}:short,{k + 1}:enospc"), "disk full", what)


# ---------------------------------------------------------------- real full disks

def tiny_fs_prefix():
    """The command that runs the rest of a command line in a private mount namespace, or None."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    # root: a mount namespace; anyone else: a user namespace that maps them to root
    return [unshare, "-m"] if os.geteuid() == 0 else [unshare, "-r", "-m"]


def run_on_tiny_fs(mountpoint, args, env=None):
    """Mounts a 1 MiB tmpfs on mountpoint in a namespace of its own, runs outcore there and
    lists what the mount holds afterwards (the mount vanishes with the namespace). Returns
    (CompletedProcess, listing), or skips when mounting is not allowed."""
    prefix = tiny_fs_prefix()
    if prefix is None:
        pytest.skip("unshare is not installed: no private mount namespace for a tiny file system")
    script = ('mount -t tmpfs -o size=1m tmpfs "$0" || exit 97\n'
              '"$@"\nrc=$?\necho "LEFT:$(ls -A "$0" | tr "\\n" " ")"\nexit $rc')
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([*prefix, "sh", "-c", script, str(mountpoint), outcore_bin(), *map(str, args)],
                          capture_output=True, text=True, env=full_env)
    if proc.returncode == 97 or "unshare failed" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"mounting a tmpfs is not allowed here: {proc.stderr.strip()}")
    left = [line for line in proc.stdout.splitlines() if line.startswith("LEFT:")]
    assert left, f"the listing did not run: {proc.stdout!r} {proc.stderr!r}"
    return proc, left[-1][len("LEFT:"):].split()


@pytest.fixture
def big_input(tmp_path):
    """A 600-row input whose dense result (1.4 MB) and all-pairs lists exceed 1 MiB."""
    indir = tmp_path / "in"
    indir.mkdir()
    rng = np.random.default_rng(11)
    np.save(indir / "A.npy", (rng.random((600, 64)) < 0.3).astype(np.uint8))
    return indir / "A.npy"


def check_disk_full(proc, left, names):
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("outcore: disk full ") and names in lines[0], proc.stderr
    assert left == [], f"left on the full file system: {left}"


@pytest.mark.parametrize("output,options", [
    ("nn.tsv", ["--topk", 200]),
    ("pairs.tsv", ["--threshold", 0]),
    ("pairs.npz", ["--threshold", 0]),
    ("pairs.mtx", ["--threshold", 0]),
], ids=["topk-tsv", "threshold-tsv", "threshold-npz", "threshold-mtx"])
def test_real_disk_full(tmp_path, big_input, output, options):
    full = tmp_path / "full"
    full.mkdir()
    proc, left = run_on_tiny_fs(full, ["gram", big_input, *options, "-o", full / output, "-q"],
                                env={"TMPDIR": str(full)})
    check_disk_full(proc, left, str(full / output))


def test_real_disk_full_dense(tmp_path, big_input):
    """A dense result sized from the .npy header is refused before the input is read (exit 2,
    both figures); from a text input, whose shape is known once read, the writer refuses it
    when it sizes the file (exit 1)."""
    full = tmp_path / "full"
    full.mkdir()
    out = full / "C.npy"
    proc, left = run_on_tiny_fs(full, ["gram", big_input, "-o", out, "-q"])
    assert proc.returncode == 2 and left == [], (proc.stderr, left)
    assert proc.stderr == (f"outcore: {out}: the dense 600 x 600 int32 result needs 1.4 MB (1440128 bytes), but its "
                           "file system has 1.0 MB (1048576 bytes) free\n")
    text = big_input.with_suffix(".txt")
    np.savetxt(text, np.load(big_input), fmt="%d")
    proc, left = run_on_tiny_fs(full, ["gram", text, "-o", out, "-q"])
    check_disk_full(proc, left, str(out))


def test_real_disk_full_matmul_and_map(tmp_path):
    """matmul's and map's results, whose sizes the inputs' headers give, are refused before any
    work as gram's dense one is (exit 2, both figures, nothing left); they were found only when
    the writer sized the file (exit 1, "disk full"). A result that fits is written."""
    indir, full = tmp_path / "in", tmp_path / "full"
    indir.mkdir()
    full.mkdir()
    np.save(indir / "x.npy", np.random.default_rng(4).standard_normal((400, 400)))
    a = f"a={indir / 'x.npy'}"
    for args, what in ((["matmul", indir / "x.npy", "--gram", "-o", full / "C.npy"], "float64 400 x 400"),
                       (["map", "a * 2", a, "-o", full / "M.npy"], "float64 160000 elements")):
        proc, left = run_on_tiny_fs(full, [*args, "-q"])
        out = args[args.index("-o") + 1]
        assert proc.returncode == 2 and left == [], (proc.stderr, left)
        assert proc.stderr == (f"outcore: {out}: the {what} result needs 1.3 MB (1280128 bytes), but its file "
                               "system has 1.0 MB (1048576 bytes) free\n"), proc.stderr
    proc, left = run_on_tiny_fs(full, ["map", "a * 2", a, "--reduce", "sum", "--axis", "0", "-o", full / "R.npy",
                                       "-q"])
    assert proc.returncode == 0 and left == ["R.npy"], (proc.stderr, left)


def test_real_disk_full_spill_file(tmp_path, big_input):
    """The pairs spill to a full TMPDIR while the output's own directory has room."""
    full, out = tmp_path / "full", tmp_path / "out"
    full.mkdir()
    out.mkdir()
    proc, left = run_on_tiny_fs(full, ["gram", big_input, "--threshold", 0, "--threads", 1, "--tile", 48,
                                       "-o", out / "pairs.npz", "-q"],
                                env={"TMPDIR": str(full), "OUTCORE_PAIRS_BUFFER": "1"})
    check_disk_full(proc, left, f"temporary file of threshold pairs in {full}")
    assert list(out.iterdir()) == []


def test_tiny_fs_holds_a_small_output(tmp_path, big_input):
    """The same file system takes an output that fits: the failures above are the disk's."""
    full = tmp_path / "full"
    full.mkdir()
    proc, left = run_on_tiny_fs(full, ["gram", big_input, "--topk", 5, "-o", full / "nn.npz", "-q"])
    assert proc.returncode == 0, proc.stderr
    assert left == ["nn.npz"]
