"""The help texts: `outcore help COMMAND` prints what `outcore COMMAND --help` does, and an
unknown command is refused as `outcore COMMAND` refuses it."""
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
