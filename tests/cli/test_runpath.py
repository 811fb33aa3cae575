"""The CLI's and the library's RUNPATH hold no empty entry: the dynamic loader reads one as
the current directory, so a build-tree outcore dlopen()ed a libopenblas.so.0 (or a CUDA
library) planted in the folder it ran from. CMake's editor of installed RPATHs padded the
build tree's with ':'; the build now carries the installed RUNPATH (CMakeLists.txt)."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import outcore_bin

READELF = shutil.which("readelf")


def runpath(path):
    out = subprocess.run([READELF, "-d", str(path)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out)
    return m.group(1) if m else None


@pytest.mark.skipif(READELF is None, reason="readelf (binutils) is not installed")
def test_no_empty_runpath_entry():
    binaries = [Path(outcore_bin())]
    lib = os.environ.get("OUTCORE_LIBRARY")
    if lib:
        binaries.append(Path(lib))
    for b in binaries:
        rp = runpath(b)
        if rp is None:
            continue
        assert "" not in rp.split(":"), f"{b}: RUNPATH [{rp}] has an empty entry (the current directory)"
