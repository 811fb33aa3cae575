"""Every shell and Python example of README.md and docs/*.md runs as written.

Blocks run in order, one temporary directory per document (so a later block uses the files
an earlier one made), with the repository's tests/ reachable as ./tests. A ```sh block runs
line by line in bash with the built `outcore` first on PATH; each line must exit 0. A
```console block is a transcript: each `$ ` line runs and must exit 0 (or N where it ends in
`# exits N`), and every line printed under it in the document must appear in what it prints. ```python blocks run in one interpreter each. Blocks
tagged `setup` (building, installing, fuzzing: what `make test` and .ci/run do themselves)
and other languages are not run; blocks tagged `gpu` (the GPU examples of docs/stream.md) run
only where a GPU is usable, with the built examples (build/examples) on PATH. A transcript runs with CUDA_VISIBLE_DEVICES empty: it shows what a machine
without a GPU prints. Sizes after --rows, --cols and --bits are divided by OUTCORE_EXAMPLE_SCALE (100
unless set; 1 runs the examples as written), so a 100000-row example runs with 1000 rows.
Blocks that call mpirun are skipped (reported) where outcore was built without MPI or no
mpirun is installed.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SOURCE_DIR, outcore_bin

FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```\s*$", re.S | re.M)
SIZE_OPTION = re.compile(r"(--(?:rows|cols|bits)\s+)(\d+)")
NEEDS_NVCC = re.compile(r"\bnvcc\b|\.ptx\b|\.cubin\b")
NEEDS_MPI = re.compile(r"\b(?:mpirun|mpiexec)\b")
NEEDS_GPU_MODULE = re.compile(r"^\s*(?:from|import)\s+(numba|cupy|torch)\b", re.M)


def gpu_usable():
    probe = "import outcore, sys; sys.exit(0 if outcore.cuda_device_count() > 0 else 1)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def gpu_module_missing(text):
    """The GPU framework a Python example imports, when it or a GPU is missing here; else None."""
    match = NEEDS_GPU_MODULE.search(text)
    if not match:
        return None
    probe = f"import {match.group(1)}, outcore, sys\nif outcore.cuda_device_count() == 0: sys.exit(1)"
    if match.group(1) == "numba":
        # numba must also compile a kernel as the example would, lazily at its first call: a
        # numba release that does not fit the installed numpy fails inside numba's compiler,
        # not in what the docs show.
        probe += "\nfrom numba import cuda\n@cuda.jit\ndef k(out):\n    out[0] = 0\nk[1, 1](cuda.device_array(1))"
    usable = subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0
    if usable:
        return None
    return "numba with a GPU, compiling kernels with this numpy" if match.group(1) == "numba" else \
        f"{match.group(1)} with a GPU"


def mpi_usable():
    """mpirun is installed and outcore was built with MPI (docs/mpi.md); else why not."""
    if not shutil.which("mpirun"):
        return "mpirun"
    version = subprocess.run([outcore_bin(), "--version"], capture_output=True, text=True).stdout
    return None if "MPI:" in version else "an outcore built with MPI"


def mpi_environment(env):
    """Open MPI refuses to run as root (CI containers) and needs ptrace for its single-copy
    shared memory, which containers forbid: both allowed off here. Other MPIs ignore these."""
    return dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_btl_vader_single_copy_mechanism="none")


def blocks(doc):
    """(language, info, text) of every block of doc that runs, in order."""
    found = [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(doc.read_text())]
    return [b for b in found if b[0] in ("sh", "console", "python") and "setup" not in b[1].split()]


DOCS = [d for d in [SOURCE_DIR / "README.md"] + sorted((SOURCE_DIR / "docs").glob("*.md")) if blocks(d)]


def scaled(command, scale):
    return SIZE_OPTION.sub(lambda m: m.group(1) + str(max(int(m.group(2)) // scale, 8)), command)


def environment():
    env = dict(os.environ)
    build = Path(outcore_bin()).resolve().parent
    env["PATH"] = os.pathsep.join([str(build), str(build / "examples"), env.get("PATH", "")])
    return env


def run_shell(line, cwd, env):
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


def words(text):
    return " ".join(text.split())


def check_console(text, cwd, env, scale):
    # Transcripts show what a machine without a GPU prints (figures from the code file):
    # with one, the driver answers instead and says so.
    env = dict(env, CUDA_VISIBLE_DEVICES="")
    command, expected = None, []

    def finish():
        if command is None:
            return
        status = re.search(r"#\s*exits (\d+)", command)
        proc = run_shell(scaled(command, scale), cwd, env)
        want = int(status.group(1)) if status else 0
        assert proc.returncode == want, f"$ {command}\n{proc.stdout}{proc.stderr}"
        printed = words(proc.stdout + proc.stderr)
        for line in expected:
            assert words(line) in printed, f"$ {command}: the document shows\n  {line}\nbut it printed\n{proc.stdout}"

    for line in text.splitlines():
        if line.startswith("$ "):
            finish()
            command, expected = line[2:], []
        elif line.strip():
            expected.append(line)
    finish()


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_examples_run(doc, tmp_path):
    scale = int(os.environ.get("OUTCORE_EXAMPLE_SCALE", "100"))
    env = environment()
    env["OUTCORE_COST_CACHE"] = str(tmp_path / "rates.txt")  # `devices --bandwidth` stores rates: not in $HOME
    (tmp_path / "tests").symlink_to(SOURCE_DIR / "tests")
    have_nvcc = shutil.which("nvcc") is not None
    ran, skipped = 0, []
    for language, info, text in blocks(doc):
        if NEEDS_NVCC.search(text) and not have_nvcc:
            skipped.append("nvcc: " + text.splitlines()[0])
            continue
        if "gpu" in info.split() and not gpu_usable():
            skipped.append("a GPU: " + text.splitlines()[0])
            continue
        missing = gpu_module_missing(text) if language == "python" else None
        if not missing and NEEDS_MPI.search(text):
            missing = mpi_usable()
        if missing:
            skipped.append(f"{missing}: " + text.splitlines()[0])
            continue
        if language == "sh":
            block_env = mpi_environment(env) if NEEDS_MPI.search(text) else env
            for line in text.splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    proc = run_shell(scaled(line, scale), tmp_path, block_env)
                    assert proc.returncode == 0, f"{doc.name}: {line}\n{proc.stdout}{proc.stderr}"
        elif language == "console":
            check_console(text, tmp_path, env, scale)
        else:
            proc = subprocess.run([sys.executable, "-c", text], cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=1200)
            assert proc.returncode == 0, f"{doc.name}: python example failed\n{text}\n{proc.stderr}"
        ran += 1
    if ran == 0:
        pytest.skip(f"{doc.name}: no example runs here (each needs: {skipped})")
