"""Shared fixtures of the CLI tests: the binary, a runner, numpy references."""
import json
import os
import shutil
import signal
import struct
import subprocess
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

SOURCE_DIR = Path(os.environ.get("OUTCORE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
DATA_DIR = SOURCE_DIR / "tests" / "data"


def find_cuda_tool(name):
    """A CUDA toolkit program (nvcc, ptxas): under CUDA_HOME, CUDA_PATH or /usr/local/cuda,
    else on PATH; None when absent."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", name), os.X_OK):
            return os.path.join(home, "bin", name)
    return shutil.which(name)


def outcore_bin():
    path = os.environ.get("OUTCORE_BIN")
    if path and Path(path).exists():
        return path
    fallback = SOURCE_DIR / "build" / "outcore"
    if fallback.exists():
        return str(fallback)
    pytest.skip("outcore binary not found: set OUTCORE_BIN or build into ./build")


def library():
    """The built liboutcore: OUTCORE_LIBRARY, else the one beside the built outcore."""
    path = os.environ.get("OUTCORE_LIBRARY")
    lib = Path(path) if path else Path(outcore_bin()).resolve().parent / "liboutcore.so"
    assert lib.exists(), f"{lib} is missing: build the library or set OUTCORE_LIBRARY"
    return lib.resolve()


def run(*args, check=True, env=None, cwd=None, timeout=None):
    """Runs the CLI (in the folder cwd when given, where the paths of args are then spelled);
    returns the CompletedProcess (text mode). A timeout (seconds) fails a call that hangs."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run([outcore_bin(), *map(str, args)], capture_output=True, text=True, env=full_env, cwd=cwd,
                          timeout=timeout)
    if check and proc.returncode != 0:
        where = f" in {cwd}" if cwd else ""
        raise AssertionError(f"outcore {' '.join(map(str, args))}{where} exited {proc.returncode}: {proc.stderr}")
    return proc


def run_in(cwd, *args, check=True, env=None):
    """run(*args) in the folder cwd."""
    return run(*args, check=check, env=env, cwd=cwd)


def _thread_limit(user=None):
    """A preexec_fn that caps the child's processes and threads at one (RLIMIT_NPROC), as
    user (a pwd entry) when given: root is not bound by the limit."""
    import resource

    def apply():
        if user is not None:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
    return apply


@pytest.fixture
def thread_limited(tmp_path):
    """(folder, preexec_fn): a folder for the files of a run that can start no thread, and the
    preexec_fn of that run. Run as root, the run is the user nobody's (the limit binds only
    other users), in a folder it can write; skipped where nobody cannot run the binary."""
    if os.geteuid() != 0:
        yield tmp_path, _thread_limit()
        return
    import pwd
    import tempfile
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root, which ignores ulimit -u, and there is no user nobody to run as")
    folder = Path(tempfile.mkdtemp(prefix="outcore-nproc-"))
    try:
        os.chmod(folder, 0o777)

        def as_nobody():
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
        probe = subprocess.run([outcore_bin(), "--version"], capture_output=True, text=True, preexec_fn=as_nobody,
                               timeout=60)
        if probe.returncode != 0:
            pytest.skip(f"running as root, which ignores ulimit -u, and the user nobody cannot run {outcore_bin()}: "
                        f"{probe.stderr.strip()}")
        yield folder, _thread_limit(user)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_cuda_usable = None


def require_backend(backend, tmp_path):
    """Skips the CUDA cases where no GPU is usable (outcore says why)."""
    global _cuda_usable
    if backend != "cuda":
        return
    if _cuda_usable is None:
        probe = tmp_path / "probe"
        probe.mkdir()
        np.save(probe / "a.npy", np.eye(4, dtype=np.uint8))
        proc = run("gram", probe / "a.npy", "--backend", "cuda", "-o", probe / "c.npy", "-q", check=False)
        _cuda_usable = (proc.returncode == 0, proc.stderr.strip())
        shutil.rmtree(probe)
    if not _cuda_usable[0]:
        pytest.skip(f"no usable GPU: {_cuda_usable[1]}")


def holds_open(pid, path):
    """Whether process pid has the file path open (one of its /proc/PID/fd is that file)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.path.samefile(f"/proc/{pid}/fd/{fd}", path):
                return True
        except OSError:  # closed meanwhile
            pass
    return False


def wait_until_open(proc, path, seconds=60):
    """Waits until the running CLI proc (a Popen) has path open: a point of its run that a
    test signals it at, reached whatever the machine's speed or load. Fails the test (proc
    killed) when proc ends first or after `seconds`."""
    deadline = time.monotonic() + seconds
    while not holds_open(proc.pid, path):
        ended = proc.poll() is not None
        if ended or time.monotonic() >= deadline:
            if not ended:
                proc.kill()
            _, err = proc.communicate()
            what = f"ended (exit {proc.returncode}) without opening" if ended else f"did not open in {seconds} s"
            pytest.fail(f"outcore {what} {path}; stderr: {err}")
        time.sleep(0.01)


def sigkill_while_running(args, env, seconds, journal, out, shares=(0.3, 0.6)):
    """Starts the resumable job `args` (a command line with its output, and --resume) and
    kills it with SIGKILL after each share of `seconds`; returns how many kills landed while it
    ran (the job died by the signal, its journal there and its output not). `seconds` is one
    uninterrupted run's time, which a loaded machine can make far from this run's: a job that
    ended before its kill is run again with half the wait (its output removed, so that a later
    kill can land), one killed before its journal existed with twice the wait, four times at
    most."""
    interrupted, retries = 0, 4
    waits = [seconds * share for share in shares]
    while waits:
        wait = waits.pop(0)
        job = subprocess.Popen(args, env=env, stderr=subprocess.PIPE)
        time.sleep(wait)
        job.send_signal(signal.SIGKILL)
        job.communicate()
        killed = job.returncode == -signal.SIGKILL
        if killed and journal.exists() and not out.exists():
            interrupted += 1
        elif retries > 0:
            retries -= 1
            if not killed:
                out.unlink(missing_ok=True)
            waits.append(wait / 2 if not killed else min(wait * 2, seconds))
    return interrupted


def resume_while_an_input_is_cut(command, args, out, ref, cut, killed_after, env):
    """The resumable job `command args -o out` (env: its variables, a checkpoint after every
    tile) killed after `killed_after` tiles on record (0: never started), then resumed with
    its input `cut` read as though cut after it was opened (OUTCORE_FAULT_SHRINK): exit 2 in
    one line naming it, no output, and the journal as it was (none for a job never started):
    no tile read from the cut input is on record. Resumed again, the output is `ref`'s bytes."""
    journal = out.with_name(out.name + ".outcore-journal")
    if killed_after:
        proc = run(command, *args, "-o", out, "--resume", check=False,
                   env=dict(env, OUTCORE_RESUME_KILL_AFTER=str(killed_after)))
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    before = read_journal(journal) if killed_after else None
    proc = run(command, *args, "-o", out, "--resume", check=False, env=dict(env, OUTCORE_FAULT_SHRINK="1"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"outcore: {cut}: the file changed while being read"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not out.exists()
    assert (read_journal(journal) if journal.exists() else None) == before
    run(command, *args, "-o", out, "--resume", env=env)
    assert out.read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(out.name + ".")) == []


def data_file(name):
    """A real data set of tests/data (tests/data/README.md names its source); never absent."""
    path = DATA_DIR / name
    assert path.exists(), f"{path} is missing from the repository"
    return path


def exact_counts(a, b):
    """A·Bᵀ of 0/1 int64 matrices, exactly, in int64."""
    if np.count_nonzero(a) + np.count_nonzero(b) < 0.02 * (a.size + b.size):
        try:
            from scipy import sparse
        except ImportError:
            sparse = None
        if sparse is not None:  # sparse rows (a real data set): a sparse product, in int64
            return (sparse.csr_matrix(a) @ sparse.csr_matrix(b).T).toarray().astype(np.int64)
    # BLAS in float64 is exact for counts below 2^53 and far faster than numpy's int64 matmul.
    return np.rint(a.astype(np.float64) @ b.T.astype(np.float64)).astype(np.int64)


def reference(a, b=None, metric="counts", dtype=None):
    """The Gram semantics of design.md, computed with numpy in float64/int64."""
    a = np.asarray(a, dtype=np.int64)
    b = a if b is None else np.asarray(b, dtype=np.int64)
    c = exact_counts(a, b)
    pa = a.sum(axis=1)[:, None]
    pb = b.sum(axis=1)[None, :]
    if metric == "counts":
        out = c
    elif metric == "hamming":
        out = pa + pb - 2 * c
    elif metric == "jaccard":
        union = (pa + pb - c).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(union == 0, 1.0, c / union)
        return out.astype(np.float32)
    elif metric == "cosine":
        prod = pa.astype(np.float64) * pb.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(prod == 0, 0.0, c / np.sqrt(prod))
        return out.astype(np.float32)
    else:
        raise ValueError(metric)
    return out.astype(np.uint16 if dtype == "uint16" else np.int32)


def min_score_reference(scores, k, symmetric, hamming, s):
    """Top-k with a minimum score from its definition (docs/topk.md): each row's k best
    among the pairs passing S (>= S; hamming <= S), compared in the result dtype, best first,
    ties by the lower column, the row itself excluded for A·Aᵀ; padded with -1 and NaN
    (float32), -1 (int32) or 65535 (uint16)."""
    n, p = scores.shape
    indices = np.full((n, k), -1, np.int64)
    pad = np.nan if scores.dtype == np.float32 else np.iinfo(scores.dtype).max if scores.dtype == np.uint16 else -1
    values = np.full((n, k), pad, scores.dtype)
    cols = np.arange(p)
    bound = scores.dtype.type(s)
    for i in range(n):
        cand = cols[cols != i] if symmetric else cols
        row = scores[i, cand]
        cand = cand[row <= bound if hamming else row >= bound]
        key = scores[i, cand].astype(np.float64)
        order = np.lexsort((cand, key if hamming else -key))[:k]
        indices[i, :len(order)] = cand[order]
        values[i, :len(order)] = scores[i, cand[order]]
    return indices, values


def summary_json(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


def pytest_sessionfinish(session, exitstatus):
    """A run whose every test was skipped exits 77, which ctest reports as Skipped: a file of
    opt-in or GPU-only tests never shows as passed when nothing in it ran."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus != 0 or reporter is None:
        return
    stats = reporter.stats
    ran = any(stats.get(key) for key in ("passed", "failed", "error", "xfailed", "xpassed"))
    if stats.get("skipped") and not ran:
        session.exitstatus = 77


def read_journal(path):
    """A resume journal's text header (through its crc line) and its records as [type, unit,
    payload] (each record: magic, type, unit, length and CRC-32 over type, unit, length and
    payload, then the payload)."""
    data = path.read_bytes()
    at = data.index(b"\ncrc ") + 14
    header, records, off = data[:at], [], at
    while off + 24 <= len(data):
        _, kind, unit, length, _ = struct.unpack_from("<IIQII", data, off)
        records.append([kind, unit, data[off + 24:off + 24 + length]])
        off += 24 + length
    return header, records


def write_journal(path, header, records):
    """The journal of read_journal's parts, its CRC-32s recomputed as a forger would."""
    parts = [header]
    for kind, unit, payload in records:
        crc = zlib.crc32(struct.pack("<IQI", kind, unit, len(payload)) + payload)
        parts.append(struct.pack("<IIQII", 0x4A52434F, kind, unit, len(payload), crc) + payload)
    path.write_bytes(b"".join(parts))


def rewrite_keeping_size_and_mtime(path, at=-1):
    """Flips the lowest bit of path's byte `at` (negative: from the end; in an .npy's data,
    another value of an element: a 0/1 byte to the other, a float64 scaled by 2^16 or 2^-16
    when it is the element's last byte) and puts its modification time back: only its
    content tells the file from the one a resume journal describes."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[at] ^= 1
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
