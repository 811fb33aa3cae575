"""outcore.metrics(), outcore.output_formats(), outcore.map_functions(), map's reductions,
matmul's dtypes, map's and gram's dtype codes and the type hints: the library's lists, through
ctypes, equal to what the CLI lists and accepts (tests/cli/test_name_lists.py)."""
import os
import subprocess

import numpy as np
import pytest

import outcore


def cli_list(what):
    cli = os.environ.get("OUTCORE_BIN")
    if not cli:
        pytest.skip("OUTCORE_BIN is not set")
    return subprocess.run([cli, "--list", what], capture_output=True, text=True, check=True).stdout.split("\n")[:-1]


def test_metrics_are_the_clis():
    assert outcore.metrics() == cli_list("metrics")


def test_output_formats_are_the_clis(tmp_path):
    assert outcore.output_formats() == cli_list("output-formats")
    # A dense format refused for a top-k result, with the formats that hold one.
    a = np.zeros((2, 8), dtype=bool)
    for dense in cli_list("dense-formats"):
        with pytest.raises(outcore.InputError) as err:
            outcore.gram(a, topk=1, out=tmp_path / f"o.{dense}")
        selection = [f for f in cli_list("output-formats") if f in cli_list("topk-formats") + cli_list("threshold-formats")]
        assert str(err.value).endswith(", ".join("." + f for f in selection[:-1]) + " or ." + selection[-1])


def test_option_messages_list_the_clis_names():
    a = np.zeros((2, 8), dtype=bool)
    for what, kwargs in (("dtypes", {"dtype": "int7"}), ("backends", {"backend": "tpu"}),
                         ("algorithms", {"algorithm": "magic"})):
        with pytest.raises(outcore.InputError, match="expected one of " + ", ".join(cli_list(what)) + "$"):
            outcore.gram(a, **kwargs)


def test_the_dtype_message_follows_the_library():
    a = np.zeros((2, 8), dtype=bool)
    with pytest.raises(outcore.InputError) as err:
        outcore.gram(a, metric="jaccard", dtype="int32")
    assert str(err.value) == ("dtype int32 does not hold metric jaccard (counts and hamming: int32 or uint16; "
                              "jaccard and cosine: float32)")
    # A dtype that comes from out= is named as the array's.
    with pytest.raises(outcore.InputError) as err:
        outcore.gram(a, out=np.zeros((2, 2), np.float32))
    assert str(err.value) == ("out has dtype float32, which does not hold metric counts (counts and hamming: int32 "
                              "or uint16; jaccard and cosine: float32)")


def test_map_functions_are_the_clis():
    assert outcore.map_functions() == cli_list("map-functions")


def test_every_metric_runs():
    a = np.array([[1, 0, 1, 1], [0, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    for metric in outcore.metrics():
        assert outcore.gram(a, metric=metric, backend="cpu").shape == (3, 3)
    with pytest.raises(outcore.InputError, match="expected one of " + ", ".join(outcore.metrics())):
        outcore.gram(a, metric="dice")


def test_every_map_function_is_known():
    with pytest.raises(outcore.InputError, match=r"known: " + " ".join(outcore.map_functions()) + r"\)"):
        outcore.map("nosuch(a)", a=np.zeros(3))


def test_type_hints_are_the_librarys_lists():
    # The literals type checkers read (outcore._types) name what the library takes, no more
    # and no fewer (tests/cli/test_table_sites.py allows no other copy).
    from typing import get_args

    from outcore import _lib, _types
    lib = _lib.lib
    assert list(get_args(_types.Metric)) == _lib.names(lib.oc_metric_name)
    assert list(get_args(_types.Backend)) == _lib.names(lib.oc_backend_name)
    assert list(get_args(_types.Algorithm)) == _lib.names(lib.oc_algorithm_name)
    assert list(get_args(_types.Reduction)) == _lib.names(lib.oc_map_reduce_name)[1:]  # 0 is "none": reduce=None
    assert list(get_args(_types.Reduction)) == cli_list("map-reductions")
    assert list(get_args(_types.GpuMemMode)) == _lib.names(lib.oc_gpu_mem_mode_name) == cli_list("gpu-mem-modes")
    # outcore.map's docstring names them too.
    assert "{" + ", ".join(f'"{r}"' for r in get_args(_types.Reduction)) + "}" in outcore.map.__doc__


def test_map_and_matmul_read_the_librarys_lists():
    from outcore import _lib
    for reduce in cli_list("map-reductions"):
        assert float(outcore.map("a", a=np.arange(4.0), reduce=reduce)) == getattr(np, reduce)(np.arange(4.0))
    with pytest.raises(outcore.InputError, match="expected " + ", ".join(cli_list("map-reductions")[:-1]) + " or "):
        outcore.map("a", a=np.arange(4.0), reduce="prod")
    with pytest.raises(outcore.InputError, match="expected one of " + ", ".join(cli_list("backends")) + "$"):
        outcore.map("a", a=np.arange(4.0), backend="tpu")
    codes = range(len(_lib.MATMUL_DTYPES) + 1)
    assert _lib.MATMUL_DTYPES == [_lib.text(_lib.lib.oc_matmul_dtype_name(i)) for i in codes][:-1]
    assert _lib.lib.oc_matmul_dtype_name(len(_lib.MATMUL_DTYPES)) is None
    # What --dtype takes is what the binding takes and a .npy file holds.
    assert _lib.matmul_dtypes(_lib.OC_MATMUL_DTYPE_RESULT | _lib.OC_MATMUL_DTYPE_NPY) == cli_list("matmul-dtypes")
    a = np.ones((2, 3), dtype=bool)
    for dtype in cli_list("matmul-dtypes"):
        assert outcore.matmul(a, a.T, dtype=dtype).dtype == np.dtype(dtype)


def test_the_dtype_codes_are_the_librarys():
    """map's and gram's numpy dtypes stand at the codes the library names them by
    (oc_map_dtype_name, oc_dtype_name), every code but gram's default included, so a code
    cannot name one dtype in C and another in Python."""
    from outcore import _gram, _lib, _map
    lib = _lib.lib
    map_names = _lib.names(lib.oc_map_dtype_name)
    assert [dt.name for dt in _map._DTYPES] == map_names
    assert all(_map._CODES[np.dtype(name)] == code for code, name in enumerate(map_names))
    gram_names = _lib.names(lib.oc_dtype_name)
    assert {code: dt.name for code, dt in _gram._NUMPY_DTYPES.items()} == \
        {code: name for code, name in enumerate(gram_names) if code != _lib.OC_DTYPE_DEFAULT}
    # What the library computes in a dtype comes back in it.
    x = np.arange(6).reshape(2, 3)
    for name in map_names:
        assert outcore.map("a", a=x.astype(name), backend="cpu").dtype == np.dtype(name)
    a = np.array([[1, 0, 1], [0, 1, 1]], dtype=bool)
    for name in ("int32", "uint16"):
        assert outcore.gram(a, dtype=name, backend="cpu").dtype == np.dtype(name)
    assert outcore.gram(a, metric="jaccard", dtype="float32", backend="cpu").dtype == np.float32
