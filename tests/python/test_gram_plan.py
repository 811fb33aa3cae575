"""gram's tile=, gpu_mem_mode= and plan=, the CLI's --tile, --gpu-mem-mode and --plan: the
same limits, the options reaching the library, and the plan of `outcore gram --plan` returned
without running the job (explain(plan=True): the plan, then the prediction)."""
import json
import os
import subprocess

import numpy as np
import pytest

import outcore
from outcore import _gram, _lib


@pytest.fixture(autouse=True)
def no_rate_cache(monkeypatch):
    monkeypatch.setenv("OUTCORE_COST_CACHE", "off")


def matrix(rows=500, cols=300, seed=0):
    return np.random.default_rng(seed).random((rows, cols)) < 0.1


def cli():
    path = os.environ.get("OUTCORE_BIN")
    if not path:
        pytest.skip("OUTCORE_BIN is not set")
    return path


def without_budget(text):
    """A plan's lines but the host budget's, which follows the memory available at each call."""
    return [line for line in text.splitlines() if not line.lstrip().startswith("host")]


def test_plan_is_the_clis_and_runs_nothing(tmp_path):
    a = matrix()
    np.save(tmp_path / "a.npy", a)
    args = [cli(), "gram", str(tmp_path / "a.npy"), "--plan", "--backend", "cpu", "--threads", "2", "--tile", "64"]
    want = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    got = outcore.gram(a, backend="cpu", threads=2, tile=64, plan=True)
    assert isinstance(got, str) and without_budget(got) == without_budget(want)
    assert "64 x 64 rows: 36 tiles (upper triangle)" in got
    # A path input, as the CLI reads it.
    assert without_budget(outcore.gram(tmp_path / "a.npy", backend="cpu", threads=2, tile=64, plan=True)) == \
        without_budget(want)
    # Nothing runs: no output file, the out array untouched, progress never called, stats left.
    calls, stats = [], {}
    out = np.full((500, 500), 7, np.int32)
    outcore.gram(a, out=out, plan=True, progress=lambda done, total: calls.append(done), stats=stats)
    assert (out == 7).all() and calls == [] and stats == {}
    assert outcore.gram(a, out=tmp_path / "c.npy", plan=True).startswith("plan for ")
    assert sorted(os.listdir(tmp_path)) == ["a.npy"]
    # Checked as the job checks it: an out array of another shape is refused.
    with pytest.raises(outcore.InputError, match="out has shape"):
        outcore.gram(a, out=np.zeros((3, 3), np.int32), plan=True)


def test_plan_of_a_selection_and_on_a_context():
    a = matrix()
    assert "tiles" in outcore.gram(a, metric="jaccard", topk=3, backend="cpu", plan=True)
    sparse = outcore.gram(a, algorithm="sparse", backend="cpu", plan=True)
    assert sparse.startswith("plan for cpu (sparse algorithm")
    with outcore.Context(backend="cpu", threads=1) as ctx:
        text = ctx.gram(a, tile=100, plan=True)
    assert "100 x 100 rows: 15 tiles" in text and "threads  1 workers" in text


def test_tile_reaches_the_job():
    a = matrix(300, 200, seed=1)
    want = outcore.gram(a, backend="cpu")
    for tile in (7, 64, 10**6):
        stats = {}
        assert np.array_equal(outcore.gram(a, backend="cpu", threads=2, tile=tile, stats=stats), want)
        # threads run at most one per tile: a tile past the matrix is one tile, one thread
        assert stats["threads"] == (1 if tile >= 300 else 2), (tile, stats)
    assert "300 x 300 rows: 1 tiles" in outcore.gram(a, backend="cpu", tile=10**6, plan=True)


class Recording:
    """The library, with each oc_gram call's options recorded."""

    def __init__(self, real):
        self.real, self.seen = real, []

    def __getattr__(self, name):
        return getattr(self.real, name)

    def oc_gram(self, ctx, a, b, opts, out, stats):
        o = opts._obj
        self.seen.append((o.tile, o.gpu_mem_mode))
        return self.real.oc_gram(ctx, a, b, opts, out, stats)


# gpu_mem_mode on a CPU job: the warning that it has no effect is test_gpu_only_warnings.py's.
@pytest.mark.filterwarnings("ignore:gpu_mem_mode=.* has no effect:RuntimeWarning")
def test_tile_and_gpu_mem_mode_reach_the_library(monkeypatch):
    recording = Recording(_gram.lib)
    monkeypatch.setattr(_gram, "lib", recording)
    a = matrix(40, 64)
    outcore.gram(a, backend="cpu")
    outcore.gram(a, backend="cpu", tile=16, gpu_mem_mode="reserve")
    outcore.gram(a, backend="cpu", gpu_mem_mode="grow")
    assert recording.seen == [(0, 0), (16, 1), (0, 0)]


