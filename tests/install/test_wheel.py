"""The Python package as a user gets it: `python -m build` on python/ makes an sdist and, from
that sdist, a wheel; the wheel is installed in a fresh virtual environment, and the README's
Python example runs there with no OUTCORE_* variable, from a directory outside the checkout,
and its results are checked.

The wheel packs the library and the CLI of the build under test (the build folder of
OUTCORE_BIN) instead of compiling them again: -C cmake.define.OUTCORE_WHEEL_FROM_BUILD
(cmake/wheel.cmake). The build from the sdist still configures the sdist's CMake project with
python/pyproject.toml's options (CUDA looked for as in the C build, OUTCORE_CUDA_PTX_ONLY as
the C build beside it has it); only the compile is skipped, which the build under test has
done. Needs PyPI (build, scikit-build-core, numpy).
"""
import json
import subprocess
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import SOURCE_DIR, build_dir, cache_entry, clean_env, project_version, run

# Runs the README's example (argv[1]) and reports what it made, checked against numpy.
CHECK = r'''
import importlib.metadata, json, sys
import numpy as np
ns = {}
exec(compile(open(sys.argv[1]).read(), "README.md", "exec"), ns)
import outcore
# In float32 through BLAS (numpy's integer matmul has none): every partial sum is a whole
# number below 2**24, so exact.
A = ns["A"].astype(np.float32)
c = (A @ A.T).astype(np.int64)
pop = ns["A"].sum(axis=1, dtype=np.int64)
union = (pop[:, None] + pop[None, :] - c).astype(np.float64)
jaccard = np.where(union == 0, 1.0, c / np.where(union == 0, 1, union)).astype(np.float32)
others = jaccard.copy()
np.fill_diagonal(others, -np.inf)
best = -np.sort(-others, axis=1)[:, :10]
print(json.dumps({
    "version": outcore.__version__,
    "distribution": importlib.metadata.version("outcore"),
    "library": outcore.library_path,
    "package": str(outcore.__file__),
    "jaccard": bool(np.array_equal(ns["J"], jaccard)),
    "topk_shape": list(ns["idx"].shape),
    "topk_scores": bool(np.array_equal(ns["score"], best)),
    "topk_indices": bool(np.array_equal(jaccard[np.arange(len(A))[:, None], ns["idx"]], best)),
    "counts_file": bool(np.array_equal(np.asarray(ns["C"]), c.astype(np.int32))),
}))
'''


def readme_python_example():
    text = (SOURCE_DIR / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    env = clean_env(CMAKE_BUILD_PARALLEL_LEVEL=clean_env().get("CMAKE_BUILD_PARALLEL_LEVEL", "2"),
                    PIP_DISABLE_PIP_VERSION_CHECK="1")
    run([sys.executable, "-m", "venv", root / "venv"], env=env)
    python = root / "venv" / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", "build"], env=env)
    dist = root / "dist"
    ptx_only = cache_entry("OUTCORE_CUDA_PTX_ONLY") or "OFF"
    run([python, "-m", "build", "--outdir", dist, f"-Ccmake.define.OUTCORE_CUDA_PTX_ONLY={ptx_only}",
         f"-Ccmake.define.OUTCORE_WHEEL_FROM_BUILD={build_dir()}", SOURCE_DIR / "python"], env=env, cwd=root)
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(dist.iterdir())
    run([python, "-m", "pip", "install", "--quiet", wheels[0]], env=env)
    return {"root": root, "python": python, "sdist": sdists[0], "wheel": wheels[0], "env": env}


def test_distributions_hold_what_they_need(venv):
    version = project_version()
    assert venv["sdist"].name == f"outcore-{version}.tar.gz"
    with tarfile.open(venv["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in ["pyproject.toml", "outcore/__init__.py", "outcore/py.typed", "csrc/CMakeLists.txt", "csrc/include/outcore.h",
                   "csrc/src/core/context.c", "csrc/cmake/install.cmake", "csrc/tools/main.c"]:
        assert needed in names, f"the sdist lacks {needed}"
    assert not any(n.startswith(("csrc/tests/", "csrc/bench/")) or "__pycache__" in n for n in names)
    with zipfile.ZipFile(venv["wheel"]) as whl:
        names = set(whl.namelist())
    major = version.split(".")[0]
    assert {f"outcore/lib/liboutcore.so.{major}", "outcore/bin/outcore", "outcore/__main__.py", "outcore/py.typed"} <= names
    # One copy of the library (a wheel cannot hold symlinks), no headers or CMake files.
    assert [n for n in names if "liboutcore" in n] == [f"outcore/lib/liboutcore.so.{major}"]
    assert not any(n.endswith((".h", ".cmake", ".pc", ".a")) for n in names)
    # The binaries are those of the build under test.
    with zipfile.ZipFile(venv["wheel"]) as whl:
        assert whl.read(f"outcore/lib/liboutcore.so.{major}") == (build_dir() / f"liboutcore.so.{version}").read_bytes()


def test_readme_example_runs_in_fresh_venv(venv, tmp_path):
    (tmp_path / "example.py").write_text(readme_python_example())
    (tmp_path / "check.py").write_text(CHECK)
    out = run([venv["python"], "check.py", "example.py"], env=venv["env"], cwd=tmp_path).stdout
    report = json.loads(out.strip().splitlines()[-1])
    site = venv["root"] / "venv" / "lib"
    assert Path(report["package"]).is_relative_to(site), report["package"]
    assert Path(report["library"]).is_relative_to(site), report["library"]
    assert report["version"] == report["distribution"] == project_version()
    assert report["jaccard"] and report["counts_file"]
    assert report["topk_shape"] == [2000, 10] and report["topk_scores"] and report["topk_indices"]


def test_python_m_outcore_is_the_cli(venv, tmp_path):
    version = project_version()
    proc = run([venv["python"], "-m", "outcore", "--version"], env=venv["env"], cwd=tmp_path)
    assert proc.stdout.startswith(f"outcore {version} ")
    # The console script, and the CLI's exit status passed through.
    script = venv["root"] / "venv" / "bin" / "outcore"
    assert "usage: outcore gram" in run([script, "gram", "--help"], env=venv["env"]).stdout
    proc = subprocess.run([venv["python"], "-m", "outcore", "gram", "missing.npy", "-o", "C.npy"],
                          capture_output=True, text=True, env=venv["env"], cwd=tmp_path)
    assert proc.returncode == 2 and "missing.npy" in proc.stderr and not (tmp_path / "C.npy").exists()


def test_cuda_backend_built_as_the_c_build(venv, tmp_path):
    """The wheel has the CUDA backend exactly when the C build beside it has (nvcc found)."""
    without = "this outcore was built without CUDA"
    wheel = run([venv["python"], "-m", "outcore", "devices", "--json"], env=venv["env"], cwd=tmp_path).stdout
    c_build = run([build_dir() / "outcore", "devices", "--json"], env=clean_env()).stdout
    assert (without in wheel) == (without in c_build), (wheel, c_build)
