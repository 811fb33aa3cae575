"""A hostile file system around an output from Python: out a folder, a missing folder, a pipe,
a read-only file, a link planted at the journal, an array input changed under a journal.
Each raises InputError with one line and leaves every file as it was (docs/write-failures.md,
"Output paths"; docs/resume.md); so does a result in memory that inputs of any size make
larger than the machine's memory."""
import math
import os
import signal
import stat
import subprocess
import sys

import numpy as np
import pytest

import outcore

A = (np.random.default_rng(43).random((300, 200)) < 0.1).astype(np.uint8)


def listing(folder):
    return {p.name: (os.lstat(p).st_mode, os.lstat(p).st_mtime_ns, p.read_bytes() if p.is_file() and not p.is_symlink()
                     else None) for p in folder.iterdir()}


def raises_one_line(match, **kw):
    with pytest.raises(outcore.InputError, match=match) as info:
        outcore.gram(A, **kw)
    assert "\n" not in str(info.value).strip()


def test_out_is_a_folder(tmp_path):
    (tmp_path / "adir.npy").mkdir()
    before = listing(tmp_path)
    raises_one_line("adir.npy is a folder", out=str(tmp_path / "adir.npy"))
    assert listing(tmp_path) == before and os.listdir(tmp_path / "adir.npy") == []


def test_out_in_a_missing_folder(tmp_path):
    raises_one_line("folder .* does not exist", out=str(tmp_path / "out" / "C.npy"))
    assert os.listdir(tmp_path) == []


def test_out_is_a_pipe(tmp_path):
    os.mkfifo(tmp_path / "P.npy")
    before = listing(tmp_path)
    raises_one_line("named pipe", out=str(tmp_path / "P.npy"))
    assert listing(tmp_path) == before


def test_out_is_read_only(tmp_path):
    (tmp_path / "C.npy").write_bytes(b"an earlier result")
    os.chmod(tmp_path / "C.npy", 0o444)
    before = listing(tmp_path)
    raises_one_line("read-only", out=str(tmp_path / "C.npy"))
    assert listing(tmp_path) == before


def test_replaced_out_keeps_its_mode(tmp_path):
    (tmp_path / "C.npy").write_bytes(b"an earlier result")
    os.chmod(tmp_path / "C.npy", 0o640)
    outcore.gram(A, out=str(tmp_path / "C.npy"))
    assert stat.S_IMODE(os.stat(tmp_path / "C.npy").st_mode) == 0o640
    np.testing.assert_array_equal(np.load(tmp_path / "C.npy"), A.astype(np.int32) @ A.T.astype(np.int32))


def test_journal_that_is_a_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, tmp_path / "C.npy.outcore-journal")
    before = listing(tmp_path)
    raises_one_line("symbolic link", out=str(tmp_path / "C.npy"), resume=True)
    assert listing(tmp_path) == before


CHILD = """
import sys, numpy as np, outcore
outcore.gram(np.load(sys.argv[2]), out=sys.argv[1], resume=True, threads=1, backend="cpu")
"""


