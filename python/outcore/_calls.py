"""Library calls made from the main thread, run on one worker thread so that Ctrl-C can cancel
them.

Python delivers signals to the main thread only, and only between bytecodes: a long library
call made there would hold off Ctrl-C until it returned. So the main thread hands the call to
a worker and waits for it in short steps (`wait`); Ctrl-C then cancels the library's job, and
KeyboardInterrupt is raised once the call has returned (the caller's buffers must outlive the
library's use of them). Calls from other threads run where they are: no signal reaches them.

The worker is one daemon thread for the process, started by the first call and reused: a
thread started per call was a large part of a small product's call (bench/RESULTS.md,
"Python calls on one worker thread"). A forked child starts its own.

A call its caller knows to be short (`short=True`: a product of a few million multiply-adds
on arrays in memory) runs where it is, on the main thread too: handing it to the worker and
back cost more than its work, and a Ctrl-C pressed during it is raised when it returns, as
numpy's own calls do.

A call holds its Context's lock (_context.py) for its whole length, and the code that runs for
it, the worker here and the progress callbacks the library calls, may run on other threads.
`holding()` names the Contexts the call that the current thread runs for holds, so that such
code calling into one of them again is refused instead of waiting for ever on a lock that
only its own call can release.
"""
from __future__ import annotations

import _thread
import os
import queue
import threading
from contextlib import contextmanager

from . import _lib
from .errors import InputError

_WAIT_STEP_S = 0.05  # how quickly Ctrl-C is noticed and cancel is repeated

_lock = threading.Lock()
_calls: queue.SimpleQueue | None = None
_acting = threading.local()  # .held: the Contexts whose locks the call this thread runs for holds


def holding():
    """The Contexts held by the call the current thread runs (or runs for: the worker, a
    progress callback)."""
    return getattr(_acting, "held", ())


@contextmanager
def acting_for(held):
    """The current thread runs for a call that holds the Contexts held, until the block ends."""
    before = holding()
    _acting.held = held
    try:
        yield
    finally:
        _acting.held = before


def for_this_call(fn):
    """fn, made to run (on whatever thread) for the call now running on this one: a Context
    this call holds stays refused to it."""
    held = holding()

    def run(*args):
        with acting_for(held):
            return fn(*args)
    return run


def _serve(calls):
    while True:
        fn, box, done = calls.get()
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed to the caller, SystemExit at exit included
            box["error"] = exc
        finally:
            box["done"] = True  # before the release: a waiter woken by a signal reads this
            done.release()
        del fn, box, done  # the call's buffers are the caller's again before the next wait


def _forget_worker():
    # A forked child has no worker thread (its first call starts one), and the lock may have
    # been held by a thread the child does not have.
    global _calls, _lock
    _calls, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_worker)


def _submit(fn, box, done):
    global _calls
    with _lock:
        if _calls is None:
            _calls = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(_calls,), name="outcore-calls", daemon=True).start()
        _calls.put((fn, box, done))


def wait(ctx, cancel, box, done):
    """Waits for the worker in short steps; turns Ctrl-C, or any exception a signal handler
    raises meanwhile (SystemExit from a SIGTERM handler, TimeoutError from a SIGALRM one),
    into a cancel of the job (the library context ctx, and the Python-side flag cancel, an
    Event or None), and waits on until the library has stopped.

    Returns whether Ctrl-C was pressed; another such exception is raised once the job has
    stopped. done is a lock taken before the call was handed over, which the worker releases
    when the call has returned, after setting box["done"]: the loop ends on that key, since an
    exception may be raised just after an acquire that succeeded. It waits on the lock, not on
    a thread's join: a KeyboardInterrupt inside join can mark a running thread as stopped
    (CPython's bpo-45274 handling releases the lock the live thread holds), and the context
    and the caller's buffers must outlive the library's use of them: leaving early on another
    exception let the context be freed under the running job.
    """
    raised = None
    while "done" not in box:
        try:
            if raised is not None:
                _lib.lib.oc_context_cancel(ctx)
            done.acquire(timeout=_WAIT_STEP_S)
        except BaseException as exc:  # noqa: B036 - every exception must wait for the library
            # A second Ctrl-C lands here too: the call must still finish before its buffers
            # can be released, and cancelling is what makes that prompt.
            if raised is None:
                raised = exc
            if cancel is not None:
                cancel.set()
            _lib.lib.oc_context_cancel(ctx)
    if raised is not None and not isinstance(raised, KeyboardInterrupt):
        raise raised
    return raised is not None


def run_interruptible(job, fn):
    """fn() on the worker while this thread, when it is the main one, waits for it (`wait`);
    job has the library context (ctx) and a cancel Event. Returns fn's result or raises its
    exception; KeyboardInterrupt after Ctrl-C."""
    return _run(job.ctx, job.cancel, fn, False)


def run_on_context(ctx, fn, short=False):
    """run_interruptible for a call whose job is the context alone; short: a call known to be
    short runs where it is (the module's docstring)."""
    return _run(ctx, None, fn, short)


def _run(ctx, cancel, fn, short):
    if short or threading.current_thread() is not threading.main_thread():
        return fn()  # short, or no signal to listen for: signals reach the main thread only
    box, done = {}, _thread.allocate_lock()
    done.acquire()
    _submit(for_this_call(fn), box, done)
    if wait(ctx, cancel, box, done):
        raise KeyboardInterrupt
    if "error" in box:
        raise box.pop("error")
    return box["result"]


def checked_progress(progress):
    """progress as a call takes it: None, or a callable progress(done, total)."""
    if progress is not None and not callable(progress):
        raise InputError(f"progress must be a callable progress(done, total); got {progress!r}")
    return progress


def checked_stats(stats):
    """stats as a call takes it: None, or a dict that the call fills once its job has run."""
    if stats is not None and not isinstance(stats, dict):
        raise InputError(f"stats must be a dict to fill; got {type(stats).__name__}")
    return stats


class Progress:
    """Calls the caller's progress(done, total) from the library (gram's, map's and stream's); an
    exception it raises (KeyboardInterrupt too) cancels the job on the library context ctx and
    is kept in `error`, for the call to raise once the library has stopped: one raised in a
    ctypes callback would be printed and lost. A report the same as the one before is not
    passed on: the library's workers and its end may both report the finished job, which the
    caller sees once."""

    def __init__(self, fn, ctx):
        self.fn, self.ctx, self.error, self.last = fn, ctx, None, None
        self.callback = _lib.progress_fn(self._report)  # referenced here for the job's lifetime

    def _report(self, user, done, total):
        if self.error is not None or (done, total) == self.last:
            return
        self.last = (done, total)
        try:
            self.fn(done, total)
        except BaseException as exc:  # an exception must not cross the C frames
            self.error = exc
            _lib.lib.oc_context_cancel(self.ctx)

