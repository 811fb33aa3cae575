"""outcore matmul --resume: products killed after k tiles (OUTCORE_RESUME_KILL_AFTER with a
checkpoint after every tile), resumed, and compared byte for byte with an uninterrupted run;
journals of another job or plan refused; nothing left over. The CUDA cases run where a GPU is
usable (ctest's gpu_cli_test_matmul_resume) and skip elsewhere."""
import json
import os
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import (outcore_bin, read_journal, require_backend, resume_while_an_input_is_cut,
                      rewrite_keeping_size_and_mtime, run, run_in,
                      sigkill_while_running, wait_until_open, write_journal)

EVERY = {"OUTCORE_RESUME_INTERVAL": "0"}  # a checkpoint at every finished tile


@pytest.fixture
def mats(tmp_path):
    rng = np.random.default_rng(11)
    np.save(tmp_path / "A64.npy", rng.standard_normal((300, 500)))
    np.save(tmp_path / "B64.npy", rng.standard_normal((500, 260)))
    np.save(tmp_path / "A32.npy", rng.standard_normal((300, 500)).astype(np.float32))
    np.save(tmp_path / "B32.npy", rng.standard_normal((500, 260)).astype(np.float32))
    np.save(tmp_path / "A8.npy", rng.integers(-128, 128, (300, 500), dtype=np.int8))
    np.save(tmp_path / "B8.npy", rng.integers(-128, 128, (500, 260), dtype=np.int8))
    np.save(tmp_path / "v64.npy", rng.standard_normal(500))
    np.save(tmp_path / "A1.npy", rng.random((300, 500)) < 0.03)  # bool: both values in the result
    np.save(tmp_path / "B1.npy", rng.random((500, 260)) < 0.03)
    return tmp_path


def leftovers(d, out):
    return sorted(p.name for p in d.iterdir() if p.name.startswith(out.name) and p.name != out.name)


def tiles_of(d, args):
    plan = json.loads(run("matmul", *args, "--plan", "--json").stdout)
    assert plan["k_panels"] > 1, plan  # the budget cuts k: resumed tiles span several panels
    return plan["tiles"]


# (name, inputs, options, host budget): small budgets force many tiles and K panels.
CASES = [
    ("float64", ["A64.npy", "B64.npy"], [], "100K"),
    ("float32", ["A32.npy", "B32.npy"], [], "80K"),
    ("int8", ["A8.npy", "B8.npy"], [], "150K"),
    ("float64_gram", ["A64.npy"], ["--gram"], "300K"),
    ("float32_transpose", ["A32.npy", "A32.npy"], ["--transpose-b"], "100K"),
    ("float64_vector", ["A64.npy", "v64.npy"], [], "20K"),  # a 1-D result file reopened
    ("bool", ["A1.npy", "B1.npy"], [], "60K"),  # one-byte results, rounded after the last panel
]


def kill_and_resume(d, backend, inputs, opts, budget, kills):
    args = [d / name for name in inputs] + opts + ["--backend", backend, "--host-mem", budget, "--threads", "1",
                                                   "-q"]
    ref = d / "ref.npy"
    run("matmul", *args, "-o", ref)
    total = tiles_of(d, args) if backend == "cpu" else None
    out = d / "C.npy"
    for k in kills:
        proc = run("matmul", *args, "-o", out, "--resume", check=False,
                   env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER=str(k)))
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        assert not out.exists()
        assert (d / "C.npy.outcore-journal").exists()
    # Without --resume the journal is refused, with the way forward.
    proc = run("matmul", *args, "-o", out, check=False)
    assert proc.returncode == 2
    assert "--resume" in proc.stderr and "C.npy.outcore-journal" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    summary = json.loads(run("matmul", *[a for a in args if a != "-q"], "-o", out, "--resume", "--json").stdout)
    assert out.read_bytes() == ref.read_bytes()
    assert leftovers(d, out) == []
    if total is not None:  # the resumed run computed only the tiles not on record
        assert summary["tiles"] == total - kills[-1], summary


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
@pytest.mark.parametrize("name,inputs,opts,budget", CASES, ids=[c[0] for c in CASES])
def test_kill_and_resume(mats, backend, name, inputs, opts, budget, tmp_path):
    """Killed after tile 2, then after tile 5, then finished: the bytes of one run."""
    require_backend(backend, tmp_path)
    if backend == "cuda":  # tiles of 64 forced: 25 of them (15 of A·Aᵀ), one K panel
        opts, budget = opts + ["--tile", "64"], "1G"
    kill_and_resume(mats, backend, inputs, opts, budget, (2, 5))


