"""Option parsing for outcore.gram and outcore.Context: names, sizes and counts checked in
Python, before anything is allocated, and turned into the library's oc_gram_options; and the
size of a result a call would allocate in memory, checked against the machine's."""
import ctypes
import math
import operator
import os
import stat
import warnings

import numpy as np

from . import _lib
from .errors import InputError

lib = _lib.lib

# The settings an outcore.Context holds for its calls (each None when it leaves the call's
# own default), in the order of Context's parameters.
RESOURCES = ("backend", "device", "gpu_mem", "host_mem", "threads")


# The most CPU worker threads a job takes: OC_MAX_THREADS, as the CLI and the library check.
MAX_THREADS = 4096
# The largest values of the library's int64 and int fields: a larger Python int would wrap.
INT64_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


def c_text(what, value):
    """value (a str) as the bytes the library reads. A NUL byte would end the text there, so
    the library would read less than was given: it is refused."""
    if not isinstance(value, str):
        raise InputError(f"{what} must be a string; got {type(value).__name__}")
    if "\0" in value:
        raise InputError(f"{what} {value!r} holds a NUL byte ('\\0'), which no text the library reads can hold")
    try:
        return value.encode()
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8
        raise InputError(f"{what} {value!r} is not valid Unicode text (it holds a lone surrogate)") from None


def flag(name, value):
    """A yes/no argument as 0 or 1: True, False, numpy's bools, or the ints 0 and 1 (which
    Python's bools are). Anything else (a string such as "no", None, 2) is refused: its truth
    value would give an answer the caller did not ask for."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return 1 if value else 0
    raise InputError(f"{name} must be True or False; got {value!r}")


def plan_flag(value):
    """plan= as 0 (run the job), 1 (True: the text of the CLI's --plan) or 2 ("json": the plan
    as a dict, the object of --plan --json). Another value is refused as flag() refuses it."""
    if isinstance(value, str) and value == "json":
        return 2
    try:
        return flag("plan", value)
    except InputError:
        raise InputError(f'plan must be True, False or "json"; got {value!r}') from None


def unmasked(name, x):
    """x itself, unless it is a numpy masked array hiding values: np.asarray reads the values
    under the mask too, which would give a result the caller did not ask for. Refused, naming
    the ways to say what a masked value is. A masked array hiding nothing is its data."""
    if isinstance(x, np.ma.MaskedArray):
        hidden = int(np.ma.count_masked(x))
        if hidden:
            raise InputError(f"{name}: a masked array with {hidden} masked value{'s' if hidden != 1 else ''}; outcore "
                             "reads every value: pass x.filled(value) or x.data")
        return x.data
    return x


def as_numbers(name, x):
    """np.asarray(x), where what numpy cannot read (ragged nested lists, an object of no
    array form) is an InputError naming the argument, as the library's refusals are; a masked
    array hiding values is refused (unmasked)."""
    x = unmasked(name, x)
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as exc:
        what = "the nested lists" if isinstance(x, (list, tuple)) else type(x).__name__
        raise InputError(f"{name}: {what} cannot be read as a rectangular array of numbers ({exc})") from None


def no_array_form(x, arr):
    """Whether arr, numpy's array of x, is 0-D only because x has no array form (None, a dict,
    a generator): numpy wraps any object in a 0-D array of dtype object, which a message
    would then call an array while the caller passed something else; it names x's type."""
    return arr.ndim == 0 and arr.dtype == object and not isinstance(x, np.ndarray)


def c_path(what, value):
    """A path (str, bytes or os.PathLike) as the bytes the library opens; a NUL byte, which
    would end the path there and name another file, is refused."""
    raw = os.fsencode(value)
    if b"\0" in raw:
        # a long one (a binary image given as bytes) shown by its start: the message stays a line
        shown = repr(os.fsdecode(raw[:48])) + (f"... ({len(raw)} bytes)" if len(raw) > 48 else "")
        raise InputError(f"{what}: the path {shown} holds a NUL byte ('\\0'), which no path can hold")
    return raw


