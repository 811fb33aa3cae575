"""outcore.empty_pinned(): numpy arrays in page-locked ("pinned") host memory.

outcore.map on the GPU and outcore.stream copy an array that lies in pinned memory straight
between it and the device at the PCIe rate; any other array first passes through outcore's
pinned staging, one more read and write of every byte in host memory, which is then what
bounds the job (docs/stream.md). Pinning itself is slow: allocate such arrays once and reuse
them.
"""
from __future__ import annotations

import ctypes
import math
import operator
from typing import TYPE_CHECKING, Sequence

import numpy as np

from . import _lib
from .errors import InputError, check

if TYPE_CHECKING:
    from numpy.typing import DTypeLike


_INT64_MAX = 2**63 - 1  # the most bytes an array (and the library's int64 size) holds


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


def _dims(shape):
    """shape as a tuple of ints, checked as numpy.empty checks it (ints, not floats or bools;
    none negative; at most 64 dimensions), by exact Python arithmetic: nothing may wrap."""
    try:
        items = (shape,) if isinstance(shape, (bool, np.bool_)) else (operator.index(shape),)
    except TypeError:  # not one int: a sequence of them
        try:
            items = tuple(shape)
        except TypeError:
            raise InputError(f"shape must be an int or a sequence of ints; got {shape!r}") from None
    dims = []
    for n in items:
        if isinstance(n, (bool, np.bool_)):
            raise InputError(f"shape {shape!r}: a dimension must be an int, not a bool")
        try:
            dims.append(operator.index(n))
        except TypeError:
            raise InputError(f"shape {shape!r}: a dimension must be an int; got {n!r}") from None
    if any(n < 0 for n in dims):
        raise InputError(f"shape {tuple(dims)}: negative dimensions are not allowed")
    if len(dims) > 64:
        raise InputError(f"shape: {len(dims)} dimensions; numpy arrays have at most 64")
    return tuple(dims)


def empty_pinned(shape: int | Sequence[int], dtype: DTypeLike = np.float64) -> np.ndarray:
    """A new C-order numpy array of shape and dtype in pinned host memory, uninitialised, as
    numpy.empty. Raises UnsupportedError where there is no CUDA or no GPU, OutOfMemoryError
    when the driver cannot lock that much memory, InputError for a bad shape or dtype (before
    anything is pinned)."""
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        raise InputError(f"dtype {dtype!r} is not a numpy dtype") from None
    if dtype.hasobject:  # Python objects cannot live in memory numpy does not manage
        raise InputError(f"dtype {dtype}: holds Python objects, which pinned memory cannot hold")
    dims = _dims(shape)
    nbytes = math.prod(dims) * dtype.itemsize
    if nbytes > _INT64_MAX:
        raise InputError(f"shape {dims} of {dtype}: {nbytes} bytes, more than 2**63 - 1")
    if nbytes == 0:
        return np.empty(dims, dtype)
    return np.asarray(_PinnedBlock(nbytes)).view(dtype).reshape(dims)
