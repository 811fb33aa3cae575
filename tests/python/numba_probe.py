"""numba.cuda for the GPU tests of this directory, or the reason it cannot run here."""
import numpy as np

# numpy 2.5 removed np.row_stack, which numba-cuda's compiler still names: the alias is
# what numpy documented as its replacement.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack


def numba_cuda():
    """(numba.cuda, None) when numba sees a GPU and compiles kernels here, else (None, why)."""
    try:
        from numba import cuda
        if not cuda.is_available():
            return None, "numba sees no usable CUDA GPU"
    except Exception as error:  # ImportError, or numba's own failure to find CUDA
        return None, f"numba.cuda cannot be imported: {error}"

    # numba must compile a trivial kernel here: a numba that does not fit the installed numpy
    # (numpy 2 removed names numba's compiler uses) fails inside numba, not in what the tests
    # check.
    def _noop(out):
        out[0] = 0

    try:
        cuda.jit("void(float32[::1])")(_noop)
    except Exception as error:
        return None, f"numba cannot compile a kernel in this environment: {type(error).__name__}: {error}"
    return cuda, None
