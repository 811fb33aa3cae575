"""docs/environment.md names every OUTCORE_* variable that the code reads or sets, and no other.

A variable counts as used where its whole name is a quoted string (getenv("X"), setenv("X",
...), os.environ.get("X"), the fault plan's table of names) or is assigned in a shell command
(X=value in a script or the Makefile) in src/, tools/, python/, tests/, bench/ or the
Makefile (this file apart). CMake cache options (-DOUTCORE_CUDA=..., OUTCORE_SANITIZE) are not environment
variables and are left out.
"""
import re
from pathlib import Path

from conftest import SOURCE_DIR

CODE_DIRS = ("src", "tools", "python", "tests", "bench")
CODE_SUFFIXES = {".c", ".h", ".cu", ".cuh", ".py", ".sh"}
QUOTED = re.compile(r"""["'](OUTCORE_[A-Z0-9_]*[A-Z0-9])["']""")
ASSIGNED = re.compile(r"(?<![-\w])(OUTCORE_[A-Z0-9_]*[A-Z0-9])=")
DOCUMENTED = re.compile(r"`(OUTCORE_[A-Z0-9_]*[A-Z0-9])")
CMAKE_OPTIONS = {"OUTCORE_CUDA", "OUTCORE_SANITIZE", "OUTCORE_MPI"}


def code_files():
    for top in CODE_DIRS:
        for path in sorted((SOURCE_DIR / top).rglob("*")):
            if path.is_file() and path.suffix in CODE_SUFFIXES and path.resolve() != Path(__file__).resolve():
                yield path
    yield SOURCE_DIR / "Makefile"


def used_variables():
    used = {}
    for path in code_files():
        text = path.read_text(errors="replace")
        for name in QUOTED.findall(text) + ASSIGNED.findall(text):
            used.setdefault(name, str(path.relative_to(SOURCE_DIR)))
    return used


def documented_variables():
    return set(DOCUMENTED.findall((SOURCE_DIR / "docs" / "environment.md").read_text()))


def test_scan_finds_the_known_readers():
    # The scan itself must see the variables it is meant to see, or the next test proves nothing.
    used = used_variables()
    for name in ("OUTCORE_CPU_ISA", "OUTCORE_FAULT_RENAME", "OUTCORE_BIN", "OUTCORE_TEST_QUICK"):
        assert name in used, f"the scan missed {name}"
    assert not CMAKE_OPTIONS & set(used), "a CMake option was taken for an environment variable"


def test_every_variable_is_documented():
    missing = {name: where for name, where in used_variables().items() if name not in documented_variables()}
    assert not missing, f"docs/environment.md does not describe: {missing}"


def test_every_documented_variable_is_used():
    stale = documented_variables() - set(used_variables()) - CMAKE_OPTIONS
    assert not stale, f"docs/environment.md describes variables nothing reads: {sorted(stale)}"
