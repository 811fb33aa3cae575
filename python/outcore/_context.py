"""outcore.Context and the default context: one library context reused by many calls.

A library context keeps what a job set up for the next one, chiefly the pinned host staging
of GPU jobs (pinning costs more than a small job) and, with the same process, the CUDA
start-up. Creating one per call paid both every time, so:

  - outcore.gram without context= uses the module's default context, created on first use
    and freed at interpreter exit (atexit);
  - outcore.Context(...) is one the caller owns, with resource settings (device, gpu_mem,
    host_mem, backend, threads) that become the defaults of its calls.

The library's rule is that a context is used by one thread at a time (oc_context_cancel and
oc_context_release_cached_memory excepted). Each Context has a lock held for a whole call:
calls on one explicit Context from several threads run one after another; a call that finds
the default context busy (another thread's call, or a progress callback calling gram) runs
on a context of its own for that call instead of waiting, so threads never serialise on it.
Code that runs for a call holding a Context (its progress callback, on any thread) and calls
into that Context again gets an InputError instead of waiting for ever (_calls.holding).

A forked child has only the thread that forked: a Context that another thread's call held at
the fork is closed in the child (its handle is left alone, since the job that used it has no
thread there), and the default one is made again at the child's first call.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import sys
import threading
import warnings
import weakref
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _calls, _lib, errors
from ._options import RESOURCES, flag, gram_options
from .errors import InputError, check

if TYPE_CHECKING:
    from ._types import Backend, Flag, GpuMem, Integer, Real, Size

lib = _lib.lib

_created = 0  # library contexts this module has created (the tests watch the default's reuse)
_created_lock = threading.Lock()
_contexts: weakref.WeakSet = weakref.WeakSet()  # every Context, for a forked child's check


# The warnings the library sent during the call a context runs, by the context's handle (the
# user pointer it passes): the job may run on a worker thread, not the caller's.
_pending: dict[int, list[str]] = {}
_pending_lock = threading.Lock()


@_lib.warning_fn
def _on_warning(user, message):
    # Kept, and raised as a RuntimeWarning once the call returns: raised here, inside the
    # library's call, a warning the filters make an error could not reach the caller.
    with _pending_lock:
        _pending.setdefault(user or 0, []).append(message.decode("utf-8", "replace"))


def _warn_pending(handle, raise_them: bool) -> None:
    """The library's warnings of the call just made on handle, as RuntimeWarnings at the
    caller's line (the first frame outside this package); dropped when the call raised."""
    if handle is None:
        return
    with _pending_lock:
        messages = _pending.pop(handle.value or 0, [])
    if not raise_them or not messages:
        return
    here, level, frame = os.path.dirname(os.path.abspath(__file__)), 1, sys._getframe(0)
    while frame is not None and (os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here
                                 or frame.f_code.co_filename == contextmanager.__code__.co_filename):
        frame, level = frame.f_back, level + 1
    for message in messages:
        warnings.warn(errors.python_spelling(message), RuntimeWarning, stacklevel=level)


def _new_handle():
    global _created
    handle = ctypes.c_void_p()
    check(lib.oc_context_create(ctypes.byref(handle)), None)
    lib.oc_context_set_warning_fn(handle, _on_warning, handle)
    with _created_lock:
        _created += 1
    return handle


