"""Hostile command lines: names that are not plain text, options given twice or after --,
limits past what runs, and one rule for which numbers are ones.

Every refusal is checked the same way: exit 2, one line on stderr, no file left and no file
touched. stderr and stdout are read as bytes: a name with escape bytes or invalid UTF-8 must
reach neither the terminal raw nor a JSON object unescaped.
"""
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import data_file, outcore_bin, reference

ESC_NAME = b"e\x1b[31m\x07\xc2\x9b\xff q\"\\.npy"  # escape, bell, C1 CSI (U+009B), invalid UTF-8, quote


def run_bytes(*args, cwd=None):
    """The CLI run with bytes arguments; stdout and stderr as bytes. A run past 120 s fails
    the test (TimeoutExpired) rather than hanging it."""
    argv = [os.fsencode(outcore_bin())] + [a if isinstance(a, bytes) else os.fsencode(str(a)) for a in args]
    return subprocess.run(argv, capture_output=True, cwd=cwd, timeout=120)


def assert_clean_text(data):
    """Text a terminal shows as it is: valid UTF-8, no control byte but newlines, no C1
    control character."""
    text = data.decode("utf-8")  # raises on invalid UTF-8
    assert not any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F for c in text), repr(text)
    return text


def snapshot(directory):
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in directory.iterdir()}


