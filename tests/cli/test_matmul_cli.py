"""`outcore matmul` on real files: products against numpy (A @ B, transposes, --gram, dtypes,
budgets that force many tiles and K panels), the plan, and bad inputs: exit 2, one line naming
the file, no output file."""
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import SOURCE_DIR, outcore_bin, require_backend, run


@pytest.fixture
def mats(tmp_path):
    rng = np.random.default_rng(7)
    x = {
        "a": rng.standard_normal((130, 70)),
        "b": rng.standard_normal((70, 90)),
        "bt": rng.standard_normal((90, 70)),
        "i8": rng.integers(-128, 128, (120, 300), dtype=np.int8),
        "j8": rng.integers(-128, 128, (300, 50), dtype=np.int8),
        "h": rng.standard_normal((64, 48)).astype(np.float16),
        "f": rng.standard_normal((48, 32)).astype(np.float32),
        "i64": rng.integers(-5, 5, (10, 10), dtype=np.int64),
        "u8": rng.integers(0, 255, (48, 20), dtype=np.uint8),
        "flag": rng.integers(0, 2, (10, 10)).astype(bool),
        "f10": rng.standard_normal((10, 6)).astype(np.float32),
        "cube": rng.standard_normal((4, 4, 4)),
    }
    for name, v in x.items():
        np.save(tmp_path / f"{name}.npy", v)
    return tmp_path, x


def close(got, ref, k, eps):
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape
    tol = k * eps * (np.abs(ref).max() + 1)
    assert np.abs(got.astype(np.float64) - ref.astype(np.float64)).max() <= tol


def test_product_and_json(mats):
    d, x = mats
    proc = run("matmul", d / "a.npy", d / "b.npy", "-o", d / "c.npy", "--json")
    close(np.load(d / "c.npy"), x["a"] @ x["b"], 70, 1e-15)
    s = json.loads(proc.stdout)
    assert (s["m"], s["n"], s["k"], s["dtype"]) == (130, 90, 70, "float64")
    assert s["backend"] == "cpu" and s["backend_desc"].startswith("cpu/")
    assert s["bytes_written"] == 130 * 90 * 8 and s["flops"] == 2 * 130 * 90 * 70
    assert s["gflops_per_second"] > 0 and s["host_peak_bytes"] > 0
    assert [p.name for p in d.iterdir() if ".tmp-" in p.name] == []


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_transposes(mats, ta, tb):
    d, x = mats
    a = x["a"].T.copy() if ta else x["a"]
    b = x["bt"] if tb else x["b"]
    np.save(d / "ta.npy", a)
    np.save(d / "tb.npy", b)
    flags = (["--transpose-a"] if ta else []) + (["--transpose-b"] if tb else [])
    run("matmul", d / "ta.npy", d / "tb.npy", *flags, "-o", d / "c.npy", "-q")
    ref = (a.T if ta else a) @ (b.T if tb else b)
    close(np.load(d / "c.npy"), ref, 70, 1e-15)


def test_fortran_order(mats):
    """A Fortran-order file holds the transpose of its C-order bytes: read so, no copy."""
    d, x = mats
    np.save(d / "fa.npy", np.asfortranarray(x["a"]))
    np.save(d / "fb.npy", np.asfortranarray(x["b"]))
    run("matmul", d / "fa.npy", d / "fb.npy", "-o", d / "c.npy", "-q")
    close(np.load(d / "c.npy"), x["a"] @ x["b"], 70, 1e-15)
    plan = json.loads(run("matmul", d / "fa.npy", d / "fb.npy", "-o", d / "c.npy", "--backend", "cpu", "--plan",
                          "--json").stdout)
    if plan["backend"] != "cpu/reference":  # a BLAS reads both where they lie, with its transpose flag
        assert plan["in_place"][:2] == ["A", "B"], plan
    run("matmul", d / "fb.npy", d / "a.npy", "--transpose-a", "--transpose-b", "-o", d / "c.npy", "-q")
    close(np.load(d / "c.npy"), x["b"].T @ x["a"].T, 70, 1e-15)
    proc = run("matmul", d / "fa.npy", d / "fa.npy", "--transpose-b", "-o", d / "c.npy", "--json", "--tile", "32")
    assert json.loads(proc.stdout)["tiles"] == 5 * 6 // 2  # A·Aᵀ: the symmetric job
    close(np.load(d / "c.npy"), x["a"] @ x["a"].T, 70, 1e-15)


def test_gram_and_same_file(mats):
    d, x = mats
    run("matmul", d / "i8.npy", "--gram", "-o", d / "g.npy", "-q")
    g = np.load(d / "g.npy")
    ref = x["i8"].astype(np.int32) @ x["i8"].T.astype(np.int32)
    assert g.dtype == np.int32 and np.array_equal(g, ref)
    # B the same file as A, op(B) = Aᵀ: the symmetric job, the same bytes
    proc = run("matmul", d / "i8.npy", d / "i8.npy", "--transpose-b", "-o", d / "g2.npy", "--json", "--tile", "32")
    assert np.array_equal(np.load(d / "g2.npy"), ref)
    assert json.loads(proc.stdout)["tiles"] == 4 * 5 // 2
    run("matmul", d / "a.npy", "--gram", "--transpose-a", "-o", d / "g3.npy", "-q")
    g3 = np.load(d / "g3.npy")
    close(g3, x["a"].T @ x["a"], 130, 1e-15)
    assert np.array_equal(g3, g3.T)


