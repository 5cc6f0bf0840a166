"""CPU-only tests of the `cake` package against its compiled extension (`cake._native`):
check, lower, compile's caching, target selection, and every launch validation through
Kernel.bind on duck-typed fake tensors. No GPU call is made.

scripts/test.sh builds the extension with maturin and puts it next to the sources
(python/cake/_native.abi3.so), as `maturin develop` does; CAKE_TEST_WHEEL names the wheel it
built, whose contents and tags are checked too.
"""

import copy
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from types import SimpleNamespace

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import cake  # noqa: E402
from cake import CompileError, CudaError, LaunchError, TargetError, load_kernel  # noqa: E402

GEMM = os.path.join(ROOT, "examples", "gemm_sm90.py")
GOLDEN = os.path.join(ROOT, "tests", "golden", "cu")
GiB = 1 << 30


# ---- fixtures -------------------------------------------------------------------------------


def row_major(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):  # as torch.bfloat16 prints
        return f"torch.{self.name}"


class FakeTensor:
    """Duck-typed stand-in for a torch tensor: .shape, .dtype, .stride(), .data_ptr(), .device."""

    def __init__(self, shape, dtype="bfloat16", ptr=0x10 * GiB, strides=None, device=("cuda", 0)):
        self.shape = tuple(shape)
        self.dtype = FakeDtype(dtype)
        self._strides = tuple(strides) if strides is not None else row_major(self.shape)
        self._ptr = ptr
        self.device = SimpleNamespace(type=device[0], index=device[1])

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr


class FakeCudaTensor(FakeTensor):
    """As torch.Tensor on a GPU looks to the launch fast path: .is_cuda and .get_device()."""

    is_cuda = True

    def get_device(self):
        return self.device.index


def test_the_torch_fast_path_describes_a_tensor_as_the_general_path_does():
    from cake.runtime import describe_tensor

    t = FakeCudaTensor((4, 8), ptr=0x20 * GiB, device=("cuda", 1))
    plain = FakeTensor((4, 8), ptr=0x20 * GiB, device=("cuda", 1))
    assert describe_tensor("A", t) == describe_tensor("A", plain) == (
        "A", "torch.bfloat16", [4, 8], [8, 1], 0x20 * GiB, 1)
    assert describe_tensor("A", t) == describe_tensor("A", t), "the cached dtype name is the same"


GEMM_META = {
    "schema": "cake.launch/v0",
    "kernel": "gemm",
    "symbol": "cake_gemm",
    "target": "sm_90a",
    "cubin": "gemm.cubin",
    "block": [384, 1, 1],
    "cluster": [1, 1, 1],
    "dynamic_smem": 197632,
    "grid": {"kind": "persistent", "tiles": [["cdiv", "M", 128], ["cdiv", "N", 256]]},
    "tensors": [
        {"name": "A", "dtype": "bf16", "dims": ["M", "K"], "access": "read"},
        {"name": "B", "dtype": "bf16", "dims": ["N", "K"], "access": "read"},
        {"name": "C", "dtype": "bf16", "dims": ["M", "N"], "access": "write"},
    ],
    "scalars": [{"name": "alpha", "dtype": "f32"}],
    "args": [
        {"kind": "tensormap", "tensor": "A", "box": [64, 128], "swizzle": 128, "interleave": "none",
         "oob_fill": "zero", "l2_promotion": 256},
        {"kind": "tensormap", "tensor": "B", "box": [64, 256], "swizzle": 128, "interleave": "none",
         "oob_fill": "zero", "l2_promotion": 256},
        {"kind": "ptr", "tensor": "C"},
        {"kind": "dim", "name": "M"},
        {"kind": "dim", "name": "N"},
        {"kind": "dim", "name": "K"},
        {"kind": "scalar", "name": "alpha"},
    ],
}


def write_kernel(tmp_path, meta=None):
    meta = copy.deepcopy(meta or GEMM_META)
    (tmp_path / f"{meta['kernel']}.launch.json").write_text(json.dumps(meta))
    (tmp_path / meta["cubin"]).write_bytes(b"\x7fELF not loaded without a GPU")
    return tmp_path / f"{meta['kernel']}.launch.json"


@pytest.fixture
def gemm(tmp_path):
    return load_kernel(write_kernel(tmp_path))


def gemm_tensors(M=4096, N=7168, K=4096):
    return (FakeTensor((M, K), ptr=0x10 * GiB), FakeTensor((N, K), ptr=0x20 * GiB),
            FakeTensor((M, N), ptr=0x30 * GiB))


# ---- the static commands ----------------------------------------------------------------------


def test_check_clean_schedule():
    doc = cake.check(GEMM)
    assert doc["schema"] == "cake.findings/v1"
    assert doc["errors"] == 0 and doc["summary"]["errors"] == 0
    assert doc["kernels"] == ["gemm"]
    assert doc["unbuildable"] == {}
    assert cake.check(GEMM, target="sm_90a")["errors"] == 0


def test_check_names_the_targets_a_schedule_cannot_be_built_for():
    doc = cake.check(os.path.join(ROOT, "tests", "check", "V001_tcgen05_unlowered.py"))
    assert doc["errors"] == 0
    assert list(doc["unbuildable"]) == ["sm_100a"] and doc["unbuildable"]["sm_100a"] >= 1


def test_check_reports_findings():
    doc = cake.check(os.path.join(ROOT, "tests", "check", "CAKE-C001-bad.py"))
    # Four unavailable instructions on sm_80, and the warpgroup accumulator mma.sync cannot compute.
    assert doc["errors"] == 5
    assert {f["code"] for f in doc["findings"]} == {"CAKE-C001", "CAKE-C015"}
    f = doc["findings"][0]
    assert f["severity"] == "error" and f["span"]["start_line"] == 13


