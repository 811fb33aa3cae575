"""The layout rules of the sources, checked on the files themselves (docs/design.md).

1. A quoted #include of a file under src/ is written as its path from src/ ("core/error.h",
   "gram/select/select.h"), in src/, tests/ and bench/ alike: one spelling per header, so a
   grep finds every user, and the dependency rules below can be read off the include lines.
   src/ is on the include path of every target that reaches internals (outcore_obj,
   outcore_static and so the tests, benchmarks and fuzz targets); tools/ and python/ see
   include/outcore.h only.
2. One folder per subsystem: a folder includes only folders below it in LEVELS (the shared
   machines core, matrix, mem, io, cost, engine, then the jobs, then mpi), and no job
   includes another job.
3. Inside a subsystem the backends are folders: only files under a cuda/ folder include a
   CUDA header, .cu or .cuh file, or a file of a cuda/ folder; files under a cpu/ folder and
   files under a cuda/ folder never include each other.
4. No circle between files, nor between modules: the include graph of src/ has no cycle, and
   neither has the graph of its modules, a module being a .c or .cu file with the .h and
   .cuh of the same name in the same folder (a header alone is a module too): module A
   depends on module B when one of A's files includes one of B's. A header shared by two
   modules that need each other's declarations is the sign of a circle: move a declaration
   to the header of the module that defines it, split the shared types into a header of
   their own, or merge two files that are one responsibility.
5. No folder of src/ or tools/ holds more than MAX_FILES files of its own.

Run as a script with --fix to rewrite includes into the first form (after a merge brought
in files written otherwise): python3 tests/cli/test_source_layout.py --fix
"""
import os
import re
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2])).resolve()
SRC = SOURCE_DIR / "src"
INCLUDE = re.compile(r'^(\s*#\s*include\s+")([^"]+)(")', re.M)
SUFFIXES = {".c", ".h", ".cu", ".cuh"}
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
CUDA_HEADER = re.compile(r"^(cuda[\w.]*|cublas\w*|nvrtc|driver_types|vector_types|curand\w*|nccl|mma|cooperative_groups)(\.h|/|$)")
# The folders of src/ and their level: a folder includes only folders of a lower level.
LEVELS = {"core": 0, "matrix": 1, "mem": 1, "io": 2, "cost": 2, "engine": 3,
          "gram": 4, "map": 4, "stream": 4, "inspect": 4, "matmul": 4, "mpi": 5}
MAX_FILES = 26


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


@contextmanager
def copy_of_src(tmp_path):
    """The checks pointed at a copy of src/ under tmp_path, for the probe files the tests
    write: the real tree is read by other tests running at the same time."""
    global SOURCE_DIR, SRC
    saved = SOURCE_DIR, SRC
    shutil.copytree(SRC, tmp_path / "src")
    SOURCE_DIR, SRC = tmp_path, tmp_path / "src"
    try:
        yield SRC
    finally:
        SOURCE_DIR, SRC = saved


def test_includes_are_written_from_src():
    wrong = [f"{p.relative_to(SOURCE_DIR)}:{line}: \"{written}\" -> \"{wanted}\""
             for p in sources() for line, written, wanted in misspelled(p)]
    assert not wrong, ("includes of src/ files are written from src/ (python3 tests/cli/test_source_layout.py"
                       " --fix rewrites them):\n" + "\n".join(wrong))


def test_the_check_sees_other_spellings(tmp_path):
    # A relative and a sibling spelling of src/core/error.h from a file in src/io are both
    # reported, with the form they must take.
    with copy_of_src(tmp_path) as src:
        probe = src / "io" / "layout_probe.c"
        probe.write_text('#include "../core/error.h"\n#include "io.h"\n#include "io/io.h"\n#include "outcore.h"\n')
        assert misspelled(probe) == [(1, "../core/error.h", "core/error.h"), (2, "io.h", "io/io.h")]
        probe.unlink()
        (src / "core" / "layout_probe_a.h").write_text('#include "core/layout_probe_b.h"\n')
        (src / "core" / "layout_probe_b.h").write_text('#include "core/layout_probe_a.h"\n')
        try:
            test_no_circle_between_files()
        except AssertionError as e:
            assert "core/layout_probe_a.h -> core/layout_probe_b.h -> core/layout_probe_a.h" in str(e)
        else:
            raise AssertionError("the circle check did not see the probe")