def test_dtypes(mats):
    d, x = mats
    run("matmul", d / "i8.npy", d / "j8.npy", "-o", d / "c.npy", "-q")
    c = np.load(d / "c.npy")
    assert c.dtype == np.int32 and np.array_equal(c, x["i8"].astype(np.int32) @ x["j8"].astype(np.int32))
    run("matmul", d / "h.npy", d / "f.npy", "-o", d / "c.npy", "-q")  # float16 x float32 -> float32
    close(np.load(d / "c.npy"), x["h"] @ x["f"], 48, 1e-6)
    run("matmul", d / "u8.npy", d / "u8.npy", "--transpose-b", "-o", d / "c.npy", "-q", "--dtype", "float64")
    close(np.load(d / "c.npy"), x["u8"].astype(np.float64) @ x["u8"].T, 20, 1e-15)
    run("matmul", d / "a.npy", d / "b.npy", "--dtype", "float32", "-o", d / "c.npy", "-q")
    close(np.load(d / "c.npy"), (x["a"].astype(np.float32) @ x["b"].astype(np.float32)), 70, 1e-6)
    # float16 x float16: float32 sums, written as float32 unless float16 is asked for
    h32 = x["h"].astype(np.float32)
    run("matmul", d / "h.npy", d / "h.npy", "--transpose-b", "-o", d / "c.npy", "-q")
    close(np.load(d / "c.npy"), h32 @ h32.T, 48, 1e-6)
    run("matmul", d / "h.npy", d / "h.npy", "--transpose-b", "--dtype", "float16", "-o", d / "c.npy", "-q")
    close(np.load(d / "c.npy"), x["h"] @ x["h"].T, 48, 1e-3)
    # bool: as the float it meets; bool x bool numpy's bool, or counted into int32 when asked
    run("matmul", d / "flag.npy", d / "f10.npy", "-o", d / "c.npy", "-q")
    close(np.load(d / "c.npy"), x["flag"] @ x["f10"], 10, 1e-6)
    flag = x["flag"].astype(np.int64)
    run("matmul", d / "flag.npy", "--gram", "--dtype", "int32", "-o", d / "c.npy", "-q")
    c = np.load(d / "c.npy")
    assert c.dtype == np.int32 and np.array_equal(c, flag @ flag.T)
    sparse = np.random.default_rng(5).random((40, 30)) < 0.06
    np.save(d / "sparse.npy", sparse)
    for args, ref in ((["flag.npy", "flag.npy"], x["flag"] @ x["flag"]), (["sparse.npy", "--gram"], sparse @ sparse.T),
                      (["sparse.npy", "sparse.npy", "--transpose-a"], sparse.T @ sparse)):
        for budget in ([], ["--host-mem", "20K", "--tile", "8"]):
            run("matmul", *[d / a if a.endswith(".npy") else a for a in args], *budget, "-o", d / "c.npy", "-q")
            c = np.load(d / "c.npy")
            assert c.dtype == np.bool_ and np.array_equal(c, ref), (args, budget)
    assert 0 < (sparse @ sparse.T).mean() < 1


def test_small_budget_same_bytes(mats):
    """A host budget that forces many tiles and K panels: int8 gives the same bytes (exact), and
    the reference loops give the same bytes in float too."""
    d, x = mats
    run("matmul", d / "i8.npy", d / "j8.npy", "-o", d / "big.npy", "-q")
    proc = run("matmul", d / "i8.npy", d / "j8.npy", "-o", d / "small.npy", "--host-mem", "40K", "--json")
    assert json.loads(proc.stdout)["tiles"] > 1
    assert np.load(d / "big.npy").tobytes() == np.load(d / "small.npy").tobytes()
    env = {"OUTCORE_BLAS": "none"}
    run("matmul", d / "a.npy", d / "b.npy", "-o", d / "big.npy", "-q", env=env)
    proc = run("matmul", d / "a.npy", d / "b.npy", "-o", d / "small.npy", "--host-mem", "40K", "--json", env=env)
    assert json.loads(proc.stdout)["backend_desc"].startswith("cpu/reference")
    assert np.load(d / "big.npy").tobytes() == np.load(d / "small.npy").tobytes()
    close(np.load(d / "small.npy"), x["a"] @ x["b"], 70, 1e-15)


def test_plan_and_explain(mats):
    d, _ = mats
    proc = run("matmul", d / "a.npy", d / "b.npy", "--plan", "--host-mem", "18K", "--json")
    plan = json.loads(proc.stdout)
    assert plan["bound"] == "the host budget" and plan["k_panels"] > 1 and plan["need_bytes"] <= 18 * 1024
    # C accumulated in the output's mapping; A and B, not mapped under this budget, read in panels
    assert plan["in_place"] == (["C"] if plan["backend"] != "cpu/reference" else []), plan
    assert not (d / "c.npy").exists()
    proc = run("matmul", d / "a.npy", d / "b.npy", "--explain", env={"OUTCORE_BLAS": "none"})
    assert proc.stdout.startswith("backend: ") and "OUTCORE_BLAS" in proc.stdout
    # --json with --explain and no job: the same text as one JSON object.
    explained = json.loads(run("matmul", d / "a.npy", d / "b.npy", "--explain", "--json",
                               env={"OUTCORE_BLAS": "none"}).stdout)
    assert list(explained) == ["explain"] and explained["explain"].startswith("backend: "), explained
    # A rate cache that cannot be used is named, as gram's and map's explanations name it.
    (d / "cache_dir").mkdir()
    proc = run("matmul", d / "a.npy", d / "b.npy", "--explain", env={"OUTCORE_COST_CACHE": str(d / "cache_dir")})
    assert "cache_dir is a directory, not a regular file" in proc.stdout.splitlines()[0], proc.stdout
    # A budget given: the default follows the host's available memory, which moves between runs.
    proc = run("matmul", d / "a.npy", d / "b.npy", "--backend", "cpu", "--plan", "--host-mem", "64M")
    assert "tiles" in proc.stdout and "bounded by" in proc.stdout
    if not proc.stdout.startswith("cpu/reference"):  # float64 files mapped, C in the output: no copies
        assert "\n  in place A and B read where they lie; C accumulated where it goes\n" in proc.stdout, proc.stdout
        assert " 1 tile\n" in proc.stdout, proc.stdout
    # --plan --explain: the prediction, then the same plan (as gram's prints both); as JSON the plan.
    both = run("matmul", d / "a.npy", d / "b.npy", "--backend", "cpu", "--plan", "--explain", "--host-mem",
               "64M").stdout
    assert both.startswith("backend: ") and both.endswith(proc.stdout), both
    assert "backend: " not in proc.stdout
    as_json = json.loads(run("matmul", d / "a.npy", d / "b.npy", "--backend", "cpu", "--plan", "--explain",
                             "--json").stdout)
    assert as_json["backend"].startswith("cpu/"), as_json