def test_check_target_errors():
    with pytest.raises(ValueError, match="did you mean `sm_90a`"):
        cake.check(GEMM, target="sm_90")
    # A declared-target mismatch is a finding, not an exception.
    assert cake.check(GEMM, target="sm_80")["errors"] >= 1
    with pytest.raises(FileNotFoundError):
        cake.check(os.path.join(ROOT, "no-such-file.py"))


def test_lower_matches_the_golden_files():
    doc = cake.lower(GEMM, "sm_90a")
    assert doc["schema"] == "cake.lower/v0"
    (k,) = doc["kernels"]
    assert (k["kernel"], k["symbol"], k["target"]) == ("gemm", "cake_gemm", "sm_90a")
    with open(os.path.join(GOLDEN, "gemm_sm90.gemm.sm_90a.launch.json")) as fh:
        assert k["launch"] == json.load(fh)
    with open(os.path.join(GOLDEN, "gemm_sm90.gemm.sm_90a.cu")) as fh:
        assert k["cuda"] == fh.read()
    assert doc["findings"]["errors"] == 0


def test_lower_errors_raise_compile_error():
    with pytest.raises(CompileError) as e:
        cake.lower(os.path.join(ROOT, "tests", "check", "CAKE-C001-bad.py"), "sm_80")
    assert "CAKE-C001" in str(e.value) and "error" in str(e.value)
    assert e.value.findings["errors"] == 5
    with pytest.raises(ValueError, match="unknown target|sm_91"):
        cake.lower(GEMM, "sm_91")


def test_targets_and_capabilities():
    assert cake.target_for_capability(9, 0) == "sm_90a"
    assert cake.target_for_capability(8, 9) == "sm_89"
    assert cake.target_for_capability(12, 1) == "sm_121a"
    assert cake.capability_targets()[(10, 0)] == "sm_100a", "read from the compiler's table"
    with pytest.raises(TargetError, match="compute capability 8.6"):
        cake.target_for_capability(8, 6)
    assert issubclass(TargetError, ValueError)


def test_compile_without_target_or_gpu_is_a_target_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # no torch: ask the driver, which is absent
    if ctypes.util.find_library("cuda"):
        pytest.skip("needs a machine without a CUDA driver: one is present")
    with pytest.raises(TargetError, match="pass target="):
        cake.compile(GEMM, cache_dir=tmp_path)


def test_compile_builds_once_then_hits_the_cache(tmp_path, monkeypatch):
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("no CUDA toolchain (scripts/toolchain.sh installs one)")
    mod = cake.compile(GEMM, target="sm_90a", cache_dir=tmp_path)
    assert not mod.cached and mod.target == "sm_90a"
    assert isinstance(mod.gemm, cake.Kernel) and mod.gemm.param_names == ["A", "B", "C"]
    assert mod["gemm"] is mod.gemm and "gemm" in dir(mod)
    with pytest.raises(AttributeError, match="no kernel `nope`"):
        mod.nope
    entry = os.path.dirname(mod.gemm.path)
    assert os.path.dirname(entry) == str(tmp_path / "python")
    assert sorted(os.listdir(entry)) == ["gemm.cu", "gemm.cubin", "gemm.launch.json",
                                         "gemm.resources.json", "manifest.json"]

    def no_build(*a, **k):
        raise AssertionError("a cache hit must not build")

    monkeypatch.setattr(cake.compiler, "build", no_build)
    again = cake.compile(GEMM, target="sm_90a", cache_dir=tmp_path)
    assert again.cached and again.gemm.path == mod.gemm.path
    # Another source is another entry.
    other = tmp_path / "gemm_copy.py"
    other.write_bytes(open(GEMM, "rb").read() + b"\n# changed\n")
    with pytest.raises(AssertionError, match="must not build"):
        cake.compile(other, target="sm_90a", cache_dir=tmp_path)


def test_embed_ptx_is_asked_for_and_only_for_forward_compatible_targets(tmp_path):
    # An `a` target's PTX runs nowhere else: refused before any toolchain is needed.
    with pytest.raises(ValueError, match="compute_90a"):
        cake.build(GEMM, "sm_90a", tmp_path / "out", embed_ptx=True)
    with pytest.raises(ValueError, match="compute_90a"):
        cake.compile(GEMM, target="sm_90a", cache_dir=tmp_path, embed_ptx=True)
    # The PTX build of a portable target is its own cache entry.
    src = open(os.path.join(ROOT, "examples", "gemm_sm80.py"), "rb").read()
    assert cake.compiler._cache_key(src, "sm_80") != cake.compiler._cache_key(src, "sm_80", True)
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("no CUDA toolchain for the PTX build (scripts/toolchain.sh installs one)")
    mod = cake.compile(os.path.join(ROOT, "examples", "gemm_sm80.py"), target="sm_80",
                       cache_dir=tmp_path, embed_ptx=True)
    entry = os.path.dirname(mod.gemm.path)
    assert "gemm.fatbin" in os.listdir(entry) and "gemm.cubin" not in os.listdir(entry)
    assert mod.gemm.meta["cubin"] == "gemm.fatbin"


def test_compile_errors(tmp_path):
    with pytest.raises(CompileError, match="CAKE-C001"):
        cake.compile(os.path.join(ROOT, "tests", "check", "CAKE-C001-bad.py"), target="sm_80", cache_dir=tmp_path)
    assert not [p for p in os.listdir(tmp_path / "python") if not p.startswith(".")]


# ---- loading -----------------------------------------------------------------------------------


