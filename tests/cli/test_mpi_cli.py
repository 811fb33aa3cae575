"""`mpirun -np R outcore gram ...` (docs/mpi.md): one job over R ranks on the CPU backend gives
the bytes of one process for every output (dense, top-k, threshold; A·Aᵀ and A·Bᵀ), with
row counts that no rank count divides; a failing rank fails the job on every rank with exit 1,
one line naming the rank, and no output file; a SIGINT or SIGTERM cancels the job on every rank
(exit 130, one line, no temporary file); a resume journal left beside the output is refused;
a usage error of one rank alone is printed. Skipped when outcore was built without MPI or
no mpirun is installed."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import SOURCE_DIR, library, outcore_bin, run

RANKS = (1, 2, 3)
# Same member timestamps in every .npz, so that files compare byte for byte.
EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}


def mpi_build():
    proc = run("--version")
    return "MPI:" in proc.stdout


@pytest.fixture(scope="module")
def mpirun():
    if not mpi_build():
        pytest.skip("outcore was built without MPI (OUTCORE_MPI): the rank layer is absent")
    path = shutil.which("mpirun") or shutil.which("mpiexec")
    if not path:
        pytest.skip("no mpirun on PATH")
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    # Open MPI refuses more ranks than cores without --oversubscribe (CI has 2 cores); MPICH's
    # Hydra oversubscribes by itself and does not know the flag.
    extra = ["--oversubscribe"] if "Open MPI" in version or "OpenRTE" in version else []
    return [path, *extra]


def mpi_env():
    env = dict(os.environ, **EPOCH)
    # Open MPI: run as root inside CI containers, no shared-memory single-copy mechanism
    # (containers forbid the ptrace it needs), and its own point-to-point layer (ob1), which
    # starts faster than the probe of the others (bench/RESULTS.md). Other MPIs ignore these.
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_pml="ob1")
    return env


def start_ranks(mpirun, ranks, *args, env=None, program=None):
    """`mpirun -np ranks outcore gram args` started, not waited for (Popen, text mode). Each
    gets a temporary folder of its own (TMPDIR): mpiruns started at once otherwise race to
    create Open MPI's one session folder of the user ("mkdir ... File exists"). program: what
    each rank runs instead of outcore (a wrapper script), given "gram" and args."""
    full = mpi_env()
    if env:
        full.update(env)
    full["TMPDIR"] = tempfile.mkdtemp(prefix="outcore-mpirun-")
    cmd = [*mpirun, "-np", str(ranks), str(program or outcore_bin()), "gram", *map(str, args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full)
    proc.session_dir = full["TMPDIR"]
    return proc


def finish(proc):
    """Waits for a started job; returns it with its stdout and stderr (as subprocess.run)."""
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        shutil.rmtree(proc.session_dir, ignore_errors=True)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_ranks(mpirun, ranks, *args, env=None, program=None):
    return finish(start_ranks(mpirun, ranks, *args, env=env, program=program))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    rng = np.random.default_rng(17)
    a = (rng.random((301, 200)) < 0.2).astype(np.uint8)
    a[150:170] = a[10:30]                  # duplicates: ties in top-k and threshold
    a[200] = 0                             # an empty row (jaccard 0/0)
    b = (rng.random((157, 200)) < 0.25).astype(np.uint8)
    np.save(d / "A.npy", a)
    np.save(d / "B.npy", b)
    # Long enough to interrupt: a 256 MB dense result written by small chunks (--host-mem 512K),
    # most of whose time is spent between sub-jobs and in the ranks' writes.
    np.save(d / "W.npy", (rng.random((8000, 256)) < 0.1).astype(np.uint8))
    return d


CASES = [
    # name, extension, arguments
    ("dense_aat_jaccard", "npy", ["A.npy", "--metric", "jaccard"]),
    ("dense_abt_counts", "npy", ["A.npy", "B.npy"]),
    ("dense_aat_chunks", "npy", ["A.npy", "--metric", "hamming", "--dtype", "uint16", "--host-mem", "64K"]),
    ("dense_abt_chunks", "npy", ["A.npy", "B.npy", "--metric", "cosine", "--host-mem", "64K"]),
    ("topk_aat", "npz", ["A.npy", "--topk", "5", "--metric", "jaccard"]),
    ("topk_abt", "npz", ["A.npy", "B.npy", "--topk", "7", "--metric", "cosine"]),
    ("topk_aat_k_is_n", "npz", ["A.npy", "--topk", "301"]),  # every column: one slot past the n - 1 candidates
    ("topk_aat_min_score", "npz", ["A.npy", "--topk", "6", "--min-score", "9"]),
    ("topk_abt_min_score_all", "npz", ["A.npy", "B.npy", "--topk", "157", "--metric", "jaccard", "--min-score", "0.2"]),
    ("topk_aat_tsv", "tsv", ["A.npy", "--topk", "3", "--metric", "hamming"]),
    ("pairs_aat", "npz", ["A.npy", "--threshold", "0.3", "--metric", "jaccard"]),
    ("pairs_abt", "mtx", ["A.npy", "B.npy", "--threshold", "12"]),
    ("pairs_aat_tsv", "tsv", ["A.npy", "--threshold", "70", "--metric", "hamming"]),
]


@pytest.mark.parametrize("name,ext,args", CASES, ids=[c[0] for c in CASES])
def test_ranks_give_the_bytes_of_one_process(mpirun, inputs, name, ext, args):
    files = [inputs / a if a.endswith(".npy") else a for a in args]
    # The jobs of every rank count run at once: each waits on mpirun's start more than it computes.
    started = {ranks: start_ranks(mpirun, ranks, *files, "--backend", "cpu", "-q", "-o",
                                  inputs / f"{name}.{ranks}.{ext}") for ranks in RANKS}
    try:
        one = inputs / f"{name}.one.{ext}"
        run("gram", *files, "--backend", "cpu", "-q", "-o", one, env=EPOCH)
    finally:
        done = {ranks: finish(proc) for ranks, proc in started.items()}
    expected = one.read_bytes()
    for ranks in RANKS:
        assert done[ranks].returncode == 0, done[ranks].stderr
        assert (inputs / f"{name}.{ranks}.{ext}").read_bytes() == expected, f"{ranks} ranks differ from one process"


def test_json_lists_every_rank(mpirun, inputs):
    out = inputs / "json.npy"
    proc = run_ranks(mpirun, 3, inputs / "A.npy", "--backend", "cpu", "--json", "-o", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)          # one JSON object: rank 0 alone prints
    ranks = summary["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1, 2]
    rows = [tuple(r["rows"]) for r in ranks]
    assert rows[0][0] == 0 and rows[-1][1] == 301
    assert all(rows[i][1] == rows[i + 1][0] for i in range(2))
    assert sum(r["tiles"] for r in ranks) == summary["tiles"] > 0
    assert all(r["bytes_written"] > 0 for r in ranks)
    # The whole matrix is written once: header plus 301 x 301 int32.
    assert sum(r["bytes_written"] for r in ranks) == out.stat().st_size
    # Rank 0's sub-jobs' predictions, added up, predict the job its share of rows takes.
    assert summary["predicted_seconds"] > 0, summary


@pytest.mark.parametrize("args,per_pair", [(["--topk", "4"], 8 + 4), (["--threshold", "20"], 16 + 4)],
                         ids=["topk", "threshold"])
def test_json_counts_what_rank_0_writes(mpirun, inputs, tmp_path, args, per_pair):
    """Rank 0 writes every rank's top-k rows or pairs into the file: they are its bytes, and
    the others' the bytes they sent it (docs/mpi.md)."""
    proc = run_ranks(mpirun, 3, inputs / "A.npy", *args, "--backend", "cpu", "--json", "-o", tmp_path / "C.npz")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    ranks = summary["ranks"]
    assert all(r["bytes_written"] > 0 for r in ranks[1:])
    if "--topk" in args:
        assert ranks[0]["bytes_written"] == 301 * 4 * per_pair
    else:
        sent = sum(r["bytes_written"] for r in ranks[1:])
        assert ranks[0]["bytes_written"] == summary["pairs"] * per_pair and ranks[0]["bytes_written"] > sent


