"""outcore.Context and the default context: one library context reused across calls.

Reuse is observed through the count of library contexts the binding has created
(outcore._context._created) and, with a GPU, through the pinned staging a context keeps
between its jobs (Context.cached_memory_bytes, the library's oc_context_cached_memory_bytes).
Results are checked against numpy.
"""
import subprocess
import sys
import threading

import numpy as np
import pytest

import outcore
from outcore import _context

HAVE_GPU = outcore.cuda_device_count() > 0
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="no usable CUDA device")


@pytest.fixture
def rng():
    return np.random.default_rng(20261124)


def random01(rng, n, m, density=0.3):
    return (rng.random((n, m)) < density).astype(np.uint8)


def counts(a, b=None):
    a = np.asarray(a, np.int64)
    return (a @ (a if b is None else np.asarray(b, np.int64)).T).astype(np.int32)


def test_calls_reuse_the_default_context(rng):
    a = random01(rng, 60, 300)
    outcore.gram(a)  # the default context exists from here on
    before = _context._created
    for _ in range(3):
        assert np.array_equal(outcore.gram(a), counts(a))
        assert np.array_equal(outcore.gram(np.packbits(a, axis=1), bits=a.shape[1]), counts(a))
    assert _context._created == before, "a call created a library context of its own"


def test_context_calls_reuse_its_library_context(rng):
    a, b = random01(rng, 40, 200), random01(rng, 30, 200)
    before = _context._created
    with outcore.Context(backend="cpu", threads=2) as ctx:
        assert _context._created == before + 1
        assert np.array_equal(ctx.gram(a), counts(a))
        assert np.array_equal(outcore.gram(a, b, context=ctx), counts(a, b))
        J = ctx.gram(a, metric="jaccard")
        assert J.dtype == np.float32 and J.shape == (40, 40)
    assert _context._created == before + 1
    assert ctx.closed


def test_context_settings_are_the_defaults_of_its_calls(rng):
    a = random01(rng, 20, 100)
    ctx = outcore.Context(backend="cuda" if not HAVE_GPU else "cpu", threads=1, gpu_mem="1G", host_mem="256M")
    try:
        assert ctx.options() == dict(backend=ctx.settings["backend"], device=None, gpu_mem="1G", host_mem="256M",
                                     threads=1)
        # What a call passes wins over the Context's setting, the rest stays.
        assert ctx.options(gpu_mem="2G", backend="auto")["gpu_mem"] == "2G"
        assert ctx.options(gpu_mem="2G")["host_mem"] == "256M"
        if not HAVE_GPU:
            # The Context's backend reaches the library: CUDA is refused on this machine...
            with pytest.raises(outcore.UnsupportedError):
                ctx.gram(a)
            # ...and a call's own backend overrides it.
            assert np.array_equal(ctx.gram(a, backend="cpu"), counts(a))
        else:
            assert np.array_equal(ctx.gram(a), counts(a))
    finally:
        ctx.close()


def test_context_settings_reach_matmul_and_map(rng, tmp_path):
    """matmul and map on a Context use its settings where the call gives none, as gram does:
    a budget too small for any plan is refused, a call's own budget wins; map's explanation
    names the Context's backend and threads."""
    x = rng.standard_normal((300, 300))
    np.save(tmp_path / "x.npy", x)
    with outcore.Context(backend="cpu", host_mem=1, threads=1) as ctx:
        with pytest.raises(outcore.InputError, match="budget"):
            outcore.matmul(tmp_path / "x.npy", tmp_path / "x.npy", context=ctx)
        c = outcore.matmul(tmp_path / "x.npy", tmp_path / "x.npy", host_mem="64M", context=ctx)
        assert np.allclose(c, x @ x)
        text = outcore.map("a + 1", a=x, explain=True, context=ctx)
        assert "cpu with 1 thread" in text and "(asked)" in text, text
        assert np.array_equal(outcore.map("a + 1", a=x, context=ctx), x + 1)
    if not HAVE_GPU:
        with outcore.Context(backend="cuda") as ctx:
            for call in (lambda: outcore.matmul(x, x, context=ctx), lambda: outcore.map("a + 1", a=x, context=ctx)):
                with pytest.raises(outcore.UnsupportedError):
                    call()