def test_load_kernel_reads_json_and_cubin(tmp_path):
    k = load_kernel(write_kernel(tmp_path))
    assert k.meta == GEMM_META
    assert k.name == "gemm" and k.param_names == ["A", "B", "C", "alpha"]
    assert k.tensor_names == ["A", "B", "C"] and k.scalar_names == ["alpha"]
    assert k.last_grid is None and k.path.endswith("gemm.launch.json")
    assert load_kernel(tmp_path).name == "gemm"  # a directory holding one launch.json
    assert "cake.Kernel gemm (A, B, C, alpha)" in repr(k)


def test_load_kernel_errors(tmp_path):
    p = tmp_path / "gemm.launch.json"
    p.write_text(json.dumps(GEMM_META))
    with pytest.raises(LaunchError, match="field `cubin`: cannot read"):
        load_kernel(p)
    p.write_text("{not json")
    with pytest.raises(LaunchError, match="invalid JSON"):
        load_kernel(p)
    bad = copy.deepcopy(GEMM_META)
    bad["args"][0]["box"] = [64, 512]
    p.write_text(json.dumps(bad))
    with pytest.raises(LaunchError, match=r"box\[1\] must be in \[1, 256\]"):
        load_kernel(p)
    bad["grid"] = {"kind": "explicit", "dims": [1, 1, 1]}
    p.write_text(json.dumps(bad))
    with pytest.raises(LaunchError, match="unknown variant `explicit`"):
        load_kernel(p)


def test_golden_launch_files_load(tmp_path):
    for name in ("gemm_sm90.gemm.sm_90a", "kmeans_assign_sm90.kmeans_assign.sm_90a"):
        with open(os.path.join(GOLDEN, f"{name}.launch.json")) as fh:
            meta = json.load(fh)
        d = tmp_path / name
        d.mkdir()
        k = load_kernel(write_kernel(d, meta))
        assert k.meta == meta


# ---- binding and validation (Kernel.bind: no GPU) ---------------------------------------------


def test_bind_gemm_dims_grid_and_tensormaps(gemm):
    b = gemm.bind(*gemm_tensors(1000, 1000, 512), 1.0, num_sms=132)
    assert b["dims"] == {"M": 1000, "K": 512, "N": 1000}
    assert b["grid"] == [32, 1, 1] and not b["empty"] and b["device"] == 0
    ta, tb = b["tensormaps"]
    assert ta == {
        "data_type": 9, "rank": 2, "global_address": 0x10 * GiB,
        "global_dim": [512, 1000], "global_strides": [1024], "box_dim": [64, 128],
        "element_strides": [1, 1], "interleave": 0, "swizzle": 3, "l2_promotion": 3, "oob_fill": 0,
    }
    assert tb["global_address"] == 0x20 * GiB and tb["box_dim"] == [64, 256]
    assert gemm.bind(*gemm_tensors(), 1.0, num_sms=132)["grid"] == [132, 1, 1]


def test_bind_by_name_mixed_and_empty(gemm):
    A, B, C = gemm_tensors()
    assert gemm.bind(A, B, C=C, alpha=2, num_sms=132)["dims"]["N"] == 7168
    assert gemm.bind(alpha=0.5, C=C, B=B, A=A, num_sms=132)["grid"] == [132, 1, 1]
    e = gemm.bind(*gemm_tensors(M=0), 1.0, num_sms=132)
    assert e["empty"] and e["grid"][0] == 0 and e["tensormaps"] == []


@pytest.mark.parametrize("which,tensor,msg", [
    (0, FakeTensor((4096, 4096), "float16"), "tensor `A`: expected dtype bf16, got f16"),
    (0, FakeTensor((4096, 4096), "complex64"), "tensor `A`: unsupported dtype 'torch.complex64'"),
    (0, FakeTensor((4096,)), r"tensor `A`: expected rank 2 \(dims \[M, K\]\), got rank 1"),
    (0, FakeTensor((4096, 4096), device=("cpu", None)), "tensor `A`: expected a CUDA tensor, got one on cpu"),
    (1, FakeTensor((7168, 4096), ptr=0x20 * GiB, device=("cuda", 1)),
     r"tensor `B`: expected a CUDA tensor on cuda:0 \(the launch device\), got one on cuda:1"),
    (0, FakeTensor((4096, 4096), ptr=0x10 * GiB + 8), "tensor `A`: data_ptr must be 16-byte aligned"),
    (0, FakeTensor((4096, 4096), strides=(1, 4096)), r"tensor `A`: expected a contiguous row-major tensor.*call \.contiguous\(\)"),
    (1, FakeTensor((7168, 4000), ptr=0x20 * GiB), r"dim `K` is 4096 from A \(dim 1\) but 4000 from B \(dim 1\)"),
    (2, FakeTensor((4096, 7168), ptr=0x10 * GiB), r"tensor `C` \(access write\) overlaps tensor `A` in memory"),
    (1, "not a tensor", "tensor `B`: expected a tensor, got str"),
])
def test_bind_tensor_errors(gemm, which, tensor, msg):
    ts = list(gemm_tensors())
    ts[which] = tensor
    with pytest.raises(LaunchError, match=msg):
        gemm.bind(*ts, 1.0, num_sms=132)


def test_tma_row_pitch_is_checked_before_launch(gemm):
    # K = 100 bf16 rows are 200 bytes: TMA needs a multiple of 16.
    with pytest.raises(LaunchError, match=r"arg 0 \(tensormap `A`\) for tensor `A`: globalStrides\[0\].*got 200"):
        gemm.bind(*gemm_tensors(256, 256, 100), 1.0, num_sms=132)


