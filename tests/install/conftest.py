"""Shared by the install tests: where the source and the build tree are, the project version,
and a runner that says what failed."""
import os
import re
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2])).resolve()


def build_dir():
    """The build tree whose CLI ctest names in OUTCORE_BIN (else ./build)."""
    cli = os.environ.get("OUTCORE_BIN")
    path = Path(cli).resolve().parent if cli else SOURCE_DIR / "build"
    if not (path / "CMakeCache.txt").exists():
        pytest.skip(f"no configured build tree at {path}: build first, or run through ctest")
    return path


def cache_entry(name):
    """The value of a CMakeCache.txt entry of the build tree, or None."""
    for line in (build_dir() / "CMakeCache.txt").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.split(":", 1)[0] == name:
            return value
    return None


def project_version():
    """The one version source: project(outcore VERSION x.y.z) in CMakeLists.txt."""
    text = (SOURCE_DIR / "CMakeLists.txt").read_text()
    return re.search(r"project\(outcore VERSION ([0-9]+\.[0-9]+\.[0-9]+)", text).group(1)


def run(args, **kwargs):
    """Runs a command; on a nonzero exit fails the test with the command and its output."""
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def clean_env(**extra):
    """The environment less the variables that point the binding or the CLI at the build tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OUTCORE_LIBRARY", "OUTCORE_BIN", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env
