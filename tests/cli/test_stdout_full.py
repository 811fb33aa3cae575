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
