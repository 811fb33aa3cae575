"""outcore.gram: numpy arrays or files in, numpy arrays or files out.

How a call runs:
  1. Options are checked in the caller's thread (cheap, before anything is allocated).
  2. The call takes a library context for its whole run (_context.py: the caller's
     Context, else the module's default one, else a fresh one while the default is busy in
     another thread), so the set-up a job keeps for the next one (pinned staging) is reused;
     a worker thread (_calls.py) then builds the matrices (packing the caller's arrays into
     bits, or reading files out of core) and runs oc_gram. Every library call is a ctypes
     call, so the GIL is released while it works.
  3. The calling thread, when it is the main thread, waits in short steps so that Ctrl-C
     reaches it. On KeyboardInterrupt it sets a Python-side cancel flag, then calls
     oc_context_cancel again at every wait step until the worker has returned: oc_gram clears
     the library's cancel flag when a job starts, so a single early call could be lost. The
     caller's buffers stay referenced until the worker has returned, so the library never
     writes into freed memory, and the library removes a half-written output file itself.
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._calls import Progress as _ProgressCall, checked_progress, checked_stats, run_interruptible
from ._context import Context, lease
from ._map import _CODES as _MAP_CODES, _check_out_overlap, check_out_path_not_input, operands_named
from ._sparse import is_sparse as _is_sparse, sparse_rows
from ._options import (as_numbers, c_path, c_text, check_fits_in_memory, checked_out, flag, gram_options,  # noqa: F401
                       parse_gpu_mem, parse_host_mem, plan_flag, positive_int, warn_gpu_only)
from .errors import CancelledError, InputError, check, from_status

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ._types import (Algorithm, Backend, Devices, Flag, GpuMem, GpuMemMode, Integer, Matrix, Metric, Path, Plan,
                         Progress, Real, Size)

lib = _lib.lib

# The numpy dtypes of gram's results by their oc_dtype codes, from the library's names
# (numpy's); OC_DTYPE_DEFAULT ("default") is none.
_NUMPY_DTYPES = {code: np.dtype(name) for code, name in enumerate(_lib.names(lib.oc_dtype_name))
                 if code != _lib.OC_DTYPE_DEFAULT}
_DENSE_INPUT_DTYPES = (np.dtype(np.bool_), np.dtype(np.uint8), np.dtype(np.int8))


# ---------------------------------------------------------------- inputs
def _is_path(x):
    return isinstance(x, (str, bytes, os.PathLike))


def _rows_are_byte_runs(arr, row_bytes):
    """Whether the constructors can read arr in place: each row a run of its elements, rows
    a non-negative stride apart."""
    if arr.shape[1] > 1 and arr.strides[1] != arr.dtype.itemsize:
        return False
    return arr.shape[0] <= 1 or arr.strides[0] >= row_bytes


# The dtypes oc_matrix_from_values reads, by their oc_map_dtype codes (outcore.h).
_VALUE_TYPES = _MAP_CODES  # oc_map_dtype codes, one table (_map.py)


def _as_array(x, name):
    """x as a numpy array; what numpy cannot make one of, or makes a 0-D array of (None, a
    dict, a number), is an InputError naming what was given."""
    if isinstance(x, np.ndarray) and not isinstance(x, np.ma.MaskedArray):
        return x
    arr = as_numbers(name, x)
    if arr.ndim == 0:
        raise InputError(f"{name} must be a 2-D array (or nested lists), a scipy.sparse matrix or a path; "
                         f"got {type(x).__name__}")
    return arr


def _dense_array(x, name, bits, binarize=False):
    """(arr, row_bytes, value_type): arr as rows the library reads in place, and the
    oc_map_dtype code oc_matrix_from_values reads it by, or None for 0/1 bytes read by
    oc_matrix_from_dense (bool, uint8 and int8 without binarize). Which values are ones is
    the library's rule for every caller and file: 0 and 1 only, or with binarize any nonzero
    value; NaN never."""
    arr = _as_array(x, name)
    if arr.ndim != 2:
        hint = f" (one row: {name}.reshape(1, -1))" if arr.ndim == 1 else ""
        raise InputError(f"{name} must be a 2-D array (rows x columns); got {arr.ndim}-D shape {arr.shape}{hint}")
    if 0 in arr.shape:
        raise InputError(f"{name} has shape {arr.shape}: a matrix needs at least one row and one column")
    value_type = None
    if bits is None:
        native = arr.dtype.newbyteorder("=") if arr.dtype.byteorder not in ("=", "|") else arr.dtype
        if native not in _VALUE_TYPES:
            raise InputError(f"{name} has dtype {arr.dtype}; expected numbers holding 0 and 1 (bool, integers, "
                             f"float32 or float64; binarize=True reads any nonzero value as 1), or bits=M for "
                             "numpy.packbits rows")
        if native != arr.dtype:
            arr = arr.astype(native)  # the library reads this host's byte order
        if binarize or arr.dtype not in _DENSE_INPUT_DTYPES:
            value_type = _VALUE_TYPES[arr.dtype]
        row_bytes = arr.shape[1] * arr.dtype.itemsize
    else:
        if arr.dtype != np.uint8:
            raise InputError(f"{name} has dtype {arr.dtype}; with bits={bits} it must be uint8 rows of "
                             "numpy.packbits(A, axis=1)")
        row_bytes = (bits + 7) // 8
        if arr.shape[1] != row_bytes:
            raise InputError(f"{name} has {arr.shape[1]} bytes per row; bits={bits} packs into {row_bytes}")
    if not _rows_are_byte_runs(arr, row_bytes):
        # Transposed, column-strided or negatively strided views: one copy in C order.
        arr = np.ascontiguousarray(arr)
    return arr, row_bytes, value_type


# What the C constructors call a matrix until oc_matrix_set_name (src/matrix/matrix_build.c).
_DEFAULT_NAME = "A"


def _renamed(err, name):
    """err, a constructor's failure, with its message naming the matrix as the caller does:
    a bad value is found while the array is packed, before the handle exists to be named."""
    prefix = _DEFAULT_NAME + ": "
    if name != _DEFAULT_NAME and err.message.startswith(prefix):
        return type(err)(name + ": " + err.message[len(prefix):], err.status, err.trace)
    return err


def _build_matrix(ctx, x, name, bits, keep, binarize=False, host_mem=0):
    """An oc_matrix handle (c_void_p) for x; arrays it reads are appended to keep. A path is
    read under the host budget host_mem (bytes, 0 = the library's default)."""
    handle = ctypes.c_void_p()
    if _is_path(x):
        path = c_path(name, x)
        opts = _lib.ReadOptions(bits or 0, binarize, host_mem)
        check(lib.oc_matrix_read(ctx, path, ctypes.byref(opts), ctypes.byref(handle)), ctx)
        return handle
    if _is_sparse(x):
        if bits is not None:
            raise InputError(f"bits= applies to packed uint8 arrays and .npy files, not to sparse {name}")
        indptr, indices, (rows, cols) = sparse_rows(x, name, binarize)
        keep += [indptr, indices]
        status = lib.oc_matrix_from_csr(ctx, rows, cols, indptr.ctypes.data_as(_lib.c_int64_p),
                                        indices.ctypes.data_as(_lib.c_int64_p), ctypes.byref(handle))
        if status != _lib.OC_OK:
            raise _renamed(from_status(status, ctx), name)
    else:
        arr, row_bytes, value_type = _dense_array(x, name, bits, binarize)
        keep.append(arr)
        rows = arr.shape[0]
        stride = arr.strides[0] if rows > 1 else max(row_bytes, 1)
        if value_type is not None:
            status = lib.oc_matrix_from_values(ctx, arr.ctypes.data, rows, arr.shape[1], stride, value_type,
                                               1 if binarize else 0, ctypes.byref(handle))
        elif bits is None:
            status = lib.oc_matrix_from_dense(ctx, arr.ctypes.data, rows, arr.shape[1], stride, ctypes.byref(handle))
            if status == _lib.OC_ERR_INPUT:
                # A byte other than 0 and 1: oc_matrix_from_values reads the array by its dtype.
                # A bool byte is True, as numpy reads it (docs/map.md), so bools are read with
                # binarize (without it, such a byte is refused, as in a bool .npy); an int8 or
                # uint8 value is refused as the .npy reader refuses it, int8 named signed and a
                # uint8 row that looks like numpy.packbits output with the bits= it needs.
                # Only then, so the common case packs the bytes at oc_matrix_from_dense's
                # speed with no copy.
                status = lib.oc_matrix_from_values(ctx, arr.ctypes.data, rows, arr.shape[1], stride,
                                                   _VALUE_TYPES[arr.dtype], 1 if arr.dtype == np.bool_ else 0,
                                                   ctypes.byref(handle))
        else:
            status = lib.oc_matrix_from_bits(ctx, arr.ctypes.data, rows, bits, stride, _lib.OC_BITS_MSB_FIRST,
                                             ctypes.byref(handle))
        if status != _lib.OC_OK:
            raise _renamed(from_status(status, ctx), name)
    try:
        check(lib.oc_matrix_set_name(ctx, handle, c_text("name", name)), ctx)
    except BaseException:
        lib.oc_matrix_free(handle)
        raise
    return handle


# ---------------------------------------------------------------- outputs
def _out_array(out, n, p, dtype):
    """ld (in elements) of a caller array that receives the n x p result in place."""
    checked_out(out, dtype, (n, p), rows_only=True, dtype_hint=" (pass dtype= to choose it)")
    item = dtype.itemsize
    return out.strides[0] // item if n > 1 else p


class _PairCollector:
    """Receives threshold pairs from the library in batches and keeps copies of them."""

    def __init__(self, dtype, cancel):
        self.dtype, self.cancel = dtype, cancel
        self.rows, self.cols, self.values = [], [], []
        self.error = None
        self.callback = _lib.pairs_fn(self._receive)  # referenced here for the job's lifetime

    def _receive(self, user, rows, cols, scores, count):
        try:
            self.rows.append(np.ctypeslib.as_array(rows, shape=(count,)).copy())
            self.cols.append(np.ctypeslib.as_array(cols, shape=(count,)).copy())
            raw = ctypes.string_at(scores, count * self.dtype.itemsize)
            self.values.append(np.frombuffer(raw, dtype=self.dtype).copy())
        except BaseException as exc:  # an exception must not cross the C frames
            self.error = exc
            return 1
        return 1 if self.cancel.is_set() else 0

    def result(self):
        if not self.rows:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, self.dtype)
        rows, cols, values = (np.concatenate(x) for x in (self.rows, self.cols, self.values))
        # Batches arrive in tile order; sorting makes the result independent of tiling.
        order = np.lexsort((cols, rows))
        return rows[order], cols[order], values[order]


