"""Every command under a small stack limit (ulimit -s, RLIMIT_STACK).

glibc gives the main thread, and every thread started without a size of its own, the stack
limit: under 32 KiB a job ended in a segmentation fault, without a word. At the stated minimum
(docs/cli.md, "Memory", its stack) each command runs and gives the right result, its library threads on
stacks of their own size; below it the command stops at once, in one line naming both figures,
with exit 2 and no output.
"""
import os
import re
import resource
import subprocess

import numpy as np
import pytest

from conftest import SOURCE_DIR, outcore_bin

KIB = 1024


def limited_run(stack_kib, *args):
    """The CLI with a stack limit of stack_kib KiB (soft and hard, as ulimit -s sets both)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_STACK, (stack_kib * KIB, stack_kib * KIB))
    return subprocess.run([outcore_bin(), *map(str, args)], capture_output=True, text=True, timeout=120,
                          preexec_fn=limit)


def stated_minimum():
    """The minimum docs/cli.md states, in KiB."""
    text = (SOURCE_DIR / "docs" / "cli.md").read_text()
    found = re.search(r"stack limit \(`ulimit -s`\) of at least (\d+) KiB", text)
    assert found, "docs/cli.md states no stack minimum"
    return int(found.group(1))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("stack")
    rng = np.random.default_rng(3)
    bits = (rng.random((150, 300)) < 0.4).astype(np.uint8)
    np.save(d / "bits.npy", bits)
    a = rng.standard_normal((90, 40)).astype(np.float32)
    b = rng.standard_normal((40, 70)).astype(np.float32)
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    return d, bits, a, b


def test_below_the_minimum_refused_in_one_line(data, tmp_path):
    d, _, _, _ = data
    minimum = stated_minimum()
    for small in (32, 64, minimum - 1):
        for args in (["gram", d / "bits.npy", "-o", tmp_path / "c.npy"],
                     ["map", "x+1", f"x={d / 'a.npy'}", "-o", tmp_path / "m.npy"], ["gen", "--rows", 10, "--cols", 8,
                                                                                   "-o", tmp_path / "g.npy"]):
            proc = limited_run(small, *args)
            assert proc.returncode == 2, (small, args, proc.returncode, proc.stderr)
            assert proc.stderr == (f"outcore: the stack limit (ulimit -s) is {small} KiB; outcore needs at least "
                                   f"{minimum} KiB\n"), proc.stderr
            assert proc.stdout == "" and list(tmp_path.iterdir()) == [], (args, list(tmp_path.iterdir()))


# Under AddressSanitizer every frame carries redzones around its arrays, and the minimum is
# the uninstrumented build's: its calling side then needs several times as much stack.
asan_frames = pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                                 reason="AddressSanitizer's redzones make the main thread's frames larger than the "
                                        "minimum (measured on the uninstrumented build) allows")


@asan_frames
def test_gram_at_the_minimum(data, tmp_path):
    d, bits, _, _ = data
    minimum = stated_minimum()
    counts = bits.astype(np.int64) @ bits.T.astype(np.int64)
    for threads in (1, 4):
        out = tmp_path / f"dense{threads}.npy"
        proc = limited_run(minimum, "gram", d / "bits.npy", "--backend", "cpu", "--threads", threads, "-o", out, "-q")
        assert proc.returncode == 0, proc.stderr
        assert np.array_equal(np.load(out), counts)
    sizes = bits.sum(axis=1).astype(np.int64)
    jaccard = counts / np.maximum(sizes[:, None] + sizes[None, :] - counts, 1)
    np.fill_diagonal(jaccard, -np.inf)  # a row's own column is not among its best

    proc = limited_run(minimum, "gram", d / "bits.npy", "--metric", "jaccard", "--topk", 3, "--threads", 4, "-o",
                       tmp_path / "top.npz", "-q")
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "top.npz") as top:
        got = np.take_along_axis(jaccard, top["indices"].astype(np.int64), axis=1)
        assert np.allclose(top["scores"], got, atol=1e-6)
        assert np.allclose(np.sort(got, axis=1)[:, ::-1], -np.sort(-jaccard, axis=1)[:, :3], atol=1e-6)

    for algorithm in ("dense", "sparse"):
        out = tmp_path / f"pairs_{algorithm}.tsv"
        proc = limited_run(minimum, "gram", d / "bits.npy", "--metric", "counts", "--threshold", 60, "--algorithm",
                           algorithm, "--threads", 4, "-o", out, "-q")
        assert proc.returncode == 0, (algorithm, proc.stderr)
        rows = [line.split("\t") for line in out.read_text().splitlines() if line and line[0].isdigit()]
        pairs = {(int(r[0]), int(r[1])) for r in rows}
        want = {(int(i), int(j)) for i, j in zip(*np.nonzero(counts >= 60))}
        assert pairs == {(i, j) for i, j in want if i < j}, algorithm  # each pair once, no row with itself


@asan_frames
def test_matmul_and_map_at_the_minimum(data, tmp_path):
    d, _, a, b = data
    minimum = stated_minimum()
    proc = limited_run(minimum, "matmul", d / "a.npy", d / "b.npy", "--threads", 4, "-o", tmp_path / "c.npy", "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.allclose(np.load(tmp_path / "c.npy"), a @ b, rtol=1e-4, atol=1e-4)

    proc = limited_run(minimum, "map", "x*2+1", f"x={d / 'a.npy'}", "--threads", 4, "-o", tmp_path / "m.npy", "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(tmp_path / "m.npy"), a * 2 + 1)
    proc = limited_run(minimum, "map", "x*x", f"x={d / 'a.npy'}", "--reduce", "sum", "--axis", 0, "--threads", 4,
                       "-o", tmp_path / "r.npy", "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.allclose(np.load(tmp_path / "r.npy"), (a * a).sum(axis=0), rtol=1e-5)


@asan_frames
def test_gen_and_inspect_at_the_minimum(tmp_path):
    minimum = stated_minimum()
    out = tmp_path / "g.npy"
    proc = limited_run(minimum, "gen", "--rows", 200, "--cols", 512, "--density", 0.1, "--plant", 3, "--threads", 4,
                       "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.load(out).shape == (200, 512)
    proc = limited_run(minimum, "inspect", SOURCE_DIR / "tests" / "fuzz" / "corpus" / "ptx" / "kernels.ptx", "--no-gpu")
    assert proc.returncode == 0, proc.stderr
    assert "kernel bounded" in proc.stdout
