"""outcore.devices() and outcore.inspect(): the reports of `outcore devices --json` and
`outcore inspect --json`, as plain dicts.

Both go through the same C calls as the CLI (oc_devices_query / oc_inspect_file, then the
library's own JSON rendering), so the dicts have exactly the CLI's keys and values.
"""
import ctypes
import ctypes.util
import json
import os

from . import _lib
from .errors import Error, InputError, check

_ctx_p = ctypes.c_void_p
_out_p = ctypes.POINTER(ctypes.c_void_p)


class InspectOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("arch", ctypes.c_char_p),
        ("block", ctypes.c_int),
        ("dyn_smem", ctypes.c_int64),
        ("kernel", ctypes.c_char_p),
        ("use_gpu", ctypes.c_int),
    ]

    def __init__(self):
        # The values of OC_INSPECT_OPTIONS_INIT.
        super().__init__(struct_size=ctypes.sizeof(InspectOptions), use_gpu=1)


# The rendered text is malloc'ed by the library and released with the C library's free.
_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def _function(name, restype, argtypes):
    try:
        fn = getattr(_lib.lib, name)
    except AttributeError:
        raise Error(f"{_lib.library_path} has no {name}: it predates the resource tools; rebuild it") from None
    fn.restype, fn.argtypes = restype, argtypes
    return fn


def _report(query, render, free, query_args):
    """Runs query(ctx, *query_args, &report), renders it as JSON and parses that."""
    ctx = ctypes.c_void_p()
    check(_lib.lib.oc_context_create(ctypes.byref(ctx)), None)
    report, text = ctypes.c_void_p(), ctypes.c_void_p()
    try:
        check(query(ctx, *query_args, ctypes.byref(report)), ctx)
        check(render(ctx, report, 1, ctypes.byref(text)), ctx)
        return json.loads(ctypes.string_at(text).decode("utf-8", "replace"))
    finally:
        _libc.free(text)
        free(report)
        _lib.lib.oc_context_free(ctx)


def devices(bandwidth=False):
    """The GPUs (name, compute capability, memory, limits) and the CPU, as `outcore devices
    --json` reports them; bandwidth=True also measures transfer rates (seconds per GPU)."""
    query = _function("oc_devices_query", ctypes.c_int, [_ctx_p, ctypes.c_int, _out_p])
    render = _function("oc_devices_render", ctypes.c_int, [_ctx_p, ctypes.c_void_p, ctypes.c_int, _out_p])
    free = _function("oc_devices_free", None, [ctypes.c_void_p])
    return _report(query, render, free, (1 if bandwidth else 0,))


def inspect(path, block=None, arch=None):
    """Registers, shared memory and launch limits of every kernel in a .ptx, .cubin, fatbinary
    or host object file, as `outcore inspect --json` reports them. block=N adds the verdict
    for N threads per block; arch="sm_90" chooses the target (default: the GPU's, else the
    code's own)."""
    query = _function("oc_inspect_file", ctypes.c_int, [_ctx_p, ctypes.c_char_p, ctypes.POINTER(InspectOptions), _out_p])
    render = _function("oc_inspect_report_render", ctypes.c_int, [_ctx_p, ctypes.c_void_p, ctypes.c_int, _out_p])
    free = _function("oc_inspect_report_free", None, [ctypes.c_void_p])
    opts = InspectOptions()
    if block is not None:
        try:
            opts.block = int(block)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"block must be an integer; got {block!r}") from None
    if arch is not None:
        opts.arch = str(arch).encode()
    return _report(query, render, free, (os.fsencode(path), ctypes.byref(opts)))
