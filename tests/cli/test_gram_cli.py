"""`outcore gram` on real files, checked exactly against numpy computed here."""
import os
import time

import numpy as np
import pytest

from conftest import data_file, reference, run, summary_json

METRICS = ["counts", "jaccard", "cosine", "hamming"]


def random01(rng, n, m, density=0.3):
    return (rng.random((n, m)) < density).astype(np.uint8)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("threads", [1, 2])
def test_gram_symmetric_matches_numpy(tmp_path, rng, metric, threads):
    a = random01(rng, 131, 517)
    a[3] = 0  # an empty row: 0/0 rules of jaccard and cosine
    a[4] = 1
    np.save(tmp_path / "a.npy", a)
    run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--metric", metric, "--threads", threads,
        "--backend", "cpu", "--quiet")
    got = np.load(tmp_path / "c.npy")
    want = reference(a, metric=metric)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


@pytest.mark.parametrize("metric", METRICS)
def test_gram_ab_matches_numpy(tmp_path, rng, metric):
    a = random01(rng, 70, 1000, 0.2).astype(bool)
    b = random01(rng, 45, 1000, 0.4).astype(np.int8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    run("gram", tmp_path / "a.npy", tmp_path / "b.npy", "-o", tmp_path / "c.npy", "--metric", metric, "--quiet")
    assert np.array_equal(np.load(tmp_path / "c.npy"), reference(a, b, metric=metric))


@pytest.mark.parametrize("metric", ["counts", "hamming"])
def test_uint16_output(tmp_path, rng, metric):
    a = random01(rng, 50, 700)
    np.save(tmp_path / "a.npy", a)
    run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--metric", metric, "--dtype", "uint16", "--quiet")
    got = np.load(tmp_path / "c.npy")
    assert got.dtype == np.uint16
    assert np.array_equal(got, reference(a, metric=metric, dtype="uint16"))


def test_packed_bits_input(tmp_path, rng):
    a = random01(rng, 33, 1001)
    np.save(tmp_path / "packed.npy", np.packbits(a, axis=1))
    run("gram", tmp_path / "packed.npy", "--bits", 1001, "-o", tmp_path / "c.npy", "--quiet")
    assert np.array_equal(np.load(tmp_path / "c.npy"), reference(a))


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_versions(tmp_path, rng, version):
    from numpy.lib import format as npformat
    a = random01(rng, 20, 90)
    with open(tmp_path / "a.npy", "wb") as f:
        npformat.write_array(f, a, version=version)
    run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--quiet")
    assert np.array_equal(np.load(tmp_path / "c.npy"), reference(a))


def test_text_and_mtx_inputs(tmp_path, rng):
    a = random01(rng, 25, 40)
    np.savetxt(tmp_path / "a.txt", a, fmt="%d")
    np.savetxt(tmp_path / "a.csv", a, fmt="%d", delimiter=",")
    rows, cols = np.nonzero(a)
    with open(tmp_path / "a.mtx", "w") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n")
        f.write(f"{a.shape[0]} {a.shape[1]} {len(rows)}\n")
        for r, c in zip(rows, cols):
            f.write(f"{r + 1} {c + 1}\n")
    want = reference(a)
    for name in ["a.txt", "a.csv", "a.mtx"]:
        run("gram", tmp_path / name, "-o", tmp_path / "c.npy", "--quiet")
        assert np.array_equal(np.load(tmp_path / "c.npy"), want), name


def test_aflp_markers(tmp_path):
    path = data_file("aflp_markers.txt")
    a = np.loadtxt(path, dtype=np.int64)
    assert a.shape == (207, 583)
    for metric in METRICS:
        run("gram", path, "-o", tmp_path / "c.npy", "--metric", metric, "--quiet")
        assert np.array_equal(np.load(tmp_path / "c.npy"), reference(a, metric=metric)), metric


def test_reuters_docterm(tmp_path):
    path = data_file("reuters_docterm.mtx")
    with open(path) as f:
        lines = [l for l in f if not l.startswith("%")]
    n, m, nnz = map(int, lines[0].split())
    a = np.zeros((n, m), dtype=np.uint8)
    ij = np.array([l.split() for l in lines[1:]], dtype=np.int64)
    a[ij[:, 0] - 1, ij[:, 1] - 1] = 1
    assert ij.shape[0] == nnz
    for metric in ["counts", "jaccard"]:
        proc = run("gram", path, "-o", tmp_path / "c.npy", "--metric", metric, "--json")
        assert np.array_equal(np.load(tmp_path / "c.npy"), reference(a, metric=metric)), metric
        s = summary_json(proc)
        assert (s["n"], s["p"], s["m"]) == (n, n, m)


def test_json_summary(tmp_path, rng):
    a = random01(rng, 64, 640)
    np.save(tmp_path / "a.npy", a)
    proc = run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--json", "--backend", "cpu")
    s = summary_json(proc)
    assert s["backend"] == "cpu"
    assert s["metric"] == "counts" and s["dtype"] == "int32"
    assert s["bit_macs_effective"] == 64 * 64 * 640
    assert 0 < s["bit_macs_computed"] <= s["bit_macs_effective"] * 2
    assert s["seconds"] > 0 and s["host_peak_bytes"] > 0


PHASES = ["cuda_start", "read", "prepare", "setup", "compute", "output", "teardown"]


@pytest.mark.parametrize("backend", ["cpu", "auto"])
def test_json_phases(tmp_path, rng, backend):
    """--json says where the wall time went: every phase, none negative, their sum within the
    wall time of the whole process measured here (docs/cli.md, "Where the time goes")."""
    np.save(tmp_path / "a.npy", random01(rng, 1200, 800))
    t0 = time.monotonic()
    proc = run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--metric", "jaccard", "--json",
               "--backend", backend)
    wall = time.monotonic() - t0
    s = summary_json(proc)
    phases = s["phases"]
    assert sorted(phases) == sorted(PHASES)
    assert all(phases[p] >= 0 for p in PHASES), phases
    assert sum(phases.values()) <= wall + 0.001, (phases, wall)
    # The job's phases within its seconds, each figure printed to the microsecond: the sum's
    # rounding is half a microsecond a figure at most.
    job_phases = [p for p in PHASES if p not in ("cuda_start", "read")]
    assert sum(phases[p] for p in job_phases) <= s["seconds"] + 0.5e-6 * (len(job_phases) + 1) + 1e-12
    assert phases["read"] == s["load_seconds"]
    assert phases["compute"] > 0 and phases["output"] > 0  # a dense file is synced and renamed
    if s["backend"] == "cpu" and backend == "cpu":
        assert phases["cuda_start"] == 0
    # The cost model's prediction for the backend that ran, beside the measured seconds.
    assert s["predicted_seconds"] > 0


