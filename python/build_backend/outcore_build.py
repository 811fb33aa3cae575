"""The build backend of python/pyproject.toml: scikit-build-core, whose CMake build prints
its progress lines on the terminal as well.

pip shows a backend's output only with -v: without it, `pip install ./python` would say
nothing for the minutes the library takes to compile. Each progress line therefore also goes
to the controlling terminal, one line rewritten in place; where there is none (CI, a pipe),
nothing changes. The build uses every CPU the process may run on, unless
CMAKE_BUILD_PARALLEL_LEVEL says otherwise. Every other hook is scikit-build-core's own.
"""
import contextlib
import os
import re
import sys
import threading

from scikit_build_core import build as _backend
from scikit_build_core.build import *  # noqa: F401,F403 (the hooks this module does not wrap)

# "[ 42%] Building C object ..." (make), "[12/150] Building C object ..." (ninja, which
# scikit-build-core installs and uses where the system has none).
PROGRESS = re.compile(rb"^\[(\s*\d+%|\d+/\d+)\] ")


def _open_terminal():
    try:
        return open("/dev/tty", "wb", buffering=0)
    except OSError:
        return None


def _copy(source, target, terminal, width=100):
    """Passes every line on to target, and the progress lines to the terminal."""
    shown = False
    with os.fdopen(source, "rb") as lines:
        for line in lines:
            os.write(target, line)
            if PROGRESS.match(line):
                text = line.rstrip()[:width].decode(errors="replace")
                terminal.write(f"\r\033[Koutcore: {text}".encode())
                shown = True
    if shown:
        terminal.write(b"\r\033[K")


@contextlib.contextmanager
def _progress_on_terminal():
    terminal = _open_terminal()
    if terminal is None:
        yield
        return
    read_end, write_end = os.pipe()
    saved = os.dup(1)
    copier = threading.Thread(target=_copy, args=(read_end, saved, terminal), daemon=True)
    copier.start()
    os.dup2(write_end, 1)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)      # closes the pipe's last write end: the copier sees its end
        copier.join()
        os.close(saved)
        terminal.close()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    # scikit-build-core runs `cmake --build` without -j: one compile at a time unless asked.
    os.environ.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(len(os.sched_getaffinity(0))))
    with _progress_on_terminal():
        return _backend.build_wheel(wheel_directory, config_settings, metadata_directory)