@pytest.mark.parametrize("devices", ["", " ", [""]])
def test_an_empty_device_list_is_refused(devices):
    """An empty list is a usage error, as the CLI's --devices "" is: the library reads "" as no
    list (one device, or the CPU), which would run the job where the caller did not ask."""
    for call in (lambda: outcore.matmul(np.ones((3, 3)), np.ones((3, 3)), devices=devices),
                 lambda: outcore.gram(np.ones((4, 8), bool), devices=devices)):
        with pytest.raises(outcore.InputError, match="an empty list"):
            call()


def test_a_percentage_of_no_byte_is_refused(tmp_path):
    """host_mem="1e-12%" is less than a byte: refused, not read as 0 (the library's default)."""
    np.save(tmp_path / "x.npy", np.ones((4, 4)))
    with pytest.raises(outcore.InputError, match="less than a byte"):
        outcore.Context(host_mem="1e-12%")
    with pytest.raises(outcore.InputError, match="less than a byte"):
        outcore.matmul(tmp_path / "x.npy", tmp_path / "x.npy", host_mem="1e-12%")


@pytest.mark.parametrize("blocking, ok", [(True, True), (np.False_, True), (0, True), ("no", False),
                                          (None, False), (2, False)])
def test_close_takes_a_flag(blocking, ok):
    ctx = outcore.Context()
    if ok:
        assert ctx.close(blocking=blocking) and ctx.closed
    else:
        with pytest.raises(outcore.InputError, match="blocking must be True or False"):
            ctx.close(blocking=blocking)
        ctx.close()


@needs_gpu
def test_context_device_and_gpu_mem_reach_the_library(rng):
    a = random01(rng, 300, 4096)
    with outcore.Context(backend="cuda", device=outcore.cuda_device_count()) as ctx:
        with pytest.raises(outcore.InputError, match="does not exist"):
            ctx.gram(a)
    # Far too small for any plan: a budget the caller chose is a bad argument then.
    with outcore.Context(backend="cuda", gpu_mem=4096) as ctx:
        with pytest.raises(outcore.InputError, match="the smallest plan"):
            ctx.gram(a)
        assert np.array_equal(ctx.gram(a, gpu_mem="90%"), counts(a))


@pytest.mark.parametrize("settings, message", [
    (dict(backend="tpu"), "unknown backend"),
    (dict(device=-1), "device must be at least 0"),
    (dict(gpu_mem="lots"), "gpu_mem 'lots'"),
    (dict(host_mem="150%"), "a percentage must be in"),
    (dict(host_mem=0), "host_mem must be a positive number of bytes"),
    (dict(threads=0), "threads must be at least 1"),
])
def test_bad_context_settings_are_refused_when_created(settings, message):
    before = _context._created
    with pytest.raises(outcore.InputError, match=message):
        outcore.Context(**settings)
    assert _context._created == before


def test_a_closed_context_is_refused(rng):
    a = random01(rng, 10, 50)
    ctx = outcore.Context()
    assert np.array_equal(ctx.gram(a), counts(a))
    ctx.close()
    ctx.close()  # a second close does nothing
    assert ctx.closed and "closed" in repr(ctx)
    with pytest.raises(outcore.InputError, match="Context is closed"):
        ctx.gram(a)
    with pytest.raises(outcore.InputError, match="Context is closed"):
        outcore.gram(a, context=ctx)
    assert ctx.cached_memory_bytes == 0
    ctx.release_cached_memory()  # nothing to release: no error
    with pytest.raises(outcore.InputError, match="context must be an outcore.Context"):
        outcore.gram(a, context="default")


