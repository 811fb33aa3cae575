"""Finds liboutcore and declares its C API (include/outcore.h) for ctypes.

The structures below mirror outcore.h field for field; every option struct carries its size
in its first field, and the library rejects a size smaller than its own, so a mismatch between
this file and the library shows up as a clear error instead of memory corruption.

ctypes.CDLL releases the GIL around every foreign call, which is what lets other Python
threads run while a job computes.
"""
import ctypes
import glob
import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# python/outcore/_lib.py -> the repository root is two levels up.
_BUILD_TREE = _HERE.parent.parent / "build"


def _candidates():
    """Where the library may be, in the order documented in docs/python.md."""
    env = os.environ.get("OUTCORE_LIBRARY")
    if env:
        # An explicit choice is never silently replaced by another copy: the name is made
        # absolute, since a name without a '/' would be looked for on the loader's path.
        return [Path(env).absolute()], True
    # The wheel installs outcore/lib/liboutcore.so.<major> (cmake/wheel.cmake).
    beside = [p for pattern in ("lib/liboutcore.so*", "liboutcore.so*")
              for p in sorted(glob.glob(str(_HERE / pattern)), key=len)]
    return [Path(p) for p in beside] + [_BUILD_TREE / "liboutcore.so"], False


def _load():
    paths, explicit = _candidates()
    for path in paths:
        if path.exists():
            try:
                return ctypes.CDLL(str(path)), path
            except OSError as exc:
                raise ImportError(f"outcore: cannot load {path}: {exc}") from exc
    if explicit:
        raise ImportError(f"outcore: OUTCORE_LIBRARY={paths[0]} does not exist")
    raise ImportError("outcore: liboutcore.so not found; looked beside the package "
                      f"({_HERE}) and in the build tree ({_BUILD_TREE}). Build it with "
                      "`cmake -S . -B build && cmake --build build`, or set OUTCORE_LIBRARY.")


lib, library_path = _load()

# ---------------------------------------------------------------- enums (outcore.h)
OC_OK = 0
OC_ERR_INVALID_ARGUMENT = 1
OC_ERR_INPUT = 2
OC_ERR_IO = 3
OC_ERR_NO_MEMORY = 4
OC_ERR_DEVICE_NO_MEMORY = 5
OC_ERR_DEVICE = 6
OC_ERR_UNSUPPORTED = 7
OC_ERR_CANCELLED = 8
OC_ERR_INTERNAL = 9

OC_BITS_MSB_FIRST = 0

OC_DTYPE_DEFAULT = 0
OC_DTYPE_INT32 = 1
OC_DTYPE_UINT16 = 2
OC_DTYPE_FLOAT32 = 3

OC_OUTPUT_MEMORY = 0
OC_OUTPUT_FILE = 1
OC_RESULT_DENSE, OC_RESULT_TOPK, OC_RESULT_THRESHOLD = 1, 2, 4  # oc_output_format_results's bits
OC_OUTPUT_TOPK = 2
OC_OUTPUT_PAIRS = 3
OC_OUTPUT_DISCARD = 4

c_int64_p = ctypes.POINTER(ctypes.c_int64)
_progress_c = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_double, ctypes.c_double)


class progress_fn(_progress_c):
    """A progress callback for the library, made by the call that passes it: it runs for that
    call on whatever thread the library calls it from, so calling into a Context the call holds
    raises instead of waiting for ever (_calls.holding)."""
    _flags_, _argtypes_, _restype_ = _progress_c._flags_, _progress_c._argtypes_, _progress_c._restype_

    def __new__(cls, fn):
        from ._calls import for_this_call  # _calls imports this module
        return super().__new__(cls, for_this_call(fn))


warning_fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
pairs_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, c_int64_p, c_int64_p, ctypes.c_void_p,
                            ctypes.c_int64)



