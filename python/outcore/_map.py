"""outcore.map: a numpy-style expression over arrays or .npy files of any size.

    c = outcore.map("a * b + 1", a=a, b=b)                  # a new array
    outcore.map("a * b", a="A.npy", b="B.npy", out="C.npy")  # file to file, out of core
    total = outcore.map("a * b", a=a, b=b, reduce="sum")      # never materialises a * b

Operands are numpy arrays (read in place when C-contiguous, native and of a supported dtype,
or Fortran-contiguous beside only operands in Fortran order: _fortran_plan; copied otherwise),
paths of .npy files (memory-mapped by the library), or Python scalars (weak in numpy's NEP 50
promotion, as in numpy: float32 * 0.5 stays float32). numpy scalars (np.float32(2)) are
strong, as in numpy. See docs/map.md.

The job runs as gram's does (_gram.py): in a worker thread while the calling thread, when it
is the main thread, waits in short steps, so that Ctrl-C cancels the job at once and raises
KeyboardInterrupt when the library has stopped (a half-written output file is removed).
"""
from __future__ import annotations

import ctypes
import difflib
import math
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._calls import Progress as _ProgressCall, checked_progress, checked_stats, run_on_context
from ._context import call_resources, lease
from ._options import (_integer, c_path, c_text, check_fits_in_memory, checked_out, flag, no_array_form, npy_header,
                       one_gpu_mem, parse_backend, parse_gpu_mem, parse_host_mem, single_gpu_mem, threads_count,
                       unmasked, warn_gpu_only)
from .errors import InputError, check, from_status

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ._context import Context
    from ._types import Backend, Flag, Integer, Path, Progress, Reduction, Size

lib = _lib.lib

# The numpy dtypes of the oc_map_dtype codes in order, by the library's names (numpy's).
_DTYPES = [np.dtype(name) for name in _lib.names(_lib.lib.oc_map_dtype_name)]
_CODES = {dt: i for i, dt in enumerate(_DTYPES)}
# The reductions by the library's names (oc_map_reduce_name; code 0, "none", is reduce=None).
_REDUCE = {None: 0, **{name: code for code, name in enumerate(_lib.names(_lib.lib.oc_map_reduce_name)) if code}}


def _is_path(x):
    return isinstance(x, (str, bytes, os.PathLike))


def _as_array(name, x):
    """x as a numpy array of a map dtype, in either byte order, not copied yet (_array)."""
    x = unmasked(name, x)  # its own refusal, as gram's and matmul's
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # a ragged list, say: an argument error like the others
        raise InputError(f"{name}: not an array: {' '.join(str(exc).split())}") from None
    if no_array_form(x, arr):
        raise InputError(f"{name} must be an array (or nested lists), a .npy path or a number; got {type(x).__name__}")
    if arr.dtype.newbyteorder("=") not in _CODES:
        raise InputError(f"{name}: dtype {arr.dtype} is not one map takes (bool, int8-64, uint8-64, float32, float64)")
    return arr


def _fortran(arr):
    """Whether arr lies in Fortran order and not in C order (then it has 2 dimensions or more
    longer than 1): read in place with oc_map_array.fortran_order where _fortran_plan allows."""
    return arr.flags.f_contiguous and not arr.flags.c_contiguous


def _array(arr, fortran):
    """arr as the library reads it in place: in this host's byte order, aligned, and
    C-contiguous, or with fortran (a _fortran array) Fortran-contiguous; copied once, in that
    order, where it is not."""
    dt = arr.dtype.newbyteorder("=") if arr.dtype.byteorder not in ("=", "|") else arr.dtype
    order = "F" if fortran else "C"
    laid = arr.flags.f_contiguous if fortran else arr.flags.c_contiguous
    if dt != arr.dtype or not laid or not arr.flags.aligned:
        arr = np.array(arr, dtype=dt, order=order)  # a copy: contiguous, aligned, in this host's order
    return arr


def _layout(x):
    """(order, shape) of an operand as the library would plan it: order "F" for a Fortran-order
    array (_fortran) or .npy file, "both" for one with no element or at most one dimension
    longer than 1 (the same bytes in either order), else "C" (a view in neither order too: it
    is copied to C order); None for a path whose header numpy does not read."""
    if _is_path(x):
        header = npy_header(x)
        if header is None:
            return None
        shape, fortran = tuple(header[0]), bool(header[1])
    else:
        shape, fortran = x.shape, _fortran(x)
    if math.prod(shape) == 0 or sum(n > 1 for n in shape) <= 1:
        return "both", shape
    return ("F" if fortran else "C"), shape


