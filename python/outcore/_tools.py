"""outcore.devices() and outcore.inspect(): the reports of `outcore devices --json` and
`outcore inspect --json`, as plain dicts.

Both go through the same C calls as the CLI (oc_devices_query / oc_inspect_file, then the
library's own JSON rendering), so the dicts have exactly the CLI's keys and values. inspect()
also takes the kernel objects of numba and CuPy: the code they really load (see
_kernel_objects.py) goes to oc_inspect_image or oc_inspect_module.
"""
from __future__ import annotations

import ctypes
import json
import os
from typing import TYPE_CHECKING, Any

from . import _kernel_objects, _lib
from ._options import INT_MAX, _integer, c_path, c_text, flag
from .errors import InputError, UnsupportedError, check

if TYPE_CHECKING:
    from ._types import Flag, Integer

_ctx_p = ctypes.c_void_p
_out_p = ctypes.POINTER(ctypes.c_void_p)


class InspectOptions(_lib._Defaults):
    _c_name = "oc_inspect_options"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("arch", ctypes.c_char_p),
        ("block", ctypes.c_int),
        ("dyn_smem", ctypes.c_int64),
        ("kernel", ctypes.c_char_p),
        ("use_gpu", ctypes.c_int),
        ("maxrregcount", ctypes.c_int),
        ("opt_level", ctypes.c_int),
    ]


def _function(name, restype, argtypes):
    try:
        fn = getattr(_lib.lib, name)
    except AttributeError:
        raise UnsupportedError(f"{_lib.library_path} has no {name}: it predates the resource tools; "
                               "rebuild it") from None
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
        _lib.c_free(text)
        free(report)
        _lib.lib.oc_context_free(ctx)


def devices(bandwidth: Flag = False) -> dict[str, Any]:
    """The GPUs (name, compute capability, memory, limits) and the CPU, as `outcore devices
    --json` reports them; bandwidth=True also measures transfer rates (seconds per GPU)."""
    query = _function("oc_devices_query", ctypes.c_int, [_ctx_p, ctypes.c_int, _out_p])
    render = _function("oc_devices_render", ctypes.c_int, [_ctx_p, ctypes.c_void_p, ctypes.c_int, _out_p])
    free = _function("oc_devices_free", None, [ctypes.c_void_p])
    return _report(query, render, free, (flag("bandwidth", bandwidth),))


def _int_option(name, value, most=INT_MAX):
    """An integer option as the C field holds it: a float or a bool is refused, not truncated,
    and a value past the field is refused, not wrapped (the library checks the range)."""
    return _integer(name, value, -most - 1, most)


def _inspect_options(block, arch, kernel, dyn_smem, maxrregcount, opt_level, use_gpu):
    opts = InspectOptions()
    if block is not None:
        opts.block = _int_option("block", block)
        if opts.block == 0:  # 0 is the C field's "no block given", not a size to judge
            raise InputError("block size 0 is outside 1..1024 (pass block=None for no verdict)")
    if arch is not None:
        opts.arch = c_text("arch", arch)
    if kernel is not None:
        opts.kernel = c_text("kernel", kernel)
    if dyn_smem is not None:
        opts.dyn_smem = _int_option("dyn_smem", dyn_smem, 2**63 - 1)
    if maxrregcount is not None:
        opts.maxrregcount = _int_option("maxrregcount", maxrregcount)
    if opt_level is not None:
        opts.opt_level = _int_option("opt_level", opt_level)
    opts.use_gpu = flag("use_gpu", use_gpu)
    return opts


def _inspect_code(code, opts):
    """The report of one Code (a file, an image, or a loaded module)."""
    render = _function("oc_inspect_report_render", ctypes.c_int, [_ctx_p, ctypes.c_void_p, ctypes.c_int, _out_p])
    free = _function("oc_inspect_report_free", None, [ctypes.c_void_p])
    if code.kernel is not None and not opts.kernel:
        opts = InspectOptions.from_buffer_copy(opts)
        opts.kernel = code.kernel.encode()
    if code.path is not None:
        query = _function("oc_inspect_file", ctypes.c_int,
                          [_ctx_p, ctypes.c_char_p, ctypes.POINTER(InspectOptions), _out_p])
        return _report(query, render, free, (c_path("path", code.path), ctypes.byref(opts)))
    name = code.name.encode("utf-8", "replace")
    if code.data is not None:
        query = _function("oc_inspect_image", ctypes.c_int,
                          [_ctx_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(InspectOptions),
                           _out_p])
        return _report(query, render, free, (name, code.data, len(code.data), ctypes.byref(opts)))
    query = _function("oc_inspect_module", ctypes.c_int,
                      [_ctx_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(InspectOptions), _out_p])
    return _report(query, render, free, (name, ctypes.c_void_p(code.module), ctypes.byref(opts)))


