"""outcore.explain: where and how outcore.gram would run a job, and why, without running it.

The library's cost model (docs/cost-model.md) predicts the job's time on the CPU and on the
GPU from this machine's measured rates; the text is what `outcore gram --explain` prints.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

from . import _lib
from ._context import Context, lease
from ._gram import _build_matrix, gram_options, positive_int
from ._tools import _function, _libc
from .errors import InputError, check

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ._types import Algorithm, Backend, GpuMem, Matrix, Metric, Size

_ctx_p = ctypes.c_void_p
_out_p = ctypes.POINTER(ctypes.c_void_p)


def explain(A: Matrix, B: Matrix | None = None, metric: Metric = "counts", topk: int | None = None,
            threshold: float | None = None, dtype: DTypeLike | None = None, backend: Backend | None = None,
            gpu_mem: GpuMem | None = None, threads: int | None = None, bits: int | None = None,
            binarize: bool = False, *, device: int | None = None, host_mem: Size | None = None,
            context: Context | None = None, algorithm: Algorithm = "auto", dense_output: bool = True) -> str:
    """The prediction behind gram(A, B, ...) with the same arguments, without running it.

    Nothing is computed; the first call or job on a machine whose rate cache lacks the host's
    rates measures them (a fraction of a second) and stores them (docs/cost-model.md).

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
    bits : int, optional
        As outcore.gram: the true column count of packbits rows.
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
    dense_output : bool, default True
        False explains a dense job whose result is dropped (nothing leaves the device).

    Returns
    -------
    str
        Two lines, what `outcore gram --explain` prints: "backend: ..." (each backend's
        predicted time, the stage that bounds it, the rates used, which of them are
        defaults, and the choice) and "algorithm: ..." (dense or sparse).

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
    if bits is not None:
        bits = positive_int("bits", bits)
    resources = dict(backend=backend, device=device, gpu_mem=gpu_mem, host_mem=host_mem, threads=threads)
    if context is not None:
        if not isinstance(context, Context):
            raise InputError(f"context must be an outcore.Context; got {type(context).__name__}")
        resources = context.options(**resources)
    opts = gram_options(metric, dtype, topk, threshold, algorithm=algorithm, **resources)
    fn = _function("oc_gram_explain", ctypes.c_int, [_ctx_p, _ctx_p, _ctx_p, ctypes.POINTER(_lib.GramOptions),
                                                    ctypes.POINTER(_lib.Output), _out_p])
    output = _lib.Output()
    if topk:
        output.kind = _lib.OC_OUTPUT_TOPK
    elif threshold is not None:
        output.kind = _lib.OC_OUTPUT_PAIRS
    elif not dense_output:
        output.kind = _lib.OC_OUTPUT_DISCARD
    with lease(context) as ctx:
        keep: list[object] = []
        handles: list[ctypes.c_void_p] = []
        text = ctypes.c_void_p()
        try:
            handles.append(_build_matrix(ctx, A, "A", bits, keep, binarize, opts.host_mem_bytes))
            if B is not None:
                handles.append(_build_matrix(ctx, B, "B", bits, keep, binarize, opts.host_mem_bytes))
            check(fn(ctx, handles[0], handles[1] if len(handles) > 1 else None, ctypes.byref(opts),
                     ctypes.byref(output), ctypes.byref(text)), ctx)
            return _lib.text(ctypes.string_at(text))
        finally:
            _libc.free(text)
            for h in handles:
                _lib.lib.oc_matrix_free(h)
