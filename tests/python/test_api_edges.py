"""What the library refuses reaches Python as the CLI sees it: devices that the build or
machine cannot give are UnsupportedError (as backend="cuda" is there); files whose headers
declare different columns are refused before either is read, naming both."""
import numpy as np
import pytest

import outcore


@pytest.fixture
def a():
    return (np.random.default_rng(4).random((12, 30)) < 0.3).astype(np.uint8)


def _gpu_usable(a):
    try:
        outcore.gram(a, backend="cuda")
        return True
    except outcore.UnsupportedError:
        return False


@pytest.mark.parametrize("devices", ["0", "all", [0]])
def test_devices_without_a_gpu_are_unsupported(a, devices):
    if _gpu_usable(a):
        pytest.skip("a GPU is usable here")
    with pytest.raises(outcore.UnsupportedError, match="devices: "):
        outcore.gram(a, devices=devices)


def test_files_of_different_columns_are_refused_before_reading(tmp_path):
    # big.npy holds a 2 in its last row: reading it would fail on that first.
    big = np.ones((300, 512), np.uint8)
    big[-1, -1] = 2
    np.save(tmp_path / "big.npy", big)
    np.save(tmp_path / "b40.npy", np.ones((20, 40), np.uint8))
    with pytest.raises(outcore.InputError, match="b40.npy has 40 columns but .*big.npy has 512: A and B must"):
        outcore.gram(tmp_path / "big.npy", tmp_path / "b40.npy", out=tmp_path / "C.npy")
    assert not (tmp_path / "C.npy").exists()
