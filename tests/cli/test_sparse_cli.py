"""`outcore gram --algorithm` and `--explain` on real files: the sparse and dense algorithms
give the same bytes, auto picks sparse on sparse data and dense on dense data, bad values
are usage errors."""
import json
import re

import numpy as np
import pytest

from conftest import data_file, run, summary_json


def same_npz(x, y):
    a, b = np.load(x), np.load(y)
    return sorted(a.files) == sorted(b.files) and all(
        a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes() for k in a.files)


@pytest.mark.parametrize("mode", [["--topk", "10"], ["--threshold", "0.5"]])
def test_debian_sparse_equals_dense(tmp_path, mode):
    """Hub columns, 7,589 empty rows (jaccard 0/0 = 1), ties: the two algorithms agree."""
    path = data_file("debian_depends.mtx")
    if mode[0] == "--topk":  # the whole file on the sparse path (a threshold's 57 million pairs of empty rows
        # would only make the output large)
        sparse = run("gram", path, "--metric", "jaccard", *mode, "-o", tmp_path / "s.npz", "--algorithm", "sparse",
                     "--quiet", "--json")
        assert summary_json(sparse)["algorithm"] == "sparse"
    # the dense path on all of debian takes minutes on two cores: compare its first 1,000 rows
    # with its first 8,000 through A·Bᵀ instead, which keeps every kind of row (hubs, empty
    # rows) on both sides
    with open(path) as f:
        body = [line for line in f if not line.startswith("%")][1:]  # past the size line
    rows = np.array([line.split() for line in body], dtype=np.int64)
    columns, counts = np.unique(rows[:, 1], return_counts=True)
    hub = columns[counts.argmax()]
    files = []
    for name, head_rows, empty, hubs in (("a.mtx", 1000, 50, 250), ("b.mtx", 8000, 400, 2000)):
        keep = rows[rows[:, 0] <= head_rows]
        assert head_rows - len(np.unique(keep[:, 0])) > empty, f"{name} keeps empty rows"
        assert (keep[:, 1] == hub).sum() > hubs, f"{name} keeps the hub column"
        with open(tmp_path / name, "w") as f:
            f.write("%%MatrixMarket matrix coordinate pattern general\n")
            f.write(f"{head_rows} 35437 {len(keep)}\n")
            np.savetxt(f, keep, fmt="%d")
        files.append(tmp_path / name)
    for algo in ("sparse", "dense"):
        run("gram", *files, "--metric", "jaccard", *mode, "-o", tmp_path / f"{algo}.npz", "--algorithm", algo,
            "--quiet")
    assert same_npz(tmp_path / "sparse.npz", tmp_path / "dense.npz")


def test_reuters_every_metric(tmp_path):
    path = data_file("reuters_docterm.mtx")
    for metric in ("counts", "jaccard", "cosine", "hamming"):
        for algo in ("sparse", "dense"):
            run("gram", path, "--metric", metric, "--topk", "7", "-o", tmp_path / f"{algo}.npz", "--algorithm", algo,
                "--quiet")
        assert same_npz(tmp_path / "sparse.npz", tmp_path / "dense.npz"), metric


def test_auto_and_explain(tmp_path, rng):
    # Sparse enough that the sparse path wins by several times on any CPU (a tiny job is a
    # close call, where the choice may go either way).
    sparse = (rng.random((2000, 20000)) < 0.0005).astype(np.uint8)
    dense = (rng.random((200, 1000)) < 0.5).astype(np.uint8)
    np.save(tmp_path / "sparse.npy", sparse)
    np.save(tmp_path / "dense.npy", dense)
    # On the CPU: with a GPU usable, auto weighs the GPU's dense rate, which wins this small job.
    proc = run("gram", tmp_path / "sparse.npy", "--metric", "jaccard", "--topk", "3", "-o", tmp_path / "s.npz",
               "--backend", "cpu", "--explain", "--json")
    assert summary_json(proc)["algorithm"] == "sparse"
    assert "algorithm sparse: predicted sparse" in proc.stderr and "dense" in proc.stderr
    proc = run("gram", tmp_path / "dense.npy", "--metric", "jaccard", "--topk", "3", "-o", tmp_path / "d.npz",
               "--explain", "--json")
    assert summary_json(proc)["algorithm"] == "dense"
    assert "algorithm dense: density" in proc.stderr


