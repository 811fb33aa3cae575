"""outcore.explain: where and how outcore.gram would run a job, and why, without running it.

The library's cost model (docs/cost-model.md) predicts the job's time on the CPU and on the
GPU from this machine's measured rates; the text is what `outcore gram --explain` prints.
"""
import ctypes

from . import _lib
from ._context import Context, lease
from ._gram import _build_matrix, gram_options, positive_int
from ._tools import _function, _libc
from .errors import InputError, check

_ctx_p = ctypes.c_void_p
_out_p = ctypes.POINTER(ctypes.c_void_p)


def explain(A, B=None, metric="counts", topk=None, threshold=None, dtype=None, backend=None,
            gpu_mem=None, threads=None, bits=None, binarize=False, *, device=None, host_mem=None,
            context=None, algorithm="auto", dense_output=True):
    """The prediction behind gram(A, B, ...) with the same arguments, as text of two lines:
    "backend: ..." (each backend's predicted time, the stage that bounds it, the rates used,
    which of them are defaults, and the choice) and "algorithm: ..." (dense or sparse).
    dense_output=False explains a dense job whose result is dropped (nothing leaves the device).
    Nothing is computed; the first call on a machine with a GPU may measure the host's rates
    (a fraction of a second) and store them, as the first auto job would."""
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
        keep, handles = [], []
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
