"""The progress bar on a terminal: each command's rate is a number with its unit (map and
matmul, whose work has no bit-MAC size, showed the unit alone, and map's was bit-MAC)."""
import os
import pty
import re
import select
import signal
import subprocess

import numpy as np
import pytest

from conftest import outcore_bin


def bar_of(args, cwd):
    """The second progress bar the command drew on a terminal (stderr), or the last one when
    it ended before a second, or None. The job is stopped with Ctrl-C once a bar is drawn in
    full (the next one begun): its rate is what is read, not its end."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([outcore_bin(), *map(str, args)], cwd=cwd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out, stopped = b"", False
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        out += chunk
        drawn = [b for b in out.decode(errors="replace").split("\r")[:-1] if "ETA" in b]
        if len(drawn) >= 2 and not stopped:
            proc.send_signal(signal.SIGINT)
            stopped = True
    os.close(master)
    assert proc.wait(timeout=120) in ((0, 130) if stopped else (0,)), out
    bars = [b for b in out.decode(errors="replace").split("\r") if "ETA" in b]
    return bars[1] if len(bars) > 1 else bars[-1] if bars else None


@pytest.mark.parametrize("command, unit", [("matmul", "MAC/s"), ("map", " elements/s")])
def test_the_rate_has_a_number(tmp_path, command, unit):
    rng = np.random.default_rng(2)
    if command == "matmul":
        np.save(tmp_path / "a.npy", rng.standard_normal((4000, 3000)))
        np.save(tmp_path / "b.npy", rng.standard_normal((3000, 4000)))
        # tiles of 1024 x 1024 under the budget: a report after each, not only after a band of the whole
        args = ["matmul", "a.npy", "b.npy", "--backend", "cpu", "--threads", "1", "--host-mem", "32M", "-o", "c.npy"]
    else:
        np.save(tmp_path / "x.npy", rng.standard_normal(24_000_000))
        args = ["map", "sin(exp(cos(x))) * tanh(x) + log1p(abs(x))", "x=x.npy", "--backend", "cpu", "--threads", "1",
                "-o", "y.npy"]
    bar = bar_of(args, tmp_path)
    if bar is None:
        pytest.skip("the job ended within the second before a bar is drawn")
    assert re.search(r"%  [0-9.]+ ?[kMGTPE]?" + re.escape(unit) + "  ETA", bar), bar