def _check_out_is_not_an_input(out, A, B):
    """An out array that shares memory with an input array, or maps an input's file (as
    map refuses it: _map._check_out_overlap), is refused before anything runs: a file read in
    panels would be overwritten while it is read. The test is numpy.shares_memory, exact as
    map's: a column slice beside the input in one buffer is no overlap. An out path that is
    an input path, by any name, is refused by the library itself; one naming the file an input
    array maps, here (check_out_path_not_input, as map and matmul do)."""
    inputs = (("A", A), ("B", B))
    if _is_path(out):
        check_out_path_not_input(out, inputs)
    if not isinstance(out, np.ndarray):
        return
    for name, x in inputs:
        if isinstance(x, np.ndarray) and np.shares_memory(out, x):
            raise InputError(f"out shares memory with {name}: writing the result would overwrite the input; "
                             "pass a separate array")
    _check_out_overlap(out, [(name, x) for name, x in inputs if isinstance(x, np.ndarray)],
                       [(name, x) for name, x in inputs if _is_path(x)])


def _check_out_kind(out, selection, result=_lib.OC_RESULT_DENSE):
    """out as the result's kind takes it: top-k and threshold results go to files of their
    formats only; a dense one to a .npy path or an array. A path's extension is checked here,
    before anything runs (explain too), with the library's words (oc_output_format_check)."""
    if _is_path(out):
        name = os.fsdecode(c_path("out", out))  # a NUL byte first: it would end the name elsewhere
        suffix = os.path.splitext(name)[1][1:].lower()
        if selection and suffix in _lib.output_formats(_lib.OC_RESULT_DENSE):
            raise InputError(f"{name}: .{suffix} holds a dense result; write top-k and threshold "
                             f"results as {_suffixes(_selection_formats())}")
        formats = _lib.output_formats(result)
        if suffix not in formats:
            what = {_lib.OC_RESULT_TOPK: "top-k", _lib.OC_RESULT_THRESHOLD: "threshold"}.get(result, "dense")
            got = f"'.{suffix}'" if suffix else "a name with no extension"
            raise InputError(f"{name}: a {what} result is written as {_suffixes(formats)}; got {got}")
    elif out is not None and selection:
        raise InputError("out= for top-k and threshold results must be a file path "
                         f"({_suffixes(_selection_formats())})")
    elif out is not None and not isinstance(out, np.ndarray):
        raise InputError(f"out must be a path or a numpy array; got {type(out).__name__}")