def src_files():
    for path in sorted(SRC.rglob("*")):
        if path.is_file() and path.suffix in SUFFIXES:
            yield path


def includes(path):
    """The src/ paths of the files path includes."""
    for m in INCLUDE.finditer(path.read_text()):
        target = src_path(path, m.group(2))
        if target:
            yield target


def backend(rel):
    """"cuda", "cpu" or None: the backend folder a src/ path lies in."""
    parts = rel.split("/")[:-1]
    return "cuda" if "cuda" in parts else "cpu" if "cpu" in parts else None


def test_every_folder_has_a_level():
    folders = {p.relative_to(SRC).parts[0] for p in src_files()}
    assert folders <= set(LEVELS), f"folders of src/ without a level here and in design.md: {folders - set(LEVELS)}"


def test_folders_include_only_lower_folders():
    broken = []
    for path in src_files():
        rel = path.relative_to(SRC).as_posix()
        top = rel.split("/")[0]
        for target in includes(path):
            to = target.split("/")[0]
            if to != top and LEVELS.get(to, 99) >= LEVELS.get(top, -1):
                broken.append(f"src/{rel} includes {target}")
    assert not broken, "design.md: a folder includes only the folders below it, and no job another job:\n" + "\n".join(broken)


def test_backends_stay_in_their_folders():
    broken = []
    for path in src_files():
        rel = path.relative_to(SRC).as_posix()
        mine = backend(rel)
        if mine != "cuda" and path.suffix in (".cu", ".cuh"):
            broken.append(f"src/{rel} is CUDA code outside a cuda/ folder")
        if mine != "cuda":
            broken += [f"src/{rel} includes <{h}>" for h in SYSTEM_INCLUDE.findall(path.read_text()) if CUDA_HEADER.match(h)]
        for target in includes(path):
            theirs = backend(target)
            if theirs and theirs != mine:
                broken.append(f"src/{rel} includes {target}")
    assert not broken, "design.md: only cuda/ folders include CUDA headers and cuda/ files; cpu/ and cuda/ never " \
                       "include each other:\n" + "\n".join(broken)


def circles(graph):
    """Each circle of graph (node -> nodes it reaches) that a depth-first walk meets, as
    "a -> b -> a"."""
    state, found = {}, []
    for start in graph:
        if start in state:
            continue
        todo = [(start, iter(graph.get(start, ())))]
        state[start] = 1
        path = [start]
        while todo:
            cur, children = todo[-1]
            child = next(children, None)
            if child is None:
                state[cur] = 2
                todo.pop()
                path.pop()
            elif state.get(child) == 1:
                found.append(" -> ".join(path[path.index(child):] + [child]))
            elif child not in state:
                state[child] = 1
                path.append(child)
                todo.append((child, iter(graph.get(child, ()))))
    return found


def module(rel):
    """The module of a src/ path: its folder and base name ("gram/select/select" for
    select.c, select.h and a select.cuh beside them)."""
    return rel.rsplit(".", 1)[0]


def module_graph():
    graph = {}
    for path in src_files():
        rel = path.relative_to(SRC).as_posix()
        deps = graph.setdefault(module(rel), set())
        deps.update(module(t) for t in includes(path) if module(t) != module(rel))
    return {m: sorted(deps) for m, deps in sorted(graph.items())}


def test_no_circle_between_files():
    graph = {p.relative_to(SRC).as_posix(): sorted(set(includes(p))) for p in src_files()}
    found = circles(graph)
    assert not found, "circles between files:\n" + "\n".join(found)