def killed_once(d, args, k=3):
    proc = run("matmul", *args, "--resume", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER=str(k)))
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_stopped_between_the_rename_and_its_journal(mats):
    """A run stopped after its commit renamed the result into place but before it removed its
    journal (the temporary the journal names is gone, the output there; made here by doing the
    rename by hand): --resume has nothing to resume from and runs the product again, ending
    with the bytes of one run and no journal. The temporary lost while no output exists is
    still refused, naming the journal to remove."""
    d = mats
    args = [d / "A64.npy", d / "B64.npy", "--backend", "cpu", "--host-mem", "100K", "--threads", "1", "-q"]
    run("matmul", *args, "-o", d / "ref.npy")
    out = d / "C.npy"
    killed_once(d, args + ["-o", out])
    temps = [p for p in d.iterdir() if p.name.startswith("C.npy.tmp-")]
    assert len(temps) == 1 and (d / "C.npy.outcore-journal").exists()
    temps[0].rename(out)
    run("matmul", *args, "-o", out, "--resume")
    assert out.read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, out) == []
    out.unlink()
    killed_once(d, args + ["-o", out])
    next(p for p in d.iterdir() if p.name.startswith("C.npy.tmp-")).unlink()
    proc = run("matmul", *args, "-o", out, "--resume", check=False)
    assert proc.returncode == 2 and "cannot resume from the temporary output" in proc.stderr, proc.stderr
    assert not out.exists()


def test_changed_input_refused(mats):
    d = mats
    args = [d / "A64.npy", d / "B64.npy", "--backend", "cpu", "--host-mem", "100K", "-o", d / "C.npy", "-q"]
    killed_once(d, args)
    b = np.load(d / "B64.npy")
    b[0, 0] += 1
    np.save(d / "B64.npy", b)
    proc = run("matmul", *args, "--resume", check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("outcore: " + str(d / "B64.npy") + ": the input changed since the journal")
    assert len(proc.stderr.splitlines()) == 1
    assert not (d / "C.npy").exists() and (d / "C.npy.outcore-journal").exists()
    run("clean", d / "C.npy")
    assert leftovers(d, d / "C.npy") == []


def test_input_with_other_content_refused(mats):
    """An operand rewritten with the same size and modification time but other bytes is
    refused by its checksum in the journal: exit 2, one line saying the content differs."""
    d = mats
    args = [d / "A64.npy", d / "B64.npy", "--backend", "cpu", "--host-mem", "100K", "--threads", "1", "-o",
            d / "C.npy", "-q"]
    killed_once(d, args, k=2)
    path = d / "A64.npy"
    rewrite_keeping_size_and_mtime(path)
    proc = run("matmul", *args, "--resume", check=False)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"outcore: {path}: the input changed since the journal {d / 'C.npy.outcore-journal'}"
                                  " was written (its content differs)"), proc.stderr
    assert not (d / "C.npy").exists() and (d / "C.npy.outcore-journal").exists()


