"""The name lists the library holds (metrics, map functions and operators), as the CLI, the
binding, the help texts and docs/map.md show them: each read from the library, so they agree
(tests/python/test_name_lists.py: the binding's).
"""
import re

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
    assert proc.stderr == "outcore: --list colours: expected metrics, map-functions or map-operators\n"


def test_every_listed_metric_is_accepted(tmp_path):
    # The options are parsed before the inputs are looked for: an accepted metric leads to
    # the missing-input complaint, an unknown one to the list.
    metrics = listed("metrics")
    for metric in metrics:
        proc = run("gram", "--metric", metric, check=False)
        assert proc.returncode == 2 and "--metric" not in proc.stderr, proc.stderr
    proc = run("gram", "--metric", "dice", check=False)
    expected = ", ".join(metrics[:-1]) + " or " + metrics[-1]
    assert proc.returncode == 2 and proc.stderr == f"outcore: --metric dice: expected {expected}\n"
    help_line = re.search(r"^  --metric M +(.*)$", run("gram", "--help").stdout, re.M).group(1)
    assert help_line.replace(" (default)", "").split(", ") == metrics


def test_every_listed_map_function_is_known(tmp_path):
    functions = listed("map-functions")
    proc = run("map", "nosuch(a)", "a=x.npy", "-o", tmp_path / "o.npy", check=False)
    assert proc.returncode == 2
    assert f"(known: {' '.join(functions)})" in proc.stderr
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
