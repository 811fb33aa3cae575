"""--resume: jobs killed at several points (OUTCORE_RESUME_KILL_AFTER, and a real SIGKILL of a
running job), resumed, and compared byte for byte with an uninterrupted run; journals of
another job refused; damaged journals. The CUDA cases run where a GPU is usable (ctest's
gpu_cli_test_resume) and skip elsewhere."""
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

# .npz members carry their write time: both runs write the same one.
EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}
# A checkpoint after every group of tiles, so a kill after unit k lands where the test says.
EVERY = dict(EPOCH, OUTCORE_RESUME_INTERVAL="0")

@pytest.fixture
def inputs(tmp_path):
    rng = np.random.default_rng(7)
    np.save(tmp_path / "A.npy", (rng.random((330, 700)) < 0.1).astype(np.uint8))
    np.save(tmp_path / "B.npy", (rng.random((270, 700)) < 0.12).astype(np.uint8))
    return tmp_path


def leftovers(d, out):
    return sorted(p.name for p in d.iterdir() if p.name.startswith(out.name) and p.name != out.name)


CASES = [
    ("dense_aat", ["--metric", "jaccard"], "C.npy", False),
    ("dense_abt", ["--metric", "counts"], "C.npy", True),
    ("topk_aat", ["--metric", "jaccard", "--topk", "5"], "nn.npz", False),
    ("topk_abt", ["--metric", "cosine", "--topk", "7"], "nn.tsv", True),
    ("threshold_aat", ["--metric", "jaccard", "--threshold", "0.15"], "pairs.npz", False),
    ("threshold_abt", ["--threshold", "4"], "pairs.mtx", True),
]


@pytest.mark.parametrize("name,opts,out_name,two", CASES, ids=[c[0] for c in CASES])
def test_kill_and_resume_cpu(inputs, name, opts, out_name, two):
    """Killed after unit 2, then after 7 more, then finished: the bytes of one run, no leftovers."""
    d = inputs
    args = ["gram", d / "A.npy"] + ([d / "B.npy"] if two else []) + opts + ["--tile", "24", "--backend", "cpu", "-q"]
    ref = d / ("ref_" + out_name)
    run(*args, "-o", ref, "--threads", "1", env=EPOCH)
    out = d / out_name
    for k in (2, 9):
        proc = run(*args, "-o", out, "--threads", "2", "--resume", check=False,
                   env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER=str(k)))
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        assert not out.exists()
        assert (d / (out_name + ".outcore-journal")).exists()
    # Without --resume the journal is refused, with the way forward.
    proc = run(*args, "-o", out, check=False, env=EPOCH)
    assert proc.returncode == 2
    assert "--resume" in proc.stderr and "outcore-journal" in proc.stderr and len(proc.stderr.splitlines()) == 1
    run(*args, "-o", out, "--resume", env=EPOCH)
    assert out.read_bytes() == ref.read_bytes()
    assert leftovers(d, out) == []


BACKEND_CASES = [("dense", ["--metric", "cosine"], "C.npy", False, (3, 12)),
                 ("dense_abt", ["--metric", "jaccard"], "C.npy", True, (3, 12)),
                 ("topk", ["--metric", "jaccard", "--topk", "5"], "nn.npz", False, (3, 12)),
                 ("topk_abt", ["--metric", "cosine", "--topk", "7"], "nn.tsv", True, (3, 12)),
                 ("threshold", ["--metric", "jaccard", "--threshold", "0.12"], "pairs.npz", False, (2, 5)),
                 ("threshold_abt", ["--threshold", "14"], "pairs.mtx", True, (2, 5))]


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
@pytest.mark.parametrize("name,opts,out_name,two,kills", BACKEND_CASES, ids=[c[0] for c in BACKEND_CASES])
def test_resume_on_backend(inputs, backend, name, opts, out_name, two, kills, tmp_path):
    """A job killed twice on the backend, resumed there: identical bytes (cuda: the device
    test, gpu_cli_test_resume)."""
    require_backend(backend, tmp_path)
    d = inputs
    # 16 panels of 256 rows: 136 tiles (A·Aᵀ), several of the engine's checkpoints (every 4
    # output slots' worth of tiles) before the end; threshold units are row blocks.
    big_inputs(d)
    args = ["gram", d / "big.npy"] + ([d / "big_b.npy"] if two else []) + opts + ["--backend", backend, "-q"]
    ref = d / ("ref_" + out_name)
    run(*args, "-o", ref, env=EPOCH)
    tile = ["--tile", "256"] if backend == "cuda" else ["--tile", "128"]
    out = d / out_name
    for n, k in enumerate(kills):
        proc = run(*args, *tile, "-o", out, "--resume", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER=str(k)))
        # The first kill must land; a later one may find the rest done in one checkpoint (the
        # device's tile order decides when row blocks complete), and then the job finishes.
        assert proc.returncode == -signal.SIGKILL or (n > 0 and proc.returncode == 0), proc.stderr
        if proc.returncode == 0:
            out.unlink()
    run(*args, "-o", out, "--resume", env=EPOCH)
    assert out.read_bytes() == ref.read_bytes()
    assert leftovers(d, out) == []