def refused(proc, directory, before, *words):
    """Exit 2, one clean line naming every word, and the directory as it was."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    err = assert_clean_text(proc.stderr)
    assert len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    assert snapshot(directory) == before
    return err


@pytest.fixture
def a01(tmp_path):
    rng = np.random.default_rng(43)
    a = (rng.random((40, 64)) < 0.2).astype(np.uint8)
    np.save(tmp_path / "a.npy", a)
    return a


# ---------------------------------------------------------------- text that reaches a terminal or JSON
def test_json_names_with_quotes_and_escape_bytes_parse(tmp_path, a01):
    """--json of gram and map: an output name with a quote, a backslash, control bytes and
    invalid UTF-8 is valid JSON; valid characters come back as they were, invalid bytes as
    U+FFFD."""
    out = os.fsencode(tmp_path) + b"/" + ESC_NAME
    want = os.fsdecode(out).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    proc = run_bytes("gram", tmp_path / "a.npy", "-o", out, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.decode("utf-8"))["output"] == want
    os.unlink(out)
    proc = run_bytes("map", "-o", out, "--json", "--", "a * 2", b"a=" + os.fsencode(tmp_path / "a.npy"))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.decode("utf-8"))
    assert got["output"] == want and got["expression"] == "a * 2"
    assert np.array_equal(np.load(out), a01 * 2)


def test_summary_and_errors_escape_names(tmp_path, a01):
    """The summary line naming the output, and errors naming a missing input or a bad
    output, show escape bytes and invalid UTF-8 as \\xNN, never raw."""
    out = os.fsencode(tmp_path) + b"/" + ESC_NAME
    proc = run_bytes("gram", tmp_path / "a.npy", "-o", out)
    assert proc.returncode == 0
    err = assert_clean_text(proc.stderr)
    assert "\\x1B[31m\\x07\\xC2\\x9B\\xFF q\"\\.npy" in err
    before = snapshot(tmp_path)
    missing = os.fsencode(tmp_path) + b"/missing\x1b]0;title\x07.npy"
    refused(run_bytes("gram", missing, "-o", tmp_path / "c.npy"), tmp_path, before, "missing\\x1B]0;title\\x07.npy")
    refused(run_bytes("gram", tmp_path / "a.npy", "-o", b"c\x1b[2J.txt"), tmp_path, before, "c\\x1B[2J.txt")
    refused(run_bytes("gram", tmp_path / "a.npy", b"--bogus\x1b[2J", "-o", tmp_path / "c.npy"), tmp_path, before,
            "--bogus\\x1B[2J")


def test_map_syntax_error_caret_under_the_escaped_column(tmp_path, a01):
    proc = run_bytes("map", b"a +\x1b 1", b"a=" + os.fsencode(tmp_path / "a.npy"), "-o", tmp_path / "c.npy")
    assert proc.returncode == 2
    lines = assert_clean_text(proc.stderr).splitlines()
    assert "column 4" in lines[0]
    assert lines[1] == "  a +\\x1B 1" and lines[2] == "     ^"
    assert not (tmp_path / "c.npy").exists()


def test_inspect_names_escaped(tmp_path):
    """A kernel file named with escape bytes: inspect's error names it escaped."""
    path = os.fsencode(tmp_path) + b"/k\x1b[5m\xfe.ptx"
    with open(path, "wb") as f:
        f.write(b"not ptx at all\n")
    before = snapshot(tmp_path)
    proc = run_bytes("inspect", path, "--no-gpu")
    assert proc.returncode == 2, proc.stderr
    err = assert_clean_text(proc.stderr)
    assert len(err.splitlines()) == 1 and "k\\x1B[5m\\xFE.ptx" in err
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- -- and options given twice
def test_double_dash_ends_options(tmp_path, a01):
    a = f"a={tmp_path / 'a.npy'}"
    for expr, want in (("-a", -a01), ("-a * 2", -a01 * 2)):
        out = tmp_path / "c.npy"
        proc = run_bytes("map", "-o", out, "-q", "--", expr, a)
        assert proc.returncode == 0, proc.stderr
        assert np.array_equal(np.load(out), want) and proc.stderr == b""
        out.unlink()
    proc = run_bytes("map", "--reduce", "sum", "--", "-a", a)
    assert proc.returncode == 0 and int(proc.stdout.split()[0]) == int((-a01).sum())  # numpy's uint8 wraps
    # gram: an input whose name starts with '-' comes after --
    os.rename(tmp_path / "a.npy", tmp_path / "-a.npy")
    proc = run_bytes("gram", "-o", "c.npy", "-q", "--", "-a.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(tmp_path / "c.npy"), reference(a01))


def test_unknown_option_points_at_double_dash(tmp_path, a01):
    before = snapshot(tmp_path)
    a = f"a={tmp_path / 'a.npy'}"
    refused(run_bytes("map", "-a * 2", a, "-o", tmp_path / "c.npy"), tmp_path, before, "unknown option -a * 2", " -- ")
    refused(run_bytes("map", "-o", tmp_path / "c.npy", "--", "-a", a, "-q"), tmp_path, before, "'-q' is not an input",
            "options go before --")
    refused(run_bytes("gram", tmp_path / "a.npy", "-x", "-o", tmp_path / "c.npy"), tmp_path, before,
            "unknown option -x", " -- ")


@pytest.mark.parametrize("args, name", [
    (["gram", "{a}", "-o", "{d}/c.npy", "-o", "{d}/d.npy"], "-o"),
    (["gram", "{a}", "-o", "{d}/c.npy", "--output={d}/d.npy"], "--output"),
    (["gram", "{a}", "--metric", "jaccard", "--metric", "counts", "-o", "{d}/c.npy"], "--metric"),
    (["gram", "{a}", "--topk", "3", "--topk", "4", "-o", "{d}/c.npz"], "--topk"),
    (["gram", "{a}", "--threads", "1", "--threads=2", "-o", "{d}/c.npy"], "--threads"),
    (["map", "a", "a={a}", "-o", "{d}/c.npy", "-o", "{d}/d.npy"], "-o"),
    (["map", "a", "a={a}", "--dtype", "int8", "--dtype", "int16", "-o", "{d}/c.npy"], "--dtype"),
    (["gen", "--rows", "4", "--rows", "5", "--cols", "8", "--density", "0.5", "-o", "{d}/g.npy"], "--rows"),
    (["inspect", "{a}", "--arch", "sm_80", "--arch", "sm_90"], "--arch"),
])
def test_option_given_twice(tmp_path, a01, args, name):
    before = snapshot(tmp_path)
    argv = [x.format(a=tmp_path / "a.npy", d=tmp_path) for x in args]
    refused(run_bytes(*argv), tmp_path, before, f"option {name} given twice")


def test_set_repeats(tmp_path, a01):
    proc = run_bytes("map", "a * x + y", f"a={tmp_path / 'a.npy'}", "--set", "x=2", "--set", "y=3", "-o",
                     tmp_path / "c.npy", "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(tmp_path / "c.npy"), a01 * 2 + 3)


def test_quiet_and_double_dash_in_help():
    for command in ("gram", "map", "matmul", "gen"):
        text = run_bytes(command, "--help").stdout.decode()
        assert "-q, --quiet" in text, command
    for command in ("gram", "map"):
        assert "\n  --  " in run_bytes(command, "--help").stdout.decode()


# ---------------------------------------------------------------- what runs
def test_threads_past_the_tiles_say_what_ran(tmp_path, a01):
    """--threads 1000 on a one-tile job: the plan and the summary give the threads that run,
    and stderr says so once."""
    plan = run_bytes("gram", tmp_path / "a.npy", "--backend", "cpu", "--threads", "1000", "--plan", "--json", "-o",
                     tmp_path / "c.npy")
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert 1 <= planned["threads"] <= planned["tiles"] < 1000
    proc = run_bytes("gram", tmp_path / "a.npy", "--backend", "cpu", "--threads", "1000", "--json", "-o",
                     tmp_path / "c.npy")
    assert proc.returncode == 0, proc.stderr
    ran = json.loads(proc.stdout)["threads"]
    assert ran == planned["threads"]
    err = assert_clean_text(proc.stderr).splitlines()
    assert err == [f"outcore: --threads 1000: ran {ran} (one per tile or block of rows; more would have nothing to do)"]
    text = run_bytes("gram", tmp_path / "a.npy", "--backend", "cpu", "--threads", "1000", "--plan", "-o",
                     tmp_path / "c.npy").stdout.decode()
    assert f"threads  {ran} workers (one per tile: 1000 asked)" in text


def test_sparse_threads_past_the_blocks_say_what_ran(tmp_path):
    """The sparse path runs one thread per block of 64 rows: 300 rows, 5 threads."""
    a = (np.random.default_rng(3).random((300, 5000)) < 0.001).astype(np.uint8)
    np.save(tmp_path / "s.npy", a)
    args = ["gram", tmp_path / "s.npy", "--algorithm", "sparse", "--threads", "100", "-o", tmp_path / "c.npy", "--json"]
    assert json.loads(run_bytes(*args, "--plan").stdout)["threads"] == 5
    proc = run_bytes(*args)
    assert proc.returncode == 0 and json.loads(proc.stdout)["threads"] == 5
    assert "--threads 100: ran 5" in assert_clean_text(proc.stderr)


def test_map_threads_past_the_blocks_say_what_ran(tmp_path, a01):
    proc = run_bytes("map", "a + 1", f"a={tmp_path / 'a.npy'}", "--threads", "1000", "--json", "-o", tmp_path / "c.npy")
    assert proc.returncode == 0, proc.stderr
    ran = json.loads(proc.stdout)["threads"]
    assert 1 <= ran < 1000
    assert assert_clean_text(proc.stderr).splitlines() == [
        f"outcore: --threads 1000: ran {ran} (one per block of the result; more would have nothing to do)"]


def test_threads_beyond_the_limit_refused(tmp_path, a01):
    before = snapshot(tmp_path)
    refused(run_bytes("gram", tmp_path / "a.npy", "--threads", "5000", "-o", tmp_path / "c.npy"), tmp_path, before,
            "from 1 to 4096")


def test_gpu_options_without_a_gpu_warn(tmp_path, a01):
    for args in (["gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy"],
                 ["map", "a", f"a={tmp_path / 'a.npy'}", "-o", tmp_path / "m.npy"]):
        proc = run_bytes(*args, "--backend", "cpu", "--gpu-mem", "2G", "-q")
        assert proc.returncode == 0
        assert assert_clean_text(proc.stderr).splitlines() == [
            "outcore: warning: --gpu-mem 2G has no effect with --backend cpu"]
    # The other options only a GPU job reads, one line each, after a job that still ran.
    np.save(tmp_path / "f.npy", a01.astype(np.float64))
    for args, lines in ((["gram", tmp_path / "a.npy", "-o", tmp_path / "c.npy", "--device", "1", "--gpu-mem-mode",
                          "reserve"], ["--device 1", "--gpu-mem-mode reserve"]),
                        (["matmul", tmp_path / "f.npy", "--gram", "-o", tmp_path / "g.npy", "--tf32", "--device", "2"],
                         ["--device 2", "--tf32"])):
        proc = run_bytes(*args, "--backend", "cpu", "-q")
        assert proc.returncode == 0
        assert assert_clean_text(proc.stderr).splitlines() == [
            f"outcore: warning: {line} has no effect with --backend cpu" for line in lines]


# ---------------------------------------------------------------- smaller cases
def test_topk_far_beyond_the_rows(tmp_path, a01):
    """A 3.6 KB input once made a 600 MB file: K past the columns is refused."""
    np.save(tmp_path / "b.npy", a01[:5])
    before = snapshot(tmp_path)
    refused(run_bytes("gram", tmp_path / "a.npy", tmp_path / "b.npy", "--topk", "50000000", "-o", tmp_path / "t.npz"),
            tmp_path, before, "top-50000000", "K may be at most 5")


def test_gen_plant_past_the_rows(tmp_path):
    before = snapshot(tmp_path)
    refused(run_bytes("gen", "--rows", "10", "--cols", "64", "--density", "0.1", "--plant", "6", "-o",
                      tmp_path / "g.npy"), tmp_path, before, "--plant 6", "plant at most 5")
    proc = run_bytes("gen", "--rows", "10", "--cols", "64", "--density", "0.1", "--plant", "5", "-q", "-o",
                     tmp_path / "g.npy")
    assert proc.returncode == 0 and np.load(tmp_path / "g.npy").shape == (10, 64)


def test_requests_no_memory_holds_fail_in_one_line(tmp_path):
    """Sizes whose arithmetic would wrap (planted pairs of 2^60 and 2^61 rows, a demo matrix of
    2^61 columns) end in one line and exit 1, promptly, leaving nothing: the demo out of
    memory; gen at its output's size, which no file system holds, before it picks the pairs
    (tests/test_gen_rows.c checks the pairs' own refusal)."""
    before = snapshot(tmp_path)
    for plant in (2**60, 2**61):
        proc = run_bytes("gen", "--rows", 2**62, "--cols", "1", "--density", "0.5", "--plant", plant, "-o",
                         tmp_path / "g.npy")
        err = assert_clean_text(proc.stderr)
        assert proc.returncode == 1 and len(err.splitlines()) == 1 and "g.npy" in err, (proc.returncode, err)
        assert "needs" in err and "free" in err, err
    proc = run_bytes("demo", "--rows", "64", "--cols", 2**61, cwd=tmp_path)
    err = assert_clean_text(proc.stderr)
    assert proc.returncode == 1 and len(err.splitlines()) == 1 and "out of" in err, (proc.returncode, err)
    assert snapshot(tmp_path) == before


def test_map_past_its_inputs_and_scalars(tmp_path, a01):
    """64 inputs and 64 --set scalars run; one more of either is refused in one line."""
    before = snapshot(tmp_path)
    a = tmp_path / "a.npy"
    inputs = [f"a{i}={a}" for i in range(64)]
    sets = [x for i in range(64) for x in ("--set", f"s{i}=1")]
    expr = "+".join(f"a{i}" for i in range(64)) + "+" + "+".join(f"s{i}" for i in range(64))
    refused(run_bytes("map", *sets, "-o", tmp_path / "c.npy", "--", expr, *inputs, f"a64={a}"), tmp_path, before,
            "at most 64 inputs")
    refused(run_bytes("map", *sets, "--set", "s64=1", "-o", tmp_path / "c.npy", "--", expr, *inputs), tmp_path,
            before, "at most 64 --set scalars")


@pytest.mark.parametrize("args, words", [
    (["demo", "--rows"], ["option --rows needs a value (see outcore demo --help)"]),
    (["gram", "{a}", "--metric"], ["option --metric needs a value (see outcore gram --help)"]),
    # A misspelt option names the nearest of the command's own, a glued short option its
    # split; a command without positional arguments does not suggest passing it after --.
    (["devices", "--bandwith"], ["unknown option --bandwith (did you mean --bandwidth?"]),
    (["gram", "{a}", "--metirc", "jaccard", "-o", "{d}/c.npy"], ["did you mean --metric?"]),
    (["gram", "{a}", "--thresold=0.5", "-o", "{d}/c.npy"], ["unknown option --thresold (did you mean --threshold?"]),
    (["matmul", "{a}", "--tranpose-b", "-o", "{d}/c.npy"], ["did you mean --transpose-b?"]),
    (["gram", "{a}", "-o{d}/c.npy"], ["did you mean -o {d}/c.npy?"]),
    (["gen", "--zzz"], ["gen: unknown option --zzz (see outcore gen --help)"]),
    # A flag given a value: its own name is no hint.
    (["gram", "{a}", "--json=true", "-o", "{d}/c.npy"], ["gram: --json takes no value (give --json alone"]),
    (["devices", "--bandwidth=1"], ["devices: --bandwidth takes no value"]),
    (["gram", "{a}", "--gpu-mem", "150%", "-o", "{d}/c.npy"], ["--gpu-mem 150%: a percentage must be more than 0"]),
    (["gram", "{a}", "--host-mem", "0%", "-o", "{d}/c.npy"], ["--host-mem 0%: a percentage must be more than 0"]),
    (["gram", "{a}", "--host-mem", "12XB", "-o", "{d}/c.npy"], ["--host-mem 12XB: expected a size such as 4G"]),
    (["demo", "--backend", "cpu", "--backend", "cpu"], ["option --backend given twice"]),
    (["gram", "{a}", "-o", "{d}/c.npy", "--devices", "0" * 70], ["devices", "too long"]),
])
def test_usage_errors_in_one_line(tmp_path, a01, args, words):
    before = snapshot(tmp_path)
    argv = [x.format(a=tmp_path / "a.npy", d=tmp_path) for x in args]
    err = refused(run_bytes(*argv), tmp_path, before, *(w.format(d=tmp_path) for w in words))
    assert " -- " not in err  # the hint for positional arguments only where no option is near


def test_long_paths_keep_the_problem_in_the_message(tmp_path, a01):
    """A path of almost PATH_MAX bytes is named whole, with what is wrong after it."""
    deep = "/".join(["d" * 250] * 16)  # 4015 bytes, in no folder that exists
    before = snapshot(tmp_path)
    err = refused(run_bytes("gram", tmp_path / "a.npy", "-o", f"{deep}/c.npy", cwd=tmp_path), tmp_path, before)
    assert err.rstrip().endswith("does not exist") and deep in err, err[-200:]
    err = refused(run_bytes("gram", f"{deep}/x.npy", "-o", "c.npy", cwd=tmp_path), tmp_path, before)
    assert f"{deep}/x.npy" in err and "no such file" in err, err[-200:]


def test_clean_takes_double_dash(tmp_path):
    """`--` ends clean's options: what follows is an output, even a name starting with '-'."""
    proc = run_bytes("clean", "--", "-c.npy", "d.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines() == ["-c.npy: nothing to remove", "d.npy: nothing to remove"]


# ---------------------------------------------------------------- one rule for numbers
def test_binarize_reads_float_npy_as_python_does(tmp_path):
    """--binarize reads a float .npy (Python's binarize=True reads the array); 0/1 integer
    and float files need no --binarize; other values name --binarize; NaN is refused."""
    rng = np.random.default_rng(17)
    ones = rng.random((30, 50)) < 0.3
    values = np.where(ones, rng.normal(size=ones.shape) + 5, 0.0)
    np.save(tmp_path / "f.npy", values)
    np.save(tmp_path / "i.npy", ones.astype(np.int64))
    np.save(tmp_path / "h.npy", ones.astype(np.float32))
    want = reference(ones.astype(np.uint8))
    for name, extra in (("f.npy", ["--binarize"]), ("i.npy", []), ("h.npy", []), ("i.npy", ["--binarize"])):
        proc = run_bytes("gram", tmp_path / name, *extra, "-o", tmp_path / "c.npy", "-q")
        assert proc.returncode == 0, proc.stderr
        assert np.array_equal(np.load(tmp_path / "c.npy"), want), name
        (tmp_path / "c.npy").unlink()
    before = snapshot(tmp_path)
    refused(run_bytes("gram", tmp_path / "f.npy", "-o", tmp_path / "c.npy"), tmp_path, before, "f.npy",
            "is not 0 or 1", "float64", "--binarize")
    values[3, 4] = np.nan
    np.save(tmp_path / "n.npy", values)
    before = snapshot(tmp_path)
    refused(run_bytes("gram", tmp_path / "n.npy", "--binarize", "-o", tmp_path / "c.npy"), tmp_path, before,
            "value NaN at row 3, column 4")


def test_aflp_as_float_npy(tmp_path):
    """The real data set saved as float64 is read as its 0/1 text is."""
    a = np.loadtxt(data_file("aflp_markers.txt"), dtype=np.float64)
    np.save(tmp_path / "aflp.npy", a)
    proc = run_bytes("gram", tmp_path / "aflp.npy", "--metric", "jaccard", "-o", tmp_path / "c.npy", "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(tmp_path / "c.npy"), reference(a.astype(np.uint8), metric="jaccard"))


@pytest.mark.parametrize("option, value", [
    ("--threads", " 2"), ("--threads", "2 "), ("--threads", "+2"), ("--threads", "0x2"),
    ("--threshold", " 0.5"), ("--threshold", "+0.5"), ("--threshold", "0x1p-1"), ("--threshold", "0.5 "),
    ("--topk", "-"), ("--threshold", "."), ("--threshold", "1e400"),
])
def test_numbers_are_plain_decimals(tmp_path, a01, option, value):
    """A number is written in plain decimal, as sizes are: a blank on either side, a '+' or a
    hex form are refused alike, naming the option."""
    before = snapshot(tmp_path)
    refused(run_bytes("gram", tmp_path / "a.npy", option, value, "-o", tmp_path / "c.npy"), tmp_path, before,
            option)


@pytest.mark.parametrize("value", ["0.5", ".5", "5e-1", "0.05E+1", "1e-310", "4.9e-324", "1e-400"])
def test_decimal_forms_taken(tmp_path, a01, value):
    """Plain decimals are taken, subnormal ones and those that underflow to 0 included, as
    Python's float() takes them: compared in the float32 result, such a threshold is 0 and
    keeps every pair."""
    proc = run_bytes("gram", tmp_path / "a.npy", "--metric", "jaccard", "--threshold", value, "-o",
                     tmp_path / "p.npz", "-q")
    assert proc.returncode == 0, proc.stderr
    if float(value) < 1e-300:
        rows = np.load(tmp_path / "a.npy").shape[0]
        with np.load(tmp_path / "p.npz") as z:
            assert z["values"].size == rows * (rows - 1) // 2


@pytest.mark.parametrize("metric, value, words", [
    ("jaccard", "1.0000001", "--threshold 1.0000001: a jaccard similarity lies in [0, 1]"),
    ("counts", "2147483648", "--threshold 2147483648: counts are whole numbers from 0 to 64"),
    ("jaccard", "80", "--threshold 80: a jaccard similarity lies in [0, 1]"),  # not 8e+01
])
def test_a_threshold_out_of_range_is_named_as_given(tmp_path, a01, metric, value, words):
    """The refusal prints the threshold in the digits that read back as it: %g's six made
    1.0000001 '1', a value inside the range the message gives."""
    before = snapshot(tmp_path)
    refused(run_bytes("gram", tmp_path / "a.npy", "--metric", metric, "--threshold", value, "-o",
                      tmp_path / "p.npz"), tmp_path, before, words)


def test_uint16_too_narrow_names_the_input(tmp_path):
    np.save(tmp_path / "wide.npy", np.ones((3, 65536), bool))
    before = snapshot(tmp_path)
    refused(run_bytes("gram", tmp_path / "wide.npy", "--dtype", "uint16", "-o", tmp_path / "c.npy"), tmp_path,
            before, "wide.npy: dtype uint16 needs fewer than 65536 columns")


@pytest.mark.parametrize("command", ["gram", "matmul", "map"])
def test_output_named_only_by_its_extension_refused(tmp_path, a01, command):
    """`-o .npy` names a hidden file with no extension (as Python's os.path.splitext says), in
    every command alike: refused, and nothing written."""
    a = tmp_path / "a.npy"
    args = {"gram": [a], "matmul": [a, "--gram"], "map": ["x * 2", f"x={a}"]}[command]
    before = snapshot(tmp_path)
    for out in (".npy", "./.npy", str(tmp_path / ".npy"), "..npy", "...npy"):
        err = refused(run_bytes(command, *args, "-o", out, cwd=tmp_path), tmp_path, before, out.split("/")[-1])
        assert "'.'" not in err, err  # the name has no extension: none is quoted


@pytest.mark.parametrize("command", ["gram", "matmul", "map"])
def test_empty_input_name(tmp_path, command):
    """An empty input name is refused saying so (it printed ": no such file", naming nothing)."""
    args = {"gram": [""], "matmul": ["", "--gram"], "map": ["x * 2", "x="]}[command]
    before = snapshot(tmp_path)
    err = refused(run_bytes(command, *args, "-o", "c.npy", cwd=tmp_path), tmp_path, before)
    assert "an input file's name is empty" in err, err


def test_packed_and_unpacked_inputs_named(tmp_path):
    """A 0/1 byte matrix given --bits, or beside its packed form, is named as such (the
    column counts alone do not say which input is which kind)."""
    rng = np.random.default_rng(3)
    u = (rng.random((20, 300)) < 0.1).astype(np.uint8)
    np.save(tmp_path / "u.npy", u)
    np.save(tmp_path / "p.npy", np.packbits(u, axis=1))
    before = snapshot(tmp_path)
    out = tmp_path / "g.npy"
    refused(run_bytes("gram", tmp_path / "u.npy", "--bits", "300", "-o", out), tmp_path, before,
            "u.npy: --bits 300 needs 38 bytes per row but the rows have 300: one byte a column", "drop --bits")
    for a, b in (("u", "p"), ("p", "u")):
        refused(run_bytes("gram", tmp_path / f"{a}.npy", tmp_path / f"{b}.npy", "-o", out), tmp_path, before,
                "p.npy looks packed (numpy.packbits rows of 300 bits) and", "both packed with --bits 300")
    # the advice runs: both packed
    assert run_bytes("gram", tmp_path / "p.npy", tmp_path / "p.npy", "--bits", "300", "-o", out).returncode == 0
    assert np.array_equal(np.load(out), u.astype(np.int32) @ u.T.astype(np.int32))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_files(tmp_path, a01):
    """/proc is there but creates no files (ENOENT): said so, not that it does not exist."""
    proc = run_bytes("gram", tmp_path / "a.npy", "-o", "/proc/x.npy")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "does not exist" not in err, err
    # root may write there and is refused by the file system; others by the folder's mode
    assert "folder /proc takes no new files" in err or "no write permission in folder /proc" in err, err


def test_closed_standard_streams_never_reach_the_output(tmp_path):
    """With stderr closed the output's temporary was opened as descriptor 2, and the trace's
    lines (OUTCORE_TRACE) were written over the .npy header, exit 0. A closed stream is now held
    by /dev/null: the output is the same as with every stream open, and a closed stdout is
    still reported (exit 1)."""
    a = (np.random.default_rng(5).random((300, 200)) < 0.2).astype(np.uint8)
    np.save(tmp_path / "a.npy", a)
    env = dict(os.environ, OUTCORE_TRACE="1")
    for close in ("2>&-", "<&- 2>&-", "<&-"):
        out = tmp_path / "c.npy"
        proc = subprocess.run(["/bin/sh", "-c", f'exec "$0" gram a.npy -o c.npy --host-mem 1G {close}', outcore_bin()],
                              cwd=tmp_path, env=env, capture_output=True)
        assert proc.returncode == 0, (close, proc.stderr)
        assert np.array_equal(np.load(out), reference(a, a)), close
        out.unlink()
    proc = subprocess.run(["/bin/sh", "-c", 'exec "$0" gram a.npy -o c.npy --host-mem 1G --json >&-', outcore_bin()],
                          cwd=tmp_path, capture_output=True)
    assert proc.returncode == 1 and b"standard output" in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", [["gram", "a.npy"], ["map", "a * 2 + 1", "a=a.npy"]], ids=["gram", "map"])
def test_threads_that_cannot_start_are_named(thread_limited, command):
    """Workers that cannot start (ulimit -u) stop the job in one line naming the limit and
    the way out, exit 1, nothing written."""
    folder, no_threads = thread_limited
    a = (np.random.default_rng(3).random((300, 200)) < 0.5).astype(np.uint8)
    np.save(folder / "a.npy", a)
    args = [outcore_bin(), *command, "-o", "out.npy", "--host-mem", "64M", "--backend", "cpu", "-q"]
    env = dict(os.environ, OUTCORE_COST_CACHE="off")
    proc = subprocess.run(args + ["--threads", "2"], cwd=folder, capture_output=True, text=True, timeout=60,
                          preexec_fn=no_threads, env=env)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "cannot start" in proc.stderr and os.strerror(11) in proc.stderr, proc.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["a.npy"]
    assert "ulimit -u)" in proc.stderr and "give fewer threads (--threads)" in proc.stderr, proc.stderr