def test_bad_algorithm(tmp_path, rng):
    np.save(tmp_path / "a.npy", (rng.random((5, 5)) < 0.5).astype(np.uint8))
    proc = run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--algorithm", "fast", check=False)
    assert proc.returncode == 2 and "--algorithm fast" in proc.stderr
    assert not (tmp_path / "c.npy").exists()
    proc = run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--algorithm", "sparse", "--backend", "cuda",
               check=False)
    # without a usable GPU the backend is refused first (exit 1); with one, the algorithm (exit 2)
    assert proc.returncode != 0 and ("sparse algorithm runs on the CPU" in proc.stderr or "cuda" in proc.stderr)
    assert not (tmp_path / "c.npy").exists()


def test_large_mtx_parallel_read(tmp_path, rng):
    """Files past 1 MB are parsed on every core: the same matrix, and for a bad line the same
    message (line number included) as the sequential reader."""
    n, m, ones = 20000, 5000, 200000
    r = rng.integers(1, n + 1, ones)
    c = rng.integers(1, m + 1, ones)
    body = "".join(f"{i} {j}\n" for i, j in zip(r, c))
    good = tmp_path / "big.mtx"
    good.write_text(f"%%MatrixMarket matrix coordinate pattern general\n{n} {m} {ones}\n{body}")
    run("gram", good, "--metric", "jaccard", "--topk", "3", "-o", tmp_path / "s.npz", "--algorithm", "sparse", "--quiet")
    run("gram", good, "--metric", "jaccard", "--topk", "3", "-o", tmp_path / "d.npz", "--algorithm", "dense", "--quiet")
    assert same_npz(tmp_path / "s.npz", tmp_path / "d.npz")
    a = np.zeros((n, m), np.uint8)
    a[r - 1, c - 1] = 1
    np.save(tmp_path / "a.npy", a)
    run("gram", tmp_path / "a.npy", "--metric", "jaccard", "--topk", "3", "-o", tmp_path / "n.npz", "--quiet")
    assert same_npz(tmp_path / "s.npz", tmp_path / "n.npz")
    bad = tmp_path / "bad.mtx"
    lines = body.splitlines()
    lines[150000] = f"{n + 1} 1"
    bad.write_text(f"%%MatrixMarket matrix coordinate pattern general\n{n} {m} {ones}\n" + "\n".join(lines) + "\n")
    proc = run("gram", bad, "-o", tmp_path / "x.npz", "--topk", "3", check=False)
    assert proc.returncode == 2 and "line 150003" in proc.stderr and "outside" in proc.stderr
    assert not (tmp_path / "x.npz").exists()


def test_file_backed_input(tmp_path):
    """A .npy left in its file (--host-mem): auto runs the dense algorithm and says why;
    --algorithm sparse reads its rows into lists first and gives the same bytes; --plan names
    the algorithm that would run."""
    rng = np.random.default_rng(18)
    a = rng.random((3000, 16000)) < 0.0005
    np.save(tmp_path / "a.npy", np.packbits(a, axis=1))  # 6 MB packed: past half the budget, it stays in its file
    common = ["gram", tmp_path / "a.npy", "--bits", "16000", "--metric", "jaccard", "--topk", "5", "--backend", "cpu",
              "--host-mem", str(4 << 20)]
    auto = summary_json(run(*common, "-o", tmp_path / "auto.npz", "--json", "--quiet"))
    assert auto["algorithm"] == "dense" and "from its file" in auto["algorithm_desc"]
    sparse = summary_json(run(*common, "--algorithm", "sparse", "-o", tmp_path / "sparse.npz", "--json", "--quiet"))
    assert sparse["algorithm"] == "sparse"
    assert same_npz(tmp_path / "auto.npz", tmp_path / "sparse.npz")
    plan = json.loads(run(*common, "--algorithm", "sparse", "--plan", "--json", "-o", tmp_path / "p.npz").stdout)
    assert plan["algorithm"] == "sparse"
    assert "algorithm" not in json.loads(run(*common, "--plan", "--json", "-o", tmp_path / "p.npz").stdout)
    assert not (tmp_path / "p.npz").exists()


MIB = 1 << 20
FIXED_BYTES, PER_THREAD_BYTES = 16 * MIB, 4 * MIB  # beside the budget, as docs/memory.md states