@pytest.mark.parametrize("args,kw,msg", [
    ((1, 2, 3, 4, 5), {}, "takes 4 arguments"),
    ((), {}, r"missing argument\(s\) A, B, C, alpha"),
    (("a",), {"A": 1, "B": 2, "C": 3, "alpha": 1.0}, "given both positionally and by name"),
    ((), {"D": 1}, "unknown argument `D`"),
])
def test_argument_gathering_errors(gemm, args, kw, msg):
    with pytest.raises(LaunchError, match=msg):
        gemm.bind(*args, num_sms=132, **kw)


def test_scalar_errors(tmp_path):
    k = load_kernel(write_kernel(tmp_path))
    with pytest.raises(LaunchError, match="scalar `alpha`: expected a number for f32, got str"):
        k.bind(*gemm_tensors(), "1.0", num_sms=132)
    with pytest.raises(LaunchError, match="got bool"):
        k.bind(*gemm_tensors(), True, num_sms=132)
    k.bind(*gemm_tensors(), SimpleNamespace(item=lambda: 0.5), num_sms=132)  # a 0-d tensor
    meta = copy.deepcopy(GEMM_META)
    meta["scalars"] = [{"name": "alpha", "dtype": "i32"}]
    d = tmp_path / "i32"
    d.mkdir()
    k = load_kernel(write_kernel(d, meta))
    with pytest.raises(LaunchError, match=r"2147483648 out of range for i32 \[-2147483648, 2147483647\]"):
        k.bind(*gemm_tensors(), 1 << 31, num_sms=132)
    with pytest.raises(LaunchError, match="expected an int for i32, got 1.5"):
        k.bind(*gemm_tensors(), 1.5, num_sms=132)
    with pytest.raises(LaunchError, match="out of range for i32"):
        k.bind(*gemm_tensors(), 1 << 200, num_sms=132)


def test_int_scalars_size_a_tiles_grid(tmp_path):
    meta = copy.deepcopy(GEMM_META)
    meta["scalars"] = [{"name": "alpha", "dtype": "f32"}, {"name": "splits", "dtype": "i32"}]
    meta["grid"] = {"kind": "tiles", "tiles": [["cdiv", "M", 128], "splits"]}
    k = load_kernel(write_kernel(tmp_path, meta))
    assert k.bind(*gemm_tensors(M=256), 1.0, 3, num_sms=132)["grid"] == [6, 1, 1]


def test_size_one_dim_strides_do_not_matter(gemm):
    A = FakeTensor((1, 64), strides=(1, 1))
    B, C = FakeTensor((256, 64), ptr=0x20 * GiB), FakeTensor((1, 256), ptr=0x30 * GiB)
    b = gemm.bind(A, B, C, 1.0, num_sms=132)
    assert b["tensormaps"][0]["global_strides"] == [128]


def test_launch_without_a_driver_is_a_cuda_error(gemm):
    if ctypes.util.find_library("cuda"):
        pytest.skip("needs a machine without a CUDA driver: one is present")
    # Validation first: a bad argument is a LaunchError even without a driver.
    with pytest.raises(LaunchError, match="expected dtype bf16"):
        gemm(FakeTensor((256, 64), "float16"), *gemm_tensors(256, 256, 64)[1:], 1.0, stream=0)
    with pytest.raises(CudaError) as e:
        gemm(*gemm_tensors(256, 256, 64), 1.0, stream=0)
    assert e.value.result == "CUDA_ERROR_NO_DRIVER_LIBRARY"
    assert "libcuda" in str(e.value)
    # Binding without num_sms asks the driver for the SM count.
    with pytest.raises(CudaError):
        gemm.bind(*gemm_tensors(256, 256, 64), 1.0)


def test_stream_argument_errors(gemm):
    with pytest.raises(LaunchError, match="stream: expected a torch.cuda.Stream"):
        gemm(*gemm_tensors(), 1.0, stream="default")
    other = SimpleNamespace(cuda_stream=1234, device=SimpleNamespace(type="cuda", index=1))
    with pytest.raises(LaunchError, match="stream: is on cuda:1, but the tensors are on cuda:0"):
        gemm(*gemm_tensors(), 1.0, stream=other)


# ---- import without torch or the extension -----------------------------------------------------


def run_python(code, **env):
    path = os.pathsep.join(p for p in (os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH")) if p)
    e = dict(os.environ, PYTHONPATH=path, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)


def test_import_without_torch_or_extension():
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['cake._native'] = None\n"
        "import cake\n"
        "from cake import load_kernel, LaunchError, CudaError, CompileError\n"
        "assert issubclass(LaunchError, cake.CakeError)\n"
        "try:\n"
        "    cake.check('examples/gemm_sm90.py')\n"
        "except ImportError as e:\n"
        "    print('IMPORT-ERROR', e)\n"
    )
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert "IMPORT-ERROR cake's compiled extension `cake._native` is not available" in r.stdout
    assert "docs/python.md" in r.stdout


def test_no_torch_needed_for_validation_or_an_explicit_stream(tmp_path):
    path = write_kernel(tmp_path)
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from types import SimpleNamespace as N\n"
        "from cake import load_kernel, LaunchError\n"
        f"k = load_kernel({str(path)!r})\n"
        "class T:\n"
        "    def __init__(s, shape, p): s.shape, s.dtype, s.p = shape, 'torch.bfloat16', p\n"
        "    device = N(type='cuda', index=0)\n"
        "    def stride(s): return (s.shape[1], 1)\n"
        "    def data_ptr(s): return s.p\n"
        "print(k.bind(T((128, 64), 1 << 34), T((256, 64), 2 << 34), T((128, 256), 3 << 34), 1.0, num_sms=1)['grid'])\n"
        "try:\n"
        "    k(T((128, 64), 1 << 34), T((256, 64), 2 << 34), T((128, 256), 3 << 34), 1.0)\n"
        "except LaunchError as e:\n"
        "    print('LAUNCH-ERROR', e)\n"
    )
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert "[1, 1, 1]" in r.stdout
    assert "LAUNCH-ERROR launching without stream= needs torch" in r.stdout