def test_no_circle_between_modules():
    found = circles(module_graph())
    assert not found, ("circles between modules (a .c or .cu with the .h and .cuh of its name; rule 4 atop this file):\n"
                       + "\n".join(found))


def test_the_circle_check_sees_modules(tmp_path):
    # a.c includes b.h and b.c includes a.h: no file is in a circle, the modules are.
    with copy_of_src(tmp_path) as src:
        for name, text in (("layout_probe_a.c", '#include "core/layout_probe_b.h"\n'), ("layout_probe_a.h", ""),
                           ("layout_probe_b.c", '#include "core/layout_probe_a.h"\n'), ("layout_probe_b.h", "")):
            (src / "core" / name).write_text(text)
        test_no_circle_between_files()
        try:
            test_no_circle_between_modules()
        except AssertionError as e:
            assert "core/layout_probe_a -> core/layout_probe_b -> core/layout_probe_a" in str(e), str(e)
        else:
            raise AssertionError("the module circle check did not see the probe")


def test_no_folder_is_too_large():
    # The CLI's folders (tools/, tools/cli/) as well as the library's.
    tools = (p for p in sorted((SOURCE_DIR / "tools").rglob("*")) if p.is_file() and p.suffix in SUFFIXES)
    counts = {}
    for path in [*src_files(), *tools]:
        counts[path.parent] = counts.get(path.parent, 0) + 1
    big = [f"{d.relative_to(SOURCE_DIR)}: {n} files" for d, n in counts.items() if n > MAX_FILES]
    assert not big, f"folders over {MAX_FILES} files (split them into subsystems):\n" + "\n".join(big)


PROCESS_LOCK = re.compile(r"^static pthread_(mutex|rwlock)_t (\w+)\s*=", re.M)


def unregistered_process_locks(src):
    """The file-scope (process-wide) mutexes and rwlocks of src/ that are not taken across
    fork(): a mutex registered with OC_FORK_LOCK (core/process/fork_locks.h), or a lock whose
    file installs its own pthread_atfork handlers (the BLAS calls' rwlock, registered after the
    BLAS's own). The registry's own lock is taken first by the registry itself."""
    missing = []
    for path in sorted(src.rglob("*")):
        own = path.relative_to(src).as_posix() == "core/process/fork_locks.c"
        if path.is_file() and path.suffix in SUFFIXES and not own:
            text = path.read_text()
            for _, name in PROCESS_LOCK.findall(text):
                if not re.search(rf"^OC_FORK_LOCK\({name},", text, re.M) and "pthread_atfork(" not in text:
                    missing.append(f"{path.relative_to(src)}: {name}")
    return missing


def test_process_wide_locks_are_taken_across_fork(tmp_path):
    missing = unregistered_process_locks(SRC)
    assert not missing, "process-wide locks a forked child could find taken for ever:\n" + "\n".join(missing)
    probe = tmp_path / "src" / "core"
    probe.mkdir(parents=True)
    (probe / "probe.c").write_text("static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;\n")
    assert unregistered_process_locks(tmp_path / "src") == ["core/probe.c: probe_lock"]


def test_the_rules_see_a_breach(tmp_path):
    # A probe file in core/ that includes a job's header and a CUDA header breaks two rules.
    with copy_of_src(tmp_path) as src:
        (src / "core" / "layout_probe.c").write_text('#include <cuda_runtime.h>\n#include "gram/gram_job.h"\n')
        for rule in (test_folders_include_only_lower_folders, test_backends_stay_in_their_folders):
            try:
                rule()
            except AssertionError as e:
                assert "layout_probe.c" in str(e)
            else:
                raise AssertionError(f"{rule.__name__} did not see the probe")


if __name__ == "__main__":
    if sys.argv[1:] != ["--fix"]:
        sys.exit(__doc__)
    changed = [str(p.relative_to(SOURCE_DIR)) for p in sources() if fix(p)]
    print("\n".join(changed) if changed else "every include is written from src/ already")