def test_summary_line_and_quiet(tmp_path, rng):
    np.save(tmp_path / "a.npy", random01(rng, 10, 64))
    proc = run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "bit-MAC/s" in lines[0] and "peak memory" in lines[0]
    proc = run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--quiet")
    assert proc.stderr == "" and proc.stdout == ""


def test_no_temp_files_left(tmp_path, rng):
    np.save(tmp_path / "a.npy", random01(rng, 10, 64))
    run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--quiet")
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "c.npy"]


def test_gen_writes_planted_matrix(tmp_path):
    run("gen", "--rows", 200, "--cols", 3000, "--density", 0.25, "--plant", 10, "--seed", 7, "-o", tmp_path / "g.npy")
    g = np.load(tmp_path / "g.npy")
    assert g.shape == (200, 3000) and g.dtype == np.uint8
    assert set(np.unique(g)) <= {0, 1}
    assert abs(g.mean() - 0.25) < 0.01
    jac = reference(g, metric="jaccard")
    np.fill_diagonal(jac, 0)
    assert (np.triu(jac) > 0.8).sum() == 10  # exactly the planted pairs stand out
    run("gen", "--rows", 200, "--cols", 3000, "--density", 0.25, "--plant", 10, "--seed", 7, "--packed",
        "-o", tmp_path / "p.npy")
    assert np.array_equal(np.load(tmp_path / "p.npy"), np.packbits(g, axis=1))


def test_version_and_help():
    assert run("--version").stdout.startswith("outcore ")
    assert "usage: outcore gram" in run("gram", "--help").stdout
    assert run("nonsense", check=False).returncode == 2
    assert run("gram", check=False).returncode == 2


def test_usage_errors_are_one_line(tmp_path, rng):
    np.save(tmp_path / "a.npy", random01(rng, 4, 8))
    cases = [
        ["--metric", "dice"], ["--dtype", "float64"], ["--threads", "0"], ["--threads", "x"],
        ["--backend", "tpu"], ["--gpu-mem", "lots"], ["--gpu-mem", "150%"], ["--tile", "-3"],
        ["--metric", "jaccard", "--dtype", "uint16"], ["--bogus"],
    ]
    for extra in cases:
        proc = run("gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", *extra, check=False)
        assert proc.returncode == 2, extra
        assert len(proc.stderr.strip().splitlines()) == 1, (extra, proc.stderr)
        assert not (tmp_path / "c.npy").exists()