# ---------------------------------------------------------------- the job
def _selection_formats():
    """The formats of top-k and threshold results, from the library's table."""
    return _lib.output_formats(_lib.OC_RESULT_TOPK | _lib.OC_RESULT_THRESHOLD)


def _suffixes(formats):
    """".npz, .mtx or .tsv"."""
    dotted = ["." + f for f in formats]
    return dotted[0] if len(dotted) == 1 else ", ".join(dotted[:-1]) + " or " + dotted[-1]


def _stats_dict(stats):
    """The job's statistics that gram(stats=...) reports, from an oc_gram_stats."""
    phases = stats.phases
    return {"seconds": stats.seconds, "predicted_seconds": stats.predicted_seconds, "backend": _lib.text(lib.oc_backend_name(stats.backend)),
            "backend_desc": stats.backend_desc.decode(errors="replace"), "threads": stats.threads,
            "phases": {name: getattr(phases, name) for name, _ in _lib.GramPhases._fields_}}


def _dtypes_of_metrics():
    """"counts and hamming: int32 or uint16; jaccard and cosine: float32": the result dtypes
    the library allows each metric, in its words (oc_metric_dtypes_text)."""
    text = ctypes.create_string_buffer(256)
    lib.oc_metric_dtypes_text(text, ctypes.sizeof(text))
    return _lib.text(text.value)


