"""map's progress= and stats=, as gram's: reports up to done == total, a callback that raises
cancels the job and is raised, and stats with the keys and values of `outcore map --json`."""
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import outcore

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2]))

# The keys of `outcore map --json` that describe the call or its value, not the job's run.
CALL_KEYS = {"command", "expression", "output", "value", "dtype", "shape"}


SLOW = "sin(exp(cos(a))) * tanh(a) + log1p(abs(a))"


@pytest.fixture(scope="module")
def slow_input():
    """A 1-D float32 array whose SLOW expression takes at least half a second of one thread's
    work on the machine running the tests: five progress intervals (OC_PROGRESS_INTERVAL,
    src/core/threads.h), so that reports come while the job runs, not only its final one. The
    array is doubled until a run with no callback takes that long in the process's CPU time:
    one thread does the work, and a loaded machine stretches a run's wall time (which paces the
    reports) but not the work in it, so a size measured under load is long enough when idle."""
    n = 1 << 22
    for _ in range(7):  # at most 1 << 28 elements (1 GiB)
        a = np.linspace(0.0, 1.0, n, dtype=np.float32)
        started = time.process_time()
        outcore.map(SLOW, a=a, backend="cpu", threads=1)
        seconds = time.process_time() - started
        if seconds >= 0.5:
            return a
        n *= 2
    pytest.fail(f"map of {n // 2} elements still took only {seconds:.3f} s")


@pytest.mark.parametrize("kwargs", [{}, {"reduce": "sum"}, {"reduce": "max", "axis": 1}])
def test_progress_ends_at_the_total(kwargs):
    a = np.arange(3000.0).reshape(30, 100)
    reports = []
    outcore.map("a * 2", a=a, backend="cpu", progress=lambda done, total: reports.append((done, total)), **kwargs)
    # once at the end with done == total, however short the job (a reduction's too)
    assert reports and reports[-1] == (a.size, a.size), reports
    assert [r for r in reports if r[0] == r[1]] == [reports[-1]], reports


def test_progress_reports_while_the_job_runs(slow_input):
    a = slow_input
    reports = []
    got = outcore.map(SLOW, a=a, backend="cpu", threads=1, progress=lambda done, total: reports.append((done, total)))
    assert got.shape == a.shape
    assert len(reports) >= 2 and reports[0][0] < reports[0][1] == a.size
    assert all(x[0] <= y[0] for x, y in zip(reports, reports[1:])), "progress went backwards"
    assert reports[-1] == (a.size, a.size)


@pytest.mark.parametrize("error", [RuntimeError("enough"), KeyboardInterrupt()])
def test_an_exception_in_progress_cancels_the_job(tmp_path, error, slow_input):
    a = slow_input
    reports = []

    def progress(done, total):
        reports.append((done, total))
        raise error

    with pytest.raises(type(error)) as exc:
        outcore.map(SLOW, a=a, backend="cpu", threads=1, out=tmp_path / "c.npy", progress=progress)
    assert exc.value is error
    assert len(reports) == 1 and reports[0][0] < reports[0][1]
    assert list(tmp_path.iterdir()) == [], "a cancelled job left files behind"
    # the default context runs the next job as before
    assert outcore.map("a + 1", a=np.zeros(3), progress=lambda done, total: None).tolist() == [1.0, 1.0, 1.0]


def test_bad_progress_and_stats_are_refused():
    a = np.zeros(3)
    with pytest.raises(outcore.InputError, match=r"^progress must be a callable progress\(done, total\); got 3$"):
        outcore.map("a", a=a, progress=3)
    with pytest.raises(outcore.InputError, match="^stats must be a dict to fill; got list$"):
        outcore.map("a", a=a, stats=[])
    for misspelt, keyword in (("stat", "stats"), ("progres", "progress")):
        with pytest.raises(outcore.InputError, match=f"did you mean {keyword}="):
            outcore.map("a", a=a, **{misspelt: {}})


def test_stats_are_the_clis_json(tmp_path):
    cli = os.environ.get("OUTCORE_BIN")
    if not cli:
        pytest.skip("OUTCORE_BIN is not set")
    a = np.arange(200_000, dtype=np.float64).reshape(400, 500)
    np.save(tmp_path / "a.npy", a)
    summary = json.loads(subprocess.run([cli, "map", "a * 2 + 1", "a=a.npy", "-o", "c.npy", "--backend", "cpu",
                                         "--threads", "2", "--json"], cwd=tmp_path, capture_output=True, text=True,
                                        check=True).stdout)
    for out in (None, tmp_path / "d.npy"):
        stats = {}
        outcore.map("a * 2 + 1", a=tmp_path / "a.npy", out=out, backend="cpu", threads=2, stats=stats)
        assert set(stats) == set(summary) - CALL_KEYS
        for key in ("backend", "backend_desc", "elements", "bytes_read", "bytes_written", "threads"):
            assert stats[key] == summary[key], key
        assert stats["seconds"] > 0 and stats["host_peak_bytes"] > 0
        assert stats["bytes_per_second"] == pytest.approx((stats["bytes_read"] + stats["bytes_written"])
                                                          / stats["seconds"])
    # A reduction writes its value's bytes.
    stats = {}
    outcore.map("a", a=a, reduce="sum", backend="cpu", stats=stats)
    assert stats["elements"] == a.size and stats["bytes_written"] == 8
    # docs/python.md names every key
    docs = (SOURCE_DIR / "docs" / "python.md").read_text()
    listed = docs[docs.index("## `outcore.map`"):]
    listed = listed[listed.index("`stats={}`"):].split("\n\n", 1)[0]
    for key in stats:
        assert f"`{key}`" in listed, key


def test_explain_leaves_progress_and_stats_unused():
    calls, stats = [], {}
    text = outcore.map("a * 2", a=np.zeros(10), explain=True, progress=lambda d, t: calls.append(d), stats=stats)
    assert isinstance(text, str) and calls == [] and stats == {}
