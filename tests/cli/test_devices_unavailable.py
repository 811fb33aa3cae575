"""Devices that the build or the machine cannot give: `gram --devices` fails there as
`gram --backend cuda` and `matmul --devices` do (exit 1, not bad input: docs/cli.md, "Exit
status"), in one line naming the list, and leaves no output; on a machine with GPUs a device
past their count is bad input (exit 2)."""
import json

import numpy as np
import pytest

from conftest import run


@pytest.fixture
def inputs(tmp_path):
    rng = np.random.default_rng(9)
    np.save(tmp_path / "a.npy", (rng.random((20, 50)) < 0.3).astype(np.uint8))
    np.save(tmp_path / "f.npy", rng.standard_normal((6, 6)))
    return tmp_path


def gpu_count():
    return len(json.loads(run("devices", "--json").stdout)["gpus"])


@pytest.mark.parametrize("devices, token", [("0", '"0"'), ("all", '"all"'), ("0:2", '"0"')])
def test_devices_without_a_gpu_fail_as_backend_cuda_does(inputs, devices, token):
    if gpu_count():
        pytest.skip("a GPU is usable here")
    out = inputs / "c.npy"
    cuda = run("gram", inputs / "a.npy", "--backend", "cuda", "-o", out, check=False)
    for extra in ([], ["--backend", "cuda"]):
        proc = run("gram", inputs / "a.npy", "--devices", devices, *extra, "-o", out, check=False)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == cuda.returncode == 1, proc.stderr
        assert len(lines) == 1 and lines[0].startswith("outcore: devices: ") and token in lines[0], proc.stderr
        assert not out.exists()
    if devices != "0:2":  # matmul does not split devices
        proc = run("matmul", inputs / "f.npy", inputs / "f.npy", "--devices", devices, "-o", inputs / "m.npy",
                   check=False)
        assert proc.returncode == 1 and not (inputs / "m.npy").exists(), proc.stderr


def test_a_device_past_the_count_is_bad_input(inputs):
    count = gpu_count()
    if not count:
        pytest.skip("no usable GPU here")
    out = inputs / "c.npy"
    proc = run("gram", inputs / "a.npy", "--devices", str(count), "-o", out, check=False)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not out.exists()


def test_backend_cuda_without_a_gpu_says_why_and_what_to_do(inputs):
    """gram, matmul and map asked for --backend cuda where no GPU can run them: one line (exit
    1, no output) that says why, then what to run instead, in the same words for the three."""
    if gpu_count():
        pytest.skip("a GPU is usable here")
    a, f, out = inputs / "a.npy", inputs / "f.npy", inputs / "c.npy"
    for args in (["gram", a], ["matmul", f, f], ["matmul", f, "--gram"], ["map", "a + 1", f"a={f}"]):
        proc = run(*args, "--backend", "cuda", "-o", out, check=False)
        lines = proc.stderr.splitlines()
        assert proc.returncode == 1 and len(lines) == 1 and not out.exists(), (args, proc.stderr)
        head, tail = "outcore: backend cuda: ", "; use --backend cpu (or auto)"
        assert lines[0].startswith(head) and lines[0].endswith(tail), (args, proc.stderr)
        assert len(lines[0]) > len(head + tail) + 10, (args, proc.stderr)  # the reason between them
