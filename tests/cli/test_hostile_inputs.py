"""Hostile inputs and a hostile file system (docs/inputs.md): each case is the file or command
that provoked it, and asserts the exit status, one line on stderr that names the problem, and
that nothing is left in the folder (no output, no temporary) and the inputs are untouched.

- inputs that are not regular files (named pipe, directory, device, socket): refused at once;
- an input cut while it is read (OUTCORE_FAULT_SHRINK, which cuts the mapping, not the file):
  "changed while being read" instead of SIGBUS;
- a tiny .mtx whose size line declares billions of rows: no allocation past the budget;
- ptxas on untrusted PTX: time and memory limits, and paths that look like options;
- damaged fatbinaries: exit 2, not an abort or exit 1;
- budgets and folders the job cannot use: exit 2 with the reason.
"""
import os
import resource
import socket
import subprocess
import time

import numpy as np
import pytest

from conftest import SOURCE_DIR, outcore_bin, run

FATBIN_CORPUS = SOURCE_DIR / "tests" / "fuzz" / "corpus" / "fatbin"


def snapshot(folder):
    """Every file under folder with its size and modification time."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            out[os.path.relpath(path, folder)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def fails_cleanly(folder, args, code, *words, env=None, limit_s=30):
    """Runs outcore in folder; asserts exit `code`, one stderr line holding every word, no new
    or changed file, and an answer within limit_s seconds. Returns the line."""
    before = snapshot(folder)
    start = time.monotonic()
    proc = run(*args, check=False, env=env)
    elapsed = time.monotonic() - start
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert str(w) in lines[0], (w, lines[0])
    assert elapsed < limit_s, elapsed
    assert snapshot(folder) == before, "files left or touched"
    return lines[0]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "a.npy", (np.arange(300 * 200).reshape(300, 200) % 3 == 0).astype(np.uint8))
    np.save(tmp_path / "f.npy", np.linspace(0, 1, 400_000))
    return tmp_path


# ------------------------------------------------------------------ not regular files

def test_named_pipe_inputs_are_refused_at_once(folder):
    for name in ("p.npy", "p.mtx", "p.txt", "k.ptx"):
        os.mkfifo(folder / name)
    for name in ("p.npy", "p.mtx", "p.txt"):
        fails_cleanly(folder, ["gram", name, "-o", "C.npy"], 2, name, "not a regular file (a named pipe)", limit_s=10)
    fails_cleanly(folder, ["gram", "a.npy", "p.npy", "-o", "C.npy"], 2, "p.npy", "not a regular file", limit_s=10)
    fails_cleanly(folder, ["map", "a * 2", "a=p.npy", "-o", "M.npy"], 2, "p.npy", "not a regular file", limit_s=10)
    fails_cleanly(folder, ["inspect", "k.ptx"], 2, "k.ptx", "not a regular file (a named pipe)", limit_s=10)


def test_directories_devices_and_sockets_are_refused(folder):
    (folder / "d.npy").mkdir()
    (folder / "kernels").mkdir()
    (folder / "null.npy").symlink_to("/dev/null")
    fails_cleanly(folder, ["gram", "d.npy", "-o", "C.npy"], 2, "d.npy", "not a regular file (a directory)")
    fails_cleanly(folder, ["map", "a + 1", "a=d.npy", "-o", "M.npy"], 2, "d.npy", "not a regular file (a directory)")
    # Not "out of host memory reading 9223372036854775807 bytes".
    line = fails_cleanly(folder, ["inspect", "kernels"], 2, "kernels", "not a regular file (a directory)")
    assert "memory" not in line
    fails_cleanly(folder, ["gram", "null.npy", "-o", "C.npy"], 2, "null.npy", "not a regular file (a device)")
    # A pseudo-file whose size is a page and whose contents are a line: not a change.
    pseudo = "/sys/kernel/mm/transparent_hugepage/enabled"
    if os.path.isfile(pseudo) and os.access(pseudo, os.R_OK):
        line = fails_cleanly(folder, ["inspect", "--no-gpu", pseudo], 2, pseudo, "not PTX, a cubin")
        assert "changed" not in line
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(folder / "s.mtx"))
        fails_cleanly(folder, ["gram", "s.mtx", "-o", "C.npy"], 2, "s.mtx", "not a regular file (a socket)")
    finally:
        sock.close()


# ------------------------------------------------------------------ inputs cut while read

SHRINK = {"OUTCORE_FAULT_SHRINK": "1"}


def test_npy_cut_while_packed(folder):
    size = (folder / "a.npy").stat().st_size
    fails_cleanly(folder, ["gram", "a.npy", "-o", "C.npy"], 2, "a.npy", "the file changed while being read (now",
                  f"expected {size})", env=SHRINK)


def test_mtx_and_text_cut_while_parsed(folder):
    with open(folder / "a.mtx", "w") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n500 400 20000\n")
        for k in range(20000):
            f.write(f"{k % 500 + 1} {k * 7 % 400 + 1}\n")
    np.savetxt(folder / "a.txt", np.eye(200, dtype=np.uint8), fmt="%d")
    for name in ("a.mtx", "a.txt"):
        size = (folder / name).stat().st_size
        fails_cleanly(folder, ["gram", name, "-o", "C.npy"], 2, name, "changed while being read", f"expected {size})",
                      env=SHRINK)


def test_map_cut_while_read_leaves_no_temporary(folder):
    size = (folder / "f.npy").stat().st_size
    # The output is written while the input is read: its temporary must go too.
    fails_cleanly(folder, ["map", "a * 2", "a=f.npy", "-o", "M.npy"], 2, "f.npy", "changed while being read",
                  f"expected {size})", env=SHRINK)
    fails_cleanly(folder, ["map", "a", "a=f.npy", "--reduce", "sum"], 2, "f.npy", "changed while being read",
                  env=SHRINK)


def test_header_cut_before_it_is_read(folder):
    """A file smaller than two pages is cut from byte 0: the header itself reads as zeros,
    which is reported as the cut, not as "not a .npy file"."""
    np.save(folder / "s.npy", np.arange(10.0))
    np.save(folder / "t.npy", np.eye(5, dtype=bool))
    fails_cleanly(folder, ["map", "a * 2", "a=s.npy", "-o", "S.npy"], 2, "s.npy: the file changed while being read",
                  "(now 0 bytes, expected 208)", env=SHRINK)
    fails_cleanly(folder, ["gram", "t.npy", "-o", "T.npy"], 2, "t.npy: the file changed while being read",
                  "(now 0 bytes", env=SHRINK)


# ------------------------------------------------------------------ .mtx size lines

MTX_BANNER = "%%MatrixMarket matrix coordinate pattern general\n"


def test_tiny_mtx_declaring_billions_of_rows(folder):
    (folder / "huge.mtx").write_text(MTX_BANNER + "4294967295 4294967295 2\n1 1\n2 2\n")
    fails_cleanly(folder, ["gram", "huge.mtx", "-o", "C.npy"], 2, "huge.mtx", "overflow")
    (folder / "big.mtx").write_text(MTX_BANNER + "130000000 130000000 2\n1 1\n2 2\n")
    # The row index of the declared rows (1 GB) is checked against the budget first.
    fails_cleanly(folder, ["gram", "big.mtx", "-o", "C.npy", "--host-mem", "256M"], 2, "big.mtx",
                  "declares 130000000 rows", "--host-mem")


def test_mtx_allocation_follows_the_entries_read(folder):
    """A size line that declares 10^12 entries over two lines allocates for two, not for 10^12
    (or for what the whole file could hold): a 256 MiB address space is plenty."""
    (folder / "lies.mtx").write_text(MTX_BANNER + "1000 1000 1000000000000\n1 1\n2 2\n")
    def small_address_space():
        resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20))

    before = snapshot(folder)
    proc = subprocess.run([outcore_bin(), "gram", "lies.mtx", "-o", "C.npy"], capture_output=True, text=True,
                          preexec_fn=small_address_space)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "outcore: lies.mtx: the size line declares 1000000000000 entries but the file has only 2"]
    assert snapshot(folder) == before


# ------------------------------------------------------------------ ptxas

PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  ret;
}
"""