def test_two_threads_share_the_default_context_safely(rng):
    # Thread one's job is held inside the library (in its first progress report) until thread
    # two's call has returned: the two calls overlap for certain, and thread two, finding the
    # default context busy, runs on a context of its own instead of waiting or sharing it.
    a, b = random01(rng, 400, 3000), random01(rng, 150, 2000)
    outcore.gram(b)  # the default context exists
    first_in_job, second_done = threading.Event(), threading.Event()
    results, errors = {}, []

    def first_progress(done, total):
        first_in_job.set()
        assert second_done.wait(120), "the second call never returned"

    def run(key, fn):
        try:
            results[key] = fn()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def second():
        try:
            assert first_in_job.wait(120), "the first call never reported progress"
            run("second", lambda: outcore.gram(b, metric="hamming"))
        finally:
            second_done.set()

    before = _context._created
    t1 = threading.Thread(target=run, args=("first", lambda: outcore.gram(a, progress=first_progress)))
    t2 = threading.Thread(target=second)
    t1.start()
    t2.start()
    t1.join(300)
    t2.join(300)
    assert not errors, errors
    assert np.array_equal(results["first"], counts(a))
    sizes = b.astype(np.int64).sum(1)
    assert np.array_equal(results["second"], (sizes[:, None] + sizes[None, :] - 2 * counts(b)).astype(np.int32))
    assert _context._created == before + 1, "the overlapping call should have had a context of its own"
    # The default context is free again: the next call reuses it.
    assert np.array_equal(outcore.gram(b), counts(b))
    assert _context._created == before + 1


def test_threads_sharing_a_context_take_turns(rng):
    inputs = [random01(rng, 50 + 10 * i, 700) for i in range(4)]
    results, errors = {}, []
    before = _context._created
    with outcore.Context(backend="cpu") as ctx:
        def work(i):
            try:
                for _ in range(3):
                    results[i] = ctx.gram(inputs[i])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
    assert not errors, errors
    for i, a in enumerate(inputs):
        assert np.array_equal(results[i], counts(a))
    assert _context._created == before + 1


def test_a_progress_callback_may_call_gram(rng):
    # The callback runs while the default context is busy with the job that calls it.
    a, small = random01(rng, 200, 2000), random01(rng, 12, 40)
    inner = []

    def progress(done, total):
        if not inner:
            inner.append(outcore.gram(small))

    assert np.array_equal(outcore.gram(a, progress=progress), counts(a))
    assert np.array_equal(inner[0], counts(small))


