#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Small valid files of every kind the readers take, and the bad inputs of the unit and CLI
tests (tests/test_io.c, tests/cli/test_bad_input.py); for fuzz_map_expr, every map
expression of the documentation and the map tests. The GPU code seeds (cubin, fatbinary,
host object, PTX, ptxas' report) need nvcc; without it they are left as they are. The
corpora are committed: run this again only to change them. The finding_* files are inputs
the fuzz targets found (each with its fix); they are kept as found, not written here.

    python3 tests/fuzz/make_corpus.py            # every corpus
    python3 tests/fuzz/make_corpus.py map_expr   # only those named (npy matmul_npy map_npy mtx text map_expr gpu)
"""
import ast
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
TESTS = os.path.dirname(HERE)

# The dense test matrix of tests/test_io.c and tests/cli/test_bad_input.py: 5 x 13, ones in
# every byte position.
A = (np.arange(5 * 13).reshape(5, 13) % 3 == 0).astype(np.uint8)
A_TWO = A.copy()
A_TWO[3, 7] = 2


def c_strings(path, array):
    """The string literals of `static const char *const ARRAY[] = {...};` in a C test file, so
    that the seeds and the unit test share one list of bad inputs."""
    text = open(path).read()
    start = text.index(f"{array}[] = {{")
    body = text[start:text.index("};", start)]
    lines = (re.sub(r"/\*.*?\*/", "", line).strip() for line in body.splitlines()[1:])
    return [ast.literal_eval(line.rstrip(",")) for line in lines if line]


def write(target, name, content):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


# ---------------------------------------------------------------- .npy (selector byte first)

def npy_bytes(array, version=(1, 0)):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(array), version=version)
    return buf.getvalue()


def header_bytes(dict_text, major=1, pad=b" "):
    """A .npy header around an arbitrary dict text, padded as numpy pads it."""
    body = dict_text.encode("latin1")
    prefix = 10 if major == 1 else 12
    total = (prefix + len(body) + 1 + 63) // 64 * 64
    hlen = total - prefix
    return (b"\x93NUMPY" + bytes([major, 0]) + hlen.to_bytes(prefix - 8, "little") + body +
            pad * (hlen - len(body) - 1) + b"\n")


def npy(name, content, bits=0):
    """fuzz_npy's input: the selector byte (0 dense, 1..239 the --bits value), then the file."""
    assert 0 <= bits < 240
    write("npy", name, bytes([bits]) + content)


def npy_corpus():
    for major in (1, 2, 3):
        for dtype in (np.bool_, np.uint8, np.int8):
            npy(f"v{major}_{np.dtype(dtype).name}.npy", npy_bytes(A.astype(dtype), (major, 0)))
    cols = A.shape[1]
    packed = np.packbits(A, axis=1)
    npy("packed_v1.npy", npy_bytes(packed), bits=cols)
    npy("packed_v2.npy", npy_bytes(packed, (2, 0)), bits=cols)
    npy("packed_v3_full_bytes.npy", npy_bytes(packed, (3, 0)), bits=8 * packed.shape[1])
    dirty = packed.copy()
    dirty[:, -1] |= (1 << (8 * packed.shape[1] - cols)) - 1  # padding bits past the last column
    npy("packed_dirty_padding.npy", npy_bytes(dirty), bits=cols)
    npy("packed_bool.npy", npy_bytes(packed.astype(bool)), bits=cols)
    npy("packed_bits_mismatch.npy", npy_bytes(packed), bits=cols + 8)
    npy("big_endian_u1.npy", header_bytes("{'descr': '>u1', 'fortran_order': False, 'shape': (5, 13), }") + A.tobytes())
    npy("py2_long_shape.npy",
        header_bytes('{"descr": "|u1", "shape": (5L, 13L), "fortran_order": False}') + A.tobytes())
    npy("nul_padding.npy",
        header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (5, 13), }", pad=b"\0") + A.tobytes())
    # Fortran order (numpy.save of a transposed array): read in place, column after column;
    # 19 x 130 spans whole 8-row, 64-column blocks and their tails.
    wide = (np.arange(19 * 130).reshape(19, 130) % 7 < 2).astype(np.uint8)
    for dtype in (np.bool_, np.uint8, np.int8):
        npy(f"fortran_{np.dtype(dtype).name}.npy", npy_bytes(np.asfortranarray(wide.astype(dtype))))
    npy("fortran_f8.npy", npy_bytes(np.asfortranarray(wide.astype("<f8"))))
    npy("fortran_binarize.npy", npy_bytes(np.asfortranarray(wide * 3)), bits=1)
    npy("fortran_packed.npy", npy_bytes(np.asfortranarray(np.packbits(wide, axis=1))), bits=130)
    npy("fortran_packed_dirty_padding.npy", npy_bytes(np.asfortranarray(np.packbits(wide, axis=1) | 1)), bits=130)
    npy("fortran_value2.npy", npy_bytes(np.asfortranarray(A_TWO)))

    good = npy_bytes(A)
    data_start = len(good) - A.size
    # The bad inputs of tests/cli/test_bad_input.py and tests/test_io.c.
    bad = {
        "cut_magic": good[:4],
        "cut_header": good[:9],
        "cut_dict": good[:50],
        "cut_data": good[:-1],
        "no_data": good[:data_start],
        "zip_magic": b"PK\x03\x04" + good[4:],
        "long_header": good[:8] + b"\xff\x7f" + good[10:],
        "version4": b"\x93NUMPY\x04\x00\x10\x00{}              ",
        "f8": npy_bytes(A.astype("<f8")),
        "i4_big_endian": npy_bytes(A.astype(">i4")),
        "value2": npy_bytes(A_TWO),
        "minus1": npy_bytes(np.where(A_TWO == 2, -1, A_TWO).astype(np.int8)),
        "one_d": npy_bytes(A.ravel()),
        "three_d": npy_bytes(A.reshape(5, 13, 1)),
        "scalar": npy_bytes(np.uint8(1)),
        "zero_rows": npy_bytes(np.zeros((0, 13), np.uint8)),
        "zero_cols": npy_bytes(np.zeros((5, 0), np.uint8)),
        "structured": header_bytes("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (5,), }") +
        bytes(20),
    }
    for k, text in enumerate(c_strings(os.path.join(TESTS, "test_io.c"), "not_dicts")):
        bad[f"not_dict{k}"] = header_bytes(text) + A.tobytes()
    for name, shape in [("overflow", "(4611686018427387904, 4)"), ("overflow_dim", "(5, 99999999999999999999999)"),
                        ("huge_no_data", "(3000000000, 3000000000)")]:
        bad[name] = header_bytes(f"{{'descr': '|u1', 'fortran_order': False, 'shape': {shape}, }}") + A.tobytes()
    for name, content in bad.items():
        npy(f"bad_{name}.npy", content)


# ---------------------------------------------------------------- matmul's and map's .npy operands

def selected(target):
    """A writer of `target`'s seeds: the selector byte, then the file."""
    return lambda name, content, sel: write(target, name, bytes([sel]) + content)


def matmul_npy_corpus():
    """fuzz_matmul_npy's input: the selector byte (how B is given, the dtype asked for, the
    reference loops, a file result), then A's file: each dtype matmul reads (bool with bytes 2
    and 255 among its trues), Fortran order, vectors, the shapes and headers a product
    refuses."""
    seed = selected("matmul_npy")

    rng = np.random.default_rng(5)
    square = rng.standard_normal((6, 6))
    seed("f8_gram.npy", npy_bytes(square), 0)
    seed("f8_same_file.npy", npy_bytes(square), 2)
    seed("f4_transposed_b.npy", npy_bytes(square.astype("<f4")), 1)
    seed("f2_as_f32.npy", npy_bytes(square.astype("<f2")), 2 | 4)
    seed("f8_as_f32_reference.npy", npy_bytes(square[:, :4]), 0 | 4 | 16)
    seed("i1_exact.npy", npy_bytes(rng.integers(-128, 128, (5, 9), dtype=np.int8)), 0)
    seed("i1_transposed_a.npy", npy_bytes(rng.integers(-128, 128, (7, 7), dtype=np.int8)), 3)
    seed("u1_as_f64.npy", npy_bytes(rng.integers(0, 256, (4, 11), dtype=np.uint8)), 0 | 8)
    seed("i2_refused.npy", npy_bytes(rng.integers(-99, 99, (3, 3), dtype=np.int16)), 2)
    seed("i8_as_f64.npy", npy_bytes(rng.integers(-99, 99, (3, 3), dtype=np.int64)), 2 | 8)
    bools = rng.choice(np.array([0, 1, 2, 255], np.uint8), size=(8, 5)).view(bool)
    seed("bool_counts.npy", npy_bytes(bools), 0 | 12)
    seed("bool_any.npy", npy_bytes(bools), 0)
    seed("bool_as_f32_reference.npy", npy_bytes(bools), 1 | 4 | 16)
    seed("fortran_f8.npy", npy_bytes(np.asfortranarray(square[:, :5])), 0)
    seed("fortran_bool.npy", npy_bytes(np.asfortranarray(bools)), 1 | 12)
    seed("k0_huge_rows.npy", header_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 0), }"), 0)
    seed("k0_small.npy", npy_bytes(np.zeros((3, 0))), 0)
    seed("empty_rows.npy", npy_bytes(np.zeros((0, 4), np.float32)), 0)
    seed("one_d.npy", npy_bytes(square.ravel()), 0)
    seed("three_d.npy", npy_bytes(square.reshape(6, 3, 2)), 0)
    seed("big_endian.npy", npy_bytes(square.astype(">f8")), 0)
    seed("structured.npy", npy_bytes(np.zeros((2, 2), dtype=[("x", "<f8")])), 0)
    seed("truncated.npy", npy_bytes(square)[:-9], 0)
    seed("complex.npy", npy_bytes(square.astype(np.complex64)), 0)
    seed("v2_f4.npy", npy_bytes(square.astype("<f4"), (2, 0)), 2)
    seed("not_square_same_file.npy", npy_bytes(square[:, :4]), 2)
    # written to a file too (bits 5 and 6): a vector (its dimensions dropped), bool, floats
    seed("one_d_to_file.npy", npy_bytes(square.ravel()), 2 | 0x60)
    seed("one_d_gram_to_file.npy", npy_bytes(square.ravel()[:5].astype("<f4")), 0 | 0x60)
    seed("bool_to_file.npy", npy_bytes(bools), 1 | 0x60)
    seed("f8_to_file_reference.npy", npy_bytes(square), 3 | 16 | 0x60)
    seed("i1_to_file.npy", npy_bytes(rng.integers(-128, 128, (5, 9), dtype=np.int8)), 0 | 0x60)