def big_inputs(d):
    rng = np.random.default_rng(3)
    np.save(d / "big.npy", (rng.random((4096, 900)) < 0.1).astype(np.uint8))
    np.save(d / "big_b.npy", (rng.random((3000, 900)) < 0.1).astype(np.uint8))


TOPK_DEVICE_CASES = [c for c in BACKEND_CASES if c[0].startswith("topk")]


@pytest.mark.parametrize("name,opts,out_name,two,kills", TOPK_DEVICE_CASES, ids=[c[0] for c in TOPK_DEVICE_CASES])
def test_topk_resume_on_several_cuda_devices(inputs, name, opts, out_name, two, kills, tmp_path):
    """A top-k job on two logical devices of GPU 0, killed, resumed on one, killed again and
    finished on three: the bytes of an uninterrupted run on one device (gpu_cli_test_resume)."""
    require_backend("cuda", tmp_path)
    d = inputs
    big_inputs(d)
    args = ["gram", d / "big.npy"] + ([d / "big_b.npy"] if two else []) + opts + ["--backend", "cuda", "-q"]
    ref = d / ("ref_" + out_name)
    run(*args, "-o", ref, env=EPOCH)
    out = d / out_name
    for devices, k in zip(("0:2", "0"), kills):
        proc = run(*args, "--devices", devices, "--tile", "256", "-o", out, "--resume", check=False,
                   env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER=str(k)))
        assert proc.returncode == -signal.SIGKILL, f"--devices {devices}: {proc.stderr}"
        assert not out.exists()
    run(*args, "--devices", "0:3", "-o", out, "--resume", env=EPOCH)
    assert out.read_bytes() == ref.read_bytes()
    assert leftovers(d, out) == []


def test_dense_resume_on_several_cuda_devices_refused(inputs, tmp_path):
    """Dense and threshold checkpoints are one device's: exit 1, one line saying so."""
    require_backend("cuda", tmp_path)
    d = inputs
    for opts, out_name in (([], "C.npy"), (["--threshold", "3"], "pairs.npz")):
        proc = run("gram", d / "A.npy", *opts, "--devices", "0:2", "-o", d / out_name, "--resume", "-q", check=False)
        assert proc.returncode == 1, proc.stderr
        assert "several devices" in proc.stderr and "run it on one device" in proc.stderr
        assert len(proc.stderr.splitlines()) == 1
        assert leftovers(d, d / out_name) == [] and not (d / out_name).exists()