def _merge(obj_name, reports, codes):
    """One report for a numba dispatcher's signatures: the first report's header, every
    kernel tagged with its signature and the code it came from."""
    merged = dict(reports[0], file=obj_name, kernels=[])
    for report, code in zip(reports, codes):
        for k in report["kernels"]:
            merged["kernels"].append(dict(k, file=report["file"], signature=code.signature))
    return merged


def inspect(obj: Any, block: Integer | None = None, arch: str | None = None, *, kernel: str | None = None,
            dyn_smem: Integer | None = None, maxrregcount: Integer | None = None, opt_level: Integer | None = None,
            use_gpu: Flag = True) -> dict[str, Any]:
    """Registers, shared memory and launch limits of every kernel in obj, as `outcore inspect
    --json` reports them.

    ptxas runs under a time and a memory limit (120 s, 8G; OUTCORE_PTXAS_TIMEOUT and
    OUTCORE_PTXAS_MEMORY change them).

    Parameters
    ----------
    obj : path, numba CUDA kernel, or CuPy RawKernel / RawModule
        A path (.ptx, .cubin, fatbinary or host object file), a numba CUDA kernel (a
        @cuda.jit dispatcher: each compiled signature's cubin, as numba links and loads it;
        or one of its .overloads), or a CuPy RawKernel / RawModule (the file it was loaded
        from, else the module it loaded, asked of the driver).
    block : int, optional
        N adds the verdict for N threads per block (1 to 1024).
    arch : str, optional
        The target, "sm_90" or "9.0"; default the GPU's, else the code's own.
    kernel : str, optional
        Keeps only the kernel of this exact name; default every kernel.
    dyn_smem : int, optional
        Bytes of dynamic shared memory per block (default 0).
    maxrregcount : int, optional
        N compiles PTX with a register cap, as the producer does (ptxas -maxrregcount, the
        driver JIT's CU_JIT_MAX_REGISTERS); default none. The report's "jit" says which
        options the figures assume.
    opt_level : int, optional
        0 to 4 compiles PTX at that optimisation level (ptxas -O, CU_JIT_OPTIMIZATION_LEVEL);
        default the compiler's own (ptxas 3, driver JIT 4).
    use_gpu : bool, default True
        Lets the driver load the code and answer when a GPU of the target architecture is
        there; False always compiles with ptxas or reads the cubin.

    Returns
    -------
    dict
        The report, with exactly the keys and values of `outcore inspect --json`. A
        dispatcher with several signatures gives one report whose kernels carry their
        "signature".

    Raises
    ------
    InputError
        A path that is not a regular file, PTX past ptxas's limits, or an option that is not
        an integer (a ValueError).
    UnsupportedError
        The library has no resource tools (a library older than the binding).
    Error
        Another failure.

    Examples
    --------
    >>> import outcore
    >>> report = outcore.inspect("kernels.ptx", block=256, arch="sm_90")   # doctest: +SKIP
    >>> [k["name"] for k in report["kernels"]]                            # doctest: +SKIP
    """
    opts = _inspect_options(block, arch, kernel, dyn_smem, maxrregcount, opt_level, use_gpu)
    codes = _kernel_objects.codes(obj, arch)
    if codes is None:
        return _inspect_code(_kernel_objects.Code(name=os.fsdecode(obj), path=obj), opts)
    reports = [_inspect_code(code, opts) for code in codes]
    if len(reports) == 1 and codes[0].signature is None:
        return reports[0]
    name = getattr(getattr(obj, "py_func", None), "__name__", None) or codes[0].name
    return _merge(f"numba kernel {name}", reports, codes)
