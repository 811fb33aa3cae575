"""outcore.stream without a GPU: the arrays it is given become the C spec the library checks
(bad shapes, roles and options are refused with one-line errors before any device work); a
valid call on a build or machine without CUDA says so; an output file is not left behind by a
failed call. The GPU behaviour is tests/python/test_stream_numba.py's."""
import numpy as np
import pytest

import outcore
from outcore import InputError, UnsupportedError


def nothing(chunk):
    raise AssertionError("no chunk may be launched here")


def test_chunked_arrays_must_agree():
    x = np.zeros((10, 3))
    with pytest.raises(InputError, match="'y' has 6 rows along its chunk axis 0 but 'x' has 10"):
        outcore.stream(nothing, inputs={"x": x}, outputs={"y": ((6, 3), np.float64)})


def test_axis_out_of_range():
    with pytest.raises(InputError, match="chunk axis 2 outside its 2 dimensions"):
        outcore.stream(nothing, inputs={"x": np.zeros((4, 4))}, axis=2)


def test_side_alone_cannot_be_cut():
    with pytest.raises(InputError, match="no chunked array"):
        outcore.stream(nothing, side={"k": np.zeros(3)})
    with pytest.raises(InputError, match="extent 5 differs from the 3 rows of 'x'"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, extent=5)


def test_bad_arguments():
    with pytest.raises(InputError, match="callable"):
        outcore.stream(None, inputs={"x": np.zeros(3)})
    with pytest.raises(InputError, match="named twice"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, outputs={"x": ((3,), np.float64)})
    with pytest.raises(InputError, match="in_flight"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, in_flight=1)
    with pytest.raises(InputError, match="output y"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, outputs={"y": 3})
    with pytest.raises(InputError, match="writeable C-contiguous"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, outputs={"y": np.zeros((3, 2))[:, 0]})
    with pytest.raises(InputError, match="result s must be an array"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, result={"s": ((2,), np.float64)})
    with pytest.raises(InputError, match="scratch t"):
        outcore.stream(nothing, inputs={"x": np.zeros(3)}, scratch={"t": 5})


def test_without_cuda_or_gpu(tmp_path):
    if outcore.cuda_device_count() > 0:
        pytest.skip("a GPU is usable here: tests/python/test_stream_numba.py runs the job")
    out = tmp_path / "y.npy"
    with pytest.raises(UnsupportedError):
        outcore.stream(nothing, inputs={"x": np.zeros((5, 2))}, outputs={"y": (out, (5, 2), np.float64)},
                       scratch={"t": ((5,), np.float32)}, side={"k": np.ones(2)})
    assert list(tmp_path.iterdir()) == []  # neither the output nor its temporary name


def test_device_array_interface():
    a = outcore._stream.DeviceArray((4, 3), np.float32, 0x1000, 7)
    cai = a.__cuda_array_interface__
    assert cai == {"shape": (4, 3), "typestr": "<f4", "data": (0x1000, False), "version": 3, "strides": None,
                   "stream": 7}
    assert a.size == 12
