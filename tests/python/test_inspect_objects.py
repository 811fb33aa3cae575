"""outcore.inspect() on the kernel objects of numba and CuPy, without those packages or a GPU.

Small fake objects carry the attributes outcore reads (numba: a dispatcher's .overloads, a
kernel's .library.get_cubin(); CuPy: .file_path, .kernel.module.ptr, .module.ptr). The cubins
they hand out are compiled here by nvcc at two register caps, so a report read through an
object can be compared with the report of the same cubin read as a file.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import outcore

# 48 values live at once: the register count follows the cap it is compiled under.
PRESSURE = r"""
extern "C" __global__ void pressure(const float *in, float *out)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[48];
#pragma unroll
    for (int k = 0; k < 48; k++) v[k] = in[t * 48 + k];
#pragma unroll
    for (int k = 0; k < 48; k++) v[k] = v[k] * v[(k + 1) % 48] + v[(k + 7) % 48];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 48; k++) s += v[k] * (float)(k + 1);
    out[t] = s;
}
"""
CAPS = (32, 96)


def find_nvcc():
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


@pytest.fixture(scope="module")
def cubins(tmp_path_factory):
    """{cap: path} of the pressure kernel's sm_90 cubin under -maxrregcount=cap, and its PTX."""
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc is not installed: no cubin to hand out")
    d = tmp_path_factory.mktemp("objects")
    (d / "p.cu").write_text(PRESSURE)
    out = {}
    for cap in CAPS:
        out[cap] = d / f"p{cap}.cubin"
        subprocess.run([nvcc, "-arch=sm_90", "-cubin", f"-maxrregcount={cap}", d / "p.cu", "-o", out[cap]],
                       check=True, capture_output=True)
    out["ptx"] = d / "p.ptx"
    subprocess.run([nvcc, "-arch=sm_90", "-ptx", d / "p.cu", "-o", out["ptx"]], check=True, capture_output=True)
    return out


class FakeCubin:
    """numba-cuda with cuda.core returns an ObjectCode whose .code holds the bytes."""

    def __init__(self, data):
        self.code = data


class FakeLibrary:
    def __init__(self, data, wrap=False):
        self.data, self.wrap, self.asked = data, wrap, []

    def get_cubin(self, cc=None):
        self.asked.append(cc)
        return FakeCubin(self.data) if self.wrap else self.data


def pressure(): pass  # the fake dispatcher's Python function, for its name


class FakeKernel:
    """numba's _Kernel: one compiled signature."""

    def __init__(self, data, argtypes, wrap=False):
        self.entry_name = "pressure"
        self.py_func = pressure
        self.argtypes = argtypes
        self.library = FakeLibrary(data, wrap)


class FakeDispatcher:
    def __init__(self, overloads):
        self.py_func = pressure
        self.overloads = dict(overloads)


class FakeModule:
    def __init__(self, ptr):
        self.ptr = ptr


class FakeFunction:
    def __init__(self, module):
        self.module = module


class FakeRawModule:
    def __init__(self, path=None, code=None, ptr=0):
        self.code, self.file_path, self.options, self.backend = code, path, (), "nvrtc" if code else "nvcc"
        self.module = FakeModule(ptr)


class FakeRawKernel:
    def __init__(self, name, path=None, code=None, ptr=0):
        self.code, self.name, self.file_path, self.options, self.backend = code, name, path, (), "nvrtc"
        self.kernel = FakeFunction(FakeModule(ptr))


def without_source(kernel):
    return {k: v for k, v in kernel.items() if k not in ("file", "signature")}


def test_dispatcher_reports_each_signature_from_its_cubin(cubins):
    sigs = {cap: (f"float32[::1] cap{cap}", "float32[::1]") for cap in CAPS}
    kernels = {cap: FakeKernel(cubins[cap].read_bytes(), sigs[cap], wrap=cap == CAPS[1]) for cap in CAPS}
    dispatcher = FakeDispatcher((sigs[cap], kernels[cap]) for cap in CAPS)
    report = outcore.inspect(dispatcher, block=1024)
    assert report["file"] == "numba kernel pressure"
    assert report["format"] == "cubin" and report["jit"] is None
    assert [k["signature"] for k in report["kernels"]] == [f"({', '.join(sigs[cap])})" for cap in CAPS]
    for cap, k in zip(CAPS, report["kernels"]):
        # The numba default: the cubin for the current device, as get_cufunc() loads it.
        assert kernels[cap].library.asked == [None]
        assert k["file"] == f"numba kernel pressure{k['signature']}"
        (want,) = outcore.inspect(cubins[cap], block=1024)["kernels"]
        assert without_source(k) == want
        assert k["registers"] <= cap
    regs = [k["registers"] for k in report["kernels"]]
    assert regs[0] < regs[1]  # the caps made different code: each signature has its own


def test_one_compiled_kernel_and_its_arch(cubins):
    kernel = FakeKernel(cubins[CAPS[0]].read_bytes(), ("float32[::1]", "float32[::1]"))
    report = outcore.inspect(kernel, block=640, arch="sm_90")
    assert kernel.library.asked == [(9, 0)]
    (k,) = report["kernels"]
    assert k["signature"] == "(float32[::1], float32[::1])"
    assert without_source(k) == outcore.inspect(cubins[CAPS[0]], block=640, arch="sm_90")["kernels"][0]
    outcore.inspect(kernel, arch="sm_90a")
    assert kernel.library.asked[-1] == (9, 0, "a")


