"""outcore.empty_pinned: numpy arrays in page-locked host memory. Without CUDA or a GPU it
says so (UnsupportedError) and leaves empty shapes to numpy; on a GPU, map copies such arrays
straight between them and the device, and its results equal numpy's to the bit."""
import numpy as np
import pytest

import outcore

HAVE_GPU = outcore.cuda_device_count() > 0


def test_shapes_and_empty():
    assert outcore.empty_pinned((0, 5)).shape == (0, 5)
    assert outcore.empty_pinned(0, np.int8).dtype == np.int8
    with pytest.raises(ValueError, match="negative"):
        outcore.empty_pinned((3, -1))


@pytest.mark.skipif(HAVE_GPU, reason="a GPU is usable here: test_pinned_map runs instead")
def test_without_gpu():
    with pytest.raises(outcore.UnsupportedError, match="pinned memory: "):
        outcore.empty_pinned((4, 4))


@pytest.mark.skipif(not HAVE_GPU, reason="needs a usable CUDA device")
def test_pinned_arrays_live_with_their_views():
    a = outcore.empty_pinned((1000, 3), np.float32)
    assert a.shape == (1000, 3) and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
    a[:] = np.arange(3000, dtype=np.float32).reshape(1000, 3)
    view = a[10:20]
    del a  # the block stays while a view holds it
    assert np.array_equal(view, np.arange(30, 60, dtype=np.float32).reshape(10, 3))


@pytest.mark.skipif(not HAVE_GPU, reason="needs a usable CUDA device")
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8])
def test_pinned_map(dtype):
    rng = np.random.default_rng(5)
    shape = (300000, 7)  # several chunks under the 4 MiB budget
    a, b, out = (outcore.empty_pinned(shape, dtype) for _ in range(3))
    a[:] = rng.integers(0, 100, shape).astype(dtype)
    b[:] = rng.integers(1, 100, shape).astype(dtype)
    want = np.asarray(a * b + a // b)
    got = outcore.map("a * b + a // b", a=a, b=b, out=out, backend="cuda", gpu_mem="4M")
    assert got is out
    assert want.tobytes() == out.tobytes()
    # pinned inputs into a pageable output, and a pageable input beside a pinned one
    assert want.tobytes() == np.asarray(outcore.map("a * b + a // b", a=a, b=b, backend="cuda", gpu_mem="4M")).tobytes()
    assert want.tobytes() == np.asarray(outcore.map("a * b + a // b", a=a, b=np.array(b), backend="cuda",
                                                    gpu_mem="4M")).tobytes()