def test_real_sigkill_of_running_jobs(inputs):
    """A real kill -9 of a running CLI job, at whatever point it has reached, several times."""
    d = inputs
    rng = np.random.default_rng(11)
    np.save(d / "big.npy", (rng.random((2400, 4096)) < 0.05).astype(np.uint8))
    for opts, out_name in ((["--metric", "jaccard"], "C.npy"), (["--threshold", "10"], "pairs.npz"),
                           (["--topk", "9", "--metric", "cosine"], "nn.npz")):
        args = [outcore_bin(), "gram", str(d / "big.npy"), *opts, "--tile", "48", "--threads", "1", "--backend", "cpu", "-q"]
        ref, out = d / ("ref_" + out_name), d / out_name
        journal = d / (out_name + ".outcore-journal")
        env = dict(os.environ, **EVERY)
        start = time.monotonic()
        subprocess.run(args + ["-o", str(ref), "--resume"], check=True, env=env)
        whole = time.monotonic() - start
        # Killed at 0.3 and 0.6 of an uninterrupted resumable run's time.
        interrupted = sigkill_while_running(args + ["-o", str(out), "--resume"], env, whole, journal, out)
        assert interrupted > 0, f"{out_name}: no kill landed while the job ran"
        subprocess.run(args + ["-o", str(out), "--resume"], check=True, env=env)
        assert out.read_bytes() == ref.read_bytes(), out_name
        assert leftovers(d, out) == []


def killed_job(d, extra=()):
    """A dense job of A killed after its third unit; returns its arguments and the journal."""
    args = ["gram", d / "A.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q", *extra]
    proc = run(*args, "-o", d / "C.npy", "--resume", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="3"))
    assert proc.returncode == -signal.SIGKILL
    return args, d / "C.npy.outcore-journal"


def test_a_resumed_jobs_tiles_too_large_for_the_budget(tmp_path):
    """A job killed with --tile 2048 resumes with its journal's tiles whatever --tile says: a
    budget too small for their buffers is refused saying so, not with advice (a smaller
    --tile) the resume cannot take; the journal is kept, and the budget named runs it."""
    np.save(tmp_path / "A.npy", (np.random.default_rng(3).random((4200, 64)) < 0.2).astype(np.uint8))
    args = ["gram", tmp_path / "A.npy", "--topk", "5", "--metric", "jaccard", "--threads", "1", "--backend", "cpu",
            "-q", "-o", tmp_path / "nn.npz", "--resume"]
    proc = run(*args, "--tile", "2048", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="1"))
    assert proc.returncode == -signal.SIGKILL
    proc = run(*args, "--tile", "240", "--host-mem", "12M", check=False, env=EPOCH)
    assert proc.returncode == 2 and "too small for tiles of 2048 x 2048" in proc.stderr, proc.stderr
    assert "the resume journal's" in proc.stderr and "smaller --tile" not in proc.stderr, proc.stderr
    assert (tmp_path / "nn.npz.outcore-journal").exists() and not (tmp_path / "nn.npz").exists()
    least = int(proc.stderr.split("it needs at least ")[1].split()[0])
    run(*args, "--host-mem", least + (8 << 20), env=EPOCH)
    plain = run("gram", tmp_path / "A.npy", "--topk", "5", "--metric", "jaccard", "--threads", "1", "--backend",
                "cpu", "-q", "-o", tmp_path / "plain.npz", env=EPOCH)
    assert plain.returncode == 0
    with np.load(tmp_path / "nn.npz") as x, np.load(tmp_path / "plain.npz") as y:
        assert all(np.array_equal(x[k], y[k]) for k in ("indices", "scores"))


