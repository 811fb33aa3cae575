"""Library messages seen from Python name the options by the binding's keywords: "raise
host_mem", not "raise --host-mem". A message that gives the Python spelling itself, a file
name that looks like an option and an expression echoed by a syntax error keep their text.
An error of the binding's own checks carries the status the library gives its kind."""
import os
import re
from pathlib import Path

import numpy as np
import pytest

import outcore
from outcore.errors import keywords, python_spelling

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2]))

# The "--name"s the library's string literals hold that are no option of a Python call, and why.
CLI_ONLY = {
    "set": "map's scalars are keyword operands; the binding writes their values itself",
    "gpu-mem-fraction": "a line of matmul's journal, shown to the user as a --gpu-mem percentage",
    "gpu-architecture": "an option of NVRTC, which map's GPU backend passes to it",
    "std": "an option of NVRTC, which map's GPU backend passes to it",
    "version": "an option of ptxas, which inspect runs to read its release",
    "top": "a decrement in the CUDA source map generates (st_v[--top])",
}


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
        'use backend="cpu" (or "auto"); raise gpu_mem'
    assert python_spelling("syntax error at column 3: 'a --dtype'") == "syntax error at column 3: 'a --dtype'"
    assert python_spelling("--json and --no-such-option") == "--json and --no-such-option"


def test_tile_and_gpu_mem_mode_are_named_by_their_keyword():
    A = (np.random.default_rng(0).random((2000, 512)) < 0.3).astype(np.uint8)
    with pytest.raises(outcore.InputError) as e:
        outcore.gram(A, tile=1024, host_mem="1M", backend="cpu", threads=2)
    assert "give a smaller tile" in str(e.value) and "--" not in str(e.value), e.value
    assert python_spelling("grow with --gpu-mem-mode reserve") == "grow with gpu_mem_mode reserve"


def _string_literals(text):
    """The string literals of C source text, comments and character literals skipped."""
    token = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', re.S)
    return [m.group(0) for m in token.finditer(text) if m.group(0).startswith('"')]


def test_every_option_a_library_message_names_has_a_python_spelling():
    """Each "--name" in a string literal of src/ is the keyword of a public function (the
    table python_spelling reads), or is on CLI_ONLY with the reason; a name ending in "-" is
    completed by a format ("--transpose-%c") and must start a keyword's option."""
    option = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)(?![\w.-])")
    named = {}
    for path in sorted((SOURCE_DIR / "src").rglob("*")):
        if path.suffix in (".c", ".h", ".cu", ".cuh"):
            for literal in _string_literals(path.read_text(encoding="utf-8")):
                for name in option.findall(literal):
                    named.setdefault(name, path.relative_to(SOURCE_DIR))
    assert "tile" in named and "gpu-mem-mode" in named, sorted(named)  # the scan finds what it must
    table = keywords()
    missing = {name: str(path) for name, path in named.items()
               if name not in CLI_ONLY and name not in table
               and not (name.endswith("-") and any(k.startswith(name) for k in table))}
    assert not missing, f"options without a Python keyword: {missing}"
    for name in named.keys() & table.keys():
        assert python_spelling(f"raise --{name}") == f"raise {table[name]}"
    assert not CLI_ONLY.keys() & table.keys(), "an option on CLI_ONLY has a keyword now"


def test_no_gpu_names_the_backend_keyword_to_pass():
    """backend="cuda" where no GPU can run the job: the reason, then what to pass instead, as
    the binding's callers spell it."""
    if outcore.cuda_device_count():
        pytest.skip("a GPU is usable here")
    x = np.ones((4, 4))
    for call in (lambda: outcore.gram(np.eye(4, dtype=bool), backend="cuda"),
                 lambda: outcore.matmul(x, x, backend="cuda"),
                 lambda: outcore.map("a + 1", a=x, backend="cuda")):
        with pytest.raises(outcore.UnsupportedError) as e:
            call()
        text = str(e.value)
        assert text.startswith("backend cuda: ") and text.endswith('; use backend="cpu" (or "auto")'), text
        assert "--" not in text, text


