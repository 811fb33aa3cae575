"""outcore.explain: where and how outcore.gram would run a job, and why, without running it.

The library's cost model (docs/cost-model.md) predicts the job's time on the CPU and on the
GPU from this machine's measured rates; the text is what `outcore gram --explain` prints.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

from . import _lib
from ._gram import _checked_arguments, _describe, _plan_text, _planned_output
from ._options import flag
from ._tools import _function
from .errors import InputError

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ._context import Context
    from ._types import (Algorithm, Backend, Devices, Flag, GpuMem, GpuMemMode, Integer, Matrix, Metric, Path, Progress,
                         Real, Size)

_ctx_p = ctypes.c_void_p
_out_p = ctypes.POINTER(ctypes.c_void_p)


# gram's parameters, in gram's order (a test compares the signatures), then dense_output.
def explain(A: Matrix, B: Matrix | None = None, metric: Metric = "counts", topk: Integer | None = None,
            threshold: Real | None = None, dtype: DTypeLike | None = None, backend: Backend | None = None,
            gpu_mem: GpuMem | None = None, threads: Integer | None = None, out: Path | np.ndarray | None = None,
            bits: Integer | None = None, progress: Progress | None = None, binarize: Flag = False, *,
            device: Integer | None = None, host_mem: Size | None = None, context: Context | None = None,
            algorithm: Algorithm = "auto", resume: Flag = False, devices: Devices | None = None,
            min_score: Real | None = None, stats: dict | None = None, tile: Integer | None = None,
            gpu_mem_mode: GpuMemMode = "grow", plan: Flag = False, dense_output: Flag = True) -> str:
    """The prediction behind gram(A, B, ...) with the same arguments, without running it.

    Nothing is computed; the first call or job on a machine whose rate cache lacks the host's
    rates measures them (a fraction of a second) and stores them (docs/cost-model.md). Every
    argument of gram is taken and checked as gram checks it; those that do not change the
    prediction (progress, resume, stats) are then ignored.

    Parameters
    ----------
    A, B : array_like, scipy.sparse matrix or path
        The inputs, as outcore.gram takes them.
    metric : {"counts", "jaccard", "cosine", "hamming"}, default "counts"
        As outcore.gram.
    topk : int, optional
        Explains a top-k job (as outcore.gram).
    threshold : float, optional
        Explains a threshold job (as outcore.gram).
    dtype : {"int32", "uint16", "float32"} or numpy dtype, optional
        As outcore.gram.
    backend : {"auto", "cpu", "cuda"}, optional
        As outcore.gram; "auto" (the default) shows the choice the cost model makes.
    gpu_mem : int, str or dict, optional
        As outcore.gram.
    threads : int, optional
        As outcore.gram.
    out : path or numpy.ndarray, optional
        As outcore.gram: a path explains a job writing that file (its file system's cost
        counts; nothing is opened), an array one filling it in place (checked as gram checks
        it, and left untouched).
    bits : int, optional
        As outcore.gram: the true column count of packbits rows.
    progress : callable, optional
        Checked as outcore.gram checks it, never called: nothing runs.
    binarize : bool, default False
        As outcore.gram.
    device : int, optional
        As outcore.gram.
    host_mem : int or str, optional
        As outcore.gram.
    context : outcore.Context, optional
        As outcore.gram: its settings are the defaults of the resource arguments.
    algorithm : {"auto", "dense", "sparse"}, default "auto"
        As outcore.gram.
    resume : bool, default False
        Taken as outcore.gram takes it; the prediction is that of the whole job.
    devices : str or sequence of int or str, optional
        As outcore.gram: the devices the GPU prediction is made for.
    min_score : float, optional
        As outcore.gram (with topk).
    stats : dict, optional
        Checked as outcore.gram checks it, and left as it is: nothing runs.
    tile : int, optional
        As outcore.gram: the plan's tile edge.
    gpu_mem_mode : {"grow", "reserve"}, default "grow"
        Checked as outcore.gram checks it; the prediction does not depend on it.
    plan : bool, default False
        True puts the plan first, the text outcore.gram(..., plan=True) returns, then the
        two lines, as `outcore gram --plan --explain` prints them.
    dense_output : bool, default True
        False explains a dense job whose result is dropped (nothing leaves the device); not
        with out.

    Returns
    -------
    str
        Two lines, what `outcore gram --explain` prints: "backend: ..." (each backend's
        predicted time, the stage that bounds it, the rates used, which of them are
        defaults, and the choice) and "algorithm: ..." (dense or sparse); with plan, the
        plan before them.

    Raises
    ------
    InputError
        A bad argument or input, as outcore.gram would raise it.
    Error
        The library failed, or it has no oc_gram_explain (a library older than the
        binding).

    Examples
    --------
    >>> import numpy as np, outcore
    >>> A = np.random.default_rng(0).random((1000, 5000)) < 0.1
    >>> print(outcore.explain(A, metric="jaccard"))   # doctest: +SKIP
    """
    args = dict(locals())
    del args["dense_output"]
    dense_output = flag("dense_output", dense_output)
    plan = flag("plan", plan)  # a flag here: gram's plan="json" has no place in the explanation's text
    opts, bits = _checked_arguments(**args)  # gram's own checks, on gram's arguments
    if not dense_output and out is not None:
        raise InputError("dense_output=False explains a job whose result is dropped; out= gives it a place: "
                         "pass one or the other")
    fn = _function("oc_gram_explain", ctypes.c_int, [_ctx_p, _ctx_p, _ctx_p, ctypes.POINTER(_lib.GramOptions),
                                                    ctypes.POINTER(_lib.Output), _out_p])
    describers = ([_plan_text] if plan else []) + [fn]
    return _describe(A, B, out, opts, bits, binarize, context, _planned_output(out, opts, dense_output), describers)