def npy_header(path):
    """(shape, fortran_order, dtype) of the .npy at path from its header, or None where it is
    not a regular file that reads as one (the library then says why, naming the file). Opened
    without blocking, so that a named pipe is not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, TypeError, ValueError):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        fmt = np.lib.format
        try:
            version = fmt.read_magic(f)
            if hasattr(fmt, "_read_array_header"):  # every version, numpy 1.x and 2.x
                return fmt._read_array_header(f, version)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            return read(f)
        except Exception:  # a header numpy does not read: the library's message names the problem
            return None


def threads_count(value):
    """threads= checked as the CLI checks --threads: 1 to MAX_THREADS (a larger int would
    not fit the library's int, and no job runs more)."""
    value = positive_int("threads", value, None)
    if value > MAX_THREADS:
        raise InputError(f"threads={value}: at most {MAX_THREADS}")
    return value


def _parse_name(kind, value, parse, choices):
    if not isinstance(value, str):
        raise InputError(f"{kind} must be a string, one of {choices}; got {value!r}")
    code = ctypes.c_int()
    if parse(c_text(kind, value), ctypes.byref(code)) != _lib.OC_OK:
        raise InputError(f"unknown {kind} {value!r}: expected one of {choices}")
    return code.value


def _parse_dtype(dtype):
    if dtype is None:
        return _lib.OC_DTYPE_DEFAULT
    choices = ", ".join(_lib.names(lib.oc_dtype_name)[1:])
    if isinstance(dtype, str) and dtype in choices.split(", "):
        name = dtype
    else:
        # numpy's spellings too ("i4", "<u2", "f", np.float32), as map and matmul take them
        try:
            name = np.dtype(dtype).name
        except (TypeError, ValueError):
            if isinstance(dtype, str):
                return _parse_name("dtype", dtype, lib.oc_dtype_parse, choices)
            raise InputError(f"dtype {dtype!r} is not a dtype: use int32, uint16 or float32") from None
    return _parse_name("dtype", name, lib.oc_dtype_parse, choices)


def parse_backend(value):
    return _parse_name("backend", value, lib.oc_backend_parse, ", ".join(_lib.names(lib.oc_backend_name)))


def warn_gpu_only(backend, stacklevel, **given):
    """A RuntimeWarning for each GPU-only keyword the call gave itself that cannot take effect,
    as the CLI warns of --gpu-mem, --device and --tf32: with backend "cpu", or with "auto" when
    no GPU is usable (the job runs on the CPU; with "cuda" the job's own error says why).
    backend is oc_backend's code; given holds the call's keywords, None or False where not
    given; stacklevel is warn_gpu_only's depth below the user's call."""
    given = {name: value for name, value in given.items() if value is not None and value is not False}
    if not given:
        return
    name = _lib.text(lib.oc_backend_name(backend))
    if name == "cpu":
        why = 'with backend="cpu"'
    elif name == "auto" and lib.oc_cuda_device_count() == 0:
        why = "here: no usable GPU, the job runs on the CPU"
    else:
        return
    for keyword, value in given.items():
        shown = keyword if value is True else f"{keyword}={value!r}"
        warnings.warn(f"{shown} has no effect {why}", RuntimeWarning, stacklevel=stacklevel + 1)


def parse_gpu_mem_mode(value):
    """gpu_mem_mode= as the CLI's --gpu-mem-mode takes it: "grow" (allocate on demand up to the
    budget) or "reserve" (take the whole budget at start), as oc_gpu_mem_mode's code."""
    return _parse_name("gpu_mem_mode", value, lib.oc_gpu_mem_mode_parse,
                       ", ".join(_lib.names(lib.oc_gpu_mem_mode_name)))


def _parse_budget(name, value, percent):
    """(bytes, fraction) of a budget given as bytes (int), "2G", "512MiB" or, when percent
    is allowed, "50%": exactly one of the two is nonzero. Text is read by the library's own
    parser (oc_size_parse), the one the CLI's --gpu-mem and --host-mem use."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value <= 0:
            raise InputError(f"{name} must be a positive number of bytes; got {value}")
        if value > INT64_MAX:  # the library's int64 would wrap it to another budget
            raise InputError(f"{name}={value}: at most 2**63 - 1 bytes")
        return int(value), 0.0
    shapes = "a size such as '2G' or '512M'" + (", or a percentage such as '50%'" if percent else "")
    if not isinstance(value, str) or "\0" in value:
        raise InputError(f"{name} {value!r}: expected bytes as an int, {shapes}")
    size, fraction = ctypes.c_int64(), ctypes.c_double()
    if lib.oc_size_parse(value.encode(), ctypes.byref(size), ctypes.byref(fraction)) != _lib.OC_OK:
        if percent and value.endswith("%"):
            raise InputError(f"{name} {value!r}: a percentage must be in (0, 100]")
        raise InputError(f"{name} {value!r}: expected bytes as an int, {shapes}")
    if fraction.value and not percent:
        raise InputError(f"{name} {value!r}: expected bytes as an int or a size such as '4G' (not a percentage)")
    return size.value, fraction.value


def parse_gpu_mem(value):
    """(bytes, fraction) of a budget given as bytes (int) or as "2G", "512MiB", "50%".

    Mirrors the CLI's --gpu-mem: exactly one of the two is nonzero.
    """
    return _parse_budget("gpu_mem", value, percent=True)


def parse_host_mem(value):
    """Bytes of a host budget given as bytes (int) or as "4G", "512MiB", or "25%" of the
    machine's physical memory, as the CLI's --host-mem takes it: the library resolves a
    percentage (oc_host_mem_parse), for the CLI and the binding alike."""
    size, fraction = _parse_budget("host_mem", value, percent=True)
    if fraction:
        resolved = ctypes.c_int64()
        status = lib.oc_host_mem_parse(value.encode(), ctypes.byref(resolved))
        if status == _lib.OC_ERR_UNSUPPORTED:
            raise InputError(f"host_mem={value!r}: the machine's memory size is unknown; give a size")
        if status != _lib.OC_OK:  # 0 would be the library's "not given": the default budget, not this one
            raise InputError(f"host_mem={value!r}: less than a byte of this machine's memory")
        size = resolved.value
    return size


def machine_memory():
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_fits_in_memory(where, what, shape, dtype, instead):
    """Refuses an array of shape and dtype that a call would allocate for its result when it
    is larger than the machine's memory, before it is allocated: numpy would raise a
    MemoryError that says nothing of the call, or, below the overcommit limit, hand out memory
    that the job then fills until the machine swaps. where names the inputs or output the size
    comes from; what describes the array around "{}", which becomes its shape and dtype ("the
    {} product"), as the library's messages word a result; instead, what to pass to avoid it."""
    need = math.prod(shape) * np.dtype(dtype).itemsize  # Python ints: numpy's int64 product wraps
    memory = machine_memory()
    if need > memory:
        dims = f"{shape[0]}-element" if len(shape) == 1 else " x ".join(str(n) for n in shape)
        raise InputError(f"{where}: {what.format(f'{dims} {np.dtype(dtype)}')} needs {need} bytes in memory, more "
                         f"than this machine's {memory}: {instead}")


def _integer(name, value, least, most=INT64_MAX):
    """value as an int of least..most (most None: no bound). A float is refused, not
    truncated, and so is a bool, as numpy refuses them for sizes and axes."""
    if isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be an integer, not a bool; got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise InputError(f"{name} must be an integer; got {value!r}") from None
    if value < least:
        raise InputError(f"{name} must be at least {least}; got {value}")
    if most is not None and value > most:
        raise InputError(f"{name}={value}: at most {most}")
    return value


def positive_int(name, value, most=INT64_MAX):
    return _integer(name, value, 1, most)


def _device_list(devices):
    """The library's text of a device list: "0,1", "all", "0:2", or a sequence such as
    [0, 1] or ["0:2"]. The library checks it (one parser; its errors name the bad token)."""
    if isinstance(devices, str):
        if not devices.strip():  # the library reads "" as no list: one device, or the CPU
            raise InputError("devices: an empty list: give device numbers such as '0,1' or [0, 1], '0:2', or 'all'")
        return devices
    try:
        items = list(devices)
    except TypeError:
        raise InputError(f"devices must be a string such as '0,1' or '0:2', or a list of devices; got {devices!r}") from None
    if not items or not all(isinstance(d, (str, int, np.integer)) and not isinstance(d, bool) for d in items):
        raise InputError(f"devices must name at least one device (ints or strings such as '0:2'); got {devices!r}")
    return _device_list(",".join(str(d) for d in items))


def _per_device(gpu_mem):
    """Whether gpu_mem gives a budget per device: {0: "20G"} or "0=20G,1=40G"."""
    return isinstance(gpu_mem, dict) or (isinstance(gpu_mem, str) and "=" in gpu_mem)


def _per_device_gpu_mem(gpu_mem):
    """"0=20G,1=40G" from {0: "20G", 1: "40G"} (or that text itself). A dict's devices and
    budgets are checked here, as a single budget is, before a job or Context takes them."""
    if isinstance(gpu_mem, dict):
        seen = set()
        for device, budget in gpu_mem.items():
            # a device as an int or its digits, as the library's "0=2G" spells it
            index = int(device) if isinstance(device, str) and device.isdigit() else device
            _integer("a gpu_mem device", index, 0, INT_MAX)
            if int(index) in seen:
                raise InputError(f"gpu_mem: device {int(index)} is given a budget twice ({gpu_mem!r})")
            seen.add(int(index))
            try:
                parse_gpu_mem(budget)
            except InputError as e:
                raise InputError(f"gpu_mem[{device!r}]: {e}") from None
        return ",".join(f"{d}={v}" for d, v in gpu_mem.items())
    return gpu_mem


def single_gpu_mem(call, gpu_mem):
    """A call's own gpu_mem for a call that takes one budget (matmul, map): a budget per device
    is refused, as the CLI's --gpu-mem of those commands refuses it (a Context's is reduced to
    the device the call runs on, one_gpu_mem)."""
    if _per_device(gpu_mem):
        raise InputError(f"gpu_mem={gpu_mem!r}: {call} takes one device budget, such as 2G or 50% (a budget per "
                         "device is gram's, or a Context's)")


def one_gpu_mem(call, gpu_mem, device=None, devices=None):
    """The one GPU budget of a call that takes one (matmul, map), from a Context's budget per
    device ({0: "20G"} or "0=20G,1=40G", which gram applies device by device): the budget of
    the device the call runs on (device, else 0), None (the default) when the mapping does
    not name it; on a device list, the one budget the mapping gives, else an InputError.
    Any other value is returned as it is."""
    if not _per_device(gpu_mem):
        return gpu_mem
    budgets = {}
    for item in _per_device_gpu_mem(gpu_mem).split(","):
        name, _, size = item.partition("=")
        budgets[name.strip()] = size.strip()
    if devices is None:
        return budgets.get(str(0 if device is None else int(device)))
    if len(set(budgets.values())) == 1:
        return next(iter(budgets.values()))
    raise InputError(f"gpu_mem={gpu_mem!r}: {call} on a device list takes one budget for every device, and this "
                     "Context's budgets per device differ: give gpu_mem= to the call")


def set_device_budgets(opts, device, gpu_mem, host_mem):
    """Sets an option struct's device, gpu_mem_* and host_mem_bytes from what is not None."""
    if device is not None:
        opts.device = _integer("device", device, 0, INT_MAX)
    if gpu_mem is not None:
        opts.gpu_mem_bytes, fraction = parse_gpu_mem(gpu_mem)
        if fraction:
            opts.gpu_mem_fraction = fraction
    if host_mem is not None:
        opts.host_mem_bytes = parse_host_mem(host_mem)


def gram_options(metric, dtype, topk, threshold, backend=None, device=None, gpu_mem=None, host_mem=None,
                 threads=None, algorithm="auto", devices=None, min_score=None, tile=None, gpu_mem_mode="grow"):
    """oc_gram_options for one call; resources left None keep the library's defaults. tile and
    gpu_mem_mode are checked as the CLI checks --tile (a positive number of rows) and
    --gpu-mem-mode."""
    opts = _lib.GramOptions()
    opts.gpu_mem_mode = parse_gpu_mem_mode(gpu_mem_mode)
    if tile is not None:
        opts.tile = positive_int("tile", tile)
    opts.algorithm = _parse_name("algorithm", algorithm, lib.oc_algorithm_parse,
                                 ", ".join(_lib.names(lib.oc_algorithm_name)))
    opts.metric = _parse_name("metric", metric, lib.oc_metric_parse, ", ".join(_lib.names(lib.oc_metric_name)))
    opts.dtype = _parse_dtype(dtype)
    opts.backend = parse_backend("auto" if backend is None else backend)
    if devices is not None:
        opts.devices = c_text("devices", _device_list(devices))
    if _per_device(gpu_mem):
        opts.gpu_mem_devices = c_text("gpu_mem", _per_device_gpu_mem(gpu_mem))
        gpu_mem = None
    set_device_budgets(opts, device, gpu_mem, host_mem)
    if threads is not None:
        opts.threads = threads_count(threads)
    if topk is not None and threshold is not None:
        raise InputError("topk and threshold are exclusive: choose one")
    if topk is not None:
        topk = positive_int("topk", topk, None)
        if topk >= 1 << 63:  # beyond int64: past any matrix's columns (the job names the limit)
            raise InputError(f"topk={topk}: K may be at most the result's columns")
        opts.topk = topk
    if threshold is not None:
        opts.threshold = _finite("threshold", threshold)
        opts.use_threshold = 1
    if min_score is not None:
        if topk is None:
            raise InputError("min_score keeps the top-k neighbours scoring at least S: give topk=K too "
                             "(threshold=T gives every pair at least T)")
        opts.min_score = _finite("min_score", min_score)
        opts.use_min_score = 1
    return opts


def _finite(name, value):
    # A bool or a text is no number here, though float() takes them (True is 1.0, "1" is 1.0):
    # topk= refuses a bool alike, and a text is a caller's mistake to name.
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise InputError(f"{name} must be a number, not {type(value).__name__}; got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int past the largest float: no more finite than an infinity
        raise InputError(f"{name} must be finite; got {_shown_number(value)}") from None
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number; got {value!r}") from None
    if not math.isfinite(number):
        raise InputError(f"{name} must be finite; got {value!r}")
    return number


def _shown_number(value):
    """value's repr for a message, shortened to its ends: an int past the largest float has
    hundreds of digits, and past Python's limit on int-to-text conversion repr refuses it."""
    try:
        text = repr(value)
    except ValueError:
        return f"an int of {value.bit_length()} bits"
    return text if len(text) <= 40 else f"{text[:12]}...{text[-4:]} ({len(text)} characters)"


def rows_contiguous(x):
    """Whether the 2-D array x has contiguous rows a whole number of elements apart, which the
    library reads in place with that row stride. A stride along a dimension of one element is
    never used (numpy may give it any value, 0 for y[None, :])."""
    rows, cols = x.shape
    item, (rs, cs) = x.itemsize, x.strides
    return (cols <= 1 or cs == item) and (rows <= 1 or (rs % item == 0 and rs >= item * cols))


def checked_out(out, dtype, shape, rows_only=False, shown_shape=None, dtype_hint="", order="C"):
    """out, a numpy array that receives a result of dtype and shape in place, or InputError
    naming the first thing that does not fit: its type, shape, dtype (a byte order other than
    the machine's named as such), writeability, or layout (rows_only: contiguous rows a whole
    number of elements apart, else C-contiguous, or with order "F" Fortran-contiguous: map's
    result of Fortran-order inputs). shown_shape: the shape to name, where the caller asked for
    another view of the result (a vector's); dtype_hint ends the dtype's."""
    shown = shape if shown_shape is None else shown_shape
    if not isinstance(out, np.ndarray):
        raise InputError(f"out: expected a numpy array of {np.dtype(dtype)} of shape {shown} (or a .npy path), "
                         f"not {type(out).__name__}")
    if out.shape != tuple(shape):
        raise InputError(f"out has shape {out.shape}; the result's is {shown}")
    if out.dtype != dtype:
        if out.dtype.newbyteorder("=") == np.dtype(dtype) and out.dtype.byteorder not in "=|":
            raise InputError(f"out has dtype {out.dtype.str}, which is not in this machine's byte order: the result "
                             f"is {np.dtype(dtype)} ({np.dtype(dtype).str})")
        raise InputError(f"out has dtype {out.dtype}; the result is {np.dtype(dtype)}{dtype_hint}")
    if not out.flags.writeable:
        raise InputError("out is read-only")
    item = out.itemsize
    if rows_only:
        if not rows_contiguous(out):
            raise InputError(f"out must have contiguous rows (strides {out.strides} with itemsize {item}); "
                             "pass a C-ordered array or a row slice of one")
    elif order == "F":
        if out.size and not out.flags.f_contiguous:
            raise InputError(f"out must be Fortran-contiguous, as the result of Fortran-order inputs is (strides "
                             f"{out.strides} with itemsize {item}); pass numpy.empty(shape, order='F') or a "
                             ".npy path")
    elif out.size and not out.flags.c_contiguous:
        raise InputError(f"out must be C-contiguous (strides {out.strides} with itemsize {item}); pass a C-ordered "
                         "array, such as numpy.empty's")
    return out
