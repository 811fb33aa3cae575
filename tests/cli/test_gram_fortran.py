"""`outcore gram` on Fortran-order .npy files (numpy.save of a transposed array writes one):
read in place, they give the bytes the C-order file of the same array gives, and the same
errors, in memory and when left in their files (--host-mem), for every dtype the 0/1 reader
takes, --bits, --binarize, A·Bᵀ with one operand in each order, dense and top-k results and
the sparse algorithm (docs/design.md, "Inputs")."""
import json

import numpy as np
import pytest

from conftest import require_backend, run_in

DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]


def save_both(tmp_path, name, x):
    """x as tmp/c/NAME (C order) and tmp/f/NAME (Fortran order): the same name in both, so
    that messages naming the file read the same."""
    for order in "cf":
        (tmp_path / order).mkdir(exist_ok=True)
        np.save(tmp_path / order / name, np.asfortranarray(x) if order == "f" else np.ascontiguousarray(x))
    with open(tmp_path / "f" / name, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        assert read(f)[1], "numpy wrote the array in C order"


def gram_both(tmp_path, inputs, *args, out="C.npy", check=True, backend="cpu", env=None):
    """Runs the job in tmp/c and in tmp/f; returns both processes and both outputs' paths."""
    procs = [run_in(tmp_path / o, "gram", *inputs, *args, "--backend", backend, "-o", out, "-q", check=check, env=env)
             for o in "cf"]
    return procs, [tmp_path / o / out for o in "cf"]


def same_output(paths):
    c, f = paths
    if c.suffix == ".npy":
        return c.read_bytes() == f.read_bytes()
    with np.load(c) as x, np.load(f) as y:
        return sorted(x.files) == sorted(y.files) and all(
            x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]) for k in x.files)


def same_failure(procs):
    c, f = procs
    assert c.returncode == f.returncode == 2, (c.stderr, f.stderr)
    assert c.stderr == f.stderr and len(c.stderr.strip().splitlines()) == 1, (c.stderr, f.stderr)
    return c.stderr


@pytest.fixture(scope="module")
def ones():
    # 77 x 203: neither a multiple of the 8 rows nor of the 64 columns packed at once.
    return np.random.default_rng(2024).random((77, 203)) < 0.3


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("result", [[], ["--metric", "jaccard", "--topk", "5"]], ids=["dense", "topk"])
def test_every_dtype_reads_as_c_order(tmp_path, ones, dtype, result):
    save_both(tmp_path, "A.npy", ones.astype(dtype))
    out = "C.npz" if result else "C.npy"
    _, paths = gram_both(tmp_path, ["A.npy"], *result, out=out)
    assert same_output(paths)


def test_packbits_with_bits(tmp_path, ones):
    """A Fortran-order packbits file: byte (r, j) at j * rows + r."""
    save_both(tmp_path, "A.npy", np.packbits(ones, axis=1))
    _, paths = gram_both(tmp_path, ["A.npy"], "--bits", ones.shape[1], "--metric", "cosine")
    assert same_output(paths)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
def test_binarize(tmp_path, dtype):
    x = np.random.default_rng(5).integers(-3, 4, size=(45, 130)).astype(dtype)
    if dtype == "uint8":
        x = np.abs(x).astype(dtype)
    save_both(tmp_path, "A.npy", x)
    _, paths = gram_both(tmp_path, ["A.npy"], "--binarize")
    assert same_output(paths)


def test_a_times_b_with_one_operand_in_each_order(tmp_path, ones):
    b = np.random.default_rng(9).random((31, ones.shape[1])) < 0.4
    save_both(tmp_path, "A.npy", ones)
    save_both(tmp_path, "B.npy", b.astype(np.uint8))
    want = run_in(tmp_path / "c", "gram", "A.npy", "B.npy", "--backend", "cpu", "-o", "C.npy", "-q")
    assert want.returncode == 0
    for a_dir, b_dir, out in [("f", "c", "FC.npy"), ("c", "f", "CF.npy")]:
        run_in(tmp_path, "gram", f"{a_dir}/A.npy", f"{b_dir}/B.npy", "--backend", "cpu", "-o", out, "-q")
        assert (tmp_path / out).read_bytes() == (tmp_path / "c" / "C.npy").read_bytes(), out
    for args, out in [(["--metric", "jaccard", "--topk", "4"], "C.npz"), (["--metric", "cosine"], "C.npy")]:
        _, paths = gram_both(tmp_path, ["A.npy", "B.npy"], *args, out=out)
        assert same_output(paths)


def test_sparse_algorithm(tmp_path):
    x = np.random.default_rng(11).random((300, 2000)) < 0.004
    save_both(tmp_path, "A.npy", x.astype(np.uint8))
    _, paths = gram_both(tmp_path, ["A.npy"], "--algorithm", "sparse", "--topk", "3", out="C.npz")
    assert same_output(paths)


# Out of core: packed bits larger than the host budget stay in the file, read in panels (for
# a Fortran-order file, a run of each column per panel).
BIG = (3000, 4000)  # 1.5 MiB packed


def read_from_file(tmp_path, args):
    plan = json.loads(run_in(tmp_path / "f", "gram", *args, "--backend", "cpu", "--plan", "--json").stdout)
    return plan["panel_bytes"] > 0 and plan["panels_a"] > 1


@pytest.fixture(scope="module")
def big():
    return np.random.default_rng(77).random(BIG) < 0.25


