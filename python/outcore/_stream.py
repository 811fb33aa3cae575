"""outcore.stream: the caller's own GPU kernel (numba, CuPy, anything that takes
__cuda_array_interface__) over arrays larger than the device, chunk by chunk.

    from numba import cuda
    @cuda.jit
    def saxpy(x, y, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = 2.0 * x[i] + y[i]

    def launch(chunk):
        s = cuda.external_stream(chunk.stream)
        saxpy[(chunk.rows + 255) // 256, 256, s](chunk.x, chunk.y, chunk.out)

    out = outcore.stream(launch, inputs={"x": x, "y": y}, outputs={"out": (x.shape, x.dtype)},
                         gpu_mem="1G")

How a call runs: the arrays become an oc_stream_spec (include/outcore.h) and oc_stream_run
plans chunks along each array's axis under the budgets, uploads each chunk's inputs through
pinned staging on one stream, calls fn(chunk) on the calling thread to enqueue the kernel on
another, and downloads the outputs on a third, several chunks in flight (docs/stream.md).
fn must only enqueue work on chunk.stream: outcore orders it with the copies by events.

chunk[name] and chunk.<name> are device views of the chunk's part of each array: objects with
__cuda_array_interface__ version 3 whose "stream" is the chunk's stream (numba and CuPy
consumers synchronise on it when they import the view unless told not to,
NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0; the kernel runs on that same stream, so it is safe to turn
off). An exception raised by fn stops the job and is raised again by stream().
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import io
import math
import mmap
import os
import secrets
import stat
import string
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from . import _lib
from ._calls import Progress as _ProgressCall, checked_progress, checked_stats
from ._context import lease
from ._map import check_out_path_not_input
from ._options import (INT64_MAX, _integer, c_path, c_text, check_fits_in_memory, flag, set_device_budgets,
                       unmasked)
from .errors import InputError, IOFailure, check, from_status

if TYPE_CHECKING:
    import numpy.typing as npt
    from numpy.typing import DTypeLike

    from ._context import Context
    from ._types import Flag, Integer, Path, Progress, Size

lib = _lib.lib


class DeviceArray:
    """A chunk's buffer on the device: shape, dtype, device pointer and the CUDA array
    interface (version 3). Valid only during the fn call that received it."""

    __slots__ = ("shape", "dtype", "ptr", "stream")

    def __init__(self, shape, dtype, ptr, stream):
        self.shape, self.dtype, self.ptr, self.stream = tuple(shape), np.dtype(dtype), ptr, stream

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3,
                "strides": None, "stream": self.stream}

    def __repr__(self):
        return f"outcore.DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"


class Chunk:
    """One chunk: index, count, start, rows (of the chunk extent), stream (the CUstream
    handle as an int), device, and the arrays by name (chunk["x"] or chunk.x). An array may
    not be named as one of these attributes (or of the class's: __class__), which chunk.<name>
    would give instead of the array: stream refuses such a name (_check_array_name)."""

    # What each attribute is, for the refusal of an array named so.
    FIELDS = {"index": "index (from 0)", "count": "count of chunks", "start": "first row",
              "rows": "row count", "stream": "CUDA stream", "device": "device",
              "arrays": "dict of views by name"}

    def __init__(self, index, count, start, rows, stream, device, arrays):
        self.index, self.count, self.start, self.rows = index, count, start, rows
        self.stream, self.device, self.arrays = stream, device, arrays

    def __getitem__(self, name):
        return self.arrays[name]

    def __getattr__(self, name):
        try:
            return self.__dict__["arrays"][name]
        except KeyError:
            raise AttributeError(name) from None


def _check_array_name(name):
    """An array's name, refused where chunk.<name> would not give its view: the name of one of
    the chunk's own attributes (Chunk.FIELDS, or the class's, such as __class__)."""
    if isinstance(name, str) and (name in Chunk.FIELDS or hasattr(Chunk, name)):
        what = Chunk.FIELDS.get(name, "attribute")
        raise InputError(f"array {name!r}: the name clashes with chunk.{name}, the chunk's own {what}, which "
                         f"chunk.{name} gives instead of the array's view; choose another name")


# What a path that is not a regular file is, in the library's words (src/io/input_file.c).
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


def _refuse_non_regular(name, path):
    """InputError for a path that is not a regular file (numpy would wait on a named pipe for
    ever, or read a device as pickled data), checked without opening it, then on a descriptor
    opened without blocking; a path that does not open is left to numpy's message."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            try:
                mode = os.fstat(fd).st_mode
            finally:
                os.close(fd)
    except OSError:
        return
    if not stat.S_ISREG(mode):
        kind = next((what for test, what in _FILE_KINDS if test(mode)), "not a file")
        raise InputError(f"input {name}: {os.fsdecode(path)}: not a regular file ({kind})")


