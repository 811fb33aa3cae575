"""outcore.explain: the cost model's prediction for gram's arguments, without running."""
import numpy as np
import pytest

import outcore


@pytest.fixture(autouse=True)
def no_rate_cache(monkeypatch):
    monkeypatch.setenv("OUTCORE_COST_CACHE", "off")


def test_explain_names_both_choices():
    A = np.random.default_rng(1).random((500, 300)) < 0.1
    text = outcore.explain(A, metric="jaccard", topk=5)
    backend, algorithm = text.splitlines()
    assert backend.startswith("backend: gram 500x500x300 (top-k)")
    assert algorithm.startswith("algorithm: ")
    if outcore.cuda_device_count() == 0:
        assert backend.endswith(": cpu")


def test_explain_backend_cpu_and_bad_arguments():
    A = np.random.default_rng(2).random((50, 64)) < 0.5
    assert outcore.explain(A, backend="cpu").startswith("backend: cpu (asked)")
    assert "(discarded)" in outcore.explain(A, dense_output=False)
    with pytest.raises(outcore.InputError):
        outcore.explain(A, np.zeros((3, 65), np.uint8))