def test_help_is_printed_once(mpirun):
    proc = subprocess.run([*mpirun, "-np", "3", outcore_bin(), "gram", "--help"], capture_output=True, text=True,
                          env=mpi_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("usage: outcore gram") == 1, proc.stdout[:500]


def leftovers(directory, stem):
    return sorted(p.name for p in Path(directory).iterdir() if p.name.startswith(stem))


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("kind", [["-o", "fail.npy"], ["--topk", "4", "-o", "fail.npz"],
                                  ["--threshold", "0.3", "--metric", "jaccard", "-o", "fail.npz"]],
                         ids=["dense", "topk", "threshold"])
def test_a_failing_rank_fails_the_job(mpirun, inputs, kind, rank):
    args = [inputs / "A.npy", *kind[:-1], inputs / kind[-1]]
    proc = run_ranks(mpirun, 3, *args, "--backend", "cpu", "-q", env={"OUTCORE_MPI_FAIL_RANK": str(rank)})
    assert proc.returncode == 1, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and f"rank {rank} of 3" in ours[0] and "OUTCORE_MPI_FAIL_RANK" in ours[0], proc.stderr
    assert leftovers(inputs, "fail.") == [], "no output and no temporary file may be left"


def test_a_killed_rank_leaves_no_output(mpirun, inputs):
    out = inputs / "killed.npy"
    proc = run_ranks(mpirun, 3, inputs / "A.npy", "--backend", "cpu", "-q", "-o", out,
                     env={"OUTCORE_MPI_FAIL_RANK": "2:kill"})
    assert proc.returncode != 0
    assert not out.exists()                    # the launcher ends the job before any rename


def test_a_warning_is_one_line_from_rank_0(mpirun, tmp_path):
    """Every rank reads the inputs; a warning of the read (an index column under --binarize)
    is printed once, by rank 0, and the job runs as in one process."""
    a = (np.random.default_rng(3).random((40, 30)) < 0.3).astype(np.uint8)
    (tmp_path / "idx.csv").write_text("".join(f"{i}," + ",".join(map(str, row)) + "\n" for i, row in enumerate(a)))
    proc = run_ranks(mpirun, 2, tmp_path / "idx.csv", "--binarize", "-q", "-o", tmp_path / "ranks.npy")
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if line.startswith("outcore: warning:")]
    assert len(warned) == 1 and "idx.csv: the first column counts up the rows" in warned[0], proc.stderr
    run("gram", tmp_path / "idx.csv", "--binarize", "-q", "-o", tmp_path / "one.npy")
    assert np.array_equal(np.load(tmp_path / "ranks.npy"), np.load(tmp_path / "one.npy"))


