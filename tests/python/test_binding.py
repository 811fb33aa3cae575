"""The Python binding against numpy and scipy references, on arrays (inputs given as files and
packed bits: test_input_files.py).

Run by ctest with PYTHONPATH=<repo>/python and OUTCORE_LIBRARY=<build>/liboutcore.so, or by
hand: OUTCORE_LIBRARY=build/liboutcore.so PYTHONPATH=python python3 -m pytest tests/python
"""
import ctypes
import json
import os
import re
import subprocess
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import outcore
from outcore._gram import parse_gpu_mem, parse_host_mem

from gram_refs import exact, random01, rng  # noqa: F401 (rng: a fixture)

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
METRICS = ["counts", "jaccard", "cosine", "hamming"]


def no_temporaries(directory):
    return [p.name for p in Path(directory).iterdir() if ".tmp-" in p.name] == []


# ---------------------------------------------------------------- results
def test_version():
    assert outcore.__version__.count(".") == 2
    assert all(part.isdigit() for part in outcore.__version__.split("."))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("in_dtype", [np.bool_, np.uint8, np.int8])
def test_symmetric_matches_numpy(rng, metric, in_dtype):
    a = random01(rng, 97, 517, dtype=in_dtype)
    threads = 2 if in_dtype is np.int8 else 1  # both the one-thread and the parallel path
    got = outcore.gram(a, metric=metric, backend="cpu", threads=threads)
    want = exact(a, metric=metric)
    assert got.dtype == want.dtype and got.shape == (97, 97)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("metric", METRICS)
def test_ab_matches_numpy(rng, metric):
    a = random01(rng, 70, 1000, 0.2, np.bool_)
    b = random01(rng, 45, 1000, 0.4, np.int8)
    got = outcore.gram(a, b, metric=metric)
    assert got.shape == (70, 45)
    assert np.array_equal(got, exact(a, b, metric))


