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


def _masked(values, hide):
    return np.ma.masked_array(values, mask=np.eye(*values.shape, dtype=bool) if hide else False)


@pytest.mark.parametrize("call", ["gram", "matmul", "map"])
def test_masked_arrays_hiding_values_are_refused(a, call):
    """np.asarray reads the values under a mask: a result from them is not the one asked for.
    A masked array that hides nothing is its data."""
    x = _masked(a.astype(np.float64), hide=True)
    run = {"gram": lambda v: outcore.gram(v, backend="cpu"),
           "matmul": lambda v: outcore.matmul(v, v.T if not isinstance(v, np.ma.MaskedArray) else v.data.T,
                                              backend="cpu"),
           "map": lambda v: outcore.map("x * 2", x=v, backend="cpu")}[call]
    with pytest.raises(outcore.InputError, match=r"a masked array with 12 masked values; .*x\.filled\(value\)"):
        run(x)
    plain = run(a.astype(np.float64))
    np.testing.assert_array_equal(run(_masked(a.astype(np.float64), hide=False)), plain)


def test_masked_arrays_hiding_values_are_refused_by_stream():
    x = _masked(np.ones((12, 30)), hide=True)
    with pytest.raises(outcore.InputError, match="input x: a masked array with 12 masked values"):
        outcore.stream(lambda chunk: None, inputs={"x": x})
