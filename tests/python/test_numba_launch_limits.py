"""On a GPU with numba: the largest block a numba kernel really launches with is the one
outcore.inspect() names, for the dispatcher, for the cubin numba loaded, and for the kernel's
PTX inspected with numba's register cap (--maxrregcount).

For each max_registers the kernel is compiled, the largest block that launches is found by
binary search on launches (a refused launch raises CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701),
and that number is compared with inspect's. Skipped (exit 77 under ctest) without numba or a
usable GPU. Run on a GPU machine:

    OUTCORE_LIBRARY=build-gpu/liboutcore.so PYTHONPATH=python python3 -m pytest -v -rs \
        tests/python/test_numba_launch_limits.py
"""
import numpy as np
import pytest

import outcore

from numba_probe import numba_cuda as _probe

numba_cuda, WHY_NOT = _probe()

# Skipped tests (not a skipped module), so that the run exits 77 under ctest.
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")

LIVE = 160  # values live at once: more than any cap below, so each cap decides the count
CAPS = [32, 64, 96, 128, 168, 255]
SIGNATURE = "void(float32[::1], float32[::1])"
LAUNCH_OUT_OF_RESOURCES = 701


def pressure_function():
    """A Python kernel body that keeps LIVE values live: v_k = in[t*LIVE + k], two rounds of
    v_k = v_k * v_(k+1) + v_(k+7), then a weighted sum. Written out, since numba keeps local
    arrays in memory rather than in registers."""
    n = LIVE
    lines = ["def pressure(inp, out):", "    t = cuda.grid(1)"]
    lines += [f"    v{k} = inp[t * {n} + {k}]" for k in range(n)]
    for _ in range(2):
        lines += [f"    v{k} = v{k} * v{(k + 1) % n} + v{(k + 7) % n}" for k in range(n)]
    lines.append("    out[t] = " + " + ".join(f"v{k} * {k + 1}.0" for k in range(n)))
    scope = {"cuda": numba_cuda}
    exec("\n".join(lines), scope)
    return scope["pressure"]


def is_out_of_resources(error):
    code = getattr(error, "code", None)
    try:
        if code is not None and int(code) == LAUNCH_OUT_OF_RESOURCES:
            return True
    except (TypeError, ValueError):
        pass
    return "LAUNCH_OUT_OF_RESOURCES" in str(error)


def launches(kernel, block, inp, out):
    try:
        kernel[1, block](inp, out)
        numba_cuda.synchronize()
        return True
    except Exception as error:  # numba's CudaAPIError (its module moved between versions)
        if is_out_of_resources(error):
            return False
        raise


def largest_launching_block(kernel):
    """Binary search on real launches over 1..1024 threads (a block that launches has every
    smaller block launch too)."""
    inp = numba_cuda.to_device(np.ones(1024 * LIVE, np.float32))
    out = numba_cuda.device_array(1024, np.float32)
    assert launches(kernel, 1, inp, out)
    low, high = 1, 1024  # low launches; the answer lies in [low, high]
    while low < high:
        mid = (low + high + 1) // 2
        if launches(kernel, mid, inp, out):
            low = mid
        else:
            high = mid - 1
    return low


@pytest.fixture(scope="module")
def measured():
    """{cap: (dispatcher, largest block that launched)}."""
    out = {}
    pressure = pressure_function()
    for cap in CAPS:
        kernel = numba_cuda.jit(SIGNATURE, max_registers=cap)(pressure)
        out[cap] = kernel, largest_launching_block(kernel)
    return out


def only_kernel(report):
    (k,) = report["kernels"]
    return k


@pytest.mark.parametrize("cap", CAPS)
def test_inspect_names_the_block_that_launches(measured, cap, tmp_path):
    kernel, largest = measured[cap]
    ((signature, overload),) = kernel.overloads.items()

    # The dispatcher: numba's own cubin for this device.
    k = only_kernel(outcore.inspect(kernel, block=largest))
    assert k["registers"] <= cap
    assert k["max_threads_per_block"] == largest, (cap, k["registers"])
    assert k["verdict"]["fits"] is True
    if largest < 1024:
        over = only_kernel(outcore.inspect(kernel, block=largest + 1))
        assert over["verdict"]["fits"] is False and over["verdict"]["largest_block"] == largest

    # The same cubin as a file, read by the driver and from its attributes alone.
    cubin = overload.library.get_cubin()
    path = tmp_path / f"pressure{cap}.cubin"
    path.write_bytes(cubin if isinstance(cubin, (bytes, bytearray)) else bytes(cubin.code))
    for use_gpu in (True, False):
        from_file = only_kernel(outcore.inspect(path, block=largest, use_gpu=use_gpu))
        assert from_file["registers"] == k["registers"], use_gpu
        assert from_file["max_threads_per_block"] == largest, use_gpu

    # The PTX numba links, compiled with numba's register cap as the linker does.
    ptx = tmp_path / f"pressure{cap}.ptx"
    ptx.write_text(kernel.inspect_asm(signature))
    from_ptx = outcore.inspect(ptx, block=largest, maxrregcount=cap)
    assert from_ptx["jit"]["maxrregcount"] == cap
    assert only_kernel(from_ptx)["max_threads_per_block"] == largest


def test_the_caps_change_the_limit(measured):
    """The kernel really is register-bound: the caps give different launch limits."""
    assert len({largest for _, largest in measured.values()}) > 1