def test_ctrl_c_while_a_held_journal_is_waited_for(inputs):
    """A journal whose lock is held (a job killed a moment ago, not yet torn down) is waited
    for a few seconds before the run is refused; Ctrl-C meanwhile stops it at once (exit 130),
    the journal and its temporary kept for --resume."""
    import fcntl
    d = inputs
    args, journal = killed_job(d)
    kept = sorted(p.name for p in d.iterdir())
    with open(journal, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        job = subprocess.Popen([outcore_bin(), *map(str, args), "-o", str(d / "C.npy"), "--resume"],
                               stderr=subprocess.PIPE, text=True)
        wait_until_open(job, journal)  # inside the wait for its lock
        job.send_signal(signal.SIGINT)
        _, err = job.communicate(timeout=60)
    assert job.returncode == 130, err
    assert "cancelled while waiting for the resume journal" in err, err
    assert sorted(p.name for p in d.iterdir()) == kept
    proc = run(*args, "-o", d / "C.npy", "--resume")
    assert proc.returncode == 0 and (d / "C.npy").exists() and not journal.exists()


def test_journal_of_another_job_refused(inputs):
    d = inputs
    args, journal = killed_job(d)
    # other options
    proc = run(*args, "--metric", "jaccard", "-o", d / "C.npy", "--resume", check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert str(journal) in proc.stderr and "metric" in proc.stderr
    # another input under the same name
    rng = np.random.default_rng(99)
    np.save(d / "A.npy", (rng.random((330, 700)) < 0.1).astype(np.uint8))
    proc = run(*args, "-o", d / "C.npy", "--resume", check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "the input changed since the journal" in proc.stderr and str(journal) in proc.stderr
    assert not (d / "C.npy").exists()


def test_input_with_other_content_refused(inputs):
    """An input rewritten with the same size and modification time but other bytes is refused
    by its file's checksum in the journal: exit 2, one line saying the content differs."""
    d = inputs
    args = ["gram", d / "A.npy", d / "B.npy", "--tile", "24", "--threads", "1", "--backend", "cpu", "-q"]
    proc = run(*args, "-o", d / "C.npy", "--resume", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="2"))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    journal = d / "C.npy.outcore-journal"
    # Row 1 of B's 270 x 700 bytes: not among the 64 rows whose bits the journal keeps too.
    rewrite_keeping_size_and_mtime(d / "B.npy", at=-269 * 700)
    proc = run(*args, "-o", d / "C.npy", "--resume", check=False)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"outcore: {d / 'B.npy'}: the input changed since the journal {journal} was "
                                  "written (its content differs)"), proc.stderr
    assert not (d / "C.npy").exists() and journal.exists()


def test_damaged_journals(inputs):
    d = inputs
    args, journal = killed_job(d)
    run(*args, "-o", d / "ref.npy")
    data = journal.read_bytes()
    # a torn last record (a crash in the middle of a write) is ignored, its tile done again
    journal.write_bytes(data[:-3])
    proc = run(*args, "-o", d / "C.npy", "--resume", check=False,
               env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="6"))
    assert proc.returncode == -signal.SIGKILL
    # a flipped byte in a record: that record and the rest are dropped, the tiles redone
    data = bytearray(journal.read_bytes())
    data[-20] ^= 0xFF
    journal.write_bytes(bytes(data))
    run(*args, "-o", d / "C.npy", "--resume")
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, d / "C.npy") == []
    # a damaged header: refused, naming the journal
    args, journal = killed_job(d)
    data = bytearray(journal.read_bytes())
    data[30] ^= 0x01
    journal.write_bytes(bytes(data))
    proc = run(*args, "-o", d / "C.npy", "--resume", check=False)
    assert proc.returncode == 2 and str(journal) in proc.stderr and "damaged" in proc.stderr


def test_journal_without_its_temporary_leaves_nothing(inputs):
    """A journal cut to its header (its record of the temporary lost) starts over; once the
    job is done the earlier run's temporary, which nothing names now, is removed too."""
    d = inputs
    args, journal = killed_job(d)
    run(*args, "-o", d / "ref.npy")
    text = journal.read_bytes()
    crc = text.index(b"\ncrc ")
    journal.write_bytes(text[:text.index(b"\n", crc + 1) + 1])
    run(*args, "-o", d / "C.npy", "--resume")
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, d / "C.npy") == []


def test_damaged_tile_in_the_output_is_redone(inputs):
    """A tile whose bytes in the temporary file are not the journal's is computed again."""
    d = inputs
    args, journal = killed_job(d)
    run(*args, "-o", d / "ref.npy")
    tmp = [p for p in d.iterdir() if p.name.startswith("C.npy.tmp-")]
    assert len(tmp) == 1
    arr = np.load(tmp[0], mmap_mode="r+")
    arr[0, :24] = 12345  # in the first tile, which the journal has
    arr.flush()
    del arr
    run(*args, "-o", d / "C.npy", "--resume")
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()


