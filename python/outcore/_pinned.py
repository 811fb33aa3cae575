"""outcore.empty_pinned(): numpy arrays in page-locked ("pinned") host memory.

outcore.map on the GPU and outcore.stream copy an array that lies in pinned memory straight
between it and the device at the PCIe rate; any other array first passes through outcore's
pinned staging, one more read and write of every byte in host memory, which is then what
bounds the job (docs/stream.md). Pinning itself is slow: allocate such arrays once and reuse
them.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Sequence, cast

import numpy as np

from . import _lib
from .errors import check

if TYPE_CHECKING:
    from numpy.typing import DTypeLike


class _PinnedBlock:
    """One block from oc_pinned_alloc; the arrays over it hold it as their base, so it is
    freed when the last of them goes."""

    def __init__(self, nbytes):
        ctx = ctypes.c_void_p()
        check(_lib.lib.oc_context_create(ctypes.byref(ctx)), None)
        ptr = ctypes.c_void_p()
        try:
            check(_lib.lib.oc_pinned_alloc(ctx, nbytes, ctypes.byref(ptr)), ctx)
        finally:
            _lib.lib.oc_context_free(ctx)
        self._free = _lib.lib.oc_pinned_free  # kept: the module may be gone at exit
        self.ptr = ptr.value
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3}

    def __del__(self):
        if getattr(self, "ptr", None):
            self._free(self.ptr)
            self.ptr = None


def empty_pinned(shape: int | Sequence[int], dtype: DTypeLike = np.float64) -> np.ndarray:
    """A new C-order numpy array of shape and dtype in pinned host memory, uninitialised, as
    numpy.empty. Raises UnsupportedError where there is no CUDA or no GPU, OutOfMemoryError
    when the driver cannot lock that much memory."""
    dtype = np.dtype(dtype)
    # np.ndim tells an int (or numpy integer) from a sequence, which a type checker cannot follow.
    dims = (int(cast(int, shape)),) if np.ndim(shape) == 0 else tuple(int(n) for n in cast(Sequence[int], shape))
    if any(n < 0 for n in dims):
        raise ValueError(f"negative dimensions are not allowed: {dims}")
    nbytes = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if nbytes == 0:
        return np.empty(dims, dtype)
    return np.asarray(_PinnedBlock(nbytes)).view(dtype).reshape(dims)
