"""`outcore inspect` and `outcore devices` on the real binary, without a GPU.

The kernels of tests/kernels/register_pressure.cu are compiled here, in the test run, to PTX,
a cubin, a fatbinary and a host object; inspect's figures are checked against ptxas' own -v
report, and its verdicts against what an H100 (sm_90) accepted and refused. PTX verdicts are
checked against the cubin the same PTX becomes under the same options (a register cap, an
optimisation level, the PTX's own directives), since that cubin is what a framework loads.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import find_cuda_tool

OUTCORE = os.environ.get("OUTCORE_BIN", "outcore")
SOURCE_DIR = os.environ.get("OUTCORE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
KERNELS = os.path.join(SOURCE_DIR, "tests", "kernels", "register_pressure.cu")


NVCC = find_cuda_tool("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed: no kernels to inspect")

# (registers per thread, largest block on an H100): measured, one warp more is refused.
H100_LARGEST = [(64, 1024), (72, 896), (96, 640), (128, 512), (168, 384), (255, 256)]


def run(*args):
    return subprocess.run([OUTCORE, *args], capture_output=True, text=True, timeout=300)


def inspect_json(*args):
    """The JSON report; the exit status must be the verdict's (3 when a block does not fit)."""
    r = run("inspect", *args, "--json", "--no-gpu")
    assert r.returncode in (0, 3), r.stderr
    report = json.loads(r.stdout)
    refused = any(not k["verdict"]["fits"] for k in report["kernels"] if "verdict" in k)
    assert r.returncode == (3 if refused else 0), (r.returncode, refused)
    return report