def map_npy_corpus():
    """fuzz_map_npy's input: the selector byte (the expression, the reduction, its axis),
    then a's file: each dtype map reads, 0-d to 3-d, broadcasting with b's 3 elements or not,
    Fortran order, and the headers map refuses."""
    seed = selected("map_npy")

    rng = np.random.default_rng(9)
    f8 = rng.standard_normal((4, 3))
    seed("f8_times_2.npy", npy_bytes(f8), 0)
    seed("f8_plus_b.npy", npy_bytes(f8), 1)
    seed("f8_where.npy", npy_bytes(f8), 2)
    seed("i4_floor_div.npy", npy_bytes(rng.integers(-9, 9, (2, 3), dtype=np.int32)), 3)
    seed("u1_sqrt_sum.npy", npy_bytes(rng.integers(0, 255, (5, 3), dtype=np.uint8)), 4 | (1 << 3))
    seed("bool_eq_mean_axis.npy", npy_bytes(f8 > 0), 5 | (2 << 3) | 64)
    seed("f4_minimum_min.npy", npy_bytes(f8.astype("<f4")), 6 | (3 << 3))
    seed("i8_negate_max_axis.npy", npy_bytes(rng.integers(-99, 99, (2, 2, 3), dtype=np.int64)), 7 | (4 << 3) | 64)
    seed("scalar.npy", npy_bytes(np.float64(2.5)), 1)
    seed("one_d_mismatch.npy", npy_bytes(np.arange(4.0)), 1)
    seed("fortran.npy", npy_bytes(np.asfortranarray(f8)), 1)
    seed("zero_dim_huge.npy", header_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904), }"), 0)
    seed("empty_sum.npy", npy_bytes(np.zeros((0, 3))), 1 << 3)
    seed("truncated.npy", npy_bytes(f8)[:-5], 0)
    seed("f2_refused.npy", npy_bytes(f8.astype("<f2")), 0)
    seed("big_endian.npy", npy_bytes(f8.astype(">f8")), 0)
    seed("structured.npy", npy_bytes(np.zeros(3, dtype=[("x", "<f8")])), 0)
    # b as a 4 x 3 array in memory in Fortran order (bit 7): beside a Fortran-order file, a
    # C-order one (refused), a single element.
    seed("fortran_beside_memory.npy", npy_bytes(np.asfortranarray(f8)), 1 | 128)
    seed("fortran_memory_sum_axis.npy", npy_bytes(np.asfortranarray(f8)), 6 | (1 << 3) | 64 | 128)
    seed("c_beside_fortran_memory.npy", npy_bytes(f8), 1 | 128)
    seed("single_beside_fortran_memory.npy", npy_bytes(np.full((1, 1), 2.0)), 6 | 128)