@pytest.mark.parametrize("change,expect", [
    (["--host-mem", "600K"], "--host-mem 614400"),
    (["--tile", "32"], "planned with no --tile, this run with --tile 32"),
    ([], "planned with --host-mem 102400, this run with no --host-mem"),
    (["--dtype", "float32"], "dtype"),
])
def test_changed_option_refused(mats, change, expect):
    """Another plan (budget, tile) or another job (dtype): refused in one line naming it; the
    journal and the temporary file stay, and the original options still finish the job."""
    d = mats
    base = [d / "A64.npy", d / "B64.npy", "--backend", "cpu", "-o", d / "C.npy", "-q"]
    ref = d / "ref.npy"
    run("matmul", d / "A64.npy", d / "B64.npy", "--backend", "cpu", "--host-mem", "100K", "-o", ref, "-q")
    killed_once(d, base + ["--host-mem", "100K"])
    opts = change if not change or change[0] == "--host-mem" else ["--host-mem", "100K"] + change
    proc = run("matmul", *base, *opts, "--resume", check=False)
    assert proc.returncode == 2, proc.stderr
    assert expect in proc.stderr and "C.npy.outcore-journal" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert not (d / "C.npy").exists()
    assert any(".tmp-" in name for name in leftovers(d, d / "C.npy"))
    run("matmul", *base, "--host-mem", "100K", "--resume")
    assert (d / "C.npy").read_bytes() == ref.read_bytes()
    assert leftovers(d, d / "C.npy") == []


@pytest.mark.parametrize("a,b,refused", [("A64.npy", "B64.npy", True), ("A8.npy", "B8.npy", False)],
                         ids=["float64", "int8"])
def test_changed_thread_count(mats, a, b, refused):
    """A BLAS's float result may change with its thread count, so a float product resumed on
    another --threads is refused naming it; int8 (exact) resumes on any and gives the bytes
    of an uninterrupted run on the first count, and so does a float product on the reference
    loops (no BLAS), which sum each element in k order on any count."""
    d = mats
    base = [d / a, d / b, "--backend", "cpu", "--host-mem", "100K", "-o", d / "C.npy", "-q"]
    refused = refused and not run("matmul", d / a, d / b, "--backend", "cpu", "--plan").stdout.startswith(
        "cpu/reference")
    ref = d / "ref.npy"
    run("matmul", d / a, d / b, "--backend", "cpu", "--host-mem", "100K", "--threads", "2", "-o", ref, "-q")
    killed_once(d, base + ["--threads", "2"])
    proc = run("matmul", *base, "--threads", "1", "--resume", check=False)
    if refused:
        assert proc.returncode == 2, proc.stderr
        assert "--threads 2, this run with --threads 1" in proc.stderr and len(proc.stderr.splitlines()) == 1
        assert not (d / "C.npy").exists()
        run("matmul", *base, "--threads", "2", "--resume")
    else:
        assert proc.returncode == 0, proc.stderr
    assert (d / "C.npy").read_bytes() == ref.read_bytes()
    assert leftovers(d, d / "C.npy") == []


def test_resume_without_journal_runs_from_start(mats):
    d = mats
    args = [d / "A32.npy", d / "B32.npy", "--backend", "cpu", "--host-mem", "150K", "-q"]
    run("matmul", *args, "-o", d / "ref.npy")
    run("matmul", *args, "-o", d / "C.npy", "--resume")
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, d / "C.npy") == []


def test_failure_before_any_tile_leaves_nothing(mats):
    """A resumable job that fails before a tile is on record leaves no journal."""
    d = mats
    proc = run("matmul", d / "A64.npy", d / "B64.npy", "--backend", "cpu", "--host-mem", "1K", "-o", d / "C.npy",
               "--resume", "-q", check=False)
    assert proc.returncode != 0
    assert leftovers(d, d / "C.npy") == [] and not (d / "C.npy").exists()


@pytest.mark.parametrize("inputs,opts", [(["A64.npy", "B64.npy"], []), (["A64.npy"], ["--gram"])],
                         ids=["product", "gram"])
@pytest.mark.parametrize("killed_after", [0, 2])
def test_no_tile_read_from_a_cut_input_goes_on_record(mats, inputs, opts, killed_after):
    """A mapped operand cut while it is read (A's mapping): the first checkpoint finds it, and
    the job fails naming it with no tile put on record, at a checkpoint or after the failure;
    the tiles an earlier run put on record stay, and a resumed run computes the product right
    (before, the tiles computed from the zeros went on record and were resumed as they were)."""
    d = mats
    args = [d / name for name in inputs] + opts + ["--backend", "cpu", "--host-mem", "1G", "--tile", "100", "-q"]
    run("matmul", *args, "-o", d / "ref.npy")
    resume_while_an_input_is_cut("matmul", args, d / "C.npy", d / "ref.npy", d / "A64.npy", killed_after, EVERY)


