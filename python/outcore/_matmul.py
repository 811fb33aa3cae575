"""outcore.matmul: the dense product C = op(A)·op(B) of arrays or .npy files of any size.

    C = outcore.matmul(A, B)                                   # a new array, as A @ B
    outcore.matmul("A.npy", "B.npy", out="C.npy", host_mem="4G")   # file to file, out of core
    G = outcore.matmul(A)                                      # A @ A.T from its upper tiles

Arrays are read in place when their rows are contiguous (a transposed view is read as its
transpose, with no copy); .npy paths are mapped, or read in panels when larger than half the
host budget. See docs/matmul.md.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _gpu_arrays, _lib
from ._context import call_resources, lease
from ._calls import Progress as _ProgressCall, checked_progress, checked_stats, run_on_context
from ._map import _check_out_overlap, _is_path, _out_path, check_out_path_not_input, operands_named
from ._options import (_device_list, as_numbers, c_path, c_text, check_fits_in_memory, checked_out, flag, no_array_form,
                       npy_header, one_gpu_mem, parse_backend, plan_flag, positive_int, rows_contiguous,
                       set_device_budgets, single_gpu_mem, threads_count, warn_gpu_only)
from .errors import InputError, check

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from ._context import Context
    from ._types import Backend, Devices, Flag, Integer, Path, Plan, Progress, Size

lib = _lib.lib
_CODES = {name: i for i, name in enumerate(_lib.MATMUL_DTYPES)}

# Products of at most this many multiply-adds, of arrays in memory, are short: they run on the
# calling thread (_calls.py). On the host, under a millisecond with a BLAS and a few tens
# without one; on a GPU, about a millisecond in float64 on an H200.
_SHORT_HOST = 1 << 24
_SHORT_GPU = 1 << 33


_DTYPE_NAMES: dict = {}  # dtype -> _dtype_name's answer (numpy builds dtype.name on each read)


def _dtype_name(dt):
    """The library's name of a numpy dtype (bfloat16 from ml_dtypes included), or None."""
    try:
        dt = np.dtype(dt)
    except TypeError:  # not a dtype at all ("foo", 3): as one matmul does not compute
        return None
    try:
        return _DTYPE_NAMES[dt]
    except KeyError:
        pass
    name = dt.name if dt.byteorder in ("=", "|") and dt.name in _CODES and dt.name != "default" else None
    if len(_DTYPE_NAMES) < 64:  # the dtypes a program uses; structured ones could be endless
        _DTYPE_NAMES[dt] = name
    return name


def _numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes  # only a bfloat16 input leads here, and that needs ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _npy_ndim(path):
    """The dimensions of the .npy at path from its header, or None where it does not read as
    one (npy_header)."""
    header = npy_header(path)
    return None if header is None else len(header[0])


def _operand(name, x, transpose, keep, vector=None):
    """(MatmulArray, transpose, array or None, whether x is 1-D): x as the library reads it.
    An array whose rows are contiguous is read in place with its row stride; a transposed view
    of such an array is read as its transpose (transpose flipped); anything else is copied to
    C order. A 1-D array is read as numpy's matmul reads it, a row ("row": A) or a column
    ("col": B), its transpose itself."""
    if _gpu_arrays.is_gpu_array(x):
        a, transpose, is_vector, held = _gpu_arrays.operand(name, x, transpose, _CODES, vector)
        keep.append(held)
        return a, transpose, None, is_vector
    a = _lib.MatmulArray()
    if _is_path(x):
        a.path = c_path(name, x)
        return a, transpose, None, _npy_ndim(x) == 1  # the library reads a 1-D file so too
    arr = as_numbers(name, x)
    if no_array_form(x, arr):
        raise InputError(f"{name} must be an array (or nested lists), a GPU array or a .npy path; "
                         f"got {type(x).__name__}")
    is_vector = arr.ndim == 1 and vector is not None
    if is_vector:
        arr, transpose = (arr[None, :] if vector == "row" else arr[:, None]), False
    if arr.ndim != 2:
        raise InputError(f"{name}: a {arr.ndim}-dimensional array; matmul takes 2-D matrices")
    code = _dtype_name(arr.dtype)
    if code is None:
        arr = arr.astype(arr.dtype.newbyteorder("="))
        code = _dtype_name(arr.dtype)
    if code is None:
        raise InputError(f"{name}: dtype {arr.dtype} is not one matmul takes (float64, float32, float16, bfloat16, "
                         "int8-64, uint8-64, bool)")
    item = arr.itemsize
    if not rows_contiguous(arr):
        if arr.strides[0] == item and arr.strides[1] % item == 0 and arr.strides[1] >= item * arr.shape[0]:
            arr, transpose = arr.T, not transpose
        else:
            arr = np.ascontiguousarray(arr)
    keep.append(arr)
    a.data = arr.ctypes.data if arr.size else None
    a.dtype = _CODES[code]
    a.rows, a.cols = arr.shape
    a.ld = arr.strides[0] // item if arr.shape[0] > 1 else arr.shape[1]
    return a, transpose, arr, is_vector