def _fortran_plan(used):
    """Whether the _fortran arrays among used, the operands the expression names ((name, array
    or path) pairs), are read in place in Fortran order: there is one, and every used operand
    that is not a single element is in Fortran order or in both orders with as many
    dimensions (a single element with no more): the library's rule (docs/map.md, "Fortran-order
    files"). Otherwise they are copied to C order, as any mix is."""
    if not any(not _is_path(x) and _fortran(x) for _, x in used):
        return False  # no header is read
    layouts = [_layout(x) for _, x in used]
    if None in layouts:  # the library names what is wrong with the file
        return False
    ndims = {len(shape) for order, shape in layouts if order == "F"}
    if len(ndims) != 1:
        return False
    nd = ndims.pop()
    return all((order != "C" and len(shape) == nd) or (math.prod(shape) == 1 and len(shape) <= nd)
               for order, shape in layouts)


# The Python ints map takes: those of int64 and uint64, as numpy's promotion rules do.
_INT_LOW, _INT_HIGH = -2**63, 2**64 - 1


def _literal(name, value):
    if isinstance(value, (bool, np.bool_)) and not isinstance(value, np.generic):
        return "True" if value else "False"
    if isinstance(value, int):
        if not _INT_LOW <= value <= _INT_HIGH:
            shown = str(value) if value.bit_length() <= 128 else f"an int of {value.bit_length()} bits"
            raise InputError(f"{name}={shown}: Python integer out of bounds for int64 and uint64, the widest integer "
                             f"types (numpy raises OverflowError too); give it as a float for a float result")
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    raise InputError(f"{name}: {type(value).__name__} is not a Python scalar")


def _memmap_file(x):
    """The file an array maps (numpy.memmap, or a view of one), else None."""
    while x is not None:
        if isinstance(x, np.memmap) and getattr(x, "filename", None):
            return x.filename
        x = x.base if isinstance(x, np.ndarray) else None
    return None


def _file_mappings():
    """(start, end, path) of this process's mappings of files (Linux: /proc/self/maps; empty
    where it cannot be read), read once per check. The file is read as bytes, since a path
    need not be UTF-8; the kernel writes a newline in a path as \\012, read back (the raw
    text is kept where no file has the path with the newline)."""
    spans = []
    try:
        with open("/proc/self/maps", "rb") as maps:
            for line in maps:
                fields = line.rstrip(b"\n").split(None, 5)
                if len(fields) == 6 and fields[5].startswith(b"/") and not fields[5].endswith(b" (deleted)"):
                    start, end = (int(v, 16) for v in fields[0].split(b"-"))
                    path = fields[5]
                    if b"\\012" in path and os.path.exists(path.replace(b"\\012", b"\n")):
                        path = path.replace(b"\\012", b"\n")
                    spans.append((start, end, os.fsdecode(path)))
    except OSError:
        pass
    return spans


def _mapped_files(x, spans):
    """The files whose mappings hold array x's memory: its numpy.memmap's, and those of spans
    (_file_mappings) over its address range, which also finds a mapping numpy does not trace
    (np.frombuffer of an mmap, as_strided of a memmap)."""
    files = [f] if (f := _memmap_file(x)) is not None else []
    if not isinstance(x, np.ndarray) or x.size == 0:
        return files
    start = x.__array_interface__["data"][0]
    lo = start + sum((n - 1) * st for n, st in zip(x.shape, x.strides) if st < 0)
    hi = start + sum((n - 1) * st for n, st in zip(x.shape, x.strides) if st > 0) + x.itemsize
    return files + [path for a, b, path in spans if a < hi and lo < b]


