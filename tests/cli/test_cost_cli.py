"""The cost model through the CLI and the binding: `--explain` and `--json` carry the backend
prediction; `outcore devices --bandwidth` measures and stores the rates; the first job that
needs a prediction measures the host's rates once and stores them, `off` measures and writes
nothing; a corrupted rate cache is ignored with a warning and replaced; auto without a GPU runs
on the CPU (docs/cost-model.md)."""
import fcntl
import json
import os
import signal
import stat
import subprocess
import time

import numpy as np
import pytest

from conftest import outcore_bin, run, wait_until_open


def gpu_count():
    return len(json.loads(run("devices", "--json").stdout)["gpus"])


@pytest.fixture
def small(tmp_path):
    a = (np.random.default_rng(5).random((300, 216)) < 0.1).astype(np.uint8)
    np.save(tmp_path / "a.npy", a)
    return tmp_path / "a.npy"


def test_auto_without_gpu_runs_on_the_cpu_and_explains(small, tmp_path):
    if gpu_count():
        pytest.skip("a GPU is usable here: auto may choose it")
    env = {"OUTCORE_COST_CACHE": str(tmp_path / "rates.txt")}
    proc = run("gram", small, "-o", tmp_path / "c.npy", "--json", "--explain", env=env)
    summary = json.loads(proc.stdout)
    assert summary["backend"] == "cpu"
    assert summary["backend_explain"].endswith(": cpu") or ": cpu [" in summary["backend_explain"]
    assert "gram 300x300x216 (dense)" in summary["backend_explain"]
    assert "outcore: backend " + summary["backend_explain"] in proc.stderr
    assert "outcore: algorithm " in proc.stderr
    assert "\ncpu_bit_macs." in (tmp_path / "rates.txt").read_text()  # the prediction's rates, measured


def test_explain_predicts_before_the_job(small, tmp_path):
    """--explain prints its prediction before the job starts (README: the time it predicts
    before it starts): a job that then fails has printed it, the failure last."""
    env = {"OUTCORE_COST_CACHE": str(tmp_path / "rates.txt"), "OUTCORE_FAULT_RENAME": "1:eio"}
    proc = run("gram", small, "-o", tmp_path / "c.npy", "--backend", "cpu", "--explain", env=env, check=False)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert [line.split(" ")[1] for line in lines[:2]] == ["backend", "algorithm"], proc.stderr
    assert len(lines) == 3 and "c.npy" in lines[2], proc.stderr
    assert not (tmp_path / "c.npy").exists()


@pytest.fixture
def wide(tmp_path):
    """Columns enough that the kernel's bit-MACs outweigh the per-pair stage on any CPU (the
    explain then names the kernel's rate, measured or default)."""
    a = (np.random.default_rng(6).random((300, 20000)) < 0.1).astype(np.uint8)
    np.save(tmp_path / "wide.npy", a)
    return tmp_path / "wide.npy"


def test_first_job_measures_once_and_off_measures_nothing(wide, tmp_path):
    """A CPU-only job on a machine without rates measures the host's (OUTCORE_TRACE shows the
    measurement) and stores them; the next process reads them and measures nothing; with the
    cache off nothing is measured or written."""
    small = wide
    cache = tmp_path / "cache" / "rates.txt"
    env = {"OUTCORE_COST_CACHE": str(cache), "OUTCORE_TRACE": "1"}
    first = run("gram", small, "-o", tmp_path / "c.npy", "--backend", "cpu", "--json", env=env)
    assert "outcore cost: cpu kernel" in first.stderr and "outcore cost: triad" in first.stderr, first.stderr
    text = cache.read_text()
    assert text.startswith("# outcore cost-model rates") and "\nhost_bw " in text and "\ncpu_bit_macs." in text
    assert "\nfile_pages " in text, text  # the output file's pages: the triad's first touch
    assert "\nfile_faults " in text, text  # and the same on every core at once
    stored = cache.stat()
    second = run("gram", small, "-o", tmp_path / "c.npy", "--backend", "cpu", "--json", env=env)
    assert "outcore cost:" not in second.stderr, second.stderr
    assert cache.stat().st_ino == stored.st_ino and cache.read_text() == text  # not written again
    explain = json.loads(second.stdout)["backend_explain"]
    assert "/s ->" in explain and "/s (default) ->" not in explain, explain  # the CPU's stage at a measured rate
    off = tmp_path / "off"
    off.mkdir()
    proc = run("gram", small, "-o", off / "c.npy", "--backend", "cpu", "--explain", "--quiet",
               env={"OUTCORE_COST_CACHE": "off", "OUTCORE_TRACE": "1", "HOME": str(off), "XDG_CACHE_HOME": str(off)})
    assert "outcore cost:" not in proc.stderr and "/s (default) ->" in proc.stderr, proc.stderr
    assert sorted(p.name for p in off.iterdir()) == ["c.npy"]