def _sort_input(name, x, arr, inputs, paths, gpus):
    """An operand into the list its overlap check needs: host arrays, paths or GPU arrays."""
    if arr is not None:
        inputs.append((name, arr))
    elif _gpu_arrays.is_gpu_array(x):
        gpus.append((name, x))
    else:
        paths.append((name, x))


def _host_result(out, shape, dtype, inputs, paths, user_shape):
    """The host array the result goes to: out, checked (a writeable array of the result's shape
    and dtype with contiguous rows, sharing no memory with an input), or a new one that fits in
    the machine's memory. A refused out is told user_shape, numpy's shape of the product: out
    of a vector product is the 2-D view the library writes, a shape the caller never gave."""
    rdt = _numpy_dtype(dtype)
    if out is None:
        check_fits_in_memory(operands_named(sorted(inputs + paths, key=lambda operand: operand[0])), "the {} product",
                             shape, rdt, "pass out= a .npy path, or an array such as a numpy.memmap")
        return np.empty(shape, dtype=rdt)
    floats = ("float64", "float32", "float16", "bfloat16")
    hint = f" (dtype={out.dtype} asks for the product in {out.dtype})" if isinstance(out, np.ndarray) \
        and out.dtype.isnative and _dtype_name(out.dtype) in floats else ""
    checked_out(out, rdt, shape, rows_only=True, shown_shape=user_shape, dtype_hint=hint)
    _check_out_overlap(out, inputs, paths)
    return out


def _gpu_result(out, gpus, shape, dtype, user_shape):
    """The GPU array the result goes to: out, checked not to overlap a GPU input, or a new one
    from the framework of the first GPU input (out= is asked for in numpy's shape, user_shape)."""
    if out is None:
        result = _gpu_arrays.new_result(gpus[0][1], shape, dtype)
        if result is None:
            raise InputError(f"out: a product of GPU arrays that are neither torch nor CuPy ones needs out=, a GPU "
                             f"array of {dtype} of shape {user_shape}")
        return result
    lo, hi = _gpu_arrays.span("out", out)
    for name, x in gpus:
        xlo, xhi = _gpu_arrays.span(name, x)
        if lo < xhi and xlo < hi:
            raise InputError(f"out shares memory with the input '{name}': writing the result would overwrite the "
                             "input while it is read; pass a separate array (or out=None)")
    return out


