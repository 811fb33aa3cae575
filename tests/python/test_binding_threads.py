"""The Python binding and the caller's threads and signals: Ctrl-C and an exception in a progress
callback cancel a running job and leave no file, progress reaches its total, other Python
threads run while a job does (the GIL is released), from the main thread or another.

Run as test_binding.py is (its docstring says how).
"""
import os
import signal
import threading
import time

import numpy as np
import pytest

import outcore
from gram_refs import exact, random01, rng  # noqa: F401 (rng: a fixture)


def child_exits_0(pid, seconds, late):
    """Waits up to `seconds` for forked child pid and asserts it exited with status 0; a child
    still running then is killed and the test fails with `late`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(late)


def big_packed_job(rng, n, m):
    return rng.integers(0, 256, size=(n, m // 8), dtype=np.uint8)


def test_ctrl_c_cancels_the_running_job_and_leaves_no_file(tmp_path, rng):
    # The interrupt is sent from inside the job (its first progress report), so the job is
    # known to be running when it arrives, whatever the machine's speed. The job is far too
    # large to finish in the moments the cancel takes: about 4e12 bit multiply-adds on one thread.
    n, m = 8000, 131072
    packed = big_packed_job(rng, n, m)
    out = tmp_path / "c.npy"
    handled = threading.Event()
    reports = []

    def on_sigint(signum, frame):
        handled.set()
        raise KeyboardInterrupt

    def progress(done, total):
        reports.append((done, total))
        if len(reports) == 1:
            os.kill(os.getpid(), signal.SIGINT)
            # Held here until the main thread has taken the interrupt: the job cannot end first.
            assert handled.wait(120), "SIGINT never reached the main thread"

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        with pytest.raises(KeyboardInterrupt):
            outcore.gram(packed, bits=m, backend="cpu", threads=1, out=out, progress=progress)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert handled.is_set()
    first_done, total = reports[0]
    assert first_done < total, "the job was already complete at its first progress report"
    assert max(done for done, _ in reports) < total, "the job ran to the end despite the interrupt"
    assert list(tmp_path.iterdir()) == [], "a cancelled job left files behind"
    # The library is left in a clean state: the next job runs normally.
    small = random01(rng, 20, 70)
    assert np.array_equal(outcore.gram(small), exact(small))


@pytest.mark.parametrize("raised", [SystemExit, TimeoutError])
def test_another_exception_from_a_signal_handler_cancels_the_job_first(tmp_path, rng, raised):
    # A SIGTERM handler that calls sys.exit (SystemExit), or a SIGALRM one that raises
    # TimeoutError, interrupts the wait as Ctrl-C does: the job is cancelled and the exception
    # raised once the library has stopped. Raised at once, it let the context be freed under
    # the running job (a use after free) and the job write its file after the call had failed.
    n, m = 8000, 131072
    packed = big_packed_job(rng, n, m)
    out = tmp_path / "c.npy"
    handled = threading.Event()
    reports = []

    def on_signal(signum, frame):
        handled.set()
        raise raised("from the handler")

    def progress(done, total):
        reports.append((done, total))
        if len(reports) == 1:
            os.kill(os.getpid(), signal.SIGUSR1)
            assert handled.wait(120), "the signal never reached the main thread"

    previous = signal.signal(signal.SIGUSR1, on_signal)
    try:
        with pytest.raises(raised, match="from the handler"):
            outcore.gram(packed, bits=m, backend="cpu", threads=1, out=out, progress=progress)
        # The job has stopped before the exception came: no file now, and none later.
        assert list(tmp_path.iterdir()) == [], "the job's files were still there when the call raised"
        time.sleep(0.5)
        assert list(tmp_path.iterdir()) == [], "the job went on after the call raised"
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert max(done for done, _ in reports) < reports[0][1], "the job ran to the end despite the signal"
    small = random01(rng, 20, 70)
    assert np.array_equal(outcore.gram(small), exact(small))


def test_ctrl_c_while_a_float64_array_is_read(rng):
    """Ctrl-C while a float64 array is converted to bits, before the job starts, raises
    KeyboardInterrupt within moments, not once the whole array is read: the conversion is a
    job that the cancel stops. The array is zero pages (read, never resident), so its
    gigabytes cost no memory; plan=True reads it as gram does and stops there, which times
    the whole read on this machine."""
    X = np.zeros((16384, 16384))
    start = time.monotonic()
    outcore.gram(X, topk=1, plan=True)
    whole = time.monotonic() - start
    if whole < 0.4:
        pytest.skip(f"the whole read takes {whole:.2f} s: too short to tell an early stop")
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(whole / 4, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            outcore.gram(X, topk=1)
        raised = time.monotonic()
    finally:
        timer.cancel()
        timer.join()
    assert sent and raised - sent[0] < whole / 2, (raised - sent[0], whole)
    # The context reads again: the cancel does not outlive the call.
    small = random01(rng, 20, 70)
    assert np.array_equal(outcore.gram(small), exact(small))


def test_an_exception_in_progress_cancels_the_job(tmp_path, rng):
    n, m = 8000, 131072
    packed = big_packed_job(rng, n, m)
    reports = []

    class Stop(Exception):
        pass

    def progress(done, total):
        reports.append((done, total))
        raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        outcore.gram(packed, bits=m, backend="cpu", threads=1, out=tmp_path / "c.npy", progress=progress)
    assert len(reports) == 1 and reports[0][0] < reports[0][1]
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(outcore.InputError, match="progress"):
        outcore.gram(random01(rng, 4, 8), progress=3)


def test_progress_reaches_the_total(rng):
    a = random01(rng, 300, 4000)
    reports = []
    got = outcore.gram(a, backend="cpu", progress=lambda done, total: reports.append((done, total)))
    assert np.array_equal(got, exact(a))
    assert reports and reports[-1][0] == reports[-1][1] > 0
    assert all(x[0] <= y[0] for x, y in zip(reports, reports[1:])), "progress went backwards"
    # once at the end with done == total (docs/python.md), for a job of one report too
    for job in (a, a[:200]):
        reports.clear()
        outcore.gram(job, backend="cpu", progress=lambda done, total: reports.append((done, total)))
        assert [r for r in reports if r[0] == r[1]] == [reports[-1]], reports


def timed_job_with_ticker(job):
    """Runs job() while another Python thread ticks every millisecond; returns the job's
    wall time and the longest pause between ticks inside it."""
    ticks, stop = [], threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    t0 = time.monotonic()
    try:
        job()
    finally:
        t1 = time.monotonic()
        stop.set()
        counter.join()
    inside = [t0] + [t for t in ticks if t0 <= t <= t1] + [t1]
    return t1 - t0, max(b - a for a, b in zip(inside, inside[1:]))


@pytest.mark.parametrize("caller", ["main thread", "other thread"])
def test_other_threads_run_during_a_job(rng, caller):
    # The job is grown until it lasts long enough to tell, on whatever machine runs the test:
    # holding the GIL in oc_gram would stall the ticker for nearly the whole job.
    m, n = 65536, 1000
    for _ in range(10):  # at most about 70000 rows (560 MB)
        packed = big_packed_job(rng, n, m)

        def job():
            if caller == "main thread":
                outcore.gram(packed, bits=m, backend="cpu", threads=1)
            else:
                worker = threading.Thread(target=outcore.gram, args=(packed,), kwargs=dict(bits=m, backend="cpu", threads=1))
                worker.start()
                worker.join()

        seconds, longest_gap = timed_job_with_ticker(job)
        if seconds >= 0.5:
            break
        n = int(n * 1.6)
    else:
        pytest.fail(f"a {n} x {m} job still took only {seconds:.3f} s")
    # Half the job leaves room for a loaded machine's scheduling delays.
    assert longest_gap < 0.5 * seconds, f"another thread stalled {longest_gap:.2f} s of a {seconds:.2f} s job"


def long_product_operand(rng):
    # A product over outcore._matmul._SHORT_HOST multiply-adds, which the worker runs.
    n = int(round(outcore._matmul._SHORT_HOST ** (1 / 3))) + 8
    return rng.standard_normal((n, n))


def test_main_thread_calls_share_one_worker_thread(rng):
    # Every kind of call from the main thread runs on the same worker, which outlives a call
    # that raised: gram, map, matmul, a refused product, then gram again.
    a = rng.integers(0, 2, size=(20, 30), dtype=np.uint8)
    x = rng.standard_normal((7, 5))
    big = long_product_operand(rng)
    np.testing.assert_array_equal(outcore.gram(a, backend="cpu"), exact(a))
    np.testing.assert_allclose(outcore.map("x * 2", backend="cpu", x=x), x * 2)
    np.testing.assert_allclose(outcore.matmul(big, big.T, backend="cpu"), big @ big.T, rtol=1e-9, atol=1e-9)
    with pytest.raises(outcore.InputError):
        outcore.matmul(x, x, backend="cpu")  # 7 x 5 times 7 x 5: inner dimensions differ
    np.testing.assert_array_equal(outcore.gram(a, backend="cpu"), exact(a))
    workers = [t for t in threading.enumerate() if t.name == "outcore-calls"]
    assert len(workers) == 1 and workers[0].daemon, [t.name for t in threading.enumerate()]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_its_own_worker(rng):
    # The parent's worker thread does not exist in a child: the child's first call must start
    # its own rather than wait for a thread that is not there.
    x = long_product_operand(rng)
    outcore.matmul(x, x.T, backend="cpu")  # the parent's worker is running
    assert [t for t in threading.enumerate() if t.name == "outcore-calls"]
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only on the right product, within the parent's timeout
        code = 1
        try:
            code = 0 if np.allclose(outcore.matmul(x, x.T, backend="cpu"), x @ x.T) else 2
        finally:
            os._exit(code)
    child_exits_0(pid, 60, "the forked child's call did not return within 60 s")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("explicit", [False, True])
def test_a_context_busy_at_the_fork_is_closed_in_the_child(rng, explicit):
    # Another thread's call holds a Context while the process forks: that call has no thread in
    # the child, so the child's calls on an explicit Context are refused at once (they waited
    # for ever) and the default is made again (the child's exit waited 5 s for it).
    n, m = 8000, 131072
    packed = big_packed_job(rng, n, m)
    ctx = outcore.Context(backend="cpu", threads=1) if explicit else None
    running, stop = threading.Event(), threading.Event()

    def progress(done, total):
        running.set()
        if stop.is_set():
            raise RuntimeError("stopped")

    def call():
        try:
            outcore.gram(packed, bits=m, backend="cpu", threads=1, progress=progress, context=ctx)
        except RuntimeError:
            pass

    busy = threading.Thread(target=call, daemon=True)
    busy.start()
    assert running.wait(60), "the job in the thread did not start"
    small = random01(rng, 20, 70)
    pid = os.fork()
    if pid == 0:  # the child: 0 when the busy Context is refused (or the default works) at once
        code = 1
        try:
            if explicit:
                try:
                    outcore.gram(small, context=ctx)
                    code = 2
                except outcore.InputError as exc:
                    code = 0 if "forked" in str(exc) else 3
            else:
                code = 0 if np.array_equal(outcore.gram(small), exact(small)) else 2
                began = time.monotonic()
                outcore._context._close_default()  # what the child's exit runs
                if time.monotonic() - began > 2:
                    code = 4
        finally:
            os._exit(code)
    try:
        child_exits_0(pid, 30, "the forked child's call waited for the Context busy at the fork")
    finally:
        stop.set()
        busy.join(60)
        if ctx is not None:
            ctx.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_closes_a_context_another_thread_was_asking():
    """A thread reading a Context's cached memory at the fork held its lock for freeing, which
    the child inherited held: the child's close() waited for ever. Each child closes at once."""
    ctx = outcore.Context(host_mem="1G")
    stop = threading.Event()

    def ask():
        while not stop.is_set():
            ctx.cached_memory_bytes  # noqa: B018 - takes and releases the lock

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    try:
        for _ in range(20):
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
                signal.alarm(5)  # a child that hangs dies of SIGALRM
                ctx.close()
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        stop.set()
        asker.join(10)
        ctx.close()


def test_a_short_product_runs_on_the_calling_thread(rng, monkeypatch):
    # A product of at most _SHORT_HOST multiply-adds of arrays in memory is not handed to the
    # worker, from the main thread too; a longer one, or one written to a file, is.
    handed = []

    def submit(fn, box, done):
        handed.append(fn)
        real_submit(fn, box, done)

    real_submit = outcore._calls._submit
    monkeypatch.setattr(outcore._calls, "_submit", submit)
    n = int(outcore._matmul._SHORT_HOST ** (1 / 3))
    x = rng.standard_normal((n, n))
    np.testing.assert_allclose(outcore.matmul(x, x, backend="cpu"), x @ x, rtol=1e-9, atol=1e-9)
    with pytest.raises(outcore.InputError):
        outcore.matmul(x, x[:3], backend="cpu")  # refused on the calling thread as well
    assert handed == []
    big = long_product_operand(rng)
    np.testing.assert_allclose(outcore.matmul(big, big, backend="cpu"), big @ big, rtol=1e-9, atol=1e-9)
    assert len(handed) == 1