def test_the_sparse_index_keeps_to_the_budget(tmp_path):
    """The sparse algorithm's index of the rows (its size follows the rows and their ones) and
    each worker's row buffers (the size of B's rows) are planned within the host budget: fewer
    workers, else auto runs the dense algorithm and the sparse one asked for is refused, naming
    the least budget that runs it, which then runs it on one worker. The bytes never change."""
    rng = np.random.default_rng(9)
    np.save(tmp_path / "a.npy", np.packbits(rng.random((100000, 1024)) < 0.005, axis=1))  # 12.8 MB, held
    common = ["gram", tmp_path / "a.npy", "--bits", "1024", "--metric", "jaccard", "--topk", "5", "--backend", "cpu",
              "--threads", "2"]
    small = 28 * MIB
    auto = summary_json(run(*common, "--host-mem", small, "-o", tmp_path / "auto.npz", "--json", "--quiet"))
    assert auto["algorithm"] == "dense" and "index" in auto["algorithm_desc"], auto["algorithm_desc"]
    assert auto["host_peak_bytes"] <= small + FIXED_BYTES + 2 * PER_THREAD_BYTES, auto["host_peak_bytes"]

    for what in (["-o", tmp_path / "s.npz"], ["--plan"]):
        proc = run(*common, "--host-mem", small, "--algorithm", "sparse", *what, check=False)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("outcore: the sparse algorithm needs") and "raise --host-mem" in proc.stderr
    assert not (tmp_path / "s.npz").exists()
    least = int(re.search(r"at least (\d+)M", proc.stderr).group(1))
    assert least * MIB > small

    proc = run(*common, "--host-mem", f"{least}M", "--algorithm", "sparse", "-o", tmp_path / "s.npz", "--json")
    ran = summary_json(proc)
    assert ran["algorithm"] == "sparse" and ran["threads"] == 1, ran
    assert "--threads 2: ran 1 (as many as the host budget holds" in proc.stderr, proc.stderr
    assert ran["host_peak_bytes"] <= least * MIB + FIXED_BYTES + PER_THREAD_BYTES, ran["host_peak_bytes"]
    plan = json.loads(run(*common, "--host-mem", f"{least}M", "--algorithm", "sparse", "--plan", "--json").stdout)
    assert plan["threads"] == 1 and 0 < plan["host_bytes"] <= least * MIB / 2, plan
    assert same_npz(tmp_path / "auto.npz", tmp_path / "s.npz")

    roomy = summary_json(run(*common, "--host-mem", "1G", "--algorithm", "sparse", "-o", tmp_path / "r.npz", "--json"))
    assert roomy["threads"] == 2 and same_npz(tmp_path / "auto.npz", tmp_path / "r.npz")


def test_plan_of_a_sparse_job(tmp_path):
    """--plan chooses as the job would: reuters (held as lists) asked for the sparse path, and
    as auto decides (sparse and dense are a close call on it, so either may win)."""
    path = data_file("reuters_docterm.mtx")
    args = ["gram", path, "--metric", "jaccard", "--topk", "10", "--backend", "cpu", "-o", tmp_path / "r.npz"]
    ran = summary_json(run(*args, "--algorithm", "sparse", "--json", "--quiet"))
    plan = json.loads(run(*args, "--algorithm", "sparse", "--plan", "--json").stdout)
    assert ran["algorithm"] == "sparse" and plan["algorithm"] == "sparse"
    assert "plan for cpu (sparse algorithm" in run(*args, "--algorithm", "sparse", "--plan").stdout
    ran = summary_json(run(*args, "--json", "--quiet"))
    plan = json.loads(run(*args, "--plan", "--json").stdout)
    assert ran["algorithm"] == plan.get("algorithm", "dense")  # a dense plan names no algorithm


def test_plan_of_a_file_input_refuses_what_the_run_refuses(tmp_path):
    """--algorithm sparse on an input left in its file (larger than --host-mem): the column
    tables' check, which needs only the column count, refuses the plan (and --explain) as it
    refuses the run, with the same line, before the file is read; with room the plan says
    the rest follows from the ones read."""
    run("gen", "--rows", "400", "--cols", "400000", "--density", "0.0005", "--packed", "-o", tmp_path / "P.npy",
        "-q")
    job = ["gram", tmp_path / "P.npy", "--bits", "400000", "--topk", "5", "--metric", "jaccard", "--algorithm",
           "sparse"]
    lines = set()
    for extra in (["--plan"], ["--explain", "-o", tmp_path / "s.npz"], ["-o", tmp_path / "s.npz"]):
        proc = run(*job, "--host-mem", "8M", *extra, check=False)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, (extra, proc.stderr)
        assert "tables of 400000 columns" in proc.stderr, proc.stderr
        lines.add(proc.stderr)
    assert len(lines) == 1 and not (tmp_path / "s.npz").exists()
    plan = run(*job, "--host-mem", "24M", "--plan").stdout
    assert "after reading the inputs left in their files" in plan and "follow from their ones" in plan, plan