def test_bad_input_is_one_line_on_rank_0(mpirun, inputs):
    proc = run_ranks(mpirun, 2, inputs / "A.npy", inputs / "missing.npy", "-q", "-o", inputs / "bad.npy")
    assert proc.returncode == 2, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and "missing.npy" in ours[0], proc.stderr
    assert not (inputs / "bad.npy").exists()



@pytest.mark.parametrize("bad", [["--dtype", "float32"], ["--metric", "jaccard", "--dtype", "int32"]])
def test_a_refused_option_reads_as_in_one_process(mpirun, inputs, tmp_path, bad):
    """The rank layer refuses what one process refuses in the same words, exit 2, no file."""
    alone = run("gram", inputs / "A.npy", *bad, "-q", "-o", tmp_path / "one.npy", check=False)
    proc = run_ranks(mpirun, 2, inputs / "A.npy", *bad, "-q", "-o", tmp_path / "two.npy")
    assert alone.returncode == proc.returncode == 2, (alone.stderr, proc.stderr)
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert ours == alone.stderr.splitlines(), (alone.stderr, proc.stderr)
    assert not (tmp_path / "one.npy").exists() and not (tmp_path / "two.npy").exists()


# A caller of oc_gram_ranks built against an earlier oc_gram_options (version 4, before
# use_min_score) and oc_gram_stats (version 1, before host_budget_bytes): run as `PROG gram
# A.npy OUT`; prints the tiles on rank 0 and whether the bytes past its stats were kept.
EARLIER_CALLER = r"""
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "outcore.h"

int main(int argc, char **argv)
{
    int rank = 0, size = 0;
    if (argc != 4 || oc_mpi_init(&rank, &size) != OC_OK) return 3;
    oc_context *ctx = NULL;
    oc_matrix *a = NULL;
    if (oc_context_create(&ctx) != OC_OK || oc_matrix_read(ctx, argv[2], NULL, &a) != OC_OK) return 4;
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.struct_size = offsetof(oc_gram_options, use_min_score);
    opts.backend = OC_BACKEND_CPU;
    opts.metric = OC_METRIC_JACCARD;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = argv[3];
    union { oc_gram_stats s; unsigned char bytes[sizeof(oc_gram_stats)]; } st;
    memset(&st, 0xAB, sizeof st);
    st.s.struct_size = offsetof(oc_gram_stats, host_budget_bytes);
    const oc_status status = oc_gram_ranks(ctx, a, NULL, &opts, &out, &st.s, NULL);
    int kept = 1;
    for (size_t i = st.s.struct_size; i < sizeof st; i++) kept &= st.bytes[i] == 0xAB;
    if (rank == 0) printf("%d %lld %d\n", (int)status, (long long)st.s.tiles, kept);
    if (status != OC_OK) fprintf(stderr, "%s\n", oc_context_last_error(ctx));
    oc_matrix_free(a);
    oc_context_free(ctx);
    oc_mpi_finalize();
    return status == OC_OK ? 0 : 1;
}
"""


