"""What an output may replace and what `clean` goes on with: another user's file in a sticky
folder is refused before any work (the rename at the end would fail); a write-only output
(mode 0200) is resumed by its owner and keeps its mode; `clean` cleans every output it is
given, past one that fails."""
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import outcore_bin, run

SETPRIV = shutil.which("setpriv")
as_another_user = pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None,
                                     reason="needs root and setpriv to run the CLI as another user")


def as_nobody(*args, env=None):
    cmd = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", outcore_bin(), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))


@pytest.fixture
def a():
    """An input in a folder of /tmp that another user can reach (pytest's own are root's 0700)."""
    d = Path(tempfile.mkdtemp(prefix="outcore-rules-", dir="/tmp"))
    os.chmod(d, 0o777)
    np.save(d / "a.npy", (np.random.default_rng(4).random((300, 200)) < 0.2).astype(np.uint8))
    os.chmod(d / "a.npy", 0o644)
    yield d / "a.npy"
    shutil.rmtree(d, ignore_errors=True)


@as_another_user
def test_another_users_file_in_a_sticky_folder_is_refused_before_any_work(a):
    sticky = a.parent / "sticky"
    sticky.mkdir(mode=0o1777)
    os.chmod(sticky, 0o1777)
    (sticky / "C.npy").write_text("old")
    os.chmod(sticky / "C.npy", 0o666)
    proc = as_nobody("gram", a, "-o", sticky / "C.npy", "-q")
    assert proc.returncode == 2, proc.stderr
    assert "another user's (uid 0) in the sticky folder" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert (sticky / "C.npy").read_text() == "old" and sorted(os.listdir(sticky)) == ["C.npy"]


@as_another_user
def test_a_write_only_output_is_resumed_and_keeps_its_mode(a):
    d = a.parent / "wo"
    d.mkdir()
    os.chown(d, 65534, 65534)
    out = d / "C.npy"
    args = ["gram", a, "-o", out, "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "--resume"]
    ref = as_nobody("gram", a, "-o", d / "ref.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q")
    assert ref.returncode == 0, ref.stderr
    assert as_nobody("gram", a, "-o", out, "-q").returncode == 0  # nobody's own file, then write-only
    os.chmod(out, 0o200)
    killed = as_nobody(*args, env={"OUTCORE_RESUME_KILL_AFTER": "2", "OUTCORE_RESUME_INTERVAL": "0"})
    assert killed.returncode == -9, killed.stderr
    resumed = as_nobody(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o200
    assert out.read_bytes() == (d / "ref.npy").read_bytes()


def test_clean_goes_on_past_an_output_that_fails(tmp_path):
    (tmp_path / "D.npy.tmp-999999-abcdefgh").write_text("t")
    proc = run("clean", tmp_path / "missing" / "x.npy", tmp_path / "D.npy", check=False)
    assert proc.returncode == 2, proc.stderr
    assert "missing" in proc.stderr and "removed" in proc.stdout
    assert not (tmp_path / "D.npy.tmp-999999-abcdefgh").exists()


def test_clean_and_the_names_a_job_refuses(tmp_path):
    """What a job refuses under its journal's names, clean deals with: a link under the
    snapshot's name is removed (its target untouched); a folder under the journal's name is
    no journal, and clean says to remove it, exit 2, touching nothing in it."""
    target = tmp_path / "target.txt"
    target.write_text("keep")
    (tmp_path / "X.npz.outcore-journal.topk").symlink_to(target)
    proc = run("clean", tmp_path / "X.npz")
    assert "removed" in proc.stdout and not os.path.lexists(tmp_path / "X.npz.outcore-journal.topk")
    assert target.read_text() == "keep"
    (tmp_path / "Z.npz.outcore-journal").mkdir()
    (tmp_path / "Z.npz.outcore-journal" / "inside").write_text("x")
    proc = run("clean", tmp_path / "Z.npz", check=False)
    assert proc.returncode == 2 and "a folder under the resume journal's name" in proc.stderr, proc.stderr
    assert (tmp_path / "Z.npz.outcore-journal" / "inside").read_text() == "x"


@as_another_user
def test_clean_names_a_file_it_cannot_remove(a):
    """A journal or a stale temporary that clean may not remove (its folder is not the
    user's to write) is one line naming it and exit 1, never "nothing to remove" and exit 0;
    a file given as a folder is named as not a folder."""
    d = a.parent / "ro"
    d.mkdir()
    journal, temp = d / "C.npy.outcore-journal", d / "C.npy.tmp-999999-abcdefgh"  # no process 999999
    journal.write_text("j")
    temp.write_text("t")
    os.chmod(d, 0o555)
    for name in ("C.npy.outcore-journal", "C.npy.tmp-999999-abcdefgh"):
        proc = as_nobody("clean", d / "C.npy")
        assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and name in proc.stderr and "cannot remove" in proc.stderr, \
            proc.stderr
        assert "nothing to remove" not in proc.stdout and temp.exists()
        journal.unlink(missing_ok=True)
    proc = run("clean", f"{a}/C.npy", check=False)
    assert proc.returncode == 2 and f"{a} is not a folder" in proc.stderr, proc.stderr


CHATTR = shutil.which("chattr")


@pytest.mark.parametrize("attribute", ["+a", "+i"])
def test_an_output_no_rename_can_replace_is_refused_before_any_work(tmp_path, attribute):
    """An append-only or immutable output (chattr +a, +i), or a folder that is so, would take
    the whole job and then refuse its rename: refused first (exit 2, one line naming the
    attribute), the old file as it was and nothing beside it."""
    np.save(tmp_path / "a.npy", (np.random.default_rng(4).random((30, 20)) < 0.2).astype(np.uint8))
    out, folder = tmp_path / "C.npy", tmp_path / "d"
    out.write_text("old")
    folder.mkdir()
    if not CHATTR or subprocess.run([CHATTR, attribute, out], capture_output=True).returncode != 0:
        pytest.skip(f"chattr {attribute} is not available here (needs root and a file system with it)")
    try:
        assert subprocess.run([CHATTR, attribute, folder], capture_output=True).returncode == 0
        name = {"+a": "append-only (chattr +a)", "+i": "immutable (chattr +i)"}[attribute]
        for target in (out, folder / "C.npy"):
            proc = run("gram", tmp_path / "a.npy", "-o", target, "-q", check=False)
            assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and name in proc.stderr, proc.stderr
        assert out.read_text() == "old" and os.listdir(folder) == []
        assert sorted(os.listdir(tmp_path)) == ["C.npy", "a.npy", "d"]
    finally:
        subprocess.run([CHATTR, "-a", "-i", out, folder], capture_output=True)
