"""outcore: exact binary Gram matrices (A·Aᵀ of 0/1 matrices) and Jaccard, cosine and
Hamming similarities, on the CPU or 1-bit tensor cores, out of core under a memory budget.

    import numpy as np, outcore
    A = np.random.default_rng(0).random((1000, 5000)) < 0.1
    C = outcore.gram(A)                        # int32 counts |a_i ∧ a_j|
    J = outcore.gram(A, metric="jaccard")      # float32
    idx, score = outcore.gram(A, metric="jaccard", topk=10)
    with outcore.Context(backend="cpu", threads=4) as ctx:   # settings for a series of calls
        C = ctx.gram(A)

A thin ctypes layer over liboutcore (include/outcore.h); see docs/python.md.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _lib
from ._context import Context, release_cached_memory
from ._explain import explain
from ._gram import gram
from ._stream import stream
from ._map import map as map  # the redundant alias marks it exported for type checkers (PEP 484)
from ._matmul import matmul
from ._pinned import empty_pinned
from ._tools import devices, inspect
from .errors import (CancelledError, DeviceError, Error, InputError, InternalError, IOFailure,
                     OutOfMemoryError, UnsupportedError)

if TYPE_CHECKING:
    from ._types import Devices, Integer

__version__: str = _lib.text(_lib.lib.oc_version())


def cpu_isa() -> str:
    """The CPU kernel path in use: "ref", "avx2" or "avx512" (OUTCORE_CPU_ISA forces one)."""
    return _lib.text(_lib.lib.oc_cpu_isa())


def metrics() -> list[str]:
    """The Gram metrics of the library, as ``metric=`` takes them: ["counts", "jaccard", ...]."""
    return _lib.names(_lib.lib.oc_metric_name)


def output_formats() -> list[str]:
    """The file formats of a Gram result, by the suffix of ``out=`` that picks them:
    ["npy", ...]: npy holds a dense result, the others top-k or threshold results."""
    return _lib.output_formats()


def map_functions() -> list[str]:
    """The functions of the expression language of ``outcore.map``: ["abs", "sqrt", ...]."""
    return _lib.names(_lib.lib.oc_map_function_name)


def cuda_device_count() -> int:
    """Usable CUDA devices (0 without CUDA support or without a GPU)."""
    return _lib.lib.oc_cuda_device_count()


def cuda_warm_up(devices: Devices | None = None, device: Integer = 0) -> int:
    """Starts CUDA ahead of a job: the driver, and the contexts of the devices a job on
    `devices` ("0,1", "all", "0:2"; None: `device` alone) would use, which the first GPU job of
    a process otherwise pays at its start (about a second on a host of several GPUs). The GIL
    is released meanwhile, so a thread can run it while the caller loads its data. A device
    list that does not parse is left for the job to report. Returns cuda_device_count()."""
    import numpy as np

    from ._options import _device_list, c_text
    if isinstance(device, bool) or not isinstance(device, (int, np.integer)) or device < 0:
        raise InputError(f"device must be a CUDA device number (0, 1, ...); got {device!r}")
    text = c_text("devices", _device_list(devices)) if devices is not None and devices != "" else None
    return _lib.lib.oc_cuda_warm_up(text, int(device))


library_path: str = str(_lib.library_path)

# map stays out of __all__: `from outcore import *` must not shadow the builtin map (as numpy
# keeps min and max out of its own); `import map as map` above exports it to type checkers.
__all__ = ["gram", "matmul", "explain", "stream", "Context", "release_cached_memory", "devices", "inspect", "cpu_isa", "metrics", "output_formats", "map_functions", "cuda_device_count", "cuda_warm_up", "empty_pinned", "library_path", "__version__",
           "Error", "InputError", "OutOfMemoryError", "DeviceError", "UnsupportedError", "CancelledError",
           "IOFailure", "InternalError"]
