"""What a command prints on standard output is part of its result: when standard output cannot
take it (/dev/full: a full disk), the command says so in one line and exits 1, never 0.
A reduction with no -o prints its value there and nothing else, so a script redirecting it
to a full disk must see the failure."""
import os

import numpy as np
import pytest

from conftest import outcore_bin

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="this system has no /dev/full")


def full_stdout(*args, cwd=None):
    import subprocess
    with open("/dev/full", "w") as full:
        return subprocess.run([outcore_bin(), *map(str, args)], stdout=full, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, timeout=120)


@pytest.mark.parametrize("args", [
    ["--help"],
    ["--version"],
    ["map", "a", "a=v.npy", "--reduce", "sum", "-q"],
    ["map", "a", "a=v.npy", "--reduce", "sum", "--json"],
    ["devices", "--json"],
    ["gram", "--help"],
])
def test_a_full_stdout_fails_the_command(tmp_path, args):
    np.save(tmp_path / "v.npy", np.arange(5.0))
    p = full_stdout(*args, cwd=tmp_path)
    assert p.returncode == 1, (args, p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    # The failing write's cause when the last flush met it (a long text may have failed in
    # an earlier write, whose cause stdio does not keep).
    assert lines[-1] in ("outcore: standard output: No space left on device",
                         "outcore: standard output: a write failed"), p.stderr


def test_an_error_keeps_its_own_status(tmp_path):
    # A usage error exits 2 whatever stdout does.
    p = full_stdout("map", "a", "a=missing.npy", "--reduce", "sum", cwd=tmp_path)
    assert p.returncode == 2 and "missing.npy" in p.stderr


def closed_stdout(*args, cwd=None):
    """The command with a standard output whose reader is gone (a pipe read by nothing)."""
    import subprocess
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([outcore_bin(), *map(str, args)], stdout=write, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, timeout=120)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [["--help"], ["map", "a", "a=v.npy", "--reduce", "sum", "-q"],
                                  ["matmul", "m.npy", "m.npy", "--plan"]])
def test_a_closed_pipe_fails_the_command_in_words(tmp_path, args):
    """A closed pipe is a failed write (EPIPE), said and exit 1, not a silent death by SIGPIPE."""
    np.save(tmp_path / "v.npy", np.arange(5.0))
    np.save(tmp_path / "m.npy", np.ones((4, 4)))
    p = closed_stdout(*args, cwd=tmp_path)
    assert p.returncode == 1, (args, p.returncode, p.stderr)
    assert p.stderr.strip().splitlines()[-1] in ("outcore: standard output: Broken pipe",
                                                 "outcore: standard output: a write failed"), p.stderr


@pytest.mark.parametrize("command", ["matmul", "gram", "map"])
def test_a_file_size_limit_is_an_io_error(tmp_path, command):
    """A write past ulimit -f fails as a full disk does (one line, exit 1, nothing left),
    not by SIGXFSZ killing the process beside its temporary file."""
    import resource
    import subprocess
    rng = np.random.default_rng(1)
    np.save(tmp_path / "a.npy", rng.standard_normal((300, 200)))
    np.save(tmp_path / "b.npy", (rng.random((300, 256)) < 0.2).astype(np.uint8))
    args = {"matmul": ["matmul", "a.npy", "a.npy", "--transpose-b"], "gram": ["gram", "b.npy"],
            "map": ["map", "a * 2", "a=a.npy"]}[command]
    limit = 64 * 1024  # bytes: the inputs are larger, every result too

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    before = sorted(os.listdir(tmp_path))
    p = subprocess.run([outcore_bin(), *args, "-o", "c.npy", "-q"], stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                       timeout=120, preexec_fn=small_files)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "c.npy" in p.stderr, p.stderr
    assert sorted(os.listdir(tmp_path)) == before