def by_name(report):
    return {k["name"]: k for k in report["kernels"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """PTX, cubin, fatbinary and host object of the test kernels, plus ptxas' own report."""
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    d = tmp_path_factory.mktemp("kernels")
    files = {
        "ptx": d / "rp.ptx",
        "cubin": d / "rp.cubin",
        "fatbin": d / "rp.fatbin",
        "object": d / "rp.o",
        "ptx80": d / "rp80.ptx",
    }
    arch = "-arch=sm_90"
    subprocess.run([NVCC, arch, "-ptx", KERNELS, "-o", files["ptx"]], check=True)
    report = subprocess.run([NVCC, arch, "-cubin", "-Xptxas", "-v", KERNELS, "-o", files["cubin"]], check=True,
                            capture_output=True, text=True)
    # -compress-all: zstd-compressed entries, read through the system's libzstd.
    subprocess.run([NVCC, arch, "-fatbin", "-Xfatbin", "-compress-all", KERNELS, "-o", files["fatbin"]], check=True)
    subprocess.run([NVCC, arch, "-c", KERNELS, "-o", files["object"]], check=True)
    subprocess.run([NVCC, "-arch=sm_80", "-ptx", KERNELS, "-o", files["ptx80"]], check=True)
    return files, parse_ptxas_report(report.stderr + report.stdout)


def parse_ptxas_report(text):
    """{kernel: (registers, stack frame, spill stores, spill loads)} from ptxas -v."""
    out, current, props = {}, None, {}
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            props[current] = tuple(int(x) for x in m.groups())
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            out[current] = (int(m.group(1)),) + props.get(current, (None, None, None))
    return out


@needs_nvcc
def test_figures_match_ptxas_report(built):
    files, ptxas = built
    assert set(ptxas) == {f"regs{r}" for r, _ in H100_LARGEST}
    for kind in ("ptx", "cubin", "fatbin", "object"):
        report = inspect_json(str(files[kind]))
        assert report["arch"] == "sm_90" and report["code_arch"] == "sm_90"
        kernels = by_name(report)
        assert set(kernels) == set(ptxas), kind
        for name, (regs, frame, stores, loads) in ptxas.items():
            k = kernels[name]
            assert k["registers"] == regs, (kind, name)
            assert k["local_bytes"] == frame, (kind, name)
            assert k["static_smem"] == 0
            if kind == "ptx":  # only ptxas reports the spill traffic
                assert (k["spill_store_bytes"], k["spill_load_bytes"]) == (stores, loads)


@needs_nvcc
def test_registers_are_the_known_counts(built):
    _, ptxas = built
    for regs, _ in H100_LARGEST:
        assert ptxas[f"regs{regs}"][0] == regs


@needs_nvcc
@pytest.mark.parametrize("kind", ["ptx", "cubin"])
@pytest.mark.parametrize("regs,largest", H100_LARGEST)
def test_h100_verdicts(built, kind, regs, largest):
    files, _ = built
    path = str(files[kind])
    fits = inspect_json(path, "--arch", "sm_90", "--kernel", f"regs{regs}", "--block", str(largest))
    (k,) = fits["kernels"]
    assert k["max_threads_per_block"] == largest
    assert k["verdict"]["fits"] is True
    assert k["verdict"]["largest_block"] == largest
    if largest < 1024:
        more = inspect_json(path, "--arch", "sm_90", "--kernel", f"regs{regs}", "--block", str(largest + 32))
        (k,) = more["kernels"]
        assert k["verdict"]["fits"] is False
        assert k["verdict"]["limiter"] == "registers"
        assert k["verdict"]["largest_block"] == largest
        assert 0 < k["verdict"]["reg_cap"] < regs


@needs_nvcc
def test_641_threads_explained(built):
    files, _ = built
    r = run("inspect", str(files["ptx"]), "--arch", "sm_90", "--kernel", "regs96", "--block", "641", "--no-gpu")
    assert r.returncode == 3, r.stderr
    text = r.stdout
    assert "DOES NOT FIT" in text
    assert "96 (multiple of 8) x 32 = 3072/warp" in text
    assert "floor(16384 / 3072) = 5 warps each" in text
    assert "20 warps (640 threads) per block" in text
    assert "largest block that fits: 640 threads" in text
    # The kernel's cap is its source's __maxnreg__(96), which -maxrregcount does not override.
    assert "lower the kernel's .maxnreg 96 to 80 (__maxnreg__(80) in the source" in text
    assert "-maxrregcount=80" not in text


@needs_nvcc
def test_641_threads_advice_works(built, uncapped, tmp_path):
    """Each form of the advice names a change that makes 641 threads fit when made: a cap
    the code carries is lowered where it is set, a kernel without one takes -maxrregcount."""
    files, _ = built

    def advice(path):
        r = run("inspect", str(path), "--arch", "sm_90", "--kernel", "regs96", "--block", "641", "--no-gpu")
        assert r.returncode == 3, r.stderr
        return r.stdout

    assert "compiled under a cap of 96 (__maxnreg__ or -maxrregcount)" in advice(files["cubin"])
    assert "__maxnreg__(80) where the source has one" in advice(files["cubin"])
    assert "__launch_bounds__(641), -maxrregcount=80, numba max_registers=80" in advice(uncapped)
    # What was refused, built as advised: the source's own cap lowered to 80 ...
    lowered = tmp_path / "rp80.cu"
    lowered.write_text(open(KERNELS).read().replace("__maxnreg__(REGS)", "__maxnreg__(REGS == 96 ? 80 : REGS)"))
    subprocess.run([NVCC, "-arch=sm_90", "-cubin", lowered, "-o", tmp_path / "rp80.cubin"], check=True)
    (k,) = inspect_json(str(tmp_path / "rp80.cubin"), "--kernel", "regs96", "--block", "641")["kernels"]
    assert k["registers"] == 80 and k["verdict"]["fits"] is True
    # ... and the uncapped PTX under -maxrregcount=80.
    subprocess.run([find_cuda_tool("ptxas"), "-arch=sm_90", "-maxrregcount=80", uncapped, "-o", tmp_path / "free80.cubin"],
                   check=True)
    (k,) = inspect_json(str(tmp_path / "free80.cubin"), "--kernel", "regs96", "--block", "641")["kernels"]
    assert k["registers"] <= 80 and k["verdict"]["fits"] is True


@needs_nvcc
def test_other_arch_from_ptx(built):
    """sm_80 PTX compiles for a later target: on sm_86 (48 warps per SM) 1024 threads of the
    64-register kernel still fit, but occupancy is 2/3."""
    files, _ = built
    report = inspect_json(str(files["ptx80"]), "--arch", "sm_86", "--kernel", "regs64", "--block", "1024")
    (k,) = report["kernels"]
    assert report["code_arch"] == "sm_86"
    assert k["verdict"]["fits"] is True
    assert abs(k["verdict"]["occupancy"] - 32 / 48) < 1e-3


@needs_nvcc
def test_dynamic_shared_memory_limit(built):
    files, _ = built
    # 227 KiB is the sm_90 opt-in limit per block; 228 KiB cannot launch at any block size.
    ok = inspect_json(str(files["cubin"]), "--kernel", "regs64", "--block", "256", "--dyn-smem", str(227 * 1024))
    assert ok["kernels"][0]["verdict"]["fits"] is True
    assert ok["kernels"][0]["verdict"]["needs_smem_optin"] is True
    bad = inspect_json(str(files["cubin"]), "--kernel", "regs64", "--block", "256", "--dyn-smem", str(228 * 1024))
    assert bad["kernels"][0]["verdict"]["fits"] is False
    assert bad["kernels"][0]["verdict"]["limiter"] == "shared memory"


def ptxas(*args):
    """ptxas' own -v report of a compile, as parse_ptxas_report reads it."""
    r = subprocess.run([find_cuda_tool("ptxas"), "-v", *map(str, args)], capture_output=True, text=True, check=True)
    return parse_ptxas_report(r.stdout + r.stderr)


@pytest.fixture(scope="module")
def uncapped(built, tmp_path_factory):
    """The test kernels' PTX without its .maxnreg lines: what a producer such as numba emits,
    whose register cap goes to the linker instead of into the PTX."""
    files, _ = built
    d = tmp_path_factory.mktemp("uncapped")
    text = files["ptx"].read_text()
    stripped = re.sub(r"^\s*\.maxnreg\s+\d+\s*$\n", "", text, flags=re.M)
    assert stripped != text
    path = d / "free.ptx"
    path.write_text(stripped)
    return path


@needs_nvcc
def test_ptx_states_the_options_it_assumes(built):
    files, _ = built
    report = inspect_json(str(files["ptx"]), "--kernel", "regs96")
    jit = report["jit"]
    assert jit["compiler"].startswith("ptxas ") and jit["compiler"] == report["source"]
    assert (jit["opt_level"], jit["maxrregcount"], jit["defaults"]) == (3, 0, True)
    text = run("inspect", str(files["ptx"]), "--kernel", "regs96", "--no-gpu").stdout
    assert "with its defaults (-O3, no register cap)" in text and "--maxrregcount N" in text
    # Machine code is not compiled again: no option applies to it.
    assert inspect_json(str(files["cubin"]), "--kernel", "regs96")["jit"] is None
    assert "PTX compiled by" not in run("inspect", str(files["cubin"]), "--no-gpu").stdout


@needs_nvcc
@pytest.mark.parametrize("cap", [32, 64, 96, 128])
def test_maxrregcount_gives_the_cubin_a_linker_makes(uncapped, tmp_path, cap):
    """A producer that links PTX with a register cap (numba max_registers=cap) loads the cubin
    ptxas makes with -maxrregcount=cap; inspecting the PTX with --maxrregcount cap must give
    that cubin's registers and largest block, and not the defaults' figures."""
    cubin = tmp_path / f"cap{cap}.cubin"
    subprocess.run([find_cuda_tool("ptxas"), "-arch=sm_90", f"-maxrregcount={cap}", str(uncapped), "-o", str(cubin)], check=True,
                   capture_output=True)
    want = by_name(inspect_json(str(cubin), "--arch", "sm_90"))
    report = inspect_json(str(uncapped), "--arch", "sm_90", "--maxrregcount", str(cap))
    assert report["jit"]["maxrregcount"] == cap and report["jit"]["defaults"] is False
    got = by_name(report)
    assert set(got) == set(want)
    for name, k in got.items():
        assert k["registers"] == want[name]["registers"] <= cap, name
        assert k["max_threads_per_block"] == want[name]["max_threads_per_block"], name
        assert k["maxnreg"] == 0
    # Without the cap the kernels that want every register get other figures: the verdict of
    # the defaults is not the verdict of the producer's cubin.
    default = by_name(inspect_json(str(uncapped), "--arch", "sm_90", "--kernel", "regs255"))["regs255"]
    assert default["registers"] > cap
    largest = got["regs255"]["max_threads_per_block"]
    assert default["max_threads_per_block"] < largest
    if largest < 1024:
        over = inspect_json(str(uncapped), "--arch", "sm_90", "--maxrregcount", str(cap), "--kernel", "regs255",
                            "--block", str(largest + 1))
        assert over["kernels"][0]["verdict"]["fits"] is False


@needs_nvcc
def test_maxnreg_overrides_maxrregcount(built):
    """ptxas lets a kernel's .maxnreg override -maxrregcount; inspect does the same and says so."""
    files, _ = built
    k = inspect_json(str(files["ptx"]), "--maxrregcount", "64", "--kernel", "regs96")["kernels"][0]
    assert (k["registers"], k["maxnreg"]) == (96, 96)
    text = run("inspect", str(files["ptx"]), "--maxrregcount", "64", "--kernel", "regs96", "--no-gpu").stdout
    assert ".maxnreg 96 (overrides -maxrregcount=64)" in text
    assert "-maxrregcount=64 (a kernel's own .maxnreg overrides it)" in text


@needs_nvcc
def test_opt_level_reaches_ptxas(built):
    files, _ = built
    want = ptxas("-arch=sm_90", "-O0", str(files["ptx"]), "-o", os.devnull)
    report = inspect_json(str(files["ptx"]), "--opt-level", "0")
    assert (report["jit"]["opt_level"], report["jit"]["defaults"]) == (0, False)
    for name, k in by_name(report).items():
        assert k["registers"] == want[name][0], name
        assert k["local_bytes"] == want[name][1], name


BOUNDED_KERNEL = """
extern "C" __global__ void __launch_bounds__(256, 2) bounded(float *x) { x[blockIdx.x * 256 + threadIdx.x] *= 2.0f; }
"""


@pytest.fixture(scope="module")
def bounded(tmp_path_factory):
    """A kernel with .maxntid 256 and .minnctapersm 2, the same PTX with .reqntid 128 instead,
    and the cubins ptxas makes of both."""
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    d = tmp_path_factory.mktemp("bounded")
    (d / "b.cu").write_text(BOUNDED_KERNEL)
    subprocess.run([NVCC, "-arch=sm_90", "-ptx", d / "b.cu", "-o", d / "maxntid.ptx"], check=True)
    text = (d / "maxntid.ptx").read_text()
    assert re.search(r"\.maxntid 256, 1, 1", text) and ".minnctapersm 2" in text
    (d / "reqntid.ptx").write_text(text.replace(".maxntid 256, 1, 1", ".reqntid 128, 1, 1"))
    for name in ("maxntid", "reqntid"):
        subprocess.run([find_cuda_tool("ptxas"), "-arch=sm_90", d / f"{name}.ptx", "-o", d / f"{name}.cubin"], check=True)
    return d


@needs_nvcc
@pytest.mark.parametrize("directive,threads", [("maxntid", 256), ("reqntid", 128)])
def test_thread_directives_bound_the_block(bounded, directive, threads):
    """A block larger than .maxntid / .reqntid does not launch, whatever the registers; the PTX
    and the cubin made of it say the same."""
    for kind in ("ptx", "cubin"):
        path = str(bounded / f"{directive}.{kind}")
        k = inspect_json(path, "--kernel", "bounded", "--block", str(threads))["kernels"][0]
        assert k[directive] == threads and k["launch_bounds"] == threads, kind
        assert k["max_threads_per_block"] == threads and k["verdict"]["fits"] is True, kind
        over = inspect_json(path, "--kernel", "bounded", "--block", str(threads + 1))["kernels"][0]
        assert over["verdict"]["fits"] is False and over["verdict"]["limiter"] == "launch bounds", kind
        assert over["verdict"]["reg_cap"] == 0, kind  # no register cap can help
        # .reqntid is exact: a smaller block does not launch either (cuLaunchKernel refuses it)
        under = inspect_json(path, "--kernel", "bounded", "--block", str(threads - 32))["kernels"][0]
        assert under["verdict"]["fits"] is (directive == "maxntid"), kind
    k = inspect_json(str(bounded / "maxntid.ptx"))["kernels"][0]
    assert k["minnctapersm"] == 2
    text = run("inspect", str(bounded / f"{directive}.ptx"), "--no-gpu").stdout
    what = "no larger block launches" if directive == "maxntid" else "no other block size launches"
    assert f".{directive} {threads} ({what})" in text


@needs_nvcc
def test_exit_status_is_the_verdict(built):
    files, _ = built
    for kind in ("ptx", "cubin"):
        path = str(files[kind])
        assert run("inspect", path, "--kernel", "regs96", "--block", "640", "--no-gpu").returncode == 0
        assert run("inspect", path, "--kernel", "regs96", "--block", "641", "--no-gpu").returncode == 3
        assert run("inspect", path, "--kernel", "regs96", "--no-gpu").returncode == 0
    # Several kernels: 3 when any of them refuses the block.
    assert run("inspect", str(files["cubin"]), "--block", "640", "--no-gpu").returncode == 3
    assert run("inspect", str(files["cubin"]), "--block", "256", "--no-gpu").returncode == 0
    usage = run("inspect", "--help")
    assert usage.returncode == 0
    assert "--maxrregcount N" in usage.stdout and "--opt-level N" in usage.stdout
    assert "3 with --block: the block does not fit" in usage.stdout


@needs_nvcc
def test_target_newer_than_arch(built, tmp_path):
    files, _ = built
    path = str(files["ptx"])
    expect_usage_error(run("inspect", path, "--arch", "sm_80"),
                       f"{path}: .target sm_90 is newer than --arch sm_80: pass --arch sm_90 or compile the PTX for sm_80")
    # Architecture-specific PTX (numba emits sm_90a on Hopper) compiles for its own SM only.
    specific = tmp_path / "rp90a.ptx"
    specific.write_text(re.sub(r"^\.target sm_90$", ".target sm_90a", files["ptx"].read_text(), flags=re.M))
    same = by_name(inspect_json(str(specific), "--arch", "sm_90"))
    plain = by_name(inspect_json(path, "--arch", "sm_90"))
    assert {n: k["registers"] for n, k in same.items()} == {n: k["registers"] for n, k in plain.items()}
    expect_usage_error(run("inspect", str(specific), "--arch", "sm_100"), ".target sm_90a", "--arch sm_100",
                       "pass --arch sm_90a or compile the PTX for sm_100")


def expect_usage_error(r, *fragments):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("outcore: "), r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    assert r.stdout == ""


def test_not_a_kernel_file(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello\n")
    expect_usage_error(run("inspect", str(p)), "notes.txt", "not PTX, a cubin, a fatbinary")
    expect_usage_error(run("inspect", str(tmp_path / "missing.ptx")), "missing.ptx")


@needs_nvcc
def test_ptx_syntax_error_shows_ptxas_message(tmp_path):
    p = tmp_path / "broken.ptx"
    p.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry broken()\n{\n"
                 "  mov.u32 %r1, 5;\n  ret;\n}\n")
    r = run("inspect", str(p), "--arch", "sm_90")
    expect_usage_error(r, "broken.ptx", "ptxas", "line 6", "error")


@needs_nvcc
def test_bad_options(built):
    files, _ = built
    ptx = str(files["ptx"])
    expect_usage_error(run("inspect", ptx, "--arch", "sm_91"), "unknown architecture 'sm_91'")
    expect_usage_error(run("inspect", ptx, "--block", "0"), "--block")
    expect_usage_error(run("inspect", ptx, "--block", "1025"), "--block")
    expect_usage_error(run("inspect", ptx, "--kernel", "nope"), "no kernel named 'nope'", "regs96")
    expect_usage_error(run("inspect", str(files["cubin"]), "--arch", "sm_80"), "sm_90 machine code")
    for bad in ("0", "256", "many"):
        expect_usage_error(run("inspect", ptx, "--maxrregcount", bad), "--maxrregcount", bad)
    for bad in ("5", "-1"):
        expect_usage_error(run("inspect", ptx, "--opt-level", bad), "--opt-level")


def test_devices_without_gpu_describes_cpu():
    r = run("devices", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["cpu"]["cores"] >= 1
    assert d["cpu"]["isa"] in ("ref", "avx2", "avx512")
    if not d["gpus"]:
        assert d["no_gpu_reason"]
        text = run("devices").stdout
        assert "no usable GPU" in text and "CPU:" in text
    expect_usage_error(run("devices", "--fast"), "--fast")


SHARED_KERNELS = """
template <int N> __global__ void __launch_bounds__(128) tk(float *o)
{
    __shared__ float s[N];
    s[threadIdx.x] = 1;
    __syncthreads();
    o[threadIdx.x] = s[threadIdx.x ^ 1];
}
"""


@pytest.fixture(scope="module")
def shared_copies(tmp_path_factory):
    """An executable whose two translation units each hold the same template kernel (8 KiB of
    static shared memory, at most 128 threads), and a cubin of them for sm_90."""
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    d = tmp_path_factory.mktemp("copies")
    (d / "t.cuh").write_text(SHARED_KERNELS)
    (d / "a.cu").write_text('#include "t.cuh"\n__global__ void __launch_bounds__(100) lb100(float *o) { o[0] = 2; }\n'
                            'void a(float *o) { tk<2048><<<1, 128>>>(o); lb100<<<1, 100>>>(o); }\n')
    (d / "b.cu").write_text('#include "t.cuh"\nvoid a(float *o);\n'
                            'int main() { float *o = 0; a(o); tk<2048><<<1, 128>>>(o); return 0; }\n')
    subprocess.run([NVCC, "-arch=sm_80", d / "a.cu", d / "b.cu", "-o", d / "app"], check=True, cwd=d)
    subprocess.run([NVCC, "-arch=sm_90", "-cubin", d / "a.cu", "-o", d / "a90.cubin"], check=True, cwd=d)
    return d


def test_every_copy_of_a_kernel_gets_its_own_figures(shared_copies):
    """Each cubin's sections name the kernels of that cubin: the second translation unit's copy
    of tk<2048> has its 8 KiB and its bound of 128, as cuobjdump -res-usage shows, not the
    defaults of a kernel whose sections went to the first copy."""
    report = inspect_json(str(shared_copies / "app"), "--block", "256")
    copies = [k for k in report["kernels"] if k["name"] == "_Z2tkILi2048EEvPf"]
    assert len(copies) >= 1, report
    for k in copies:
        assert k["static_smem"] == 8192 and k["launch_bounds"] == 128, k
        assert k["verdict"]["fits"] is False and k["verdict"]["limiter"] == "launch bounds", k


def test_sm90_cubin_static_shared_memory_without_the_reserve(shared_copies):
    """An sm_90 cubin of CUDA 12.8 on counts the block's 1 KiB reserve inside each kernel's
    .nv.shared section; the static figure is the kernel's own, as ptxas -v and the driver give
    it, and the PTX of the same kernel says the same."""
    k = by_name(inspect_json(str(shared_copies / "a90.cubin")))["_Z2tkILi2048EEvPf"]
    assert k["static_smem"] == 8192, k


def test_a_bound_no_multiple_of_32_is_the_largest_block(shared_copies):
    k = by_name(inspect_json(str(shared_copies / "a90.cubin"), "--kernel", "_Z5lb100Pf", "--block", "100"))
    k = k["_Z5lb100Pf"]
    assert k["max_threads_per_block"] == 100 and k["verdict"]["fits"] is True, k


def test_a_damaged_shared_memory_size_is_refused(shared_copies, tmp_path):
    """A cubin whose .nv.shared section claims more than any GPU gives a block (2^64 - 2048
    wrapped the launch arithmetic to a small sum that 'fit') is a damaged file: exit 2."""
    import struct
    data = bytearray((shared_copies / "a90.cubin").read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        at = shoff + i * shentsize
        name_at = names + struct.unpack_from("<I", data, at)[0]
        name = bytes(data[name_at:data.index(0, name_at)])
        if name.startswith(b".nv.shared._Z2tk"):
            struct.pack_into("<Q", data, at + 0x20, 2**64 - 2048)
            break
    else:
        pytest.fail("no .nv.shared section for the template kernel")
    bad = tmp_path / "bad.cubin"
    bad.write_bytes(bytes(data))
    r = run("inspect", str(bad), "--no-gpu", "--block", "128", "--dyn-smem", "4096")
    assert r.returncode == 2 and "bytes of static shared memory; no GPU gives a block more than" in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1


def test_no_dynamic_shared_memory_given_as_0(built):
    """--dyn-smem 0 is the default spelled out (Python's dyn_smem=0): the same report."""
    files, _ = built
    assert inspect_json(str(files["cubin"]), "--block", "128", "--dyn-smem", "0") == \
        inspect_json(str(files["cubin"]), "--block", "128")


SHARED_KERNEL = """
__global__ void big(float *x)
{
    __shared__ float s[8000];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[7999 - threadIdx.x];
}
"""


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("how", ["release", "debug", "relocatable cubin", "relocatable object", "linked executable"])
def test_static_shared_memory_is_ptxas_figure(tmp_path, arch, how):
    """The static shared memory is ptxas' figure whatever the build: sm_90 cubins of CUDA 12.8
    on hold the block's 1 KiB reserve inside the section, also debug builds and nvlink's
    output, which have no .nv.shared.reserved section (the reserve was counted twice); the
    shared-memory section of relocatable code, of a CUDA type and without file bytes, was
    dropped (0 bytes); and an object of relocatable code keeps its GPU code in
    __nv_relfatbin (it was refused)."""
    src = tmp_path / "s.cu"
    src.write_text(SHARED_KERNEL)
    out = tmp_path / "k"
    flags = {"release": ["-cubin"], "debug": ["-cubin", "-G"], "relocatable cubin": ["-cubin", "-rdc=true"],
             "relocatable object": ["-c", "-rdc=true"], "linked executable": ["-rdc=true"]}[how]
    extra = []
    if how == "linked executable":
        main = tmp_path / "m.cu"
        main.write_text("__global__ void big(float *x);\nint main() { big<<<1, 256>>>(nullptr); return 0; }\n")
        extra = [str(main)]
    built = subprocess.run([NVCC, f"-arch={arch}", *flags, "-Xptxas", "-v", str(src), *extra, "-o", str(out)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert "32000 bytes smem" in built.stderr + built.stdout
    (k,) = inspect_json(str(out), "--kernel", "_Z3bigPf")["kernels"]
    assert k["static_smem"] == 32000, (how, arch, k)