class _Defaults(ctypes.Structure):
    """A struct of outcore.h whose ..._INIT macro gives its defaults: an instance starts from
    the library's own values (oc_struct_defaults), never from a copy of them here, and a
    layout out of step with the library's sizeof is refused at once. The library is asked
    once a class; later instances are copies of that first answer's bytes (an instance per
    argument of every call: asking each time cost a few microseconds apiece)."""

    _c_name: str  # the struct's C name, set by each subclass

    def __new__(cls, *args, **fields):  # the arguments are __init__'s
        template = cls.__dict__.get("_template")
        if template is None:
            first = super().__new__(cls)
            if lib.oc_struct_defaults(cls._c_name.encode(), ctypes.byref(first), ctypes.sizeof(cls)) != OC_OK:
                raise ImportError(f"{cls._c_name}: this binding's layout ({ctypes.sizeof(cls)} bytes) does not match "
                                  f"the library it loaded ({library_path}); install the binding and library of one "
                                  "build")
            template = cls._template = bytes(first)
        return cls.from_buffer_copy(template)

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


class GramOptions(_Defaults):
    _c_name = "oc_gram_options"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("metric", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("backend", ctypes.c_int),
        ("threads", ctypes.c_int),
        ("device", ctypes.c_int),
        ("gpu_mem_bytes", ctypes.c_int64),
        ("gpu_mem_fraction", ctypes.c_double),
        ("gpu_mem_mode", ctypes.c_int),
        ("host_mem_bytes", ctypes.c_int64),
        ("topk", ctypes.c_int64),
        ("use_threshold", ctypes.c_int),
        ("threshold", ctypes.c_double),
        ("tile", ctypes.c_int64),
        ("progress", _progress_c),
        ("progress_user", ctypes.c_void_p),
        ("algorithm", ctypes.c_int),
        ("resume", ctypes.c_int),
        ("devices", ctypes.c_char_p),
        ("gpu_mem_devices", ctypes.c_char_p),
        ("use_min_score", ctypes.c_int),
        ("min_score", ctypes.c_double),
    ]


class Output(_Defaults):
    _c_name = "oc_output"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("kind", ctypes.c_int),
        ("data", ctypes.c_void_p),
        ("ld", ctypes.c_int64),
        ("path", ctypes.c_char_p),
        ("indices", c_int64_p),
        ("scores", ctypes.c_void_p),
        ("pairs", pairs_fn),
        ("pairs_user", ctypes.c_void_p),
    ]


class ReadOptions(_Defaults):
    _c_name = "oc_read_options"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("bits", ctypes.c_int64),
        ("binarize", ctypes.c_int),
        ("host_mem_bytes", ctypes.c_int64),
    ]

    def __init__(self, bits=0, binarize=False, host_mem_bytes=0):
        super().__init__(bits=bits, binarize=int(bool(binarize)), host_mem_bytes=host_mem_bytes)


MAX_LOGICAL_DEVICES = 16  # OC_MAX_LOGICAL_DEVICES


class DeviceStats(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 32),
        ("tiles", ctypes.c_int64),
        ("bytes_h2d", ctypes.c_int64),
        ("bytes_d2h", ctypes.c_int64),
        ("busy_seconds", ctypes.c_double),
        ("budget_bytes", ctypes.c_int64),
        ("peak_bytes", ctypes.c_int64),
    ]


class GramPhases(ctypes.Structure):
    _fields_ = [
        ("cuda_start", ctypes.c_double),
        ("prepare", ctypes.c_double),
        ("setup", ctypes.c_double),
        ("compute", ctypes.c_double),
        ("output", ctypes.c_double),
        ("teardown", ctypes.c_double),
    ]