def _result_dtype(opts):
    """The numpy dtype of the result of a job with these options."""
    code = lib.oc_gram_result_dtype(opts.metric, opts.dtype)
    if code == _lib.OC_DTYPE_DEFAULT:
        metric = _lib.text(lib.oc_metric_name(opts.metric))
        dtype = _lib.text(lib.oc_dtype_name(opts.dtype))
        raise InputError(f"dtype {dtype} does not hold metric {metric} ({_dtypes_of_metrics()})")
    return _NUMPY_DTYPES[code]


class _Job:
    def __init__(self, ctx, opts, A, B, bits, out, progress=None, binarize=False, stats=None):
        self.ctx, self.opts, self.A, self.B, self.bits, self.out = ctx, opts, A, B, bits, out
        self.binarize, self.stats = binarize, stats
        self.cancel = threading.Event()
        self.progress = _ProgressCall(progress, ctx) if progress is not None else None
        if self.progress is not None:
            opts.progress = self.progress.callback

    def _check_files(self):
        """Inputs that are all paths: what their headers declare, and a dense result to a file
        against the free space of its folder, before anything is read (oc_gram_check_files)."""
        if not _is_path(self.A) or (self.B is not None and not _is_path(self.B)):
            return
        output = _lib.Output()
        if _is_path(self.out):
            output.kind = _lib.OC_OUTPUT_FILE
            output.path = c_path("out", self.out)
        opts = _lib.ReadOptions(self.bits or 0, self.binarize, self.opts.host_mem_bytes)
        b = c_path("B", self.B) if self.B is not None else None
        check(lib.oc_gram_check_files(self.ctx, c_path("A", self.A), b, ctypes.byref(opts), ctypes.byref(self.opts),
                                      ctypes.byref(output)), self.ctx)
        code = lib.oc_gram_result_dtype(self.opts.metric, self.opts.dtype)
        if self.out is None and not (self.opts.topk or self.opts.use_threshold) and code != _lib.OC_DTYPE_DEFAULT:
            n = self._peek_rows("A", self.A, opts)
            p = n if self.B is None else self._peek_rows("B", self.B, opts)
            if n >= 0 and p >= 0:  # a text input declares nothing (a bad dtype is the job's to name)
                self._check_result_in_memory(n, p, _NUMPY_DTYPES[code])

    def _peek_rows(self, name, path, opts):
        rows, cols = ctypes.c_int64(), ctypes.c_int64()
        check(lib.oc_matrix_peek(self.ctx, c_path(name, path), ctypes.byref(opts), ctypes.byref(rows),
                                 ctypes.byref(cols)), self.ctx)
        return rows.value

    def _check_result_in_memory(self, n, p, dtype):
        """The dense n x p array gram allocates for out=None: one larger than the machine's
        memory is refused, for files by the rows they declare, before they are read."""
        inputs = [("A", self.A)] + ([("B", self.B)] if self.B is not None else [])
        check_fits_in_memory(operands_named(inputs), "the dense {} result", (n, p), dtype,
                             "pass out= a .npy path, or topk= or threshold=")

    def run(self):
        keep, handles = [], []
        self._check_files()
        try:
            host_mem = self.opts.host_mem_bytes
            handles.append(_build_matrix(self.ctx, self.A, "A", self.bits, keep, self.binarize, host_mem))
            if self.B is not None:
                handles.append(_build_matrix(self.ctx, self.B, "B", self.bits, keep, self.binarize, host_mem))
            return self._gram(handles[0], handles[1] if len(handles) > 1 else None)
        finally:
            for h in handles:
                lib.oc_matrix_free(h)

    def _gram(self, a, b):
        n = lib.oc_matrix_rows(a)
        p = lib.oc_matrix_rows(b if b else a)
        dtype = _result_dtype(self.opts)
        output = _lib.Output()
        out, result, pairs = self.out, None, None
        if _is_path(out):  # its kind was checked with the arguments (_check_out_kind)
            output.kind = _lib.OC_OUTPUT_FILE
            output.path = c_path("out", out)
        elif self.opts.topk:
            k = self.opts.topk
            if k > p:  # the library's rule (oc_gram refuses it), before n x K arrays are allocated
                raise InputError(f"top-{k}: the result has {p} column{'' if p == 1 else 's'} (the rows of "
                                 f"{'B' if b else 'A'}), so K may be at most {p}")
            indices, scores = np.empty((n, k), np.int64), np.empty((n, k), dtype)
            output.kind = _lib.OC_OUTPUT_TOPK
            output.indices = indices.ctypes.data_as(_lib.c_int64_p)
            output.scores = scores.ctypes.data
            result = (indices, scores)
        elif self.opts.use_threshold:
            pairs = _PairCollector(dtype, self.cancel)
            output.kind = _lib.OC_OUTPUT_PAIRS
            output.pairs = pairs.callback
        else:
            if out is None:
                self._check_result_in_memory(n, p, dtype)
                out = np.empty((n, p), dtype)
            output.kind = _lib.OC_OUTPUT_MEMORY
            output.ld = _out_array(out, n, p, dtype)
            output.data = out.ctypes.data
            result = out

        if self.cancel.is_set():
            raise CancelledError("cancelled before the job started")
        stats = _lib.GramStats()
        status = lib.oc_gram(self.ctx, a, b, ctypes.byref(self.opts), ctypes.byref(output), ctypes.byref(stats))
        if pairs is not None and pairs.error is not None:
            raise pairs.error
        if self.progress is not None and self.progress.error is not None:
            raise self.progress.error
        check(status, self.ctx)
        if self.stats is not None:
            self.stats.update(_stats_dict(stats))
        if pairs is not None:
            return pairs.result()
        if output.kind == _lib.OC_OUTPUT_FILE:
            if not (self.opts.topk or self.opts.use_threshold) and os.fsdecode(out).lower().endswith(".npy"):
                return np.load(os.fsdecode(out), mmap_mode="r")
            return out
        return result


