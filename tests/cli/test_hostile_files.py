"""A hostile file system around the output: links planted where outcore writes its journal,
snapshot or temporaries, outputs that are folders, pipes or read-only files, names too long
for a temporary name, an output larger than the free space, temporaries of killed jobs, and
an input edited in place under a journal. Each case: the command that provoked it, its exit
code, one line on stderr, and no file left or touched (docs/write-failures.md, "Output
paths"; docs/resume.md)."""
import math
import os
import re
import resource
import signal
import stat
import subprocess
import time

import numpy as np
import pytest

from conftest import outcore_bin, run

EVERY = {"OUTCORE_RESUME_INTERVAL": "0"}


@pytest.fixture
def d(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(43)
    np.save(tmp_path / "A.npy", (rng.random((330, 700)) < 0.1).astype(np.uint8))
    return tmp_path


def snapshot(folder):
    """Every name in folder with what lstat says of it and, for regular files, their bytes."""
    out = {}
    for name in sorted(os.listdir(folder)):
        st = os.lstat(folder / name)
        data = (folder / name).read_bytes() if stat.S_ISREG(st.st_mode) else None
        out[name] = (st.st_mode, st.st_uid, st.st_mtime_ns, st.st_size, data)
    return out


def one_line(proc, code, *words):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def refused(d, args, code, *words, **popen):
    """Runs `outcore args` (a minute at most: a pipe must not make it wait) and asserts its exit
    code, one line on stderr naming words, and the folder as it was."""
    before = snapshot(d)
    proc = subprocess.run([outcore_bin(), *map(str, args)], capture_output=True, text=True, timeout=60, **popen)
    one_line(proc, code, *words)
    assert snapshot(d) == before
    return proc


def killed_resumable(d, out="C.npy", extra=()):
    """A resumable job of A.npy killed after its second checkpoint: its journal stays."""
    proc = run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", *extra, "-o", out,
               "--resume", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="2"))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (d / f"{out}.outcore-journal").exists()


# ---------------------------------------------------------------- links where outcore writes

def test_journal_with_other_names_is_refused(d):
    """A journal with a hard link is refused (exit 2, one line), not appended to: the other
    name, outside the output's, keeps its bytes; with the link gone the job resumes."""
    killed_resumable(d)
    journal = d / "C.npy.outcore-journal"
    os.link(journal, d / "backup.journal")
    before = snapshot(d)
    proc = run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "-o", "C.npy",
               "--resume", check=False, env=EVERY)
    one_line(proc, 2, "C.npy.outcore-journal", "other names (hard links)")
    assert snapshot(d) == before
    (d / "backup.journal").unlink()
    run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "-o", "C.npy", "--resume")
    assert sorted(os.listdir(d)) == ["A.npy", "C.npy"]


def test_journal_left_with_its_creation_name_resumes(d):
    """Where a file system has no RENAME_NOREPLACE a journal goes in by link and unlink: a crash
    between them leaves its temporary's name too (C.npy.outcore-journal.tmp-PID-RANDOM, the
    same file). That second name is the journal's own: removed, and the job resumes."""
    (d / "C.npy").unlink(missing_ok=True)
    run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "-o", "ref.npy")
    killed_resumable(d)
    os.link(d / "C.npy.outcore-journal", d / "C.npy.outcore-journal.tmp-999999-AbCdEfGh")
    run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "-o", "C.npy", "--resume",
        env=EVERY)
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    assert sorted(os.listdir(d)) == ["A.npy", "C.npy", "ref.npy"]


@pytest.mark.parametrize("dangling", [False, True])
@pytest.mark.parametrize("resume", [False, True])
def test_journal_that_is_a_link_is_refused(d, dangling, resume):
    victim = d / "victim.txt"
    if not dangling:
        victim.write_text("someone else's file\n")
    os.symlink(victim, d / "C.npy.outcore-journal")
    refused(d, ["gram", "A.npy", "-o", "C.npy", "-q", *(["--resume"] if resume else [])], 2, "C.npy.outcore-journal",
            "symbolic link")  # the victim unchanged, or still absent
    assert not victim.exists() or victim.read_text() == "someone else's file\n"


def test_journal_that_is_a_pipe_is_refused_at_once(d):
    os.mkfifo(d / "C.npy.outcore-journal")
    refused(d, ["gram", "A.npy", "-o", "C.npy", "-q", "--resume"], 2, "C.npy.outcore-journal", "not a regular file")


