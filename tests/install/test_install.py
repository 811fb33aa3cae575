"""`cmake --install` into a temporary prefix, then what a C user does with it: the layout and
the library's SONAME, no path of the build tree or the prefix in any installed file, and two
consumers (tests/install/CMakeLists.txt through find_package, and a pkg-config command line),
each linked against the shared and the static library, built and run after the prefix has been
moved elsewhere. The CMake consumer is built again with the CUDA toolkit hidden from CMake: the
static target of a CUDA build links the CUDA runtime installed beside liboutcore.a, as its
pkg-config line does, and needs no toolkit (docs/install.md). When the static target cannot be
defined, find_package says why.

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
CMAKE = shutil.which("cmake") or "cmake"  # before a test takes the toolkit's folders off the PATH


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


def without_cuda_toolkit(tmp_path):
    """CMake options and an environment under which find_package(CUDAToolkit) finds nothing, as on
    a machine without the toolkit: no CUDA variable, no nvcc on the PATH nor in a folder CMake
    searches (CMAKE_IGNORE_PATH), and CUDAToolkit_ROOT naming an empty folder, which ends
    FindCUDAToolkit's search before its default, /usr/local/cuda."""
    env = clean_env()
    for var in ("CUDA_PATH", "CUDA_HOME", "CUDACXX", "CUDAToolkit_ROOT", "LIBRARY_PATH"):
        env.pop(var, None)
    path = [d for d in env.get("PATH", "").split(os.pathsep) if d]
    candidates = dict.fromkeys(path + ["/usr/local/bin", "/usr/local/cuda/bin", "/opt/cuda/bin"])
    with_nvcc = [d for d in candidates if os.access(os.path.join(d, "nvcc"), os.X_OK)]
    env["PATH"] = os.pathsep.join(d for d in path if d not in with_nvcc)
    empty = tmp_path / "no-cuda-toolkit"
    empty.mkdir()
    return [f"-DCUDAToolkit_ROOT={empty}", f"-DCMAKE_IGNORE_PATH={';'.join(with_nvcc)}"], env


def configure_consumer(prefix, build, *args, env, check=True):
    command = [CMAKE, "-S", SOURCE_DIR / "tests" / "install", "-B", build, "-DCMAKE_BUILD_TYPE=Release",
               f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", *args]
    if check:
        return run(command, env=env)
    return subprocess.run([str(a) for a in command], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("toolkit", ["as found", "hidden"])
def test_cmake_consumer(installed, tmp_path, toolkit):
    _, prefix = installed
    args, env = ([], clean_env()) if toolkit == "as found" else without_cuda_toolkit(tmp_path)
    if toolkit == "hidden":
        # The test hides what it means to: a project of its own finds no toolkit either.
        probe = tmp_path / "probe"
        probe.mkdir()
        (probe / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.16)\nproject(probe LANGUAGES C)\nfind_package(CUDAToolkit QUIET)\n"
            'file(WRITE "${CMAKE_BINARY_DIR}/found.txt" "${CUDAToolkit_FOUND}")\n')
        run([CMAKE, "-S", probe, "-B", probe / "b", *args], env=env)
        assert (probe / "b" / "found.txt").read_text() in ("", "FALSE"), "the CUDA toolkit is not hidden"
    build = tmp_path / "consumer"
    configure_consumer(prefix, build, *args, env=env)
    cache = (build / "CMakeCache.txt").read_text()
    assert f"outcore_DIR:PATH={prefix}/lib/cmake/outcore" in cache, "find_package found another outcore"
    run([CMAKE, "--build", build], env=env)
    cudart = prefix / "lib" / "outcore" / "libcudart_static.a"
    if cudart.exists():
        # A CUDA build: the static consumer links the runtime installed with liboutcore.a.
        link_txt = build / "CMakeFiles" / "consumer_static.dir" / "link.txt"  # else Ninja's file
        link = (link_txt if link_txt.exists() else build / "build.ninja").read_text()
        assert str(cudart) in link and "libcuda.so" not in link, link
    for name, links_shared in [("consumer_shared", True), ("consumer_static", False)]:
        exe = build / name
        assert ("[liboutcore.so." in readelf_dynamic(exe)) == links_shared, name
        assert run([exe, *ROWS], env=clean_env()).stdout == expected_output(ROWS), name


def test_cmake_consumer_in_cxx_alone(installed, tmp_path):
    """A C++ project that enables no C links both targets (an MPI build's static target needs
    MPI's C API, which FindMPI gives such a project through its C++ component)."""
    _, prefix = installed
    build = tmp_path / "consumer"
    configure_consumer(prefix, build, "-DOUTCORE_CONSUMER_LANGUAGE=CXX", env=clean_env())
    run([CMAKE, "--build", build], env=clean_env())
    for name in ("consumer_shared", "consumer_static"):
        assert run([build / name, *ROWS], env=clean_env()).stdout == expected_output(ROWS), name


def test_cmake_static_component_says_what_is_missing(installed, tmp_path):
    """COMPONENTS static, REQUIRED, where a library it links with is not found: find_package
    fails with the reason (outcore_NOT_FOUND_MESSAGE, which CMake prints), not only with
    "outcore_FOUND to FALSE". Here Threads, which find_package may not look for."""
    _, prefix = installed
    proc = configure_consumer(prefix, tmp_path / "b", "-DCMAKE_DISABLE_FIND_PACKAGE_Threads=ON", env=clean_env(),
                              check=False)
    assert proc.returncode != 0
    assert "outcore::outcore_static needs Threads" in " ".join(proc.stderr.split()), proc.stderr


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