def test_ranks_take_earlier_versions_of_the_structs(mpirun, inputs, tmp_path):
    """docs/abi.md: a release accepts every earlier size of its structs, and writes only the
    fields of the caller's stats; oc_gram_ranks as oc_gram."""
    (tmp_path / "caller.c").write_text(EARLIER_CALLER)
    lib = library()
    cc = os.environ.get("CC", "cc")
    built = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "caller.c", "-o", "caller", f"-I{SOURCE_DIR / 'include'}",
                            str(lib), f"-Wl,-rpath,{lib.parent}"], cwd=tmp_path, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    proc = run_ranks(mpirun, 2, inputs / "A.npy", tmp_path / "two.npy", program=tmp_path / "caller")
    assert proc.returncode == 0, proc.stderr
    status, tiles, kept = map(int, proc.stdout.split())
    assert status == 0 and tiles > 0 and kept == 1, proc.stdout
    run("gram", inputs / "A.npy", "--metric", "jaccard", "--backend", "cpu", "-q", "-o", tmp_path / "one.npy")
    assert (tmp_path / "two.npy").read_bytes() == (tmp_path / "one.npy").read_bytes()

@pytest.mark.parametrize("extra", [["--plan"], ["--metric", "jaccard"], ["--dtype", "uint16"]])
def test_ranks_given_different_commands_are_refused(mpirun, inputs, tmp_path, extra):
    """A wrapper that adds an option on one rank: the job each rank would run differs (a plan
    on one, another metric, another output kind), which left the others waiting or wrote one
    file from two jobs (int32 and float32 rows in one file). Refused before any work: one line
    naming the rank, exit 2, no file."""
    wrapper = tmp_path / "one_rank_differs.sh"
    wrapper.write_text("#!/bin/sh\nrank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}\n"
                       f'if [ "$rank" = 1 ]; then exec {outcore_bin()} "$@" {" ".join(extra)}; fi\n'
                       f'exec {outcore_bin()} "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "differs.npy"
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--backend", "cpu", "-q", "-o", out, program=wrapper)
    assert proc.returncode == 2, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert ours == ["outcore: rank 1 of 2: its command line differs from rank 0's: every rank must be given the "
                    "same job (docs/mpi.md)"], proc.stderr
    assert not out.exists() and not leftovers(tmp_path, out.stem)


def test_the_plan_under_ranks_has_rank_0s_share(mpirun, inputs, tmp_path):
    """--plan under ranks is the whole job's plan with rank 0's threads and host budget, as the
    job runs it: its node's share (docs/mpi.md), not the whole machine's."""
    plan = json.loads(run_ranks(mpirun, 3, inputs / "A.npy", "--backend", "cpu", "--plan", "--json").stdout)
    ran = json.loads(run_ranks(mpirun, 3, inputs / "A.npy", "--backend", "cpu", "--json", "-q", "-o",
                               tmp_path / "c.npy").stdout)
    assert plan["threads"] == ran["threads"], (plan, ran)
    # The default budget follows the memory available at each start, which other jobs on the
    # machine move by several %; the whole machine's budget would be three times the share.
    assert 0.75 < plan["host_budget"] / ran["host_budget_bytes"] < 1.33, (plan, ran)


def test_topk_past_the_rows_is_refused_under_ranks(mpirun, inputs, tmp_path):
    """K past the result's columns is refused as one process refuses it, on any rank count."""
    rows = np.load(inputs / "A.npy").shape[0]
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--topk", rows + 1, "--backend", "cpu", "-q", "-o",
                     tmp_path / "k.npz")
    assert proc.returncode == 2, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and f"K may be at most {rows}" in ours[0], proc.stderr
    assert not (tmp_path / "k.npz").exists()


def cuda_devices():
    found = re.search(r"(\d+) CUDA device", run("--version").stdout)
    return int(found.group(1)) if found else 0


