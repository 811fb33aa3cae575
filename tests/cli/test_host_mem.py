"""--host-mem: a .npy input larger than the host budget stays in its file and is read in
panels. Results must be byte-identical to an unbounded run, the process must stay within the
budget plus the fixed cost that docs/memory.md states, and bad values met while reading lazily
must still fail with the reader's one-line message and no output."""
import json
import os

import numpy as np
import pytest

from conftest import reference, run, summary_json

KIB = 1 << 10
MIB = 1 << 20


def row_bytes(cols):
    """Packed bytes per row in the library's layout: 64-bit words rounded up to 8 words."""
    return (cols + 511) // 512 * 64


def same_result(a, b):
    """Dense .npy outputs are compared byte for byte; .npz archives by their arrays (a zip
    member carries its write time)."""
    if str(a).endswith(".npy"):
        return a.read_bytes() == b.read_bytes()
    with np.load(a) as x, np.load(b) as y:
        return sorted(x.files) == sorted(y.files) and all(
            x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]) for k in x.files)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A (3000 x 4000) and B (1700 x 4000) as packbits and as bool files; A is 1.5 MB packed."""
    d = tmp_path_factory.mktemp("hostmem")
    rng = np.random.default_rng(1414)
    a = rng.random((3000, 4000)) < 0.3
    b = rng.random((1700, 4000)) < 0.2
    np.save(d / "A_bits.npy", np.packbits(a, axis=1))
    np.save(d / "B_bits.npy", np.packbits(b, axis=1))
    np.save(d / "A_bool.npy", a)
    np.save(d / "B_bool.npy", b)
    return d, a, b


BUDGET = 320 * KIB  # A's packed bits are four times this; B's more than half of it
# Thresholds that pass some 60000 pairs: A·Aᵀ (density 0.3 against itself) scores higher than
# A·Bᵀ (0.3 against 0.2).
THRESHOLD = {False: "0.195", True: "0.155"}
OUTPUTS = [
    ("dense", [], "npy"),
    ("jaccard dense", ["--metric", "jaccard"], "npy"),
    ("topk", ["--metric", "cosine", "--topk", "7"], "npz"),
    ("threshold", ["--metric", "jaccard", "--threshold", "T"], "npz"),
    ("hamming topk", ["--metric", "hamming", "--topk", "3"], "npz"),
]


@pytest.mark.parametrize("kind", ["bits", "bool"])
@pytest.mark.parametrize("with_b", [False, True], ids=["AAt", "ABt"])
@pytest.mark.parametrize("name,args,ext", OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_out_of_core_matches_unbounded(inputs, tmp_path, kind, with_b, name, args, ext):
    d, a, _ = inputs
    assert a.shape[0] * row_bytes(a.shape[1]) >= 4 * BUDGET
    files = [d / f"A_{kind}.npy"] + ([d / f"B_{kind}.npy"] if with_b else [])
    bits = ["--bits", "4000"] if kind == "bits" else []
    args = [THRESHOLD[with_b] if a == "T" else a for a in args]
    common = ["gram", *files, *bits, *args, "--backend", "cpu", "--tile", "96", "--json"]
    full = summary_json(run(*common, "-o", tmp_path / f"full.{ext}"))
    # The top-k lists, held whole (n rows of K keys and a floor, 8 bytes each), come beside
    # the budget the panels share.
    k = int(args[args.index("--topk") + 1]) if "--topk" in args else -1
    budget = BUDGET + (a.shape[0] * (k + 1) * 8 if k > 0 else 0)
    lazy = summary_json(run(*common, "--host-mem", str(budget), "-o", tmp_path / f"lazy.{ext}"))
    assert lazy["host_budget_bytes"] == budget
    if "--threshold" in args:
        assert lazy["pairs"] > 10000
    assert full["host_budget_bytes"] > BUDGET  # the default: a share of the available memory
    assert same_result(tmp_path / f"full.{ext}", tmp_path / f"lazy.{ext}")


def test_out_of_core_against_numpy(inputs, tmp_path):
    """The panels are not only equal to the in-memory run: both are right."""
    d, a, b = inputs
    run("gram", d / "A_bits.npy", d / "B_bits.npy", "--bits", "4000", "--metric", "cosine", "--backend", "cpu", "--tile", "96",
        "--host-mem", str(BUDGET), "-o", tmp_path / "c.npy", "--quiet")
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), reference(a, b, "cosine"))


def test_host_mem_percent_and_bad_values(inputs, tmp_path):
    d, _, _ = inputs
    proc = run("gram", d / "A_bits.npy", "--bits", "4000", "--host-mem", "50%", "--json", "-o", tmp_path / "c.npy")
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert abs(summary_json(proc)["host_budget_bytes"] - total // 2) <= 1
    for bad in ("0", "-3G", "lots", "150%", "1e-12%"):
        proc = run("gram", d / "A_bits.npy", "--bits", "4000", "--host-mem", bad, "-o", tmp_path / "x.npy", check=False)
        assert proc.returncode == 2 and "--host-mem" in proc.stderr, proc.stderr
    assert not (tmp_path / "x.npy").exists()


# Peak memory. The fixed cost beside the budget, as docs/memory.md states it: 16 MiB for the
# process (code, libc, the reader's header mapping, the output writer, small job state) plus
# 4 MiB per worker thread (its popcount panel, read buffer and tile buffers).
FIXED_BYTES = 16 * MIB
PER_THREAD_BYTES = 4 * MIB


# 28 MB packed, more than the budget and the fixed cost together: in few long rows, since the
# job's work grows with the rows squared and its size with the rows.
PEAK_ROWS, PEAK_COLS = 3500, 65536


@pytest.fixture(scope="module")
def peak_input(tmp_path_factory):
    path = tmp_path_factory.mktemp("peak") / "big.npy"
    rng = np.random.default_rng(7)
    np.save(path, rng.integers(0, 256, size=(PEAK_ROWS, PEAK_COLS // 8), dtype=np.uint8))
    return path


@pytest.mark.parametrize("args,ext", [(["--metric", "jaccard", "--topk", "10"], "npz"),
                                      (["--metric", "jaccard", "--threshold", "0.336"], "npz")],
                         ids=["topk", "threshold"])
def test_peak_memory_stays_within_budget(peak_input, tmp_path, args, ext):
    cols, budget, threads = PEAK_COLS, 8 * MIB, 2
    packed = PEAK_ROWS * row_bytes(cols)
    assert packed >= 3 * budget
    # host_peak_bytes is getrusage's maxrss of the CLI process itself.
    lazy = summary_json(run("gram", peak_input, "--bits", cols, *args, "--threads", threads, "--backend", "cpu",
                            "--host-mem", budget, "--json", "-o", tmp_path / f"lazy.{ext}"))
    assert lazy["host_peak_bytes"] <= budget + FIXED_BYTES + threads * PER_THREAD_BYTES, lazy
    full = summary_json(run("gram", peak_input, "--bits", cols, *args, "--threads", threads, "--backend", "cpu",
                            "--json", "-o", tmp_path / f"full.{ext}"))
    assert full["host_peak_bytes"] >= packed  # the same job in memory holds the whole matrix
    assert same_result(tmp_path / f"full.{ext}", tmp_path / f"lazy.{ext}")
    if "--threshold" in args:  # enough pairs that they spill past the budget's share for them
        assert lazy["pairs"] * 20 > budget



@pytest.mark.parametrize("algorithm", ["sparse", "dense"])
def test_a_block_of_many_pairs_keeps_to_the_budget(tmp_path, algorithm):
    """Each of A's 128 rows passes all 150000 of B's columns (threshold 0 counts every pair):
    19.2 million pairs, 154 MB, in two blocks of 64 rows, more than twice the budget. The
    sparse algorithm hands a block's rows to the selection in pieces, which spills them, so
    its peak keeps to the budget as the dense one's does (it held each block whole: 178 MB).
    B is nearly empty, so that the sparse index (the size of the input's ones) stays small."""
    rng = np.random.default_rng(5)
    np.save(tmp_path / "a.npy", (rng.random((128, 8)) < 0.5).astype(np.uint8))
    np.save(tmp_path / "b.npy", (rng.random((150000, 8)) < 0.02).astype(np.uint8))
    budget, threads = 64 * MIB, 2
    stats = summary_json(run("gram", tmp_path / "a.npy", tmp_path / "b.npy", "--metric", "counts", "--threshold",
                             "0", "--algorithm", algorithm, "--backend", "cpu", "--threads", threads, "--host-mem",
                             budget, "--json", "-o", tmp_path / "p.npz"))
    assert stats["pairs"] == 128 * 150000 and stats["pairs"] * 8 > 2 * budget, stats
    assert stats["host_peak_bytes"] <= budget + FIXED_BYTES + threads * PER_THREAD_BYTES, stats
    with np.load(tmp_path / "p.npz") as p:
        assert np.array_equal(p["rows"], np.repeat(np.arange(128), 150000))
        assert np.array_equal(p["cols"], np.tile(np.arange(150000), 128))
    a, b = np.load(tmp_path / "a.npy").astype(np.int64), np.load(tmp_path / "b.npy").astype(np.int64)
    with np.load(tmp_path / "p.npz") as p:
        assert np.array_equal(p["values"], (a @ b.T).ravel())



@pytest.mark.parametrize("command", ["gram", "map", "matmul"])
def test_a_first_use_measurement_keeps_to_the_budget(tmp_path, command):
    """The first job on a machine measures the cost model's rates (a triad over arrays larger
    than the caches, the BLAS's GEMM rate): within the job's budget, or not at all (the
    defaults for that job); a later job with room measures and stores them."""
    cache, budget, threads = tmp_path / "rates.txt", 24 * MIB, 2
    rng = np.random.default_rng(2)
    np.save(tmp_path / "a.npy", (rng.random((300, 500)) < 0.3).astype(np.uint8))
    np.save(tmp_path / "x.npy", rng.standard_normal((200, 300)))
    jobs = {"gram": ["gram", tmp_path / "a.npy", "--metric", "jaccard", "--topk", "5", "--backend", "cpu",
                     "-o", tmp_path / "t.npz"],
            "map": ["map", "a * 2 + 1", f"a={tmp_path / 'x.npy'}", "--backend", "auto", "-o", tmp_path / "m.npy"],
            "matmul": ["matmul", tmp_path / "x.npy", "--gram", "--backend", "auto", "-o", tmp_path / "c.npy"]}
    env = {"OUTCORE_COST_CACHE": str(cache)}
    proc = run(*jobs[command], "--threads", threads, "--host-mem", budget, "--json", env=env)
    stats = json.loads(proc.stdout)
    assert stats["host_peak_bytes"] <= budget + FIXED_BYTES + threads * PER_THREAD_BYTES, stats["host_peak_bytes"]
    stored = cache.read_text() if cache.exists() else ""
    assert "host_bw" not in stored, stored  # the BLAS's rate may be: a slow machine times it in the room
    run(*jobs[command], "--threads", threads, "--json", env=env)
    stored = cache.read_text()
    assert ("gemm" in stored) if command == "matmul" else ("host_bw" in stored), stored


def check_one_line_failure(tmp_path, args, must_say):
    before = set(os.listdir(tmp_path))
    proc = run("gram", *args, "-o", tmp_path / "out.npy", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("outcore: ") and proc.stderr.count("\n") == 1, repr(proc.stderr)
    for part in must_say:
        assert part in proc.stderr, (part, proc.stderr)
    assert set(os.listdir(tmp_path)) == before, "output or temporary file left behind"


@pytest.mark.parametrize("metric", ["counts", "jaccard"])  # jaccard meets it in the popcount pass
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_bad_value_read_lazily(tmp_path, metric, dtype):
    a = (np.arange(2000 * 1000).reshape(2000, 1000) % 7 == 0).astype(dtype)
    a[1234, 567] = 2 if dtype == "uint8" else -1
    np.save(tmp_path / "bad.npy", a)
    value = "value 2" if dtype == "uint8" else "value -1"
    check_one_line_failure(tmp_path, [tmp_path / "bad.npy", "--metric", metric, "--backend", "cpu",
                                      "--host-mem", "128K"], ["bad.npy", value, "row 1234", "column 567"])


def test_bit_past_bits_read_lazily(tmp_path):
    packed = np.packbits(np.arange(2000 * 1001).reshape(2000, 1001) % 5 == 0, axis=1)
    packed[1500, -1] |= 0x01  # column 1007: past --bits 1001
    np.save(tmp_path / "p.npy", packed)
    check_one_line_failure(tmp_path, [tmp_path / "p.npy", "--bits", "1001", "--backend", "cpu", "--host-mem", "128K"],
                           ["p.npy", "row 1500", "bit 1007", "--bits 1001"])


def test_truncated_file_with_small_budget(tmp_path):
    np.save(tmp_path / "t.npy", np.ones((2000, 1000), dtype=bool))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[:-10])
    check_one_line_failure(tmp_path, [tmp_path / "t.npy", "--host-mem", "128K"], ["t.npy", "truncated .npy data"])


def test_budget_too_small_says_what_it_needs(inputs, tmp_path):
    d, _, _ = inputs
    proc = run("gram", d / "A_bits.npy", "--bits", "4000", "--backend", "cpu", "--host-mem", "16K",
               "-o", tmp_path / "c.npy", check=False)
    assert proc.returncode != 0 and "host memory budget 16384 bytes is too small" in proc.stderr, proc.stderr
    assert "--host-mem" in proc.stderr and not (tmp_path / "c.npy").exists()


@pytest.mark.parametrize("args,ext", [(["--metric", "cosine", "--topk", "7"], "npz"), ([], "npy")],
                         ids=["topk", "dense"])
def test_a_large_tile_counts_its_buffers_in_the_budget(peak_input, tmp_path, args, ext):
    """--tile 2048 gives each worker 16 or 32 MiB of tile buffers, far past the fixed cost's
    share: a budget they do not fit is refused before any work, naming the least that runs,
    --plan shows them, and that least budget runs the job within it."""
    cols, threads, tile = PEAK_COLS, 2, 2048
    common = [peak_input, "--bits", cols, *args, "--threads", threads, "--backend", "cpu", "--tile", tile]
    out = tmp_path / f"c.{ext}"
    proc = run("gram", *common, "--host-mem", 8 * MIB, "-o", out, check=False)
    assert proc.returncode == 2 and "too small for tiles of 2048 x 2048" in proc.stderr, proc.stderr
    assert "give a smaller --tile" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not out.exists()
    least = int(proc.stderr.split("it needs at least ")[1].split()[0])
    plan = json.loads(run("gram", *common, "--host-mem", least, "--plan", "--json", "-o", out).stdout)
    assert plan["tile"] == tile and plan["tile_buffer_bytes"] > threads * 8 * MIB, plan
    # The least budget for the tiles leaves the panels nothing: the job runs with panels beside.
    budget = least + 8 * MIB
    job = summary_json(run("gram", *common, "--host-mem", budget, "--json", "-o", out))
    assert job["host_peak_bytes"] <= budget + FIXED_BYTES + threads * PER_THREAD_BYTES, job


def test_packed_input_for_the_gpu_stays_in_its_file(inputs, tmp_path):
    """A packed .npy for `--backend cuda` is left in its file whatever the budget (the upload
    threads read its rows), a bool one is packed into memory, and a CPU job keeps the budget's
    rule. The reading happens before the backend starts, so this holds without a GPU too."""
    d, _, _ = inputs
    env = {"OUTCORE_TRACE": "1"}

    def read_line(*args):
        proc = run("gram", *args, "-q", "-o", tmp_path / "o.npy", check=False, env=env)
        lines = [x for x in proc.stderr.splitlines() if x.startswith("outcore read:")]
        assert len(lines) == 1, proc.stderr
        return lines[0]

    assert "(left in its file)" in read_line(d / "A_bits.npy", "--bits", "4000", "--backend", "cuda")
    assert "(left in its file)" not in read_line(d / "A_bool.npy", "--backend", "cuda")
    assert "(left in its file)" not in read_line(d / "A_bits.npy", "--bits", "4000", "--backend", "cpu")
    assert "(left in its file)" not in read_line(d / "A_bits.npy", "--bits", "4000", "--backend", "cuda",
                                                 "--algorithm", "sparse")
    assert "(left in its file)" in read_line(d / "A_bits.npy", "--bits", "4000", "--backend", "cpu",
                                             "--host-mem", "16K")


def cuda_usable(tmp_path):
    """(usable, why not) from a tiny CUDA job: the GPU cases report themselves skipped without one."""
    np.save(tmp_path / "probe.npy", np.eye(4, dtype=np.uint8))
    proc = run("gram", tmp_path / "probe.npy", "--backend", "cuda", "-o", tmp_path / "probe_c.npy", "-q", check=False)
    return proc.returncode == 0, proc.stderr.strip()


@pytest.mark.parametrize("kind", ["bits", "bool"])
@pytest.mark.parametrize("name,args,ext", OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_gpu_reads_panels_from_the_file(inputs, tmp_path, kind, name, args, ext):
    """The CUDA backend uploads a file-backed input's rows from the file through pinned
    staging: the same bytes as the CPU backend on the input in memory, A·Aᵀ and A·Bᵀ. The
    budget (2 MiB) leaves A (1.5 MB packed) in its file and gives the pinned rings room."""
    usable, why = cuda_usable(tmp_path)
    if not usable:
        pytest.skip(f"no usable GPU: {why}")
    d, _, _ = inputs
    bits = ["--bits", "4000"] if kind == "bits" else []
    for files in ([d / f"A_{kind}.npy"], [d / f"A_{kind}.npy", d / f"B_{kind}.npy"]):
        job = [THRESHOLD[len(files) == 2] if a == "T" else a for a in args]
        run("gram", *files, *bits, *job, "--backend", "cpu", "-q", "-o", tmp_path / f"cpu.{ext}")
        gpu = summary_json(run("gram", *files, *bits, *job, "--backend", "cuda", "--host-mem", "2M", "--json",
                               "-o", tmp_path / f"gpu.{ext}"))
        assert gpu["backend"] == "cuda" and gpu["host_budget_bytes"] == 2 * MIB
        assert same_result(tmp_path / f"cpu.{ext}", tmp_path / f"gpu.{ext}"), files
