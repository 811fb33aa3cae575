"""outcore.matmul on arrays in GPU memory: torch tensors and CuPy arrays read and written where
they are (the product on their device, the result a new array of their framework or out=),
against the same product on the host; and, on any machine, memory that claims to be on a GPU
but is not refused before anything is written."""
import ctypes

import numpy as np
import pytest

import outcore

HAVE_GPU = outcore.cuda_device_count() > 0
try:
    import torch
    HAVE_TORCH = HAVE_GPU and torch.cuda.is_available()
except ImportError:
    HAVE_TORCH = False
try:
    import cupy
    HAVE_CUPY = HAVE_GPU and cupy.cuda.runtime.getDeviceCount() > 0
except Exception:  # no CuPy, or a CuPy without a driver
    HAVE_CUPY = False

rng = np.random.default_rng(23)


class Interface:
    """Only __cuda_array_interface__, borrowed from an array (a framework outcore does not know)."""

    def __init__(self, arr):
        self.arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


class HostClaimingGpu:
    """Host memory behind __cuda_array_interface__: what a buggy caller might pass."""

    def __init__(self, arr):
        self.arr = arr
        self.__cuda_array_interface__ = {"shape": arr.shape, "typestr": arr.dtype.str, "strides": None,
                                         "data": (arr.ctypes.data, False), "version": 3}


def test_host_memory_claiming_to_be_on_a_gpu_is_refused():
    a = rng.integers(-3, 4, (5, 4)).astype(np.float32)
    b = rng.integers(-3, 4, (4, 3)).astype(np.float32)
    out = np.full((5, 3), 7, np.float32)
    with pytest.raises((outcore.InputError, outcore.UnsupportedError), match="^A: "):
        outcore.matmul(HostClaimingGpu(a), b, out=out)
    with pytest.raises((outcore.InputError, outcore.UnsupportedError), match="^B: "):
        outcore.matmul(a, HostClaimingGpu(b), out=out)
    assert (out == 7).all()


class Interfaced:
    """A GPU-looking array from an interface dict (never reaching the library here)."""

    def __init__(self, **face):
        self.__cuda_array_interface__ = dict({"shape": (2, 2), "typestr": "<f4", "strides": None,
                                              "data": (0, False), "version": 3}, **face)


def test_gpu_arrays_refused_before_the_library():
    a = np.ones((2, 2), np.float32)
    with pytest.raises(outcore.InputError, match="^A: a masked GPU array"):
        outcore.matmul(Interfaced(mask=object()), a)
    with pytest.raises(outcore.InputError, match="^B: a 3-dimensional"):
        outcore.matmul(a, Interfaced(shape=(2, 2, 2)))
    with pytest.raises(outcore.InputError, match="^A: a GPU array whose rows are not contiguous"):
        outcore.matmul(Interfaced(strides=(16, 8)), a)
    with pytest.raises(outcore.InputError, match="^A: dtype complex64"):
        outcore.matmul(Interfaced(typestr="<c8"), a)
    with pytest.raises(outcore.InputError, match="^out: a read-only GPU array"):
        outcore.matmul(a, a, out=Interfaced(data=(4096, True)))
    with pytest.raises(outcore.InputError, match="^out: expected a GPU array of float32 of shape"):
        outcore.matmul(a, a, out=Interfaced(shape=(3, 2)))


def small_ints(shape, dtype):
    return rng.integers(-8, 9, shape).astype(dtype)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
@pytest.mark.parametrize("dtype,asked,rdtype", [("float32", None, "float32"), ("float64", None, "float64"),
                                                  ("int8", None, "int32"), ("bfloat16", None, "float32"),
                                                  ("bfloat16", "float32", "float32"), ("float16", None, "float32"),
                                                  ("float16", "float32", "float32"), ("float16", "float16", "float16")])
