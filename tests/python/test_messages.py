"""Library messages seen from Python name the options by the binding's keywords: "raise
host_mem", not "raise --host-mem". A message that gives the Python spelling itself, a file
name that looks like an option and an expression echoed by a syntax error keep their text."""
import numpy as np
import pytest

import outcore
from outcore.errors import python_spelling


def test_options_named_by_their_keyword():
    with pytest.raises(outcore.InputError) as e:
        outcore.matmul(np.ones((300, 300)), None, host_mem="1K", backend="cpu")
    assert "raise host_mem" in str(e.value) and "--" not in str(e.value), e.value
    with pytest.raises(outcore.InputError) as e:
        outcore.matmul(np.ones((3, 3), np.int64), np.ones((3, 3), np.int64))
    assert "ask for dtype float64" in str(e.value), e.value


def test_a_field_named_beside_its_option_is_named_once():
    with pytest.raises(outcore.InputError) as e:
        outcore.matmul(np.ones((3, 3)), transpose_b=True)
    text = str(e.value)
    assert "drop transpose_b;" in text and "transpose_a gives" in text and "--" not in text, text
    assert python_spelling("host_mem_bytes (--host-mem)") == "host_mem_bytes (host_mem)"


def test_what_is_not_an_option_is_kept():
    assert python_spelling("x: --bits M (Python: bits=M)") == "x: --bits M (Python: bits=M)"
    assert python_spelling("--dtype.npy: no such file") == "--dtype.npy: no such file"
    assert python_spelling("a--dtype b") == "a--dtype b"
    assert python_spelling("use --backend cpu (or auto); raise --gpu-mem") == \
        "use backend cpu (or auto); raise gpu_mem"
    assert python_spelling("syntax error at column 3: 'a --dtype'") == "syntax error at column 3: 'a --dtype'"
    assert python_spelling("--plan and --no-such-option") == "--plan and --no-such-option"


def test_a_map_expression_is_echoed_as_written(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(4.0))
    with pytest.raises(outcore.InputError) as e:
        outcore.map("a + --", a=tmp_path / "a.npy")
    assert "--" in str(e.value), e.value