def test_topk_snapshot_links_are_not_followed(d):
    """The snapshot's old temporary name (.topk.new) and its own name planted as links into a
    victim: the resumed job writes neither victim, and a link under the snapshot's name is
    refused."""
    killed_resumable(d, "nn.npz", ["--topk", "5", "--metric", "jaccard"])
    victim = d / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, d / "nn.npz.outcore-journal.topk.new")
    os.symlink(d / "absent.txt", d / "nn.npz.outcore-journal.topk.tmp-1-aaaaaaaa")
    os.replace(d / "nn.npz.outcore-journal.topk", d / "saved.topk")
    os.symlink(victim, d / "nn.npz.outcore-journal.topk")
    victim_stat = os.stat(victim)
    proc = run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "--topk", "5",
               "--metric", "jaccard", "-o", "nn.npz", "--resume", check=False)
    one_line(proc, 2, "nn.npz.outcore-journal.topk", "symbolic link")
    # Without the planted snapshot link the job resumes and finishes; the other links stay links.
    os.unlink(d / "nn.npz.outcore-journal.topk")
    os.replace(d / "saved.topk", d / "nn.npz.outcore-journal.topk")
    proc = run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "--topk", "5",
               "--metric", "jaccard", "-o", "nn.npz", "--resume", check=False)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "keep me\n" and os.stat(victim).st_mtime_ns == victim_stat.st_mtime_ns
    assert not (d / "absent.txt").exists()
    assert not (d / "nn.npz.outcore-journal").exists() and not (d / "nn.npz.outcore-journal.topk").exists()


def test_temporaries_have_a_pid_and_an_unguessable_name(d):
    killed_resumable(d)
    temps = [p.name for p in d.iterdir() if ".tmp-" in p.name]
    assert len(temps) == 1 and re.fullmatch(r"C\.npy\.tmp-[0-9]+-[A-Za-z0-9]{8}", temps[0]), temps


# ---------------------------------------------------------------- what the output path holds

def test_output_in_missing_folder_named_before_any_work(d):
    for cmd in (["gram", "nowhere.npy"], ["map", "a * 2", "a=nowhere.npy"]):
        refused(d, [*cmd, "-o", "out/C"], 2, "folder out does not exist")


def test_output_that_is_a_folder(d):
    (d / "adir").mkdir()
    (d / "adir.npy").mkdir()
    for cmd in (["gram", "nowhere.npy"], ["gram", "A.npy"], ["map", "a * 2", "a=A.npy"]):
        for out in ("adir", "adir.npy"):
            refused(d, [*cmd, "-o", out], 2, f"{out} is a folder")
    assert os.listdir(d / "adir") == [] and os.listdir(d / "adir.npy") == []


def test_output_that_is_a_pipe_is_refused_at_once(d):
    os.mkfifo(d / "P.npy")
    refused(d, ["gram", "A.npy", "-o", "P.npy", "-q"], 2, "P.npy", "named pipe")


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o555])
def test_read_only_output_is_refused(d, mode):
    (d / "C.npy").write_bytes(b"an earlier result")
    os.chmod(d / "C.npy", mode)
    refused(d, ["gram", "A.npy", "-o", "C.npy", "-q"], 2, "C.npy", "read-only", f"{mode:04o}")


