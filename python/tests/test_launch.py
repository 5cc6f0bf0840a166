"""CPU-only tests of cake.launch's pure layer (no torch, no GPU needed)."""

import copy
import ctypes
import json
import os
import sys
from types import SimpleNamespace

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cake import launch as L  # noqa: E402
from cake.launch import LaunchError  # noqa: E402


# ---- fixtures -------------------------------------------------------------------------


class FakeTensor:
    """Duck-typed stand-in for a torch tensor: .shape, .dtype, .stride(), .data_ptr()."""

    def __init__(self, shape, dtype="bf16", ptr=0x7F0000000000, strides=None, device=("cuda", 0),
                 contiguous=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._strides = tuple(strides) if strides is not None else L.row_major_strides(self.shape)
        self._ptr = ptr
        self.device = SimpleNamespace(type=device[0], index=device[1]) if device else None
        self._contig = contiguous

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr

    def is_contiguous(self):
        if self._contig is not None:
            return self._contig
        return L._is_row_major(self.shape, self._strides)


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

GiB = 1 << 30


def meta(**overrides):
    m = copy.deepcopy(GEMM_META)
    m.update(overrides)
    return m


def gemm_tensors(M=4096, N=7168, K=4096, dtype="bf16"):
    # Distinct, non-overlapping, 16-byte-aligned fake allocations.
    return (FakeTensor((M, K), dtype, ptr=0x10 * GiB),
            FakeTensor((N, K), dtype, ptr=0x20 * GiB),
            FakeTensor((M, N), dtype, ptr=0x30 * GiB))


def bind(m, *args, num_sms=132, **kw):
    return L.bind_arguments(L.LaunchSpec(m), args, kw, num_sms=num_sms, device_index=0)


def fake_encoder(fields):
    buf = L.new_tensormap_buffer()
    buf[0] = fields["global_address"]  # mark which tensor it encodes
    return buf


# ---- expressions ------------------------------------------------------------------------


@pytest.mark.parametrize("expr,want", [
    (7, 7),
    ("M", 1000),
    (["cdiv", "M", 128], 8),
    (["cdiv", 1024, 128], 8),
    (["add", "M", 24], 1024),
    (["sub", "M", 1], 999),
    (["mul", "M", 3], 3000),
    (["div", "M", 128], 7),
    (["div", -7, 2], -4),  # floor, not truncation
    (["mod", "M", 128], 104),
    (["min", "M", 5], 5),
    (["max", "M", 5], 1000),
    (["mul", ["cdiv", "M", 128], ["cdiv", "N", 256]], 8 * 2),
])
def test_eval_expr(expr, want):
    assert L.eval_expr(expr, {"M": 1000, "N": 300}) == want


@pytest.mark.parametrize("expr,msg", [
    (["pow", 2, 3], "unknown op `pow`"),
    ("Q", "unknown name `Q`"),
    (["add", "M", "Q"], "unknown name `Q`"),
    (["add", 1], "malformed"),
    ([1, 2, 3], "malformed"),
    (["div", 1, 0], "division by zero"),
    (["cdiv", 1, ["sub", "M", "M"]], "division by zero"),
    (["mod", 1, 0], "division by zero"),
    (True, "expected an int"),
    (1.5, "expected an int"),
    ({"op": "add"}, "expected an int"),
])
def test_eval_expr_errors(expr, msg):
    with pytest.raises(LaunchError, match=msg):
        L.eval_expr(expr, {"M": 1000})


def test_spec_rejects_unknown_op_and_name_statically():
    m = meta(grid={"kind": "persistent", "tiles": [["ceil", "M", 128]]})
    with pytest.raises(LaunchError, match="unknown op `ceil`"):
        L.LaunchSpec(m)
    m = meta(grid={"kind": "persistent", "tiles": [["cdiv", "X", 128]]})
    with pytest.raises(LaunchError, match="unknown name `X`"):
        L.LaunchSpec(m)
    # A float scalar cannot size a grid.
    m = meta(grid={"kind": "explicit", "dims": ["alpha", 1, 1]})
    with pytest.raises(LaunchError, match="unknown name `alpha`"):
        L.LaunchSpec(m)


# ---- launch.json validation ----------------------------------------------------------------


def test_spec_accepts_gemm():
    s = L.LaunchSpec(meta())
    assert s.param_names == ["A", "B", "C", "alpha"]
    assert s.dim_names == ["M", "K", "N"]
    assert s.block == (384, 1, 1) and s.cluster == (1, 1, 1)
    assert [a.kind for a in s.args] == ["tensormap", "tensormap", "ptr", "dim", "dim", "dim", "scalar"]


@pytest.mark.parametrize("mutate,msg", [
    (lambda m: m.update(schema="cake.launch/v1"), "schema"),
    (lambda m: m.update(block=[2048, 1, 1]), "more than 1024 threads"),
    (lambda m: m.update(block=[128, 1]), "`block`"),
    (lambda m: m.update(cluster=[0, 1, 1]), "`cluster`"),
    (lambda m: m.update(dynamic_smem=-1), "dynamic_smem"),
    (lambda m: m.update(grid={"kind": "dynamic"}), "grid field `kind`"),
    (lambda m: m["tensors"][0].update(dtype="bf17"), "unknown dtype"),
    (lambda m: m["args"][0].update(tensor="Z"), "unknown tensor 'Z'"),
    (lambda m: m["args"][3].update(name="Z"), "unknown dim 'Z'"),
    (lambda m: m["args"][6].update(name="beta"), "unknown scalar 'beta'"),
    (lambda m: m["args"][2].update(kind="pointer"), "field `kind`"),
    (lambda m: m["args"][0].update(box=[64]), "field `box`: expected 2 ints"),
    (lambda m: m["args"][0].update(box=[64, 512]), r"box\[1\] must be in \[1, 256\]"),
    (lambda m: m["args"][0].update(box=[128, 128]), "inner box extent must be <= 128"),
    (lambda m: m["args"][0].update(swizzle=256), "field `swizzle`"),
    (lambda m: m["args"][0].update(l2_promotion=512), "l2_promotion"),
    (lambda m: m["args"][0].update(oob_fill="inf"), "oob_fill"),
    (lambda m: m["tensors"].append({"name": "A", "dtype": "bf16", "dims": ["M"]}), "duplicate tensor"),
    (lambda m: m["scalars"].append({"name": "M", "dtype": "i32"}), "both as dim and scalar"),
])
def test_spec_errors(mutate, msg):
    m = meta()
    mutate(m)
    with pytest.raises(LaunchError, match=msg):
        L.LaunchSpec(m)


def test_nan_oob_fill_needs_float_tma_type():
    m = meta()
    m["tensors"][0]["dtype"] = "f8e4m3"
    m["args"][0].update(box=[128, 128], oob_fill="nan")
    with pytest.raises(LaunchError, match="'nan' needs a floating-point TMA type"):
        L.LaunchSpec(m)


# ---- dtypes -------------------------------------------------------------------------------------


def test_dtype_mapper_accepts_strings_and_torch_style_names():
    class FakeTorchDtype:  # str() like torch.bfloat16
        def __str__(self):
            return "torch.bfloat16"

    assert L.normalize_dtype("bf16").name == "bf16"
    assert L.normalize_dtype("bfloat16").name == "bf16"
    assert L.normalize_dtype(FakeTorchDtype()).name == "bf16"
    assert L.normalize_dtype("torch.float8_e4m3fn").name == "f8e4m3"
    assert L.normalize_dtype("e5m2").tma == 0
    assert L.normalize_dtype("i8").tma == 0
    assert [L.DTYPES[n].tma for n in ("u8", "u16", "u32", "i32", "u64", "i64", "f16", "f32", "f64", "bf16",
                                      "f32_ftz", "tf32", "tf32_ftz")] == list(range(13))
    with pytest.raises(LaunchError, match="unknown dtype"):
        L.normalize_dtype("complex64")


# ---- binding ------------------------------------------------------------------------------------


def test_bind_gemm_dims_and_persistent_grid():
    b = bind(meta(), *gemm_tensors(), 1.0)
    assert b.dims == {"M": 4096, "K": 4096, "N": 7168}
    # 32 * 28 = 896 tiles > 132 SMs -> one CTA per SM.
    assert b.grid == (132, 1, 1)


def test_bind_by_name_and_mixed():
    A, B, C = gemm_tensors()
    assert bind(meta(), A, B, C=C, alpha=2).dims["N"] == 7168
    assert bind(meta(), alpha=0.5, C=C, B=B, A=A).grid == (132, 1, 1)


@pytest.mark.parametrize("M,N,sms,want", [
    (256, 512, 132, 4),          # 2 * 2 tiles < SMs
    (1000, 1000, 132, 32),       # cdiv tails: 8 * 4
    (8192, 8192, 132, 132),
    (0, 512, 132, 0),            # empty problem: launch nothing
    (128, 256, 1, 1),
])
def test_persistent_grid(M, N, sms, want):
    b = bind(meta(), *gemm_tensors(M=M, N=N, K=64), 1.0, num_sms=sms)
    assert b.grid[0] == want
    assert b.empty == (want == 0)


def test_persistent_grid_rounds_to_cluster_and_ctas_per_sm():
    m = meta(cluster=[2, 1, 1])
    assert bind(m, *gemm_tensors(M=384, N=256, K=64), 1.0).grid == (4, 1, 1)  # 3 tiles -> 4
    m = meta(grid={"kind": "persistent", "tiles": [["cdiv", "M", 128], ["cdiv", "N", 256]], "ctas_per_sm": 2})
    assert bind(m, *gemm_tensors(), 1.0).grid == (264, 1, 1)


def test_explicit_grid():
    m = meta(grid={"kind": "explicit", "dims": [["cdiv", "N", 256], ["cdiv", "M", 128], 1]})
    assert bind(m, *gemm_tensors(M=1000, N=1000, K=64), 1.0).grid == (4, 8, 1)
    m["cluster"] = [2, 1, 1]
    with pytest.raises(LaunchError, match=r"not a multiple of cluster\[1\]|not a multiple of cluster\[0\]"):
        bind(m, *gemm_tensors(M=1000, N=768, K=64), 1.0)  # x = 3 not a multiple of 2
    m = meta(grid={"kind": "explicit", "dims": [1, 70000, 1]})
    with pytest.raises(LaunchError, match="exceeds the CUDA limit 65535"):
        bind(m, *gemm_tensors(), 1.0)


def test_grid_may_use_int_scalars():
    m = meta(scalars=[{"name": "alpha", "dtype": "f32"}, {"name": "splits", "dtype": "i32"}],
             grid={"kind": "explicit", "dims": [["mul", ["cdiv", "M", 128], "splits"], 1, 1]})
    A, B, C = gemm_tensors(M=256)
    assert bind(m, A, B, C, 1.0, 3).grid == (6, 1, 1)


def test_dim_consistency_error_message():
    A, B, C = gemm_tensors()
    B = FakeTensor((7168, 4000), ptr=0x20 * GiB)
    with pytest.raises(LaunchError) as e:
        bind(meta(), A, B, C, 1.0)
    assert str(e.value) == "dim `K` is 4096 from A (dim 1) but 4000 from B (dim 1)"


@pytest.mark.parametrize("which,tensor,msg", [
    (0, FakeTensor((4096, 4096), "f16", ptr=0x10 * GiB), "tensor `A`: expected dtype bf16, got f16"),
    (0, FakeTensor((4096,), ptr=0x10 * GiB), "tensor `A`: expected rank 2"),
    (0, FakeTensor((4096, 4096), ptr=0x10 * GiB, device=("cpu", None)), "tensor `A`: expected a CUDA tensor"),
    (0, FakeTensor((4096, 4096), ptr=0x10 * GiB, device=("cuda", 1)), "on the current device cuda:0"),
    (0, FakeTensor((4096, 4096), ptr=0x10 * GiB + 8), "tensor `A`: data_ptr must be 16-byte aligned"),
    (0, FakeTensor((4096, 4096), ptr=0x10 * GiB, strides=(1, 4096)), "tensor `A`: expected a contiguous"),
    (2, FakeTensor((4096, 7168), ptr=0x10 * GiB), "tensor `C` .* overlaps tensor `A`"),
    (1, "not a tensor", "tensor `B`: expected a tensor"),
])
def test_bind_tensor_errors(which, tensor, msg):
    ts = list(gemm_tensors())
    ts[which] = tensor
    with pytest.raises(LaunchError, match=msg):
        bind(meta(), *ts, 1.0)


def test_fixed_dims():
    m = meta()
    m["tensors"][0]["dims"] = ["M", 4096]
    bind(m, *gemm_tensors(), 1.0)  # K=4096 matches
    m["tensors"][0]["dims"] = ["M", 64]
    with pytest.raises(LaunchError, match="tensor `A` dim 1: expected fixed extent 64, got 4096"):
        bind(m, *gemm_tensors(), 1.0)


def test_size_one_dim_strides_do_not_matter():
    # torch may report any stride for a size-1 dim of a contiguous tensor.
    A = FakeTensor((1, 64), ptr=0x10 * GiB, strides=(1, 1))
    B, C = FakeTensor((256, 64), ptr=0x20 * GiB), FakeTensor((1, 256), ptr=0x30 * GiB)
    b = bind(meta(), A, B, C, 1.0)
    f = L.tensormap_fields(L.LaunchSpec(meta()).args[0], b.tensors["A"])
    assert f["global_strides"] == [128]


@pytest.mark.parametrize("args,kw,msg", [
    ((1, 2, 3, 4, 5), {}, "takes 4 arguments"),
    ((), {}, "missing argument"),
    (("a",), {"A": 1, "B": 2, "C": 3, "alpha": 1.0}, "given both positionally and by name"),
    ((), {"D": 1}, "unknown argument `D`"),
])
def test_argument_gathering_errors(args, kw, msg):
    with pytest.raises(LaunchError, match=msg):
        L.bind_arguments(L.LaunchSpec(meta()), args, kw, num_sms=132)


def test_scalar_errors():
    with pytest.raises(LaunchError, match="scalar `alpha`: expected a number"):
        bind(meta(), *gemm_tensors(), "1.0")
    m = meta(scalars=[{"name": "alpha", "dtype": "i32"}])
    with pytest.raises(LaunchError, match="out of range for i32"):
        bind(m, *gemm_tensors(), 1 << 31)
    with pytest.raises(LaunchError, match="expected an int for i32"):
        bind(m, *gemm_tensors(), 1.5)


# ---- tensor maps ------------------------------------------------------------------------------------


def _tmap(M, K, ptr=0x10 * GiB, box=(64, 128), swizzle=128, dtype="bf16"):
    m = meta()
    m["tensors"][0]["dtype"] = dtype
    m["args"][0].update(box=list(box), swizzle=swizzle)
    spec = L.LaunchSpec(m)
    info = L.TensorInfo("A", (M, K), L.normalize_dtype(dtype), L.row_major_strides((M, K)), ptr)
    return L.tensormap_fields(spec.args[0], info)


def test_tensormap_fields_bf16_mk():
    f = _tmap(4096, 1024)
    assert f == {
        "data_type": 9,
        "rank": 2,
        "global_address": 0x10 * GiB,
        "global_dim": [1024, 4096],   # innermost first: [K, M]
        "global_strides": [2048],     # K * 2 bytes
        "box_dim": [64, 128],
        "element_strides": [1, 1],
        "interleave": 0,
        "swizzle": 3,                 # CU_TENSOR_MAP_SWIZZLE_128B
        "l2_promotion": 3,            # 256B
        "oob_fill": 0,
    }


def test_tensormap_rank3_strides():
    m = meta()
    m["tensors"][0]["dims"] = ["B", "M", "K"]
    m["tensors"][1]["dims"] = ["B", "N", "K"]
    m["tensors"][2]["dims"] = ["B", "M", "N"]
    m["args"][0]["box"] = [64, 128, 1]
    m["args"][1]["box"] = [64, 256, 1]
    spec = L.LaunchSpec(m)
    info = L.TensorInfo("A", (3, 100, 64), L.DTYPES["bf16"], L.row_major_strides((3, 100, 64)), 0x1000)
    f = L.tensormap_fields(spec.args[0], info)
    assert f["global_dim"] == [64, 100, 3]
    assert f["global_strides"] == [128, 100 * 128]


def test_tensormap_rejects_box_wider_than_swizzle():
    with pytest.raises(LaunchError, match="with swizzle 128 the inner box extent must be <= 128 bytes"):
        L.check_box([128, 128], 2, 128, "none", "arg 0")
    with pytest.raises(LaunchError, match="<= 64 bytes"):
        _tmap(4096, 1024, box=(64, 128), swizzle=64)
    _tmap(4096, 1024, box=(128, 128), swizzle=0)  # fine without swizzle
    with pytest.raises(LaunchError, match="multiple of 16"):
        _tmap(4096, 1024, box=(4, 128), swizzle=0)  # 8 bytes inner


def test_tensormap_rejects_misaligned_ptr():
    with pytest.raises(LaunchError, match="globalAddress must be 16-byte aligned"):
        _tmap(4096, 1024, ptr=0x10 * GiB + 2)


def test_tensormap_rejects_stride_not_multiple_of_16():
    with pytest.raises(LaunchError, match=r"globalStrides\[0\] .* multiple of 16 bytes, got 200"):
        _tmap(4096, 100)          # 100 * 2 = 200 bytes
    _tmap(4096, 104)              # 208 bytes: fine


def test_tensormap_rejects_zero_and_huge_dims():
    with pytest.raises(LaunchError, match=r"globalDim\[1\] .* got 0"):
        _tmap(0, 64)
    with pytest.raises(LaunchError, match=r"globalDim\[0\] .* got 8589934592"):
        _tmap(1, 1 << 33)


# ---- packing ----------------------------------------------------------------------------------------


def test_pack_args_order_and_sizes():
    spec = L.LaunchSpec(meta())
    A, B, C = gemm_tensors(M=1000, N=1000, K=512)
    b = L.bind_arguments(spec, (A, B, C, 0.5), {}, num_sms=132)
    p = L.pack_args(spec, b, fake_encoder)
    assert [ctypes.sizeof(v) for v in p.values] == [128, 128, 8, 4, 4, 4, 4]
    assert len(p.params) == 7
    for v, addr in zip(p.values, p.params):
        assert ctypes.addressof(v) == addr
    assert p.values[0][0] == A.data_ptr() and p.values[1][0] == B.data_ptr()
    assert ctypes.addressof(p.values[0]) % 64 == 0 and ctypes.addressof(p.values[1]) % 64 == 0
    assert isinstance(p.values[2], ctypes.c_uint64) and p.values[2].value == C.data_ptr()
    assert [v.value for v in p.values[3:6]] == [1000, 1000, 512]  # M, N, K as in args
    assert all(isinstance(v, ctypes.c_int32) for v in p.values[3:6])
    assert isinstance(p.values[6], ctypes.c_float) and p.values[6].value == 0.5
    assert [f["global_dim"] for f in p.tensormaps] == [[512, 1000], [512, 1000]]
    # Params point at the values: read them back through the void** array.
    assert ctypes.c_int32.from_address(p.params[4]).value == 1000
    assert ctypes.c_uint64.from_address(p.params[2]).value == C.data_ptr()


def test_pack_scalars_all_dtypes():
    cases = {"i8": (-3, ctypes.c_int8), "u8": (200, ctypes.c_uint8), "i16": (-300, ctypes.c_int16),
             "u16": (60000, ctypes.c_uint16), "i32": (-5, ctypes.c_int32), "u32": (1 << 31, ctypes.c_uint32),
             "i64": (-(1 << 40), ctypes.c_int64), "u64": (1 << 63, ctypes.c_uint64),
             "f32": (1.5, ctypes.c_float), "f64": (1.5, ctypes.c_double)}
    for dt, (v, ct) in cases.items():
        s = L.ScalarSpec("x", L.DTYPES[dt])
        packed = L._pack_scalar(s, L._scalar_value(s, v))
        assert isinstance(packed, ct) and ctypes.sizeof(packed) == ctypes.sizeof(ct) and packed.value == v
    assert L._pack_scalar(L.ScalarSpec("h", L.DTYPES["f16"]), 1.0).value == 0x3C00
    assert L._pack_scalar(L.ScalarSpec("b", L.DTYPES["bf16"]), 1.0).value == 0x3F80
    assert L._pack_scalar(L.ScalarSpec("b", L.DTYPES["bf16"]), -2.0).value == 0xC000


def test_pack_dim_overflows_int32():
    spec = L.LaunchSpec(meta())
    A, B, C = gemm_tensors(M=1 << 31, N=8, K=8)
    b = L.bind_arguments(spec, (A, B, C, 1.0), {}, num_sms=132)
    # Rejected by the int32 dim arg (the tensor maps themselves would accept 2^31 rows).
    with pytest.raises(LaunchError, match="does not fit the int32"):
        L.pack_args(spec, b, fake_encoder)


def test_tensormap_buffer_alignment():
    bufs = [L.new_tensormap_buffer() for _ in range(20)]
    assert all(ctypes.addressof(b) % 64 == 0 and ctypes.sizeof(b) == 128 for b in bufs)


def test_launch_structs_match_c_layout():
    # CUlaunchAttribute: int id; char pad[4]; union value (64 bytes, 8-aligned).
    assert ctypes.sizeof(L.CUlaunchAttribute) == 72
    assert L.CUlaunchAttribute.value.offset == 8
    # CUlaunchConfig: 7 unsigned, pad, CUstream, CUlaunchAttribute*, unsigned numAttrs, pad.
    assert L.CUlaunchConfig.hStream.offset == 32
    assert L.CUlaunchConfig.attrs.offset == 40
    assert L.CUlaunchConfig.numAttrs.offset == 48
    assert ctypes.sizeof(L.CUlaunchConfig) == 56


# ---- load_kernel (file handling only; no GPU) -------------------------------------------------------


def test_load_kernel_reads_json_and_cubin(tmp_path):
    (tmp_path / "gemm.launch.json").write_text(json.dumps(GEMM_META))
    (tmp_path / "gemm.cubin").write_bytes(b"\x7fELF fake")
    k = L.load_kernel(tmp_path / "gemm.launch.json")
    assert k.meta["symbol"] == "cake_gemm" and k.last_grid is None
    assert L.load_kernel(tmp_path).spec.kernel == "gemm"  # a directory with one launch.json


def test_load_kernel_errors(tmp_path):
    p = tmp_path / "gemm.launch.json"
    p.write_text(json.dumps(GEMM_META))
    with pytest.raises(LaunchError, match="field `cubin`: cannot read"):
        L.load_kernel(p)
    p.write_text("{not json")
    with pytest.raises(LaunchError, match="invalid JSON"):
        L.load_kernel(p)


def test_import_cake_without_torch():
    import cake

    assert isinstance(cake.__version__, str)
    assert cake.load_kernel is L.load_kernel