def _as_input(name, value):
    if isinstance(value, (str, bytes, os.PathLike)):
        _refuse_non_regular(name, value)
        try:
            value = np.load(value, mmap_mode="r")  # read chunk by chunk, never whole
        except (OSError, ValueError) as error:
            raise InputError(f"input {name}: cannot read {os.fsdecode(value)!r}: {error}") from None
    arr = np.asarray(unmasked(f"input {name}", value))
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)  # a copy: outcore reads C-order memory
    return arr


# The characters of RANDOM in a temporary's name, as src/io/tmpfile.c draws them.
_TMP_ALPHABET = string.ascii_letters + string.digits
_IO_CAUSES = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EIO: "I/O error"}


def _io_failure(action, path, error):
    """IOFailure with the library's words for a failed write (oc_io_describe): "disk full
    writing PATH", else "writing PATH failed: CAUSE"."""
    cause = _IO_CAUSES.get(error.errno)
    message = f"{cause} {action} {path}" if cause else f"{action} {path} failed: {error.strerror or error}"
    return IOFailure(message, _lib.OC_ERR_IO)


class _NpyOutput:
    """An output written into a .npy through a memory map under a temporary name, renamed into
    place only when the job succeeded: the library's rules for every output file
    (src/io/tmpfile.c, docs/write-failures.md). The path is checked first by the library
    (oc_output_check: a missing folder, a folder, a pipe, a read-only file are refused); the
    temporary is PATH.tmp-PID-RANDOM, created with O_CREAT|O_EXCL|O_NOFOLLOW, so no name can be
    planted and no link is followed, and held under an exclusive flock while it is open, so
    that one a killed process left is stale to `outcore clean PATH`; the file replaced gives
    its mode (under root, its owner) to the new one."""

    def __init__(self, ctx, name, path, shape, dtype):
        raw = c_path(f"output {name}", path)
        self.path, self.fd, self.tmp = os.fsdecode(raw), -1, None
        if dtype.hasobject:
            raise InputError(f"output {name}: dtype {dtype} holds Python objects, which no .npy file can hold")
        header, fmt = io.BytesIO(), np.lib.format
        d = {"descr": fmt.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
        try:
            fmt.write_array_header_1_0(header, d)
        except ValueError:  # a header past version 1.0's 64 KiB
            header = io.BytesIO()
            fmt.write_array_header_2_0(header, d)
        head = header.getvalue()
        total = len(head) + math.prod(shape) * dtype.itemsize  # Python ints: numpy's int64 product wraps
        if total > INT64_MAX:  # no file offset reaches past it: refused before a file is made
            raise InputError(f"output {name}: a .npy of {dtype} of shape {shape} would be {total} bytes, more than "
                             f"a file can hold (2**63 - 1)")
        check(lib.oc_output_check(ctx, raw), ctx)
        self.mode, self.owner = None, None
        try:
            prior = os.lstat(self.path)
        except OSError:
            prior = None
        if prior is not None and stat.S_ISREG(prior.st_mode):  # a link is replaced, its target's mode unused
            self.mode, self.owner = prior.st_mode & 0o777, (prior.st_uid, prior.st_gid)
        self._create()
        try:
            if self.mode is not None:
                if os.geteuid() == 0:
                    try:
                        os.fchown(self.fd, *self.owner)
                    except OSError:
                        pass  # best effort, as the library's: the new file stays root's
                os.fchmod(self.fd, self.mode | stat.S_IRUSR | stat.S_IWUSR)  # its owner may map it meanwhile
            written = 0
            while written < len(head):  # a write cut short is retried, as oc_sys_write_all does
                written += os.write(self.fd, head[written:])
            os.ftruncate(self.fd, total)
            try:  # its blocks reserved now: a full disk is this error, not SIGBUS as a chunk lands
                os.posix_fallocate(self.fd, 0, total)
            except OSError as error:
                if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system without it
                    raise
            self.map = mmap.mmap(self.fd, total)
            self.array = np.ndarray(shape, dtype, buffer=self.map, offset=len(head))
        except OSError as error:
            self.abort()
            raise _io_failure("writing", self.path, error) from None
        except BaseException:  # any other failure (Ctrl-C too) leaves no temporary, descriptor or lock
            self.abort()
            raise

    def _create(self):
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(100):
            tmp = f"{self.path}.tmp-{os.getpid()}-{''.join(secrets.choice(_TMP_ALPHABET) for _ in range(8))}"
            try:
                self.fd = os.open(tmp, flags, 0o666)
            except FileExistsError:
                continue
            except OSError as error:
                if error.errno in _IO_CAUSES:
                    raise _io_failure("creating", self.path, error) from None
                raise InputError(f"{self.path}: cannot write the output: {error.strerror}") from None
            self.tmp = tmp
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while open: a live job's file
            except OSError:
                pass
            return
        raise IOFailure(f"{self.path}: could not find a free temporary name beside it", _lib.OC_ERR_IO)

    def commit(self):
        """Flushes the file to the disk and renames it over the path (a failure removes it)."""
        try:
            self.map.flush()
            if self.mode is not None:
                os.fchmod(self.fd, self.mode)
            os.fsync(self.fd)
            fd, self.fd = self.fd, -1
            os.close(fd)
            os.rename(self.tmp, self.path)
        except OSError as error:
            self.abort()
            raise _io_failure("writing", self.path, error) from None
        self.tmp = None
        try:  # the new name, as durable as the data under it; best effort, as the library's
            folder = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        except OSError:
            pass
        return np.load(self.path, mmap_mode="r")

    def abort(self):
        """Removes the temporary; the path is left as it was. Safe to call again."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None


def _check_outputs_apart(files):
    """Two output files of one call under one name (by any spelling: ./, a link to the
    folder) would each be renamed over the other, the last one left: refused."""
    seen = {}
    for name, f in files:
        folder, base = os.path.split(os.path.abspath(f.path))
        key = (os.path.realpath(folder), base)
        if key in seen:
            raise InputError(f"outputs {seen[key]!r} and {name!r} both name the file {f.path}: "
                             f"one would replace the other; give each its own path")
        seen[key] = name


def _as_output(ctx, name, value):
    """(array, file or None) for an output given as an array, (shape, dtype) or (path, shape, dtype)."""
    if isinstance(value, np.ndarray):
        if not (value.flags.c_contiguous and value.flags.writeable):
            raise InputError(f"output {name} must be a writeable C-contiguous array")
        return value, None
    if isinstance(value, tuple) and len(value) == 2:
        shape, dtype = _shape_dtype(f"output {name}", *value)
        check_fits_in_memory(f"output {name}", "the {} array", shape, dtype,
                             "give it as (path.npy, shape, dtype) to write it to a file")
        return np.empty(shape, dtype), None
    if isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], (str, os.PathLike)):
        f = _NpyOutput(ctx, name, value[0], *_shape_dtype(f"output {name}", value[1], value[2]))
        return f.array, f
    raise InputError(f"output {name}: expected an array, (shape, dtype) or (path.npy, shape, dtype); got {value!r}")


def _shape_dtype(what, shape, dtype):
    """An array's (shape, dtype) as given for an output or scratch (`what`: "output x"):
    whole, non-negative sizes (a float or a negative one is refused, not truncated or left to
    numpy's own error) and a numpy dtype."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if isinstance(shape, np.ndarray) and shape.ndim == 1:  # x.shape kept as an array
        shape = tuple(shape)
    if not isinstance(shape, (tuple, list)):
        raise InputError(f"{what}: the shape must be a tuple of sizes; got {shape!r}")
    shape = tuple(_integer(f"{what}'s size", n, 0) for n in shape)
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        raise InputError(f"{what}: {dtype!r} is not a numpy dtype") from None
    return shape, dtype


def _axis_of(axis, name):
    a = axis.get(name, 0) if isinstance(axis, dict) else axis
    return _integer(f"axis of {name}", a, 0)


def _options(gpu_mem, host_mem, device, chunk_rows, in_flight):
    opts = _lib.StreamOptions()
    set_device_budgets(opts, device, gpu_mem, host_mem)
    if chunk_rows is not None:
        opts.chunk_rows = _integer("chunk_rows", chunk_rows, 1)
    if in_flight is not None:
        opts.in_flight = _integer("in_flight", in_flight, 2, 2**31 - 1)  # a C int
    return opts


def stream(fn: Callable[[Chunk], object], inputs: Mapping[str, npt.ArrayLike | Path] | None = None,
           outputs: Mapping[str, Any] | None = None, *, side: Mapping[str, npt.ArrayLike] | None = None,
           scratch: Mapping[str, tuple[Any, DTypeLike]] | None = None,
           inout: Mapping[str, np.ndarray] | None = None, result: Mapping[str, np.ndarray] | None = None,
           axis: int | Mapping[str, int] = 0, extent: Integer | None = None, gpu_mem: Size | None = None,
           host_mem: Size | None = None, device: Integer | None = None, chunk_rows: Integer | None = None,
           in_flight: Integer | None = None, progress: Progress | None = None, context: Context | None = None,
           stats: dict | None = None, return_stats: Flag = False) -> Any:
    """Runs fn(chunk) over chunks of the arrays, on the GPU, under the device's budget.

    Parameters
    ----------
    fn : callable
        fn(chunk) enqueues the caller's kernel on chunk.stream for one chunk (a Chunk:
        index, count, start, rows, stream, device, and the device views by name, chunk["x"]
        or chunk.x; an array named as one of those attributes, or "arrays", is refused).
        Called on the calling thread; an exception it raises stops the job and is raised
        again by stream.
    inputs : dict of str to array_like or path, optional
        {name: array or path.npy}, uploaded chunk by chunk (a path is memory-mapped).
    outputs : dict of str to array, (shape, dtype) or (path, shape, dtype), optional
        {name: array, (shape, dtype) or (path.npy, shape, dtype)}, downloaded chunk by chunk
        (a path is checked as the CLI checks -o, InputError before any work, and written as
        PATH.tmp-PID-RANDOM, renamed when done: docs/write-failures.md).
    side : dict of str to array_like, optional
        {name: array}, uploaded once, whole, seen by every chunk.
    scratch : dict of str to (shape, dtype), optional
        {name: (shape, dtype)}, chunk-sized device memory, never copied.
    inout : dict of str to numpy.ndarray, optional
        {name: array}, uploaded, changed by fn's kernel, written back.
    result : dict of str to numpy.ndarray, optional
        {name: array}, uploaded once (its initial value), kept on the device through every
        chunk, written back after the last: an accumulator that kernels update with atomics
        (chunks may run at the same time on two streams).
    axis : int or dict of str to int, default 0
        The axis chunks cut (one int, or {name: int}); chunked arrays agree on its length.
    extent : int, optional
        The rows to cut when no array is chunked (device-only work returning results).
    gpu_mem : int or str, optional
        The device budget, as outcore.gram takes it; default 90% of the device's free
        memory.
    host_mem : int or str, optional
        Caps the pinned host staging (a quarter of it); default 1 GiB of staging.
    device : int, optional
        The CUDA device index (default 0).
    chunk_rows : int, optional
        Forces the rows per chunk (tests, tuning); default the planner's choice.
    in_flight : int, optional
        Forces the chunks with device buffers at once, 2 to 8 (tests, tuning); default the
        planner's choice (3).
    progress : callable, optional
        progress(done, total), called between chunks with rows of the chunk extent; an
        exception it raises (KeyboardInterrupt too) cancels the job and is raised by stream
        once the job has stopped.
    context : outcore.Context, optional
        The Context whose library context the call runs on; default the module's default
        context.
    stats : dict, optional
        A dict that stream fills once the job has run with its statistics, oc_stream_stats's
        fields by name: chunks, chunk_rows, in_flight, bytes_h2d, bytes_d2h, dev_budget_bytes,
        dev_peak_bytes, pinned_bytes, seconds, launch_seconds, bytes_direct (as gram, map
        and matmul fill theirs).
    return_stats : bool, default False
        The older form of stats: True also returns a dict of those statistics, the pair
        (arrays, statistics).

    Returns
    -------
    dict of str to numpy.ndarray, or (dict, dict)
        {name: array} of the outputs, inout and result arrays (an output given as a path: a
        read-only memmap of the file); with return_stats, (arrays, statistics).

    Raises
    ------
    InputError
        A bad array, name, argument or output path, an output in memory larger than the
        machine's memory or an output file past 2**63 - 1 bytes (a ValueError).
    OutOfMemoryError, DeviceError, UnsupportedError, IOFailure, Error
        The job failed; UnsupportedError without CUDA or a GPU; IOFailure when an output
        file could not be written (a full disk).
    BaseException
        Whatever fn or progress raised, after the job has stopped.

    Examples
    --------
    Every example is skipped by doctest: it needs numba and a GPU.

    >>> from numba import cuda                                    # doctest: +SKIP
    >>> @cuda.jit                                                 # doctest: +SKIP
    ... def saxpy(x, y, out):
    ...     i = cuda.grid(1)
    ...     if i < out.shape[0]:
    ...         out[i] = 2.0 * x[i] + y[i]
    >>> def launch(chunk):                                        # doctest: +SKIP
    ...     s = cuda.external_stream(chunk.stream)
    ...     saxpy[(chunk.rows + 255) // 256, 256, s](chunk.x, chunk.y, chunk.out)
    >>> res = outcore.stream(launch, inputs={"x": x, "y": y},     # doctest: +SKIP
    ...                      outputs={"out": (x.shape, x.dtype)}, gpu_mem="1G")
    >>> out = res["out"]                                          # doctest: +SKIP
    """
    return_stats, stats = flag("return_stats", return_stats), checked_stats(stats)
    if not callable(fn):
        raise InputError("fn must be callable: it receives each chunk and launches the kernel")
    checked_progress(progress)
    roles: list[tuple[Mapping[str, Any] | None, int]] = [(inputs, _lib.OC_STREAM_INPUT), (outputs, _lib.OC_STREAM_OUTPUT), (inout, _lib.OC_STREAM_INOUT),
             (side, _lib.OC_STREAM_SIDE), (scratch, _lib.OC_STREAM_SCRATCH), (result, _lib.OC_STREAM_RESULT)]
    for given, _ in roles:
        for name in given or {}:
            _check_array_name(name)
    names: list[str] = []
    hosts, files, dtypes, results, read = [], [], [], {}, []
    arrays = (_lib.StreamArray * sum(len(d or {}) for d, _ in roles))()
    with lease(context) as handle:
        try:
            for given, role in roles:
                for name, value in (given or {}).items():
                    if name in names:
                        raise InputError(f"array {name!r} is named twice")
                    arr: Any = None  # None for scratch, which has no host array
                    if role in (_lib.OC_STREAM_INPUT, _lib.OC_STREAM_SIDE):
                        arr = _as_input(name, value)
                    elif role == _lib.OC_STREAM_OUTPUT:
                        arr, f = _as_output(handle, name, value)
                        if f is not None:
                            files.append((name, f))
                    elif role in (_lib.OC_STREAM_INOUT, _lib.OC_STREAM_RESULT):
                        if not isinstance(value, np.ndarray):
                            kind = "inout" if role == _lib.OC_STREAM_INOUT else "result"
                            raise InputError(f"{kind} {name} must be an array (it is read and written back)")
                        arr, _ = _as_output(handle, name, value)
                    if role == _lib.OC_STREAM_SCRATCH:
                        if not (isinstance(value, (tuple, list)) and len(value) == 2):
                            raise InputError(f"scratch {name}: expected (shape, dtype); got {value!r}")
                        (shape, dtype), arr = _shape_dtype(f"scratch {name}", *value), None
                    else:
                        shape, dtype = arr.shape, arr.dtype
                    if len(shape) < 1 or len(shape) > _lib.OC_STREAM_MAX_DIMS:
                        raise InputError(f"array {name!r} has {len(shape)} dimensions (expected 1 to 8)")
                    a = arrays[len(names)]
                    a.name = c_text("array name", name)
                    a.role = role
                    a.elem_size = dtype.itemsize
                    a.ndim = len(shape)
                    for d, n in enumerate(shape):
                        a.shape[d] = n
                    a.axis = _axis_of(axis, name) if role not in (_lib.OC_STREAM_SIDE, _lib.OC_STREAM_RESULT) else 0
                    a.host = None if arr is None else arr.ctypes.data
                    names.append(name)
                    hosts.append(arr)  # keeps every buffer alive for the call
                    dtypes.append(dtype)
                    if role in (_lib.OC_STREAM_OUTPUT, _lib.OC_STREAM_INOUT, _lib.OC_STREAM_RESULT):
                        results[name] = arr
                    if role != _lib.OC_STREAM_OUTPUT and arr is not None:
                        read.append((name, value if isinstance(value, np.ndarray) else arr))
            for _, f in files:  # an output file that an array read maps, by any name
                check_out_path_not_input(f.path, read)
            _check_outputs_apart(files)

            failure = []

            def launch(chunk_p, _user):
                c = chunk_p.contents
                try:
                    views = {}
                    for k, name in enumerate(names):
                        shape = tuple(c.shapes[k * _lib.OC_STREAM_MAX_DIMS + d] for d in range(arrays[k].ndim))
                        views[name] = DeviceArray(shape, dtypes[k], c.data[k], c.stream)
                    fn(Chunk(c.index, c.count, c.start, c.rows, c.stream, c.device, views))
                    return 0
                except BaseException as error:  # KeyboardInterrupt too: the job stops, then it is raised
                    failure.append(error)
                    return 1

            spec = _lib.StreamSpec()
            spec.arrays = arrays
            spec.narrays = len(names)
            spec.launch = _lib.stream_launch_fn(launch)
            if extent is not None:
                spec.extent = _integer("extent", extent, 1)
            opts = _options(gpu_mem, host_mem, device, chunk_rows, in_flight)
            reports = _ProgressCall(progress, handle) if progress is not None else None
            if reports is not None:
                opts.progress = reports.callback
            job_stats = _lib.StreamStats()
            status = lib.oc_stream_run(handle, ctypes.byref(spec), ctypes.byref(opts), ctypes.byref(job_stats))
            error = from_status(status, handle) if status != _lib.OC_OK else None
            if failure:
                raise failure[0] from error
            if reports is not None and reports.error is not None:
                raise reports.error  # it cancelled the job, which has stopped
            if error is not None:
                raise error
            for name, f in files:
                results[name] = f.commit()
        finally:
            for _, f in files:
                f.abort()  # nothing left of one committed
    numbers = {f: getattr(job_stats, f) for f, *_ in _lib.StreamStats._fields_ if f != "struct_size"}
    if stats is not None:
        stats.update(numbers)
    return (results, numbers) if return_stats else results