GPU_CASES = [c for c in CASES if c[0] in ("dense_aat_jaccard", "dense_abt_counts", "topk_aat", "topk_abt",
                                          "pairs_aat", "pairs_abt")]


@pytest.mark.parametrize("name,ext,args", GPU_CASES, ids=["cuda_" + c[0] for c in GPU_CASES])
def test_two_ranks_sharing_one_gpu(mpirun, inputs, name, ext, args):
    """Two ranks on GPU 0, each with its own budget, give the bytes of one process on it
    and of the CPU (run by ctest as gpu_cli_test_mpi on a machine with a GPU)."""
    if cuda_devices() < 1:
        pytest.skip("no usable CUDA device")
    files = [inputs / a if a.endswith(".npy") else a for a in args]
    cpu, one, two = (inputs / f"cuda_{name}.{tag}.{ext}" for tag in ("cpu", "one", "two"))
    run("gram", *files, "--backend", "cpu", "-q", "-o", cpu, env=EPOCH)
    run("gram", *files, "--backend", "cuda", "-q", "-o", one, env=EPOCH)
    proc = run_ranks(mpirun, 2, *files, "--backend", "cuda", "--gpu-mem", "2G", "-q", "-o", two)
    assert proc.returncode == 0, proc.stderr
    assert one.read_bytes() == cpu.read_bytes()
    assert two.read_bytes() == one.read_bytes(), "two ranks on one GPU differ from one process"


def test_resume_is_refused_under_ranks(mpirun, inputs):
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--resume", "-q", "-o", inputs / "resume.npy")
    assert proc.returncode == 2, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and "--resume" in ours[0], proc.stderr
    assert leftovers(inputs, "resume.") == []