def test_devices_bandwidth_stores_the_rates_that_explain_then_uses(small, tmp_path):
    cache = tmp_path / "cache" / "rates.txt"
    env = {"OUTCORE_COST_CACHE": str(cache)}
    proc = run("devices", "--bandwidth", "--json", env=env)
    json.loads(proc.stdout)  # the device report is unchanged on stdout
    assert "host memory" in proc.stderr and f"stored in         {cache}" in proc.stderr
    text = cache.read_text()
    assert text.startswith("# outcore cost-model rates")
    assert "\nhost_bw " in text and "\ncpu_bit_macs." in text
    explain = json.loads(run("gram", small, "-o", tmp_path / "c.npy", "--json", env=env).stdout)["backend_explain"]
    # The CPU's stage is quoted with the figure just measured, not a default.
    rates = dict(line.split() for line in text.splitlines() if line and not line.startswith(("#", "machine ")))
    cpu_part = explain.split("; cuda")[0]
    host_bw = f"host memory {float(rates['host_bw']) / 1e9:.3g} GB/s ->"
    kernel = "kernel" in cpu_part and "bit-MAC/s (default)" not in cpu_part
    assert host_bw in cpu_part or kernel or "element/s (default)" in cpu_part, explain


HEADER = "# outcore cost-model rates, format 2 (docs/cost-model.md)\n"


def explain_with_cache(small, tmp_path, cache_text):
    """--explain's stderr of a job on `small` under a rate cache holding cache_text."""
    cache = tmp_path / "rates.txt"
    cache.write_text(cache_text)
    proc = run("gram", small, "-o", tmp_path / "c.npy", "--explain", "--quiet", env={"OUTCORE_COST_CACHE": str(cache)})
    assert np.load(tmp_path / "c.npy").shape == (300, 300)
    return proc.stderr


def test_corrupted_cache_is_ignored_with_a_warning(small, tmp_path):
    err = explain_with_cache(small, tmp_path, HEADER + "machine x\nhost_bw fast\n")
    assert "line 3 is not a rate" in err, err
    text = (tmp_path / "rates.txt").read_text()  # replaced by the rates the job measured
    assert "host_bw fast" not in text and "\ncpu_bit_macs." in text, text


def test_foreign_cache_is_ignored_with_a_warning(small, tmp_path):
    err = explain_with_cache(small, tmp_path, HEADER + "machine another-host | some CPU | 64 cores\nhost_bw 1e+12\n")
    assert "1 TB/s" not in err  # the other machine's figure was not used
    text = (tmp_path / "rates.txt").read_text()  # this machine's measured rates added, the other's kept
    assert "machine another-host | some CPU | 64 cores\nhost_bw 1e+12\n" in text and "\ncpu_bit_macs." in text, text


def test_cache_of_an_older_format_is_measured_again(small, tmp_path):
    """Format 1 counted a symmetric Gram job's rate over twice the pairs the model counts: its
    figures are not used, and the job's measured ones replace the file."""
    import socket
    old = (f"# outcore cost-model rates (docs/cost-model.md)\nmachine {socket.gethostname()}\n"
           "host_bw 1e+12\ncpu_bit_macs.avx2 1e+15\ncpu_bit_macs.avx512 1e+15\ncpu_bit_macs.ref 1e+15\n")
    err = explain_with_cache(small, tmp_path, old)
    assert "is not of this outcore's format" in err and "1 TB/s" not in err, err
    text = (tmp_path / "rates.txt").read_text()
    assert text.startswith(HEADER) and "1e+15" not in text and "\ncpu_bit_macs." in text, text


