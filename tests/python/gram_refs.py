"""What the binding tests compare against: random 0/1 matrices and the exact Gram semantics of
design.md, computed by numpy in int64 and float64 (test_binding.py, test_binding_threads.py)."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


def random01(rng, n, m, density=0.3, dtype=np.uint8):
    a = (rng.random((n, m)) < density).astype(dtype)
    if n > 4:
        a[2] = 0  # an empty row: the 0/0 rules of jaccard and cosine
        a[3] = 1  # a full one
    return a


def exact(a, b=None, metric="counts"):
    """design.md's Gram semantics: integers exact in int64, ratios in float64 rounded once."""
    a = np.asarray(a, np.int64)
    b = a if b is None else np.asarray(b, np.int64)
    c = a @ b.T
    size_a, size_b = a.sum(1)[:, None], b.sum(1)[None, :]
    if metric == "counts":
        return c.astype(np.int32)
    if metric == "hamming":
        return (size_a + size_b - 2 * c).astype(np.int32)
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric == "jaccard":
            union = size_a + size_b - c
            return np.where(union == 0, 1.0, c / union).astype(np.float32)
        product = (size_a * size_b).astype(np.float64)
        return np.where(product == 0, 0.0, c / np.sqrt(product)).astype(np.float32)
