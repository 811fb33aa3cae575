"""The name lists the library holds (metrics, dtypes, backends, algorithms; map's functions,
operators, dtypes and reductions; matmul's result dtypes; the input formats and the Gram
result's file formats), as the CLI's messages, help texts and docs/map.md show them: each read
from the library, so they agree (tests/python/test_name_lists.py: the binding's).
"""
import re

import pytest

from conftest import SOURCE_DIR, run


def listed(what):
    return run("--list", what).stdout.split("\n")[:-1]


def test_list_prints_one_name_a_line():
    assert listed("metrics")[:4] == ["counts", "jaccard", "cosine", "hamming"]
    assert {"abs", "sqrt", "arctan2", "where", "clip"} <= set(listed("map-functions"))
    assert {"+", "//", "**", "~"} <= set(listed("map-operators"))


def test_list_refuses_an_unknown_list():
    proc = run("--list", "colours", check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("outcore: --list colours: expected metrics, dtypes, backends, algorithms, gpu-mem-modes, "
                           "map-functions, map-operators, map-dtypes, map-reductions, matmul-dtypes, input-formats, "
                           "output-formats, dense-formats, topk-formats or threshold-formats\n")


def test_the_reductions_and_matmul_dtypes_are_listed():
    assert listed("map-reductions") == ["sum", "mean", "min", "max"]
    # The result dtypes a .npy file holds: bfloat16 is a result from memory alone.
    assert listed("matmul-dtypes") == ["float64", "float32", "float16", "int32", "bool"]
    synopsis = run("map", "--help").stdout.split("\n")[1]
    assert f"--reduce {'|'.join(listed('map-reductions'))} [--axis N]" in synopsis


def test_the_input_formats_are_the_libraries(tmp_path):
    formats = listed("input-formats")
    assert formats == ["npy", "mtx", "txt", "csv"]
    # The reader takes each (a missing file is looked for, not refused by its suffix), and
    # the help and the message for another suffix name them all.
    for fmt in formats:
        proc = run("gram", str(tmp_path / f"missing.{fmt}"), "-o", str(tmp_path / "o.npy"), check=False)
        assert proc.returncode == 2 and "no such file" in proc.stderr, proc.stderr
    suffixes = ", ".join("." + f for f in formats[:-1])
    proc = run("gram", str(tmp_path / "a.dat"), "-o", str(tmp_path / "o.npy"), check=False)
    assert proc.stderr.endswith(f"supported inputs are {suffixes} and .{formats[-1]}\n"), proc.stderr
    assert f"\nInputs: {suffixes} or .{formats[-1]} (" in run("gram", "--help").stdout


def test_the_output_formats_are_the_libraries():
    formats = listed("output-formats")
    assert formats == ["npy", "npz", "mtx", "tsv"]
    kinds = {kind: listed(f"{kind}-formats") for kind in ("dense", "topk", "threshold")}
    assert kinds == {"dense": ["npy"], "topk": ["npz", "tsv"], "threshold": ["npz", "mtx", "tsv"]}
    for names in kinds.values():  # each list keeps the table's order
        assert names == [f for f in formats if f in names]
    # The usage lines name them.
    usage = run("gram", "--help").stdout
    assert f"--topk K -o {'|'.join('OUT.' + f for f in kinds['topk'])} [options]" in usage
    assert f"--threshold T -o {'|'.join('OUT.' + f for f in kinds['threshold'])} [options]" in usage


@pytest.mark.parametrize("kind,args", [("dense", []), ("topk", ["--topk", "1"]), ("threshold", ["--threshold", "1"])])
def test_every_listed_format_is_accepted(tmp_path, kind, args):
    # Each format of the kind's list gets past the output's check (to the missing input);
    # every other format is refused with the list.
    holding = listed(f"{kind}-formats")
    for fmt in listed("output-formats"):
        proc = run("gram", tmp_path / "missing.npy", *args, "-o", tmp_path / f"out.{fmt}", check=False)
        assert proc.returncode == 2
        refused = "result is written as" in proc.stderr
        assert refused == (fmt not in holding), proc.stderr
        if refused:
            dotted = ["." + f for f in holding]
            expected = dotted[0] if len(dotted) == 1 else ", ".join(dotted[:-1]) + " or " + dotted[-1]
            assert f"written as {expected}, not '.{fmt}'" in proc.stderr, proc.stderr


@pytest.mark.parametrize("command,option,what", [("gram", "--metric", "metrics"), ("gram", "--dtype", "dtypes"),
                                                 ("gram", "--backend", "backends"), ("gram", "--algorithm", "algorithms"),
                                                 ("gram", "--gpu-mem-mode", "gpu-mem-modes"),
                                                 ("map", "--dtype", "map-dtypes"), ("map", "--backend", "backends"),
                                                 ("map", "--reduce", "map-reductions"),
                                                 ("matmul", "--dtype", "matmul-dtypes")])
def test_every_listed_value_is_accepted(command, option, what):
    # The options are parsed before the inputs are looked for: an accepted value leads to
    # another complaint, an unknown one to the list.
    names = listed(what)
    assert names
    for name in names:
        proc = run(command, option, name, check=False)
        assert proc.returncode == 2 and option not in proc.stderr, proc.stderr
    proc = run(command, option, "nonsense", check=False)
    expected = ", ".join(names[:-1]) + " or " + names[-1]
    assert proc.returncode == 2 and proc.stderr == f"outcore: {option} nonsense: expected {expected}\n"


def help_list(command, option):
    """The names on an option's help line, with the lines its list goes on to (a line ending
    in "," goes on), "(default)" dropped."""
    lines = run(command, "--help").stdout.split("\n")
    at = next(i for i, line in enumerate(lines) if re.match(rf"^  {option} \S+ +\S", line))
    text = lines[at][25:]
    while text.endswith(","):
        at += 1
        assert lines[at].startswith(" " * 25), lines[at]
        text += " " + lines[at].strip()
    return text.replace(" (default)", "").split(", ")


@pytest.mark.parametrize("command,option,what", [("gram", "--metric", "metrics"), ("gram", "--dtype", "dtypes"),
                                                 ("gram", "--backend", "backends"), ("gram", "--algorithm", "algorithms"),
                                                 ("gram", "--gpu-mem-mode", "gpu-mem-modes"),
                                                 ("map", "--dtype", "map-dtypes"), ("map", "--backend", "backends"),
                                                 ("map", "--reduce", "map-reductions"),
                                                 ("matmul", "--dtype", "matmul-dtypes"),
                                                 ("matmul", "--backend", "backends")])
def test_the_help_lines_list_them(command, option, what):
    assert help_list(command, option) == listed(what)
    for line in run(command, "--help").stdout.split("\n"):
        if line.startswith(f"  {option} "):
            assert len(line) <= 88, line


def test_every_listed_map_function_is_known(tmp_path):
    functions = listed("map-functions")
    proc = run("map", "nosuch(a)", "a=x.npy", "-o", tmp_path / "o.npy", check=False)
    assert proc.returncode == 2
    assert f"known: {' '.join(functions)})" in proc.stderr
    usage = " ".join(run("map", "--help").stdout.split())
    assert f"functions: {' '.join(functions)}." in usage
    assert f"Operators: {' '.join(listed('map-operators'))}; functions:" in usage


def test_docs_map_lists_the_functions_and_operators():
    text = (SOURCE_DIR / "docs" / "map.md").read_text()
    row = re.search(r"^\| functions \| `([^`]*)` \|$", text, re.M)
    assert row, "docs/map.md: no functions row"
    assert row.group(1).split() == listed("map-functions")
    row = re.search(r"^\| operators \| (.*) \|$", text, re.M)
    assert row, "docs/map.md: no operators row"
    documented = re.findall(r"`([^`]+)`", row.group(1))
    assert set(listed("map-operators")) <= {op for group in documented for op in group.split()}