@pytest.mark.parametrize("fault", ["OUTCORE_FAULT_RENAME", "OUTCORE_FAULT_FSYNC"])
@pytest.mark.parametrize("interval", ["0", None])
def test_failed_commit_leaves_nothing_to_resume(mats, fault, interval):
    """A resumable job whose finished output cannot be committed (its fsync or rename fails)
    exits with the I/O error and leaves neither the output, its temporary file nor a journal:
    the commit removed the temporary file, so no journal may promise it (before, the journal
    was put on record through the writer the commit had freed)."""
    d = mats
    env = {fault: "2"} | ({"OUTCORE_RESUME_INTERVAL": interval} if interval else {})
    proc = run("matmul", d / "A64.npy", d / "B64.npy", "--backend", "cpu", "--host-mem", "100K", "-o", d / "C.npy",
               "--resume", "-q", check=False, env=env)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "I/O error" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert leftovers(d, d / "C.npy") == [] and not (d / "C.npy").exists()
    run("matmul", d / "A64.npy", d / "B64.npy", "--host-mem", "100K", "-o", d / "C.npy", "--resume", "-q")
    assert np.load(d / "C.npy").shape == (300, 260)


def test_journal_symlink_refused(mats):
    d = mats
    (d / "elsewhere").write_text("x")
    (d / "C.npy.outcore-journal").symlink_to(d / "elsewhere")
    proc = run("matmul", d / "A64.npy", d / "B64.npy", "-o", d / "C.npy", "--resume", "-q", check=False)
    assert proc.returncode == 2
    assert "symbolic link" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert (d / "elsewhere").read_text() == "x"


