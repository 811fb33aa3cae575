"""outcore.gram(devices=...) and per-device gpu_mem: passed to the library, whose one parser
names the bad token; devices with the cpu backend is an error; a per-device budget leaves a
CPU job's result alone. outcore.matmul(device=N) as the CLI's --device and gram's device=."""
import os
import subprocess

import numpy as np
import pytest

import outcore


@pytest.fixture
def a():
    return (np.random.default_rng(5).random((30, 70)) < 0.3).astype(np.uint8)


def test_devices_with_the_cpu_backend_is_an_error(a):
    with pytest.raises(outcore.InputError, match='"0:2".*cpu backend'):
        outcore.gram(a, devices="0:2", backend="cpu")


@pytest.mark.parametrize("devices, token", [("0,x", '"x"'), ([0, "0:0"], '"0:0"'), (["1", 1], '"1"')])
def test_bad_devices_name_the_token(a, devices, token):
    with pytest.raises(outcore.InputError, match=token):
        outcore.gram(a, devices=devices, backend="cuda")


def test_devices_must_be_a_list_or_text(a):
    with pytest.raises(outcore.InputError, match="devices must"):
        outcore.gram(a, devices=3.5)


def test_per_device_budget(a):
    expected = a.astype(np.int32) @ a.T.astype(np.int32)
    for gpu_mem in ({0: "2G"}, "0=2G"):
        assert np.array_equal(outcore.gram(a, gpu_mem=gpu_mem, backend="cpu"), expected)
    with pytest.raises(outcore.InputError, match='"0=2Q"'):
        outcore.gram(a, gpu_mem="0=2Q", backend="cuda")


def _cli(*args):
    return subprocess.run([os.environ["OUTCORE_BIN"], *map(str, args)], capture_output=True, text=True)


@pytest.mark.skipif(not os.environ.get("OUTCORE_BIN"), reason="OUTCORE_BIN is not set")
def test_matmul_device_is_the_clis(tmp_path):
    """device= is checked as gram's; on the CPU it changes nothing, where the CLI warns and runs
    too; backend="cuda" without a GPU is refused as the CLI refuses it."""
    x = np.arange(12.0).reshape(3, 4)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "xt.npy", x.T)
    placed = [dict(backend="cpu")] + ([dict()] if not outcore.cuda_device_count() else [])
    for kwargs in placed:
        assert np.array_equal(outcore.matmul(x, x.T, device=1, **kwargs), x @ x.T)
        cli = _cli("matmul", tmp_path / "x.npy", tmp_path / "xt.npy", "-o", tmp_path / "c.npy", "--device", "1",
                   *sum((["--" + k, v] for k, v in kwargs.items()), []))
        assert cli.returncode == 0 and "warning: --device 1 has no effect" in cli.stderr, cli.stderr
    for bad, message in ((-1, "device must be at least 0"), (True, "device must be an integer, not a bool"),
                         (1.5, "device must be an integer")):
        for call in (outcore.gram, outcore.matmul):
            with pytest.raises(outcore.InputError, match=message):
                call(np.eye(3, dtype=bool), device=bad, backend="cpu")
    assert _cli("matmul", tmp_path / "x.npy", tmp_path / "xt.npy", "--device", "-1").returncode == 2
    if not outcore.cuda_device_count():
        with pytest.raises(outcore.UnsupportedError) as e:
            outcore.matmul(x, x.T, device=2, backend="cuda")
        cli = _cli("matmul", tmp_path / "x.npy", tmp_path / "xt.npy", "-o", tmp_path / "c.npy", "--device", "2",
                   "--backend", "cuda")
        assert cli.returncode == 1 and cli.stderr.startswith("outcore: " + str(e.value).split(";")[0] + ";"), \
            (cli.stderr, e.value)


def test_matmul_device_reaches_the_library(monkeypatch):
    """The device the library is given: the call's, else its Context's, else 0 (on a GPU the
    job runs there; on this CPU only the option struct can show it)."""
    from outcore import _lib
    seen = []

    def oc_matmul(ctx, a, b, c, opts, stats):
        seen.append(opts._obj.device)
        return _lib.OC_OK

    monkeypatch.setattr(_lib.lib, "oc_matmul", oc_matmul)
    x = np.ones((2, 2))
    outcore.matmul(x, x, backend="cpu")
    outcore.matmul(x, x, backend="cpu", device=3)
    with outcore.Context(device=2) as ctx:
        outcore.matmul(x, x, backend="cpu", context=ctx)
        outcore.matmul(x, x, backend="cpu", context=ctx, device=1)
    assert seen == [0, 3, 2, 1]