@pytest.mark.parametrize("kind", ["bool", "uint8", "bits"])
@pytest.mark.parametrize("result", [[], ["--metric", "cosine", "--topk", "7"]], ids=["dense", "topk"])
def test_out_of_core(tmp_path, big, kind, result):
    x = np.packbits(big, axis=1) if kind == "bits" else big.astype(kind)
    save_both(tmp_path, "A.npy", x)
    args = ["A.npy", "--host-mem", "1M", "--tile", "96", *(["--bits", BIG[1]] if kind == "bits" else [])]
    assert read_from_file(tmp_path, args)
    _, paths = gram_both(tmp_path, args, *result, out="C.npz" if result else "C.npy")
    assert same_output(paths)


def test_out_of_core_sparse_algorithm(tmp_path):
    """The sparse algorithm reads a file left in its file into row lists, panel by panel."""
    x = np.random.default_rng(12).random((3000, 40000), dtype=np.float32) < 0.0005
    save_both(tmp_path, "A.npy", x)
    args = ["A.npy", "--host-mem", "10M", "--algorithm", "sparse"]
    plan = run_in(tmp_path / "f", "gram", *args, "--backend", "cpu", "--topk", "3", "--plan").stdout
    assert "inputs left in their files" in plan, plan
    _, paths = gram_both(tmp_path, args, "--topk", "3", out="C.npz")
    assert same_output(paths)


# Errors: the same one line, naming the same row and column (the first bad value in row
# order), in memory and out of core.
BUDGETS = [[], ["--host-mem", "1M", "--tile", "96"]]


@pytest.mark.parametrize("budget", BUDGETS, ids=["resident", "out_of_core"])
@pytest.mark.parametrize("dtype,value,text", [("uint8", 2, "value 2"), ("int8", -1, "value -1"),
                                              ("uint8", 0xA5, "value 165")])
def test_bad_value(tmp_path, big, budget, dtype, value, text):
    x = big.astype(dtype)
    # Three bad values: the first in row order is the one named, though a column-major walk
    # meets the others first.
    x[1234, 3999] = value
    x[1234, 2500] = value
    x[2900, 3] = value
    save_both(tmp_path, "A.npy", x)
    procs, paths = gram_both(tmp_path, ["A.npy", *budget], check=False)
    message = same_failure(procs)
    assert text in message and "row 1234, column 2500" in message, message
    assert not any(p.exists() for p in paths)


def test_packbits_hint_names_the_same_row(tmp_path, big):
    """A uint8 row that looks like packbits output gets the --bits hint, read from the whole row."""
    x = big.astype(np.uint8)
    x[600] = np.random.default_rng(3).integers(0, 256, size=BIG[1], dtype=np.uint8)
    save_both(tmp_path, "A.npy", x)
    for budget in BUDGETS:
        message = same_failure(gram_both(tmp_path, ["A.npy", *budget], check=False)[0])
        assert "row 600" in message and "--bits M" in message, message


@pytest.mark.parametrize("value", ["0.5", "nan"])
def test_bad_float(tmp_path, ones, value):
    x = ones.astype(np.float64)
    x[40, 200] = float(value)
    x[41, 0] = 3.0
    save_both(tmp_path, "A.npy", x)
    message = same_failure(gram_both(tmp_path, ["A.npy"], check=False)[0])
    assert "row 40, column 200" in message, message


@pytest.mark.parametrize("budget", BUDGETS, ids=["resident", "out_of_core"])
def test_bit_past_bits(tmp_path, big, budget):
    cols = BIG[1] - 3
    packed = np.packbits(big[:, :cols], axis=1)
    packed[2222, -1] |= 0x01
    packed[1500, -1] |= 0x02
    save_both(tmp_path, "A.npy", packed)
    procs, _ = gram_both(tmp_path, ["A.npy", "--bits", cols, *budget], check=False)
    message = same_failure(procs)
    assert "row 1500 has bit 3998 set" in message, message


@pytest.mark.parametrize("budget", BUDGETS, ids=["resident", "out_of_core"])
def test_truncated(tmp_path, big, budget):
    save_both(tmp_path, "A.npy", big)
    for order in "cf":
        path = tmp_path / order / "A.npy"
        path.write_bytes(path.read_bytes()[:-10])
    message = same_failure(gram_both(tmp_path, ["A.npy", *budget], check=False)[0])
    assert "truncated .npy data" in message, message


@pytest.mark.parametrize("kind", ["bool", "bits"])
@pytest.mark.parametrize("budget", BUDGETS, ids=["resident", "out_of_core"])
def test_on_the_gpu(tmp_path, big, kind, budget):
    """The CUDA engine reads a Fortran-order file as the CPU does, in memory and left in its
    file, where a tile split on K reads its first panels as slices of their columns (three
    logical devices of GPU 0, OUTCORE_CUDA_SPLIT_K): the same bytes as the C-order file's,
    and as the CPU's."""
    require_backend("cuda", tmp_path)
    x = np.packbits(big, axis=1) if kind == "bits" else big
    save_both(tmp_path, "A.npy", x)
    args = ["A.npy", *budget, *(["--bits", BIG[1]] if kind == "bits" else [])]
    for result, out in [([], "C.npy"), (["--metric", "cosine", "--topk", "7"], "C.npz")]:
        _, paths = gram_both(tmp_path, args, *result, out=out, backend="cuda")
        assert same_output(paths)
        split = ["--devices", "0:3", *([] if budget else ["--tile", "512"])]
        _, split_paths = gram_both(tmp_path, args, *split, *result, out="S" + out[1:], backend="cuda",
                                   env={"OUTCORE_CUDA_SPLIT_K": "4:3"})
        assert same_output(split_paths) and same_output([paths[0], split_paths[1]])
        _, cpu_paths = gram_both(tmp_path, args, *result, out="P" + out[1:])
        assert same_output([paths[1], cpu_paths[1]])