def _checked_arguments(A, B, metric, topk, threshold, dtype, backend, gpu_mem, threads, out, bits, progress,
                       binarize, device, host_mem, context, algorithm, resume, devices, min_score, stats, tile,
                       gpu_mem_mode, plan):
    """(opts, bits): gram's arguments checked in the caller's thread, before anything is
    allocated, for gram and for explain, which takes them all (called with **locals(), so a
    parameter one of them lacks is a TypeError here)."""
    if bits is not None:
        bits = positive_int("bits", bits)
    binarize, resume = flag("binarize", binarize), flag("resume", resume)
    plan_flag(plan)
    dtype_from_out = (dtype is None and isinstance(out, np.ndarray) and topk is None and threshold is None
                      and out.dtype in _NUMPY_DTYPES.values())
    if dtype_from_out:
        dtype = out.dtype  # the caller's array decides, e.g. uint16 counts
    resources = dict(backend=backend, device=device, gpu_mem=gpu_mem, host_mem=host_mem, threads=threads)
    if context is not None:
        if not isinstance(context, Context):
            raise InputError(f"context must be an outcore.Context; got {type(context).__name__}")
        resources = context.options(**resources)
    opts = gram_options(metric, dtype, topk, threshold, algorithm=algorithm, devices=devices, min_score=min_score,
                        tile=tile, gpu_mem_mode=gpu_mem_mode, **resources)
    warn_gpu_only(opts.backend, 3, gpu_mem=gpu_mem, device=device,
                  gpu_mem_mode=None if gpu_mem_mode == "grow" else gpu_mem_mode)
    opts.resume = 1 if resume else 0
    if dtype_from_out and lib.oc_gram_result_dtype(opts.metric, opts.dtype) == _lib.OC_DTYPE_DEFAULT:
        metric = _lib.text(lib.oc_metric_name(opts.metric))
        raise InputError(f"out has dtype {out.dtype}, which does not hold metric {metric} ({_dtypes_of_metrics()})")
    checked_progress(progress)
    _check_out_kind(out, bool(opts.topk or opts.use_threshold),
                    _lib.OC_RESULT_TOPK if opts.topk else
                    _lib.OC_RESULT_THRESHOLD if opts.use_threshold else _lib.OC_RESULT_DENSE)
    _check_out_is_not_an_input(out, A, B)
    checked_stats(stats)
    return opts, bits


