"""Numbers from the environment are read strictly (src/core/env.h): a value is what
docs/environment.md says, or the job is refused in one line naming the variable; never a
prefix ("1G" read as 1 byte, "1e3" as 1 tile) nor a silent default for text."""
import zipfile

import numpy as np
import pytest

from conftest import require_backend, run


@pytest.fixture
def a(tmp_path):
    np.save(tmp_path / "a.npy", (np.random.default_rng(2).random((40, 70)) < 0.3).astype(np.uint8))
    return tmp_path / "a.npy"


@pytest.mark.parametrize("name, value, args", [
    ("OUTCORE_PAIRS_BUFFER", "1G", ["--threshold", "3", "-o", "p.npz"]),
    ("OUTCORE_PAIRS_BUFFER", "abc", ["--threshold", "3", "-o", "p.npz"]),
    ("OUTCORE_RESUME_INTERVAL", "abc", ["--resume", "-o", "r.npy"]),
    ("OUTCORE_RESUME_INTERVAL", "-1", ["--resume", "-o", "r.npy"]),
    ("OUTCORE_RESUME_INTERVAL", "nan", ["--resume", "-o", "r.npy"]),
    ("OUTCORE_RESUME_INTERVAL", "1e400", ["--resume", "-o", "r.npy"]),
    ("OUTCORE_RESUME_KILL_AFTER", "1e3", ["--resume", "-o", "r.npy"]),
    ("OUTCORE_SPARSE_HUBS", "3x", ["--algorithm", "sparse", "--topk", "2", "-o", "s.npz"]),
    ("OUTCORE_SPARSE_HUBS", "600", ["--algorithm", "sparse", "--topk", "2", "-o", "s.npz"]),
])
def test_a_malformed_value_is_refused_naming_the_variable(a, name, value, args):
    d = a.parent
    before = sorted(p.name for p in d.iterdir())
    proc = run("gram", a, "--backend", "cpu", *[str(d / x) if x.endswith((".npz", ".npy")) else x for x in args],
               env={name: value}, check=False)
    assert proc.returncode == 2 and proc.stderr.startswith(f"outcore: {name}={value}: expected"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert sorted(p.name for p in d.iterdir()) == before


@pytest.mark.parametrize("value", ["nope", "B1", "b1 "])
def test_a_kernel_that_is_not_one_is_refused_with_every_name(a, value):
    """OUTCORE_CUDA_KERNEL takes one of the GPU kernels' names, listed from their table."""
    require_backend("cuda", a.parent)
    out = a.parent / "c.npy"
    proc = run("gram", a, "--backend", "cuda", "-o", out, env={"OUTCORE_CUDA_KERNEL": value}, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"outcore: OUTCORE_CUDA_KERNEL={value}: expected b1, wgmma or popc\n", proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("value, date", [
    ("1700000000", (2023, 11, 14, 22, 13, 20)),
    ("0", (1980, 1, 1, 0, 0, 0)),                    # before 1980: the first date a zip holds
    ("99999999999999", (2107, 12, 31, 23, 59, 58)),  # after 2107: the last
])
def test_source_date_epoch_within_the_dates_a_zip_holds(a, value, date):
    out = a.parent / "z.npz"
    run("gram", a, "--topk", "3", "-o", out, "-q", env={"SOURCE_DATE_EPOCH": value})
    assert zipfile.ZipFile(out).infolist()[0].date_time == date


@pytest.mark.parametrize("value", ["abc", "-1", "1e9", "9223372036854775808"])
def test_source_date_epoch_that_is_no_number_is_now(a, value):
    """Not a whole number of seconds (or past the largest): as if unset, the time of the run."""
    out = a.parent / "z.npz"
    run("gram", a, "--topk", "3", "-o", out, "-q", env={"SOURCE_DATE_EPOCH": value})
    year = zipfile.ZipFile(out).infolist()[0].date_time[0]
    assert 2024 <= year <= 2107


def test_cost_cache_named_as_a_directory_is_left_alone(a):
    """OUTCORE_COST_CACHE=newdir/ names a directory: nothing is made there, no lock, the
    defaults are used, and --explain says why."""
    d = a.parent
    proc = run("gram", a, "-o", d / "c.npy", "--explain", "-q", env={"OUTCORE_COST_CACHE": str(d / "newdir") + "/"})
    assert "names a directory, not a file: rates not measured nor stored" in proc.stderr, proc.stderr
    assert not (d / "newdir").exists()
