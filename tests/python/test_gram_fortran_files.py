"""outcore.gram on paths of Fortran-order .npy files: read by the library in place, as the CLI
reads them (tests/cli/test_gram_fortran.py), to the results and errors of the C-order file."""
import numpy as np
import pytest

import outcore
from outcore import InputError


def save_both(tmp_path, x):
    (tmp_path / "c").mkdir()
    (tmp_path / "f").mkdir()
    np.save(tmp_path / "c" / "A.npy", x)
    np.save(tmp_path / "f" / "A.npy", np.asfortranarray(x))
    return tmp_path / "c" / "A.npy", tmp_path / "f" / "A.npy"


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float32"])
def test_paths_in_both_orders_give_one_result(tmp_path, dtype):
    x = (np.random.default_rng(4).random((90, 150)) < 0.3).astype(dtype)
    c, f = save_both(tmp_path, x)
    np.testing.assert_array_equal(outcore.gram(f, backend="cpu"), outcore.gram(c, backend="cpu"))
    np.testing.assert_array_equal(outcore.gram(f, backend="cpu"), x.astype(np.int64) @ x.T.astype(np.int64))
    for got, want in zip(outcore.gram(f, metric="jaccard", topk=4, backend="cpu"),
                         outcore.gram(c, metric="jaccard", topk=4, backend="cpu")):
        np.testing.assert_array_equal(got, want)


def test_packbits_path_with_bits(tmp_path):
    x = np.random.default_rng(6).random((70, 101)) < 0.5
    c, f = save_both(tmp_path, np.packbits(x, axis=1))
    np.testing.assert_array_equal(outcore.gram(f, bits=101, backend="cpu"), outcore.gram(c, bits=101, backend="cpu"))


def test_errors_read_the_same(tmp_path):
    x = (np.random.default_rng(8).random((90, 150)) < 0.3).astype(np.uint8)
    x[50, 120] = 2
    x[50, 7] = 3
    x[80, 0] = 4
    c, f = save_both(tmp_path, x)
    messages = []
    for path in (c, f):
        with pytest.raises(InputError) as err:
            outcore.gram(path, backend="cpu")
        messages.append(str(err.value).replace(str(path), "A.npy"))
    assert messages[0] == messages[1] and "row 50, column 7" in messages[0], messages
