"""tests/summary.py, the verdict of `make test` and of bench/gpu_check.sh, on a small CMake
project of its own: each test's outcome counted once, a skip with its reason, and a ctest
stage that ran no test at all (the GPU tests of a build without them) counted as a failure,
never as a clean pass."""
import shutil
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

SUMMARY = SOURCE_DIR / "tests" / "summary.py"
PROJECT = """cmake_minimum_required(VERSION 3.16)
project(summary_probe NONE)
enable_testing()
add_test(NAME passes COMMAND sh -c "exit 0")
add_test(NAME fails COMMAND sh -c "exit 3")
add_test(NAME skips COMMAND sh -c "echo 'SKIPPED: no usable GPU here'; exit 77")
set_tests_properties(passes fails skips PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    if not shutil.which("cmake") or not shutil.which("ctest"):
        pytest.skip("cmake and ctest are needed")
    root = tmp_path_factory.mktemp("summary_probe")
    (root / "CMakeLists.txt").write_text(PROJECT)
    subprocess.run(["cmake", "-S", root, "-B", root / "b"], check=True, capture_output=True)
    return root / "b"


def summary(results, *args):
    return subprocess.run([sys.executable, SUMMARY, "--results", results, *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_each_outcome_counted(probe, tmp_path):
    assert summary(tmp_path, "ctest", "all", probe).returncode == 0  # a stage exits 0 whatever its tests did
    proc = summary(tmp_path, "report")
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "1 passed, 1 failed, 1 skipped", proc.stdout
    assert "no usable GPU: 1" in proc.stdout and "fails" in proc.stdout, proc.stdout


def test_a_stage_that_ran_no_test_fails(probe, tmp_path):
    summary(tmp_path, "ctest", "none", probe, "-L", "gpu", "--no-tests=error")
    proc = summary(tmp_path, "report")
    assert proc.returncode == 1, proc.stdout
    assert "ctest exited" in proc.stdout and proc.stdout.strip().endswith("0 passed, 1 failed, 0 skipped"), \
        proc.stdout