def _check_out_overlap(out, arrays, paths):
    """An out array that shares memory with an input array (as the library reads it), or that
    maps an input file, is refused: the result would overwrite inputs while they are read,
    which numpy avoids with copies."""
    for name, arr in arrays:
        if np.shares_memory(out, arr):
            raise InputError(f"out shares memory with the input '{name}': writing the result would overwrite the "
                             "input while it is read; pass a separate array (or out=None)")
    # Two mappings of one file share no memory as numpy sees it, but they are the same bytes.
    spans = _file_mappings()
    mapped = _mapped_files(out, spans)
    if not mapped:
        return
    inputs = paths + [(name, f) for name, arr in arrays for f in _mapped_files(arr, spans)]
    for name, path in inputs:
        for m in mapped:
            try:
                same = os.path.samefile(m, path)
            except (OSError, TypeError, ValueError):
                same = False
            if same:
                raise InputError(f"out maps the input file of '{name}' ({os.fsdecode(path)}): writing the result "
                                 "would overwrite the input while it is read; pass a separate array (or out=None)")


def operands_named(operands):
    """"A.npy and B": operands, (name, value) pairs, each by its path where it is a file, else by
    its name, for a message about what they make."""
    return " and ".join(os.fsdecode(x) if _is_path(x) else name for name, x in operands)


def check_out_path_not_input(out, operands):
    """An out= path naming the file an input array maps (a numpy.memmap, a view of one, or a
    mapping numpy does not trace: _mapped_files), by any name, is refused before any work, as
    the library refuses an output path that is an input path (output_check.c): the finished
    result would be renamed over the input. Files are compared by (st_dev, st_ino), with the
    output looked up through its links as there; a path that does not exist yet is no input.
    operands: (name, value) as the caller gave them (a copy made later maps nothing)."""
    try:
        target = os.stat(out)
    except (OSError, TypeError, ValueError):
        return
    spans = None
    for name, x in operands:
        if not isinstance(x, np.ndarray):
            continue
        if spans is None:
            spans = _file_mappings()
        for mapped in _mapped_files(x, spans):
            try:
                same = os.stat(mapped)
            except (OSError, TypeError, ValueError):
                continue
            if (same.st_dev, same.st_ino) == (target.st_dev, target.st_ino):
                raise InputError(f"{os.fsdecode(out)}: the output is the input file of '{name}' ({os.fsdecode(mapped)}), "
                                 "which it maps: writing it would replace the input; choose another output name")


def _shown_line(raw):
    """Expression bytes as one line of the message: a newline or tab becomes a blank, as the
    library folds them in its messages, and other control bytes are escaped (\\xNN)."""
    return _lib.shown(raw.translate(bytes.maketrans(b"\n\r\t", b"   ")))


def _with_caret(message, expr):
    """A syntax error's message, with the expression under it and a caret under the column the
    message names (in bytes from 1, as the library counts), wherever escapes or multi-byte
    characters before it change the width (the CLI's print_caret, tools/cmd_map.c)."""
    prefix = "syntax error in the expression at column "
    if message.startswith(prefix):
        try:
            column = int(message[len(prefix):].split(":", 1)[0])
        except ValueError:
            return message
        raw = expr.encode()
        if not 1 <= column <= len(raw) + 1:
            return message
        return f"{message}\n  {_shown_line(raw)}\n  {' ' * len(_shown_line(raw[:column - 1]))}^"
    return message


def _axis(axis):
    """The one axis to reduce over: an int (a numpy integer, or a tuple of one, as numpy takes
    it); a float or a bool is refused, as numpy refuses them, not truncated."""
    if isinstance(axis, tuple):
        if len(axis) != 1:
            raise InputError(f"axis={axis!r}: map reduces over one axis, or all of them with axis=None")
        axis = axis[0]
    return _integer("axis", axis, -_lib.OC_MAP_MAX_DIMS, _lib.OC_MAP_MAX_DIMS - 1)


def _out_path(out, what="map"):
    """out= as a path: map and matmul write .npy files, so a name without that extension is
    refused, as the CLI refuses it (a name that is only ".npy" has no extension, as
    os.path.splitext says)."""
    raw = c_path("out", out)  # a NUL byte first: it would end the name elsewhere
    if os.path.splitext(os.fsdecode(raw))[1].lower() != ".npy":
        raise InputError(f"out={os.fsdecode(raw)!r}: {what} writes .npy files: name the output with the .npy "
                         "extension")
    return raw


# map's keywords: an operand named close to one (axes=0, threds=2) is most likely one misspelt.
_MAP_KEYWORDS = ("out", "dtype", "reduce", "axis", "backend", "threads", "host_mem", "gpu_mem", "context", "explain",
                 "progress", "stats")