# ---- the wheel --------------------------------------------------------------------------------


def test_wheel_contents_tags_and_install(tmp_path):
    wheel = os.environ.get("CAKE_TEST_WHEEL")
    if not wheel:
        pytest.skip("CAKE_TEST_WHEEL not set (scripts/test.sh sets it)")
    name = os.path.basename(wheel)
    assert "-cp39-abi3-" in name, name
    assert "manylinux" in name, name
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        wheel_meta = next(z.read(n).decode() for n in names if n.endswith(".dist-info/WHEEL"))
    assert {"cake/__init__.py", "cake/errors.py", "cake/runtime.py", "cake/compiler.py", "cake/torch_ops.py",
            "cake/tuning.py",
            "cake/_native.abi3.so"} <= names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)
    assert "Tag: cp39-abi3-manylinux" in wheel_meta
    # Installed alone (no source tree on the path), the package checks a schedule.
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                    "--target", str(target), wheel], check=True)
    r = subprocess.run([sys.executable, "-c", "import cake, sys; d = cake.check(sys.argv[1]); "
                        "print(cake.__file__, d['errors'])", GEMM],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(target)), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(str(target)) and r.stdout.split()[-1] == "0"


# ---- the launch path against a fake driver ------------------------------------------------------
#
# crates/cake-runtime/tests/fake_libcuda.c implements the driver entry points the runtime uses and
# logs every call; put first on LD_LIBRARY_PATH it is the `libcuda` the runtime opens, so the
# whole path — Python, the extension, cudarc's dynamic loading, contexts, module loading,
# tensor-map encoding, parameter packing and cuLaunchKernelEx's structures — runs without a GPU.