def test_backend_cpu_asked_is_said(small, tmp_path):
    proc = run("gram", small, "-o", tmp_path / "c.npy", "--backend", "cpu", "--explain", "--quiet",
               env={"OUTCORE_COST_CACHE": "off"})
    assert "outcore: backend cpu (asked); predicted gram 300x300x216" in proc.stderr, proc.stderr
    assert "(default)" in proc.stderr  # no cache: every rate is a default, and says so


def test_cut_number_is_no_rate(small, tmp_path):
    """A line cut short in its number ("3.3e") is not a rate: the file is ignored with the
    warning of any damaged cache, not read as a figure of 3.3."""
    err = explain_with_cache(small, tmp_path, HEADER + "machine x\nhost_bw 3.30365e\n")
    assert "line 3 is not a rate ('host_bw 3.30365e')" in err, err


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_cache_that_is_no_regular_file_is_left_alone(small, tmp_path, kind):
    """A cache path that is a FIFO (whose open would block) or a directory is left as it was,
    no lock file beside it: the rates are the defaults, and --explain says why."""
    cache = tmp_path / "rates.txt"
    os.mkfifo(cache) if kind == "fifo" else cache.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run("gram", small, "-o", tmp_path / "c.npy", "--explain", "--quiet", env={"OUTCORE_COST_CACHE": str(cache)},
               timeout=60)
    word = {"fifo": "a FIFO", "directory": "a directory"}[kind]
    assert f"the rate cache {cache} is {word}, not a regular file: rates not measured nor stored" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before + ["c.npy"])
    assert stat.S_ISFIFO(cache.stat().st_mode) if kind == "fifo" else cache.is_dir()


def test_cache_behind_a_link_is_written_through_it(small, tmp_path):
    """A cache named by a symbolic link (one shared file for several names) is read from and
    stored into the link's target; the link stays."""
    target = tmp_path / "shared" / "rates.txt"
    target.parent.mkdir()
    target.write_text(HEADER)
    link = tmp_path / "rates.txt"
    link.symlink_to(target)
    run("gram", small, "-o", tmp_path / "c.npy", "--quiet", env={"OUTCORE_COST_CACHE": str(link)})
    assert link.is_symlink() and "\nhost_bw " in target.read_text()


def test_a_held_cache_lock_neither_hangs_nor_outlives_ctrl_c(small, tmp_path):
    """The first job measures under the cache's lock; another process that holds it (stopped
    with Ctrl-Z in the middle of its measurement, here a lock this test holds) cannot keep a
    job waiting: Ctrl-C ends the wait at once (exit 130, no output), and past
    OC_COST_CACHE_WAIT (10 s) the job runs on the defaults and says why, having waited once
    (not again for each figure it looks up)."""
    cache = tmp_path / "rates.txt"
    env = dict(os.environ, OUTCORE_COST_CACHE=str(cache))
    with open(tmp_path / "rates.txt.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen([outcore_bin(), "gram", small, "-o", tmp_path / "c.npy", "--backend", "cpu"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until_open(proc, tmp_path / "rates.txt.lock")  # waiting for the lock
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and time.monotonic() - start < 3, (proc.returncode, err)
        assert not (tmp_path / "c.npy").exists()
        start = time.monotonic()
        done = run("gram", small, "-o", tmp_path / "c.npy", "--backend", "cpu", "--explain", "--quiet",
                   env={"OUTCORE_COST_CACHE": str(cache)}, timeout=60)
        assert 9 < time.monotonic() - start < 19
        assert f"another process has held the rate cache {cache} for 10 s" in done.stderr, done.stderr
    assert (tmp_path / "c.npy").exists() and not cache.exists()


def test_a_lock_file_that_is_a_link_is_not_followed(small, tmp_path):
    """The cache's lock file is created, never opened through a link: a dangling link under its
    name creates no file where it points; the job runs on the defaults and says why."""
    cache = tmp_path / "rates.txt"
    (tmp_path / "rates.txt.lock").symlink_to(tmp_path / "elsewhere")
    proc = run("gram", small, "-o", tmp_path / "c.npy", "--backend", "cpu", "--explain", "--quiet",
               env={"OUTCORE_COST_CACHE": str(cache)})
    assert f"cannot write the rate cache {cache}" in proc.stderr, proc.stderr
    assert not (tmp_path / "elsewhere").exists()