def fake_ptxas(folder, body):
    """A CUDA_HOME whose bin/ptxas is the shell script body."""
    home = folder / "cuda"
    (home / "bin").mkdir(parents=True)
    ptxas = home / "bin" / "ptxas"
    ptxas.write_text("#!/bin/sh\n" + body)
    ptxas.chmod(0o755)
    return {"CUDA_HOME": str(home), "TMPDIR": str(folder)}


@pytest.mark.parametrize("body", ["exec sleep 60\n", "exec 1>&- 2>&-\nexec sleep 60\n"],
                         ids=["busy", "closes-its-output-and-hangs"])
def test_ptxas_time_limit(folder, body):
    env = fake_ptxas(folder, body)
    (folder / "k.ptx").write_text(PTX)
    env["OUTCORE_PTXAS_TIMEOUT"] = "1"
    fails_cleanly(folder, ["inspect", "--no-gpu", "k.ptx"], 2, "ptxas exceeded its 1 s limit on k.ptx",
                  "OUTCORE_PTXAS_TIMEOUT", env=env, limit_s=15)


def test_ptxas_memory_limit(folder):
    # A ptxas that asks for 1 GB dies at a 64 MB limit (real ptxas crashes; this one says so).
    env = fake_ptxas(folder, "exec python3 -c 'bytearray(1 << 30)'\n")
    (folder / "k.ptx").write_text(PTX)
    env["OUTCORE_PTXAS_MEMORY"] = "64M"
    fails_cleanly(folder, ["inspect", "--no-gpu", "k.ptx"], 2, "ptxas exceeded its 67108864-byte memory limit",
                  "k.ptx", env=env)


