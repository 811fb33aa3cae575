"""`cmake --install` into a temporary prefix, then what a C user does with it: the layout and
the library's SONAME, no path of the build tree or the prefix in any installed file, and two
consumers (tests/install/CMakeLists.txt through find_package, and a pkg-config command line),
each linked against the shared and the static library, built and run after the prefix has been
moved elsewhere.

Run by ctest (label "install") against the build tree of OUTCORE_BIN, or by hand after a build:
    python3 -m pytest tests/install/test_install.py
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import SOURCE_DIR, build_dir, clean_env, project_version, run

ROWS = ["110100", "011101", "100000", "000000"]  # includes an empty row


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The prefix as installed, and the same tree moved to another directory."""
    root = tmp_path_factory.mktemp("install")
    prefix = root / "prefix"
    run(["cmake", "--install", build_dir(), "--prefix", prefix])
    moved = root / "moved" / "elsewhere"
    moved.parent.mkdir()
    shutil.copytree(prefix, moved, symlinks=True)
    shutil.rmtree(prefix)
    return prefix, moved


def readelf_dynamic(path):
    return run(["readelf", "-d", path]).stdout


def expected_output(rows):
    a = np.array([[int(ch) for ch in r] for r in rows], dtype=np.int64)
    gram = a @ a.T
    version = project_version()
    lines = [f"library {version}", f"header {version}", f"{len(rows)} {len(rows)}"]
    lines += [" ".join(str(v) for v in row) for row in gram]
    return "\n".join(lines) + "\n"


def test_layout_and_soname(installed):
    _, prefix = installed
    version = project_version()
    major = version.split(".")[0]
    lib = prefix / "lib"
    for rel in ["bin/outcore", "include/outcore.h", "lib/liboutcore.a", f"lib/liboutcore.so.{version}",
                "lib/cmake/outcore/outcoreConfig.cmake", "lib/cmake/outcore/outcoreConfigVersion.cmake",
                "lib/pkgconfig/outcore.pc", "share/man/man1/outcore.1",
                "share/bash-completion/completions/outcore", "share/doc/outcore/LICENSE"]:
        assert (prefix / rel).is_file(), f"{rel} is not installed"
    # liboutcore.so -> liboutcore.so.MAJOR -> liboutcore.so.VERSION, the links relative.
    assert os.readlink(lib / "liboutcore.so") == f"liboutcore.so.{major}"
    assert os.readlink(lib / f"liboutcore.so.{major}") == f"liboutcore.so.{version}"
    assert f"Library soname: [liboutcore.so.{major}]" in readelf_dynamic(lib / f"liboutcore.so.{version}")
    cli = readelf_dynamic(prefix / "bin" / "outcore")
    # The CLI's own folder (the build tree's layout), then the installed library's; no empty
    # entry, which the loader would read as the current directory.
    assert re.search(r"\((RUNPATH|RPATH)\).*\[\$ORIGIN:\$ORIGIN/\.\./lib\]", cli), cli


def test_no_absolute_paths_baked_in(installed, tmp_path):
    """Nothing installed names the build tree, the checkout or the prefix: the tree can move."""
    _, moved = installed
    prefix = tmp_path / "fresh"
    run(["cmake", "--install", build_dir(), "--prefix", prefix])
    needles = [str(build_dir()).encode(), str(SOURCE_DIR).encode(), str(prefix).encode()]
    for path in sorted(prefix.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for needle in needles:
                assert needle not in data, f"{path.relative_to(prefix)} contains {needle.decode()}"


def test_cli_runs_from_moved_prefix(installed):
    _, prefix = installed
    proc = run([prefix / "bin" / "outcore", "--version"], env=clean_env())
    assert proc.stdout.startswith(f"outcore {project_version()} ")


def test_cmake_consumer(installed, tmp_path):
    _, prefix = installed
    build = tmp_path / "consumer"
    run(["cmake", "-S", SOURCE_DIR / "tests" / "install", "-B", build, "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"], env=clean_env())
    cache = (build / "CMakeCache.txt").read_text()
    assert f"outcore_DIR:PATH={prefix}/lib/cmake/outcore" in cache, "find_package found another outcore"
    run(["cmake", "--build", build], env=clean_env())
    for name, links_shared in [("consumer_shared", True), ("consumer_static", False)]:
        exe = build / name
        assert ("[liboutcore.so." in readelf_dynamic(exe)) == links_shared, name
        assert run([exe, *ROWS], env=clean_env()).stdout == expected_output(ROWS), name


def test_pkg_config_consumer(installed, tmp_path):
    _, prefix = installed
    env = clean_env(PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    pc = lambda *args: run(["pkg-config", *args, "outcore"], env=env).stdout.split()  # noqa: E731
    assert pc("--modversion") == [project_version()]
    libdir = pc("--variable=libdir")[0]
    assert Path(libdir).resolve() == (prefix / "lib").resolve()
    # Every directory the flags name is in the prefix: none of the build machine's (CUDA's).
    named = [f[2:] if f[:2] in ("-I", "-L") else f for f in pc("--cflags", "--static", "--libs")]
    outside = [d for d in named if d.startswith("/") and prefix.resolve() not in Path(d).resolve().parents]
    assert not outside, f"outcore.pc names directories outside its prefix: {outside}"
    source = SOURCE_DIR / "tests" / "install" / "consumer.c"
    cc = os.environ.get("CC", "cc")

    shared = tmp_path / "pc_shared"
    run([cc, source, "-o", shared, *pc("--cflags", "--libs"), f"-Wl,-rpath,{libdir}"], env=env)
    # The static link: liboutcore.a by name (beside liboutcore.so, -loutcore would pick the
    # shared one), then Libs.private.
    static = tmp_path / "pc_static"
    libs = ["-l:liboutcore.a" if arg == "-loutcore" else arg for arg in pc("--static", "--libs")]
    assert "-l:liboutcore.a" in libs
    run([cc, source, "-o", static, *pc("--cflags"), *libs], env=env)

    for exe, links_shared in [(shared, True), (static, False)]:
        assert ("[liboutcore.so." in readelf_dynamic(exe)) == links_shared, exe.name
        assert run([exe, *ROWS], env=clean_env()).stdout == expected_output(ROWS), exe.name



def test_cmake_package_refuses_another_major_version(installed, tmp_path):
    """outcoreConfigVersion.cmake: SameMajorVersion, as the SONAME liboutcore.so.MAJOR."""
    _, prefix = installed
    major = int(project_version().split(".")[0])
    proc = subprocess.run(["cmake", "-S", SOURCE_DIR / "tests" / "install", "-B", tmp_path / "b",
                           f"-DCMAKE_PREFIX_PATH={prefix}", f"-DOUTCORE_WANTED={major + 1}.0"],
                          capture_output=True, text=True, env=clean_env())
    assert proc.returncode != 0
    assert f'compatible with requested version "{major + 1}.0"' in proc.stderr, proc.stderr
    assert f"version: {project_version()}" in proc.stderr, proc.stderr