def test_output_of_another_user_is_refused(d):
    """A file of root's, mode 0644, in a folder anyone may write: user nobody may not replace it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a file of another user and run as nobody")
    os.chmod(d, 0o777)
    os.chmod(d / "A.npy", 0o644)
    (d / "C.npy").write_bytes(b"root's result")
    os.chmod(d / "C.npy", 0o644)
    refused(d, ["gram", "A.npy", "-o", "C.npy", "-q"], 2, "C.npy", "you may not write it",
            preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_replaced_output_keeps_its_mode(d, mode):
    (d / "C.npy").write_bytes(b"an earlier result")
    os.chmod(d / "C.npy", mode)
    run("gram", "A.npy", "-o", "C.npy", "-q")
    assert stat.S_IMODE(os.stat(d / "C.npy").st_mode) == mode
    assert np.load(d / "C.npy").shape == (330, 330)


def test_replaced_output_keeps_its_owner_under_root(d):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    (d / "C.npy").write_bytes(b"an earlier result")
    os.chown(d / "C.npy", 65534, 65534)
    os.chmod(d / "C.npy", 0o664)
    run("gram", "A.npy", "-o", "C.npy", "-q")
    st = os.stat(d / "C.npy")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o664)


@pytest.mark.parametrize("dangling", [False, True])
def test_output_that_is_a_link_replaces_the_link_only(d, dangling):
    victim = d / "victim.npy"
    if not dangling:
        victim.write_bytes(b"not yours")
    os.symlink(victim, d / "L.npy")
    run("gram", "A.npy", "-o", "L.npy", "-q")
    assert not os.path.islink(d / "L.npy") and np.load(d / "L.npy").shape == (330, 330)
    assert victim.read_bytes() == b"not yours" if not dangling else not victim.exists()


def test_name_too_long_for_its_temporary(d):
    name = "x" * 247 + ".npy"  # 251 characters: a legal name whose temporary name is not
    refused(d, ["gram", "A.npy", "-o", name, "-q"], 2, "too long", "at most 231")
    # 231 fits the output's temporary, not the journal's snapshot: --resume says so at once.
    name = "y" * 227 + ".npy"
    refused(d, ["gram", "A.npy", "-o", name, "-q", "--resume"], 2, "too long")
    run("gram", "A.npy", "-o", name, "-q")
    assert np.load(d / name).shape == (330, 330)


# ---------------------------------------------------------------- free space

def test_output_larger_than_the_free_space_is_refused_before_it_is_sized(d):
    vfs = os.statvfs(d)
    free = vfs.f_bavail * vfs.f_frsize
    rows = max(10**6, math.isqrt(free // 2) + 1)  # rows x rows int32 counts: more than twice the free space
    (d / "big.mtx").write_text(f"%%MatrixMarket matrix coordinate pattern general\n{rows} 10 2\n1 1\n2 3\n")
    # Refused from the size line, before the input is read (oc_gram_check_files): exit 2; a
    # resumable job with no journal yet starts afresh, and is refused the same way.
    for resume in ([], ["--resume"]):
        proc = refused(d, ["gram", "big.mtx", "-o", "BIG.npy", "-q", *resume], 2, "BIG.npy", "its file system has",
                       "free")
        assert " 0 bytes free" not in proc.stderr
    # matmul's outer product of two vectors of `n` (n x n float64, twice the free space).
    n = math.isqrt(free // 4) + 1
    np.save(d / "col.npy", np.ones((n, 1)))
    np.save(d / "row.npy", np.ones((1, n)))
    for resume in ([], ["--resume"]):
        refused(d, ["matmul", "col.npy", "row.npy", "-o", "OUTER.npy", "-q", *resume], 2, "OUTER.npy",
                "its file system has")
    refused(d, ["gen", "--rows", 10**12, "--cols", 1000, "--density", "0.1", "-o", "G.npy", "-q"], 1, "G.npy",
            "needs 1.0 PB", "its file system has")


MTX = "%%MatrixMarket matrix coordinate pattern general\n"


def small_address_space():
    """ulimit -v 256M for the child: a reader that allocated for the declared rows (8 bytes a
    row: 1 GB for 130 million) would fail with exit 1 instead of the refusal asserted."""
    resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20))


def size_text(n):
    """n bytes as the library writes them (sysio.c oc_size_text): '67.6 PB'."""
    units, scale, unit = ["bytes", "kB", "MB", "GB", "TB", "PB"], 1, 0
    while n >= 1000 * scale and unit < 5:
        scale, unit = scale * 1000, unit + 1
    return f"{n} bytes" if unit == 0 else f"{n / scale:.1f} {units[unit]}"


def assert_free_figure(d, line):
    """The free space the line reports is the folder's, as statvfs says (give or take what
    other writers did meanwhile), never 0."""
    free = int(re.search(r"its file system has [^(]*\((\d+) bytes\) free", line).group(1))
    vfs = os.statvfs(d)
    now = vfs.f_bavail * vfs.f_frsize
    assert free > 0 and abs(free - now) < max(1 << 30, now // 20), (free, now)


@pytest.mark.parametrize("metric,dtype", [("counts", "int32"), ("jaccard", "float32")])
def test_tiny_mtx_declaring_a_huge_dense_result_is_refused_before_it_is_read(d, metric, dtype):
    """67 bytes declaring 130 million rows: refused from the size line, in a 256 MiB address
    space (the reader's row index alone would take 1 GB), naming both real figures."""
    (d / "big.mtx").write_text(MTX + "130000000 8 2\n1 1\n2 2\n")
    need = 130_000_000 ** 2 * 4 + 128  # int32 or float32, and the .npy header
    proc = refused(d, ["gram", "big.mtx", "--metric", metric, "-o", "C.npy"], 2,
                   f"C.npy: the dense 130000000 x 130000000 {dtype} result needs {size_text(need)} ({need} bytes), "
                   "but its file system has", preexec_fn=small_address_space)
    assert_free_figure(d, proc.stderr)


def test_b_declaring_a_huge_dense_result_is_refused_before_it_is_read(d):
    """A·Bᵀ: the result's columns are B's declared rows."""
    vfs = os.statvfs(d)
    rows = 2 * vfs.f_bavail * vfs.f_frsize // (330 * 4) + 1  # twice the free space; a row index of GBs
    (d / "B.mtx").write_text(MTX + f"{rows} 700 1\n1 1\n")
    proc = refused(d, ["gram", "A.npy", "B.mtx", "-o", "AB.npy", "-q"], 2,
                   f"AB.npy: the dense 330 x {rows} int32 result needs", "but its file system has",
                   preexec_fn=small_address_space)
    assert_free_figure(d, proc.stderr)


def test_packed_npy_declaring_a_huge_dense_result_is_refused_before_it_is_read(d):
    """A packed .npy (--bits) is sized from its header: rows x rows counts more than twice the
    free space, refused before the rows are read (exit 2, where the writer's own check after the
    reading says exit 1)."""
    vfs = os.statvfs(d)
    rows = math.isqrt(vfs.f_bavail * vfs.f_frsize // 2) + 1
    np.save(d / "P.npy", np.zeros((rows, 1), np.uint8))
    need = rows * rows * 4 + 128
    proc = refused(d, ["gram", "P.npy", "--bits", "8", "-o", "C.npy", "-q"], 2,
                   f"C.npy: the dense {rows} x {rows} int32 result needs {size_text(need)} ({need} bytes)")
    assert_free_figure(d, proc.stderr)


def test_declared_result_past_64_bit_sizes_is_refused_before_it_is_read(d):
    """1.6 billion declared rows: the budget given keeps their row index (12.8 GB), but the
    dense result's bytes overflow int64; refused without allocating (a 256 MiB address space)."""
    (d / "huge.mtx").write_text(MTX + "1600000000 8 2\n1 1\n2 2\n")
    refused(d, ["gram", "huge.mtx", "-o", "C.npy", "--host-mem", "64G"], 2,
            "C.npy: output 1600000000 x 1600000000 overflows 64-bit sizes", preexec_fn=small_address_space)


def test_declared_rows_past_the_host_budget_are_refused_before_they_are_read(d):
    """The row index the size line asks for is checked against --host-mem before the dense
    result is even considered (a top-k result too)."""
    (d / "big.mtx").write_text(MTX + "130000000 8 2\n1 1\n2 2\n")
    for out in (["-o", "C.npy"], ["--topk", "5", "-o", "T.npz"]):
        refused(d, ["gram", "big.mtx", *out, "--host-mem", "256M"], 2, "big.mtx: the size line declares 130000000 rows",
                "--host-mem", preexec_fn=small_address_space)


# ---------------------------------------------------------------- stale temporaries, outcore clean

def dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_stale_temporary_of_a_dead_process_is_removed(d):
    stale = d / f"C.npy.tmp-{dead_pid()}-abcdEFGH"
    live = d / f"C.npy.tmp-{os.getpid()}-abcdEFGH"  # this process runs
    older = d / "C.npy.tmp-abcdef"  # an older version's name says no process: kept
    for p in (stale, live, older):
        p.write_bytes(b"\0" * 4096)
    # --json: the summary goes to stdout, so stderr holds the removal's line alone.
    proc = run("gram", "A.npy", "-o", "C.npy", "--json", check=False)
    one_line(proc, 0, stale.name, "no longer running")
    assert not stale.exists() and live.exists() and older.exists()


@pytest.mark.parametrize("command", [["gram", "A.npy"], ["map", "a + 1", "a=A.npy"],
                                     ["matmul", "A.npy", "--gram", "--dtype", "float32"],
                                     ["gen", "--rows", "10", "--cols", "8", "--density", "0.5"]])
def test_quiet_removes_a_stale_temporary_without_a_word(d, command):
    stale = d / f"C.npy.tmp-{dead_pid()}-abcdEFGH"
    stale.write_bytes(b"\0" * 4096)
    proc = run(*command, "-o", "C.npy", "-q", check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert not stale.exists() and (d / "C.npy").exists()


def test_killed_job_leaves_a_temporary_the_next_run_removes(d):
    rng = np.random.default_rng(1)
    np.save(d / "R.npy", (rng.random((3000, 20000)) < 0.05).astype(np.uint8))
    job = subprocess.Popen([outcore_bin(), "gram", "R.npy", "--metric", "jaccard", "--threads", "1", "-q",
                            "-o", "C.npy"], stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not any(".tmp-" in n for n in os.listdir(d)) and time.time() < deadline and job.poll() is None:
        time.sleep(0.01)
    job.send_signal(signal.SIGKILL)
    job.wait()
    temps = [n for n in os.listdir(d) if ".tmp-" in n]
    if job.returncode != -signal.SIGKILL or not temps:
        pytest.fail("the job ended before it could be killed")
    proc = run("gram", "A.npy", "-o", "C.npy", "--json", check=False)
    one_line(proc, 0, temps[0], f"process {job.pid}", "no longer running")
    assert sorted(os.listdir(d)) == ["A.npy", "C.npy", "R.npy"]


@pytest.mark.parametrize("command", [["gram", "A.npy"], ["matmul", "A.npy", "--gram", "--dtype", "float32"]])
def test_a_job_waits_for_an_ended_jobs_lock(d, command):
    """A dead process's temporary whose lock is still held a moment after it ended (as while
    the system tears a killed job down, past the moment its parent saw it end) is removed by
    the next job once the lock is free, not left behind; one held for longer is left."""
    import fcntl
    import threading
    for release, removed in ((0.3, True), (8, False)):
        stale = d / f"C.npy.tmp-{dead_pid()}-abcdEFGH"
        stale.write_bytes(b"\0" * 4096)
        held = open(stale, "rb")
        fcntl.flock(held, fcntl.LOCK_EX)
        timer = threading.Timer(release, held.close)
        timer.start()
        proc = run(*command, "-o", "C.npy", "-q", check=False)
        timer.cancel()
        held.close()
        assert proc.returncode == 0, proc.stderr
        assert stale.exists() != removed, (release, sorted(os.listdir(d)))
        stale.unlink(missing_ok=True)


def test_clean_removes_the_journal_and_its_temporaries(d):
    (d / "C.npy").write_bytes(b"an older result")
    killed_resumable(d)
    before = (d / "C.npy").read_bytes()
    proc = run("clean", "C.npy")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert any("C.npy.outcore-journal" in l for l in lines) and any("C.npy.tmp-" in l for l in lines), lines
    assert sorted(os.listdir(d)) == ["A.npy", "C.npy"] and (d / "C.npy").read_bytes() == before
    proc = run("clean", "C.npy")
    assert proc.stdout == "C.npy: nothing to remove\n"


def test_clean_leaves_a_journal_a_running_job_holds(d):
    import fcntl
    killed_resumable(d)
    before = snapshot(d)
    with open(d / "C.npy.outcore-journal", "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = run("clean", "C.npy", check=False)
        one_line(proc, 2, "C.npy.outcore-journal", "running job")
        proc = run("gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "-o", "C.npy",
                   "--resume", check=False)
        one_line(proc, 2, "C.npy.outcore-journal", "running job")
    assert snapshot(d) == before


def test_clean_waits_for_an_ended_jobs_lock(d):
    """A killed job's temporary whose lock is still held a moment after the process ended (as
    while the system tears it down) is removed once the lock is free, not left behind."""
    import fcntl
    import threading
    killed_resumable(d)
    temp = next(n for n in os.listdir(d) if ".tmp-" in n)
    held = open(d / temp, "rb")
    fcntl.flock(held, fcntl.LOCK_EX)
    threading.Timer(0.3, held.close).start()
    proc = run("clean", "C.npy")
    assert proc.returncode == 0 and temp in proc.stdout, proc.stdout
    assert sorted(os.listdir(d)) == ["A.npy"]


def test_clean_usage(d):
    one_line(run("clean", check=False), 2, "no output")
    one_line(run("clean", "--bogus", check=False), 2, "unknown option")
    one_line(run("clean", "no/such/C.npy", check=False), 2, "folder no/such does not exist")


# ---------------------------------------------------------------- an input changed under a journal

def test_input_edited_in_place_with_size_and_time_restored_is_not_resumed(d):
    killed_resumable(d)
    st = os.stat(d / "A.npy")
    a = np.load(d / "A.npy", mmap_mode="r+")
    a[100, 100] ^= 1
    a.flush()
    del a
    os.utime(d / "A.npy", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(d / "A.npy").st_size == st.st_size
    refused(d, ["gram", "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "-o", "C.npy", "--resume"],
            2, "A.npy", "the input changed since the journal", "C.npy.outcore-journal")
