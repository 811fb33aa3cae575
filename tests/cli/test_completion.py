"""Bash completion (tools/completion/outcore.bash), run by bash as readline would run it.

Commands and options must be those --help lists; each option value offered must be accepted by
the CLI and each value --help names must be offered; file names are filtered by extension.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SOURCE_DIR, outcore_bin, run

SCRIPT = SOURCE_DIR / "tools" / "completion" / "outcore.bash"
FILES = ["a.npy", "b.mtx", "c.txt", "d.csv", "e.npz", "f.tsv", "g.ptx", "h.cubin", "i.fatbin", "j.json"]
if shutil.which("bash") is None:
    pytest.skip("bash is not installed", allow_module_level=True)


def complete(cwd, *words):
    """COMPREPLY for the command line `words`, the last word being the one under the cursor."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _outcore; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "-c", script, "bash", SCRIPT, Path(outcore_bin()).resolve(), *words],
                          capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


@pytest.fixture
def workdir(tmp_path):
    for name in FILES:
        (tmp_path / name).touch()
    (tmp_path / "sub").mkdir()
    return tmp_path


def with_ext(*exts):
    return {name for name in FILES if name.rsplit(".", 1)[1] in exts} | {"sub"}


def commands():
    listing = run("--help").stdout.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return {line.split()[0] for line in listing.splitlines()}


def listed_options(command):
    """Every option named in the option list of `outcore <command> --help` and its synopsis."""
    text = run(command, "--help").stdout
    terms = [re.split(r" {2,}", line.strip())[0] for line in text.splitlines() if re.match(r"^ {1,4}-", line)]
    synopsis = text.split("\n\n", 1)[0].replace("usage: ", "").split("\n")  # up to the first blank line
    return set(re.findall(r"(?:^|[ \[])(--?[A-Za-z][\w-]*)", "\n".join(terms + synopsis), re.M))


def test_commands(workdir):
    assert complete(workdir, "") == commands() | {"help", "--help", "--version"}
    assert complete(workdir, "he") == {"help"}
    assert complete(workdir, "g") == {c for c in commands() if c.startswith("g")}


def test_help_completes_a_command(workdir):
    """`outcore help COMMAND` takes one command name, and nothing after it."""
    assert complete(workdir, "help", "") == commands()
    assert complete(workdir, "help", "ma") == {c for c in commands() if c.startswith("ma")}
    assert complete(workdir, "help", "gram", "") == set()


@pytest.mark.parametrize("command", ["gram", "gen", "inspect", "devices", "demo", "matmul"])
def test_options(workdir, command):
    offered = complete(workdir, command, "-")
    assert listed_options(command) | {"--help"} == offered
    assert complete(workdir, command, "--t") == {o for o in offered if o.startswith("--t")}


# (command, option, the --help line that names its values)
VALUE_OPTIONS = [("gram", "--metric"), ("gram", "--dtype"), ("gram", "--backend"), ("gram", "--gpu-mem-mode"),
                 ("gram", "--algorithm"),
                 ("demo", "--backend"), ("map", "--dtype"), ("map", "--reduce"), ("map", "--backend"),
                 ("matmul", "--dtype"), ("matmul", "--backend")]


def values_named_in_help(command, option):
    """The values --help names for an option: in its description with parenthesised remarks
    dropped ("counts (default), jaccard, ..."), or after it in the synopsis ("auto|cpu|cuda")."""
    text = run(command, "--help").stdout
    item = re.search(rf"^ {{1,4}}{option} \S+ {{2,}}(.*)$", text, re.M)
    if item:
        described = re.sub(r"\([^)]*\)", "", item.group(1))
        return set(re.findall(r"[a-z][a-z0-9]*", described)) - {"or"}
    return set(re.search(rf"{option} ([a-z0-9|]+)", text).group(1).split("|"))


def cli_accepts(command, option, value):
    """The CLI parses its options before it looks for inputs: an accepted value leads to another
    complaint (or, for demo, a run with a tiny matrix)."""
    extra = ["--rows", "2", "--cols", "512"] if command == "demo" else []
    proc = run(command, *extra, option, value, check=False)
    return f"{option} {value}" not in proc.stderr and f"{option} auto, cpu or cuda" not in proc.stderr


@pytest.mark.parametrize("command,option", VALUE_OPTIONS)
def test_option_values(workdir, command, option):
    offered = complete(workdir, command, option, "")
    assert offered, f"nothing offered after {option}"
    assert values_named_in_help(command, option) <= offered
    for value in offered:
        assert cli_accepts(command, option, value), f"outcore {command} refuses {option} {value}"
    assert not cli_accepts(command, option, "nonsense")
    # --metric=<TAB>: bash splits at "=".
    assert complete(workdir, command, option, "=", "") == offered
    first = sorted(offered)[0]
    assert complete(workdir, command, option, first[:2]) == {v for v in offered if v.startswith(first[:2])}


@pytest.mark.parametrize("command,option,what", [("gram", "--metric", "metrics"), ("gram", "--dtype", "dtypes"),
                                                 ("gram", "--backend", "backends"), ("map", "--dtype", "map-dtypes"),
                                                 ("gram", "--algorithm", "algorithms"),
                                                 ("gram", "--gpu-mem-mode", "gpu-mem-modes"),
                                                 ("map", "--reduce", "map-reductions"),
                                                 ("matmul", "--dtype", "matmul-dtypes")])
def test_option_values_are_the_libraries(workdir, command, option, what):
    # Each list of values is the library's, as `outcore --list` gives it (matmul's --dtype bool included).
    assert complete(workdir, command, option, "") == set(run("--list", what).stdout.split())


def test_files_by_extension(workdir):
    assert complete(workdir, "gram", "") == with_ext("npy", "mtx", "txt", "csv")
    assert complete(workdir, "gram", "") == with_ext(*run("--list", "input-formats").stdout.split())
    assert complete(workdir, "gram", "a.npy", "-o", "") == with_ext("npy")
    assert complete(workdir, "matmul", "") == with_ext("npy")
    assert complete(workdir, "matmul", "a.npy", "-o", "") == with_ext("npy")
    assert complete(workdir, "gram", "a.npy", "--topk", "5", "-o", "") == with_ext("npz", "tsv")
    assert complete(workdir, "gram", "a.npy", "--threshold", "0.5", "--output", "") == with_ext("npz", "mtx", "tsv")
    assert complete(workdir, "gen", "--rows", "9", "-o", "") == with_ext("npy")
    assert complete(workdir, "inspect", "") == with_ext("ptx", "cubin", "fatbin", "o", "so")
    assert complete(workdir, "clean", "") == with_ext("npy", "npz", "mtx", "tsv")
    assert complete(workdir, "gram", "a") == {"a.npy"}


def test_number_values_get_nothing(workdir):
    assert complete(workdir, "gram", "--threads", "") == set()
    assert complete(workdir, "gen", "--rows", "") == set()