def test_auto_measures_the_blas_once(mats, tmp_path):
    """auto's CPU GEMM rate: measured at the first product of a machine and stored in the rate
    cache under the BLAS's name and the type; read back by the next process, which measures
    nothing; the default with the cache off or without a BLAS."""
    d, _ = mats
    cache = tmp_path / "cache" / "rates.txt"
    args = ["matmul", d / "a.npy", d / "b.npy", "-o", d / "c.npy", "--backend", "auto", "--json"]
    env = {"OUTCORE_COST_CACHE": str(cache), "OUTCORE_TRACE": "1"}
    first = run(*args, env=env)
    desc, explain = json.loads(first.stdout)["backend_desc"], json.loads(first.stdout)["backend_explain"]
    if desc.startswith("cpu/reference"):  # no BLAS here: nothing to measure
        assert "outcore cost: cpu gemm" not in first.stderr and "default rate" in explain, explain
        return
    blas = desc.split()[0].split("/")[1]
    assert "outcore cost: cpu gemm" in first.stderr and "measured" in explain, (first.stderr, explain)
    assert f"\ncpu_gemm.{blas}.f64 " in cache.read_text(), cache.read_text()  # float64 operands
    second = run(*args, env=env)
    assert "outcore cost: cpu gemm" not in second.stderr, second.stderr
    assert "measured" in json.loads(second.stdout)["backend_explain"]
    off = run(*args, env={"OUTCORE_COST_CACHE": "off", "OUTCORE_TRACE": "1"})
    assert "outcore cost: cpu gemm" not in off.stderr and "default rate" in json.loads(off.stdout)["backend_explain"]
    none = run(*args, env=dict(env, OUTCORE_BLAS="none"))
    assert "reference loops" in json.loads(none.stdout)["backend_explain"]


def test_trace_sums_the_cpu_phases(mats):
    """OUTCORE_TRACE=1 prints where the CPU backend's seconds went (bench_matmul_ooc.py reads
    these lines): panels read under a budget that reads them, none read where all lie in place."""
    d, _ = mats
    def spans(*extra):
        proc = run("matmul", d / "a.npy", d / "b.npy", "-o", d / "c.npy", "--backend", "cpu", "-q", *extra,
                   env={"OUTCORE_TRACE": "1"})
        got = dict(re.findall(r"^outcore matmul cpu: (\S.*?\S) +([0-9.]+) s$", proc.stderr, re.M))
        assert sorted(got) == ["multiplied", "panels read", "tiles written"], proc.stderr
        return {k: float(v) for k, v in got.items()}
    assert spans("--host-mem", "18K")["panels read"] > 0
    whole = spans()
    if whole["multiplied"] > 0 and "reference" not in run("matmul", d / "a.npy", d / "b.npy", "--plan").stdout:
        assert whole["panels read"] < 0.01, whole  # float64 files mapped: the BLAS reads them in place


@pytest.mark.parametrize("limit_mib, stack_mib", [(120, None), (150, None), (650, 512), (680, 512)])
def test_a_limit_without_room_for_the_blas_threads_never_hangs(tmp_path, limit_mib, stack_mib):
    """OpenBLAS's threads started as it loads each map a stack and a buffer, and one that cannot
    have its buffer is waited for at exit for ever: under limits just short of that room, a
    plan (no BLAS call) and a product end, in one line naming the limit or with the result."""
    import resource
    hard_stack = resource.getrlimit(resource.RLIMIT_STACK)[1]
    if stack_mib and hard_stack != resource.RLIM_INFINITY and hard_stack < stack_mib << 20:
        pytest.skip(f"the hard stack limit is below {stack_mib} MiB")
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit_mib << 20, limit_mib << 20))
        if stack_mib:
            resource.setrlimit(resource.RLIMIT_STACK, (stack_mib << 20, resource.RLIM_INFINITY))
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                             "OMP_NUM_THREADS")}
    for extra in (["--plan"], ["-o", tmp_path / "c.npy", "-q"]):
        proc = subprocess.run([outcore_bin(), "matmul", tmp_path / "a.npy", tmp_path / "a.npy", "--backend", "cpu",
                               "--threads", "2", *extra], capture_output=True, text=True, timeout=60,
                              preexec_fn=limited, env=env)
        assert proc.returncode in (0, 1), (extra, proc.returncode, proc.stderr)
        if proc.returncode == 1:
            assert len(proc.stderr.splitlines()) == 1 and "address space limit" in proc.stderr, proc.stderr


