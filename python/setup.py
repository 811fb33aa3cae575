"""Packs an already built liboutcore into the package: the binding is pure Python, but the
library is what it binds, so a wheel without it would not import.

The library comes from $OUTCORE_LIBRARY, or from the build tree (../build/liboutcore.so
beside this directory). Build it first:  cmake -S . -B build && cmake --build build
"""
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
LIBRARY = "liboutcore.so"


def built_library():
    env = os.environ.get("OUTCORE_LIBRARY")
    candidate = Path(env) if env else HERE.parent / "build" / LIBRARY
    if not candidate.exists():
        where = f"OUTCORE_LIBRARY={env}" if env else str(candidate)
        raise SystemExit(f"outcore: no built library at {where}. Build it first "
                         "(cmake -S . -B build && cmake --build build from the repository root) "
                         "or set OUTCORE_LIBRARY to a built liboutcore.so.")
    return candidate.resolve()  # the file itself, not the versioned symlinks


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "outcore" / LIBRARY
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built_library(), target)
        print(f"outcore: packed {built_library()} as {target}")


class BinaryDistribution(Distribution):
    """The wheel carries a native library, so it is tagged for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
