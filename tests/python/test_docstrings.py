"""The binding's documentation as tools read it: numpydoc docstrings on gram, map, stream,
inspect and explain whose Parameters name every parameter of the signature, in its order,
and whose examples pass doctest; type hints on every public function, which mypy finds a
caller's script true to; and the PEP 561 marker (py.typed) that makes type checkers read
those hints from the installed package."""
import doctest
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import outcore

NUMPYDOC = [outcore.gram, outcore.map, outcore.matmul, outcore.stream, outcore.inspect, outcore.explain]
SECTIONS = ["Parameters", "Returns", "Raises", "Examples"]
UNDERLINE = re.compile(r"-{3,}")


def sections(doc):
    """{title: lines} of a numpydoc docstring: each title is a line underlined with dashes."""
    lines = inspect.cleandoc(doc).splitlines()
    found, current = {}, None
    for i, line in enumerate(lines):
        if UNDERLINE.fullmatch(line.strip()):
            continue
        if line.strip() and i + 1 < len(lines) and UNDERLINE.fullmatch(lines[i + 1].strip()):
            current = line.strip()
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return found


def entries(lines):
    """[(names, description lines)] of a Parameters section: an entry starts at an unindented
    "name : type" line ("A, B : ..." documents two), its description is indented below it."""
    result = []
    for line in lines:
        if line and not line[0].isspace():
            head = line.split(" : ", 1)[0]
            result.append(([name.strip() for name in head.split(",")], []))
        elif line.strip() and result:
            result[-1][1].append(line)
    return result


def signature_names(fn):
    """The parameters of fn as numpydoc writes them: *args and **kwargs with their stars."""
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [stars.get(p.kind, "") + p.name for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("fn", NUMPYDOC, ids=lambda fn: fn.__name__)
def test_numpydoc_sections_in_order(fn):
    found = sections(fn.__doc__)
    assert [s for s in found if s in SECTIONS] == SECTIONS, list(found)
    for title in SECTIONS:
        assert any(line.strip() for line in found[title]), f"{fn.__name__}: {title} is empty"
    assert any(line.startswith(">>> ") for line in found["Examples"])


@pytest.mark.parametrize("fn", NUMPYDOC, ids=lambda fn: fn.__name__)
def test_parameters_document_the_signature(fn):
    documented = entries(sections(fn.__doc__)["Parameters"])
    names = [name for group, _ in documented for name in group]
    assert names == signature_names(fn)
    for group, description in documented:
        assert description, f"{fn.__name__}: {', '.join(group)} has no description"


@pytest.mark.parametrize("fn", NUMPYDOC, ids=lambda fn: fn.__name__)
def test_examples_pass_doctest(fn, tmp_path, monkeypatch):
    """Each docstring's examples run under doctest, or carry +SKIP (what needs a GPU, numba or
    files): a directive covers only the example it stands on, so each one needs its own."""
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for test in doctest.DocTestFinder(recurse=False).find(fn, fn.__name__, globs={}):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_the_parser_sees_a_missing_parameter():
    """The check above fails on a docstring that leaves a parameter out."""
    def f(a, b=None, **rest):
        """Summary.

        Parameters
        ----------
        a : int
            The first.
        **rest
            Others.
        """
    assert [n for g, _ in entries(sections(f.__doc__)["Parameters"]) for n in g] == ["a", "**rest"]
    assert signature_names(f) == ["a", "b", "**rest"]


PUBLIC_FUNCTIONS = [getattr(outcore, name) for name in outcore.__all__ + ["map"]
                    if inspect.isfunction(getattr(outcore, name))]


@pytest.mark.parametrize("fn", PUBLIC_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_public_functions_are_annotated(fn):
    sig = inspect.signature(fn)
    bare = [p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert not bare, f"{fn.__name__}: no type hint on {bare}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{fn.__name__}: no return type"


def test_package_is_marked_typed():
    package = Path(outcore.__file__).parent
    assert (package / "py.typed").is_file()
    assert {f.__name__ for f in PUBLIC_FUNCTIONS} >= {"gram", "map", "stream", "inspect", "explain", "devices"}


def test_map_is_exported_to_type_checkers():
    """map stays out of __all__ (a star import must not shadow the builtin), and is imported as
    `map as map`, which PEP 484 reads as an export: `outcore.map(...)` type-checks."""
    import ast
    from pathlib import Path
    tree = ast.parse(Path(outcore.__file__).read_text())
    imported = [(a.name, a.asname) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert ("map", "map") in imported and "map" not in outcore.__all__


# A caller's script written as docs/python.md shows the calls, progress= callbacks included:
# mypy reads the package's annotations as a caller's checker would, so a hint that names
# another object than the documented type (a runtime class shadowing a _types alias) fails.
USER_SCRIPT = '''
import numpy as np
import outcore


def report(done: float, total: float) -> None:
    print(f"{done}/{total}")


def launch(chunk) -> None:  # chunk.x: the chunk's device view of x
    pass


A = np.random.default_rng(0).random((200, 1000)) < 0.05
C = outcore.gram(A, progress=report)
J = outcore.gram(A, metric="jaccard", progress=lambda done, total: None, stats={})
idx, score = outcore.gram(A, metric="jaccard", topk=10, progress=report)
print(outcore.explain(A, metric="jaccard", progress=report))
with outcore.Context(backend="cpu", threads=2, host_mem="1G") as ctx:
    C2 = ctx.gram(A, progress=report)
x = np.ones(1000, np.float32)
res = outcore.stream(launch, inputs={"x": x}, outputs={"out": (x.shape, x.dtype)}, gpu_mem="1G",
                     progress=report)
g = outcore.matmul(A, host_mem="1M")
s = outcore.map("a * 2", a=x, reduce="sum")
plan: str = outcore.gram(A, backend="cpu", tile=512, gpu_mem_mode="reserve", plan=True)
print(outcore.explain(A, tile=64, gpu_mem_mode="grow", plan=True))
map_stats: dict = {}
y = outcore.map("sqrt(x) * 2", x=x, reduce="sum", backend="cpu", stats=map_stats, progress=report)
z = outcore.map("x + 1", x=x, progress=lambda done, total: None)
mm_stats: dict = {}
mm_plan: str = outcore.matmul(A, A, transpose_b=True, tile=256, plan=True, explain=True)
mm = outcore.matmul(A, host_mem="1M", tile=128, stats=mm_stats)
'''


def test_documented_calls_type_check(tmp_path):
    """mypy finds no error in a script calling gram, explain, Context.gram, stream and map with
    a progress callback, and gram's plan, as docs/python.md shows them."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install mypy)")
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    package_parent = str(Path(outcore.__file__).resolve().parents[1])
    env = dict(os.environ, MYPYPATH=package_parent)
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull,
                        "--follow-imports", "silent", str(script)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