def _keyword_like(name):
    """The keyword of map that name most likely misspells, or None: one close by difflib's
    measure (axes, threds), or one sharing its start with name (reduction, output, backends,
    host_memory): at least the whole keyword or 4 characters."""
    close = difflib.get_close_matches(name, _MAP_KEYWORDS, n=1, cutoff=0.75)
    if close:
        return close[0]
    low = name.lower()
    for k in _MAP_KEYWORDS:
        if len(os.path.commonprefix([low, k])) >= min(len(k), 4):
            return k
    return None


def _names_in(expr):
    """The names expr holds (its operands' and its functions'): the operands it uses are among
    them."""
    # Not the tail of a number: "1e5" names no e5, "0x1f" no x1f.
    return set(re.findall(r"(?<![0-9A-Za-z_.])[A-Za-z_][A-Za-z0-9_]*", expr if isinstance(expr, str) else ""))


def _check_operand_names(expr, operands):
    """An operand the expression does not name, whose name is close to one of map's keywords,
    is refused: **operands takes every unknown keyword, so a misspelt option (axes=0) would
    otherwise be an unused operand and the option silently not applied."""
    names = _names_in(expr)
    for name in operands:
        if name in names:
            continue
        close = _keyword_like(name)
        if close:
            raise InputError(f"{name}=: the expression names no '{name}', and map has no such keyword: did you mean "
                             f"{close}=?")


def _stats_dict(stats):
    """The job's statistics that map(stats=...) reports, from an oc_map_stats, by the keys of
    `outcore map --json` (tools/cmd_map.c): bytes_per_second as the CLI derives it."""
    moved = stats.bytes_read + stats.bytes_written
    return {"backend": _lib.text(lib.oc_backend_name(stats.backend)),
            "backend_desc": stats.backend_desc.decode(errors="replace"), "seconds": stats.seconds,
            "elements": stats.elements, "bytes_read": stats.bytes_read, "bytes_written": stats.bytes_written,
            "bytes_per_second": moved / stats.seconds if stats.seconds > 0 else 0.0, "threads": stats.threads,
            "host_peak_bytes": stats.host_peak_bytes}


