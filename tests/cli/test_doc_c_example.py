"""The README's C example compiles and runs as written.

The one ```c block of README.md that defines main() is written to app.c, compiled as C11 with
warnings as errors by the C compiler ($CC, else cc) against include/outcore.h, linked with the
built liboutcore (OUTCORE_LIBRARY, else the one beside the built outcore), and run on a 0/1
matrix saved with numpy: it must print numpy's Jaccard similarity of rows 0 and 1, and on a
missing file fail with the library's one-line message.
"""
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import SOURCE_DIR, library, reference

FENCE = re.compile(r"^```c[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def programs():
    text = (SOURCE_DIR / "README.md").read_text()
    return [block for block in FENCE.findall(text) if re.search(r"\bint\s+main\s*\(", block)]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    found = programs()
    assert len(found) == 1, f"README.md has {len(found)} C programs; the README shows one"
    work = tmp_path_factory.mktemp("c_example")
    (work / "app.c").write_text(found[0])
    lib = library()
    cc = os.environ.get("CC", "cc")
    proc = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "app.c", "-o", "app",
                           f"-I{SOURCE_DIR / 'include'}", str(lib), f"-Wl,-rpath,{lib.parent}"],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, f"the README's C example does not compile:\n{proc.stderr}"
    return work


def test_prints_what_numpy_computes(app):
    rng = np.random.default_rng(7)
    a = rng.random((37, 300)) < 0.2
    a[1, :40] = a[0, :40] = True  # rows 0 and 1 overlap
    np.save(app / "rows.npy", a)
    proc = subprocess.run(["./app", "rows.npy"], cwd=app, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    expected = reference(a, metric="jaccard")[0, 1]
    assert proc.stdout == f"37 rows, jaccard(0, 1) = {float(expected):.9g}\n"


def test_reports_a_missing_file(app):
    proc = subprocess.run(["./app", "absent.npy"], cwd=app, capture_output=True, text=True)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "absent.npy" in lines[0], proc.stderr
    assert not (app / "absent.npy").exists()


def test_the_build_line_makes_the_program_it_runs():
    """The README's and docs/install.md's compile lines name the program they then run
    (`./app`): a bare `cc app.c` makes a.out."""
    for doc in ("README.md", "docs/install.md"):
        text = (SOURCE_DIR / doc).read_text()
        lines = re.findall(r"cc app\.c[^`\n]*", text)
        assert lines, f"{doc} has no compile line of app.c"
        for line in lines:
            assert " -o app " in line + " ", f"{doc}: {line!r} does not make ./app"