def test_stopped_between_the_rename_and_its_journal(inputs):
    """A dense job stopped after its commit renamed the result into place but before it
    removed its journal (made here by doing the rename by hand): --resume has nothing to
    resume from and runs the job again: the bytes of one run, no journal left."""
    d = inputs
    args, journal = killed_job(d)
    run(*args, "-o", d / "ref.npy")
    tmp = [p for p in d.iterdir() if p.name.startswith("C.npy.tmp-")]
    assert len(tmp) == 1 and journal.exists()
    tmp[0].rename(d / "C.npy")
    run(*args, "-o", d / "C.npy", "--resume")
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, d / "C.npy") == []


def test_resume_without_journal_and_success_removes_it(inputs):
    d = inputs
    run("gram", d / "A.npy", "-o", d / "C.npy", "--resume", "-q", "--backend", "cpu")
    run("gram", d / "A.npy", "-o", d / "R.npy", "-q")
    assert (d / "C.npy").read_bytes() == (d / "R.npy").read_bytes()
    assert leftovers(d, d / "C.npy") == []


def test_sparse_algorithm_cannot_resume(inputs):
    proc = run("gram", inputs / "A.npy", "--algorithm", "sparse", "--threshold", "3", "-o", inputs / "p.npz",
               "--resume", check=False)
    assert proc.returncode == 2 and "sparse" in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert not (inputs / "p.npz.outcore-journal").exists()


def test_ctrl_c_keeps_the_journal(inputs):
    """SIGINT cancels a resumable job (exit 130) and keeps what it finished for --resume."""
    d = inputs
    rng = np.random.default_rng(13)
    np.save(d / "big.npy", (rng.random((2400, 4096)) < 0.05).astype(np.uint8))
    args = [outcore_bin(), "gram", str(d / "big.npy"), "--metric", "cosine", "--tile", "48", "--threads", "1", "--backend", "cpu", "-q"]
    out, ref = d / "C.npy", d / "ref.npy"
    start = time.monotonic()
    subprocess.run(args + ["-o", str(ref), "--resume"], check=True, env=dict(os.environ, **EVERY))
    whole = time.monotonic() - start
    job = subprocess.Popen(args + ["-o", str(out), "--resume"], env=dict(os.environ, **EVERY), stderr=subprocess.PIPE)
    time.sleep(whole * 0.5)
    job.send_signal(signal.SIGINT)
    job.communicate()
    if job.returncode == 130:
        assert (d / "C.npy.outcore-journal").exists() and not out.exists()
        assert len([p for p in d.iterdir() if p.name.startswith("C.npy.tmp-")]) == 1
    subprocess.run(args + ["-o", str(out), "--resume"], check=True, env=dict(os.environ, **EVERY))
    assert out.read_bytes() == ref.read_bytes()
    assert leftovers(d, out) == []


def test_a_new_job_that_fails_leaves_nothing(inputs):
    """A resumable job that fails before anything is on record removes its journal too."""
    d = inputs
    proc = run("gram", d / "A.npy", "-o", d / "C.npy", "--resume", "-q", "--backend", "cpu", check=False,
               env={"OUTCORE_FAULT_TRUNCATE": "1:enospc"})
    assert proc.returncode == 1 and "disk full" in proc.stderr
    assert leftovers(d, d / "C.npy") == [] and not (d / "C.npy").exists()
    proc = run("gram", d / "A.npy", "--topk", "3", "-o", d / "nn.npz", "--resume", "-q", "--backend", "cpu",
               check=False, env={"OUTCORE_FAULT_OPEN": "2:eio"})
    assert proc.returncode != 0
    assert leftovers(d, d / "nn.npz") == [] and not (d / "nn.npz").exists()


@pytest.mark.parametrize("budget", [[], ["--host-mem", "2M"]], ids=["in_memory", "in_panels"])
@pytest.mark.parametrize("killed_after", [0, 2])
def test_input_cut_while_read_puts_nothing_on_record(tmp_path, budget, killed_after):
    """An input cut while it is read, packed into memory or left in its file and read in
    panels: the job fails naming it before any tile and records nothing; a resumed run then
    computes the result right. (A file rewritten at another size while its panels are read:
    tests/python/test_resume.py.)"""
    d = tmp_path
    np.save(d / "A.npy", (np.random.default_rng(9).random((3000, 4096)) < 0.3).astype(np.uint8))
    args = [d / "A.npy", "--metric", "jaccard", "--topk", "4", "--backend", "cpu", "--threads", "1", "-q"] + budget
    run("gram", *args, "-o", d / "ref.npz", env=EPOCH)
    resume_while_an_input_is_cut("gram", args, d / "nn.npz", d / "ref.npz", d / "A.npy", killed_after, EVERY)