class GramStats(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("backend", ctypes.c_int),
        ("backend_desc", ctypes.c_char * 96),
        ("seconds", ctypes.c_double),
        ("bit_macs_computed", ctypes.c_double),
        ("bit_macs_effective", ctypes.c_double),
        ("tiles", ctypes.c_int64),
        ("host_peak_bytes", ctypes.c_int64),
        ("dev_budget_bytes", ctypes.c_int64),
        ("dev_peak_bytes", ctypes.c_int64),
        ("dev_current_bytes", ctypes.c_int64),
        ("dev_allocations", ctypes.c_int64),
        ("bytes_h2d", ctypes.c_int64),
        ("bytes_d2h", ctypes.c_int64),
        ("pairs", ctypes.c_int64),
        ("select_desc", ctypes.c_char * 64),
        ("host_budget_bytes", ctypes.c_int64),
        ("algorithm", ctypes.c_int),
        ("algorithm_desc", ctypes.c_char * 320),
        ("backend_explain", ctypes.c_char * 640),
        ("device_count", ctypes.c_int),
        ("devices", DeviceStats * MAX_LOGICAL_DEVICES),
        ("threads", ctypes.c_int),
        ("phases", GramPhases),
        ("predicted_seconds", ctypes.c_double),
    ]

    def __init__(self):
        super().__init__(struct_size=ctypes.sizeof(GramStats))