# ---------------------------------------------------------------- .mtx

def mtx_corpus():
    head = "%%MatrixMarket matrix coordinate {} {}\n"
    rows, cols = np.nonzero(A)
    entries = "".join(f"{i + 1} {j + 1}\n" for i, j in zip(rows, cols))
    valued = "".join(f"{i + 1} {j + 1} 1\n" for i, j in zip(rows, cols))
    size = f"{A.shape[0]} {A.shape[1]} {len(rows)}\n"
    write("mtx", "pattern.mtx", head.format("pattern", "general") + "% a comment\n\n" + size + entries)
    write("mtx", "integer.mtx", head.format("integer", "general") + size + valued + "")
    write("mtx", "integer_explicit_zero.mtx", head.format("integer", "general") + "3 3 2\n1 1 0\n2 3 -7\n")
    write("mtx", "real.mtx", head.format("real", "general") + "3 3 3\n1 1 1.0\n2 2 0.0\n3 1 -2.5e-3\n")
    write("mtx", "symmetric.mtx", head.format("pattern", "symmetric") + "4 4 3\n1 1\n3 1\n4 2\n")
    write("mtx", "skew.mtx", head.format("integer", "skew-symmetric") + "3 3 2\n2 1 1\n3 2 -1\n")
    write("mtx", "crlf_upper_case.mtx", "%%MATRIXMARKET MATRIX COORDINATE PATTERN GENERAL\r\n2 2 1\r\n2 2\r\n")
    mtx_head = head.format("pattern", "general")
    bad = {
        "empty": "",
        "bad_banner": "%%MatrixMarket matrix coordinate\n3 4 1\n1 1\n",
        "array": "%%MatrixMarket matrix array integer general\n2 2\n1\n0\n1\n1\n",
        "complex": "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
        "hermitian": "%%MatrixMarket matrix coordinate pattern hermitian\n1 1 1\n1 1\n",
        "range": mtx_head + "3 4 2\n1 1\n4 1\n",
        "zero_index": mtx_head + "3 4 1\n0 1\n",
        "fewer": mtx_head + "3 4 3\n1 1\n2 2\n",
        "more": mtx_head + "3 4 1\n1 1\n2 2\n",
        "word": mtx_head + "3 4 1\n1 x\n",
        "no_size": mtx_head + "% only a comment\n",
        "bad_size": mtx_head + "3 four 1\n",
        "non_square_symmetric": head.format("pattern", "symmetric") + "3 4 1\n1 1\n",
        "nan": head.format("real", "general") + "2 2 1\n1 1 nan\n",
        "huge_index": mtx_head + "3 4 1\n99999999999999999999 1\n",
        "too_many_fields": mtx_head + "3 4 1\n1 1 1 1 1 1 1\n",
        # values judged by their digits and their sign: -1 is not a one
        "minus_one": head.format("integer", "general") + "3 4 2\n1 1 1\n2 3 -1\n",
        "minus_one_real": head.format("real", "general") + "3 4 2\n1 1 1\n2 3 -1.0\n",
        "hex_float": head.format("real", "general") + "2 2 1\n1 1 0x1p0\n",
        "past_int64": head.format("integer", "general") + "2 2 1\n1 1 100000000000000000001\n",
    }
    for name, content in bad.items():
        write("mtx", f"bad_{name}.mtx", content)
    # a one written with a sign, an exponent or trailing zeros is a one
    write("mtx", "signed_ones.mtx", head.format("real", "general") + "3 3 4\n1 1 +1\n2 2 1e0\n3 3 1.000\n1 3 -0\n")