def test_a_map_expression_is_echoed_as_written(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(4.0))
    with pytest.raises(outcore.InputError) as e:
        outcore.map("a + --", a=tmp_path / "a.npy")
    assert "--" in str(e.value), e.value


def test_the_bindings_own_errors_carry_the_librarys_status():
    """An InputError found by a check in Python has the status and status_name of one the
    library's argument checks raise; each class names its own status when none is given."""
    with pytest.raises(outcore.InputError) as library:
        outcore.gram(np.eye(3, dtype=bool), metric="jaccard", threshold=2.0)  # refused by the library
    assert library.value.status == 1 and library.value.status_name == "invalid argument"
    for call in (lambda: outcore.gram(np.eye(3), metric="nope"),
                 lambda: outcore.map("x", x=np.ones(3), reduce="avg"),
                 lambda: outcore.Context(host_mem="zz")):
        with pytest.raises(outcore.InputError) as own:
            call()
        assert (own.value.status, own.value.status_name) == (library.value.status, library.value.status_name)
    for cls, name in ((outcore.InputError, "invalid argument"), (outcore.OutOfMemoryError, "out of host memory"),
                      (outcore.DeviceError, "device error"), (outcore.UnsupportedError, "unsupported"),
                      (outcore.CancelledError, "cancelled"), (outcore.IOFailure, "i/o error"),
                      (outcore.InternalError, "internal error")):
        err = cls("a message")
        assert err.status is not None and err.status_name == name, (cls, err.status, err.status_name)
        assert cls("a message", 2).status_name == "bad input"  # a given status wins


def test_a_refused_out_array_is_told_what_is_wrong():
    """An out= array that cannot take the result is told the one thing that is wrong, by gram,
    map and matmul alike: a byte order other than the machine's (the array looked right by
    dtype name), read-only, the shape, the layout; where one message covered them all."""
    a = np.ones((6, 4))
    calls = {"map": (lambda out: outcore.map("x * 2", x=np.ones((6, 6)), out=out, host_mem="64M"), np.float64),
             "matmul": (lambda out: outcore.matmul(a, a.T, out=out, host_mem="64M"), np.float64),
             "gram": (lambda out: outcore.gram(np.eye(6, dtype=np.uint8), out=out, host_mem="64M"), np.int32)}
    for name, (call, dtype) in calls.items():
        swapped = np.empty((6, 6), np.dtype(dtype).newbyteorder("S"))
        read_only = np.empty((6, 6), dtype)
        read_only.flags.writeable = False
        cases = [(swapped, "which is not in this machine's byte order"),
                 (read_only, "^out is read-only$"),
                 (np.empty((6, 5), dtype), r"^out has shape \(6, 5\); the result's is \(6, 6\)"),
                 (np.empty((6, 12), dtype)[:, ::2], "contiguous")]
        for out, message in cases:
            with pytest.raises(outcore.InputError, match=message) as e:
                call(out)
            assert "\n" not in e.value.message, (name, e.value.message)
    with pytest.raises(outcore.InputError, match=r"^out: expected a numpy array of float64 of shape \(6, 6\)"):
        outcore.map("x * 2", x=np.ones((6, 6)), out=[[0.0] * 6] * 6, host_mem="64M")


def test_a_map_operand_name_is_told_as_written():
    """A keyword operand of map that is no valid name is named as the caller wrote it, with
    neither the CLI's --set nor a position."""
    for value in (2, np.ones(3)):
        with pytest.raises(outcore.InputError) as e:
            outcore.map("x + 1", x=np.ones(3), host_mem="64M", **{"a-b": value})
        assert e.value.message.startswith("'a-b' is not a valid name for "), e.value.message
        assert "--set" not in e.value.message and "input 1" not in e.value.message, e.value.message