def test_a_large_file_that_cannot_be_code_is_refused_from_its_start(folder):
    """inspect read a file whole before it looked at its format: a 2 GB file of zeros took its
    size in memory (under a 1 GB address-space limit: "out of host memory", exit 1) to be
    refused. Its start tells: exit 2 at once, the limit untouched."""
    with open(folder / "big.cubin", "wb") as f:
        f.truncate(2 << 30)  # sparse: no disk taken
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # noqa: E731
    proc = subprocess.run([outcore_bin(), "inspect", "--no-gpu", "big.cubin"], cwd=folder, capture_output=True,
                          text=True, preexec_fn=limit, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("outcore: big.cubin: not PTX, a cubin, a fatbinary or an object with a "
                                   ".nv_fatbin section"), proc.stderr


def test_ptxas_fatal_error_names_its_cause(folder):
    """ptxas ends a failed run with "fatal : Ptx assembly aborted due to errors", which holds
    the word "errors": the message is the line before it that names the cause."""
    env = fake_ptxas(folder, "echo \"ptxas k.ptx, line 1; fatal   : Unsupported .version 9.9; current version is "
                             "'9.0'\" >&2\necho 'ptxas fatal   : Ptx assembly aborted due to errors' >&2\nexit 255\n")
    (folder / "k.ptx").write_text(PTX)
    fails_cleanly(folder, ["inspect", "--no-gpu", "k.ptx"], 2, "k.ptx", "Unsupported .version 9.9", env=env)


def test_ptxas_limits_that_do_not_parse(folder):
    env = fake_ptxas(folder, "exit 0\n")
    (folder / "k.ptx").write_text(PTX)
    fails_cleanly(folder, ["inspect", "--no-gpu", "k.ptx"], 2, "OUTCORE_PTXAS_TIMEOUT=soon",
                  env={**env, "OUTCORE_PTXAS_TIMEOUT": "soon"})
    for spelling in (" 5", "+5", "5 ", "-1", "86401"):  # as every whole-number variable refuses them
        fails_cleanly(folder, ["inspect", "--no-gpu", "k.ptx"], 2, f"OUTCORE_PTXAS_TIMEOUT={spelling}",
                      env={**env, "OUTCORE_PTXAS_TIMEOUT": spelling})
    fails_cleanly(folder, ["inspect", "--no-gpu", "k.ptx"], 2, "OUTCORE_PTXAS_MEMORY=lots",
                  env={**env, "OUTCORE_PTXAS_MEMORY": "lots"})


# ------------------------------------------------------------------ fatbinaries

def test_fatbin_stating_an_impossible_size(folder):
    """Found by fuzz_fatbin: the stated uncompressed size sized an allocation (an ASan build
    aborted, a plain one said "out of host memory", exit 1)."""
    (folder / "k.fatbin").write_bytes((FATBIN_CORPUS / "finding_zstd_stated_size_unbounded.fatbin").read_bytes())
    fails_cleanly(folder, ["inspect", "--no-gpu", "k.fatbin"], 2, "k.fatbin", "uncompressed size")


def test_fatbin_ptx_entry_for_no_architecture(folder):
    """A PTX entry whose architecture field is damaged went to ptxas as sm_12345 (exit 1)."""
    (folder / "k.fatbin").write_bytes((FATBIN_CORPUS / "finding_ptx_entry_unknown_arch.fatbin").read_bytes())
    fails_cleanly(folder, ["inspect", "--no-gpu", "k.fatbin"], 2, "k.fatbin", "compute_12345",
                  "pass --arch with a known architecture")


# ------------------------------------------------------------------ budgets and folders

def test_host_mem_too_small_is_a_usage_error(folder):
    line = fails_cleanly(folder, ["gram", "a.npy", "-o", "C.npy", "--host-mem", "1K"], 2,
                         "host memory budget 1024 bytes is too small", "needs at least", "--host-mem")
    need = int(line.split("needs at least ")[1].split(" ")[0])
    # The minimum it names runs the job.
    run("gram", "a.npy", "-o", "C.npy", "--host-mem", str(need), "-q")
    assert (folder / "C.npy").exists()


def test_resume_into_a_folder_that_cannot_be_written(folder):
    (folder / "afile").write_text("x")
    fails_cleanly(folder, ["gram", "a.npy", "-o", "nodir/C.npy", "--resume"], 2, "cannot write",
                  "nodir does not exist")
    fails_cleanly(folder, ["gram", "a.npy", "-o", "afile/C.npy", "--resume"], 2, "cannot write",
                  "afile is not a folder")
    # /sys refuses new files to every user, root included.
    fails_cleanly(folder, ["gram", "a.npy", "-o", "/sys/C.npy", "--resume"], 2, "cannot write",
                  "no write permission in folder /sys")


def test_address_space_limit_is_named(folder):
    """An input mapping refused under `ulimit -v` says so, not "out of host memory"."""
    with open(folder / "wide.npy", "wb") as f:
        header = "{'descr': '|u1', 'fortran_order': False, 'shape': (40000, 10000), }"
        header += " " * (118 - len(header) - 1) + "\n"
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        f.truncate(128 + 40000 * 10000)  # a hole: nothing is written to disk
    before = snapshot(folder)
    proc = subprocess.run([outcore_bin(), "gram", "wide.npy", "-o", "C.npy"], capture_output=True, text=True,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20)))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert "wide.npy" in lines[0] and "address space limit (ulimit -v" in lines[0], lines[0]
    assert "out of host memory" not in lines[0]
    assert snapshot(folder) == before