@pytest.mark.parametrize("kwargs, message", [
    (dict(tile=0), "tile must be at least 1; got 0"),
    (dict(tile=-5), "tile must be at least 1; got -5"),
    (dict(tile=2.0), "tile must be an integer; got 2.0"),
    (dict(tile=True), "tile must be an integer, not a bool"),
    (dict(tile=2**63), "tile=9223372036854775808: at most 9223372036854775807"),
    (dict(gpu_mem_mode="Reserve"), "unknown gpu_mem_mode 'Reserve': expected one of grow, reserve"),
    (dict(gpu_mem_mode=None), "gpu_mem_mode must be a string, one of grow, reserve; got None"),
])
def test_bad_values_are_refused(kwargs, message):
    a = matrix(4, 8)
    for call in (outcore.gram, outcore.explain):
        with pytest.raises(outcore.InputError) as err:
            call(a, **kwargs)
        assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize("value", ["yes", 2, "JSON", None])
def test_bad_plans_are_refused_naming_what_each_call_takes(value):
    """gram takes a flag or "json"; explain, whose answer is text, a flag."""
    a = matrix(4, 8)
    with pytest.raises(outcore.InputError) as err:
        outcore.gram(a, plan=value)
    assert str(err.value) == f'plan must be True, False or "json"; got {value!r}'
    for explained in (value, "json"):
        with pytest.raises(outcore.InputError) as err:
            outcore.explain(a, plan=explained)
        assert str(err.value) == f"plan must be True or False; got {explained!r}"


# gpu_mem_mode on a CPU job: the warning that it has no effect is test_gpu_only_warnings.py's.
@pytest.mark.filterwarnings("ignore:gpu_mem_mode=.* has no effect:RuntimeWarning")
def test_the_clis_limits_and_names(tmp_path):
    """What the CLI takes, the binding takes, and what it refuses, the binding refuses."""
    np.save(tmp_path / "a.npy", matrix(4, 8))
    base = [cli(), "gram", str(tmp_path / "a.npy"), "--plan", "--backend", "cpu", "-q"]
    modes = _lib.names(_lib.lib.oc_gpu_mem_mode_name)
    for mode in modes:
        assert subprocess.run(base + ["--gpu-mem-mode", mode], capture_output=True).returncode == 0
        outcore.gram(tmp_path / "a.npy", backend="cpu", gpu_mem_mode=mode, plan=True)
    bad = subprocess.run(base + ["--gpu-mem-mode", "pin"], capture_output=True, text=True)
    assert bad.returncode != 0 and "expected " + " or ".join(modes) in bad.stderr
    with pytest.raises(outcore.InputError, match="expected one of " + ", ".join(modes) + "$"):
        outcore.gram(tmp_path / "a.npy", backend="cpu", gpu_mem_mode="pin", plan=True)
    assert subprocess.run(base + ["--tile", "0"], capture_output=True).returncode != 0
    planned = json.loads(subprocess.run(base + ["--tile", "1", "--json"], capture_output=True, text=True,
                                        check=True).stdout)
    assert planned["tile"] == 1
    assert "1 x 1 rows" in outcore.gram(tmp_path / "a.npy", backend="cpu", tile=1, plan=True)


def test_explain_with_plan_is_the_plan_then_the_prediction():
    a = matrix()
    plan = outcore.gram(a, backend="cpu", tile=128, plan=True)
    both = outcore.explain(a, backend="cpu", tile=128, plan=True)
    alone = outcore.explain(a, backend="cpu", tile=128)
    assert without_budget(both) == without_budget(plan) + alone.splitlines()


def test_plan_json_is_the_clis_object(tmp_path):
    """plan="json" returns the object of `outcore gram --plan --json` as a dict (the host
    budget, which follows the memory available at each call, given); another string is
    refused, and explain(plan=...) takes only a flag."""
    np.save(tmp_path / "a.npy", matrix())
    args = [cli(), "gram", str(tmp_path / "a.npy"), "--plan", "--json", "--backend", "cpu", "--threads", "2",
            "--tile", "64", "--host-mem", "1G"]
    want = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    got = outcore.gram(tmp_path / "a.npy", backend="cpu", threads=2, tile=64, host_mem="1G", plan="json")
    assert got == want
    assert got["tile"] == 64 and got["tiles"] == 36
    assert outcore.gram(matrix(), backend="cpu", threads=2, tile=64, host_mem="1G", plan="json") == want
    for bad in ("JSON", "text", ""):
        with pytest.raises(outcore.InputError, match='plan must be True, False or "json"'):
            outcore.gram(matrix(), plan=bad)
    with pytest.raises(outcore.InputError, match="plan must be True or False"):
        outcore.explain(matrix(), plan="json")
    assert sorted(os.listdir(tmp_path)) == ["a.npy"]
