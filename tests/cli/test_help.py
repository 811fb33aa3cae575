"""The help texts: `outcore help COMMAND` prints what `outcore COMMAND --help` does, and an
unknown command is refused as `outcore COMMAND` refuses it; an option that has a default
states it, in the same words in every command that takes it."""
import re

from conftest import run


def commands():
    listing = run("--help").stdout.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listing.splitlines()]


def test_help_command_is_the_commands_help():
    assert {"gram", "map", "matmul", "gen", "inspect", "devices", "demo", "clean"} <= set(commands())
    for command in commands():
        proc = run("help", command)
        assert proc.stdout == run(command, "--help").stdout and proc.stderr == "", command


def test_help_alone_is_the_usage():
    for args in (["help"], ["help", "help"], ["help", "--help"]):
        proc = run(*args)
        assert proc.stdout == run("--help").stdout and "help COMMAND" in proc.stdout, args


def test_help_of_an_unknown_command_is_refused_as_the_command():
    proc = run("help", "bogus", check=False)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr == run("bogus", check=False).stderr == "outcore: unknown command 'bogus' (see outcore --help)\n"


def test_help_takes_one_command():
    proc = run("help", "gram", "map", check=False)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert "one command at a time" in proc.stderr


def described(command, option):
    """The description of option in `outcore COMMAND --help`, its lines joined."""
    lines = run(command, "--help").stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"^ {{1,4}}{re.escape(option)}( |,|$)", line))
    text = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith(" " * 8):
            break
        text.append(line.strip())
    return " ".join(text)


def test_memory_budgets_state_their_defaults_alike():
    """gram, matmul and map take --host-mem and --gpu-mem with the same defaults, and say so in
    the same words."""
    for option, default in (("--host-mem", "(default 80% of the memory available at start)"),
                            ("--gpu-mem", "(default 90% of free)")):
        firsts = set()
        for command in ("gram", "matmul", "map"):
            text = described(command, option)
            assert default in text, (command, text)
            firsts.add(text.split(default)[0])
        assert len(firsts) == 1, firsts


def test_defaults_stated():
    assert "(default: numpy's result type)" in described("map", "--dtype")
    assert "default: over all elements" in described("map", "--axis")
    assert "default 0" in described("inspect", "--dyn-smem")
    assert "default the compiler's: ptxas 3" in described("inspect", "--opt-level")