@pytest.mark.parametrize("metric", ["jaccard", "cosine", "hamming"])
def test_similarities_match_scipy(rng, metric):
    from scipy.spatial.distance import cdist
    m = 300
    a = random01(rng, 40, m, 0.15, np.bool_)
    b = random01(rng, 31, m, 0.25, np.bool_)
    b[5] = 0  # empty against empty: jaccard 1, cosine 0
    got = outcore.gram(a, b, metric=metric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's cosine of an empty row is 0/0
        d = cdist(a, b, metric)
    if metric == "hamming":
        # scipy's hamming is the fraction of differing columns.
        assert np.array_equal(got, np.rint(d * m).astype(np.int32))
        return
    sim = 1.0 - d
    if metric == "cosine":
        sim = np.nan_to_num(sim, nan=0.0)  # scipy leaves empty rows undefined; outcore defines 0
    # scipy's 1 - d passes through one more rounding than outcore's single-rounded ratio.
    np.testing.assert_allclose(got, sim, rtol=1e-6, atol=1e-7)
    assert np.array_equal(got, exact(a, b, metric))


def test_stats_phases(rng, tmp_path):
    """stats= gets the job's phases: each present and not negative, their sum within the
    job's seconds, and those within the wall time measured around the call; docs/python.md
    names every key."""
    import time
    a = random01(rng, 900, 600)
    stats = {}
    t0 = time.monotonic()
    outcore.gram(a, metric="jaccard", backend="cpu", out=tmp_path / "c.npy", stats=stats)
    wall = time.monotonic() - t0
    phases = stats["phases"]
    assert sorted(phases) == sorted(["cuda_start", "prepare", "setup", "compute", "output", "teardown"])
    assert all(v >= 0 for v in phases.values()), phases
    assert sum(phases.values()) <= stats["seconds"] + 1e-6 and stats["seconds"] <= wall
    assert phases["compute"] > 0 and phases["output"] > 0 and phases["cuda_start"] == 0
    assert stats["backend"] == "cpu" and stats["threads"] >= 1
    assert stats["predicted_seconds"] > 0  # the cost model's, for the backend that ran
    with pytest.raises(outcore.InputError, match="stats must be a dict"):
        outcore.gram(a, stats=[])
    # docs/python.md's list of the keys names each one the dict holds
    docs = (SOURCE_DIR / "docs" / "python.md").read_text()
    listed = docs[docs.index("- **Statistics.**"):].split("\n- ", 1)[0]
    for key in list(stats) + list(phases):
        assert f"`{key}`" in listed, key


@pytest.mark.parametrize("dtype", ["uint16", np.uint16, "u16"])
def test_uint16_counts(rng, dtype):
    a = random01(rng, 50, 700)
    got = outcore.gram(a, dtype=dtype)
    assert got.dtype == np.uint16
    assert np.array_equal(got, exact(a).astype(np.uint16))


def test_dtype_that_cannot_hold_the_metric(rng):
    with pytest.raises(outcore.InputError, match="jaccard"):
        outcore.gram(random01(rng, 5, 9), metric="jaccard", dtype="int32")


def test_sparse_input(rng):
    sparse = pytest.importorskip("scipy.sparse")
    a = random01(rng, 60, 400, 0.05)
    s = sparse.csr_matrix(a)
    s.data[:3] = 0  # stored zeros are not ones
    a_effective = s.toarray()
    assert np.array_equal(outcore.gram(s, metric="jaccard"), exact(a_effective, metric="jaccard"))
    with pytest.raises(outcore.InputError, match="value 3 at row 0, column 19 is not 0 or 1"):
        outcore.gram(sparse.csr_matrix(a * 3))
    assert np.array_equal(outcore.gram(sparse.csr_matrix(a * 3), binarize=True), exact(a))


# ---------------------------------------------------------------- outputs
def test_memmap_output_written_in_place(tmp_path, rng):
    a = random01(rng, 64, 333)
    mm = np.lib.format.open_memmap(tmp_path / "c.npy", mode="w+", dtype=np.float32, shape=(64, 64))
    assert outcore.gram(a, metric="cosine", out=mm) is mm
    mm.flush()
    del mm
    assert np.array_equal(np.load(tmp_path / "c.npy"), exact(a, metric="cosine"))


def test_output_into_rows_of_a_wider_array(rng):
    a, b = random01(rng, 30, 200), random01(rng, 20, 200)
    big = np.full((30, 27), -7, np.int32)
    view = big[:, 3:23]  # rows 27 elements apart: passed as ld, no copy
    assert outcore.gram(a, b, out=view) is view
    assert np.array_equal(view, exact(a, b))
    assert (big[:, :3] == -7).all() and (big[:, 23:] == -7).all()


def test_output_dtype_follows_the_out_array(rng):
    a = random01(rng, 12, 100)
    out = np.zeros((12, 12), np.uint16)
    outcore.gram(a, out=out)
    assert np.array_equal(out, exact(a))


@pytest.mark.parametrize("make_out, match", [
    (lambda: np.zeros((10, 11), np.int32), "shape"),
    (lambda: np.zeros((10, 10), np.float32), "dtype"),
    (lambda: np.zeros((10, 20), np.int32)[:, ::2], "contiguous rows"),
    (lambda: np.zeros((10, 10), np.int32).T[::-1], "contiguous rows"),
])
def test_bad_out_arrays(rng, make_out, match):
    with pytest.raises(outcore.InputError, match=match):
        outcore.gram(random01(rng, 10, 50), out=make_out(), dtype="int32")


def test_file_output(tmp_path, rng):
    a = random01(rng, 80, 250)
    path = tmp_path / "c.npy"
    got = outcore.gram(a, metric="hamming", out=path)
    assert isinstance(got, np.memmap) and not got.flags.writeable
    assert np.array_equal(got, exact(a, metric="hamming"))
    assert np.array_equal(np.load(path), exact(a, metric="hamming"))
    assert no_temporaries(tmp_path)


def test_file_output_with_a_wrong_extension_leaves_nothing(tmp_path, rng):
    with pytest.raises(outcore.InputError, match="npy"):
        outcore.gram(random01(rng, 8, 20), out=str(tmp_path / "c.txt"))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- bad input
def test_numbers_other_than_0_1_name_the_fix(rng):
    """Any numeric dtype holding 0 and 1 is read (a list of integer lists too); other values
    are refused naming the value, the dtype and binarize=True, as the CLI refuses them."""
    with pytest.raises(outcore.InputError, match=r"float64.*binarize=True"):
        outcore.gram(rng.random((5, 5)))
    assert np.array_equal(outcore.gram([[0, 1], [1, 0]]), [[1, 0], [0, 1]])
    with pytest.raises(outcore.InputError, match=r"dtype complex128.*binarize=True"):
        outcore.gram(np.ones((2, 2), complex))


@pytest.mark.parametrize("which", ["A", "B"])
def test_values_other_than_0_1_name_row_and_column(rng, which):
    a, b = random01(rng, 12, 40), random01(rng, 9, 40)
    bad = a if which == "A" else b
    bad[5, 17] = 2
    with pytest.raises(outcore.InputError, match=r"row 5\b.*column 17\b") as info:
        outcore.gram(a, b)
    assert info.value.status == 2 and info.value.status_name == "bad input"
    assert info.value.message.startswith(which + ": ") and str(info.value) == info.value.message


def test_negative_int8_is_refused(rng):
    a = random01(rng, 6, 10, dtype=np.int8)
    a[1, 4] = -1
    with pytest.raises(outcore.InputError, match=r"row 1\b.*column 4\b"):
        outcore.gram(a)


def test_mismatched_columns(rng):
    with pytest.raises(outcore.InputError, match="columns"):
        outcore.gram(random01(rng, 5, 30), random01(rng, 5, 31))


@pytest.mark.parametrize("shape", [(10,), (2, 3, 4)])
def test_arrays_that_are_not_2d(shape):
    with pytest.raises(outcore.InputError, match="2-D"):
        outcore.gram(np.zeros(shape, np.uint8))


@pytest.mark.parametrize("view", [
    lambda a: np.asfortranarray(a),  # column-major
    lambda a: a[:, ::2],             # every other column
    lambda a: a[::-1],               # rows backwards
    lambda a: a[::3, 1:],            # strided rows, offset columns: read in place
])
def test_non_contiguous_inputs_are_handled(rng, view):
    v = view(random01(rng, 41, 120))
    assert np.array_equal(outcore.gram(v, metric="jaccard"), exact(np.ascontiguousarray(v), metric="jaccard"))


def test_missing_file_is_named(tmp_path):
    path = tmp_path / "nothere.npy"
    with pytest.raises(outcore.InputError, match="nothere.npy"):
        outcore.gram(path)


@pytest.mark.parametrize("kwargs, match", [
    ({"metric": "dice"}, "metric"),
    ({"backend": "tpu"}, "backend"),
    ({"dtype": "float64"}, "dtype"),
    ({"gpu_mem": "lots"}, "gpu_mem"),
    ({"gpu_mem": "150%"}, "percentage"),
    ({"gpu_mem": -5}, "positive"),
    ({"threads": 0}, "threads"),
    ({"topk": 0}, "topk"),
    ({"topk": 3, "threshold": 0.5}, "exclusive"),
    ({"threshold": "high"}, "threshold"),
    ({"out": 42}, "out"),
])
def test_bad_options(rng, kwargs, match):
    with pytest.raises(outcore.InputError, match=match):
        outcore.gram(random01(rng, 6, 20), **kwargs)


def test_gpu_mem_forms(rng):
    assert parse_gpu_mem(512) == (512, 0.0)
    assert parse_gpu_mem("2G") == (2 << 30, 0.0)
    assert parse_gpu_mem("1.5GiB") == (3 << 29, 0.0)
    assert parse_gpu_mem("512m") == (512 << 20, 0.0)
    assert parse_gpu_mem("50%") == (0, 0.5)
    a = random01(rng, 20, 64)
    assert np.array_equal(outcore.gram(a, gpu_mem="50%"), exact(a))


@pytest.mark.parametrize("text", ["2 G", " 2G", "0x10", "0x10M", "inf", "nan", "1e400", "-1G", "0", "2Q", "%", "G", ".", "1.5.2G"])
def test_sizes_the_cli_refuses_python_refuses(text):
    """One parser for sizes (the library's oc_size_parse): the CLI and Python refuse the same texts."""
    with pytest.raises(outcore.InputError, match="gpu_mem"):
        parse_gpu_mem(text)
    cli = os.environ.get("OUTCORE_BIN")
    if cli:
        proc = subprocess.run([cli, "gram", "--gpu-mem", text, "x.npy", "-o", "y.npy"], capture_output=True, text=True)
        assert proc.returncode == 2 and "--gpu-mem" in proc.stderr, proc.stderr


@pytest.mark.parametrize("text,expected", [("1e3", (1000, 0.0)), ("2g", (2 << 30, 0.0)), ("0.5K", (512, 0.0)),
                                           ("12.5%", (0, 0.125)), ("7B", (7, 0.0)), ("1TiB", (1 << 40, 0.0))])
def test_sizes_both_take(text, expected):
    assert parse_gpu_mem(text) == expected


# A --host-mem text, then the reason each front end gives for refusing it (None: taken).
HOST_MEM = [("25%", None, None), ("4G", None, None),
            ("0%", "a percentage must be in (0, 100]", "a percentage must be more than 0 and at most 100"),
            ("150%", "a percentage must be in (0, 100]", "a percentage must be more than 0 and at most 100"),
            ("garbage", "expected bytes as an int, a size such as '2G' or '512M', or a percentage such as '50%'",
             "expected a size such as 4G or 512M (1 byte to 2^63 - 1), or a percentage such as 25%"),
            ("1e-12%", "less than a byte of this machine's memory", "less than a byte of this machine's memory")]


@pytest.mark.parametrize("text,python,cli", HOST_MEM, ids=[t for t, *_ in HOST_MEM])
def test_host_mem_the_cli_and_python_resolve_alike(tmp_path, text, python, cli):
    """One resolution of a host budget (the library's oc_host_mem_parse): a size or a
    percentage of the machine's memory is the same bytes from Python and from the CLI, and
    each refuses the same texts with its own spelling of the option."""
    x = np.arange(16.0).reshape(4, 4)
    np.save(tmp_path / "x.npy", x)
    resolved = ctypes.c_int64()
    status = outcore._lib.lib.oc_host_mem_parse(text.encode(), ctypes.byref(resolved))
    stats = {}
    if python is None:
        outcore.matmul(x, x, backend="cpu", host_mem=text, stats=stats)
        assert status == outcore._lib.OC_OK and stats["host_budget_bytes"] == resolved.value == parse_host_mem(text)
    else:
        assert status == outcore._lib.OC_ERR_INVALID_ARGUMENT
        with pytest.raises(outcore.InputError) as e:
            outcore.matmul(x, x, backend="cpu", host_mem=text)
        assert str(e.value).endswith(python) and "host_mem" in str(e.value), e.value
    binary = os.environ.get("OUTCORE_BIN")
    if not binary:
        return
    proc = subprocess.run([binary, "matmul", tmp_path / "x.npy", tmp_path / "x.npy", "-o", tmp_path / "y.npy",
                           "--backend", "cpu", "--host-mem", text, "--json"], capture_output=True, text=True)
    if cli is None:
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["host_budget_bytes"] == stats["host_budget_bytes"]
    else:
        assert proc.returncode == 2 and proc.stderr == f"outcore: --host-mem {text}: {cli}\n", proc.stderr


def test_host_mem_reads_a_large_file_in_panels(rng, tmp_path):
    """A path whose packed bits exceed half of host_mem stays in its file: the same results."""
    assert parse_host_mem("3M") == 3 << 20
    assert parse_host_mem(4096) == 4096
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert abs(parse_host_mem("10%") - total // 10) <= 1
    with pytest.raises(outcore.InputError, match="host_mem"):
        outcore.gram(random01(rng, 6, 20), host_mem="lots")
    a = random01(rng, 900, 1500).astype(bool)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "p.npy", np.packbits(a, axis=1))
    budget = 192 << 10  # a's packed bits (900 rows of 192 bytes) take more than its half
    for path, bits in ((tmp_path / "a.npy", None), (tmp_path / "p.npy", 1500)):
        got = outcore.gram(str(path), metric="jaccard", bits=bits, host_mem=budget, backend="cpu")
        np.testing.assert_array_equal(got, exact(a, metric="jaccard"))
        # the top-k lists (900 rows of 5 keys and a floor, 8 bytes each) beside the panels
        idx, scores = outcore.gram(str(path), topk=5, bits=bits, host_mem=budget + 900 * 6 * 8, backend="cpu")
        want_idx, want_scores = outcore.gram(a, topk=5, backend="cpu")
        assert np.array_equal(idx, want_idx) and np.array_equal(scores, want_scores)


def test_cuda_backend_without_a_gpu(rng):
    if outcore.cuda_device_count() > 0:
        pytest.skip("a CUDA device is usable here")
    with pytest.raises(outcore.DeviceError, match="cuda") as info:
        outcore.gram(random01(rng, 4, 8), backend="cuda")
    assert isinstance(info.value, outcore.UnsupportedError)


def test_cuda_warm_up(rng):
    """The warm-up counts the devices as cuda_device_count does, leaves a bad list to the job,
    and a job after it (or beside it on a thread) gives the same bytes."""
    count = outcore.cuda_device_count()
    assert outcore.cuda_warm_up() == count
    assert outcore.cuda_warm_up("all") == count
    assert outcore.cuda_warm_up("0,0,nonsense", 5) == count
    a = random01(rng, 40, 300)
    want = outcore.gram(a, metric="jaccard", backend="cpu")
    t = threading.Thread(target=outcore.cuda_warm_up)
    t.start()
    got = outcore.gram(a, metric="jaccard")
    t.join()
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- top-k and threshold
def skip_if_unsupported(call):
    """Runs call(); skips the test while the library answers OC_ERR_UNSUPPORTED for the output."""
    try:
        return call()
    except outcore.UnsupportedError as exc:
        pytest.skip(f"the library does not produce this output yet: {exc}")


def topk_reference(scores, k, symmetric, hamming):
    n, p = scores.shape
    indices = np.full((n, k), -1, np.int64)
    values = np.zeros((n, k), scores.dtype)
    for i in range(n):
        cols = np.array([j for j in range(p) if not (symmetric and j == i)], np.int64)
        key = scores[i, cols].astype(np.float64)
        # Best first (highest score, lowest Hamming distance), then the lower column.
        order = np.lexsort((cols, key if hamming else -key))[:k]
        indices[i, :len(order)] = cols[order]
        values[i, :len(order)] = scores[i, cols[order]]
    return indices, values


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("symmetric", [True, False])
def test_topk(rng, metric, symmetric):
    a = random01(rng, 40, 24, 0.2)  # small m and density: many ties
    b = None if symmetric else random01(rng, 30, 24, 0.3)
    k = 5
    indices, scores = skip_if_unsupported(lambda: outcore.gram(a, b, metric=metric, topk=k, backend="cpu"))
    want_idx, want_scores = topk_reference(exact(a, b, metric), k, symmetric, metric == "hamming")
    assert indices.shape == (40, k) and indices.dtype == np.int64
    assert np.array_equal(indices, want_idx)
    assert np.array_equal(scores, want_scores)


def test_topk_past_the_candidates_pads_with_minus_one(rng):
    """A·Aᵀ rows have n - 1 candidates: K = n pads the last slot with -1 and score 0."""
    a = random01(rng, 6, 30)
    indices, scores = skip_if_unsupported(lambda: outcore.gram(a, topk=6, backend="cpu"))
    assert (indices[:, 5:] == -1).all() and (indices[:, :5] >= 0).all() and (scores[:, 5:] == 0).all()


@pytest.mark.parametrize("metric, threshold", [("counts", 3), ("jaccard", 0.25), ("cosine", 0.4), ("hamming", 6)])
def test_threshold_pairs(rng, metric, threshold):
    a, b = random01(rng, 35, 24, 0.25), random01(rng, 28, 24, 0.3)
    rows, cols, values = skip_if_unsupported(
        lambda: outcore.gram(a, b, metric=metric, threshold=threshold, backend="cpu"))
    full = exact(a, b, metric)
    keep = full <= threshold if metric == "hamming" else full >= threshold
    want_rows, want_cols = np.nonzero(keep)  # row-major: sorted by row, then column
    assert np.array_equal(rows, want_rows) and np.array_equal(cols, want_cols)
    assert values.dtype == full.dtype and np.array_equal(values, full[keep])


def test_threshold_above_every_score_gives_no_pairs(rng):
    a = random01(rng, 20, 30)
    a[3] = 0  # no row is full, and no two rows are equal
    a[0] = 1
    a[1, :] = 0
    a[1, 0] = 1
    rows, cols, values = outcore.gram(a[:2], metric="counts", threshold=30, backend="cpu")
    assert rows.size == cols.size == values.size == 0


@pytest.mark.parametrize("metric, threshold, message", [
    ("jaccard", 1.5, "a jaccard similarity lies in [0, 1]"),
    ("cosine", -0.1, "a cosine similarity lies in [0, 1]"),
    ("counts", 2.5, "whole numbers from 0 to 30"),
    ("hamming", 31, "whole numbers from 0 to 30"),
    ("counts", -1, "whole numbers"),
])
def test_threshold_outside_the_metric_range(rng, metric, threshold, message):
    with pytest.raises(outcore.InputError, match=re.escape(message)) as info:
        outcore.gram(random01(rng, 20, 30), metric=metric, threshold=threshold)
    assert "oc_" not in str(info.value)


def test_topk_to_file(tmp_path, rng):
    a = random01(rng, 25, 40)
    indices, scores = skip_if_unsupported(lambda: outcore.gram(a, metric="jaccard", topk=3))
    path = tmp_path / "nn.npz"
    assert outcore.gram(a, metric="jaccard", topk=3, out=path) == path
    with np.load(path) as f:
        assert np.array_equal(f["indices"], indices) and np.array_equal(f["scores"], scores)
    with pytest.raises(outcore.InputError, match="npy"):
        outcore.gram(a, topk=3, out=tmp_path / "nn.npy")
    assert no_temporaries(tmp_path)


# ---------------------------------------------------------------- resource reports
def cli_json(*args):
    """The CLI's --json report, or a skip when the binary is not at hand."""
    import json
    import subprocess
    cli = os.environ.get("OUTCORE_BIN")
    if not cli or not Path(cli).exists():
        pytest.skip("OUTCORE_BIN is not set: no CLI report to compare with")
    proc = subprocess.run([cli, *map(str, args), "--json"], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def without_free_memory(report):
    """The devices report less what changes from one call to the next."""
    for gpu in report.get("gpus", []):
        for key in [k for k in gpu if "free" in k]:
            del gpu[key]
    return report


def test_devices_report_is_the_cli_report():
    report = outcore.devices()
    assert isinstance(report["cpu"], dict) and report["cpu"]["cores"] >= 1
    assert len(report["gpus"]) == outcore.cuda_device_count()
    assert without_free_memory(report) == without_free_memory(cli_json("devices"))


def test_inspect_report_is_the_cli_report(tmp_path):
    import shutil
    import subprocess
    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not available to produce PTX")
    (tmp_path / "k.cu").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    subprocess.run(["nvcc", "-ptx", "-arch=sm_90", str(tmp_path / "k.cu"), "-o", str(tmp_path / "k.ptx")],
                   check=True, capture_output=True)
    report = outcore.inspect(tmp_path / "k.ptx", block=256, arch="sm_90")
    assert [k["name"] for k in report["kernels"]] == ["_Z5twicePf"]
    assert report["kernels"][0]["verdict"]["fits"] is True
    assert report == cli_json("inspect", tmp_path / "k.ptx", "--block", 256, "--arch", "sm_90")


def test_inspect_bad_input(tmp_path):
    path = tmp_path / "notes.ptx"
    path.write_text("this is not PTX\n")
    with pytest.raises(outcore.InputError):
        outcore.inspect(path, block=256, arch="sm_90")
    with pytest.raises(outcore.InputError, match="nothere"):
        outcore.inspect(tmp_path / "nothere.ptx")
    with pytest.raises(outcore.InputError, match="block"):
        outcore.inspect(path, block="many")


# ---------------------------------------------------------------- no input is ever lost
def test_out_array_sharing_memory_with_an_input_is_refused(rng):
    a = random01(rng, 16, 16).astype(np.int32)
    with pytest.raises(outcore.InputError, match="shares memory with A"):
        outcore.gram(a.view(np.uint8)[:, :16], out=a)
    b = np.zeros((16, 64), np.uint8)
    with pytest.raises(outcore.InputError, match="shares memory with B"):
        outcore.gram(random01(rng, 16, 64), b, out=b.view(np.int32))


@pytest.mark.parametrize("spelling", ["same", "dot", "symlink", "hardlink"])
def test_out_path_naming_an_input_file_is_refused(tmp_path, rng, spelling):
    a = random01(rng, 12, 40)
    path = tmp_path / "a.npy"
    np.save(path, a)
    before = path.read_bytes()
    out = {"same": path, "dot": tmp_path / "." / "a.npy", "symlink": tmp_path / "link.npy",
           "hardlink": tmp_path / "hard.npy"}[spelling]
    if spelling == "symlink":
        out.symlink_to(path)
    elif spelling == "hardlink":
        os.link(path, out)
    with pytest.raises(outcore.InputError, match="the output is the input file"):
        outcore.gram(str(path), out=str(out))
    assert path.read_bytes() == before
    with pytest.raises(outcore.InputError, match="the output is the input file"):
        outcore.gram(a, str(path), out=str(out))  # B is the file
    assert path.read_bytes() == before
    assert no_temporaries(tmp_path)


def test_binarize_reads_any_nonzero_value_as_one(tmp_path, rng):
    a = random01(rng, 30, 50)
    values = a * rng.integers(1, 9, size=a.shape)  # nonzero where a is 1
    with pytest.raises(outcore.InputError, match=r"is not 0 or 1.*binarize=True"):
        outcore.gram(values.astype(np.uint8))
    for x in (values.astype(np.uint8), values.astype(np.float64) * 0.5, -values.astype(np.int64)):
        assert np.array_equal(outcore.gram(x, binarize=True), exact(a))
    np.save(tmp_path / "v.npy", values.astype(np.uint8))
    with pytest.raises(outcore.InputError, match="--binarize"):
        outcore.gram(tmp_path / "v.npy")
    assert np.array_equal(outcore.gram(tmp_path / "v.npy", binarize=True), exact(a))
    with pytest.raises(outcore.InputError, match="NaN"):
        outcore.gram(np.full((3, 3), np.nan), binarize=True)


def test_uint8_values_above_one_hint_at_packbits(rng):
    a = random01(rng, 10, 300)
    packed = np.packbits(a, axis=1)
    with pytest.raises(outcore.InputError, match=r"look like numpy.packbits output: add --bits M \(Python: bits=M\)"
                                                 r".* 297 to 304"):
        outcore.gram(packed)
    a[4, 9] = 2  # one stray value among 0/1 bytes is no packbits output
    with pytest.raises(outcore.InputError, match="value 2 at row 4, column 9") as e:
        outcore.gram(a)
    assert "packbits" not in str(e.value)


@pytest.mark.parametrize("kind", ["packed", "int8", "stray"])
def test_a_bad_byte_is_told_alike_in_arrays_files_and_the_cli(rng, tmp_path, kind):
    """The library tells a byte other than 0 and 1 in one message, whoever reads it: an array
    (oc_matrix_from_values), a .npy file from Python, and the CLI, which give the same text
    after the matrix's name: an int8 value signed, the packbits hint for a uint8 row that
    looks packed, none for one stray value."""
    a = random01(rng, 10, 300)
    x = {"packed": np.packbits(a, axis=1), "int8": a.astype(np.int8), "stray": a.astype(np.uint8)}[kind]
    x[4, 9] = {"packed": x[4, 9], "int8": -1, "stray": 2}[kind]
    path = tmp_path / "x.npy"
    np.save(path, x)
    told = []
    for given in (x, path, np.asfortranarray(x)):
        with pytest.raises(outcore.InputError) as e:
            outcore.gram(given)
        told.append(str(e.value).split(": ", 1)[1])
    if kind == "packed":
        assert "numpy.packbits output: add --bits M (Python: bits=M)" in told[0], told[0]
    else:
        assert told[0].startswith(f"value {x[4, 9]} at row 4, column 9 ") and "packbits" not in told[0], told[0]
    assert told[1] == told[0] == told[2], told
    binary = os.environ.get("OUTCORE_BIN")
    if binary:
        proc = subprocess.run([binary, "gram", path, "-o", tmp_path / "c.npy"], capture_output=True, text=True)
        assert proc.returncode == 2 and proc.stderr == f"outcore: {path}: {told[0]}\n", proc.stderr


@pytest.mark.parametrize("metric", ["counts", "jaccard", "cosine", "hamming"])
def test_sparse_algorithm_matches_dense(rng, metric):
    a = (rng.random((150, 800)) < 0.01).astype(np.uint8)
    a[5] = 0
    a[9] = 0  # two empty rows: jaccard 1 between them
    for kw in ({"topk": 6}, {"threshold": 0.3 if metric in ("jaccard", "cosine") else 1}, {}):
        s = outcore.gram(a, metric=metric, algorithm="sparse", **kw)
        d = outcore.gram(a, metric=metric, algorithm="dense", **kw)
        for x, y in zip(s if isinstance(s, tuple) else (s,), d if isinstance(d, tuple) else (d,)):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    with pytest.raises(outcore.InputError, match="algorithm"):
        outcore.gram(a, algorithm="fast")


def test_scipy_sparse_stays_sparse(rng):
    sp = pytest.importorskip("scipy.sparse")
    a = sp.random(1500, 30000, density=0.0003, format="csr", random_state=1)
    a.data[:] = 1
    idx, sc = outcore.gram(a, metric="jaccard", topk=4, algorithm="sparse")
    dense = np.asarray(a.todense() != 0, dtype=np.uint8)
    idx_d, sc_d = outcore.gram(dense, metric="jaccard", topk=4, algorithm="dense")
    assert np.array_equal(idx, idx_d) and sc.tobytes() == sc_d.tobytes()


def test_sparse_algorithm_on_a_file_left_in_place(rng, tmp_path):
    """host_mem= leaves a .npy path in its file; algorithm="sparse" reads its rows into lists,
    with the same bytes as the dense panels; a Context's resources and algorithm= combine."""
    a = (rng.random((2000, 12000)) < 0.0005).astype(np.uint8)  # 3 MB packed: past half the budget
    np.save(tmp_path / "a.npy", a)
    with outcore.Context(backend="cpu", host_mem=4 << 20) as ctx:
        s = outcore.gram(tmp_path / "a.npy", metric="jaccard", topk=5, algorithm="sparse", context=ctx)
        d = outcore.gram(tmp_path / "a.npy", metric="jaccard", topk=5, algorithm="dense", context=ctx)
    ref = outcore.gram(a, metric="jaccard", topk=5, algorithm="dense")
    for x, y, z in zip(s, d, ref):
        assert x.tobytes() == y.tobytes() == z.tobytes()


def test_outcore_library_given_by_name_is_that_file(tmp_path):
    """OUTCORE_LIBRARY=liboutcore.so names the file in the current folder, never a copy the
    loader would find on its own path (a name without '/' goes to the loader's search)."""
    import sys
    lib = Path(os.environ.get("OUTCORE_LIBRARY") or outcore._lib.library_path).resolve()
    env = dict(os.environ, OUTCORE_LIBRARY=lib.name, LD_LIBRARY_PATH=str(tmp_path))
    (tmp_path / lib.name).write_bytes(b"not a library")  # what the loader's search would find first
    code = "import outcore._lib as l; print(l.library_path)"
    r = subprocess.run([sys.executable, "-c", code], cwd=lib.parent, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == lib.parent / lib.name


def test_arguments_a_user_gets_wrong_are_named():
    """A misspelt map keyword is not taken as an unused operand (the option would silently not
    apply); gram takes numpy's spellings of its dtypes as map and matmul do; text with a NUL
    byte or a lone surrogate is refused, not cut or raised raw; cuda_warm_up checks device."""
    x = np.arange(12.0).reshape(3, 4)
    for kw, right in ((dict(axes=0, reduce="sum"), "axis"), (dict(threds=2), "threads"), (dict(reduc="sum"), "reduce"),
                      (dict(reduction="sum"), "reduce"), (dict(output="o.npy"), "out"), (dict(host_memory="1G"), "host_mem"),
                      (dict(backends="cpu"), "backend")):
        with pytest.raises(outcore.InputError, match=f"did you mean {right}=") as e:
            outcore.map("a", a=x, **kw)
        assert "\n" not in str(e.value)
    assert outcore.map("a", a=x, b=x).shape == (3, 4)  # an unused operand of another name still runs
    bits = np.random.default_rng(0).random((5, 16)) < 0.5
    for spelling, want in (("i4", np.int32), ("<i4", np.int32), ("u2", np.uint16), (np.int32, np.int32)):
        assert outcore.gram(bits, dtype=spelling).dtype == want
    assert outcore.gram(bits, dtype="f4", metric="jaccard").dtype == np.float32
    with pytest.raises(outcore.InputError, match="unknown dtype 'banana'"):
        outcore.gram(bits, dtype="banana")
    a = np.ones((3, 3))
    for bad in ("0\x00junk", "\udcff"):
        with pytest.raises(outcore.InputError, match="^devices "):
            outcore.matmul(a, a.T, devices=bad, backend="cpu")
        with pytest.raises(outcore.InputError, match="^devices "):
            outcore.cuda_warm_up(devices=bad)
    for bad in ("x", True, -7, 1.5):
        with pytest.raises(outcore.InputError, match="device must be a CUDA device number"):
            outcore.cuda_warm_up(device=bad)
    assert outcore.cuda_warm_up(devices=[0]) == outcore.cuda_device_count()


def test_flags_sizes_and_budgets_are_checked_as_given():
    """A yes/no argument takes True, False (numpy's too) or 0 and 1, never a string whose truth
    would answer for the caller; stream's output and scratch shapes and dtypes, a Context's
    per-device budgets and close's timeout are refused with InputError when given, not
    truncated, raised raw by numpy, or found at the first call; Context.gram takes gram's
    arguments by position as gram does."""
    x = np.arange(6.0).reshape(2, 3)
    for call, name in ((lambda: outcore.matmul(x, x, transpose_b="no"), "transpose_b"),
                       (lambda: outcore.matmul(x, x.T, tf32=None), "tf32"),
                       (lambda: outcore.gram(x.astype(np.uint8) % 2, resume="yes"), "resume"),
                       (lambda: outcore.gram(x.astype(np.uint8) % 2, binarize=2), "binarize"),
                       (lambda: outcore.map("a", a=x, explain="False"), "explain"),
                       (lambda: outcore.devices(bandwidth="no"), "bandwidth")):
        with pytest.raises(outcore.InputError, match=f"^{name} must be True or False"):
            call()
    assert np.array_equal(outcore.matmul(x, x, transpose_b=np.True_), x @ x.T)
    assert np.array_equal(outcore.matmul(x, x.T, transpose_b=0), x @ x.T)
    assert np.array_equal(outcore.matmul(x, x, transpose_b=np.int64(1)), x @ x.T)
    for outputs, says in ((((-1, 3), np.float64), "size must be at least 0"), (((2.5, 3), np.float64), "integer"),
                          (((2, 3), "nonsense"), "is not a numpy dtype")):
        with pytest.raises(outcore.InputError, match=f"^output y.*{says}"):
            outcore.stream(print, inputs={"x": x}, outputs={"y": outputs})
    with pytest.raises(outcore.InputError, match="^scratch s's size must be at least 0"):
        outcore.stream(print, inputs={"x": x}, scratch={"s": ((2, -3), np.float32)})
    with pytest.raises(outcore.InputError, match=r"^gpu_mem\[0\]: gpu_mem 'junk'"):
        outcore.Context(gpu_mem={0: "junk"})
    with pytest.raises(outcore.InputError, match="gpu_mem device must be at least 0"):
        outcore.Context(gpu_mem={-1: "2G"})
    outcore.Context(gpu_mem={"0": "2G"}).close()  # the library's own spelling of a device
    with pytest.raises(outcore.InputError, match="device 0 is given a budget twice"):
        outcore.Context(gpu_mem={0: "1G", "0": "2G"})  # one device in both spellings: neither silently wins
    assert outcore.Context().close(timeout=float("inf")) and outcore.Context().close(timeout=np.int64(5))
    with outcore.Context() as ctx:
        with pytest.raises(outcore.InputError, match="^timeout must be a number of seconds"):
            ctx.close(timeout="x")
        a = (np.arange(12).reshape(3, 4) % 3 == 0).astype(np.uint8)
        assert np.array_equal(ctx.gram(a, None, "jaccard"), outcore.gram(a, None, "jaccard"))
