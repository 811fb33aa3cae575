"""The exceptions of outcore: one class per kind of failure the caller can act on.

Every exception carries the library's one-line message (which names the file or matrix and
the problem), the status code (`status`, an int of outcore.h's oc_status) and its name
(`status_name`), and the library's file:line trace (`trace`) for bug reports. One raised by
the binding's own checks carries its class's status, the library's for that kind of failure
(InputError: OC_ERR_INVALID_ARGUMENT, "invalid argument"), and no trace.
"""
import re

from . import _lib


class Error(Exception):
    """Base class of every error outcore raises."""

    # The status an error of this class carries when none is given (raised by the binding's
    # own checks): the library's code for the same failure, so a caller reading `status`
    # sees one code whichever side found it.
    default_status = None

    def __init__(self, message, status=None, trace=""):
        super().__init__(message)
        self.message = message
        self.status = status if status is not None else self.default_status
        self.status_name = _lib.text(_lib.lib.oc_status_string(self.status)) if self.status is not None else ""
        self.trace = trace


class InputError(Error, ValueError):
    """A bad argument or input: wrong dtype or shape, values other than 0/1, unreadable file."""

    default_status = _lib.OC_ERR_INVALID_ARGUMENT


class OutOfMemoryError(Error, MemoryError):
    """Host memory, or the device memory budget, does not hold the job."""

    default_status = _lib.OC_ERR_NO_MEMORY


class DeviceError(Error):
    """A CUDA failure, or a backend or feature this build or machine does not have."""

    default_status = _lib.OC_ERR_DEVICE


class UnsupportedError(DeviceError):
    """A backend, device or feature not available in this build (OC_ERR_UNSUPPORTED)."""

    default_status = _lib.OC_ERR_UNSUPPORTED


class CancelledError(Error):
    """The job was cancelled (raised only when the cancel did not come from Ctrl-C, which
    raises KeyboardInterrupt)."""

    default_status = _lib.OC_ERR_CANCELLED


class IOFailure(Error, OSError):
    """A read or write failed while the job ran (OC_ERR_IO)."""

    default_status = _lib.OC_ERR_IO


class InternalError(Error):
    """A bug in outcore: please report it with the message and `trace`."""

    default_status = _lib.OC_ERR_INTERNAL


_BY_STATUS = {
    _lib.OC_ERR_INVALID_ARGUMENT: InputError,
    _lib.OC_ERR_INPUT: InputError,
    _lib.OC_ERR_IO: IOFailure,
    _lib.OC_ERR_NO_MEMORY: OutOfMemoryError,
    _lib.OC_ERR_DEVICE_NO_MEMORY: OutOfMemoryError,
    _lib.OC_ERR_DEVICE: DeviceError,
    _lib.OC_ERR_UNSUPPORTED: UnsupportedError,
    _lib.OC_ERR_CANCELLED: CancelledError,
    _lib.OC_ERR_INTERNAL: InternalError,
}


# The library's messages name the CLI's options where they say what to change ("raise
# --host-mem"); the binding's callers pass keyword arguments, so those options are named by
# their keyword. Every option is the keyword of the same setting with "_" written "-", so the
# table is read from the public functions' signatures (built on first use: they import this
# module). A message that already gives the Python spelling ("in Python binarize=True",
# "(Python: bits=M)") is left as it is.
_PUBLIC_FUNCTIONS = ("gram", "explain", "matmul", "map", "stream", "Context", "devices", "inspect", "cuda_warm_up")
_keywords = None


def keywords():
    """{CLI option without its dashes: keyword}, for every keyword of outcore's public functions."""
    global _keywords
    if _keywords is None:
        import inspect

        import outcore
        table = {}
        for name in _PUBLIC_FUNCTIONS:
            for p in inspect.signature(getattr(outcore, name)).parameters.values():
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    table[p.name.replace("_", "-")] = p.name
        _keywords = table
    return _keywords


_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)(?![\w.-])")
# A field named beside its flag ("transpose_b (--transpose-b)", as the C API's messages give
# both): the keyword alone, once.
_FIELD_AND_OPTION = re.compile(r"\b([a-z][a-z0-9_]*) \(--([a-z][a-z0-9-]*)\)")


# Advice in the CLI's own syntax, as the binding's callers give the same thing.
_PHRASES = {
    "give it as NAME=FILE.npy or --set NAME=VALUE": "pass it as a keyword argument (NAME=array, path or number)",
    "use --backend cpu (or auto)": 'use backend="cpu" (or "auto")',
}


def python_spelling(message):
    """message with the CLI options it names spelled as the binding's keywords (not in a
    map expression echoed by a syntax error)."""
    for cli, python in _PHRASES.items():
        message = message.replace(cli, python)
    if "Python" in message or "syntax error" in message:
        return message
    message = _FIELD_AND_OPTION.sub(
        lambda m: m.group(1) if keywords().get(m.group(2)) == m.group(1) else m.group(0), message)
    return _OPTION.sub(lambda m: keywords().get(m.group(1), m.group(0)), message)


def from_status(status, ctx):
    """The exception for a failed call on context ctx (ctx may be None before one exists)."""
    # Escaped as the CLI prints them: a name with control bytes cannot drive a terminal.
    message = python_spelling(_lib.shown(_lib.lib.oc_context_last_error(ctx))) if ctx else ""
    raw_trace = (_lib.lib.oc_context_error_trace(ctx) or b"") if ctx else b""
    trace = "\n".join(_lib.shown(line) for line in raw_trace.split(b"\n"))
    if not message:
        message = _lib.text(_lib.lib.oc_status_string(status))
    return _BY_STATUS.get(status, Error)(message, status, trace)


# Set at interpreter exit by the default context's atexit handler (_context.py) before it
# cancels a call still running on it in a daemon thread: that call then ends with SystemExit,
# which a thread ends on silently, instead of an error whose traceback the exit would cut.
exiting = False


def check(status, ctx):
    """Raises the matching exception unless status is OC_OK."""
    if status != _lib.OC_OK:
        if exiting and status == _lib.OC_ERR_CANCELLED:
            raise SystemExit("outcore: the call was cancelled: the interpreter is exiting")
        raise from_status(status, ctx)
