"""`outcore inspect` on PTX whose launch directives are written in the other forms ptxas reads.

Each case rewrites the `.maxntid 128, 1, 1` of kernel `bounded` in tests/fuzz/corpus/ptx/kernels.ptx:
hex, octal and binary literals, a U suffix, comments (also inside the argument list), a list over
several lines, a directive given twice (ptxas keeps the last one). ptxas compiles each to a cubin,
whose attributes are what the driver loads; inspecting the PTX must give that cubin's launch bound,
largest block, verdict and exit status, and both must give the value ptxas -arch=sm_90 (CUDA 13.0)
gave when the case was written. Needs ptxas (inspect compiles PTX with it), no GPU.
"""
import json
import os
import subprocess

import pytest

from conftest import find_cuda_tool

OUTCORE = os.environ.get("OUTCORE_BIN", "outcore")
SOURCE_DIR = os.environ.get("OUTCORE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
KERNELS_PTX = os.path.join(SOURCE_DIR, "tests", "fuzz", "corpus", "ptx", "kernels.ptx")
BOUNDED_LINE = ".maxntid 128, 1, 1\n"
CAPPED_LINE = ".maxnreg 40\n"


PTXAS = find_cuda_tool("ptxas")
pytestmark = pytest.mark.skipif(
    PTXAS is None, reason="ptxas is not installed: inspect cannot compile PTX, and there is no cubin to compare with")


def run(*args):
    return subprocess.run([OUTCORE, *args], capture_output=True, text=True, timeout=300)


def inspect_kernel(path, name, *args):
    """The JSON report of one kernel, and the exit status (3 when the block does not fit)."""
    r = run("inspect", str(path), "--kernel", name, "--json", "--no-gpu", *args)
    assert r.returncode in (0, 3), r.stderr
    return json.loads(r.stdout)["kernels"][0], r.returncode


def variant(tmp_path, line, replacement):
    """kernels.ptx with `line` of its header replaced, and the cubin ptxas makes of it."""
    text = open(KERNELS_PTX).read()
    assert text.count(line) == 1
    ptx = tmp_path / "k.ptx"
    ptx.write_text(text.replace(line, replacement))
    cubin = tmp_path / "k.cubin"
    subprocess.run([PTXAS, "-arch=sm_90", str(ptx), "-o", str(cubin)], check=True, capture_output=True)
    return ptx, cubin


# (header lines in place of ".maxntid 128, 1, 1", maxntid, reqntid): what ptxas put in the cubin.
THREAD_CASES = {
    "hex": (".maxntid 0x40\n", 64, 0),
    "commented out": ("/* .maxntid 32 */\n", 0, 0),
    "comment inside the list": (".maxntid 64 /* x */, 2\n", 128, 0),
    "last one wins": (".maxntid 128, 1, 1\n.maxntid 64\n", 64, 0),
    "last one wins, larger": (".maxntid 64\n.maxntid 128\n", 128, 0),
    "octal": (".maxntid 0100\n", 64, 0),
    "binary": (".maxntid 0b1000000\n", 64, 0),
    "U suffix": (".maxntid 64U\n", 64, 0),
    "hex with U": (".maxntid 0x40U\n", 64, 0),
    "line comment inside the list": (".maxntid 64 // , 4\n, 2\n", 128, 0),
    "list over lines": (".maxntid 0x40,\n 2,\n 1\n", 128, 0),
    "brace in a comment": ("// {\n.maxntid 64\n", 64, 0),
    "reqntid forms, last wins": (".reqntid 128\n.reqntid 0b100000, 0x2, 1U\n", 0, 64),
}


@pytest.mark.parametrize("case", sorted(THREAD_CASES))
def test_thread_directive_forms_match_the_cubin(tmp_path, case):
    lines, maxntid, reqntid = THREAD_CASES[case]
    ptx, cubin = variant(tmp_path, BOUNDED_LINE, lines)
    bound = min((b for b in (maxntid, reqntid) if b), default=0)
    largest = (bound or 1024) // 32 * 32  # whole warps; the kernel's registers allow 1024 threads
    got = {}
    for path in (cubin, ptx):
        k, status = inspect_kernel(path, "bounded")
        assert (k["maxntid"], k["reqntid"]) == (maxntid, reqntid), path.name
        assert k["launch_bounds"] == bound, path.name
        assert k["max_threads_per_block"] == largest and status == 0, path.name
        fits, status_fits = inspect_kernel(path, "bounded", "--block", str(largest))
        assert fits["verdict"]["fits"] is True and status_fits == 0, path.name
        if largest < 1024:
            over, status_over = inspect_kernel(path, "bounded", "--block", str(largest + 32))
            assert over["verdict"]["fits"] is False and status_over == 3, path.name
            assert over["verdict"]["limiter"] == "launch bounds", path.name
        got[path.suffix] = k
    for key in ("launch_bounds", "maxntid", "reqntid", "max_threads_per_block"):
        assert got[".ptx"][key] == got[".cubin"][key], key


# (header lines in place of ".maxnreg 40" of kernel `capped`, maxnreg, minnctapersm). The cubin
# keeps neither directive; ptxas -v showed it keeps the last of each (the registers it gave).
REGISTER_CASES = {
    "hex": (".maxnreg 0x28\n", 40, 0),
    "last one wins": (".maxnreg 64\n.maxnreg 0b101000\n", 40, 0),
    "commented out": ("/* .maxnreg 24 */\n.maxnreg 40 // .maxnreg 16\n", 40, 0),
    "minnctapersm, last wins": (".maxntid 256\n.minnctapersm 4\n.minnctapersm 02U\n", 0, 2),
}


@pytest.mark.parametrize("case", sorted(REGISTER_CASES))
def test_register_directive_forms(tmp_path, case):
    lines, maxnreg, minnctapersm = REGISTER_CASES[case]
    ptx, _ = variant(tmp_path, CAPPED_LINE, lines)
    k, _ = inspect_kernel(ptx, "capped")
    assert (k["maxnreg"], k["minnctapersm"]) == (maxnreg, minnctapersm)
    text = run("inspect", str(ptx), "--kernel", "capped", "--no-gpu").stdout
    if maxnreg:
        assert f".maxnreg {maxnreg}" in text
    if minnctapersm:
        assert f".minnctapersm {minnctapersm}" in text