def _planned_output(out, opts, dense_output=True):
    """The oc_output a plan or an explanation reads: the kind gram's output would have
    (_Job._gram), and a file's path; nothing is opened, and no buffer is given."""
    output = _lib.Output()
    if _is_path(out):
        output.kind = _lib.OC_OUTPUT_FILE
        output.path = c_path("out", out)
    elif opts.topk:
        output.kind = _lib.OC_OUTPUT_TOPK
    elif opts.use_threshold:
        output.kind = _lib.OC_OUTPUT_PAIRS
    elif not dense_output:
        output.kind = _lib.OC_OUTPUT_DISCARD
    return output


def _plan_text(ctx, a, b, opts, output, text):
    """oc_gram_plan's text, as a describer of _describe calls it."""
    return lib.oc_gram_plan(ctx, a, b, opts, output, 0, text)


def _plan_json(ctx, a, b, opts, output, text):
    """oc_gram_plan's JSON object, as a describer of _describe calls it."""
    return lib.oc_gram_plan(ctx, a, b, opts, output, 1, text)


def _describe(A, B, out, opts, bits, binarize, context, output, describers):
    """What describers say of gram's job on A and B, nothing run: each a library call
    fn(ctx, a, b, opts, output, text) that mallocs its text (oc_gram_plan's, oc_gram_explain),
    their texts joined in order. The inputs are read as gram reads them; an out array is
    checked as gram checks it, and left untouched."""
    with lease(context) as ctx:
        keep: list[object] = []
        handles: list[ctypes.c_void_p] = []
        texts = []
        try:
            handles.append(_build_matrix(ctx, A, "A", bits, keep, binarize, opts.host_mem_bytes))
            if B is not None:
                handles.append(_build_matrix(ctx, B, "B", bits, keep, binarize, opts.host_mem_bytes))
            b = handles[1] if len(handles) > 1 else None
            if isinstance(out, np.ndarray):  # its shape and dtype, as gram checks them
                _out_array(out, lib.oc_matrix_rows(handles[0]), lib.oc_matrix_rows(b or handles[0]),
                           _result_dtype(opts))
            for describe in describers:
                text = ctypes.c_void_p()
                check(describe(ctx, handles[0], b, ctypes.byref(opts), ctypes.byref(output), ctypes.byref(text)), ctx)
                texts.append(_lib.owned_text(text))
            return "".join(texts)
        finally:
            for h in handles:
                lib.oc_matrix_free(h)