def matmul(A: ArrayLike | Path, B: ArrayLike | Path | None = None, out: Path | np.ndarray | None = None, *,
           transpose_a: Flag = False, transpose_b: Flag = False, dtype: DTypeLike | None = None,
           backend: Backend | None = None, device: Integer | None = None, devices: Devices | None = None,
           gpu_mem: Size | None = None,
           host_mem: Size | None = None, threads: Integer | None = None, tf32: Flag = False, resume: Flag = False,
           context: Context | None = None, explain: Flag = False, tile: Integer | None = None, plan: Plan = False,
           progress: Progress | None = None, stats: dict | None = None) -> Any:
    """The dense product C = op(A)·op(B), tile by tile within the memory budgets.

    Parameters
    ----------
    A : array_like or path
        A 2-D numpy array (float64, float32, float16, bfloat16 from ml_dtypes, int8-64,
        uint8-64, bool; read in place when its rows are contiguous), or the path of a .npy file.
        On a GPU, an array in page-locked memory (``outcore.empty_pinned``, or memory pinned
        by CUDA or a framework) in the compute dtype is uploaded from where it is, without a
        copy on the host. A GPU array (a CUDA torch tensor, a CuPy array, anything with
        ``__cuda_array_interface__``) is read where it is, on its device: it must have
        contiguous rows and be in the compute dtype or one promoted to it on the device (an
        int8 tensor times a float32 one); the product then runs on the GPU. A transposed
        view, or B=None, needs A, B and the result all on one GPU (then it is one cuBLASLt
        call with its transposes). A 1-D array is read as numpy's matmul reads it: A as a
        row, B as a column, each its own transpose, and the result drops that dimension
        (a vector with a vector is a scalar); a 1-D .npy path is read so too. A product of a
        vector in memory is returned, not written to a path (one of 1-D .npy paths is, with
        numpy's shape).
    B : array_like or path, optional
        The second operand, as A. None computes op(A)·op(A)ᵀ from its upper tiles (an
        exactly symmetric result).
    out : path or numpy.ndarray, optional
        None (return a new array), a path (a .npy written under a temporary name and
        renamed; the path is returned; not the file an input array maps), or a writeable array of the result's shape and dtype
        whose rows are contiguous (filled and returned; it may not share memory with an input;
        on a GPU a page-locked one receives its tiles by direct download, but for A·Aᵀ, whose
        tiles are mirrored), or a GPU array of the result's shape and dtype with contiguous
        rows. With a GPU operand and no out, the result is a new GPU array of that operand's
        framework (torch or CuPy) on its device. When A, B and the result are all on one GPU
        with contiguous rows, the product is one cuBLASLt call on them where they are.
    transpose_a : bool, default False
        op(A) = Aᵀ.
    transpose_b : bool, default False
        op(B) = Bᵀ.
    dtype : numpy dtype, optional
        float64, float32, float16, bfloat16 (ml_dtypes), int32 (int8 and bool inputs alone) or
        bool (two bool inputs): the type the product is computed and returned in; default
        numpy's result type (bool x bool is bool, any of the ANDs), except int8 x int8 (and
        bool x int8), which is int32 (exact), and float16 or bfloat16, whose float32 sums
        are returned as float32 unless the half type is asked for. Integer pairs other than
        int8 x int8 (and bool) need a float here.
    backend : {"auto", "cpu", "cuda"}, optional
        "auto" (the default: the cost model's pick), "cpu" or "cuda".
    device : int, optional
        The CUDA device index (default 0), as the CLI's --device; devices= overrides it.
        Nothing on the CPU.
    devices : str or sequence, optional
        CUDA devices: "0,1", "all", "0:2" (device 0 split in two), or [0, 1]; default device 0.
    gpu_mem : int or str, optional
        The device budget, bytes or "2G", "50%"; default 90% of the device's free memory.
    host_mem : int or str, optional
        Host memory budget in bytes, or "4G", "25%" (of the machine's memory); default 80% of
        the memory available. Tiles and K panels fit in it beside the file inputs it maps
        (those that take at most half of it); a larger file input is read in panels.
    threads : int, optional
        CPU threads, 1 to 4096 (default: all cores).
    tf32 : bool, default False
        float32 on a GPU: allow TF32 tensor cores (a 10-bit mantissa).
    resume : bool, default False
        Keep a journal beside the out path (PATH.outcore-journal) so that the same call with
        resume=True, made again after an interruption, continues where it stopped and writes
        the bytes of an uninterrupted run. A journal of other inputs, or of another plan
        (another host_mem, gpu_mem or backend), is refused. Needs out to be a path (an
        InputError otherwise). See docs/resume.md.
    context : outcore.Context, optional
        The Context whose library context the call runs on; default the module's default.
        Its settings (backend, device, gpu_mem, host_mem, threads) are used where the call
        does not give its own; its device is the GPU a job placed there runs on (devices=
        overrides it).
    explain : bool, default False
        True returns the text of ``outcore matmul --explain`` (the cost model's reasons for
        the backend) instead of running; a result that is not a path is explained as the .npy
        file the command would write.
    tile : int, optional
        The tile edge of C in rows, as ``--tile`` (default: the planner's, from the budgets);
        which tiles and K panels a product has can change its bits (docs/matmul.md).
    plan : bool or "json", default False
        True returns the text of ``outcore matmul --plan`` (backend, tiles, K panels and what
        bounds them) instead of running; with explain, the plan then the reasons. "json"
        returns the plan as a dict, the object of ``--plan --json`` (not with explain).
    progress : callable, optional
        progress(done, total), called about ten times a second while the product runs (done
        and total in multiply-adds on the CPU, tiles on the GPU), and once at the end
        with done == total; an exception it raises (KeyboardInterrupt too) cancels the job and
        is raised by matmul once the job has stopped, as for outcore.gram. On the CPU the
        calling thread runs the product, which waits while the callback runs (a slow one is
        called less often: docs/python.md).
    stats : dict, optional
        A dict filled once the product has run with the run's keys of ``outcore matmul
        --json``: m, n, k, dtype, backend, backend_desc, backend_explain, seconds, flops,
        gflops_per_second, tiles, bytes_read, bytes_written, bytes_h2d, bytes_d2h,
        host_budget_bytes, host_peak_bytes, dev_peak_bytes, threads.

    Returns
    -------
    numpy.ndarray, GPU array, path or str
        The result (a new array or the out array), or the out path; with plan or explain
        their text.

    Raises
    ------
    InputError
        Shapes whose inner dimensions differ, a dtype matmul does not compute, a bad file or
        argument, or without out a result larger than the machine's memory (a ValueError);
        the message names the file or argument.
    OutOfMemoryError, DeviceError, UnsupportedError, IOFailure, Error
        The job failed.
    KeyboardInterrupt
        After Ctrl-C has cancelled the job; an output file is then not written.

    Examples
    --------
    >>> import numpy as np, outcore
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> outcore.matmul(a, a, transpose_b=True)
    array([[ 5., 14.],
           [14., 50.]])
    >>> outcore.matmul(np.ones((2, 3), np.int8)).dtype
    dtype('int32')
    """
    single_gpu_mem("matmul", gpu_mem)
    own_gpu = dict(gpu_mem=gpu_mem, device=device)  # the call's own, for warn_gpu_only
    given = call_resources(context, backend=backend, device=device, gpu_mem=gpu_mem, host_mem=host_mem,
                           threads=threads)
    backend, gpu_mem, host_mem, threads = given["backend"], given["gpu_mem"], given["host_mem"], given["threads"]
    opts = _lib.MatmulOptions()
    keep: list = []
    transpose_a, transpose_b = flag("transpose_a", transpose_a), flag("transpose_b", transpose_b)
    tf32, resume = flag("tf32", tf32), flag("resume", resume)
    a, opts.transpose_a, a_arr, a_vector = _operand("A", A, bool(transpose_a), keep, "row")
    b_vector = False
    b_ptr, inputs, paths, gpus = None, [], [], []
    _sort_input("A", A, a_arr, inputs, paths, gpus)
    if B is None:
        opts.gram = 1
        opts.transpose_b = bool(transpose_b)  # refused by the library: A·Aᵀ has no B
    elif B is A and a_arr is not None and not a_vector:
        # The same array as A: the same memory (A's copy, when it needed one), so that the
        # library sees A·Aᵀ where op(B) is op(A)ᵀ, and transposes flipped alike.
        flipped = bool(opts.transpose_a) != bool(transpose_a)
        b, opts.transpose_b, b_arr = a, bool(transpose_b) != flipped, a_arr
        b_ptr = ctypes.byref(b)
        _sort_input("B", B, b_arr, inputs, paths, gpus)
    else:
        b, opts.transpose_b, b_arr, b_vector = _operand("B", B, bool(transpose_b), keep, "col")
        b_ptr = ctypes.byref(b)
        _sort_input("B", B, b_arr, inputs, paths, gpus)
    if dtype is not None:
        try:  # the result is written in this machine's byte order whatever the dtype's says
            dtype = np.dtype(dtype).newbyteorder("=")
        except TypeError:
            pass  # not a dtype: refused below, naming it
        name = _dtype_name(dtype)
        if name is None:
            # those numpy has no type of are ml_dtypes' (bfloat16)
            results = [n if n in _lib.matmul_dtypes(_lib.OC_MATMUL_DTYPE_NPY) else f"{n} (ml_dtypes)"
                       for n in _lib.matmul_dtypes(_lib.OC_MATMUL_DTYPE_RESULT)]
            raise InputError(f"dtype={dtype!r}: expected {', '.join(results[:-1])} or {results[-1]}")
        opts.dtype = _CODES[name]
    opts.tf32 = 1 if tf32 else 0
    if resume and not _is_path(out):
        raise InputError("resume: only a product written to a .npy path (out=PATH) can be resumed")
    opts.resume = 1 if resume else 0
    if backend is not None:
        opts.backend = parse_backend(backend)
    if threads is not None:
        opts.threads = threads_count(threads)
    if devices is not None:
        text = c_text("devices", _device_list(devices))
        keep.append(text)
        opts.devices = text
    # the call's device, else the Context's: the GPU a job placed there runs on (a list, devices=, asks for one)
    set_device_budgets(opts, given["device"], one_gpu_mem("matmul", gpu_mem, given["device"], devices), host_mem)
    warn_gpu_only(opts.backend, 2, tf32=tf32 == 1, **own_gpu)  # once they are known good

    # numpy's shape of a product of a vector: the vector's dimension dropped (A·Aᵀ of one: v·v)
    drop = (a_vector, b_vector or (B is None and a_vector))
    if _is_path(out) and (a_vector and not _is_path(A) or b_vector and not _is_path(B)):
        raise InputError("out: a product of a 1-D array in memory is returned, not written to a .npy path: give "
                         "out=None or an array, pass the vector as a 2-D array, or save it as a 1-D .npy")
    if tile is not None:
        opts.tile = positive_int("tile", tile)
    explain, plan, stats = flag("explain", explain), plan_flag(plan), checked_stats(stats)
    if plan == 2 and explain:
        raise InputError('plan="json" returns the plan alone, as a dict: ask explain=True in a call of its own')
    checked_progress(progress)
    with lease(context) as ctx:
        code, rows, cols = ctypes.c_int(), ctypes.c_int64(), ctypes.c_int64()
        try:
            check(lib.oc_matmul_result(ctx, ctypes.byref(a), b_ptr, ctypes.byref(opts), ctypes.byref(code),
                                       ctypes.byref(rows), ctypes.byref(cols)), ctx)
        except InputError as e:
            raise _as_given(e, opts.transpose_a != bool(transpose_a), opts.transpose_b != bool(transpose_b)) from None
        if plan == 2:  # the CLI's --plan --json
            return json.loads(_plan_text(ctx, a, b_ptr, out, opts, 0, as_json=1))
        if plan or explain:  # the CLI's --plan, --explain or both, the plan first
            return ((_plan_text(ctx, a, b_ptr, out, opts, 0) if plan else "") +
                    (_plan_text(ctx, a, b_ptr, out, opts, 1) if explain else ""))
        job_stats = _lib.MatmulStats()
        shape, name = (rows.value, cols.value), _lib.MATMUL_DTYPES[code.value]
        user_shape = tuple(n for n, d in zip(shape, drop) if not d)
        out2 = _as_matrix(out, user_shape, drop, name) if any(drop) and out is not None and not _is_path(out) else out
        if _is_path(out):
            c, result = _lib.MatmulArray(), out
            c.path = _out_path(out, "matmul")
            check_out_path_not_input(c.path, [("A", A), ("B", B)])
        elif (out is None and gpus) or (out is not None and _gpu_arrays.is_gpu_array(out)):
            result = _gpu_result(out2, gpus, shape, name, user_shape)
            c = _gpu_arrays.result_array(result, shape, name, _CODES)
        else:
            result = _host_result(out2, shape, name, inputs, paths, user_shape)
            c = _lib.MatmulArray()
            c.data = result.ctypes.data if result.size else None
            c.dtype, c.rows, c.cols = code.value, shape[0], shape[1]
            c.ld = result.strides[0] // result.itemsize if shape[0] > 1 else shape[1]
        depth = a.rows if opts.transpose_a else a.cols
        in_memory = not (paths or resume or _is_path(out))
        short = in_memory and shape[0] * shape[1] * depth <= (_SHORT_GPU if gpus else _SHORT_HOST)
        reports = _ProgressCall(progress, ctx) if progress is not None else None
        if reports is not None:
            opts.progress = reports.callback
        status = run_on_context(ctx, lambda: lib.oc_matmul(ctx, ctypes.byref(a), b_ptr, ctypes.byref(c),
                                                           ctypes.byref(opts), ctypes.byref(job_stats)), short)
        if reports is not None and reports.error is not None:
            raise reports.error
        check(status, ctx)
        if stats is not None:
            stats.update(_stats_dict(job_stats))
        if not any(drop):
            return result
        if out is not None:
            return out
        result = result.reshape(user_shape)
        return result[()] if isinstance(result, np.ndarray) and not user_shape else result  # numpy's scalar


def _stats_dict(s):
    """The job's statistics that matmul(stats=...) reports, from an oc_matmul_stats, by the keys
    of `outcore matmul --json` (tools/cmd_matmul.c) that describe the run."""
    return {"m": s.m, "n": s.n, "k": s.k, "dtype": _lib.MATMUL_DTYPES[s.dtype],
            "backend": _lib.text(lib.oc_backend_name(s.backend)),
            "backend_desc": s.backend_desc.decode(errors="replace"),
            "backend_explain": s.backend_explain.decode(errors="replace"), "seconds": s.seconds, "flops": s.flops,
            "gflops_per_second": s.flops / s.seconds / 1e9 if s.seconds > 0 else 0.0, "tiles": s.tiles,
            "bytes_read": s.bytes_read, "bytes_written": s.bytes_written, "bytes_h2d": s.bytes_h2d,
            "bytes_d2h": s.bytes_d2h, "host_budget_bytes": s.host_budget_bytes, "host_peak_bytes": s.host_peak_bytes,
            "dev_peak_bytes": s.dev_peak_bytes, "threads": s.threads}


def _plan_text(ctx, a, b_ptr, out, opts, explain, as_json=0):
    """The text of `outcore matmul --plan` (explain 0) or `--explain` (1) for this call
    (oc_matmul_plan), nothing run: the output planned as the .npy file out names, or as one;
    as_json=1: the plan's JSON object."""
    c = None
    if _is_path(out):
        c = _lib.MatmulArray()
        c.path = _out_path(out, "matmul")
    text = ctypes.c_void_p()
    check(lib.oc_matmul_plan(ctx, ctypes.byref(a), b_ptr, ctypes.byref(c) if c is not None else None,
                             ctypes.byref(opts), as_json, explain, ctypes.byref(text)), ctx)
    return _lib.owned_text(text)