def computed(proc):
    return json.loads(proc.stdout)["bit_macs_computed"]


SPELLING_CASES = [c for c in CASES if c[0] in ("dense_aat", "dense_abt", "topk_aat", "threshold_abt")]


@pytest.mark.parametrize("name,opts,out_name,two", SPELLING_CASES, ids=[c[0] for c in SPELLING_CASES])
def test_resume_under_other_spellings_of_the_paths(inputs, name, opts, out_name, two):
    """The same job spelled ./A.npy -o ./C.npy, then A.npy -o C.npy, then ../A.npy from a
    folder below, then by absolute paths from another folder: one journal, resumed each time
    (only the work not on record is computed), the bytes of one run, nothing left over."""
    d = inputs
    (d / "sub").mkdir()
    ins = ["A.npy"] + (["B.npy"] if two else [])
    flags = opts + ["--tile", "24", "--threads", "1", "--backend", "cpu"]
    ref = run_in(d, "gram", *ins, *flags, "-o", "ref_" + out_name, "--json", env=EPOCH)
    spellings = [(d, "./", (2,)), (d, "", (5,)), (d / "sub", "../", (8,)), (d.parent, str(d) + "/", ())]
    for cwd, prefix, kill in spellings:
        args = ["gram", *[prefix + i for i in ins], *flags, "-o", prefix + out_name, "--resume"]
        if kill:
            proc = run_in(cwd, *args, "-q", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER=str(kill[0])))
            assert proc.returncode == -signal.SIGKILL, proc.stderr
            assert (d / (out_name + ".outcore-journal")).exists() and not (d / out_name).exists()
        else:
            last = run_in(cwd, *args, "--json", env=EPOCH)
    assert (d / out_name).read_bytes() == (d / ("ref_" + out_name)).read_bytes()
    assert leftovers(d, d / out_name) == [] and os.listdir(d / "sub") == []
    assert computed(last) < computed(ref)  # the journal's work (and a top-k snapshot) was kept