# ---------------------------------------------------------------- functions
_vp = ctypes.c_void_p
_i64 = ctypes.c_int64
_ctx_pp = ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES = {
    "oc_version": (ctypes.c_char_p, []),
    "oc_status_string": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_context_create": (ctypes.c_int, [_ctx_pp]),
    "oc_context_free": (None, [_vp]),
    "oc_context_set_warning_fn": (None, [_vp, warning_fn, _vp]),
    "oc_context_last_error": (ctypes.c_char_p, [_vp]),
    "oc_context_error_trace": (ctypes.c_char_p, [_vp]),
    "oc_context_cancel": (None, [_vp]),
    "oc_context_release_cached_memory": (None, [_vp]),
    "oc_context_cached_memory_bytes": (_i64, [_vp]),
    "oc_release_cached_memory": (None, []),
    "oc_matrix_from_dense": (ctypes.c_int, [_vp, _vp, _i64, _i64, _i64, _ctx_pp]),
    "oc_text_escape": (ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int]),
    "oc_matrix_from_values": (ctypes.c_int, [_vp, _vp, _i64, _i64, _i64, ctypes.c_int, ctypes.c_int, _ctx_pp]),
    "oc_matrix_from_bits": (ctypes.c_int, [_vp, _vp, _i64, _i64, _i64, ctypes.c_int, _ctx_pp]),
    "oc_matrix_from_csr": (ctypes.c_int, [_vp, _i64, _i64, c_int64_p, c_int64_p, _ctx_pp]),
    "oc_matrix_open": (ctypes.c_int, [_vp, ctypes.c_char_p, _i64, _ctx_pp]),
    "oc_matrix_read": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.POINTER(ReadOptions), _ctx_pp]),
    "oc_matrix_peek": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.POINTER(ReadOptions), c_int64_p, c_int64_p]),
    "oc_gram_check_files": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ReadOptions),
                                           ctypes.POINTER(GramOptions), ctypes.POINTER(Output)]),
    "oc_output_check": (ctypes.c_int, [_vp, ctypes.c_char_p]),
    "oc_matrix_rows": (_i64, [_vp]),
    "oc_matrix_cols": (_i64, [_vp]),
    "oc_matrix_set_name": (ctypes.c_int, [_vp, _vp, ctypes.c_char_p]),
    "oc_matrix_free": (None, [_vp]),
    "oc_gram": (ctypes.c_int, [_vp, _vp, _vp, ctypes.POINTER(GramOptions), ctypes.POINTER(Output),
                               ctypes.POINTER(GramStats)]),
    "oc_gram_plan": (ctypes.c_int, [_vp, _vp, _vp, ctypes.POINTER(GramOptions), ctypes.POINTER(Output), ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_void_p)]),
    "oc_gram_result_dtype": (ctypes.c_int, [ctypes.c_int, ctypes.c_int]),
    "oc_metric_dtypes_text": (None, [ctypes.c_char_p, ctypes.c_size_t]),
    "oc_metric_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "oc_dtype_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "oc_backend_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "oc_algorithm_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "oc_gpu_mem_mode_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "oc_struct_defaults": (ctypes.c_int, [ctypes.c_char_p, _vp, ctypes.c_size_t]),
    "oc_size_parse": (ctypes.c_int, [ctypes.c_char_p, c_int64_p, ctypes.POINTER(ctypes.c_double)]),
    "oc_host_mem_parse": (ctypes.c_int, [ctypes.c_char_p, c_int64_p]),
    "oc_metric_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_dtype_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_backend_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_algorithm_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_gpu_mem_mode_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_map_function_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_output_format_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_output_format_results": (ctypes.c_uint, [ctypes.c_int]),
    "oc_map_operator_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_cpu_isa": (ctypes.c_char_p, []),
    "oc_cpu_cores": (ctypes.c_int, []),
    "oc_cuda_device_count": (ctypes.c_int, []),
    "oc_cuda_warm_up": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int]),
    "oc_pinned_alloc": (ctypes.c_int, [_vp, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    "oc_pinned_free": (None, [_vp]),
}
for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes


def text(raw):
    """A C string from the library as str (messages may quote file names in any encoding)."""
    return raw.decode("utf-8", "replace") if raw else ""


# Text and reports the library malloc'ed are released with the C library's free.
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def c_free(ptr):
    """Releases what the library malloc'ed (a c_void_p; NULL is nothing)."""
    _libc.free(ptr)


def owned_text(ptr):
    """The string the library malloc'ed at ptr (a c_void_p, may be NULL) as str, released."""
    try:
        return text(ctypes.string_at(ptr) if ptr.value else None)
    finally:
        c_free(ptr)


_NAMES: dict = {}  # a library function's name -> the names it gives


def names(name_at):
    """The list a C function name_at(i) gives, i = 0, 1, ... until NULL (oc_metric_name): a
    table the library fixes when it is built, read once a process."""
    known = _NAMES.get(name_at.__name__)
    if known is None:
        out, i = [], 0
        while (raw := name_at(i)) is not None:
            out.append(text(raw))
            i += 1
        known = _NAMES[name_at.__name__] = tuple(out)
    return list(known)


def output_formats(results=~0):
    """The Gram result's file formats by suffix ("npy", ...) that hold one of the results in
    the OC_RESULT_* bits `results`, in the library's order (oc_output_format_name)."""
    return [name for i, name in enumerate(names(lib.oc_output_format_name))
            if lib.oc_output_format_results(i) & results]


def shown(raw):
    """A message from the library as str, escaped by oc_text_escape's terminal rule as the
    CLI prints it: a file name's control bytes and invalid UTF-8 become \\xNN, so an
    exception printed on a terminal cannot drive it."""
    if not raw:
        return ""
    size = lib.oc_text_escape(None, 0, raw, 0)
    buf = ctypes.create_string_buffer(size + 1)
    lib.oc_text_escape(buf, size + 1, raw, 0)
    return buf.value.decode("utf-8")


# ---------------------------------------------------------------- streaming user kernels (outcore.h)
OC_STREAM_INPUT = 0
OC_STREAM_OUTPUT = 1
OC_STREAM_INOUT = 2
OC_STREAM_SIDE = 3
OC_STREAM_SCRATCH = 4
OC_STREAM_RESULT = 5
OC_STREAM_MAX_DIMS = 8


class StreamArray(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("role", ctypes.c_int),
        ("elem_size", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * OC_STREAM_MAX_DIMS),
        ("axis", ctypes.c_int),
        ("host", ctypes.c_void_p),
    ]


class StreamChunk(ctypes.Structure):
    _fields_ = [
        ("index", ctypes.c_int64),
        ("count", ctypes.c_int64),
        ("start", ctypes.c_int64),
        ("rows", ctypes.c_int64),
        ("narrays", ctypes.c_int),
        ("data", ctypes.POINTER(ctypes.c_void_p)),
        ("shapes", c_int64_p),
        ("stream", ctypes.c_void_p),
        ("device", ctypes.c_int),
    ]


stream_launch_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(StreamChunk), ctypes.c_void_p)