def map(expr: str, out: Path | np.ndarray | None = None, *, dtype: DTypeLike | None = None,
        reduce: Reduction | None = None, axis: Integer | None = None, backend: Backend | None = None,
        threads: Integer | None = None, host_mem: Size | None = None, gpu_mem: Size | None = None,
        context: Context | None = None, explain: Flag = False, progress: Progress | None = None,
        stats: dict | None = None, **operands: Any) -> Any:
    """Evaluates expr over the named operands with numpy's semantics (see the module doc).

    Parameters
    ----------
    expr : str
        A numpy-style expression over the operands' names ("a * b + 1"). Expressions are
        limited in size and nesting (docs/map.md); past a limit, InputError.
    out : path or numpy.ndarray, optional
        None (return a new array; a numpy scalar for a reduction to one value), a path (a
        .npy file written under a temporary name and renamed; the path is returned; a name
        without the .npy extension raises InputError) or a
        C-contiguous writeable array of the result's shape and dtype (filled and returned;
        Fortran-contiguous where the result is in Fortran order: operands in Fortran order).
        An out array that shares memory with an input array, or maps an input's .npy file,
        raises InputError: numpy would compute as if from copies, map reads in place. An
        out path naming the file an input array maps (a numpy.memmap) raises InputError.
    dtype : numpy dtype, optional
        The output dtype (numpy.can_cast(result, dtype, "same_kind") must hold), in either
        byte order: the result is in this machine's; default the expression's own.
    reduce : {"sum", "mean", "min", "max"}, optional
        A reduction over all elements, or over `axis`; None (the default) keeps every
        element.
    axis : int, optional
        With reduce, the axis to reduce over (negative counts from the end; a tuple of one
        axis too). A float, a bool or several axes raise InputError.
    backend : {"auto", "cpu", "cuda"}, optional
        "auto" (the default: the cost model's pick), "cpu" or "cuda" (device 0,
        reductions included: reduced per chunk on the device, docs/map.md).
    threads : int, optional
        CPU worker threads, 1 to 4096 (default: all cores).
    host_mem : int or str, optional
        Host memory budget in bytes, or "4G", "25%" (of the machine's memory); default 80% of
        the memory available. File inputs are mapped, not loaded.
    gpu_mem : int or str, optional
        The device budget, bytes or "2G", "50%"; default 90% of the device's free memory.
    context : outcore.Context, optional
        The Context whose library context the call runs on; default the module's default
        context. Its backend, gpu_mem, host_mem and threads are used where the call does not
        give its own (map runs on device 0: the Context's device is not used).
    explain : bool, default False
        True returns the text of oc_map_explain (the plan and its cost) instead of running
        (progress and stats are then checked and left unused).
    progress : callable, optional
        progress(done, total), called about ten times a second while the job runs, and once
        at the end with done == total, in elements of the element-wise result (on the GPU,
        chunks' rows); an exception it raises (KeyboardInterrupt too) cancels the job and is
        raised by map once the job has stopped, as for outcore.gram.
    stats : dict, optional
        A dict that map fills once the job has run, with the keys of `outcore map --json`'s
        summary: "backend", "backend_desc", "seconds" (the run's wall time, output written),
        "elements" (of the element-wise result evaluated), "bytes_read", "bytes_written",
        "bytes_per_second" (both over seconds), "threads" (0 on the GPU) and
        "host_peak_bytes" (the process's peak resident memory).
    **operands : array_like, path or scalar
        The expression's names: numpy arrays (read in place when C-contiguous, native and of
        a supported dtype: bool, int8-64, uint8-64, float32, float64, or Fortran-contiguous
        where every other operand named that is not a single element is in Fortran order or
        in both orders with as many dimensions, the result then in Fortran order; copied
        otherwise), paths of .npy files (memory-mapped by the library), or Python scalars
        (weak in NEP 50's promotion: float32 * 0.5 stays float32; numpy scalars are strong).

    Returns
    -------
    numpy.ndarray, numpy scalar, path or str
        The result (a new array, a numpy scalar for a reduction to one value, or the out
        array), the out path, or with explain the plan's text.

    Raises
    ------
    InputError
        A bad expression, operand or argument, or without out a result larger than the
        machine's memory (a ValueError); a syntax error's message shows the expression with a
        caret under the column.
    OutOfMemoryError, DeviceError, UnsupportedError, IOFailure, Error
        The job failed.
    KeyboardInterrupt
        After Ctrl-C has cancelled the job; an output file is then not written.

    Examples
    --------
    >>> import numpy as np, outcore
    >>> a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    >>> outcore.map("a * b + 1", a=a, b=b)
    array([[1., 2., 3.],
           [4., 5., 6.]])
    >>> float(outcore.map("a * b", a=a, b=b, reduce="sum"))
    15.0
    >>> outcore.map("a * b", a="A.npy", b="B.npy", out="C.npy")   # doctest: +SKIP
    'C.npy'
    """
    single_gpu_mem("map", gpu_mem)
    checked_progress(progress)
    checked_stats(stats)
    own_gpu_mem = gpu_mem  # the call's own, for warn_gpu_only
    given = call_resources(context, backend=backend, gpu_mem=gpu_mem, host_mem=host_mem, threads=threads)
    backend, gpu_mem, host_mem, threads = given["backend"], given["gpu_mem"], given["host_mem"], given["threads"]
    if not (reduce is None or isinstance(reduce, str)) or reduce not in _REDUCE:
        named = [name for name in _REDUCE if name]
        raise InputError(f"reduce={reduce!r}: expected {', '.join(named[:-1])} or {named[-1]}")
    opts = _lib.MapOptions()
    opts.fortran_out = 1  # a Fortran-order result (of Fortran-order files) goes to an array in that order
    opts.backend = parse_backend("auto" if backend is None else backend)
    if dtype is not None:
        try:  # the result is in this machine's byte order, as the arrays map reads are
            dt = np.dtype(dtype).newbyteorder("=")
        except (TypeError, ValueError):
            raise InputError(f"dtype={dtype!r}: not a numpy dtype") from None
        if dt not in _CODES:
            raise InputError(f"dtype={dtype!r}: not a map dtype (bool, int8-64, uint8-64, float32, float64)")
        opts.dtype = _CODES[dt]
    opts.reduce = _REDUCE[reduce]
    explain = flag("explain", explain)
    if axis is not None:
        opts.has_axis, opts.axis = 1, _axis(axis)
    if threads is not None:
        opts.threads = threads_count(threads)
    if host_mem is not None:
        opts.host_mem_bytes = parse_host_mem(host_mem)
    gpu_mem = one_gpu_mem("map", gpu_mem)  # device 0's: map runs there
    if gpu_mem is not None:
        opts.gpu_mem_bytes, opts.gpu_mem_fraction = parse_gpu_mem(gpu_mem)
    warn_gpu_only(opts.backend, 2, gpu_mem=own_gpu_mem)  # once it is known good
    path = _out_path(out) if _is_path(out) else None
    if path is not None:
        check_out_path_not_input(path, list(operands.items()))

    _check_operand_names(expr, operands)
    keep = []  # every buffer and string the library reads must live until the call returns
    arrays, scalars = [], []
    inputs, paths = [], []  # (name, array as the library reads it), (name, path)
    given = []  # (name, array or path)
    for name, value in operands.items():
        if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
            s = _lib.MapScalar(c_text("operand name", name), _literal(name, value).encode())
            scalars.append(s)
            continue
        given.append((name, value if _is_path(value) else _as_array(name, value)))
    names = _names_in(expr)
    fortran = _fortran_plan([(name, x) for name, x in given if name in names])
    for name, value in given:
        a = _lib.MapArray()
        a.name = c_text("operand name", name)
        if _is_path(value):
            a.path = c_path(name, value)
            paths.append((name, value))
        else:
            a.fortran_order = int(fortran and _fortran(value))
            arr = _array(value, a.fortran_order)
            inputs.append((name, arr))
            shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
            keep += [arr, shape]
            a.data = arr.ctypes.data if arr.size else None
            a.dtype = _CODES[arr.dtype]
            a.ndim = arr.ndim
            a.shape = ctypes.cast(shape, _lib.c_int64_p)
        arrays.append(a)
    arr_t = (_lib.MapArray * max(len(arrays), 1))(*arrays)
    sca_t = (_lib.MapScalar * max(len(scalars), 1))(*scalars)

    with lease(context) as ctx:
        reports = _ProgressCall(progress, ctx) if progress is not None and not explain else None
        if reports is not None:
            opts.progress = reports.callback
        handle = ctypes.c_void_p()
        st = lib.oc_map_create(ctx, c_text("expression", expr), arr_t, len(arrays), sca_t, len(scalars), ctypes.byref(opts),
                               ctypes.byref(handle))
        if st != _lib.OC_OK:
            err = from_status(st, ctx)
            err.args = (_with_caret(err.args[0], expr),) + err.args[1:]
            raise err
        try:
            if explain:
                text = ctypes.c_void_p()
                check(lib.oc_map_explain(ctx, handle, 0, ctypes.byref(text)), ctx)
                return _lib.owned_text(text)
            rdt = _DTYPES[lib.oc_map_result_dtype(handle)]
            shp = (ctypes.c_int64 * _lib.OC_MAP_MAX_DIMS)()
            nd = lib.oc_map_result_shape(handle, shp)
            shape = tuple(shp[i] for i in range(nd))
            order = "F" if lib.oc_map_result_fortran_order(handle) == 1 else "C"
            job_stats = _lib.MapStats()

            def run(target, data):
                status = run_on_context(ctx, lambda: lib.oc_map_run(ctx, handle, target, data,
                                                                    ctypes.byref(job_stats)))
                if reports is not None and reports.error is not None:
                    raise reports.error
                check(status, ctx)
                if stats is not None:
                    stats.update(_stats_dict(job_stats))

            if path is not None:
                run(path, None)
                return out
            result: np.ndarray
            if out is None:
                check_fits_in_memory(operands_named(paths + inputs), "the {} result", shape, rdt,
                                     "pass out= a .npy path (or reduce= to reduce it)")
                result = np.empty(shape, dtype=rdt, order=order)
            else:
                result = checked_out(out, rdt, shape, order=order)
                _check_out_overlap(out, inputs, paths)
            run(None, result.ctypes.data if result.size else ctypes.addressof(ctypes.c_int64()))
            return result[()] if out is None and nd == 0 else result
        finally:
            lib.oc_map_free(handle)
