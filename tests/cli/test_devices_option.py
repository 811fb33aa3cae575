"""`--devices` and per-device `--gpu-mem`: bad specs fail with one line naming the bad token
and leave no output; `--device`, `--devices` and `--gpu-mem` read alike in every command; `--devices` with the cpu backend is an error; a per-device budget
leaves a CPU job's result alone. (Results on split devices: tests/gpu/test_cuda_cases.c.)"""
import numpy as np
import pytest

from conftest import reference, run


@pytest.fixture
def a_npy(tmp_path, rng):
    a = (rng.random((40, 90)) < 0.3).astype(np.uint8)
    path = tmp_path / "a.npy"
    np.save(path, a)
    return a, path


BAD_SPECS = [
    (["--devices", "0:2", "--backend", "cpu"], '"0:2"'),
    (["--devices", "0,x"], '"x"'),
    (["--devices", "0:0"], '"0:0"'),
    (["--devices", "0:9"], '"0:9"'),
    (["--devices", "1,1"], '"1"'),
]
# Per-device budgets: gram's alone (matmul has one --gpu-mem for every device).
BAD_BUDGETS = [
    (["--devices", "0", "--gpu-mem", "0=lots"], '"0=lots"'),
    (["--devices", "0", "--gpu-mem", "zz=2G"], '"zz=2G"'),
]


@pytest.mark.parametrize("command, args, token", [("gram", *c) for c in BAD_SPECS + BAD_BUDGETS] +
                         [("matmul", *c) for c in BAD_SPECS])
def test_bad_device_specs_name_the_token(tmp_path, a_npy, command, args, token):
    """gram and matmul read a device list with one parser."""
    out = tmp_path / "c.npy"
    head = ["gram", a_npy[1]] if command == "gram" else ["matmul", a_npy[1], "--gram"]
    proc = run(*head, "-o", out, *args, check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    # Syntax first: the bad token is named whether or not the machine has the devices.
    assert len(lines) == 1 and token in lines[0], proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("command", ["gram", "matmul", "map"])
@pytest.mark.parametrize("option, value, message", [
    ("--device", "1024", "--device 1024: expected a device index from 0 to 1023"),
    ("--device", "-1", "--device -1: expected a device index from 0 to 1023"),
    ("--devices", "", "--devices: an empty list"),
    ("--gpu-mem", "5X", "--gpu-mem 5X: expected a size such as 2G or 512M"),
])
def test_device_options_read_alike(tmp_path, a_npy, command, option, value, message):
    """Every command that takes an option reads it with one parser: one message, exit 2."""
    out = tmp_path / "c.npy"
    args = {"gram": ["gram", a_npy[1]], "matmul": ["matmul", a_npy[1], "--gram"],
            "map": ["map", "a * 2", f"a={a_npy[1]}"]}[command]
    proc = run(*args, option, value, "-o", out, check=False)
    if command == "map" and option != "--gpu-mem":  # map runs on device 0 alone
        assert proc.returncode == 2 and "unknown option" in proc.stderr, proc.stderr
        return
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"outcore: {message}"), proc.stderr
    assert not out.exists()


def test_per_device_budget_leaves_a_cpu_job_alone(tmp_path, a_npy):
    a, path = a_npy
    out = tmp_path / "c.npy"
    run("gram", path, "-o", out, "--backend", "cpu", "--gpu-mem", "0=2G")
    assert np.array_equal(np.load(out), reference(a))