FAKE_LAUNCH = r"""
import json, sys
sys.modules["torch"] = None  # an explicit stream needs no torch
from types import SimpleNamespace as N
from cake import load_kernel, CudaError, LaunchError

class T:
    def __init__(self, shape, ptr, device=0):
        self.shape, self.dtype, self._ptr = shape, "torch.bfloat16", ptr
        self.device = N(type="cuda", index=device)
    def stride(self):
        return (self.shape[1], 1)
    def data_ptr(self):
        return self._ptr

k = load_kernel(sys.argv[1])
G = 1 << 30
A, B, C = T((1000, 512), 16 * G), T((1000, 512), 32 * G), T((1000, 1000), 48 * G)
out = {}
try:
    k(A, B, C, stream=0xABC)
    out["grid"] = list(k.last_grid)
    p = k.prepare(A, B, C, stream=0xABC)
    p()
    out["attrs"] = k.func_attributes(0)
    out["residency"] = k.residency(0)
    out["waves"] = k.waves((264, 1, 1), 0)
    A1, B1, C1 = (T(t.shape, t._ptr, device=1) for t in (A, B, C))
    k(A1, B1, C1, stream=0xDEF)
    k(T((0, 512), 16 * G), B, T((0, 1000), 48 * G), stream=0xABC)  # empty: no launch
except CudaError as e:
    out["cuda_error"] = [str(e), e.result, e.code]
except LaunchError as e:
    out["launch_error"] = str(e)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the fake driver")
    d = tmp_path_factory.mktemp("fake_libcuda")
    src = os.path.join(ROOT, "crates", "cake-runtime", "tests", "fake_libcuda.c")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(d / "libcuda.so"), src], check=True)
    return d


def fake_launch(fake_libcuda, tmp_path, meta, nparams, fail=None, max_clusters=None, capturing=False,
                script=FAKE_LAUNCH):
    path = write_kernel(tmp_path, meta)
    log = tmp_path / "calls.log"
    if log.exists():
        log.unlink()
    env = {"LD_LIBRARY_PATH": os.pathsep.join(p for p in (str(fake_libcuda), os.environ.get("LD_LIBRARY_PATH")) if p),
           "FAKE_CUDA_LOG": str(log), "FAKE_CUDA_NPARAMS": str(nparams)}
    if fail:
        env["FAKE_CUDA_FAIL"] = fail
    if capturing:
        env["FAKE_CUDA_CAPTURING"] = "1"
    if max_clusters is not None:
        env["FAKE_CUDA_MAX_CLUSTERS"] = str(max_clusters)
    r = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                           p for p in (os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH")) if p), **env))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), log.read_text().splitlines()


def golden_gemm():
    with open(os.path.join(GOLDEN, "gemm_sm90.gemm.sm_90a.launch.json")) as fh:
        return json.load(fh)


def test_fake_driver_launch_path(fake_libcuda, tmp_path):
    out, calls = fake_launch(fake_libcuda, tmp_path, golden_gemm(), nparams=9)
    assert out["grid"] == [32, 1, 1]  # 8 x 4 tiles < 132 SMs
    assert out["attrs"] == {"num_regs": 1004, "static_smem": 1001, "local_bytes": 1003,
                            "max_threads_per_block": 1000, "max_dynamic_smem": 1008}
    # Not clustered: the CTAs one SM holds, as the driver says, over every SM.
    assert out["residency"] == {"sm_count": 132, "ctas_per_sm": 1, "cluster": 1,
                                "clusters_at_once": None, "resident_ctas": 132}
    assert out["waves"] == 2.0
    assert any(c.startswith("cuOccupancyMaxActiveBlocksPerMultiprocessor") and "smem=214064" in c for c in calls)
    assert not any(c.startswith("cuOccupancyMaxActiveClusters") for c in calls)
    assert calls[0] == "cuInit 0"
    # The primary context of device 0, made current before the module is loaded into it (not
    # while the stream is being captured into a CUDA graph).
    assert calls[1:6] == ["cuDevicePrimaryCtxRetain 0", "cuCtxSetCurrent 0xc0000",
                          "cuStreamIsCapturing stream=0xabc",
                          "cuModuleLoadData ctx=0xc0000 image=ELF", "cuModuleGetFunction cake_gemm"]
    # Above 48 KB of dynamic shared memory the limit is raised first.
    assert calls[6] == "cuFuncSetAttribute 8 214064"
    enc = [c for c in calls if c.startswith("cuTensorMapEncodeTiled")]
    assert enc[:3] == [
        "cuTensorMapEncodeTiled aligned=1 dtype=9 rank=2 addr=0x400000000 dim=512,1000 strides=1024 box=64,128 "
        "estr=1,1 interleave=0 swizzle=3 l2=3 oob=0",
        "cuTensorMapEncodeTiled aligned=1 dtype=9 rank=2 addr=0x800000000 dim=512,1000 strides=1024 box=64,256 "
        "estr=1,1 interleave=0 swizzle=3 l2=3 oob=0",
        "cuTensorMapEncodeTiled aligned=1 dtype=9 rank=2 addr=0xc00000000 dim=1000,1000 strides=2000 box=64,64 "
        "estr=1,1 interleave=0 swizzle=3 l2=3 oob=0",
    ]
    launches = [c for c in calls if c.startswith("cuLaunchKernelEx")]
    assert len(launches) == 3  # call, prepared call, device 1; the empty problem launches nothing
    # Parameters in launch.json order: three tensor maps (their first word is the address the
    # fake encoded), three pointers, then M, K, N as int32.
    params = "params=0x400000000,0x800000000,0xc00000000,0x400000000,0x800000000,0xc00000000,0x3e8,0x200,0x3e8"
    assert launches[0] == ("cuLaunchKernelEx ctx=0xc0000 f=0x3000 grid=32,1,1 block=384,1,1 smem=214064 "
                           f"stream=0xabc attrs=0 {params} extra=(nil)")
    assert launches[1] == launches[0]
    # Tensors on cuda:1: that device's primary context, its own module, its stream.
    assert "cuDevicePrimaryCtxRetain 1" in calls and "cuCtxSetCurrent 0xc0001" in calls
    assert sum(c.startswith("cuModuleLoadData") for c in calls) == 2
    assert launches[2].startswith("cuLaunchKernelEx ctx=0xc0001 f=0x3000 grid=32,1,1")
    assert "stream=0xdef" in launches[2]


def test_fake_driver_zeroes_before_the_kernel(fake_libcuda, tmp_path):
    # launch.json's `zero` (@cake.schedule(zero=[...])): one memset over the tensor's bytes, on
    # the launch's stream and in its context, before every launch; none for an empty tensor.
    meta = golden_gemm()
    meta["zero"] = ["C"]
    out, calls = fake_launch(fake_libcuda, tmp_path, meta, nparams=0)
    assert "cuda_error" not in out, out
    sets = [i for i, c in enumerate(calls) if c.startswith("cuMemsetD8Async")]
    launches = [i for i, c in enumerate(calls) if c.startswith("cuLaunchKernelEx")]
    assert len(sets) == len(launches) == 3
    assert all(s < l for s, l in zip(sets, launches)) and sets[1] > launches[0]
    assert calls[sets[0]] == "cuMemsetD8Async ctx=0xc0000 ptr=0xc00000000 value=0 bytes=2000000 stream=0xabc"
    assert calls[sets[2]].startswith("cuMemsetD8Async ctx=0xc0001") and calls[sets[2]].endswith("stream=0xdef")
    # A tensor the kernel only reads cannot be zeroed: the metadata is refused before any call.
    meta["zero"] = ["A"]
    (tmp_path / "ro").mkdir()
    path = write_kernel(tmp_path / "ro", meta)
    with pytest.raises(Exception, match="tensor `A` is zeroed but the kernel does not write it"):
        cake.load_kernel(str(path))


def test_fake_driver_resets_persisting_l2_in_the_device_context(fake_libcuda, tmp_path):
    # The timing harness's flush first returns evict-last lines to normal priority
    # (cake.harness.timing.flush_l2): in the device's primary context, made current first.
    log = tmp_path / "calls.log"
    code = "from cake._native_loader import native; native().reset_persisting_l2(1)"
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(
        p for p in (str(fake_libcuda), os.environ.get("LD_LIBRARY_PATH")) if p), FAKE_CUDA_LOG=str(log))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    assert calls[-3:] == ["cuDevicePrimaryCtxRetain 1", "cuCtxSetCurrent 0xc0001",
                          "cuCtxResetPersistingL2Cache ctx=0xc0001"], calls
    # A failure is a CudaError naming the call, not a silent pass.
    env["FAKE_CUDA_FAIL"] = "cuCtxResetPersistingL2Cache"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "cuCtxResetPersistingL2Cache" in r.stderr, r.stderr


FAKE_EMPTY_UPDATE = r"""
import sys
sys.modules["torch"] = None
from types import SimpleNamespace as N
from cake import load_kernel

class T:
    def __init__(self, shape, dtype, ptr):
        self.shape, self.dtype, self._ptr = shape, dtype, ptr
        self.device = N(type="cuda", index=0)
    def stride(self):
        out, n = [], 1
        for d in reversed(self.shape):
            out.insert(0, n)
            n *= max(d, 1)
        return tuple(out)
    def data_ptr(self):
        return self._ptr