def gram(A: Matrix, B: Matrix | None = None, metric: Metric = "counts", topk: Integer | None = None,
         threshold: Real | None = None, dtype: DTypeLike | None = None, backend: Backend | None = None,
         gpu_mem: GpuMem | None = None, threads: Integer | None = None, out: Path | np.ndarray | None = None,
         bits: Integer | None = None, progress: Progress | None = None, binarize: Flag = False, *,
         device: Integer | None = None, host_mem: Size | None = None, context: Context | None = None,
         algorithm: Algorithm = "auto", resume: Flag = False, devices: Devices | None = None,
         min_score: Real | None = None, stats: dict | None = None, tile: Integer | None = None,
         gpu_mem_mode: GpuMemMode = "grow", plan: Plan = False) -> Any:
    """The binary Gram matrix A·Aᵀ (or A·Bᵀ) and the similarities built on it.

    Parameters
    ----------
    A, B : array_like, scipy.sparse matrix or path
        2-D numpy arrays (or lists) of numbers holding 0 and 1 (bool, integers, float32,
        float64; 1.0 is a one, and any nonzero bool byte, as numpy reads it; with
        binarize=True any nonzero value, the rule the CLI and the library's .npy reader apply:
        oc_matrix_from_values); uint8 rows of numpy.packbits(X, axis=1) with bits=M (the true
        column count); scipy.sparse matrices (duplicate entries summed, as scipy reads them);
        or file paths (.npy, .mtx, .txt, .csv; with bits=M a packed .npy; a .npy in C or Fortran
        order), which the library reads out of core without loading them into Python. Paths' headers are checked first:
        a dense out= path that their declared shapes make larger than its folder's free space,
        or without out= a dense result larger than the machine's memory, raises InputError
        before anything is read. B=None (the default) computes A·Aᵀ.
    metric : {"counts", "jaccard", "cosine", "hamming"}, default "counts"
        The score of a pair of rows.
    topk : int, optional
        K -> (indices, scores), each n x K: every row's K best columns, best first (the row
        itself excluded for A·Aᵀ). Every column ranks, score 0 included, so a row is filled
        with score-0 columns (lowest first) before any padding; index -1 and score 0 appear
        only past the candidates (K = n for A·Aᵀ). K may be at most the result's columns (the
        rows of B, or of A), else InputError. Exclusive with threshold.
    threshold : float, optional
        T -> (rows, cols, values) of all pairs with score >= T (<= T for hamming), sorted by
        row then column.
    dtype : {"int32", "uint16", "float32"} or numpy dtype, optional
        "int32"/"uint16" (counts, hamming) or "float32" (jaccard, cosine); numpy dtypes work.
        Default: int32 for counts and hamming, float32 for jaccard and cosine, or the dtype
        of an out array.
    backend : {"auto", "cpu", "cuda"}, optional
        "auto" (the default) picks the backend the cost model predicts faster.
    gpu_mem : int, str or dict, optional
        Device budget in bytes, or "2G", "50%"; per device {0: "20G", 1: "40G"} or
        "0=20G,1=40G". Default: 90% of the device's free memory.
    threads : int, optional
        CPU worker threads, 1 to 4096 (default: all cores); a job runs at most one per tile.
    out : path or numpy.ndarray, optional
        A path -> the result is written to that file (.npy dense; .npz/.tsv/.mtx for top-k
        and threshold: outcore.output_formats()) and gram returns a read-only memmap of a .npy, else the path; or a
        numpy array (e.g. a np.memmap) of shape (n, p) and the result dtype with contiguous
        rows, written in place and returned. An array that shares memory with A or B
        (numpy.shares_memory), or maps the file of a path A or B, is an InputError, and so
        is a path naming the file an array A or B maps (a numpy.memmap).
    bits : int, optional
        M, the true column count of uint8 rows of numpy.packbits(X, axis=1) (arrays or a
        packed .npy); applies to A and B alike.
    progress : callable, optional
        progress(done, total), called about ten times a second from the library's thread
        while the job runs (done and total in the same unit); an exception it raises cancels
        the job and is raised by gram.
    binarize : bool, default False
        True reads any nonzero value as 1 (arrays of any numeric dtype, sparse matrices and
        every file format); by default a value other than 0 or 1 is an InputError naming its
        row and column (counted from 0).
    device : int, optional
        The CUDA device index (default 0).
    host_mem : int or str, optional
        Host memory budget in bytes, or "4G", "25%" (of the machine's memory); default 80% of
        the memory available. A .npy path whose packed bits take more than half of it is not
        loaded: the job reads its rows in panels from the file (docs/memory.md).
    context : outcore.Context, optional
        A Context to run on, whose settings are the defaults of the resource arguments
        (backend, device, gpu_mem, host_mem, threads); without it the module's default
        context is used, so that a call reuses what the previous one set up
        (outcore.release_cached_memory frees that).
    algorithm : {"auto", "dense", "sparse"}, default "auto"
        "auto" (the one predicted faster), "dense" (packed-bit kernels) or "sparse" (per-row
        accumulation over column lists, on the CPU; scipy.sparse inputs and .mtx files are
        never densified for it); the same result either way.
    resume : bool, default False
        True (with out a path) keeps a journal of the work done beside the output and
        continues an interrupted job of the same arguments from it, with the bytes of an
        uninterrupted run (docs/resume.md).
    devices : str or sequence of int or str, optional
        Several CUDA devices, "0,1,3", "all" or [0, 1]; "0:2" splits device 0 into two
        logical devices, each with half its budget (an error with backend="cpu").
    min_score : float, optional
        With topk, S -> the K best among the columns scoring at least S (hamming: at most S;
        S in the range threshold takes), the slots left holding index -1 and score NaN
        (float32), -1 (int32) or 65535 (uint16): only neighbours that pass.
    stats : dict, optional
        A dict that gram fills once the job has run: "seconds" (the job's wall time),
        "predicted_seconds" (the cost model's prediction for the backend that ran, 0 when
        none was made), "backend", "backend_desc", "threads" and "phases", the seconds of
        each phase of the job (cuda_start, prepare, setup, compute, output, teardown:
        docs/cli.md, "Where the time goes"), which sum to at most "seconds".
    tile : int, optional
        The tile edge in rows, at least 1, as the CLI's --tile (a tile larger than the
        matrix is the matrix); default the planner's choice. The result is the same bytes
        at any tile; it sets how the work is cut (threads run at most one per tile).
    gpu_mem_mode : {"grow", "reserve"}, default "grow"
        How a GPU job takes its device budget, as the CLI's --gpu-mem-mode: "grow" allocates
        on demand up to it, "reserve" takes the whole budget at the start (failing at once
        when it is not there). No effect on the CPU.
    plan : bool or "json", default False
        True returns the plan the job would run under instead of running it: the text of
        `outcore gram --plan` (on a GPU the tile edge, panel and output slots, the device
        budget, the pinned staging, threads and the estimated time of kernels, uploads and
        output; on the CPU the tiles, the host budget and threads; for the sparse algorithm
        that and why); "json" returns the same plan as a dict, the object of
        `outcore gram --plan --json`. Nothing is computed and out is not written (an out
        array is checked and left untouched); progress and stats are checked and left unused.

    Returns
    -------
    numpy.ndarray, tuple of numpy.ndarray, path or str
        Dense: the n x p matrix (a new array, the out array, or a read-only memmap of an out
        .npy). topk: (indices, scores), int64 and the result dtype. threshold: (rows, cols,
        values), int64, int64 and the result dtype. With out any other path (top-k or
        threshold results in .npz, .tsv or .mtx): that path. With plan=True: the plan's text;
        with plan="json": the plan as a dict.

    Raises
    ------
    InputError
        A bad argument or input (a ValueError).
    OutOfMemoryError, DeviceError, UnsupportedError, IOFailure, Error
        The job failed; UnsupportedError when the backend or device is not in this build.
    KeyboardInterrupt
        After Ctrl-C has cancelled the job.

    Examples
    --------
    >>> import numpy as np, outcore
    >>> A = np.random.default_rng(0).random((1000, 5000)) < 0.1
    >>> C = outcore.gram(A)                          # int32 counts |a_i ∧ a_j|
    >>> J = outcore.gram(A, metric="jaccard")        # float32
    >>> idx, score = outcore.gram(A, metric="jaccard", topk=10)
    >>> rows, cols, values = outcore.gram(A, metric="cosine", threshold=0.8)
    >>> print(outcore.gram(A, backend="cpu", tile=256, plan=True))  # doctest: +ELLIPSIS
    plan for cpu (...)
      tiles    256 x 256 rows: 10 tiles (upper triangle)
    ...
    """
    opts, bits = _checked_arguments(**locals())  # every argument, as explain checks them too
    plan = plan_flag(plan)
    if plan:
        text = _describe(A, B, out, opts, bits, binarize, context, _planned_output(out, opts),
                         [_plan_json if plan == 2 else _plan_text])
        return json.loads(text) if plan == 2 else text
    with lease(context) as ctx:
        job = _Job(ctx, opts, A, B, bits, out, progress, binarize, stats)
        return run_interruptible(job, job.run)