def test_changed_input_under_another_spelling_refused(inputs):
    """Paths are not compared, content is: the input rewritten under its name, resumed under
    another spelling of it, is refused as changed; another file under another name, as not the
    journal's; a copy with its time kept is the same input."""
    d = inputs
    flags = ["--tile", "24", "--threads", "1", "--backend", "cpu", "-q", "--resume"]
    proc = run_in(d, "gram", "./A.npy", *flags, "-o", "./C.npy", check=False,
                  env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="3"))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    journal = d / "C.npy.outcore-journal"
    shutil.copy2(d / "A.npy", d / "copy.npy")
    rng = np.random.default_rng(99)
    np.save(d / "A.npy", (rng.random((330, 700)) < 0.1).astype(np.uint8))
    proc = run_in(d, "gram", "A.npy", *flags, "-o", "C.npy", check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("outcore: A.npy: the input changed since the journal C.npy.outcore-journal")
    proc = run_in(d.parent, "gram", d / "B.npy", *flags, "-o", d / "C.npy", check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"outcore: {d / 'B.npy'}: not the input the journal {journal} was made for "
                                  "(named './A.npy' there; its shape differs)"), proc.stderr
    assert journal.exists() and not (d / "C.npy").exists()
    run_in(d.parent, "gram", d / "copy.npy", *flags, "-o", d / "C.npy")
    run_in(d, "gram", "copy.npy", "--tile", "24", "-q", "-o", "ref.npy")
    assert (d / "C.npy").read_bytes() == (d / "ref.npy").read_bytes()
    assert leftovers(d, d / "C.npy") == []


def test_resumable_threshold_keeps_to_the_host_budget(tmp_path):
    """The pairs a resumable threshold job journals go to the file as they come, not into a
    buffer of every pair of a drain: its peak keeps to --host-mem (docs/memory.md: the budget,
    16 MiB and 4 MiB a thread) as the job without --resume does."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", (rng.random((64, 8)) < 0.5).astype(np.uint8))
    np.save(tmp_path / "b.npy", (rng.random((200000, 8)) < 0.5).astype(np.uint8))  # 12.8 million pairs
    budget, threads = 64 << 20, 2
    args = ["gram", tmp_path / "a.npy", tmp_path / "b.npy", "--metric", "counts", "--threshold", "0", "--backend",
            "cpu", "--threads", threads, "--host-mem", budget, "--json"]
    peaks = {}
    for name, extra in (("plain", []), ("resume", ["--resume"])):
        stats = json.loads(run(*args, *extra, "-o", tmp_path / f"{name}.npz").stdout)
        peaks[name] = stats["host_peak_bytes"]
        assert stats["host_peak_bytes"] <= budget + (16 << 20) + threads * (4 << 20), (name, stats["host_peak_bytes"])
    with np.load(tmp_path / "plain.npz") as p, np.load(tmp_path / "resume.npz") as r:
        assert all(np.array_equal(p[k], r[k]) for k in p.files)
    assert leftovers(tmp_path, tmp_path / "resume.npz") == []


def _forge(records, how):
    """A threshold journal's records as a forger with the CRC would change them."""
    import struct
    pairs = [r for r in records if r[0] == 5]
    blocks = [r for r in records if r[0] == 6]
    first = pairs[0]
    count = struct.unpack_from("<q", first[2])[0]
    if how == "count huge":
        first[2] = struct.pack("<q", 10**9) + first[2][8:]
    elif how == "count one more":
        first[2] = struct.pack("<q", count + 1) + first[2][8:]
    elif how == "row past the matrix":
        first[2] = first[2][:8] + struct.pack("<q", 10**12) + first[2][16:]
    elif how == "blocks negative":
        blocks[-1][1] = 2**64 - 3
    elif how == "blocks past the end":
        blocks[-1][1] = 10**6
    elif how == "blocks record again":
        records.append(list(blocks[0]))
    elif how == "pairs record dropped":
        records.remove(pairs[1])
    elif how == "pairs records swapped":
        i, j = records.index(pairs[0]), records.index(pairs[1])
        records[i], records[j] = records[j], records[i]
    elif how == "another plan":
        records.append([2, 7, b""])
    return records


@pytest.mark.parametrize("how", ["count huge", "count one more", "row past the matrix", "blocks negative",
                                 "blocks past the end", "blocks record again", "pairs record dropped",
                                 "pairs records swapped", "another plan"])
def test_a_forged_threshold_journal_resumes_right_or_is_refused(inputs, how):
    """A threshold job's journal changed with its CRC-32s recomputed (counts, rows, blocks,
    records dropped, repeated or swapped): the job resumes from what is consistent and gives the
    bytes of an uninterrupted run, or is refused in one line (exit 2); it never crashes, fails
    as an internal error or writes other bytes."""
    d = inputs
    job = ["gram", "A.npy", "--threshold", "0.05", "--metric", "jaccard", "--tile", "24", "--threads", "1", "-q"]
    run_in(d, *job, "-o", "ref.mtx", env=EPOCH)
    killed = run_in(d, *job, "-o", "o.mtx", "--resume", check=False, env=dict(EVERY, OUTCORE_RESUME_KILL_AFTER="3"))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    journal = d / "o.mtx.outcore-journal"
    header, records = read_journal(journal)
    assert sum(r[0] == 5 for r in records) >= 2 and any(r[0] == 6 for r in records), [r[0] for r in records]
    write_journal(journal, header, _forge(records, how))
    proc = run_in(d, *job, "-o", "o.mtx", "--resume", check=False, env=EPOCH)
    if proc.returncode == 0:
        assert (d / "o.mtx").read_bytes() == (d / "ref.mtx").read_bytes()
    else:
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, (proc.returncode, proc.stderr)