def test_journal_without_its_temporary_leaves_nothing(mats):
    """A journal cut to its header (its record of the temporary lost) starts the product
    over; once it is done the earlier run's temporary, which no journal names now, is
    removed too: nothing is left beside the output."""
    d = mats
    args = [d / "A64.npy", d / "B64.npy", "-o", d / "C.npy", "--host-mem", "100K", "-q"]
    killed_once(d, args)
    journal = d / "C.npy.outcore-journal"
    text = journal.read_bytes()
    crc = text.index(b"\ncrc ")
    journal.write_bytes(text[:text.index(b"\n", crc + 1) + 1])
    run("matmul", *args, "--resume")
    assert leftovers(d, d / "C.npy") == []
    ref = np.load(d / "A64.npy") @ np.load(d / "B64.npy")
    assert np.allclose(np.load(d / "C.npy"), ref, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("command", ["matmul", "gram"])
def test_a_journal_held_by_a_running_job_is_named_so(mats, command):
    """Without --resume, an output's journal is refused: as an interrupted job's (how to
    continue or clean it), or, while a running job holds its lock, as that job's."""
    import fcntl
    d = mats
    journal = d / "C.npy.outcore-journal"
    journal.write_bytes(b"outcore-journal 1\n")
    args = {"matmul": ["matmul", d / "A64.npy", d / "B64.npy"], "gram": ["gram", d / "A1.npy"]}[command]
    with open(journal, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = run(*args, "-o", d / "C.npy", check=False)
        assert proc.returncode == 2 and "a running job holds this journal" in proc.stderr, proc.stderr
    proc = run(*args, "-o", d / "C.npy", check=False)
    assert proc.returncode == 2 and "an interrupted job left this journal" in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not (d / "C.npy").exists()


def test_journal_removed_while_the_resume_waits_for_it(mats):
    """A --resume that waits for the lock of a journal (a job killed a moment ago still holds
    it) which `outcore clean` removes meanwhile, with its temporary, runs the product from the
    start, as a run without a journal does: the journal it waited for is no longer the
    output's, and it never names a temporary that is gone."""
    import fcntl
    d = mats
    args = [d / "A64.npy", d / "B64.npy", "--backend", "cpu", "--host-mem", "100K", "--threads", "1", "-q"]
    run("matmul", *args, "-o", d / "ref.npy")
    out = d / "C.npy"
    killed_once(d, args + ["-o", out])
    journal = d / "C.npy.outcore-journal"
    with open(journal, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen([outcore_bin(), "matmul", *map(str, args), "-o", str(out), "--resume"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until_open(proc, journal)
        for p in d.iterdir():
            if p.name.startswith("C.npy.tmp-") or p == journal:
                p.unlink()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, out) == []


def test_temporary_with_other_names_refused(mats):
    """A temporary output that has another name (a hard link, as a forged journal could aim
    at a user's file) is not reopened and written through: refused, the other file intact."""
    d = mats
    args = [d / "A64.npy", d / "B64.npy", "-o", d / "C.npy", "--host-mem", "100K", "-q"]
    killed_once(d, args)
    (temp,) = [p for p in d.iterdir() if p.name.startswith("C.npy.tmp-")]
    os.link(temp, d / "victim.npy")
    before = (d / "victim.npy").read_bytes()
    proc = run("matmul", *args, "--resume", check=False)
    assert proc.returncode == 2 and "it has other names (hard links)" in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and (d / "victim.npy").read_bytes() == before


def forge_temp_record(journal, name):
    """Rewrites the journal's TEMP record (type 1) to name `name`, with the records' CRC-32s
    recomputed as a forger would."""
    header, records = read_journal(journal)
    write_journal(journal, header, [[k, u, name.encode() if k == 1 else p] for k, u, p in records])


def test_an_input_named_as_a_temporary_is_never_taken_for_one(mats):
    """An input named as the output's temporaries are (OUT.tmp-PID-XXXXXXXX, its process long
    gone) is the user's file: the sweep of stale temporaries leaves it, for matmul and map, and
    a journal whose TEMP record names it is refused, not written through the input."""
    d = mats
    gone = next(pid for pid in range(999999, 1, -1) if not os.path.exists(f"/proc/{pid}"))
    a = d / f"C.npy.tmp-{gone}-AAAAAAAA"
    shutil.copy(d / "A64.npy", a)
    before = a.read_bytes()
    proc = run("matmul", a, d / "B64.npy", "-o", d / "C.npy")
    assert "removed" not in proc.stderr and a.read_bytes() == before, proc.stderr
    run("matmul", d / "A64.npy", d / "B64.npy", "-o", d / "ref.npy")
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    proc = run("map", "a + 1", f"a={a}", "-o", d / "C.npy")
    assert "removed" not in proc.stderr and a.read_bytes() == before, proc.stderr
    assert np.array_equal(np.load(d / "C.npy"), np.load(d / "A64.npy") + 1)

    args = [a, d / "B64.npy", "-o", d / "C.npy", "--host-mem", "100K", "-q"]
    killed_once(d, args)
    assert a.read_bytes() == before
    forge_temp_record(d / "C.npy.outcore-journal", a.name)
    proc = run("matmul", *args, "--resume", check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "it is an input, not a temporary" in proc.stderr and a.read_bytes() == before, proc.stderr


def real_job(d):
    """A product of about a second on the reference loops (one thread), many tiles; its
    arguments, the time of an uninterrupted resumable run, and the reference result."""
    rng = np.random.default_rng(5)
    np.save(d / "P.npy", rng.standard_normal((640, 600)))
    np.save(d / "Q.npy", rng.standard_normal((600, 560)))
    args = [outcore_bin(), "matmul", str(d / "P.npy"), str(d / "Q.npy"), "--backend", "cpu", "--host-mem", "400K",
            "--threads", "1", "-q"]
    env = dict(os.environ, OUTCORE_BLAS="none", **EVERY)
    start = time.monotonic()
    subprocess.run(args + ["-o", str(d / "ref.npy"), "--resume"], check=True, env=env)
    return args, env, time.monotonic() - start


def test_real_sigkill_of_a_running_product(mats):
    """A real kill -9 of a running product, at whatever point it has reached, twice."""
    d = mats
    args, env, whole = real_job(d)
    out, journal = d / "C.npy", d / "C.npy.outcore-journal"
    # Killed at 0.3 and 0.6 of an uninterrupted resumable run's time.
    assert sigkill_while_running(args + ["-o", str(out), "--resume"], env, whole, journal, out) > 0, "no kill landed while the job ran"
    subprocess.run(args + ["-o", str(out), "--resume"], check=True, env=env)
    assert out.read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, out) == []


def test_ctrl_c_keeps_the_journal(mats):
    """SIGINT cancels a resumable product (exit 130) and keeps what it finished for --resume."""
    d = mats
    args, env, whole = real_job(d)
    out = d / "C.npy"
    job = subprocess.Popen(args + ["-o", str(out), "--resume"], env=env, stderr=subprocess.PIPE)
    time.sleep(whole * 0.5)
    job.send_signal(signal.SIGINT)
    job.communicate()
    if job.returncode == 130:
        assert (d / "C.npy.outcore-journal").exists() and not out.exists()
        assert len([p for p in d.iterdir() if p.name.startswith("C.npy.tmp-")]) == 1
    subprocess.run(args + ["-o", str(out), "--resume"], check=True, env=env)
    assert out.read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, out) == []


@pytest.mark.parametrize("inputs,opts", [(["A64.npy", "B64.npy"], []), (["A32.npy"], ["--gram"])],
                         ids=["a_b", "gram"])
def test_resume_under_other_spellings_of_the_paths(mats, inputs, opts):
    """The same product spelled ./A.npy -o ./C.npy, then A.npy -o C.npy, then ../A.npy from a
    folder below, then by absolute paths from another folder: one journal, resumed each time,
    only the tiles not on record computed, the bytes of one run, nothing left over."""
    d = mats
    (d / "sub").mkdir()
    flags = opts + ["--backend", "cpu", "--host-mem", "100K", "--threads", "1"]
    run_in(d, "matmul", *inputs, *flags, "-q", "-o", "ref.npy")
    total = tiles_of(d, [d / i for i in inputs] + flags)
    assert total > 6, total  # the kills below land before the last tile
    spellings = [(d, "./", 2), (d, "", 4), (d / "sub", "../", 6), (d.parent, str(d) + "/", None)]
    for cwd, prefix, kill in spellings:
        args = ["matmul", *[prefix + i for i in inputs], *flags, "-o", prefix + "C.npy", "--resume"]
        if kill:
            proc = run_in(cwd, *args, "-q", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER=str(kill)))
            assert proc.returncode == -signal.SIGKILL, proc.stderr
            assert (d / "C.npy.outcore-journal").exists() and not (d / "C.npy").exists()
        else:
            summary = json.loads(run_in(cwd, *args, "--json").stdout)
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, d / "C.npy") == [] and os.listdir(d / "sub") == []
    assert summary["tiles"] == total - 6, summary


def test_changed_input_under_another_spelling_refused(mats):
    """Paths are not compared, content is: an input rewritten under its name and given under
    another spelling is refused as changed, in one line naming it and what differs."""
    d = mats
    flags = ["--backend", "cpu", "--host-mem", "100K", "-q", "--resume"]
    proc = run_in(d, "matmul", "./A64.npy", "./B64.npy", *flags, "-o", "./C.npy", check=False,
                  env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="3"))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    b = np.load(d / "B64.npy")
    b[0, 0] += 1
    np.save(d / "B64.npy", b)
    # from the same folder: the same file, changed
    proc = run_in(d, "matmul", "A64.npy", "B64.npy", *flags, "-o", "C.npy", check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("outcore: B64.npy: the input changed since the journal C.npy.outcore-journal "
                                  "was written (its modification time differs)"), proc.stderr
    # from another folder, where ./B64.npy is no file: not the journal's input, its name quoted
    proc = run_in(d.parent, "matmul", d / "A64.npy", d / "B64.npy", *flags, "-o", d / "C.npy", check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"outcore: {d / 'B64.npy'}: not the input the journal {d / 'C.npy.outcore-journal'} "
                                  "was made for (named './B64.npy' there; its modification time differs)"), proc.stderr
    assert not (d / "C.npy").exists() and (d / "C.npy.outcore-journal").exists()