# ---------------------------------------------------------------- .txt / .csv

def text_corpus():
    write("text", "spaces.txt", "\n".join(" ".join(map(str, r)) for r in A) + "\n")
    write("text", "commas.csv", "\n".join(",".join(map(str, r)) for r in A) + "\n")
    write("text", "comments_crlf.csv", "# header comment\r\n1, 0 ,1\r\n\r\n0,1,1\r\n")
    write("text", "tabs_no_final_newline.txt", "1\t0\t1\n0\t1\t1")
    bad = {
        "empty": "",
        "only_comments": "# nothing\n\n   \n",
        "ragged": "1 0 1\n0 1 1\n1 1\n",
        "value2": "1,0,1\n0,2,1\n",
        "double_comma": "1,,0\n",
        "trailing_comma": "1,0,\n",
        "long_token": "1 0 10\n",
        # what pandas writes: a header line, an index column, ';' separators, quotes
        "header": "a,b,c\n1,0,1\n",
        "index_column": ",a,b\n0,1,0\n1,0,1\n",
        "semicolons": "1;0;1\n0;1;1\n",
        "quoted": '"1","0"\n"0","1"\n',
        "minus_one": "1,0,-1\n",
    }
    # numbers equal to 0 or 1 in any spelling are values
    write("text", "float_spellings.csv", "1.0,0.0,1e0\n-0,+1,0.000\n")
    for name, content in bad.items():
        write("text", f"bad_{name}.{'csv' if ',' in content else 'txt'}", content)


# ---------------------------------------------------------------- map expressions

ROOT = os.path.dirname(TESTS)
# Where map expressions are written, and how: `outcore map 'EXPR'` in the docs, map("EXPR")
# in Python, run("map", "EXPR", ...) in the CLI tests, string literals of the C unit tests
# and of the expression lists of the Python tests.
EXPR_SOURCES = ["README.md", "docs/map.md", "docs/python.md", "tests/cli/test_map_cli.py",
                "tests/cli/test_hostile_map.py", "tests/python/test_map_numpy.py",
                "tests/python/test_hostile_map.py", "tests/test_map_expr.c", "tests/test_map_codegen.c"]
EXPR_PATTERNS = [r"outcore map '([^']*)'", r"\bmap\(\s*\"([^\"]*)\"", r"\"map\", \"([^\"]*)\"",
                 r"\bmap\(\s*'([^']*)'"]
C_STRING = r'"((?:[^"\\\n]|\\.)*)"'


def map_expressions():
    found = []
    for rel in EXPR_SOURCES:
        path = os.path.join(ROOT, rel)
        if not os.path.exists(path):
            continue
        text = open(path).read()
        for pattern in EXPR_PATTERNS:
            found += re.findall(pattern, text)
        for line in text.splitlines():
            if rel.endswith(".c") or "for expr in" in line:
                found += [s for s in re.findall(C_STRING, line)
                          if "%" not in s.replace("% ", "") and not s.endswith(".h") and "\\" not in s]
    return list(dict.fromkeys(e for e in found if e and "{" not in e))


def map_expr_corpus():
    """fuzz_map_expr's input: a byte for the arrays' types (a float64, b int64 here), a byte
    for the reduction (none; 0x80: evaluated), then the expression; a few also reduced and
    over other types."""
    for k, expr in enumerate(map_expressions()):
        write("map_expr", f"doc_{k:03d}", bytes([10 + 11 * 4, 0x80]) + expr.encode())
    write("map_expr", "reduce_sum_int8_uint64", bytes([2 + 11 * 8, 0x81]) + b"a * b + 1")
    write("map_expr", "reduce_max_axis0_bool", bytes([0, 0x80 | (4 + 5)]) + b"abs(a - b)")
    write("map_expr", "reduce_mean_axis_last_f32", bytes([9 + 11 * 9, 0x80 | (2 + 5)]) + b"where(a > 0, a * v, i // 3)")
    write("map_expr", "all_functions", bytes([10, 0x80]) + (
        b"abs(a) + sqrt(v) + exp(v) + log(v) + log1p(v) + expm1(v) + sin(v) + cos(v) + tan(v) + tanh(v) + "
        b"floor(a) + ceil(a) + arctan2(v, x) + minimum(a, b) + maximum(a, b) + clip(a, 1, 5) + where(a < b, a, b)"))
    write("map_expr", "operators", bytes([4 + 11 * 3, 0]) + (
        b"(a + b - a * b // 3 % 2) ** 2 & (u | w ^ ~i) != -i"))
    write("map_expr", "python_scalars", bytes([10, 0]) + b"2 ** -1 + 7 // -2 + r * n - t + 0x1F + 0b101 + 1_000 + .5e3")
    write("map_expr", "nesting_at_limit", bytes([10, 0]) + b"(" * 256 + b"a" + b")" * 256)
    write("map_expr", "nesting_past_limit", bytes([10, 0]) + b"abs(" * 257 + b"a" + b")" * 257)
    write("map_expr", "long_sum", bytes([10, 0]) + b"+".join([b"a"] * 2048))
    write("map_expr", "tokens_past_limit", bytes([10, 0]) + b"-".join([b"a"] * 2049))
    write("map_expr", "power_chain", bytes([10, 0]) + b"**".join([b"a"] * 255))
    write("map_expr", "unary_chain", bytes([10, 0]) + b"-~" * 128 + b"w")
    # f in Fortran order (the first byte's 121s odd; a float64, b int64): beside b and x (both
    # orders) and c, reduced over the last axis, and beside a (1-D: refused).
    write("map_expr", "fortran_memory", bytes([10 + 11 * 4 + 121, 0x80]) + b"f * b + x - c")
    write("map_expr", "fortran_memory_max_axis_last", bytes([10 + 11 * 4 + 121, 0x80 | (4 + 5)]) + b"f + b")
    write("map_expr", "fortran_memory_beside_1d", bytes([10 + 11 * 4 + 121, 0x80]) + b"f + a")


# ---------------------------------------------------------------- GPU code (needs nvcc)

KERNELS = r"""
// Two small kernels: launch bounds, static shared memory, a register cap, a device function.
__device__ __noinline__ float twice(float x) { return 2.0f * x; }

extern "C" __global__ void __launch_bounds__(128) bounded(const float *in, float *out)
{
    __shared__ float tile[128];
    tile[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * 128 + threadIdx.x] = twice(tile[127 - threadIdx.x]);
}

extern "C" __global__ void __maxnreg__(40) capped(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[(i + 1) % n];
}
"""


def nvcc_path():
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def gpu_corpus():
    nvcc = nvcc_path()
    if not nvcc:
        print("make_corpus: nvcc not found; the cubin, fatbin and ptx seeds are left as they are", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.cu")
        with open(src, "w") as f:
            f.write(KERNELS)

        def build(*args):
            out = os.path.join(tmp, "out")
            proc = subprocess.run([nvcc, *args, src, "-o", out], check=True, capture_output=True, text=True)
            with open(out, "rb") as f:
                return f.read(), proc.stdout + proc.stderr

        cubin90, report = build("-cubin", "-arch=sm_90", "-Xptxas", "-v")
        # Without the timings, the report is the same on every run.
        report = "".join(line for line in report.splitlines(True) if "Compile time" not in line)
        cubin80, _ = build("-cubin", "-arch=sm_80")
        ptx, _ = build("-ptx", "-arch=sm_90")
        for name, data in [("sm_90.cubin", cubin90), ("sm_80.cubin", cubin80)]:
            write("cubin", name, data)
            write("fatbin", name, data)
        fat = ["-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
        write("fatbin", "plain.fatbin", build(*fat, "-compress-mode=none")[0])
        write("fatbin", "lz4.fatbin", build(*fat, "-compress-mode=speed")[0])
        write("fatbin", "zstd.fatbin", build(*fat, "-compress-mode=size")[0])
        write("fatbin", "ptx_only.fatbin", build("-fatbin", "-gencode", "arch=compute_90,code=compute_90",
                                                 "-compress-mode=none")[0])
        write("fatbin", "host_object.o", build("-c", "-arch=sm_90", "-compress-mode=none")[0])
        write("ptx", "kernels.ptx", ptx)
        write("ptx", "ptxas_report.txt", report)
        # Both at once: a report that names the PTX's entries, then the PTX with their bounds.
        write("ptx", "report_and_ptx.txt", report.encode() + ptx)
        write("cubin", "bad_truncated.cubin", cubin90[:len(cubin90) // 2])
        write("fatbin", "bad_truncated.fatbin", build(*fat, "-compress-mode=none")[0][:200])
    write("fatbin", "not_gpu_code.txt", "notes, not a kernel image\n")
    write("fatbin", "elf_no_gpu_code", open(sys.executable, "rb").read(64))


CORPORA = {"npy": npy_corpus, "matmul_npy": matmul_npy_corpus, "map_npy": map_npy_corpus, "mtx": mtx_corpus, "text": text_corpus, "map_expr": map_expr_corpus, "gpu": gpu_corpus}

if __name__ == "__main__":
    for name in sys.argv[1:] or CORPORA:
        if name not in CORPORA:
            sys.exit(f"make_corpus: no corpus {name} (one of {' '.join(CORPORA)})")
        CORPORA[name]()