def test_numba_objects_that_give_no_code():
    with pytest.raises(outcore.InputError, match="not compiled yet"):
        outcore.inspect(FakeDispatcher({}))
    with pytest.raises(outcore.InputError, match="without bytes"):
        outcore.inspect(FakeKernel(None, ("int32",), wrap=True))
    with pytest.raises(outcore.InputError, match="cannot inspect a dict"):
        outcore.inspect({"code": 1})


def test_cupy_objects_loaded_from_a_file(cubins):
    path = str(cubins[CAPS[1]])
    module_report = outcore.inspect(FakeRawModule(path=path), block=256)
    assert module_report == outcore.inspect(path, block=256)
    kernel_report = outcore.inspect(FakeRawKernel("pressure", path=path), block=256)
    assert kernel_report == outcore.inspect(path, block=256, kernel="pressure")
    with pytest.raises(outcore.InputError, match="no kernel named 'other'"):
        outcore.inspect(FakeRawKernel("other", path=path))


@pytest.mark.skipif(outcore.cuda_device_count() > 0, reason="a fake module handle must not reach a real driver")
def test_cupy_objects_compiled_from_source_ask_the_driver():
    """CuPy keeps only the loaded module of source it compiled: its handle goes to the driver,
    which a machine without a GPU (or a build without CUDA) does not have."""
    for obj in (FakeRawModule(code="__global__ void k() {}", ptr=0x1234),
                FakeRawKernel("k", code="__global__ void k() {}", ptr=0x1234)):
        with pytest.raises(outcore.DeviceError) as err:
            outcore.inspect(obj)
        assert "CuPy Raw" in str(err.value)
    with pytest.raises(outcore.InputError, match="no loaded module"):
        outcore.inspect(FakeRawModule(code="__global__ void k() {}", ptr=0))


def test_jit_options_reach_the_compile(cubins):
    """maxrregcount= and opt_level= compile the PTX as the CLI's --maxrregcount / --opt-level
    do, and the PTX then gives the cubin's figures."""
    for cap in CAPS:
        report = outcore.inspect(cubins["ptx"], block=1024, arch="sm_90", maxrregcount=cap, opt_level=3)
        assert report["jit"]["maxrregcount"] == cap and report["jit"]["opt_level"] == 3
        assert report["jit"]["defaults"] is False
        (k,) = report["kernels"]
        (want,) = outcore.inspect(cubins[cap], block=1024, arch="sm_90")["kernels"]
        assert (k["registers"], k["max_threads_per_block"]) == (want["registers"], want["max_threads_per_block"])
        cli = os.environ.get("OUTCORE_BIN")
        if cli and Path(cli).exists():
            proc = subprocess.run([cli, "inspect", str(cubins["ptx"]), "--block", "1024", "--arch", "sm_90",
                                   "--maxrregcount", str(cap), "--opt-level", "3", "--json"],
                                  capture_output=True, text=True)
            assert json.loads(proc.stdout) == report
    with pytest.raises(outcore.InputError, match="maxrregcount"):
        outcore.inspect(cubins["ptx"], maxrregcount=300)
    with pytest.raises(outcore.InputError, match="opt_level"):
        outcore.inspect(cubins["ptx"], opt_level="high")


def test_ptx_held_in_memory(cubins):
    """Code handed over as bytes may be PTX too: it is compiled from a temporary copy, with
    the options asked, and its report names the object, not the copy."""
    ptx = cubins["ptx"].read_bytes()
    for cap in CAPS:
        report = outcore.inspect(FakeKernel(ptx, ("float32[::1]",)), arch="sm_90", maxrregcount=cap)
        assert report["format"] == "ptx" and report["jit"]["maxrregcount"] == cap
        (k,) = report["kernels"]
        assert k["file"] == "numba kernel pressure(float32[::1])"
        (want,) = outcore.inspect(cubins[cap], arch="sm_90")["kernels"]
        assert (k["registers"], k["max_threads_per_block"]) == (want["registers"], want["max_threads_per_block"])
    broken = ptx.replace(b".entry pressure(", b".entry pressure(\n  nonsense")
    with pytest.raises(outcore.InputError, match=r"numba kernel pressure\(float32\[::1\]\): ptxas") as info:
        outcore.inspect(FakeKernel(broken, ("float32[::1]",)), arch="sm_90")
    # ptxas's own line names the object too, not the temporary copy it read (gone by now).
    assert "outcore-inspect-" not in str(info.value) and ", line " in str(info.value), str(info.value)


def test_numba_and_cupy_are_not_imported(cubins):
    """Duck typing only: inspecting does not import either package."""
    code = ("import sys, outcore; outcore.inspect(sys.argv[1]); "
            "assert 'numba' not in sys.modules and 'cupy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code, str(cubins[CAPS[0]])], check=True, env=os.environ)


def test_an_image_given_as_bytes_is_refused_in_one_short_line():
    """bytes are a path (os.fsencode's), and an image's bytes hold NUL: refused as a path,
    shown by its start (the message embedded the whole image: 258 KB for a cubin)."""
    image = b"\x7fELF\x02\x01\x01" + bytes(200_000)
    with pytest.raises(outcore.InputError, match=r"\.\.\. \(200007 bytes\) holds a NUL byte") as e:
        outcore.inspect(image)
    assert len(str(e.value)) < 400 and "\n" not in str(e.value)