def recording_blas(tmp_path, variable):
    """A stand-in library for OUTCORE_BLAS that records `variable` as it is loaded into the
    file RECORD_FILE names ("unset" when it is unset)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build the stand-in BLAS")
    src = tmp_path / "record.c"
    src.write_text("#include <stdio.h>\n#include <stdlib.h>\n"
                   "__attribute__((constructor)) static void record(void)\n{\n"
                   "    FILE *f = fopen(getenv(\"RECORD_FILE\"), \"w\");\n"
                   f"    const char *v = getenv(\"{variable}\");\n"
                   "    if (f) fputs(v ? v : \"unset\", f), fclose(f);\n}\n")
    lib = tmp_path / "librecord.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def test_cli_asks_openblas_threads_to_sleep(mats, tmp_path, monkeypatch):
    """The CLI sets OPENBLAS_THREAD_TIMEOUT=4 for the BLAS it loads, unless the user set it: a
    stand-in library given as OUTCORE_BLAS records the variable as it is loaded."""
    lib = recording_blas(tmp_path, "OPENBLAS_THREAD_TIMEOUT")
    d, _ = mats
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    record = tmp_path / "record.txt"
    for given, expect in ((None, "4"), ("20", "20")):
        env = {"OUTCORE_BLAS": str(lib), "RECORD_FILE": str(record)}
        if given:
            env["OPENBLAS_THREAD_TIMEOUT"] = given
        record.unlink(missing_ok=True)
        proc = run("matmul", d / "a.npy", d / "b.npy", "--backend", "cpu", "--plan", env=env, check=False)
        assert record.read_text() == expect, proc.stderr


def test_cli_tells_openblas_its_threads(mats, tmp_path, monkeypatch):
    """With --threads N the CLI sets OPENBLAS_NUM_THREADS=N for the BLAS it loads (which
    starts that many threads as it loads, not one a core), unless the user named a count in
    it, GOTO_NUM_THREADS or OMP_NUM_THREADS; without --threads it is left unset."""
    lib = recording_blas(tmp_path, "OPENBLAS_NUM_THREADS")
    d, _ = mats
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    record = tmp_path / "record.txt"
    for threads, given, expect in ((["--threads", "3"], {}, "3"), ([], {}, "unset"),
                                   (["--threads", "3"], {"OPENBLAS_NUM_THREADS": "5"}, "5"),
                                   (["--threads", "3"], {"OMP_NUM_THREADS": "2"}, "unset"),
                                   (["--threads", "3"], {"GOTO_NUM_THREADS": "2"}, "unset")):
        env = {"OUTCORE_BLAS": str(lib), "RECORD_FILE": str(record), **given}
        record.unlink(missing_ok=True)
        proc = run("matmul", d / "a.npy", d / "b.npy", "--backend", "cpu", *threads, "--plan", env=env,
                   check=False)
        assert record.read_text() == expect, (threads, given, proc.stderr)


# Per backend: one tile, and many (the CPU's host budget also cuts K panels).
VECTOR_BUDGETS = {"cpu": [[], ["--host-mem", "12K"]], "cuda": [[], ["--tile", "64"]]}


@pytest.mark.parametrize("backend,budget", [(b, x) for b, xs in VECTOR_BUDGETS.items() for x in xs],
                         ids=[f"{b}-{'tiles' if x else 'one'}" for b, xs in VECTOR_BUDGETS.items() for x in xs])
def test_vectors_on_files(tmp_path, backend, budget):
    """1-D files read as numpy's matmul reads them: a row as A, a column as B, each its own
    transpose (the flags leave it), and the result file without that dimension: M·v, w·M,
    v·v and --gram of a vector (0-dimensional), a Fortran-order M, int8 exact, an empty
    vector; in one tile and in many, on each backend (the CUDA cases where a GPU is usable)."""
    require_backend(backend, tmp_path)
    rng = np.random.default_rng(11)
    m = rng.standard_normal((300, 200))
    v, w = rng.standard_normal(200), rng.standard_normal(300)
    i8, x8 = rng.integers(-128, 128, (40, 900), dtype=np.int8), rng.integers(-128, 128, 900, dtype=np.int8)
    for name, x in {"m": m, "v": v, "w": w, "mf": np.asfortranarray(m), "i8": i8, "x8": x8,
                    "e": np.ones((3, 0)), "e0": np.ones(0)}.items():
        np.save(tmp_path / f"{name}.npy", x)
    budget = budget + ["--backend", backend]
    cases = [(("m", "v"), m @ v), (("w", "m"), w @ m), (("mf", "v"), m @ v), (("v", "v"), v @ v),
             (("v", "--gram"), v @ v), (("m", "v", "--transpose-b"), m @ v), (("v", "m", "--transpose-a",
             "--transpose-b"), v @ m.T), (("w", "m", "--transpose-a"), w @ m), (("e", "e0"), np.zeros(3))]
    for args, ref in cases:
        out = tmp_path / "c.npy"
        run("matmul", *[tmp_path / f"{a}.npy" if not a.startswith("--") else a for a in args], *budget, "-o", out)
        got = np.load(out)
        assert got.shape == ref.shape, (args, got.shape)
        close(got, np.asarray(ref), 300, 1e-15)
    out = tmp_path / "c.npy"
    run("matmul", tmp_path / "i8.npy", tmp_path / "x8.npy", *budget, "-o", out)
    got = np.load(out)
    assert got.dtype == np.int32 and np.array_equal(got, i8.astype(np.int64) @ x8.astype(np.int64))
    run("matmul", tmp_path / "x8.npy", "--gram", *budget, "-o", out)
    assert np.load(out).shape == () and np.load(out) == x8.astype(np.int64) @ x8.astype(np.int64)


def expect_error(d, *args, message):
    out = d / "bad.npy"
    proc = run("matmul", *args, "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert not out.exists()
    assert [p.name for p in d.iterdir() if "bad" in p.name] == []  # no temporary file either
    return lines[0]


def test_a_header_of_any_length(tmp_path):
    """numpy writes .npy headers of any length in format 2.0 (and reads past its default limit
    when told to): a 2 MB header is read whole, and one cut short names what it declares."""
    a = np.arange(16, dtype=np.float64).reshape(4, 4)
    text = "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 4), }"
    length = 2_000_000
    header = b"\x93NUMPY\x02\x00" + length.to_bytes(4, "little") + (text.ljust(length - 1) + "\n").encode()
    (tmp_path / "long.npy").write_bytes(header + a.tobytes())
    assert np.array_equal(np.load(tmp_path / "long.npy", max_header_size=10**8), a)
    run("matmul", tmp_path / "long.npy", tmp_path / "long.npy", "-o", tmp_path / "c.npy", "-q")
    assert np.array_equal(np.load(tmp_path / "c.npy"), a @ a)
    (tmp_path / "cut.npy").write_bytes(header[:1000])
    line = expect_error(tmp_path, tmp_path / "cut.npy", tmp_path / "long.npy", message="truncated .npy header")
    assert "cut.npy" in line and "declares 2000000 header bytes but only 988 follow" in line


def test_bad_inputs(mats):
    d, _ = mats
    line = expect_error(d, d / "a.npy", d / "bt.npy", message="inner dimensions differ")
    assert "bt.npy" in line
    line = expect_error(d, d / "i64.npy", d / "i64.npy", message="int64 x int64")
    assert "i64.npy" in line and "float64" in line
    line = expect_error(d, d / "flag.npy", d / "f10.npy", "--dtype", "bool", message="dtype bool is the product of "
                        "bool inputs alone, not of bool x float32")
    assert "flag.npy" in line, line
    expect_error(d, d / "cube.npy", d / "a.npy", message="3-dimensional")
    np.save(d / "vec.npy", np.ones(71))
    expect_error(d, d / "a.npy", d / "vec.npy", message="inner dimensions differ: op(A) of ")
    np.save(d / "scalar.npy", np.float64(2))
    expect_error(d, d / "scalar.npy", d / "a.npy", message="a 0-dimensional array; a product takes matrices (2-D) "
                 "and vectors (1-D)")
    expect_error(d, d / "missing.npy", d / "b.npy", message="missing.npy")
    expect_error(d, d / "a.npy", d / "b.npy", "--dtype", "int8", message="--dtype int8")
    expect_error(d, d / "a.npy", d / "b.npy", "--dtype", "int32", message="int8 or bool inputs alone")
    expect_error(d, d / "a.npy", d / "b.npy", "--tile", "0", message="--tile 0")
    expect_error(d, d / "a.npy", d / "b.npy", "--gram", message="--gram")
    expect_error(d, d / "a.npy", message="give B too")
    (d / "text.npy").write_text("not a npy file")
    expect_error(d, d / "text.npy", d / "b.npy", message="text.npy")
    expect_error(d, d / "a.npy", "--gram", "--transpose-b", message="no B to transpose")
    expect_error(d, d / "a.npy", d / "b.npy", "--devices", "", message="--devices: an empty list")
    expect_error(d, d / "a.npy", d / "b.npy", "--backend", "cpu", "--host-mem", "1K", message="raise --host-mem")
    line = expect_error(d, d / "a.npy", d / "b.npy", "--backend", "cpu", "--host-mem", "1K", "--tile", "64",
                        message="give a smaller --tile")
    assert "a tile of " in line and "with K panels of" in line, line
    np.save(d / "rec.npy", np.zeros((3, 3), dtype=[("x", "f8")]))
    line = expect_error(d, d / "rec.npy", d / "b.npy", message="dtype 'structured' is not one matmul reads")
    # A header whose shape's byte count overflows: refused as truncated, the count not wrapped.
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952, 1), }"
    header += b" " * (127 - 10 - len(header)) + b"\n"
    (d / "huge.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    line = expect_error(d, d / "huge.npy", d / "b.npy", message="truncated .npy")
    assert "needs more than 9223372036854775807 data bytes" in line, line


@pytest.mark.parametrize("a_shape, b_shape, flags, hint, fix", [
    ((3, 4), (3, 5), [], "(4 != 3; they multiply with --transpose-a)", ["--transpose-a"]),
    ((3, 4), (3, 5), ["--transpose-a", "--transpose-b"], "(3 != 5; they multiply without --transpose-b)",
     ["--transpose-a"]),
    ((3, 4), (5, 3), [], "(4 != 5; they multiply with --transpose-a and with --transpose-b)",
     ["--transpose-a", "--transpose-b"]),
    ((3, 4), (3, 4), [], "(4 != 3; they multiply with --transpose-a, or with --transpose-b)", ["--transpose-b"]),
    ((3, 4), (5, 6), [], "(4 != 5)", None),
    ((3, 4), (5,), [], "(4 != 5)", None),  # a vector's transpose is itself
])
def test_inner_dimensions_name_the_transposes_that_fit(tmp_path, a_shape, b_shape, flags, hint, fix):
    """Shapes that do not multiply name the change of transposes that makes them multiply,
    where one does, and that change runs."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    line = expect_error(tmp_path, tmp_path / "a.npy", tmp_path / "b.npy", *flags, message=hint)
    assert "they multiply" not in line or fix is not None, line
    if fix is not None:
        run("matmul", tmp_path / "a.npy", tmp_path / "b.npy", *fix, "-o", tmp_path / "c.npy")
        ref = (a.T if "--transpose-a" in fix else a) @ (b.T if "--transpose-b" in fix else b)
        close(np.load(tmp_path / "c.npy"), ref, 10, 1e-15)
    # A Fortran-order file is read as its transpose inside; the advice is of the flags given.
    np.save(tmp_path / "a.npy", np.asfortranarray(a))
    np.save(tmp_path / "b.npy", np.asfortranarray(b))
    expect_error(tmp_path, tmp_path / "a.npy", tmp_path / "b.npy", *flags, message=hint)


