"""The man page outcore(1) says what --help says.

The build generates build/outcore.1 from the CLI's help texts (tools/man/outcore_man.py). Here
groff renders it, and every line of `outcore --help` and of each `outcore <command> --help`
must appear in the rendered page, word for word and in order, each command under its own
section; the page must render without warnings and must be the one the current CLI gives.
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SOURCE_DIR, outcore_bin, run

GENERATOR = SOURCE_DIR / "tools" / "man" / "outcore_man.py"


def project_version():
    text = (SOURCE_DIR / "CMakeLists.txt").read_text()
    return re.search(r"project\(outcore VERSION ([0-9.]+)[ )]", text).group(1)


@pytest.fixture(scope="module")
def page():
    path = Path(outcore_bin()).resolve().parent / "outcore.1"
    if not path.exists():
        pytest.fail(f"{path} was not built (the build makes it when Python 3 is found)")
    return path


@pytest.fixture(scope="module")
def rendered(page):
    if shutil.which("groff") is None:
        pytest.fail("groff is not installed (apt-get install groff-base)")
    proc = subprocess.run(["groff", "-k", "-man", "-Tutf8", "-P-cbou", "-ww", page],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout


def words(text):
    # groff may print a minus sign or a hyphen for \-; the help has ASCII hyphen-minus.
    return " ".join(text.replace("\u2212", "-").replace("\u2010", "-").split())


def commands():
    listing = run("--help").stdout.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listing.splitlines()]


def help_lines(*command):
    """Non-blank lines of a help text as the page shows them: "usage: " dropped (the page prints
    the synopsis alone), a "heading:" line as a subsection title without its colon."""
    text = run(*command, "--help").stdout
    lines = [re.sub(r"^usage: ", "", line) for line in text.splitlines() if line.strip()]
    return [words(re.sub(r"^([A-Za-z][\w ]*):$", r"\1", line)) for line in lines]


def assert_in_order(lines, text, where):
    """Each line in text after the one before it; case aside (subsection titles are capitalised)."""
    text = text.lower()
    position = 0
    for line in lines:
        found = text.find(line.lower(), position)
        assert found >= 0, f"{where}: the man page lacks (or reorders) the help line {line!r}"
        position = found + len(line)


def test_commands_found():
    assert {"gram", "gen", "inspect", "devices", "demo"} <= set(commands())


def test_renders_without_warnings(rendered):
    assert "OUTCORE(1)" in rendered


def test_every_help_line_is_in_the_page(rendered):
    text = words(rendered)
    assert_in_order(help_lines(), text.split("OUTCORE GRAM", 1)[0], "outcore --help")
    sections = re.split(r"OUTCORE ([A-Z]+)(?= )", text)
    by_section = {sections[i].lower(): sections[i + 1] for i in range(1, len(sections) - 1, 2)}
    for command in commands():
        assert command in by_section, f"no section OUTCORE {command.upper()} in the man page"
        assert_in_order(help_lines(command), by_section[command], f"outcore {command} --help")


def choice_lists():
    """(command, the last line of a list of an option's choices, the description line after it)
    of every help text: "auto (default), cpu, cuda", then "auto runs the one ...". A list that
    goes on ("..., uint64,") ends on the next line."""
    found = []
    for command in commands():
        lines = run(command, "--help").stdout.splitlines()
        for line, after in zip(lines, lines[1:]):
            text = line.split("  ")[-1].strip()
            listed = re.fullmatch(r"[\w.+-]+( \(default\))?(, [\w.+-]+( \(default\))?)+", text)
            if listed and after.startswith(" " * 25) and after.strip():
                found.append((command, text, after.strip()))
    return found


def test_a_list_of_choices_ends_its_line(rendered):
    """As in --help, the description under a list of choices starts a line of its own, not
    joined to the list ("auto (default), cpu, cuda auto runs the one ...")."""
    lists = choice_lists()
    assert {command for command, _, _ in lists} >= {"gram", "map", "matmul"}, lists
    for command, listed, after in lists:
        last = listed.split(", ")[-1]
        first = after.split()[0]
        assert re.search(re.escape(last) + r" *\n *" + re.escape(first), rendered), \
            f"outcore {command}: the man page joins {listed!r} to {after!r}"


def test_page_is_current(page, tmp_path):
    """Regenerated from the CLI under test, the page is byte for byte the built one."""
    fresh = tmp_path / "outcore.1"
    subprocess.run([sys.executable, GENERATOR, "--cli", outcore_bin(), "--version", project_version(),
                    "-o", fresh], check=True)
    assert fresh.read_bytes() == page.read_bytes()