k = load_kernel(sys.argv[1])
G = 1 << 30
# N = 0 rows: no CTA runs, and the sums and counts of the 5 x 7 clusters must still be zero.
k(T((5, 0, 128), "torch.bfloat16", 16 * G), T((5, 7, 128), "torch.bfloat16", 32 * G),
  T((5, 0), "torch.int32", 48 * G), T((5, 7, 128), "torch.float32", 64 * G),
  T((5, 7), "torch.int32", 80 * G), stream=0xABC)
print(list(k.last_grid))
"""


def test_fake_driver_zeroes_an_empty_problem(fake_libcuda, tmp_path):
    with open(os.path.join(GOLDEN, "kmeans_update_atomic_sm90.kmeans_update_atomic.sm_90a.launch.json")) as fh:
        meta = json.load(fh)
    path = write_kernel(tmp_path, meta)
    log = tmp_path / "calls.log"
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(
        p for p in (str(fake_libcuda), os.environ.get("LD_LIBRARY_PATH")) if p),
        FAKE_CUDA_LOG=str(log), PYTHONPATH=os.pathsep.join(
            p for p in (os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, "-c", FAKE_EMPTY_UPDATE, str(path)], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [0, 1, 1]
    calls = log.read_text().splitlines()
    assert not any(c.startswith("cuLaunchKernelEx") for c in calls)
    assert [c for c in calls if c.startswith("cuMemsetD8Async")] == [
        "cuMemsetD8Async ctx=0xc0000 ptr=0x1000000000 value=0 bytes=17920 stream=0xabc",
        "cuMemsetD8Async ctx=0xc0000 ptr=0x1400000000 value=0 bytes=140 stream=0xabc",
    ]


def test_fake_driver_cluster_launch(fake_libcuda, tmp_path):
    meta = golden_gemm()
    meta["cluster"] = [2, 1, 1]
    meta["dynamic_smem"] = 1024  # below 48 KB: no attribute
    out, calls = fake_launch(fake_libcuda, tmp_path, meta, nparams=0)
    assert out["grid"] == [32, 1, 1]
    assert not any(c.startswith("cuFuncSetAttribute") for c in calls)
    launch = next(c for c in calls if c.startswith("cuLaunchKernelEx"))
    assert "smem=1024" in launch and "attrs=1 attr4=2,1,1" in launch  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    # A persistent cluster grid is asked how many clusters fit at once, and capped by it when
    # fewer fit than the grid would launch.
    assert any(c.startswith("cuOccupancyMaxActiveClusters") and "cluster=2" in c for c in calls)
    # Residency: the clusters the driver says fit (64 of 2 here), and the waves a grid takes.
    assert out["residency"] == {"sm_count": 132, "ctas_per_sm": 1, "cluster": 2,
                                "clusters_at_once": 64, "resident_ctas": 128}
    assert out["waves"] == 264 / 128
    out, calls = fake_launch(fake_libcuda, tmp_path, meta, nparams=0, max_clusters=4)
    assert out["grid"] == [8, 1, 1]
    assert out["residency"]["clusters_at_once"] == 4 and out["residency"]["resident_ctas"] == 8
    assert "grid=8,1,1" in [c for c in calls if c.startswith("cuLaunchKernelEx")][-1]


# Three launches on two streams of one device.
FAKE_STREAMS = FAKE_LAUNCH.replace("""    k(A, B, C, stream=0xABC)
    out["grid"] = list(k.last_grid)""", """    for s in (0xABC, 0xDEF, 0xABC):
        k(A, B, C, stream=s)
    out["grid"] = list(k.last_grid)""")


def with_state(meta, bytes=528384, zeroed=4096):
    """`meta` as a kernel with a workspace (launch.json `state`, its argument last)."""
    meta["state"] = {"bytes": bytes, "zeroed": zeroed}
    meta["args"].append({"kind": "state"})
    return meta


def launches(calls):
    return [c for c in calls if c.startswith("cuLaunchKernelEx")]


def last_param(call):
    return call.split(" params=")[1].split(" ")[0].split(",")[-1]


def test_fake_driver_gives_each_stream_its_own_workspace(fake_libcuda, tmp_path):
    assert FAKE_STREAMS != FAKE_LAUNCH
    out, calls = fake_launch(fake_libcuda, tmp_path, golden_gemm(), nparams=9, script=FAKE_STREAMS)
    assert "cuda_error" not in out and "launch_error" not in out, out
    assert not any(c.startswith("cuMemAlloc") for c in calls), "no state, no workspace"
    out, calls = fake_launch(fake_libcuda, tmp_path, with_state(golden_gemm()), nparams=10, script=FAKE_STREAMS)
    assert "cuda_error" not in out and "launch_error" not in out, out
    # One module per device, as for any kernel.
    assert sum(c.startswith("cuModuleLoadData") for c in calls) == 2
    # A workspace per device and stream: (0, 0xabc), (0, 0xdef), (1, 0xdef); each zeroed once, on
    # its stream, over its zeroed prefix only.
    allocs = [c for c in calls if c.startswith("cuMemAlloc ")]
    assert [c.split()[1:3] for c in allocs] == [["ctx=0xc0000", "bytes=528384"], ["ctx=0xc0000", "bytes=528384"],
                                               ["ctx=0xc0001", "bytes=528384"]], allocs
    ptrs = [c.split("-> ")[1] for c in allocs]
    zeroed = [c for c in calls if c.startswith("cuMemsetD8Async")]
    assert [(c.split()[2], c.split()[4], c.split()[5]) for c in zeroed] == [
        (f"ptr={ptrs[0]}", "bytes=4096", "stream=0xabc"), (f"ptr={ptrs[1]}", "bytes=4096", "stream=0xdef"),
        (f"ptr={ptrs[2]}", "bytes=4096", "stream=0xdef")], zeroed
    # Every launch gets its stream's workspace as its last argument: 0xabc, 0xdef, 0xabc, the
    # prepared launch on 0xabc (bound and called), then device 1's 0xdef.
    got = [last_param(c) for c in launches(calls)]
    assert got == [ptrs[0], ptrs[1], ptrs[0], ptrs[0], ptrs[2]], (got, ptrs)


# One launch on each of 65 streams of device 0.
FAKE_MANY_STREAMS = FAKE_LAUNCH.replace("""    k(A, B, C, stream=0xABC)
    out["grid"] = list(k.last_grid)""", """    for s in range(1, 66):
        out["launched"] = s - 1
        k(A, B, C, stream=0x1000 * s)
    out["grid"] = list(k.last_grid)""")


def test_fake_driver_caps_the_workspaces_of_a_kernel(fake_libcuda, tmp_path):
    assert FAKE_MANY_STREAMS != FAKE_LAUNCH
    meta = golden_gemm()
    out, calls = fake_launch(fake_libcuda, tmp_path, meta, nparams=9, script=FAKE_MANY_STREAMS)
    assert "launch_error" not in out and out["launched"] == 64, out  # no workspace, no bound
    out, calls = fake_launch(fake_libcuda, tmp_path, with_state(meta), nparams=10, script=FAKE_MANY_STREAMS)
    # 64 streams, each with its own workspace; the 65th is refused before anything is allocated
    # or launched for it. One module serves them all.
    assert out["launched"] == 64 and "device 0 already has 64" in out["launch_error"], out
    assert sum(c.startswith("cuMemAlloc ") for c in calls) == 64
    assert len(launches(calls)) == 64
    assert sum(c.startswith("cuModuleLoadData") for c in calls) == 1


def test_fake_driver_refuses_a_first_load_inside_a_capture(fake_libcuda, tmp_path):
    for meta, n in ((golden_gemm(), 9), (with_state(golden_gemm()), 10)):
        out, calls = fake_launch(fake_libcuda, tmp_path, meta, nparams=n, capturing=True)
        assert "launch it once on any stream before capturing" in out["launch_error"], out
        # Refused before anything is loaded, allocated or launched.
        assert not any(c.startswith(("cuModuleLoadData", "cuMemAlloc", "cuLaunchKernelEx")) for c in calls), calls


# A launch outside a capture, then two inside one (on the same stream) and a prepared launch
# replayed inside it.
FAKE_CAPTURE = FAKE_LAUNCH.replace("""    k(A, B, C, stream=0xABC)
    out["grid"] = list(k.last_grid)""", """    import os
    k(A, B, C, stream=0xABC)
    p = k.prepare(A, B, C, stream=0xABC)
    os.environ["FAKE_CUDA_CAPTURING"] = "1"
    k(A, B, C, stream=0xABC)
    k(A, B, C, stream=0xABC)
    p()
    del os.environ["FAKE_CUDA_CAPTURING"]
    out["grid"] = list(k.last_grid)
    raise SystemExit(print(json.dumps(out)))""")


def test_fake_driver_gives_a_captured_launch_a_workspace_of_the_graph(fake_libcuda, tmp_path):
    assert FAKE_CAPTURE != FAKE_LAUNCH
    out, calls = fake_launch(fake_libcuda, tmp_path, with_state(golden_gemm()), nparams=10, script=FAKE_CAPTURE)
    assert "cuda_error" not in out and "launch_error" not in out, out
    # The stream's own workspace outside the capture; inside it each launch allocates, zeroes,
    # uses and frees one of the graph's, in stream order.
    eager = [c for c in calls if c.startswith("cuMemAlloc ")]
    assert len(eager) == 1, eager
    own = eager[0].split("-> ")[1]
    mem = [c for c in calls if c.startswith(("cuMemAllocAsync", "cuMemsetD8Async", "cuLaunchKernelEx",
                                             "cuMemFreeAsync"))]
    assert last_param(mem[1]) == own and mem[0].startswith("cuMemsetD8Async")
    captured = mem[2:]
    assert len(captured) == 12, captured
    seen = set()
    for i in range(0, 12, 4):
        alloc, zero, launch, free = captured[i:i + 4]
        ptr = alloc.split("-> ")[1]
        assert alloc.startswith("cuMemAllocAsync") and "bytes=528384 stream=0xabc" in alloc, alloc
        assert zero.startswith(f"cuMemsetD8Async ctx=0xc0000 ptr={ptr} value=0 bytes=4096 stream=0xabc"), zero
        assert launch.startswith("cuLaunchKernelEx") and last_param(launch) == ptr, launch
        assert free.startswith(f"cuMemFreeAsync ctx=0xc0000 ptr={ptr} stream=0xabc"), free
        seen.add(ptr)
    assert len(seen) == 3 and own not in seen


def test_fake_driver_errors_are_cuda_errors(fake_libcuda, tmp_path):
    out, calls = fake_launch(fake_libcuda, tmp_path, golden_gemm(), nparams=0, fail="cuModuleLoadData")
    msg, result, code = out["cuda_error"]
    assert (result, code) == ("CUDA_ERROR_INVALID_IMAGE", 200)
    assert msg == ("cuModuleLoadData for gemm.cubin failed: CUDA_ERROR_INVALID_IMAGE (200): device kernel image "
                   "is invalid; built for target sm_90a, device 0 is sm_90")
    assert not any(c.startswith("cuLaunchKernelEx") for c in calls)
    out, calls = fake_launch(fake_libcuda, tmp_path, golden_gemm(), nparams=0, fail="cuTensorMapEncodeTiled")
    assert out["cuda_error"][1] == "CUDA_ERROR_INVALID_IMAGE"
    assert out["cuda_error"][0].startswith("cuTensorMapEncodeTiled(TensorMapFields { data_type: 9")