def test_demo_finds_planted_pairs():
    proc = run("demo", "--rows", 1000, "--cols", 4096, "--backend", "cpu")
    assert "32 of the 32 planted" in proc.stdout
    # --help names the defaults, whatever came before it
    text = run("demo", "--rows", 5, "--cols", 999, "--help").stdout
    assert "(default 8192, at least 2)" in text and "(default 32768, at least 512)" in text, text


def test_plan_prints_the_plan_and_writes_nothing(tmp_path, rng):
    """--plan says how the job would run (tiles, threads; panels under --host-mem) and stops
    there: no output file, no temporary, exit 0; --json gives the same figures as JSON."""
    a = random01(rng, 3000, 4096, 0.1)
    np.save(tmp_path / "a.npy", np.packbits(a, axis=1))
    base = ["gram", tmp_path / "a.npy", "--bits", "4096", "--backend", "cpu", "--threads", "2"]
    text = run(*base, "--topk", "5", "-o", tmp_path / "t.npz", "--plan").stdout
    assert text.startswith("plan for cpu") and "tiles" in text and "threads  2 workers" in text
    assert "the inputs are in memory" in text
    plan = summary_json(run(*base, "-o", tmp_path / "c.npy", "--plan", "--json"))
    tiles = -(-3000 // plan["tile"])
    assert plan["where"] == "cpu" and plan["threads"] == 2 and plan["tiles"] == tiles * (tiles + 1) // 2
    # A budget that leaves the input in its file: the plan shows the panels it reads.
    small = summary_json(run(*base, "--host-mem", "1M", "-o", tmp_path / "c.npy", "--plan", "--json"))
    assert small["host_budget"] == 1 << 20 and small["panels_a"] > 1 and small["panel_bytes"] <= 1 << 20
    # With --explain, the prediction follows the plan.
    both = run(*base, "-o", tmp_path / "c.npy", "--plan", "--explain").stdout
    assert both.startswith("plan for cpu") and "\nbackend: " in both and "\nalgorithm: " in both, both
    # No -o: the plan of the kind's first format, the same figures, and nothing written where it runs.
    for extra, out in (([], "c.npy"), (["--topk", "5"], "t.npz"), (["--threshold", "40"], "p.npz")):
        # (a budget given: the default follows the memory available at each start)
        without = summary_json(run(*base, *extra, "--host-mem", "1G", "--plan", "--json", cwd=tmp_path))
        assert without == summary_json(run(*base, *extra, "--host-mem", "1G", "-o", tmp_path / out, "--plan",
                                           "--json")), extra
    assert sorted(os.listdir(tmp_path)) == ["a.npy"]


def test_plan_on_the_gpu_fits_its_budgets(tmp_path, rng):
    """On a GPU, --plan names the device and the figures fit --gpu-mem and --host-mem."""
    a = random01(rng, 20000, 8192, 0.1)
    np.save(tmp_path / "a.npy", np.packbits(a, axis=1))
    proc = run("gram", tmp_path / "a.npy", "--bits", "8192", "--backend", "cuda", "--gpu-mem", "64M",
               "-o", tmp_path / "c.npy", "--plan", "--json", check=False)
    if proc.returncode != 0:
        pytest.skip(f"no usable GPU: {proc.stderr.strip()}")
    plan = summary_json(proc)
    assert plan["where"].startswith("cuda:") and plan["device_budget"] == 64 << 20 and plan["device_budget_given"]
    assert plan["device_bytes"] <= plan["device_budget"] and plan["pinned_bytes"] <= plan["host_budget"]
    assert plan["sinks"] >= 1 and plan["d2h_slots"] == plan["sinks"] + 4
    assert plan["bound"] in ("kernels", "uploads", "output")
    too_small = run("gram", tmp_path / "a.npy", "--bits", "8192", "--backend", "cuda", "--gpu-mem", "256K",
                    "-o", tmp_path / "c.npy", "--plan", check=False)
    assert too_small.returncode == 2 and "the smallest plan" in too_small.stderr and "needs" in too_small.stderr
    assert sorted(os.listdir(tmp_path)) == ["a.npy"]
