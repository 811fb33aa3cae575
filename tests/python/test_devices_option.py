"""outcore.gram(devices=...) and per-device gpu_mem: passed to the library, whose one parser
names the bad token; devices with the cpu backend is an error; a per-device budget leaves a
CPU job's result alone."""
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