def _as_given(err, flipped_a, flipped_b):
    """err with the transposes it advises ("they multiply with transpose_a") said of the
    caller's flags: the library was given the flag flipped for an operand read as its
    transpose (a transposed view), so its "with" is the caller's "without"."""
    message = err.message
    for flipped, flag in ((flipped_a, "transpose_a"), (flipped_b, "transpose_b")):
        if flipped:
            message = re.sub(r"\b(with|without) " + flag,
                             lambda m: ("without " if m.group(1) == "with" else "with ") + flag, message)
    return err if message == err.message else type(err)(message, err.status, err.trace)


def _as_matrix(out, user_shape, drop, dtype):
    """out, of a vector product's shape (numpy's: user_shape), as the 2-D view the library
    writes (the dropped dimensions of one)."""
    # A numpy scalar has shape () too, but indexing it makes a new array: the product would
    # be written there and lost.
    if getattr(out, "shape", None) != user_shape or isinstance(out, np.generic):
        raise InputError(f"out: expected an array of {dtype} of shape {user_shape} (a product of a 1-D array, as "
                         "numpy's matmul shapes it)")
    try:
        return out[tuple(None if d else slice(None) for d in drop)]
    except (TypeError, IndexError):
        raise InputError(f"out: {type(out).__name__} cannot be viewed as the 2-D result the library writes; "
                         "give out=None") from None