def test_torch_tensors(dtype, asked, rdtype):
    a = torch.tensor(small_ints((300, 257), np.float32)).to(getattr(torch, dtype)).cuda()
    b = torch.tensor(small_ints((257, 124), np.float32)).to(getattr(torch, dtype)).cuda()
    exact = a.double().cpu() @ b.double().cpu()  # small integers: exact, and within float32's
    want = exact.to(getattr(torch, rdtype)).double().numpy()  # rounded once to the result type
    got = outcore.matmul(a, b, dtype=asked)
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.device == a.device
    assert str(got.dtype) == "torch." + rdtype and tuple(got.shape) == (300, 124)
    assert np.array_equal(got.double().cpu().numpy(), want)
    # into an out tensor, into a numpy array, and from a host B beside a GPU A
    out = torch.full((300, 124), 5, dtype=getattr(torch, rdtype), device="cuda")
    assert outcore.matmul(a, b, out=out, dtype=asked) is out and np.array_equal(out.double().cpu().numpy(), want)
    if "bfloat16" not in (dtype, rdtype):  # numpy has no bfloat16 without ml_dtypes
        host = outcore.matmul(a, b, out=np.empty((300, 124), getattr(np, rdtype)), dtype=asked)
        assert np.array_equal(host.astype(np.float64), want)
        mixed = outcore.matmul(a, b.cpu().numpy(), dtype=asked)
        assert mixed.is_cuda and np.array_equal(mixed.double().cpu().numpy(), want)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
