"""On a GPU with numba: outcore.stream runs numba @cuda.jit kernels on outcore's chunks, in
place (no copies: the kernels write the chunk buffers outcore downloads), over arrays three
times the --gpu-mem budget, and the results equal numpy's. Skipped (exit 77 under ctest)
without numba, without a usable GPU, or where numba cannot compile (numba that does not fit
the installed numpy 2). Run on a GPU machine:

    OUTCORE_LIBRARY=build/liboutcore.so PYTHONPATH=python python3 -m pytest -v -rs \
        tests/python/test_stream_numba.py
"""
import numpy as np
import pytest

import outcore

from numba_probe import numba_cuda

cuda, WHY_NOT = numba_cuda()

if WHY_NOT is None:
    try:
        @cuda.jit
        def axpb(x, y, b, out):
            i, j = cuda.grid(2)
            if i < out.shape[0] and j < out.shape[1]:
                out[i, j] = 2.5 * x[i, j] + y[i, j] * b[j]

        @cuda.jit
        def square_cols(x):
            i, j = cuda.grid(2)
            if i < x.shape[0] and j < x.shape[1]:
                x[i, j] = x[i, j] * x[i, j]

        probe = cuda.to_device(np.ones((2, 2)))
        square_cols[(1, 1), (2, 2)](probe)
        cuda.synchronize()
    except Exception as error:
        WHY_NOT = f"numba cannot compile a kernel in this environment: {type(error).__name__}: {error}"

pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")

BUDGET = 64 << 20


def grid2(shape, block=(16, 16)):
    return tuple((n + b - 1) // b for n, b in zip(shape, block)), block


def test_numba_rows_three_times_the_budget():
    rng = np.random.default_rng(1)
    rows, cols = 1_000_000, 10                     # 80 MB per array, 240 MB in all
    # Small integers as floats: 2.5 * x + y * b is exact whether or not the kernel's
    # multiply-add is fused (numba's NVVM fuses it, numpy does not), so bytes can be compared.
    x, y = rng.integers(-1000, 1000, (rows, cols)).astype(np.float64), rng.integers(-1000, 1000, (rows, cols)).astype(np.float64)
    b = rng.integers(-1000, 1000, cols).astype(np.float64)
    launched = []

    def launch(chunk):
        s = cuda.external_stream(chunk.stream)
        grid, block = grid2(chunk.out.shape)
        axpb[grid, block, s](chunk.x, chunk.y, chunk.b, chunk.out)
        launched.append(chunk.rows)

    got, stats = outcore.stream(launch, inputs={"x": x, "y": y}, side={"b": b},
                                outputs={"out": ((rows, cols), np.float64)}, gpu_mem=BUDGET, return_stats=True)
    np.testing.assert_array_equal(got["out"], 2.5 * x + y * b)
    assert 3 * x.nbytes >= 3 * BUDGET  # x, y and out: each more than the budget
    assert stats["chunks"] == len(launched) > 3 and sum(launched) == rows
    assert stats["dev_peak_bytes"] <= BUDGET


def test_numba_inner_axis_in_place(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.random((4, 3_000_000))                 # 96 MB, chunked along axis 1, changed in place
    want = x * x
    path = tmp_path / "x.npy"
    np.save(path, x)

    def launch(chunk):
        grid, block = grid2(chunk.x.shape)
        square_cols[grid, block, cuda.external_stream(chunk.stream)](chunk.x)

    stats = {}
    got = outcore.stream(launch, inout={"x": x}, axis=1, gpu_mem=BUDGET // 2, stats=stats)
    np.testing.assert_array_equal(got["x"], want)
    # stats= is filled as return_stats=True reports: the chunks the job ran, within the budget
    assert stats["chunks"] > 1 and stats["dev_peak_bytes"] <= BUDGET // 2 and stats["seconds"] > 0, stats

    # The same from a .npy file to a .npy file, through a copy kernel written with numba.
    @cuda.jit
    def copy_square(src, dst):
        i, j = cuda.grid(2)
        if i < dst.shape[0] and j < dst.shape[1]:
            dst[i, j] = src[i, j] * src[i, j]

    def launch2(chunk):
        grid, block = grid2(chunk.y.shape)
        copy_square[grid, block, cuda.external_stream(chunk.stream)](chunk.x, chunk.y)

    out = tmp_path / "y.npy"
    outcore.stream(launch2, inputs={"x": path}, outputs={"y": (out, want.shape, np.float64)}, axis=1,
                   gpu_mem=BUDGET // 2)
    np.testing.assert_array_equal(np.load(out), want)


def test_numba_result_accumulates_over_chunks():
    @cuda.jit
    def count_and_sum(x, acc):
        i = cuda.grid(1)
        if i < x.shape[0]:
            cuda.atomic.add(acc, 0, 1.0)
            cuda.atomic.add(acc, 1, x[i])

    x = np.arange(5_000_000, dtype=np.float64) % 1000  # integers: every order of sums is exact
    acc = np.zeros(2)

    def launch(chunk):
        count_and_sum[(chunk.rows + 255) // 256, 256, cuda.external_stream(chunk.stream)](chunk.x, chunk.acc)

    got = outcore.stream(launch, inputs={"x": x}, result={"acc": acc}, gpu_mem=BUDGET // 4)
    assert got["acc"][0] == x.size and got["acc"][1] == x.sum()


def test_exception_in_fn_stops_the_job():
    def launch(chunk):
        if chunk.index == 1:
            raise ValueError("boom in chunk 1")

    with pytest.raises(ValueError, match="boom in chunk 1"):
        outcore.stream(launch, outputs={"y": ((1_000_000,), np.float64)}, chunk_rows=100_000)
