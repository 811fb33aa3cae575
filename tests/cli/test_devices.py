"""`outcore devices` on a machine without a usable GPU: each cause has its own line."""
import ctypes
import json

import pytest

from conftest import data_file, run


def driver_loadable():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def no_gpu_reason():
    report = json.loads(run("devices", "--json").stdout)
    if report["gpus"]:
        pytest.skip("a GPU is usable here")
    return report["no_gpu_reason"]


def test_no_driver_is_named_as_such():
    reason = no_gpu_reason()
    if "built without CUDA" in reason:
        pytest.skip("this outcore was built without CUDA, which is its reason")
    if driver_loadable():
        pytest.skip("an NVIDIA driver library is present here")
    assert reason.startswith("no NVIDIA driver found"), reason
    assert "libcuda.so.1" in reason and "insufficient" not in reason, reason
    text = run("devices").stdout
    assert "no usable GPU: no NVIDIA driver found" in text


def test_backend_cuda_says_why_it_cannot_run(tmp_path):
    reason = no_gpu_reason()
    proc = run("gram", "--backend", "cuda", "-o", tmp_path / "c.npy",
               data_file("aflp_markers.txt"), check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    if "built without CUDA" in reason:
        assert "no CUDA support" in proc.stderr
    else:
        assert reason.split(" (")[0] in proc.stderr, (reason, proc.stderr)
    assert list(tmp_path.iterdir()) == []