def test_plan_floors(tmp_path):
    """The CPU planner's K panel stops at 64 and its tile at 16 x 16 (docs/matmul.md): the
    smallest plan is what a budget just large enough gets, one byte less is refused naming it;
    a tile given is kept, only its K panel halves."""
    np.save(tmp_path / "long.npy", np.random.default_rng(0).standard_normal((100, 5000)))
    floor = (16 + 16) * 64 * 8 + 16 * 16 * 8  # float64 A·Aᵀ: two panels and the tile
    plan = json.loads(run("matmul", tmp_path / "long.npy", "--gram", "--plan", "--json", "--backend", "cpu",
                          "--host-mem", str(floor)).stdout)
    assert (plan["tile_rows"], plan["tile_cols"], plan["k_panel"]) == (16, 16, 64), plan
    proc = run("matmul", tmp_path / "long.npy", "--gram", "--plan", "--backend", "cpu", "--host-mem",
               str(floor - 1), check=False)
    assert proc.returncode == 2 and f"a tile of 16 x 16 with K panels of 64 needs {floor} bytes" in proc.stderr
    assert f"the least budget that runs it is {floor} bytes" in proc.stderr, proc.stderr
    for budget in (40960, 100000, 1000000):  # 40960: a 32 x 32 tile with K panels of 64
        plan = json.loads(run("matmul", tmp_path / "long.npy", "--gram", "--plan", "--json", "--backend", "cpu",
                              "--host-mem", str(budget)).stdout)
        assert plan["k_panel"] >= 64 and plan["need_bytes"] <= budget, plan
        given = json.loads(run("matmul", tmp_path / "long.npy", "--gram", "--plan", "--json", "--backend", "cpu",
                               "--host-mem", str(budget), "--tile", "32").stdout)
        assert (given["tile_rows"], given["tile_cols"]) == (32, 32) and given["k_panel"] >= 64, given