def test_torch_refusals(tmp_path):
    a = torch.ones((64, 32), dtype=torch.float32, device="cuda")
    b = torch.ones((32, 64), dtype=torch.float32, device="cuda")
    with pytest.raises(outcore.InputError, match="C is not in that device.s memory"):
        outcore.matmul(b.T, b, out=np.empty((64, 64), np.float32))  # a transposed view into host memory
    with pytest.raises(outcore.InputError, match="A·Aᵀ.*C is not"):
        outcore.matmul(a, out=np.empty((64, 64), np.float32))
    with pytest.raises(outcore.InputError, match="convert it on the device"):
        outcore.matmul(a, b, dtype=np.float16)  # rounded into a narrower type
    with pytest.raises(outcore.InputError, match="A·Aᵀ.*convert it on the device"):
        outcore.matmul(a.to(torch.int8), out=torch.zeros((64, 64), dtype=torch.float32, device="cuda"),
                       dtype=np.float32)
    with pytest.raises(outcore.InputError, match="GPU memory"):
        outcore.matmul(a, b, backend="cpu")
    c = torch.zeros((64, 64), dtype=torch.float32, device="cuda")
    big = torch.ones((64, 64), dtype=torch.float32, device="cuda")
    with pytest.raises(outcore.InputError, match="shares memory"):
        outcore.matmul(big[:, :32], b, out=big)  # A's rows inside the result's
    with pytest.raises(outcore.InputError, match="expected a GPU array"):
        outcore.matmul(a, b, out=c[:, :32])
    assert not c.any()
    with pytest.raises(outcore.InputError, match="rows are not contiguous"):
        outcore.matmul(a[:, ::2], b[:16])
    # Rows that overlap or repeat (a broadcast row, stride 0 between rows) are no matrix the
    # library reads with a leading dimension: refused, not read past the view.
    row = torch.arange(32, dtype=torch.float32, device="cuda")
    with pytest.raises(outcore.InputError, match="^A: a GPU array whose rows are not contiguous"):
        outcore.matmul(row[None].expand(64, 32), b)
    with pytest.raises(outcore.InputError, match="^A: a GPU array whose rows are not contiguous"):
        outcore.matmul(torch.arange(64, dtype=torch.float32, device="cuda").as_strided((16, 32), (1, 1)), b)
    # A result whose rows are not contiguous is refused, a strided 1-D out too.
    y = torch.zeros(128, dtype=torch.float32, device="cuda")
    with pytest.raises(outcore.InputError, match="^out: expected a GPU array"):
        outcore.matmul(b[:, 0].contiguous(), b, out=y[::2])
    with pytest.raises(outcore.InputError, match="^out: expected a GPU array"):
        outcore.matmul(a, b[:, :1], out=y[:1][None].expand(64, 1))
    assert not y.any()
    # A transposed operand runs as one call on A, B and C, which needs C's rows back to back.
    wide = torch.zeros((64, 96), dtype=torch.float32, device="cuda")
    with pytest.raises(outcore.InputError, match="C's rows are not back to back"):
        outcore.matmul(b.T, b[:, :32].contiguous(), out=wide[:, :32])
    # Resume identifies its operands across runs, which GPU memory cannot be.
    with pytest.raises(outcore.InputError, match="resume: an operand in GPU memory"):
        outcore.matmul(a, b, out=str(tmp_path / "r.npy"), resume=True)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(outcore.InputError, match="neither torch nor CuPy"):
        outcore.matmul(Interface(a), b)
    out = torch.zeros((64, 64), dtype=torch.float32, device="cuda")
    assert outcore.matmul(Interface(a), Interface(b), out=Interface(out)).arr is out
    assert (out == 32).all()


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
def test_torch_mixed_pairs_promoted_on_the_device():
    """A mixed pair numpy promotes runs from GPU memory as stored, converted on the device:
    int8 x float32 is float32, float32 asked as float64 is float64."""
    a = torch.arange(-60, 60, dtype=torch.int8, device="cuda").reshape(8, 15)
    b = torch.linspace(-2, 2, 15 * 9, dtype=torch.float32, device="cuda").reshape(15, 9)
    a64, b64 = a.cpu().numpy().astype(np.float64), b.cpu().numpy().astype(np.float64)
    c = outcore.matmul(a, b)
    assert c.is_cuda and c.dtype == torch.float32
    # docs/matmul.md, "Accuracy": |C - C64| <= 2 k u (|A| |B|), u float32's unit roundoff
    bound = 2 * a64.shape[1] * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    assert (np.abs(c.double().cpu().numpy() - a64 @ b64) <= bound).all()
    c64 = outcore.matmul(b.T.contiguous(), b, dtype=np.float64)
    want64 = b.T.cpu().numpy().astype(np.float64) @ b.cpu().numpy().astype(np.float64)
    assert c64.dtype == torch.float64 and np.allclose(c64.cpu().numpy(), want64, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
def test_torch_bool_promoted_on_the_device():
    """A bool tensor meets float32 as float32 and int8 as int8 (int32 sums), converted on the
    device; bool x bool is numpy's bool (int32 sums rounded on the device; A·Aᵀ of a bool
    tensor, a promoted operand not read as stored, refused), or int32 counts when asked."""
    m = (torch.arange(8 * 15, device="cuda").reshape(8, 15) % 3) == 0
    b = torch.linspace(-2, 2, 15 * 9, dtype=torch.float32, device="cuda").reshape(15, 9)
    i8 = torch.arange(-60, 75, dtype=torch.int8, device="cuda").reshape(15, 9)
    m64 = m.cpu().numpy().astype(np.float64)
    c = outcore.matmul(m, b)
    assert c.is_cuda and c.dtype == torch.float32
    bound = 2 * 15 * 2.0**-24 * (m64 @ np.abs(b.double().cpu().numpy()))
    assert (np.abs(c.double().cpu().numpy() - m64 @ b.double().cpu().numpy()) <= bound).all()
    ci = outcore.matmul(m, i8)
    assert ci.dtype == torch.int32
    assert np.array_equal(ci.cpu().numpy(), m64.astype(np.int64) @ i8.cpu().numpy().astype(np.int64))
    cb = outcore.matmul(m, m.T.contiguous(), dtype=np.int32)
    assert cb.dtype == torch.int32 and np.array_equal(cb.cpu().numpy(), (m64 @ m64.T).astype(np.int32))
    mn = m.cpu().numpy()
    got = outcore.matmul(m, m.T.contiguous())  # read as stored, promoted, summed and rounded on the device
    assert got.is_cuda and got.dtype == torch.bool and np.array_equal(got.cpu().numpy(), mn @ mn.T)
    with pytest.raises(outcore.InputError, match="as A·Aᵀ, which runs where the operands are: convert it on the"):
        outcore.matmul(m)  # a promoted GPU operand is read as stored only
    sparse = torch.rand(300, 200, device="cuda") < 0.01
    sn = sparse.cpu().numpy()
    got = outcore.matmul(sparse.cpu().numpy(), sn.T, backend="cuda", gpu_mem="1M")  # tiles from the host
    assert got.dtype == np.bool_ and np.array_equal(got, sn @ sn.T) and 0 < got.mean() < 1


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
def test_torch_vectors_and_strided_rows():
    """1-D tensors as numpy's matmul reads them (a row A, a column B, the result's dimension
    dropped), strided ones too; a single row whose elements are apart is read as such (its
    transpose, a column, which the library refuses where it would be read transposed), not
    as the first elements of its memory."""
    a = torch.linspace(-1, 1, 37 * 23, dtype=torch.float64, device="cuda").reshape(37, 23)
    v = torch.linspace(-2, 3, 46, dtype=torch.float64, device="cuda")[::2]
    w = torch.linspace(0, 1, 37, dtype=torch.float64, device="cuda")
    an, vn, wn = a.cpu().numpy(), v.cpu().numpy(), w.cpu().numpy()
    got = outcore.matmul(a, v)
    assert got.is_cuda and tuple(got.shape) == (37,) and np.allclose(got.cpu().numpy(), an @ vn, rtol=1e-12)
    got = outcore.matmul(w, a)
    assert tuple(got.shape) == (23,) and np.allclose(got.cpu().numpy(), wn @ an, rtol=1e-12)
    got = outcore.matmul(v, v)
    assert tuple(got.shape) == () and abs(float(got) - vn @ vn) <= 1e-12 * (np.abs(vn) @ np.abs(vn))
    row = torch.arange(46, dtype=torch.float64, device="cuda").reshape(1, 46)[:, ::2]  # (1, 23), stride 2
    with pytest.raises(outcore.InputError, match="A's rows are not back to back"):  # read as what it is
        outcore.matmul(row, a.T)
    got = outcore.matmul(row.contiguous(), a.T)
    assert np.allclose(got.cpu().numpy(), row.cpu().numpy() @ an.T, rtol=1e-12)


@pytest.mark.skipif(not HAVE_CUPY, reason="needs CuPy with a usable CUDA device")
def test_cupy_arrays():
    a = cupy.asarray(small_ints((130, 77), np.float32))
    b = cupy.asarray(small_ints((77, 66), np.float32))
    got = outcore.matmul(a, b)
    assert isinstance(got, cupy.ndarray) and got.shape == (130, 66)
    assert np.array_equal(cupy.asnumpy(got), cupy.asnumpy(a) @ cupy.asnumpy(b))


def test_gpu_field_in_the_array_struct():
    from outcore import _lib
    assert _lib.MatmulArray.gpu.offset + ctypes.sizeof(ctypes.c_int) <= ctypes.sizeof(_lib.MatmulArray)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
def test_torch_empty_inner_dimension():
    a = torch.empty((5, 0), dtype=torch.float32, device="cuda")
    b = torch.empty((0, 4), dtype=torch.float32, device="cuda")
    c = outcore.matmul(a, b)
    assert c.is_cuda and tuple(c.shape) == (5, 4) and not c.any()


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
@pytest.mark.parametrize("dtype,rdtype", [("float32", "float32"), ("int8", "int32"), ("bfloat16", "float32")])
def test_torch_transposed_views_and_gram(dtype, rdtype):
    a = torch.tensor(small_ints((300, 256), np.float32)).to(getattr(torch, dtype)).cuda()
    b = torch.tensor(small_ints((124, 256), np.float32)).to(getattr(torch, dtype)).cuda()
    ad, bd = a.double().cpu(), b.double().cpu()
    for x, y, want in ((a, b.T, ad @ bd.T), (a.T.contiguous().T, b.T, ad @ bd.T),
                       (b.T.contiguous().T, a.T, bd @ ad.T)):
        got = outcore.matmul(x, y)  # transposed views: cuBLASLt's transposes, one product
        assert np.array_equal(got.double().cpu().numpy(), want.to(getattr(torch, rdtype)).double().numpy())
    g = outcore.matmul(a)  # A·Aᵀ on the device, exactly symmetric
    assert tuple(g.shape) == (300, 300) and torch.equal(g, g.T)
    assert np.array_equal(g.double().cpu().numpy(), (ad @ ad.T).to(getattr(torch, rdtype)).double().numpy())


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
@pytest.mark.parametrize("dtype,rdtype", [("float32", "float32"), ("int8", "int32"), ("float16", "float32")])
def test_torch_views_off_their_allocations_start(dtype, rdtype):
    """Views one row into their storage (rows of an odd length: aligned to the element alone)
    and B as a transposed view, for int8 the layout its kernels read as stored."""
    big_a = torch.tensor(small_ints((301, 257), np.float32)).to(getattr(torch, dtype)).cuda()
    big_b = torch.tensor(small_ints((125, 257), np.float32)).to(getattr(torch, dtype)).cuda()
    a, bt = big_a[1:], big_b[1:]  # 300 x 257 and 124 x 257, each one row into its storage
    assert a.data_ptr() % 16 and bt.data_ptr() % 16
    want = (a.double().cpu() @ bt.double().cpu().T).to(getattr(torch, rdtype)).double().numpy()
    for y in (bt.T, bt.T.contiguous()):  # Bᵀ as stored, and a row-major B
        got = outcore.matmul(a, y)
        assert np.array_equal(got.double().cpu().numpy(), want)
    out_storage = torch.zeros((301, 124), dtype=getattr(torch, rdtype), device="cuda")
    out = out_storage[1:]  # C one row into its storage
    assert outcore.matmul(a, bt.T, out=out) is out and np.array_equal(out.double().cpu().numpy(), want)
    assert not out_storage[0].any()


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_torch_empty_k(dtype):
    """k = 0 reads no operand: C is zeros, for A·Aᵀ and a transposed operand too (an empty
    tensor lies in no device's memory, which the resident plan's checks asked of it)."""
    t = getattr(torch, dtype)
    a = torch.ones((40, 0), dtype=t, device="cuda")
    got = outcore.matmul(a)
    assert tuple(got.shape) == (40, 40) and got.is_cuda and not got.any()
    b = torch.ones((0, 24), dtype=t, device="cuda")
    got = outcore.matmul(b.T.contiguous().T, torch.ones((0, 8), dtype=t, device="cuda"), transpose_a=True)
    assert tuple(got.shape) == (24, 8) and not got.any()
    c = torch.full((40, 24), 7, dtype=torch.float32, device="cuda")
    assert outcore.matmul(a, b, out=c) is c and not c.any()


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch with a usable CUDA device")
def test_torch_int8_transposed_past_the_grid():
    """A transposed int8 operand of more than 65535 x 32 rows whose k is no multiple of 16 is
    packed K-contiguous by the byte transpose, whose grid's y was limited to 65535 edges (an
    internal error past 2097120 rows): the product as float64's, exactly."""
    gen = torch.Generator(device="cuda").manual_seed(3)
    stored = torch.randint(-4, 5, (17, 2200001), dtype=torch.int8, device="cuda", generator=gen)
    b = torch.randint(-4, 5, (17, 8), dtype=torch.int8, device="cuda", generator=gen)
    got = outcore.matmul(stored.T, b)
    assert got.dtype == torch.int32 and tuple(got.shape) == (2200001, 8)
    assert torch.equal(got.double(), stored.T.double() @ b.double())
