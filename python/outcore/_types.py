"""The types the binding's annotations name (PEP 484; the package ships py.typed).

The modules import this one under typing.TYPE_CHECKING only, and their annotations are
strings (from __future__ import annotations): nothing here runs when outcore is imported,
so numpy.typing is needed by a type checker only.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence, Union

import numpy as np
import numpy.typing as npt


class SparseMatrix(Protocol):
    """What the binding reads of a scipy.sparse matrix (scipy is not a dependency)."""

    shape: Any
    nnz: int

    def tocsr(self) -> Any: ...


# A file path, as the library and numpy open one.
Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
# A Gram input: an array (or nested lists) of 0/1 numbers or packbits rows, a scipy.sparse
# matrix, or the path of a file the library reads.
Matrix = Union[npt.ArrayLike, SparseMatrix, Path]
# A yes/no argument: a bool, numpy's bool, or the ints 0 and 1 (what flag() takes).
Flag = Union[bool, int, "np.bool_"]
# A whole number: a Python int or a numpy integer (operator.index takes both).
Integer = Union[int, "np.integer[Any]"]
# A number: a Python float or int, or a numpy floating or integer scalar.
Real = Union[float, int, "np.floating[Any]", "np.integer[Any]"]
# A budget: bytes as an int, or text such as "2G", "512MiB", "50%".
Size = Union[int, "np.integer[Any]", str]
# A device budget: one Size, or one per device ({0: "20G", 1: "40G"} or "0=20G,1=40G").
GpuMem = Union[Size, Mapping[int, Size]]
# Several CUDA devices: "0,1,3", "all", "0:2", or a sequence such as [0, 1] or ["0:2"].
Devices = Union[str, Sequence[Union[int, str]]]
# The library's lists as literals, for type checkers: tests/python/test_name_lists.py compares
# each with the library's (oc_metric_name, oc_backend_name, oc_algorithm_name, oc_map_reduce_name,
# oc_gpu_mem_mode_name).
Metric = Literal["counts", "jaccard", "cosine", "hamming"]
Backend = Literal["auto", "cpu", "cuda"]
Algorithm = Literal["auto", "dense", "sparse"]
Reduction = Literal["sum", "mean", "min", "max"]
GpuMemMode = Literal["grow", "reserve"]
Plan = Union[Flag, Literal["json"]]  # plan=: True the text of --plan, "json" its object as a dict
# progress(done, total), both in the job's unit; what it returns is ignored.
Progress = Callable[[float, float], object]