def test_output_is_an_input(mats):
    d, x = mats
    before = (d / "b.npy").read_bytes()
    proc = run("matmul", d / "a.npy", d / "b.npy", "-o", d / "b.npy", check=False)
    assert proc.returncode == 2 and "the output is the input file" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert (d / "b.npy").read_bytes() == before
    proc = run("matmul", d / "a.npy", d / "b.npy", "-o", d / "c.txt", check=False)
    assert proc.returncode == 2 and "writes .npy" in proc.stderr
    assert not (d / "c.txt").exists()


def test_help_and_usage():
    proc = run("matmul", "--help")
    assert "--transpose-a" in proc.stdout and "--gram" in proc.stdout
    proc = run("matmul", "--bogus", check=False)
    assert proc.returncode == 2
    assert "matmul" in run("--help").stdout


def test_peak_memory_stays_within_budget(tmp_path):
    """An input four times the budget is read in panels: the process's peak stays within the
    budget plus the fixed cost docs/memory.md states (16 MiB, 4 MiB a thread)."""
    mib = 1 << 20
    w = np.random.default_rng(5).standard_normal((100, 40000))  # 32 MiB
    np.save(tmp_path / "w.npy", w)
    # The CPU backend's budget: on a GPU host `auto` would also map the GPU libraries, whose
    # pages are the loader's, not the job's.
    proc = run("matmul", tmp_path / "w.npy", "--gram", "-o", tmp_path / "g.npy", "--host-mem", "8M", "--threads", "2",
               "--backend", "cpu", "--json")
    s = json.loads(proc.stdout)
    assert s["host_budget_bytes"] == 8 * mib
    assert s["host_peak_bytes"] <= 8 * mib + 16 * mib + 2 * 4 * mib, s["host_peak_bytes"] / mib
    close(np.load(tmp_path / "g.npy"), w @ w.T, 40000, 1e-15)


def test_a_device_list_asks_for_the_gpu(mats):
    """--devices asks for the GPU as --backend cuda does: where one is usable the product runs
    there, else it is refused in one line (exit 1) and not run on the CPU."""
    d, x = mats
    probe = run("matmul", d / "a.npy", d / "b.npy", "--backend", "cuda", "-o", d / "probe.npy", "-q", check=False)
    proc = run("matmul", d / "a.npy", d / "b.npy", "--devices", "0", "--json", "-o", d / "c.npy", check=False)
    if probe.returncode == 0:
        assert proc.returncode == 0 and json.loads(proc.stdout)["backend"] == "cuda", proc.stdout + proc.stderr
        return
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("outcore: --devices: "), proc.stderr
    assert not (d / "c.npy").exists()


def test_a_larger_budget_runs_what_a_smaller_one_runs(tmp_path):
    """Half a budget may map the inputs, leaving the tiles the rest; a budget whose half would
    leave less than the smallest plan maps nothing. So past the least budget that runs the
    product every budget runs it (a budget that mapped A used to leave too little: 19000 bytes
    were refused, naming 13312 as the least, which ran), the refusal below it names that
    least budget, and every K panel is at least 64 deep but the last."""
    rng = np.random.default_rng(1)
    np.save(tmp_path / "a.npy", rng.standard_normal((128, 257)).astype(np.float16))
    np.save(tmp_path / "b.npy", rng.standard_normal((257, 16)).astype(np.float16))
    for extra in ([], ["--tile", "15"]):
        args = ["matmul", tmp_path / "a.npy", tmp_path / "b.npy", "-o", tmp_path / "c.npy", "--backend", "cpu", *extra]
        proc = run(*args, "-q", "--host-mem", "4000", check=False)
        assert proc.returncode == 2, proc.stderr
        least = int(re.search(r"the least budget that runs it is (\d+) bytes", proc.stderr).group(1))
        assert run(*args, "-q", "--host-mem", str(least - 1), check=False).returncode == 2
        want = np.load(tmp_path / "a.npy").astype(np.float32) @ np.load(tmp_path / "b.npy").astype(np.float32)
        for budget in range(least, least + 48000, 1500):
            proc = run(*args, "-q", "--host-mem", str(budget), check=False)
            assert proc.returncode == 0, (budget, least, proc.stderr)
            plan = json.loads(run(*args, "--host-mem", str(budget), "--plan", "--json").stdout)
            assert plan["k_panel"] >= 64 or plan["k_panel"] == 257, (budget, plan)
        np.testing.assert_allclose(np.load(tmp_path / "c.npy"), want, rtol=2e-3, atol=2e-3)