def test_a_cancelled_call_leaves_the_context_usable(rng, tmp_path):
    n, m = 8000, 131072
    packed = rng.integers(0, 256, size=(n, m // 8), dtype=np.uint8)

    class Stop(Exception):
        pass

    def progress(done, total):
        raise Stop()

    small = random01(rng, 30, 90)
    with outcore.Context(backend="cpu", threads=1) as ctx:
        with pytest.raises(Stop):
            ctx.gram(packed, bits=m, out=tmp_path / "c.npy", progress=progress)
        assert list(tmp_path.iterdir()) == []
        assert np.array_equal(ctx.gram(small), counts(small))


def test_release_cached_memory(rng):
    a = random01(rng, 50, 500)
    outcore.gram(a)
    with outcore.Context() as ctx:
        ctx.gram(a)
        outcore.release_cached_memory()  # every live context, the default one and ctx
        assert ctx.cached_memory_bytes == 0
        assert _context.default_context().cached_memory_bytes == 0
        assert np.array_equal(ctx.gram(a), counts(a))
        ctx.release_cached_memory()
        assert ctx.cached_memory_bytes == 0
    assert np.array_equal(outcore.gram(a), counts(a))


@needs_gpu
def test_gpu_staging_is_kept_and_released(rng):
    a = random01(rng, 2000, 8192)
    with outcore.Context(backend="cuda") as ctx:
        assert ctx.cached_memory_bytes == 0
        assert np.array_equal(ctx.gram(a), counts(a))
        kept = ctx.cached_memory_bytes
        assert kept > 0, "a finished GPU job keeps its pinned staging for the context's next one"
        assert np.array_equal(ctx.gram(a), counts(a))
        assert ctx.cached_memory_bytes == kept, "the second job should have taken the same staging back"
        ctx.release_cached_memory()
        assert ctx.cached_memory_bytes == 0
    outcore.gram(a, backend="cuda")
    default = _context.default_context()
    assert default.cached_memory_bytes > 0
    outcore.release_cached_memory()
    assert default.cached_memory_bytes == 0


def test_the_default_context_is_freed_at_exit(tmp_path):
    # The interpreter's exit frees the default context (atexit) with a call just made on it,
    # and with a daemon thread still in a call: neither may crash or hang the exit.
    script = (
        "import threading, numpy as np, outcore\n"
        "a = (np.random.default_rng(1).random((3000, 20000)) < 0.5).astype(np.uint8)\n"
        "assert (outcore.gram(a[:20]) >= 0).all()\n"
        "started = threading.Event()\n"
        "def run():\n"
        "    outcore.gram(a, progress=lambda d, t: started.set())\n"
        "threading.Thread(target=run, daemon=True).start()\n"
        "started.wait(60)\n"
        "print('exiting')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting"
    # The daemon's call was cancelled and ended its thread quietly (SystemExit), not with a
    # traceback that the exit cuts short.
    assert "Traceback" not in done.stderr, done.stderr


def test_close_waits_for_a_cached_memory_query(monkeypatch):
    """cached_memory_bytes and release_cached_memory run beside a job (they do not wait for
    it), but never beside close(): the handle they were given must not be freed under them
    (AddressSanitizer saw a query read the context close() had just freed)."""
    import time
    ctx = outcore.Context()
    order = []
    started = threading.Event()
    real_bytes, real_free = _context.lib.oc_context_cached_memory_bytes, _context.lib.oc_context_free

    def slow_query(handle):
        order.append("query")
        started.set()
        time.sleep(0.3)
        order.append("query done")
        return real_bytes(handle)

    def free(handle):
        order.append("free")
        real_free(handle)

    monkeypatch.setattr(_context.lib, "oc_context_cached_memory_bytes", slow_query)
    monkeypatch.setattr(_context.lib, "oc_context_free", free)
    reader = threading.Thread(target=lambda: ctx.cached_memory_bytes)
    reader.start()
    assert started.wait(10)
    assert ctx.close()
    reader.join()
    assert order == ["query", "query done", "free"], order
    assert ctx.cached_memory_bytes == 0 and ctx.closed


def test_a_budget_per_device_is_each_calls_own(rng):
    """A Context's gpu_mem per device ({0: "1G"}, "0=1G,1=2G") is gram's device by device; matmul
    and map, which take one budget, take the budget of the device they run on (device 0 here,
    the default where the mapping does not name it); matmul on a list takes the mapping's one
    budget, and refuses budgets that differ. They used to refuse every call on such a Context."""
    a = rng.standard_normal((6, 5))
    for per_device in ({0: "1G"}, "0=1G,1=2G", {1: "2G"}):
        with outcore.Context(gpu_mem=per_device, backend="cpu") as ctx:
            np.testing.assert_allclose(outcore.matmul(a, context=ctx), a @ a.T)
            np.testing.assert_array_equal(outcore.map("x * 2", x=a, context=ctx), a * 2)
    with outcore.Context(gpu_mem={0: "1G", 1: "2G"}, backend="cuda") as ctx:  # refused before any device is asked
        with pytest.raises(outcore.InputError, match="matmul on a device list takes one budget"):
            outcore.matmul(a, devices=[0, 1], context=ctx)


def test_a_calls_own_budget_per_device_is_refused_by_matmul_and_map(rng):
    """matmul and map take one device budget: a call's own gpu_mem per device is refused, as the
    CLI's --gpu-mem 0=1G of those commands is (it was taken, and {1: "1G"} dropped without a
    word); a Context's is the device's own (above). A closed Context's refusal names no other
    function than the one called."""
    a = rng.standard_normal((6, 5))
    for per_device in ({0: "1G"}, "0=1G,1=2G", {1: "1G"}):
        with pytest.raises(outcore.InputError, match="matmul takes one device budget"):
            outcore.matmul(a, gpu_mem=per_device, backend="cpu")
        with pytest.raises(outcore.InputError, match="map takes one device budget"):
            outcore.map("x * 2", x=a, gpu_mem=per_device, backend="cpu")
    ctx = outcore.Context()
    ctx.close()
    for call in (lambda: outcore.matmul(a, context=ctx), lambda: outcore.map("x * 2", x=a, context=ctx)):
        with pytest.raises(outcore.InputError, match="closed") as exc:
            call()
        assert "gram" not in str(exc.value), exc.value


def test_maps_masked_array_refusal_reads_as_gram_and_matmuls(rng):
    a = np.ma.masked_array(rng.standard_normal(4), mask=[0, 1, 0, 0])
    with pytest.raises(outcore.InputError) as exc:
        outcore.map("a + 1", a=a)
    assert str(exc.value).startswith("a: a masked array with 1 masked value"), exc.value