def test_array_changed_under_a_journal(tmp_path):
    """An array input (no file behind it) whose bits changed since the journal was written."""
    rng = np.random.default_rng(5)
    big = (rng.random((900, 500)) < 0.1).astype(np.uint8)
    np.save(tmp_path / "A.npy", big)
    out = tmp_path / "C.npy"
    env = dict(os.environ, OUTCORE_RESUME_INTERVAL="0", OUTCORE_RESUME_KILL_AFTER="2")
    child = subprocess.run([sys.executable, "-c", CHILD, str(out), str(tmp_path / "A.npy")], env=env,
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    big[450, 7] ^= 1  # a row the 64 sampled rows of an earlier version did not see
    before = listing(tmp_path)
    with pytest.raises(outcore.InputError, match="the input changed since the journal") as info:
        outcore.gram(big, out=str(out), resume=True, backend="cpu")
    assert "\n" not in str(info.value).strip()
    assert listing(tmp_path) == before


# A child in a 1 GiB address space: the row index of 400 million declared rows (3.2 GB) cannot
# be allocated there, so only a refusal before the reading can answer with InputError.
DECLARED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import outcore
try:
    outcore.gram(*sys.argv[1:-1], out=None if sys.argv[-1] == "-" else sys.argv[-1])
except outcore.InputError as e:
    print(e)
    sys.exit(2)
"""


@pytest.mark.parametrize("b", [False, True])
def test_paths_declaring_a_dense_result_past_the_free_space(tmp_path, b):
    """outcore.gram over paths checks what their headers declare before reading them, as the
    CLI does (oc_gram_check_files): one line naming out and both figures, nothing written."""
    (tmp_path / "big.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n400000000 200 2\n1 1\n2 2\n")
    np.save(tmp_path / "a.npy", A)
    inputs = [str(tmp_path / "a.npy"), str(tmp_path / "big.mtx")] if b else [str(tmp_path / "big.mtx")]
    before = listing(tmp_path)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    child = subprocess.run([sys.executable, "-c", DECLARED, *inputs, str(tmp_path / "C.npy")], env=env,
                           capture_output=True, text=True)
    assert child.returncode == 2, child.stdout + child.stderr
    n = 300 if b else 400_000_000
    need = n * 400_000_000 * 4 + 128
    assert child.stdout.splitlines() == [child.stdout.strip()], child.stdout
    assert f"C.npy: the dense {n} x 400000000 int32 result needs" in child.stdout, child.stdout
    assert f"({need} bytes), but its file system has" in child.stdout, child.stdout
    free = int(child.stdout.split("its file system has")[1].split("(")[1].split(" bytes")[0])
    assert 0 < free < need
    assert listing(tmp_path) == before


def test_paths_declaring_a_dense_result_past_the_memory(tmp_path):
    """Without out=, the dense array gram would allocate is sized from the declared rows: one
    larger than the machine's memory is an InputError before anything is read."""
    (tmp_path / "big.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n400000000 200 2\n1 1\n2 2\n")
    before = listing(tmp_path)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    child = subprocess.run([sys.executable, "-c", DECLARED, str(tmp_path / "big.mtx"), "-"], env=env,
                           capture_output=True, text=True)
    assert child.returncode == 2, child.stdout + child.stderr
    need = 400_000_000 ** 2 * 4
    assert child.stdout.strip() == (f"{tmp_path / 'big.mtx'}: the dense 400000000 x 400000000 int32 result needs "
                                    f"{need} bytes in memory, more than this machine's "
                                    f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')}: pass out= a .npy "
                                    "path, or topk= or threshold="), child.stdout
    assert listing(tmp_path) == before


MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
# Rows whose square result, of 1-byte elements or more, is far past this machine's memory: an
# allocation the kernel's overcommit heuristic refuses at once, were outcore to ask for it.
FAR = math.isqrt(64 * MEMORY) + 1


def declared(path, descr, shape):
    """A .npy file declaring shape, its data a hole: as long as its header says, with no data
    blocks, so that a result of any size can be declared on any disk."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
        f.truncate(f.tell() + math.prod(shape) * np.dtype(descr).itemsize)
    return str(path)


PRODUCT = "pass out= a .npy path, or an array such as a numpy.memmap"
DENSE = "pass out= a .npy path, or topk= or threshold="
# Each call, with f the files by name, and what its refusal names: where the size comes from,
# the FAR x FAR result (its words around its shape and dtype, and the dtype), and what to
# pass instead.
PAST_THE_MEMORY = {
    "matmul": (lambda f: outcore.matmul(f["m"], f["z"]), "{m} and {z}", "the {} product", np.float64, PRODUCT),
    "matmul A.At": (lambda f: outcore.matmul(f["m"]), "{m}", "the {} product", np.float64, PRODUCT),
    "matmul of an array": (lambda f: outcore.matmul(np.empty((FAR, 0)), f["z"]), "A and {z}", "the {} product",
                           np.float64, PRODUCT),
    "map": (lambda f: outcore.map("a + b", a=f["col"], b=f["row"]), "{col} and {row}", "the {} result", np.uint8,
            "pass out= a .npy path (or reduce= to reduce it)"),
    "gram of an array": (lambda f: outcore.gram(np.ones((FAR, 1), np.bool_)), "A", "the dense {} result", np.int32,
                         DENSE),
    "gram of an array and a file": (lambda f: outcore.gram(np.ones((FAR, 1), np.bool_), f["col"]), "A and {col}",
                                    "the dense {} result", np.int32, DENSE),
}


@pytest.mark.parametrize("case", PAST_THE_MEMORY)
def test_results_past_the_memory_are_refused_before_allocating(tmp_path, case):
    """Without out=, a result gram, matmul or map would allocate larger than the machine's
    memory is an InputError naming the inputs, the bytes it needs and what to pass instead,
    before it is allocated: not numpy's MemoryError, nor memory the job fills until the
    machine swaps."""
    files = {"m": declared(tmp_path / "m.npy", "<f8", (FAR, 0)), "z": declared(tmp_path / "z.npy", "<f8", (0, FAR)),
             "col": declared(tmp_path / "col.npy", "|u1", (FAR, 1)),
             "row": declared(tmp_path / "row.npy", "|u1", (1, FAR))}
    before = listing(tmp_path)
    call, where, words, dtype, instead = PAST_THE_MEMORY[case]
    need = FAR * FAR * np.dtype(dtype).itemsize
    with pytest.raises(outcore.InputError) as info:
        call(files)
    assert str(info.value) == (f"{where.format(**files)}: {words.format(f'{FAR} x {FAR} {np.dtype(dtype)}')} needs "
                               f"{need} bytes in memory, more than this machine's {MEMORY}: {instead}")
    assert listing(tmp_path) == before


def test_paths_with_a_result_in_memory_are_peeked_too(tmp_path):
    """Without out: the headers are still checked before reading (the budget of a .mtx's row
    index), and a well-formed path reads as before."""
    (tmp_path / "big.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n130000000 8 2\n1 1\n2 2\n")
    with pytest.raises(outcore.InputError, match="big.mtx: the size line declares 130000000 rows"):
        outcore.gram(str(tmp_path / "big.mtx"), host_mem="256M")
    np.save(tmp_path / "a.npy", A)
    np.testing.assert_array_equal(outcore.gram(str(tmp_path / "a.npy")), A.astype(np.int32) @ A.T.astype(np.int32))


PIPE_INPUT = """
import sys, numpy as np, outcore
try:
    outcore.matmul(sys.argv[1], np.ones((4, 3)))
except outcore.InputError as e:
    print(e)
"""


@pytest.mark.parametrize("where", ["A", "B"])
def test_matmul_input_is_a_pipe(tmp_path, where):
    """A named pipe given as a matmul operand is refused, not read: the binding looks into a
    path's header (a 1-D file is a vector) without waiting on a pipe that nothing writes to,
    and the library names it."""
    os.mkfifo(tmp_path / "P.npy")
    code = PIPE_INPUT if where == "A" else PIPE_INPUT.replace("(sys.argv[1], np.ones((4, 3)))",
                                                              "(np.ones((3, 4)), sys.argv[1])")
    before = listing(tmp_path)
    child = subprocess.run([sys.executable, "-c", code, str(tmp_path / "P.npy")], env=dict(os.environ),
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip().endswith("P.npy: not a regular file (a named pipe)"), child.stdout
    assert listing(tmp_path) == before