def test_large_result_reserved_beside_the_job(tmp_path):
    """A result of more than one reservation chunk (16 MiB) is reserved as the job runs:
    OUTCORE_TRACE=1 says so once at commit, naming the file, with the reservation's seconds and
    the writers' waits for it; the bytes are numpy's. A smaller result is reserved before the
    job and says nothing of it."""
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, size=(2100, 1)).astype(np.float32)
    b = rng.integers(-3, 4, size=(1, 2100)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    pattern = (r"^outcore output: (.+) reserved in ([0-9.]+) s beside the job; "
               r"its writers' waits for it add to ([0-9.]+) s$")
    for backend in ("cpu", "auto"):
        out = tmp_path / f"c_{backend}.npy"
        proc = run("matmul", tmp_path / "a.npy", tmp_path / "b.npy", "-o", out, "--backend", backend, "-q",
                   env={"OUTCORE_TRACE": "1"})
        lines = re.findall(pattern, proc.stderr, re.M)
        assert len(lines) == 1 and lines[0][0] == str(out), proc.stderr
        assert float(lines[0][1]) >= 0 and float(lines[0][2]) >= 0
        assert np.array_equal(np.load(out), a @ b)
    np.save(tmp_path / "a_small.npy", a[:1000])  # a 4 MB result
    small = tmp_path / "small.npy"
    proc = run("matmul", tmp_path / "a_small.npy", "--gram", "-o", small, "--backend", "cpu", "-q",
               env={"OUTCORE_TRACE": "1"})
    assert "outcore output:" not in proc.stderr and "output committed" in proc.stderr, proc.stderr
    assert np.array_equal(np.load(small), a[:1000] @ a[:1000].T)


def test_ctrl_c_stops_a_product_of_one_tile(tmp_path):
    """A product that fits is one tile computed in place; SIGINT stops it between the BLAS's
    bands of rows (exit 130, fewer multiply-adds done than the product's, no output), not
    after the whole product."""
    import signal
    import time
    rng = np.random.default_rng(2)
    np.save(tmp_path / "a.npy", rng.standard_normal((8192, 4096)).astype(np.float32))  # four bands of rows
    np.save(tmp_path / "b.npy", rng.standard_normal((4096, 4096)).astype(np.float32))
    args = ["matmul", tmp_path / "a.npy", tmp_path / "b.npy", "--backend", "cpu", "-q"]
    plan = json.loads(run(*args, "--plan", "--json").stdout)
    assert plan["tiles"] == 1 and plan["k_panels"] == 1, plan
    out = tmp_path / "c.npy"
    start = time.monotonic()
    run(*args, "-o", out)
    whole = time.monotonic() - start
    out.unlink()
    for share in (0.4, 0.2, 0.1):
        job = subprocess.Popen([outcore_bin(), *map(str, args), "-o", str(out)],
                               stderr=subprocess.PIPE, text=True)
        time.sleep(whole * share)
        job.send_signal(signal.SIGINT)
        err = job.communicate(timeout=120)[1]
        if job.returncode == 0:  # it ended before the signal: try earlier
            out.unlink()
            continue
        assert job.returncode == 130, (job.returncode, err)
        done, total = map(float, re.search(r"cancelled after (\d+) of (\d+) multiply-adds", err).groups())
        assert 0 < done < total, err
        assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith("c.npy")] == []
        return
    pytest.skip(f"the product ({whole:.2f} s) ended before each signal")


