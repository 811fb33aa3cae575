"""`outcore map` against hostile expressions and shapes: each is exit 2 with one line on stderr
that names the problem, and leaves no file behind (docs/map.md, "Limits")."""
import io

import numpy as np
import pytest

from conftest import run

MAX_NESTING = 256
MAX_TOKENS = 4096


def npy_header(descr, shape):
    """A .npy version 1.0 header declaring any shape (numpy refuses to make such arrays)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


@pytest.fixture
def small(tmp_path):
    a = np.linspace(-1.0, 1.0, 7)
    np.save(tmp_path / "a.npy", a)
    return tmp_path, a


def refused(d, expr, *inputs):
    """Runs map on expr; asserts exit 2, a single stderr line and no new file; returns the line."""
    before = sorted(p.name for p in d.iterdir())
    proc = run("map", expr, *(inputs or (f"a={d/'a.npy'}",)), "-o", d / "out.npy", check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert len(lines) == 1, proc.stderr[-2000:]
    assert sorted(p.name for p in d.iterdir()) == before
    return lines[0]


# The cases that overflowed the stack (exit 139), each far past the limits.
HOSTILE = {
    "sum of 30,000 terms": "+".join(["a"] * 30000),
    "15,000 nested parentheses": "(" * 15000 + "a" + ")" * 15000,
    "60,000 unary minus": "a+" + "-" * 60000 + "a",
    "20,000 nested abs(": "abs(" * 20000 + "a" + ")" * 20000,
    "30,000 **": "**".join(["a"] * 30000),
    "60,000 nested parentheses": "(" * 60000 + "a" + ")" * 60000,
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_long_or_deep_expression_is_refused(small, case):
    line = refused(small[0], HOSTILE[case])
    assert f"{MAX_NESTING} levels" in line or f"{MAX_TOKENS} tokens" in line, line
    assert "at column" in line and "map's limit" in line, line


def test_nesting_error_names_the_column(small):
    line = refused(small[0], "a + " + "(" * (MAX_NESTING + 1) + "a" + ")" * (MAX_NESTING + 1))
    assert line.endswith(f"nests deeper than {MAX_NESTING} levels (map's limit) at column {5 + MAX_NESTING}"), line


def test_tokens_error_names_the_column(small):
    expr = "+".join(["a"] * (MAX_TOKENS // 2 + 1))  # MAX_TOKENS + 1 tokens
    line = refused(small[0], expr)
    assert line.endswith(f"more than {MAX_TOKENS} tokens (map's limit) at column {MAX_TOKENS + 1}"), line


@pytest.mark.parametrize("expr,ref", [
    ("(" * MAX_NESTING + "a" + ")" * MAX_NESTING, lambda a: a),
    ("abs(" * (MAX_NESTING - 1) + "a" + ")" * (MAX_NESTING - 1), np.abs),
    ("+".join(["a"] * (MAX_TOKENS // 2)), lambda a: sum([a] * (MAX_TOKENS // 2), np.zeros_like(a))),
    ("a" + "*1" * (MAX_TOKENS // 2 - 1), lambda a: a),
    ("a" + "**1" * (MAX_NESTING - 1), lambda a: a),
    ("a+" + "-" * (MAX_NESTING - 1) + "a", lambda a: a - a),
])
def test_expressions_at_the_limits_run(small, expr, ref):
    d, a = small
    run("map", expr, f"a={d/'a.npy'}", "-o", d / "out.npy")
    got = np.load(d / "out.npy")
    assert np.array_equal(got, ref(a)), (got, ref(a))


@pytest.mark.parametrize("shape", [(2**62,) * 4, (2**62, 2**62, 0), (3037000500, 3037000500)])
def test_shape_whose_element_count_overflows_is_refused(tmp_path, shape):
    (tmp_path / "h.npy").write_bytes(npy_header("<f8", shape) + bytes(64))
    line = refused(tmp_path, "a + 1", f"a={tmp_path/'h.npy'}")
    assert line.startswith(f"outcore: {tmp_path/'h.npy'}: shape ") and "more than 2^63 - 1 elements" in line, line


def test_empty_result_whose_other_dimensions_overflow_is_refused(tmp_path):
    """Inputs with a zero dimension each, whose broadcast result is empty but would leave 2^80
    elements reduced over that axis: numpy refuses such a shape too ("array is too big")."""
    big = 1 << 40
    (tmp_path / "p.npy").write_bytes(npy_header("<f8", (big, 0, 1)))
    (tmp_path / "q.npy").write_bytes(npy_header("<f8", (1, 0, big)))
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run("map", "p + q", f"p={tmp_path/'p.npy'}", f"q={tmp_path/'q.npy'}", "--reduce", "sum", "--axis", "1",
               "-o", tmp_path / "out.npy", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"outcore: the broadcast result: shape {big} x 0 x {big} has more than 2^63 - 1 elements"], proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("descr,elem", [("<i4", 4), ("<f8", 8), ("<i2", 2)])
def test_data_off_its_alignment_is_refused(tmp_path, descr, elem):
    """A header padded so that the data starts off its elements' alignment (numpy.save puts it
    on a multiple of 64): the evaluators load elements as their type, so the file is refused
    naming the byte, not read with misaligned loads (found by fuzz_map_npy). One byte fewer of
    padding, on a multiple again, runs."""
    def header(pad):
        text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': (2, 3), }}" + " " * pad + "\n"
        return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode()

    values = np.arange(6, dtype=descr).reshape(2, 3)
    pad = next(p for p in range(64) if len(header(p)) % elem == 1)
    (tmp_path / "m.npy").write_bytes(header(pad) + values.tobytes())
    line = refused(tmp_path, "a * 2", f"a={tmp_path/'m.npy'}")
    assert f"{tmp_path/'m.npy'}: its data starts at byte {len(header(pad))}" in line, line
    assert f"not on a multiple of its {elem}-byte elements" in line, line
    good = next(p for p in range(64) if len(header(p)) % elem == 0)
    (tmp_path / "g.npy").write_bytes(header(good) + values.tobytes())
    run("map", "a * 2", f"a={tmp_path/'g.npy'}", "-o", tmp_path / "out.npy")
    assert np.array_equal(np.load(tmp_path / "out.npy"), values * 2)
