"""The code a numba or CuPy kernel object really loads, for outcore.inspect().

numba: a dispatcher (`@cuda.jit`) keeps one compiled kernel per signature in `.overloads`.
Each kernel's code library links its PTX into the cubin the driver loads
(`library.get_cubin(cc)`, with the kernel's max_registers, LTO and linked files), so that
cubin is what is inspected: the PTX of `inspect_asm()` has not met those options yet.

CuPy: a RawModule or RawKernel loaded from a file (`path=`) is that file. One compiled from
source keeps no copy of its image, only the loaded module, so the driver is asked about that
module (`Module.ptr`, a CUmodule) itself.

Neither package is imported: objects are recognised by their attributes, so that outcore
works without them and with their versions that keep those attributes.
"""
import os
import re
from dataclasses import dataclass
from typing import Optional

from .errors import InputError


@dataclass
class Code:
    """One piece of code to inspect: a file, an image in memory or a loaded module."""
    name: str                 # what the report calls it ("file")
    path: Optional[str] = None
    data: Optional[bytes] = None
    module: Optional[int] = None        # a CUmodule handle
    kernel: Optional[str] = None        # only this kernel of the code
    signature: Optional[str] = None     # numba: the argument types of this overload


def _is_path(obj):
    return isinstance(obj, (str, bytes, os.PathLike))


def _numba_cc(arch):
    """numba's compute-capability tuple for arch ("sm_90" -> (9, 0), "sm_90a" -> (9, 0, "a"))."""
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)(\d)([af]?)|(\d+)\.(\d)", str(arch))
    if not m:
        raise InputError(f"unknown architecture '{arch}'")
    if m.group(4):
        return int(m.group(4)), int(m.group(5))
    cc = (int(m.group(1)), int(m.group(2)))
    return cc + (m.group(3),) if m.group(3) else cc


def _image_bytes(image, what):
    """numba returns the cubin as bytes, or (numba-cuda with cuda.core) an object whose
    .code holds them."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        return bytes(image)
    code = getattr(image, "code", None)
    if isinstance(code, (bytes, bytearray, memoryview)):
        return bytes(code)
    raise InputError(f"{what}: numba gave a cubin of type {type(image).__name__}, without bytes")


def _numba_kernel_code(kernel, name, signature, arch):
    library = getattr(kernel, "library", None) or getattr(kernel, "_codelibrary", None)
    what = f"numba kernel {name}{signature or ''}"
    if library is None or not hasattr(library, "get_cubin"):
        raise InputError(f"{what}: no code library with get_cubin(): not a compiled numba CUDA kernel")
    # No cc: numba's own choice for the current device, the cubin get_cufunc() loads.
    cubin = library.get_cubin() if arch is None else library.get_cubin(cc=_numba_cc(arch))
    return Code(name=what, data=_image_bytes(cubin, what), signature=signature)


def _signature_text(argtypes):
    if isinstance(argtypes, tuple):
        return "(" + ", ".join(str(t) for t in argtypes) + ")"
    return str(argtypes)


def _is_numba_dispatcher(obj):
    return hasattr(obj, "overloads") and hasattr(obj, "py_func")


def _is_numba_kernel(obj):
    return hasattr(obj, "entry_name") and (hasattr(obj, "library") or hasattr(obj, "_codelibrary"))


def _is_cupy(obj):
    return hasattr(obj, "code") and hasattr(obj, "backend") and hasattr(obj, "options") and (
        hasattr(obj, "kernel") or hasattr(obj, "module"))


def _cupy_code(obj):
    is_kernel = hasattr(obj, "kernel") and hasattr(obj, "name")
    what = f"CuPy RawKernel {obj.name}" if is_kernel else "CuPy RawModule"
    kernel = obj.name if is_kernel else None
    # Loaded from a file (RawModule(path=...) and its kernels): that file is the code.
    path = getattr(obj, "file_path", None) or getattr(obj, "cubin_path", None)
    if path:
        return Code(name=os.fsdecode(path), path=path, kernel=kernel)
    # Compiled from source: the module CuPy loaded (compiling it now if it has not yet).
    module = obj.kernel.module if is_kernel else obj.module
    handle = int(getattr(module, "ptr", 0) or 0)
    if not handle:
        raise InputError(f"{what}: CuPy has no loaded module for it")
    return Code(name=what, module=handle, kernel=kernel)


def codes(obj, arch=None):
    """The code obj loads, as a list of Code (one per numba signature); None when obj is a
    path, which the caller inspects as a file."""
    if _is_path(obj):
        return None
    if _is_numba_dispatcher(obj):
        name = getattr(obj.py_func, "__name__", "kernel")
        overloads = list(obj.overloads.items())
        if not overloads:
            raise InputError(f"numba kernel {name} is not compiled yet: call it once, or give @cuda.jit its "
                             f"signature, so that there is a cubin to inspect")
        return [_numba_kernel_code(k, name, _signature_text(sig), arch) for sig, k in overloads]
    if _is_numba_kernel(obj):
        py_func = getattr(obj, "py_func", None)
        name = getattr(py_func, "__name__", None) or obj.entry_name
        argtypes = getattr(obj, "argtypes", None)
        return [_numba_kernel_code(obj, name, _signature_text(argtypes) if argtypes is not None else None, arch)]
    if _is_cupy(obj):
        return [_cupy_code(obj)]
    raise InputError(f"cannot inspect a {type(obj).__name__}: give a path (PTX, cubin, fatbinary, object), a numba "
                     f"CUDA kernel or a CuPy RawKernel/RawModule")
