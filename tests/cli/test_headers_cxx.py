"""The C headers that CUDA files include parse as C++ too.

nvcc compiles .cu files as C++, and those of src/, bench/ and tests/ include C headers of the
library (inside extern "C"). A C11 construct in such a header (stdatomic.h's atomic_int, a
designated initializer of an array, `restrict`) breaks the CUDA build, which a machine without
nvcc never compiles: every header a .cu or .cuh file includes (and what those include) is
compiled here by the C++ compiler with -fsyntax-only, as nvcc's host pass would read it.
Headers under a cuda/ folder need the CUDA toolkit's headers and are checked where they are
found; elsewhere they are reported skipped.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2])).resolve()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+\.h)"', re.M)
ROOTS = [SOURCE_DIR / d for d in ("src", "bench", "tests")]
SEARCH = [SOURCE_DIR / "src", SOURCE_DIR / "include"]


def _cuda_include():
    """The folder of the CUDA toolkit's headers ("" when the compiler finds them itself), or
    None."""
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base and (Path(base) / "include" / "cuda_runtime.h").exists():
            return str(Path(base) / "include")
    return "" if Path("/usr/local/include/cuda_runtime.h").exists() or Path("/usr/include/cuda_runtime.h").exists() \
        else None


def _resolve(name, where):
    for d in (where, *SEARCH):
        p = (d / name).resolve()
        if p.is_file():
            return p
    return None


def _headers():
    """Every .h that a .cu or .cuh file reaches through quoted includes of .h files."""
    todo = []
    for root in ROOTS:
        for f in sorted(root.rglob("*")):
            if f.suffix in (".cu", ".cuh") and f.is_file():
                todo += [p for n in INCLUDE.findall(f.read_text()) if (p := _resolve(n, f.parent))]
    seen = set()
    while todo:
        h = todo.pop()
        if h in seen:
            continue
        seen.add(h)
        todo += [p for n in INCLUDE.findall(h.read_text()) if (p := _resolve(n, h.parent))]
    return sorted(seen)


HEADERS = _headers()
CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++") or shutil.which("clang++")
CUDA_INCLUDE = _cuda_include()


def test_the_scan_finds_the_headers():
    """The headers CUDA files include are found (the scan itself could break silently)."""
    names = {h.relative_to(SOURCE_DIR).as_posix() for h in HEADERS}
    assert {"src/core/threads.h", "src/matmul/matmul_job.h", "include/outcore.h"} <= names, sorted(names)


CUDA_SYSTEM = re.compile(r"^\s*#\s*include\s+<(cuda|cublas|nvrtc|curand|nccl)", re.M)


@pytest.mark.parametrize("header", HEADERS, ids=[h.relative_to(SOURCE_DIR).as_posix() for h in HEADERS])
def test_header_parses_as_cxx(header, tmp_path):
    """A library header is read inside extern "C" (as the .cu files include it), after the
    CUDA runtime's header where it needs CUDA; a benchmark's or test's own header as C++."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    rel = header.relative_to(SOURCE_DIR)
    needs_cuda = "cuda" in rel.parts or CUDA_SYSTEM.search(header.read_text()) is not None
    if needs_cuda and CUDA_INCLUDE is None:
        pytest.skip("includes CUDA's headers: needs the CUDA toolkit")
    library = rel.parts[0] in ("src", "include")
    text = "#include <cuda_runtime.h>\n" if needs_cuda else ""
    text += f'extern "C" {{\n#include "{header}"\n}}\n' if library else f'#include "{header}"\n'
    unit = tmp_path / "unit.cpp"
    unit.write_text(text)
    flags = ["-std=c++17", "-fsyntax-only", "-D_GNU_SOURCE"] + (["-DOC_HAVE_CUDA=1"] if needs_cuda else [])
    dirs = [*SEARCH, header.parent] + ([CUDA_INCLUDE] if needs_cuda and CUDA_INCLUDE else [])
    proc = subprocess.run([CXX, *flags, *[f"-I{d}" for d in dirs], str(unit)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