def outcore_ranks(launcher):
    """The outcore processes among the descendants of the launcher's process id."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [launcher]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                if Path(f"/proc/{child}/exe").resolve() == Path(outcore_bin()).resolve():
                    found.append(child)
            except OSError:
                pass
    return found


def wait_for(directory, prefix, seconds=60):
    """Waits until a file whose name starts with prefix is in directory."""
    deadline = time.monotonic() + seconds
    while not leftovers(directory, prefix):
        assert time.monotonic() < deadline, f"no {prefix}* appeared"
        time.sleep(0.02)


@pytest.mark.parametrize("target", ["ranks", "mpirun"])
def test_a_signal_cancels_the_job_on_every_rank(mpirun, inputs, target):
    """SIGTERM to every rank (what scancel sends) or SIGINT to mpirun (Ctrl-C; mpirun sends the
    ranks SIGTERM, and SIGKILL a second later) mid-job: the cancel holds across the sub-jobs,
    writes and agreements, so every rank stops, rank 0 removes the temporary file and prints one
    line, and the ranks exit 130, as one process does."""
    out = inputs / f"cancel_{target}.npy"
    proc = start_ranks(mpirun, 2, inputs / "W.npy", "--backend", "cpu", "--host-mem", "512K", "-q", "-o", out)
    try:
        wait_for(inputs, out.name + ".tmp")
        time.sleep(0.3)
        if target == "ranks":
            ranks = outcore_ranks(proc.pid)
            assert len(ranks) == 2
            for pid in ranks:
                os.kill(pid, signal.SIGTERM)
        else:
            proc.send_signal(signal.SIGINT)
    finally:
        done = finish(proc)
    # Open MPI's mpirun exits 1 when it is the one signalled, and passes the ranks' 130 on otherwise.
    if target == "ranks":
        assert done.returncode == 130, done.stderr
    else:
        assert done.returncode != 0, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("outcore:")]
    assert ours == ["outcore: cancelled"], done.stderr
    assert leftovers(inputs, out.name) == [], "no output and no temporary file may be left"


@pytest.mark.parametrize("kind", [["-o", "journal.npy"], ["--topk", "4", "-o", "journal.npz"],
                                  ["--threshold", "0.3", "--metric", "jaccard", "-o", "journal.tsv"]],
                         ids=["dense", "topk", "threshold"])
def test_a_resume_journal_is_refused_under_ranks(mpirun, inputs, kind):
    """An interrupted single-process --resume run leaves OUT.outcore-journal: the ranks refuse
    the output as one process does (exit 2, one line), and leave the journal for --resume."""
    out = inputs / kind[-1]
    args = [inputs / "A.npy", *kind[:-2], "--backend", "cpu", "-q"]
    killed = run("gram", *args, "--resume", "--tile", "64", "-o", out, check=False,
                 env={"OUTCORE_RESUME_INTERVAL": "0", "OUTCORE_RESUME_KILL_AFTER": "2"})
    journal = inputs / (out.name + ".outcore-journal")
    assert killed.returncode == -signal.SIGKILL and journal.exists(), killed.stderr
    left = leftovers(inputs, out.name)
    try:
        proc = run_ranks(mpirun, 2, *args, "-o", out)
        assert proc.returncode == 2, proc.stderr
        ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
        assert len(ours) == 1 and "an interrupted job left this journal" in ours[0], proc.stderr
        assert leftovers(inputs, out.name) == left, "the output written, or the journal's files touched"
    finally:
        run("clean", out, "-q", check=False)


RANK1_WRAPPER = """#!/bin/sh
# Rank 1 (Open MPI, or MPICH's Hydra) runs outcore with RANK1_ARGS, the others with OTHER_ARGS.
if [ "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" = 1 ]; then exec "$OUTCORE" "$@" $RANK1_ARGS; fi
exec "$OUTCORE" "$@" $OTHER_ARGS
"""


USAGE_CASES = [
    # name, rank 1's arguments, the other ranks', what the one line says
    ("option", "--bogus -o {out}", "-o {out}", "rank 1 of 2: gram: unknown option --bogus"),
    ("output", "-o {missing}", "-o {out}", "rank 1 of 2: {missing}"),
    ("every_rank", "--bogus -o {out}", "--bogus -o {out}", "outcore: gram: unknown option --bogus"),
]


@pytest.mark.parametrize("case,rank1,others,says", USAGE_CASES, ids=[c[0] for c in USAGE_CASES])
def test_a_usage_error_of_one_rank_is_printed(mpirun, inputs, tmp_path, case, rank1, others, says):
    """A usage error that only rank 1 has (a wrapper that adds an option there, an output folder
    missing on its node) is printed once, naming the rank; one that every rank has, once by
    rank 0 without a rank. No rank runs the job; all exit 2."""
    wrapper = tmp_path / "rank1.sh"
    wrapper.write_text(RANK1_WRAPPER)
    wrapper.chmod(0o755)
    out, missing = inputs / f"usage_{case}.npy", tmp_path / "nodir" / "o.npy"
    names = {"out": out, "missing": missing}
    env = {"OUTCORE": outcore_bin(), "RANK1_ARGS": rank1.format(**names), "OTHER_ARGS": others.format(**names)}
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--backend", "cpu", "-q", env=env, program=wrapper)
    assert proc.returncode == 2, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(ours) == 1 and says.format(**names) in ours[0], proc.stderr
    assert case != "every_rank" or "rank " not in ours[0], proc.stderr
    assert leftovers(inputs, out.name) == [], "no rank may run the job"


def test_explain_predicts_the_whole_job(mpirun, inputs, tmp_path):
    """--explain and --json's backend_explain under ranks give the prediction of the whole job
    as one process would run it (as --plan gives its plan), not of rank 0's last block."""
    proc = run_ranks(mpirun, 2, inputs / "A.npy", "--backend", "cpu", "--explain", "--json", "-o", tmp_path / "C.npy")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert "gram 301x301x200 (dense)" in summary["backend_explain"], summary["backend_explain"]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("outcore: backend ")]
    assert len(lines) == 1 and "gram 301x301x200 (dense)" in lines[0], proc.stderr


@pytest.mark.parametrize("args", [["matmul", "M.npy", "M.npy", "-o", "C.npy"], ["map", "x * 2", "x=M.npy", "-o", "C.npy"],
                                  ["gen", "--rows", "9", "--cols", "9", "--density", "0.5", "-o", "C.npy"]],
                         ids=["matmul", "map", "gen"])
def test_commands_of_one_process_refused_under_ranks(mpirun, tmp_path, args):
    """Only gram splits over ranks: matmul, map and gen under a launcher of several would each
    compute the whole job into the same output, so they are refused, in one line from rank 0,
    and nothing is written."""
    np.save(tmp_path / "M.npy", np.ones((4, 4)))
    session = tempfile.mkdtemp(prefix="outcore-mpirun-")
    try:
        proc = subprocess.run([*mpirun, "-np", "2", outcore_bin(), *args], capture_output=True, text=True,
                              cwd=tmp_path, env=dict(mpi_env(), TMPDIR=session), timeout=120)
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.startswith("outcore:")]
    assert len(lines) == 1 and f"{args[0]} runs in one process" in lines[0], proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["M.npy"]