@pytest.mark.parametrize("args", [["a.npy", "--gram"], ["at.npy", "at.npy", "--transpose-a"]], ids=["aat", "ata"])
def test_a_large_symmetric_tile_in_bands(tmp_path, args):
    """A·Aᵀ of one tile large enough for the BLAS calls to go in bands of rows (each band's
    diagonal block by syrk, the rest of its rows by gemm; for AᵀA from A's columns): the upper
    triangle as numpy's, mirrored exactly."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4096, 4096))  # two bands of rows
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "at.npy", np.ascontiguousarray(a.T))
    cmd = ["matmul", *[tmp_path / x if x.endswith(".npy") else x for x in args], "--backend", "cpu", "-q"]
    plan = json.loads(run(*cmd, "--plan", "--json").stdout)
    assert plan["tiles"] == 1, plan
    run(*cmd, "-o", tmp_path / "c.npy")
    got = np.load(tmp_path / "c.npy")
    assert np.array_equal(got, got.T)
    close(got, a @ a.T, 4096, 1e-16)


@pytest.mark.parametrize("limit_mib, stack_mib, threads", [
    (200, None, "2"), (400, None, "2"), (600, None, "2"),
    # Threads' stacks of 512 MiB: OpenBLAS could start no thread, as it loads or for a call.
    (600, 512, "2"), (900, 512, "2"), (600, 512, None), (900, 512, "1")])
def test_an_address_space_limit_is_named_not_waited_on(tmp_path, limit_mib, stack_mib, threads):
    """Under ulimit -v a product either runs or stops in one line naming the limit (its
    mappings, the BLAS's buffers, which OpenBLAS would retry for ever, or the threads it
    starts, one it could not start being handed work all the same), never hangs, and leaves
    nothing beside its output's name. On one thread it runs."""
    import resource
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((3000, 2000)), rng.standard_normal((2000, 3000))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    limit = limit_mib << 20
    hard_stack = resource.getrlimit(resource.RLIMIT_STACK)[1]
    if stack_mib and hard_stack != resource.RLIM_INFINITY and hard_stack < stack_mib << 20:
        pytest.skip(f"the hard stack limit is below {stack_mib} MiB")

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if stack_mib:
            resource.setrlimit(resource.RLIMIT_STACK, (stack_mib << 20, resource.RLIM_INFINITY))
    out = tmp_path / "c.npy"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                             "OMP_NUM_THREADS")}
    proc = subprocess.run([outcore_bin(), "matmul", tmp_path / "a.npy", tmp_path / "b.npy", "--backend", "cpu",
                           *(["--threads", threads] if threads else []), "-o", out, "-q"], capture_output=True,
                          text=True, timeout=120, preexec_fn=limited, env=env)
    assert proc.returncode == 0 or threads != "1", proc.stderr
    if proc.returncode == 0:
        close(np.load(out), a @ b, 2000, 1e-16)
    else:
        assert proc.returncode == 1, (proc.returncode, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "address space limit (ulimit -v" in proc.stderr, \
            proc.stderr
        assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy"] + (["c.npy"] if out.exists() else [])


def test_a_thread_limit_is_one_line_not_a_hang(thread_limited):
    """Under ulimit -u a threaded BLAS that cannot start its threads raised SIGINT (read as
    Ctrl-C: "cancelled", exit 130) or waited for them for ever: the threads are tried first,
    one line, exit 1, nothing written; --threads 1 runs."""
    folder, no_threads = thread_limited
    rng = np.random.default_rng(11)
    np.save(folder / "x.npy", rng.random((200, 150)))
    np.save(folder / "y.npy", rng.random((150, 180)))
    args = [outcore_bin(), "matmul", "x.npy", "y.npy", "-o", "m.npy", "--host-mem", "200K", "--backend", "cpu"]
    proc = subprocess.run(args + ["--threads", "2"], cwd=folder, capture_output=True, text=True, timeout=60,
                          preexec_fn=no_threads, env=dict(os.environ, OUTCORE_COST_CACHE="off"))
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "ulimit -u" in proc.stderr and not (folder / "m.npy").exists(), proc.stderr
    proc = subprocess.run(args + ["--threads", "1"], cwd=folder, capture_output=True, text=True, timeout=60,
                          preexec_fn=no_threads, env=dict(os.environ, OUTCORE_COST_CACHE="off"))
    assert proc.returncode == 0, proc.stderr
    assert np.allclose(np.load(folder / "m.npy"), np.load(folder / "x.npy") @ np.load(folder / "y.npy"))


def test_cuda_memory_held_elsewhere_says_lower_the_budget(tmp_path):
    """Another process holds most of the device: a product under a --gpu-mem larger than
    what is free (planned as given) fails when the device refuses a buffer below the budget,
    in one line saying the device has less memory free than the budget and to lower
    --gpu-mem, not to raise it; nothing is written."""
    require_backend("cuda", tmp_path)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no usable GPU")
    np.save(tmp_path / "a.npy", np.ones((16384, 16384), np.float32))  # 1 GiB each of A, B and C
    free, _ = torch.cuda.mem_get_info()
    held = torch.empty(max(free - (3 << 30), 0), dtype=torch.uint8, device="cuda")  # 3 GiB left free
    try:
        proc = run("matmul", tmp_path / "a.npy", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--backend", "cuda",
                   "--gpu-mem", "16G", "--host-mem", "8G", "-q", check=False)
    finally:
        del held
        torch.cuda.empty_cache()
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "less memory free than the budget" in proc.stderr and "lower --gpu-mem" in proc.stderr, proc.stderr
    assert "raise --gpu-mem" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]


def test_cuda_gpu_mem_percentage_sets_the_device_budget(tmp_path):
    """--gpu-mem N% is that share of the device's free memory: the CUDA product took 90%
    whatever the percentage asked. The plan's budget at 20% is twice that at 10% (the free
    memory moves a little between two runs), and under the default's."""
    require_backend("cuda", tmp_path)
    np.save(tmp_path / "a.npy", np.ones((512, 512), np.float32))
    budget = {}
    for share in ("10%", "20%", None):
        proc = run("matmul", tmp_path / "a.npy", tmp_path / "a.npy", "--plan", "--json", "--backend", "cuda",
                   *(("--gpu-mem", share) if share else ()))
        assert proc.returncode == 0, proc.stderr
        budget[share] = json.loads(proc.stdout)["device_budget"]
    assert 1.8 < budget["20%"] / budget["10%"] < 2.2, budget
    assert budget[None] > 3 * budget["20%"], budget


def source_line(path, text):
    """The line number of the one line of path (under the source tree) that holds text."""
    lines = [n for n, line in enumerate((SOURCE_DIR / path).read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (path, text, lines)
    return lines[0]


@pytest.mark.parametrize(
    "shapes,budget,call",
    [
        (((4, 4), (5, 4)), "64M", "OC_CHECK_GOTO(ctx, st, setup(ctx, a, b, opts, &s), cleanup)"),  # inner dimensions differ
        (((4, 4), (4, 4)), "1", "be->run(&s.job)"),  # no room for a tile
    ],
)
def test_a_failure_trace_names_the_failing_call(tmp_path, shapes, budget, call):
    """-v's trace of a failed product ends at the call in oc_matmul that failed, not at the
    function's exit."""
    paths = []
    for name, shape in zip("MN", shapes):
        np.save(tmp_path / f"{name}.npy", np.ones(shape, np.float32))
        paths.append(tmp_path / f"{name}.npy")
    proc = run("matmul", *paths, "-o", tmp_path / "P.npy", "--host-mem", budget, "-v", check=False)
    assert proc.returncode == 2, proc.stderr
    frames = re.findall(r"^\s+at matmul\.c:(\d+)$", proc.stderr, re.M)
    assert frames and int(frames[-1]) == source_line("src/matmul/matmul.c", call), proc.stderr
