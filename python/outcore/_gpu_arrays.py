"""Arrays in GPU memory for outcore.matmul: torch tensors on a CUDA device, and any object with
``__cuda_array_interface__`` (CuPy, Numba, ...), read and written where they are.

The library is told that such memory is device memory (``oc_matmul_array.gpu``); it checks
that with the driver, waits for the work queued on that device, and runs the product there.
Neither torch nor CuPy is imported unless the caller's arrays are theirs.
"""
from __future__ import annotations

import numpy as np

from . import _lib
from .errors import InputError

# numpy's names of the dtypes a GPU array may have, as the library spells them.
_TORCH_DTYPES = ("float64", "float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool")


def _package(x):
    """The top-level package of x's type: "torch", "cupy", "numba" ..."""
    return type(x).__module__.split(".")[0]


def _is_torch(x):
    return _package(x) == "torch"


def _framework(x):
    """torch or cupy, the module of GPU array x; None for another kind."""
    if _package(x) in ("torch", "cupy"):
        import importlib
        return importlib.import_module(_package(x))
    return None


def is_gpu_array(x) -> bool:
    """Whether x is an array in GPU memory (a CUDA torch tensor, or one with the interface)."""
    if _is_torch(x):
        return bool(getattr(x, "is_cuda", False))
    return hasattr(x, "__cuda_array_interface__")


def _describe(name, x):
    """(address, shape, row and column strides in elements, dtype name) of GPU array x."""
    if _is_torch(x):
        dtype = str(x.dtype).replace("torch.", "")
        if dtype not in _TORCH_DTYPES:
            raise InputError(f"{name}: dtype {dtype} is not one matmul takes")
        return x.data_ptr(), tuple(x.shape), tuple(x.stride()), dtype
    face = x.__cuda_array_interface__
    if face.get("mask") is not None:
        raise InputError(f"{name}: a masked GPU array; matmul takes plain arrays")
    shape = tuple(face["shape"])
    dt = np.dtype(face["typestr"])
    if dt.byteorder not in ("=", "|"):
        raise InputError(f"{name}: a GPU array in another byte order ({face['typestr']})")
    strides = face.get("strides")
    if strides is None:  # C order
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * dt.itemsize for i in range(len(shape)))
    if any(s % dt.itemsize for s in strides):
        raise InputError(f"{name}: a GPU array whose strides are not whole elements")
    return int(face["data"][0]), shape, tuple(s // dt.itemsize for s in strides), dt.name


def _rows_in_place(rows, cols, rs, cs):
    """Whether rows x cols elements at element strides (rs, cs) are rows of contiguous
    elements, each row after the one before: what the library reads with a leading dimension
    (rows that overlap, repeat as a broadcast does, or run backwards are not)."""
    return rows == 0 or cols == 0 or (cs == 1 or cols == 1) and (rows == 1 or rs >= cols)


def operand(name, x, transpose, codes, vector=None):
    """(MatmulArray, transpose, whether x is 1-D, the array read) for GPU array x as the
    library reads it (the array read, x or its copy, must live until the product is done): in
    place when its rows are contiguous, as its transpose when it is a transposed view of such
    an array or a row whose elements are apart (which the library reads with cuBLASLt's
    transposes when A, B and C are all on one GPU, and refuses otherwise, saying what is
    missing). A 1-D x is read as numpy's matmul reads it: a row ("row") or a column ("col"),
    its transpose itself."""
    ptr, shape, strides, dtype = _describe(name, x)
    is_vector = len(shape) == 1 and vector is not None
    framework = _framework(x) if is_vector and strides[0] != 1 and shape[0] > 1 else None
    if framework:
        # a strided vector copied on its device (k elements): a row of it is then contiguous,
        # and v·v of one runs as any product, not as A·Aᵀ of memory read transposed
        x = x.contiguous() if _is_torch(x) else framework.ascontiguousarray(x)
        ptr, shape, strides, dtype = _describe(name, x)
    if is_vector:
        (k,), (s,) = shape, strides
        shape, strides = ((1, k), (s * k, s)) if vector == "row" else ((k, 1), (s, 1))
        transpose = False
    if len(shape) != 2:
        raise InputError(f"{name}: a {len(shape)}-dimensional array; matmul takes 2-D matrices")
    (rs, cs) = strides
    if dtype not in codes:
        raise InputError(f"{name}: dtype {dtype} is not one matmul takes")
    rows, cols = shape
    if not _rows_in_place(rows, cols, rs, cs):
        # a transposed view, or a single row whose elements are apart: its transpose, whose
        # rows are contiguous
        if _rows_in_place(cols, rows, cs, rs):
            rows, cols, rs, cs, transpose = cols, rows, cs, rs, not transpose
        else:
            raise InputError(f"{name}: a GPU array whose rows are not contiguous, one after another (strides "
                             f"{strides} in elements): make it contiguous on the device first")
    a = _lib.MatmulArray()
    a.data = ptr if rows and cols else None
    a.dtype = codes[dtype]
    a.rows, a.cols = rows, cols
    a.ld = rs if rows > 1 else cols
    a.gpu = 1
    return a, transpose, is_vector, x


def span(name, x):
    """(first byte, end byte) of GPU array x's elements, for the overlap check."""
    ptr, shape, strides, dtype = _describe(name, x)
    item = 2 if dtype in ("float16", "bfloat16") else np.dtype(dtype).itemsize
    if not all(shape):
        return ptr, ptr
    return ptr, ptr + (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * item


def new_result(like, shape, dtype):
    """A new GPU array of shape and dtype on like's device, from like's framework (torch or
    CuPy); None when like is neither."""
    if _is_torch(like):
        import torch
        return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)
    if _package(like) == "cupy":
        import cupy
        with like.device:
            return cupy.empty(shape, dtype=dtype)
    return None


def result_array(out, shape, dtype, codes):
    """MatmulArray for the GPU array out, checked to be of the result's shape and dtype with
    contiguous rows."""
    face = None if _is_torch(out) else out.__cuda_array_interface__
    if face is not None and face["data"][1]:
        raise InputError("out: a read-only GPU array")
    ptr, oshape, strides, odtype = _describe("out", out)
    rs, cs = strides if len(strides) == 2 else (0, 0)
    if oshape != shape or odtype != dtype or not _rows_in_place(shape[0], shape[1], rs, cs):
        raise InputError(f"out: expected a GPU array of {dtype} of shape {shape} with contiguous rows, one after "
                         "another")
    c = _lib.MatmulArray()
    c.data = ptr if shape[0] and shape[1] else None
    c.dtype, c.rows, c.cols = codes[dtype], shape[0], shape[1]
    c.ld = rs if shape[0] > 1 else shape[1]
    c.gpu = 1
    return c
