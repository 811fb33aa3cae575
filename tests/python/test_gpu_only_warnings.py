"""A keyword only a GPU job uses (gpu_mem, device, gpu_mem_mode, tf32), given to a call that
runs on the CPU, draws one RuntimeWarning naming it, as the CLI warns of --gpu-mem: with
backend="cpu" always, with the default backend when no GPU is usable. The warning points at
the caller's line; a call that gives none of them, or one whose job goes to the GPU, warns of
nothing."""
import warnings

import numpy as np
import pytest

import outcore

A = (np.arange(12).reshape(3, 4) % 2).astype(np.uint8)
F = np.arange(12.0).reshape(3, 4)

CALLS = {
    "gram": lambda **kw: outcore.gram(A, **kw),
    "matmul": lambda **kw: outcore.matmul(F, F, transpose_b=True, **kw),
    "map": lambda **kw: outcore.map("a + 1", a=F, **kw),
}
GPU_ONLY = {
    "gram": [("gpu_mem", "2G"), ("device", 0), ("gpu_mem_mode", "reserve")],
    "matmul": [("gpu_mem", "2G"), ("device", 0), ("tf32", True)],
    "map": [("gpu_mem", "2G")],
}
CASES = [(call, name, value) for call, pairs in GPU_ONLY.items() for name, value in pairs]


def caught(call, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        CALLS[call](**kw)
    return [w for w in seen if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("call,name,value", CASES)
def test_a_gpu_only_keyword_on_the_cpu_backend_warns(call, name, value):
    seen = caught(call, backend="cpu", **{name: value})
    assert len(seen) == 1, [str(w.message) for w in seen]
    text = str(seen[0].message)
    shown = name if value is True else f"{name}={value!r}"
    assert text == f'{shown} has no effect with backend="cpu"', text
    assert seen[0].filename == __file__  # the caller's line, not the binding's


@pytest.mark.parametrize("call,name,value", CASES)
def test_the_default_backend_warns_only_without_a_gpu(call, name, value):
    seen = caught(call, **{name: value})
    if outcore.cuda_device_count() > 0:
        assert seen == [], [str(w.message) for w in seen]
    else:
        assert [str(w.message) for w in seen] == [
            f"{name if value is True else f'{name}={value!r}'} has no effect here: no usable GPU, the job runs on "
            "the CPU"]


@pytest.mark.parametrize("call", sorted(CALLS))
def test_no_gpu_keyword_no_warning(call):
    assert caught(call, backend="cpu") == []
    assert caught(call) == []


def test_each_keyword_given_warns_once():
    seen = caught("matmul", backend="cpu", gpu_mem="1G", device=0, tf32=True)
    assert sorted(str(w.message).split(" ")[0] for w in seen) == ["device=0", "gpu_mem='1G'", "tf32"]


def test_a_context_setting_is_not_the_call_s_own():
    """A Context's gpu_mem is a setting for the jobs that can use it, not a keyword of this
    call: no warning when a CPU job runs with it."""
    with outcore.Context(gpu_mem="2G") as ctx:
        assert caught("matmul", backend="cpu", context=ctx) == []


@pytest.mark.parametrize("off", [False, 0, np.False_])
def test_a_flag_left_off_is_not_given(off):
    assert caught("matmul", backend="cpu", tf32=off) == []


@pytest.mark.parametrize("call,kw", [("map", dict(gpu_mem="bogus")), ("matmul", dict(gpu_mem="bogus")),
                                     ("matmul", dict(device=-1)), ("gram", dict(gpu_mem="bogus")),
                                     ("gram", dict(device=-1))])
def test_a_bad_value_is_refused_without_a_warning_first(call, kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(outcore.InputError):
            CALLS[call](backend="cpu", **kw)
    assert [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)] == []
