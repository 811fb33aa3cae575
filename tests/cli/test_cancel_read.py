"""Ctrl-C while the CLI reads its inputs, and between the reading and the job: exit 130,
"cancelled" on stderr and no output (docs/cli.md, "Exit status"), never the job run to its
end because the reading, or the job's start, let the signal go."""
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import outcore_bin

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")


def left_beside(folder, name):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(name))


def mapped(pid, path):
    """Whether the process maps path (its reader holds the input mapped while it reads)."""
    try:
        return str(path) in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def stop_while_reading(job, path, deadline):
    """Stops job (SIGSTOP) inside the read of path: the file stays mapped while its reader
    runs, and a look at the header (the checks before the read) maps it only for an instant,
    so a stop that finds it mapped is inside the read. False when the read was missed."""
    while time.monotonic() < deadline and job.poll() is None:
        if mapped(job.pid, path):
            job.send_signal(signal.SIGSTOP)
            while job.poll() is None and not stopped(job.pid):
                time.sleep(0.001)
            if mapped(job.pid, path):
                return True
            job.send_signal(signal.SIGCONT)
    return False


def stopped(pid):
    """Whether the process's main thread has stopped (state T in /proc/PID/stat)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def write_csv(path, a):
    with open(path, "w") as f:
        for row in a:
            f.write(",".join("01"[x] for x in row) + "\n")


@pytest.mark.parametrize("kind", ["float64 npy", "csv"])
def test_sigint_while_reading_stops_the_read(tmp_path, kind):
    """SIGINT during the read of a float64 .npy (packed as it is converted) or a .csv (parsed
    twice): the read stops ("reading was cancelled"), exit 130, no output. The process is
    stopped inside the read, so the signal lands there however fast the machine reads."""
    a = np.random.default_rng(0).random((1024, 8192)) < 0.1
    if kind == "csv":
        path = tmp_path / "a.csv"
        write_csv(path, a.astype(np.uint8)[:512])  # 8 MB of text
    else:
        path = tmp_path / "a.npy"
        np.save(path, a.astype(np.float64))  # 64 MB
    path = Path(os.path.realpath(path))
    out = tmp_path / "c.npz"
    cmd = [outcore_bin(), "gram", str(path), "--topk", "2", "-o", str(out), "--threads", "2"]
    for _ in range(8):
        job = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        caught = stop_while_reading(job, path, time.monotonic() + 60)
        if caught:
            job.send_signal(signal.SIGINT)
            job.send_signal(signal.SIGCONT)
        err = job.communicate(timeout=120)[1]
        if not caught:  # the read ended before a look found it: again
            out.unlink(missing_ok=True)
            continue
        assert job.returncode == 130, (job.returncode, err)
        assert left_beside(tmp_path, "c.npz") == []
        if f"{path}: reading was cancelled" not in err:
            # Stopped in the look at the header before the read (the file is mapped there
            # too, for an instant): no read starts after the signal, and that is all.
            assert err.strip() == "outcore: cancelled", err
            continue
        return
    pytest.fail("the read was never caught under way")


# write(2)'s number in /proc/PID/syscall, by machine (os.uname().machine).
WRITE_SYSCALL = {"x86_64": 1, "aarch64": 64}


def blocked_writing_stderr(pid):
    """Whether the process's main thread is asleep in a write to its stderr, a full pipe:
    /proc/PID/syscall names the call (write) and its first argument (fd 2) while the thread
    is blocked in it, or /proc/PID/wchan names the kernel's wait for a full pipe (where the
    kernel says: on some it reads 0 whatever the thread waits for, as it does while the
    thread runs)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        call = Path(f"/proc/{pid}/syscall").read_text().split()  # "running" while it runs
        if state == "S" and len(call) > 1 and call[0] == str(WRITE_SYSCALL.get(os.uname().machine)) \
                and int(call[1], 16) == 2:
            return True
    except (OSError, IndexError, ValueError):
        pass
    try:
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def test_sigint_between_the_read_and_the_job_is_not_lost(tmp_path):
    """A signal caught after the input's read, before the job starts (whose start clears the
    context's cancel), is the job's: exit 130, "cancelled", no output, where the job used to
    run to its end. The CLI is held at that point by a full stderr pipe: with OUTCORE_TRACE
    its first line on stderr is the read's, written as the read ends."""
    np.save(tmp_path / "a.npy", (np.random.default_rng(1).random((300, 500)) < 0.2).astype(np.uint8))
    out = tmp_path / "c.npy"
    r, w = os.pipe()
    os.set_blocking(w, False)
    filler = b"x" * 4096
    try:
        while True:
            os.write(w, filler)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    job = subprocess.Popen([outcore_bin(), "gram", str(tmp_path / "a.npy"), "-o", str(out), "--threads", "2"],
                           stderr=w, env=dict(os.environ, OUTCORE_TRACE="1"))
    os.close(w)
    try:
        deadline = time.monotonic() + 60
        while job.poll() is None and time.monotonic() < deadline and not blocked_writing_stderr(job.pid):
            time.sleep(0.01)
        assert job.poll() is None, "the job ended with its stderr full"
        assert blocked_writing_stderr(job.pid), "the job was not seen blocked writing its trace in 60 s"
        job.send_signal(signal.SIGINT)
        with os.fdopen(r, "rb") as pipe:
            err = pipe.read().decode(errors="replace").lstrip("x")
        job.wait(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 130, (job.returncode, err)
    assert "outcore: cancelled" in err, err
    assert left_beside(tmp_path, "c.npy") == []
