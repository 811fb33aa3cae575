"""The layout rules of the sources, checked on the files themselves.

1. A quoted #include of a file under src/ is written as its path from src/ ("core/error.h",
   "inspect/kernel_list.h"), in src/, tests/ and bench/ alike: one spelling per header, so a
   grep finds every user, and the dependency rules below can be read off the include lines.
   src/ is on the include path of every target that reaches internals (outcore_obj,
   outcore_static and so the tests, benchmarks and fuzz targets); tools/ and python/ see
   include/outcore.h only.
2. design.md's dependency rules: core, mem, exec, io and inspect never include cpu/ or
   cuda/; the backends never include each other.

Run as a script with --fix to rewrite includes into the first form (after a merge brought
in files written otherwise): python3 tests/cli/test_source_layout.py --fix
"""
import os
import re
import sys
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2])).resolve()
SRC = SOURCE_DIR / "src"
INCLUDE = re.compile(r'^(\s*#\s*include\s+")([^"]+)(")', re.M)
SUFFIXES = {".c", ".h", ".cu", ".cuh"}
BELOW_BACKENDS = ("core", "mem", "exec", "io", "inspect")
BACKENDS = ("cpu", "cuda")


def sources():
    for top in ("src", "tests", "bench"):
        for path in sorted((SOURCE_DIR / top).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                yield path


def src_path(path, written):
    """The path from src/ of the file that `#include "written"` in path names, as the compiler
    looks for it (the including file's folder first, then src/); None when it is not in src/."""
    for candidate in (path.parent / written, SRC / written):
        if candidate.is_file():
            resolved = candidate.resolve()
            return resolved.relative_to(SRC).as_posix() if SRC in resolved.parents else None
    return None


def misspelled(path):
    """(line, written, wanted) for each include of a src/ file written another way."""
    text = path.read_text()
    found = []
    for m in INCLUDE.finditer(text):
        wanted = src_path(path, m.group(2))
        if wanted and wanted != m.group(2):
            found.append((text.count("\n", 0, m.start()) + 1, m.group(2), wanted))
    return found


def fix(path):
    text = path.read_text()
    fixed = INCLUDE.sub(lambda m: m.group(1) + (src_path(path, m.group(2)) or m.group(2)) + m.group(3), text)
    if fixed != text:
        path.write_text(fixed)
    return fixed != text


def test_includes_are_written_from_src():
    wrong = [f"{p.relative_to(SOURCE_DIR)}:{line}: \"{written}\" -> \"{wanted}\""
             for p in sources() for line, written, wanted in misspelled(p)]
    assert not wrong, ("includes of src/ files are written from src/ (python3 tests/cli/test_source_layout.py"
                       " --fix rewrites them):\n" + "\n".join(wrong))


def test_the_check_sees_other_spellings(tmp_path):
    # A relative and a sibling spelling of src/core/error.h from a file in src/io are both
    # reported, with the form they must take.
    probe = SRC / "io" / "layout_probe.c"
    assert not probe.exists()
    try:
        probe.write_text('#include "../core/error.h"\n#include "io.h"\n#include "io/io.h"\n#include "outcore.h"\n')
        assert misspelled(probe) == [(1, "../core/error.h", "core/error.h"), (2, "io.h", "io/io.h")]
    finally:
        probe.unlink()


def test_dependency_rules():
    broken = []
    for path in SRC.rglob("*"):
        if not path.is_file() or path.suffix not in SUFFIXES:
            continue
        folder = path.relative_to(SRC).parts[0]
        for m in INCLUDE.finditer(path.read_text()):
            target = src_path(path, m.group(2))
            if not target:
                continue
            to = target.split("/")[0]
            if (folder in BELOW_BACKENDS and to in BACKENDS) or (folder in BACKENDS and to in BACKENDS and to != folder):
                broken.append(f"{path.relative_to(SOURCE_DIR)} includes {target}")
    assert not broken, "design.md: core, mem, exec, io and inspect never include cpu/ or cuda/, and the " \
                       "backends never include each other:\n" + "\n".join(broken)


if __name__ == "__main__":
    if sys.argv[1:] != ["--fix"]:
        sys.exit(__doc__)
    changed = [str(p.relative_to(SOURCE_DIR)) for p in sources() if fix(p)]
    print("\n".join(changed) if changed else "every include is written from src/ already")