class StreamSpec(_Defaults):
    _c_name = "oc_stream_spec"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("array_struct_size", ctypes.c_size_t),
        ("arrays", ctypes.POINTER(StreamArray)),
        ("narrays", ctypes.c_int),
        ("launch", stream_launch_fn),
        ("user", ctypes.c_void_p),
        ("extent", ctypes.c_int64),
    ]


class StreamOptions(_Defaults):
    _c_name = "oc_stream_options"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("device", ctypes.c_int),
        ("gpu_mem_bytes", ctypes.c_int64),
        ("gpu_mem_fraction", ctypes.c_double),
        ("gpu_mem_mode", ctypes.c_int),
        ("host_mem_bytes", ctypes.c_int64),
        ("chunk_rows", ctypes.c_int64),
        ("in_flight", ctypes.c_int),
        ("progress", _progress_c),
        ("progress_user", ctypes.c_void_p),
    ]


class StreamStats(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("chunks", ctypes.c_int64),
        ("chunk_rows", ctypes.c_int64),
        ("in_flight", ctypes.c_int),
        ("bytes_h2d", ctypes.c_int64),
        ("bytes_d2h", ctypes.c_int64),
        ("dev_budget_bytes", ctypes.c_int64),
        ("dev_peak_bytes", ctypes.c_int64),
        ("pinned_bytes", ctypes.c_int64),
        ("seconds", ctypes.c_double),
        ("launch_seconds", ctypes.c_double),
        ("bytes_direct", ctypes.c_int64),
    ]

    def __init__(self):
        super().__init__(struct_size=ctypes.sizeof(StreamStats))


lib.oc_stream_run.restype = ctypes.c_int
lib.oc_stream_run.argtypes = [_vp, ctypes.POINTER(StreamSpec), ctypes.POINTER(StreamOptions),
                              ctypes.POINTER(StreamStats)]


# ---------------------------------------------------------------- map (outcore.h, "map")
class MapArray(_Defaults):
    _c_name = "oc_map_array"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("name", ctypes.c_char_p),
        ("path", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", c_int64_p),
        ("fortran_order", ctypes.c_int),
    ]


class MapScalar(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class MapOptions(_Defaults):
    _c_name = "oc_map_options"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("backend", ctypes.c_int),
        ("threads", ctypes.c_int),
        ("host_mem_bytes", ctypes.c_int64),
        ("gpu_mem_bytes", ctypes.c_int64),
        ("reduce", ctypes.c_int),
        ("has_axis", ctypes.c_int),
        ("axis", ctypes.c_int),
        ("progress", _progress_c),
        ("progress_user", ctypes.c_void_p),
        ("gpu_mem_fraction", ctypes.c_double),
        ("fortran_out", ctypes.c_int),
    ]


class MapStats(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("backend", ctypes.c_int),
        ("backend_desc", ctypes.c_char * 96),
        ("seconds", ctypes.c_double),
        ("elements", ctypes.c_int64),
        ("bytes_read", ctypes.c_int64),
        ("bytes_written", ctypes.c_int64),
        ("threads", ctypes.c_int),
        ("host_peak_bytes", ctypes.c_int64),
    ]

    def __init__(self):
        super().__init__(struct_size=ctypes.sizeof(MapStats))


OC_MAP_MAX_DIMS = 32
for _name, (_restype, _argtypes) in {
    "oc_map_create": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.POINTER(MapArray), ctypes.c_int,
                                     ctypes.POINTER(MapScalar), ctypes.c_int, ctypes.POINTER(MapOptions), _ctx_pp]),
    "oc_map_result_dtype": (ctypes.c_int, [_vp]),
    "oc_map_result_shape": (ctypes.c_int, [_vp, c_int64_p]),
    "oc_map_result_fortran_order": (ctypes.c_int, [_vp]),
    "oc_map_run": (ctypes.c_int, [_vp, _vp, ctypes.c_char_p, _vp, ctypes.POINTER(MapStats)]),
    "oc_map_explain": (ctypes.c_int, [_vp, _vp, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]),
    "oc_map_dtype_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_map_reduce_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_map_free": (None, [_vp]),
}.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes


# ---------------------------------------------------------------- matmul (outcore.h, "matmul")
for _name, (_restype, _argtypes) in {
    "oc_matmul_dtype_name": (ctypes.c_char_p, [ctypes.c_int]),
    "oc_matmul_dtype_uses": (ctypes.c_uint, [ctypes.c_int]),
}.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes
# oc_matmul_dtype codes in order (DEFAULT = 0 first), from the library's table.
MATMUL_DTYPES = names(lib.oc_matmul_dtype_name)
OC_MATMUL_DTYPE_RESULT, OC_MATMUL_DTYPE_NPY = 1, 2  # oc_matmul_dtype_uses's bits


def matmul_dtypes(uses):
    """The names of the matmul dtypes whose oc_matmul_dtype_uses has every bit of uses."""
    return [name for code, name in enumerate(MATMUL_DTYPES) if lib.oc_matmul_dtype_uses(code) & uses == uses]


class MatmulArray(_Defaults):
    _c_name = "oc_matmul_array"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("path", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("ld", ctypes.c_int64),
        ("gpu", ctypes.c_int),
    ]


class MatmulOptions(_Defaults):
    _c_name = "oc_matmul_options"
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("transpose_a", ctypes.c_int),
        ("transpose_b", ctypes.c_int),
        ("gram", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("tf32", ctypes.c_int),
        ("backend", ctypes.c_int),
        ("threads", ctypes.c_int),
        ("device", ctypes.c_int),
        ("devices", ctypes.c_char_p),
        ("gpu_mem_bytes", ctypes.c_int64),
        ("gpu_mem_fraction", ctypes.c_double),
        ("host_mem_bytes", ctypes.c_int64),
        ("tile", ctypes.c_int64),
        ("progress", _progress_c),
        ("progress_user", ctypes.c_void_p),
        ("resume", ctypes.c_int),
    ]


class MatmulStats(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("backend", ctypes.c_int),
        ("backend_desc", ctypes.c_char * 96),
        ("dtype", ctypes.c_int),
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("seconds", ctypes.c_double),
        ("flops", ctypes.c_double),
        ("tiles", ctypes.c_int64),
        ("bytes_read", ctypes.c_int64),
        ("bytes_written", ctypes.c_int64),
        ("bytes_h2d", ctypes.c_int64),
        ("bytes_d2h", ctypes.c_int64),
        ("host_budget_bytes", ctypes.c_int64),
        ("host_peak_bytes", ctypes.c_int64),
        ("dev_peak_bytes", ctypes.c_int64),
        ("threads", ctypes.c_int),
        ("backend_explain", ctypes.c_char * 640),
    ]

    def __init__(self):
        super().__init__(struct_size=ctypes.sizeof(MatmulStats))


_mm_array_p = ctypes.POINTER(MatmulArray)
for _name, (_restype, _argtypes) in {
    "oc_matmul_result": (ctypes.c_int, [_vp, _mm_array_p, _mm_array_p, ctypes.POINTER(MatmulOptions),
                                        ctypes.POINTER(ctypes.c_int), c_int64_p, c_int64_p]),
    "oc_matmul": (ctypes.c_int, [_vp, _mm_array_p, _mm_array_p, _mm_array_p, ctypes.POINTER(MatmulOptions),
                                 ctypes.POINTER(MatmulStats)]),
    "oc_matmul_plan": (ctypes.c_int, [_vp, _mm_array_p, _mm_array_p, _mm_array_p, ctypes.POINTER(MatmulOptions),
                                      ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]),
}.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes
