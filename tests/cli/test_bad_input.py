"""Bad input to `outcore gram`: each case must exit 2, print exactly one line on stderr
naming the file and the problem, and leave neither the output nor a temporary file."""
import io
import os

import numpy as np
import pytest

from conftest import run


def npy_bytes(array, version=(1, 0)):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(array), version=version)
    return buf.getvalue()


def header_bytes(dict_text):
    """A version 1.0 .npy header around an arbitrary dict text, padded as numpy pads it."""
    body = dict_text.encode("latin1")
    total = (10 + len(body) + 1 + 63) // 64 * 64
    hlen = total - 10
    return b"\x93NUMPY\x01\x00" + hlen.to_bytes(2, "little") + body + b" " * (hlen - len(body) - 1) + b"\n"


A = (np.arange(5 * 13).reshape(5, 13) % 3 == 0).astype(np.uint8)
GOOD = npy_bytes(A)
DATA_START = 128  # the header numpy writes for A: a 61-byte dict padded to 128 bytes
assert GOOD[DATA_START - 1:DATA_START] == b"\n" and len(GOOD) == DATA_START + A.size

A_TWO = A.copy()
A_TWO[3, 7] = 2

MTX_HEAD = "%%MatrixMarket matrix coordinate pattern general\n"

# name, file content, what the message must also say (besides the file name)
CASES = [
    ("empty.npy", b"", ["empty"]),
    ("empty.mtx", b"", ["empty"]),
    ("empty.txt", b"", ["empty"]),
    ("cut_header.npy", GOOD[:9], ["truncated .npy header"]),
    ("cut_dict.npy", GOOD[:50], ["truncated .npy header"]),
    ("cut_data.npy", GOOD[:-1], ["truncated .npy data"]),
    ("no_data.npy", GOOD[:DATA_START], ["truncated .npy data"]),
    ("magic.npy", b"PK\x03\x04" + GOOD[4:], ["bad magic"]),
    ("long_header.npy", GOOD[:8] + b"\xff\x7f" + GOOD[10:], ["truncated .npy header", "32767"]),
    ("not_dict.npy", header_bytes("[1, 2, 3]") + A.tobytes(), ["not a valid dict"]),
    ("missing_key.npy", header_bytes("{'descr': '|u1', 'fortran_order': False}") + A.tobytes(), ["not a valid dict"]),
    ("f2.npy", npy_bytes(A.astype("<f2")), ["'<f2'", "not supported"]),
    ("i4.npy", npy_bytes(A.astype(">i4")), ["'>i4'", "is big-endian", ".astype('<i4')"]),
    ("value2.npy", npy_bytes(A_TWO), ["value 2", "row 3", "column 7"]),
    ("minus1.npy", npy_bytes(np.where(A_TWO == 2, -1, A_TWO.astype(np.int8))), ["value -1", "row 3", "column 7"]),
    ("one_d.npy", npy_bytes(A.ravel()), ["not 2-D"]),
    ("zero_rows.npy", npy_bytes(np.zeros((0, 13), np.uint8)), ["0 rows"]),
    ("overflow.npy", header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4611686018427387904, 4), }")
     + A.tobytes(), ["overflow"]),
    ("bad_banner.mtx", b"%%MatrixMarket matrix coordinate\n3 4 1\n1 1\n", ["banner"]),
    ("array.mtx", b"%%MatrixMarket matrix array integer general\n2 2\n1\n0\n1\n1\n", ["'array'", "coordinate"]),
    ("range.mtx", (MTX_HEAD + "3 4 2\n1 1\n4 1\n").encode(), ["line 4", "(4, 1)", "outside"]),
    ("fewer.mtx", (MTX_HEAD + "3 4 3\n1 1\n2 2\n").encode(), ["declares 3 entries", "only 2"]),
    ("more.mtx", (MTX_HEAD + "3 4 1\n1 1\n2 2\n").encode(), ["line 4", "more entries"]),
    ("word.mtx", (MTX_HEAD + "3 4 1\n1 x\n").encode(), ["line 3", "'x'"]),
    ("ragged.txt", b"1 0 1\n0 1 1\n1 1\n", ["line 3", "2 values", "has 3"]),
    ("value2.csv", b"1,0,1\n0,2,1\n", ["line 2", "row 1, column 1", "'2'", "--binarize"]),
    ("matrix.xlsx", GOOD, ["unknown file type", ".npy"]),
    # Hostile .npy headers.
    ("product.npy", header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296, 4294967296), }")
     + A.tobytes(), ["overflow"]),
    ("huge_dim.npy", header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999, 4), }")
     + A.tobytes(), ["overflow"]),
    ("past_end_v2.npy", b"\x93NUMPY\x02\x00" + (1 << 30).to_bytes(4, "little") + GOOD[10:],
     ["truncated .npy header", str(1 << 30)]),
    ("negative.npy", header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (-5, 13), }") + A.tobytes(),
     ["not a valid dict", "non-negative integer"]),
    ("float_shape.npy", header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (5.0, 13), }") + A.tobytes(),
     ["not a valid dict"]),
    ("word_shape.npy", header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (five, 13), }") + A.tobytes(),
     ["not a valid dict"]),
    ("descr_word.npy", header_bytes("{'descr': 'banana', 'fortran_order': False, 'shape': (5, 13), }") + A.tobytes(),
     ["'banana'", "not supported"]),
    ("descr_int.npy", header_bytes("{'descr': 7, 'fortran_order': False, 'shape': (5, 13), }") + A.tobytes(),
     ["not a valid dict", "quoted string"]),
    ("descr_struct.npy", npy_bytes(np.zeros((5, 13), dtype=[("a", "u1")])), ["structured", "not supported"]),
    ("shape_vs_size.npy", header_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (6, 13), }") + A.tobytes(),
     ["truncated .npy data", "78 bytes"]),
    # A wider type's bytes, not its element count (78 float64s need 624 bytes).
    ("shape_vs_size_f8.npy", header_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (6, 13), }")
     + np.zeros(20).tobytes(), ["truncated .npy data: 6 x 13 <f8 needs 624 bytes", "the file has 160"]),
    # Hostile .mtx entries.
    ("zero_index.mtx", (MTX_HEAD + "3 4 1\n0 1\n").encode(), ["line 3", "(0, 1)", "outside"]),
    ("negative_index.mtx", (MTX_HEAD + "3 4 1\n2 -1\n").encode(), ["line 3", "(2, -1)", "outside"]),
    ("index_2_31.mtx", (MTX_HEAD + "3 4 1\n2147483649 1\n").encode(), ["line 3", "(2147483649, 1)", "outside"]),
    ("index_2_64.mtx", (MTX_HEAD + "3 4 1\n18446744073709551617 1\n").encode(), ["line 3", "not an integer index"]),
    ("count_word.mtx", (MTX_HEAD + "3 4 many\n1 1\n").encode(), ["line 2", "bad size line"]),
    ("negative_count.mtx", (MTX_HEAD + "3 4 -1\n").encode(), ["line 2", "bad size line"]),
    ("value2.mtx", b"%%MatrixMarket matrix coordinate integer general\n3 4 2\n1 1 1\n2 3 2\n",
     ["line 4", "value 2 at row 1, column 2", "--binarize"]),
    ("half.mtx", b"%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 0.5\n", ["value 0.5", "not 0 or 1"]),
    # -1 is not a one, though its digits are (integer values are judged by their digits).
    ("minus_one.mtx", b"%%MatrixMarket matrix coordinate integer general\n3 4 2\n1 1 1\n2 3 -1\n",
     ["line 4", "value -1 at row 1, column 2", "not 0 or 1"]),
    ("minus_one_real.mtx", b"%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 1\n2 3 -1.0\n",
     ["line 4", "value -1.0 at row 1, column 2", "not 0 or 1"]),
    ("nan.mtx", b"%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 nan\n", ["'nan'", "not a number"]),
]


def check_fails(tmp_path, args, must_say, code=2):
    """Runs `outcore gram ARGS -o tmp_path/out.npy`; checks the exit code, that stderr is one
    line that says every string in must_say, and that the directory did not change."""
    before = set(os.listdir(tmp_path))
    proc = run("gram", *args, "-o", tmp_path / "out.npy", check=False)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.endswith("\n") and proc.stderr.count("\n") == 1, repr(proc.stderr)
    assert proc.stderr.startswith("outcore: "), proc.stderr
    for part in must_say:
        assert str(part) in proc.stderr, (part, proc.stderr)
    assert set(os.listdir(tmp_path)) == before, "output or temporary file left behind"
    return proc.stderr


@pytest.mark.parametrize("name,content,says", CASES, ids=[c[0] for c in CASES])
def test_bad_file(tmp_path, name, content, says):
    path = tmp_path / name
    path.write_bytes(content)
    check_fails(tmp_path, [path], [name, *says])


@pytest.mark.parametrize("name,content,says", CASES[:8], ids=[c[0] for c in CASES[:8]])
def test_bad_second_input(tmp_path, name, content, says):
    """A bad B fails the same way when A is good."""
    np.save(tmp_path / "good.npy", A)
    (tmp_path / name).write_bytes(content)
    check_fails(tmp_path, [tmp_path / "good.npy", tmp_path / name], [name, *says])


def test_duplicate_mtx_entries_are_one_one(tmp_path):
    (tmp_path / "dup.mtx").write_text(MTX_HEAD + "2 3 4\n1 2\n1 2\n1 2\n2 2\n")
    run("gram", tmp_path / "dup.mtx", "-o", tmp_path / "c.npy", "--quiet")
    assert np.load(tmp_path / "c.npy").tolist() == [[1, 1], [1, 1]]


@pytest.mark.parametrize("field,one", [("integer", "+1"), ("integer", "1"), ("real", "+1"), ("real", "+1.0"),
                                       ("real", "1e0")])
def test_mtx_one_with_a_sign_is_a_one(tmp_path, field, one):
    """A value of 1 written with a '+' (or as a real) is a one; the zeros stay zeros."""
    (tmp_path / "p.mtx").write_text(f"%%MatrixMarket matrix coordinate {field} general\n2 3 3\n1 1 {one}\n"
                                    f"2 3 {one}\n2 2 -0\n")
    run("gram", tmp_path / "p.mtx", "-o", tmp_path / "c.npy", "--quiet")
    assert np.load(tmp_path / "c.npy").tolist() == [[1, 0], [0, 1]]


def test_binarize_reads_every_format(tmp_path):
    want = np.array([[1, 0, 1], [0, 1, 1]], np.uint8)
    (tmp_path / "v.mtx").write_text("%%MatrixMarket matrix coordinate real general\n2 3 4\n1 1 2.5\n1 3 -1\n"
                                    "2 2 7\n2 3 1\n")
    (tmp_path / "v.csv").write_text("3,0,1\n0,0.5,-2\n")
    np.save(tmp_path / "v.npy", want * 9)
    for name in ("v.mtx", "v.csv", "v.npy"):
        check_fails(tmp_path, [tmp_path / name], [name, "not 0 or 1", "--binarize"])
        out = tmp_path / (name + ".out.npy")
        run("gram", tmp_path / name, "--binarize", "-o", out, "--quiet")
        assert np.array_equal(np.load(out), want.astype(np.int32) @ want.T.astype(np.int32)), name
        out.unlink()


def pandas_csv(a, index=True, header=True, sep=","):
    """The lines DataFrame(a, columns=c0, c1, ...).to_csv(index=, header=, sep=) writes."""
    lines = [sep * index + sep.join(f"c{j}" for j in range(a.shape[1]))] if header else []
    lines += [f"{i}{sep}" * index + sep.join(map(str, row)) for i, row in enumerate(a)]
    return "\n".join(lines) + "\n"


# A CSV writer's layouts, each named for what it is; none suggests --binarize, which would
# read an index column as data.
CSV_LAYOUTS = [
    ("pd_default.csv", pandas_csv(A), True,
     ["line 1 starts with ','", "a header line, as pandas' to_csv writes", "must start with '#'"]),
    ("pd_noindex.csv", pandas_csv(A, index=False), True,
     ["line 1: 'c0' at row 0, column 0 is not a number", "a header line must start with '#'"]),
    ("unnamed_index.csv", pandas_csv(A)[1:], True,
     ["line 2 (row 1, counting from 0) has 14 values but the first row (line 1) has 13",
      "its first value 'c0' is not a number: a header line must start with '#'"]),
    ("pd_noheader.csv", pandas_csv(A, header=False), False,
     ["line 3: '2' at row 2, column 0 is not 0 or 1", "the first column counts up the rows (0, 1, 2, ...)",
      "an index column", "index=False"]),
    ("pd_commented.csv", "#" + pandas_csv(A), False, ["line 4: '2' at row 2, column 0", "counts up the rows"]),
    ("semicolon.csv", pandas_csv(A, index=False, header=False, sep=";"), True,
     ["line 1: '1;0;0;1;0;0;1;0;0;1;0;0;...' at row 0, column 0 is not a number", "not ';'"]),
]


@pytest.mark.parametrize("name,text,binarized_too,says", CSV_LAYOUTS, ids=[c[0] for c in CSV_LAYOUTS])
def test_csv_layouts_are_named(tmp_path, name, text, binarized_too, says):
    (tmp_path / name).write_text(text)
    for extra in ([], ["--binarize"]) if binarized_too else ([],):
        err = check_fails(tmp_path, [tmp_path / name, *extra], [name, *says])
        assert "--binarize" not in err, err


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_an_index_column_under_binarize_is_warned_of(tmp_path, quiet):
    """--binarize reads pandas' index column as data, as asked (its numbers are ones): the job
    runs, and stderr says so in one line naming the file, under -q too; 0/1 data gives none."""
    (tmp_path / "pd.csv").write_text(pandas_csv(A, header=False))
    proc = run("gram", tmp_path / "pd.csv", "--binarize", "-o", tmp_path / "c.npy", *quiet)
    warned = [line for line in proc.stderr.splitlines() if line.startswith("outcore: warning:")]
    assert len(warned) == 1 and f"{tmp_path / 'pd.csv'}: the first column counts up the rows (0, 1, 2, ...)" \
        in warned[0] and "reads it as data" in warned[0], proc.stderr
    with_index = np.hstack([(np.arange(len(A)) != 0)[:, None], A != 0]).astype(np.int32)
    assert np.array_equal(np.load(tmp_path / "c.npy"), with_index @ with_index.T)
    (tmp_path / "plain.csv").write_text(pandas_csv(A, header=False, index=False))
    proc = run("gram", tmp_path / "plain.csv", "--binarize", "-o", tmp_path / "d.npy", *quiet)
    assert "warning" not in proc.stderr, proc.stderr


def test_text_values_are_any_number_equal_to_0_or_1(tmp_path):
    """1.0, 1e0, -0 and np.savetxt's default 1.000000000000000000e+00 are values, as in a
    float .npy; 0.5 is not."""
    np.save(tmp_path / "a.npy", A.astype(np.float64))
    np.savetxt(tmp_path / "a.txt", A.astype(np.float64))
    np.savetxt(tmp_path / "a.csv", A, delimiter=",", fmt="%.1f")
    (tmp_path / "b.csv").write_text(pandas_csv(A, index=False, header=False).replace("1", "1e0").replace("0", "-0"))
    want = A.astype(np.int32) @ A.T.astype(np.int32)
    for name in ("a.npy", "a.txt", "a.csv", "b.csv"):
        run("gram", tmp_path / name, "-o", tmp_path / "c.npy", "--quiet")
        assert np.array_equal(np.load(tmp_path / "c.npy"), want), name
    (tmp_path / "c.npy").unlink()
    (tmp_path / "h.csv").write_text("1.0,0.5\n0,1\n")
    check_fails(tmp_path, [tmp_path / "h.csv"], ["line 1: '0.5' at row 0, column 1 is not 0 or 1", "--binarize"])


def test_packed_without_bits_hints_at_bits(tmp_path):
    np.save(tmp_path / "packed.npy", np.packbits(np.ones((4, 300), np.uint8), axis=1))
    check_fails(tmp_path, [tmp_path / "packed.npy"], ["packed.npy", "numpy.packbits output", "--bits M",
                                                      "297 to 304 for these 38-byte rows"])


def test_bits_set_past_bits_are_an_error(tmp_path):
    a = np.ones((6, 300), np.uint8)
    np.save(tmp_path / "packed.npy", np.packbits(a, axis=1))
    check_fails(tmp_path, [tmp_path / "packed.npy", "--bits", 299],
                ["packed.npy: row 0 has bit 299 set but --bits 299 says the rows hold 299 columns"])
    a[:, 299] = 0
    a[4, 299] = 1
    np.save(tmp_path / "packed.npy", np.packbits(a, axis=1))
    check_fails(tmp_path, [tmp_path / "packed.npy", "--bits", 299], ["row 4 has bit 299 set"])
    a[4, 299] = 0
    np.save(tmp_path / "packed.npy", np.packbits(a, axis=1))
    run("gram", tmp_path / "packed.npy", "--bits", 299, "-o", tmp_path / "c.npy", "--quiet")
    assert np.load(tmp_path / "c.npy")[0, 0] == 299


@pytest.mark.parametrize("spelling", ["same", "dot", "symlink", "hardlink", "b_is_out"])
def test_output_that_is_an_input_is_refused(tmp_path, spelling, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("good.npy", A)
    np.save("other.npy", A)
    before = (tmp_path / "good.npy").read_bytes()
    inputs, out = ["good.npy"], "good.npy"
    if spelling == "dot":
        out = "./good.npy"
    elif spelling == "symlink":
        os.symlink("good.npy", "link.npy")
        out = "link.npy"
    elif spelling == "hardlink":
        os.link("good.npy", "hard.npy")
        out = str(tmp_path / "hard.npy")
    elif spelling == "b_is_out":
        inputs = ["other.npy", str(tmp_path / "good.npy")]
    listing = sorted(os.listdir(tmp_path))
    proc = run("gram", *inputs, "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "the output is the input file" in proc.stderr, proc.stderr
    assert (tmp_path / "good.npy").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == listing


def test_missing_file(tmp_path):
    check_fails(tmp_path, [tmp_path / "nowhere.npy"], ["nowhere.npy", "no such file"])


def test_column_mismatch(tmp_path):
    np.save(tmp_path / "a13.npy", A)
    np.save(tmp_path / "b14.npy", np.zeros((4, 14), np.uint8))
    check_fails(tmp_path, [tmp_path / "a13.npy", tmp_path / "b14.npy"], ["b14.npy", "13", "14", "columns"])


def test_bits_mismatch(tmp_path):
    np.save(tmp_path / "packed.npy", np.zeros((4, 100), np.uint8))
    check_fails(tmp_path, [tmp_path / "packed.npy", "--bits", 1000],
                ["packed.npy", "--bits 1000 needs 125 bytes per row", "100"])
    check_fails(tmp_path, [tmp_path / "packed.npy", "--bits", 792], ["packed.npy", "--bits 792"])


def test_bits_on_text(tmp_path):
    (tmp_path / "a.txt").write_text("1 0\n0 1\n")
    check_fails(tmp_path, [tmp_path / "a.txt", "--bits", 2], ["a.txt", "--bits"])


def test_output_in_missing_directory(tmp_path):
    np.save(tmp_path / "a.npy", A)
    out = tmp_path / "no" / "such" / "out.npy"
    proc = run("gram", tmp_path / "a.npy", "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(out) in proc.stderr and "does not exist" in proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["a.npy"]


def test_output_in_read_only_directory(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("running as root, which ignores directory permissions: a read-only directory cannot be tested")
    np.save(tmp_path / "a.npy", A)
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    try:
        proc = run("gram", tmp_path / "a.npy", "-o", ro / "out.npy", check=False)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and str(ro / "out.npy") in proc.stderr
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o755)


def test_failed_job_keeps_existing_output(tmp_path):
    """An earlier result under the output name survives a failed job untouched."""
    (tmp_path / "out.npy").write_bytes(b"earlier result")
    (tmp_path / "bad.npy").write_bytes(GOOD[:-1])
    check_fails(tmp_path, [tmp_path / "bad.npy"], ["bad.npy"])
    assert (tmp_path / "out.npy").read_bytes() == b"earlier result"