class Context:
    """A library context for a series of outcore calls, with their resource settings.

        with outcore.Context(device=0, gpu_mem="8G", host_mem="2G") as ctx:
            C = ctx.gram(A)                       # or outcore.gram(A, context=ctx)
            J = ctx.gram(A, metric="jaccard")     # reuses the first call's set-up

    backend ("auto", "cpu", "cuda"), device (CUDA index), gpu_mem (bytes, "8G", "50%"),
    host_mem (bytes, "2G", "25%": the host memory budget of each call, docs/memory.md) and
    threads (CPU workers) are checked now and used by every call that does not pass its
    own. A Context is safe to share between threads; their calls on it run one at a time.
    close() (or leaving the with block) frees it and the staging it keeps; a closed Context
    refuses further calls.
    """

    def __init__(self, backend: Backend | None = None, device: Integer | None = None, gpu_mem: GpuMem | None = None,
                 host_mem: Size | None = None, threads: Integer | None = None) -> None:
        self.settings = dict(zip(RESOURCES, (backend, device, gpu_mem, host_mem, threads)))
        gram_options("counts", None, None, None, **self.settings)  # InputError now, not at the first call
        self._lock = threading.Lock()
        # Held while the handle is freed, and by the calls made beside a running job
        # (cached_memory_bytes, release_cached_memory), which _lock would make wait for it.
        self._free_lock = threading.Lock()
        self._busy_at_fork = False
        self._handle = _new_handle()
        _contexts.add(self)

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.settings.items() if v is not None)
        return f"outcore.Context({given}){' (closed)' if self.closed else ''}"

    @property
    def closed(self) -> bool:
        return self._handle is None

    def gram(self, A: Any, B: Any = None, *args: Any, **kwargs: Any) -> Any:
        """outcore.gram(A, B, ..., context=self), its arguments as gram takes them (metric,
        topk, ... by position too): the settings of this Context are the defaults."""
        from ._gram import gram
        return gram(A, B, *args, context=self, **kwargs)

    def options(self, **given: Any) -> dict[str, Any]:
        """The call's resource settings: what the call gives, else this Context's."""
        return {k: given[k] if given.get(k) is not None else self.settings[k] for k in RESOURCES}

    def _held_by_this_call(self, blocking):
        """Whether the call the current thread runs for (its progress callback, say) holds this
        Context: waiting for it would never end, so that is an InputError when blocking."""
        if not any(c is self for c in _calls.holding()):
            return False
        if blocking:
            raise InputError("a progress callback cannot start a job on, or close, the outcore.Context it reports "
                             "on: the Context is busy with the callback's own call until that returns (use another "
                             "Context, or call without context=)")
        return True

    @contextmanager
    def _use(self, blocking=True):
        """The library handle, held for one call (None when not blocking and busy)."""
        if self._held_by_this_call(blocking) or not self._lock.acquire(blocking):
            yield None
            return
        handle = self._handle
        try:
            if self._handle is None and self._busy_at_fork:
                raise InputError("this outcore.Context was running a call on another thread when the process "
                                 "forked, and that call has no thread in this child: create a new one here, or make "
                                 "the call without context= to use the default one")
            if self._handle is None:
                raise InputError("this outcore.Context is closed: create a new one, or make the call "
                                 "without context= to use the default one")
            with _calls.acting_for(_calls.holding() + (self,)):
                yield handle
        except BaseException:
            _warn_pending(handle, False)
            raise
        finally:
            self._lock.release()
        _warn_pending(handle, True)

    @property
    def cached_memory_bytes(self) -> int:
        """Bytes this context keeps idle for its next GPU job: pinned host staging, and the
        device scratch (cuBLASLt's workspace, int8's chunks of B; at most 96 MiB) of a matmul
        on GPU arrays."""
        with self._free_lock:
            handle = self._handle
            return lib.oc_context_cached_memory_bytes(handle) if handle is not None else 0

    def release_cached_memory(self) -> None:
        """Frees the pinned staging and device workspace this context keeps idle now (safe while
        a call runs on it: what that call holds is not touched)."""
        with self._free_lock:
            handle = self._handle
            if handle is not None:
                lib.oc_context_release_cached_memory(handle)

    def close(self, blocking: Flag = True, timeout: Real = -1) -> bool:
        """Frees the library context and its staging, after a call running on it has returned
        (waiting at most `timeout` seconds for it when given). Closing twice is a no-op.
        Returns whether it is closed (False only when not blocking, or past the timeout, and
        a call holds it)."""
        blocking = flag("blocking", blocking)
        if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, (int, float, np.integer, np.floating)) \
                or not (timeout >= 0 or timeout == -1):
            raise InputError(f"timeout must be a number of seconds (or -1: no limit); got {timeout!r}")
        timeout = -1 if timeout == -1 or timeout > threading.TIMEOUT_MAX else float(timeout)  # inf: no limit
        if self._held_by_this_call(blocking) or not self._lock.acquire(blocking, timeout if blocking else -1):
            return False
        try:
            with self._free_lock:
                handle, self._handle = self._handle, None
                if handle is not None:
                    lib.oc_context_free(handle)
        finally:
            self._lock.release()
        return True

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self):
        # A Context dropped without close(): no call can hold it any more.
        if getattr(self, "_handle", None) is not None:
            lib.oc_context_free(self._handle)
            self._handle = None


_default = None
_default_guard = threading.Lock()


def _after_fork_in_child():
    # Locks that a thread of the parent held stay held in the child, where no thread will
    # release them: a Context busy at the fork is closed here without freeing its handle
    # (its job's state is the vanished thread's), and the default made again when needed.
    global _default, _default_guard, _created_lock, _pending_lock
    _default_guard, _created_lock, _pending_lock = threading.Lock(), threading.Lock(), threading.Lock()
    for ctx in list(_contexts):
        # _free_lock is taken alone too (cached_memory_bytes, release_cached_memory): no
        # thread of the child holds it, whichever held it in the parent.
        ctx._free_lock = threading.Lock()
        if ctx._lock.locked():
            ctx._handle, ctx._busy_at_fork = None, True
            ctx._lock = threading.Lock()
    if _default is not None and _default._busy_at_fork:
        _default = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def default_context():
    """The module's default Context, created on first use."""
    global _default
    with _default_guard:
        if _default is None:
            _default = Context()
        return _default


def call_resources(context, **given):
    """A call's resource settings (the keys of RESOURCES it takes): what it gives, else the
    settings of context (an outcore.Context; None: only what it gives)."""
    if context is None:
        return given
    if not isinstance(context, Context):
        raise InputError(f"context: expected an outcore.Context, not {type(context).__name__}")
    return {k: v for k, v in context.options(**given).items() if k in given}


@contextmanager
def lease(context):
    """The library handle for one call: context's, waiting while another thread uses it; or,
    with context None, the default one's, else a fresh one's when the default is busy."""
    if context is not None:
        if not isinstance(context, Context):
            raise InputError(f"context: expected an outcore.Context, not {type(context).__name__}")
        with context._use() as handle:
            yield handle
        return
    with default_context()._use(blocking=False) as handle:
        if handle is not None:
            yield handle
            return
    with Context() as own, own._use() as handle:
        yield handle


def release_cached_memory() -> None:
    """Frees the pinned host staging and device workspace that every context of the process
    keeps idle (the default one and each outcore.Context); the next GPU job takes its own."""
    lib.oc_release_cached_memory()


@atexit.register
def _close_default():
    # A daemon thread may still be in a call on it at exit. Its job's threads would go on
    # calling into the interpreter (the progress callback) while it shuts down, so the job is
    # cancelled (the library's cancel may be called from any thread) and the call given a
    # few seconds to return; one that does not is left to the process.
    if _default is None or _default.close(blocking=False):
        return
    handle = _default._handle
    if handle is not None:
        errors.exiting = True
        lib.oc_context_cancel(handle)
    _default.close(timeout=5.0)
